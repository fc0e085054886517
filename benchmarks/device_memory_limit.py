"""The device arena under a limit (tile-fit-device-memory): what fits, what it costs.

    .venv/bin/python benchmarks/device_memory_limit.py [MODEL ...] [--fractions 0.9,0.8,0.7]
                                                      [--precision-mode force_fp16|must_keep_origin_dtype]

MODEL is a bundled light model (resnet50, ...) or a zoo model (bert, unet,
...; tests/zoo/models). Per model: the unconstrained device arena and its
lower bound (the most bytes live at one task), then per fraction f the run
compiled with `device_memory_limit = f x arena`: the arena it got, tensors
offloaded / recomputed / conv outputs sliced into channel pieces, host
bytes, simulated cycles against the unconstrained run (same inputs, same
run), the cycles the host copies took, and whether the outputs are
bit-identical to the unconstrained program's (a sliced conv groups its sums
differently: else the largest difference relative to the largest output).
An infeasible limit shows the task the error names and, when a task itself
touches more arena bytes than the limit (nothing can leave the device
there), how many.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import numpy as np

from gedialects.frontend.onnx_import import import_model, load_model
from gedialects.zoo import LIGHT_MODELS, light_model_path, random_inputs
from lowering.pipeline import DEFAULT_PRECISION, compile_module
from target.assembler import assemble
from target.simulator import simulate

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "zoo"))
from zoo import zoo_inputs, zoo_models, zoo_path  # noqa: E402

DEFAULT_MODELS = ["resnet50", "inception_v1", "squeezenet", "bert", "gpt2", "llama", "unet"]


def _model(name: str):
    if name in LIGHT_MODELS:
        model = load_model(str(light_model_path(name)))
        return model, random_inputs(model)
    if name in zoo_models():
        return load_model(str(zoo_path(name))), zoo_inputs(name)
    raise SystemExit(f"unknown model '{name}' (light models: {', '.join(LIGHT_MODELS)}; zoo: {', '.join(zoo_models())})")


def measure(name: str, fractions: list[float], precision: str) -> list[str]:
    model, inputs = _model(name)
    free = compile_module(import_model(model, {}, source=name), precision)
    base = simulate(assemble(free.module), inputs)
    arena = int(free.memory["arena_size"])
    rows = [f"| {name} | {arena / 1e3:,.0f} KB (lower bound {int(free.memory['lower_bound']) / 1e3:,.0f}) "
            f"| - | - | - | {base.profile.total_cycles:,} | - | - |"]
    for f in fractions:
        limit = int(arena * f)
        try:
            fitted = compile_module(import_model(model, {}, source=name), precision, device_memory_limit=limit)
        except Exception as e:  # the one-line diagnostic: name where it fails
            where = re.search(r"task \d+ \((tile\.\w+ @\w+)", str(e))
            floor = re.search(r"the limit must be at least (\d+)", str(e))
            why = f"{where.group(1) if where else str(e)[:80]}" + (
                f" touches {int(floor.group(1)) / 1e3:,.0f} KB" if floor else " (no plan found)")
            rows.append(f"| {name} @ {f:.0%} | infeasible: {why} | | | | | | |")
            continue
        run = simulate(assemble(fitted.module), inputs)
        same = all(np.array_equal(base.outputs[k], run.outputs[k]) for k in base.outputs)
        if not same:  # sliced convs group their sums differently: how far, against the largest output
            diff = max(float(np.abs(base.outputs[k].astype(np.float64) - run.outputs[k]).max())
                       / max(float(np.abs(base.outputs[k]).max()), 1e-30) for k in base.outputs)
        mem = fitted.memory
        rows.append(
            f"| {name} @ {f:.0%} | {int(mem['arena_size']) / 1e3:,.0f} KB | {mem.get('offloaded', 0)} / "
            f"{mem.get('recomputed', 0)} / {mem.get('sliced', 0)} | {int(mem.get('host_bytes', 0)) / 1e3:,.0f} KB | {fitted.streams} "
            f"| {run.profile.total_cycles:,} ({run.profile.total_cycles / base.profile.total_cycles:.2f}x) "
            f"| {run.profile.memcpy_cycles:,} | {'yes' if same else f'no: max diff {diff:.1e} of max |out|'} |")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*", default=DEFAULT_MODELS)
    ap.add_argument("--fractions", default="0.9,0.8,0.7", help="limits as fractions of the unconstrained arena")
    ap.add_argument("--precision-mode", default=DEFAULT_PRECISION)
    args = ap.parse_args()
    fractions = [float(x) for x in args.fractions.split(",")]
    print(f"{args.precision_mode}, davinci-910 (host link: target config `host_link`)")
    print("| model @ limit | device arena | offloaded / recomputed / sliced | host | streams | cycles | host-copy cycles "
          "| outputs identical |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for name in args.models:
        for row in measure(name, fractions, args.precision_mode):
            print(row, flush=True)


if __name__ == "__main__":
    main()
