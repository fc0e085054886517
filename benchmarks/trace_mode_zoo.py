"""Trace mode on the model zoo's own torch models (transformers and torchvision).

    /work/zoo-venv/bin/python benchmarks/trace_mode_zoo.py [NAME ...] [--markdown]

Needs the zoo's generation venv (tests/zoo/make_zoo.py: torch, transformers,
torchvision) with gedialects installed in it (`pip install --no-deps -e .`
plus xdsl, numpy, onnx, onnxruntime). Each model is built exactly as
make_zoo.py builds it (same seeds, BatchNorm calibration, weights), traced
(`gedialects.compile`: torch.export -> graph dialect), compiled fp32 and
simulated; its committed ONNX export (tests/zoo/models/NAME.onnx, parse
mode) is compiled beside it. Printed per model: kernels and AI-CPU ops in
each mode, simulated cycles in each mode, and the trace-mode error against
eager torch (max |npu - torch| / max |torch|), or the one-line reason it
failed.
"""

from __future__ import annotations

import argparse
import sys
import warnings
import zlib
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "zoo"))
FP32 = "must_keep_origin_dtype"


def build(name: str):
    """make_zoo.build_one's model and inputs, without exporting anything."""
    import torch

    import make_zoo

    seed = zlib.crc32(name.encode()) & 0xFFFF
    torch.manual_seed(0)
    model, feeds, _ = make_zoo.MODELS[name][2](np.random.default_rng(seed))
    model.eval()
    if all(v.dtype == np.float32 for v in feeds.values()):
        make_zoo.calibrate_batch_norm(model, feeds, seed)
    return model, tuple(torch.from_numpy(v) for v in feeds.values())


def measure(name: str) -> dict:
    import torch

    import gedialects
    from zoo import zoo_inputs, zoo_path

    row: dict = {"model": name}
    model, args = build(name)
    with torch.no_grad():
        want = [w.numpy() for w in model(*args)]
    try:
        traced = gedialects.compile(model, args, precision_mode=FP32)
        got = traced(*args)
    except gedialects.CompileError as e:
        return row | {"error": str(e)}
    got = got if isinstance(got, tuple) else (got,)
    parsed = gedialects.compile(str(zoo_path(name)), precision_mode=FP32)
    parsed.run(zoo_inputs(name))
    return row | {
        "trace kernels": traced.kernels, "parse kernels": parsed.kernels,
        "trace AI-CPU": traced.aicpu, "parse AI-CPU": parsed.aicpu,
        "trace cycles": traced.profile.total_cycles, "parse cycles": parsed.profile.total_cycles,
        "err vs eager": max(float(np.max(np.abs(g.numpy() - w)) / np.max(np.abs(w))) for g, w in zip(got, want)),
    }


def main(argv: list[str] | None = None) -> int:
    import make_zoo

    warnings.filterwarnings("ignore")
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("models", nargs="*", default=list(make_zoo.MODELS))
    p.add_argument("--markdown", action="store_true")
    args = p.parse_args(argv)
    cols = ["model", "trace kernels", "parse kernels", "trace AI-CPU", "parse AI-CPU", "trace cycles",
            "parse cycles", "err vs eager"]
    if args.markdown:
        print("| " + " | ".join(cols) + " |")
        print("|" + "---|" * len(cols))
    for name in args.models:
        r = measure(name)
        if "error" in r:
            cells = [name, f"failed: {r['error']}"] + [""] * (len(cols) - 2)
        else:
            cells = [f"{r[c]:.2g}" if isinstance(r[c], float) else f"{r[c]:,}" if isinstance(r[c], int) else r[c]
                     for c in cols]
        print(("| " + " | ".join(cells) + " |") if args.markdown else "  ".join(cells), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
