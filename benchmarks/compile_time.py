"""Compile time per light model, per stage.

    .venv/bin/python benchmarks/compile_time.py [MODEL ...] [--precision-mode ...]

`compile_module` on each bundled light model (default: all nine; nothing is
simulated): the total (`Compiled.seconds`) and the stages that took 0.3 s or
more (timed between the pipeline's `dump` callbacks). Run it in a worktree of
another commit (`PYTHONPATH=<worktree> python <worktree>/benchmarks/compile_time.py`)
to compare.
"""

from __future__ import annotations

import argparse
import time

from gedialects.frontend.onnx_import import import_model, load_model
from gedialects.zoo import LIGHT_MODELS, light_model_path
from lowering.pipeline import DEFAULT_PRECISION, compile_module


def measure(name: str, precision: str) -> tuple[float, dict[str, float]]:
    module = import_model(load_model(str(light_model_path(name))), {}, source=name)
    stages: dict[str, float] = {}
    last = [time.perf_counter()]

    def dump(stage: str, _module) -> None:
        now = time.perf_counter()
        stages[stage] = now - last[0]
        last[0] = now

    compiled = compile_module(module, precision, dump=dump)
    return compiled.seconds, stages


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*", default=list(LIGHT_MODELS))
    ap.add_argument("--precision-mode", default=DEFAULT_PRECISION)
    args = ap.parse_args()
    print("| model | compile | stages >= 0.3 s |")
    print("|---|---:|---|")
    for name in args.models:
        seconds, stages = measure(name, args.precision_mode)
        slow = ", ".join(f"{k} {v:.1f}" for k, v in stages.items() if v >= 0.3)
        print(f"| {name} | {seconds:.1f} s | {slow} |", flush=True)


if __name__ == "__main__":
    main()
