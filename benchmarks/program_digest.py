"""A digest of each model's assembled program, to tell whether a change to
the compiler changed what runs.

    .venv/bin/python benchmarks/program_digest.py [MODEL ...] [--zoo] [--precision-mode ...]

Per model (default: the nine light models; `--zoo`: every model of
tests/zoo/models, its dynamo exports included; or the names / .onnx paths
given) and precision mode (default: both), one line: the model, the mode
and a SHA-1 over what the simulator runs -- each kernel's name, code,
initial registers and info, the launch schedule, the GM size, the inputs,
outputs and constant bytes (not the IR's text: SSA names and how a kernel
is written, e.g. `npu.kernel @k alike @first`, may differ for the same
program). Run it in two worktrees
(`PYTHONPATH=<worktree> python <worktree>/benchmarks/program_digest.py`)
and diff the outputs: equal lines, the same programs, so the same outputs
and cycles.
"""

from __future__ import annotations

import argparse
import hashlib
from pathlib import Path

import onnx

from gedialects.frontend.onnx_import import import_model
from gedialects.zoo import LIGHT_MODELS, light_model_path, light_models_error
from lowering.pipeline import collector_paused, compile_module

ZOO = Path(__file__).resolve().parents[1] / "tests" / "zoo" / "models"
MODES = ("force_fp16", "must_keep_origin_dtype")


def program_digest(program) -> str:
    """SHA-1 of what the simulator runs of an assembled program."""
    h = hashlib.sha1()
    for k in program.kernels:
        h.update(repr((k.name, k.code, k.init_regs, sorted(k.info.items()))).encode())
    h.update(repr((program.schedule, program.gm_size, program.inputs, program.outputs)).encode())
    for blob in program.constants:
        h.update(blob.name.encode())
        h.update(bytes(blob.data))
    return h.hexdigest()[:12]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*", help="light model names or .onnx paths (default: the light models)")
    ap.add_argument("--zoo", action="store_true", help="every model of tests/zoo/models, dynamo exports included")
    ap.add_argument("--precision-mode", choices=MODES, help="one mode (default: both)")
    args = ap.parse_args()
    if (error := light_models_error([m for m in args.models if not m.endswith(".onnx")])) is not None:
        ap.error(error)
    models = args.models or ([str(p) for p in sorted(ZOO.glob("*.onnx"))] if args.zoo else list(LIGHT_MODELS))
    for name in models:
        path = name if name.endswith(".onnx") else light_model_path(name)
        for mode in [args.precision_mode] if args.precision_mode else MODES:
            module = import_model(onnx.load(path), {}, source=Path(name).stem)
            with collector_paused():
                compiled = compile_module(module, mode)
            print(Path(name).name, mode, program_digest(compiled.program()), flush=True)


if __name__ == "__main__":
    main()
