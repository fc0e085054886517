"""Peak memory of compiling a model to an offline model, against its weight bytes.

    .venv/bin/python benchmarks/compile_memory.py [MODEL ...]

Per bundled light model (default: vgg19, the one with the most weights, and
resnet50): the fp32 bytes of its weights (the graph's constants), and the
peak resident set of a fresh process that imports it, compiles it
(`compile_module`, force_fp16) and writes the `.om`, the cyclic collector
paused over the job as ge-compile pauses it -- each model in its own
process, so `ru_maxrss` is that compile's alone.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def measure(name: str) -> dict:
    """Run in the child process: compile `name`, report weights and peak RSS."""
    from gedialects.frontend.onnx_import import import_model, load_model
    from gedialects.graph import ops as g
    from gedialects.graph.tensors import tensor_nbytes
    from gedialects.zoo import light_model_path
    from lowering.pipeline import collector_paused, compile_module
    from target.assembler import assemble

    t0 = time.perf_counter()
    with collector_paused():  # as ge-compile runs the job
        module = import_model(load_model(str(light_model_path(name))), {}, source=name)
        weights = sum(tensor_nbytes(op.output.type) for op in module.walk()
                      if isinstance(op, g.FillOp | g.ConstantOp))
        compiled = compile_module(module)
        with tempfile.TemporaryDirectory() as tmp:
            assemble(compiled.module).save(Path(tmp) / f"{name}.om")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux reports KiB
    return {"model": name, "weights": weights, "rss": rss, "seconds": time.perf_counter() - t0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*", default=["vgg19", "resnet50"])
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    from gedialects.zoo import light_models_error

    if (error := light_models_error(args.models)) is not None:
        ap.error(error)
    if args.child:
        print(json.dumps(measure(args.child)))
        return
    print("| model | fp32 weights | peak RSS (compile + .om) | RSS / weights | seconds |")
    print("|---|---:|---:|---:|---:|")
    for name in args.models:
        out = subprocess.run([sys.executable, __file__, "--child", name], capture_output=True, text=True, check=True)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"| {name} | {r['weights'] / 1e6:,.0f} MB | {r['rss'] / 1e6:,.0f} MB | {r['rss'] / r['weights']:.2f}x "
              f"| {r['seconds']:.1f} |", flush=True)


if __name__ == "__main__":
    main()
