"""Parallel streams (tile-assign-streams) against one stream: cycles and GM arena.

    .venv/bin/python benchmarks/streams.py [MODEL ...] [--precision-mode force_fp16] [--target davinci-910]
        [--max-streams N]

MODEL is a bundled light model (random weights, BN calibrated:
`zoo.with_random_weights(calibrate=True)`, seeded inputs) or a zoo model of
tests/zoo/models (its committed inputs); default: the light models with
parallel branches (inception_v1 = GoogLeNet, inception_v2, squeezenet,
densenet121, resnet50) and the zoo's transformer blocks (bert, gpt2, vit).
Each is compiled twice, with `--max-streams 1` and with N streams (default:
the target's), and simulated with race detection on ("error"). Per model:
streams and events used, simulated cycles for both and the speed-up, the GM
arena of the intermediates for both (the graph plan's for reference),
whether the outputs are bit-identical and whether they meet the precision
mode's criterion against onnxruntime.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import onnx

from gedialects.frontend.onnx_import import import_model
from gedialects.numerics import CRITERIA
from gedialects.zoo import LIGHT_MODELS, light_model_path, onnxruntime_outputs, random_inputs, with_random_weights
from lowering.pipeline import DEFAULT_PRECISION, compile_module
from target.assembler import assemble
from target.simulator import simulate

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "zoo"))

DEFAULT_MODELS = ("inception_v1", "inception_v2", "squeezenet", "densenet121", "resnet50", "bert", "gpt2", "vit")


def load(name: str) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    if name in LIGHT_MODELS:
        model = with_random_weights(onnx.load(str(light_model_path(name))), calibrate=True)
        return model, random_inputs(model)
    from zoo import zoo_inputs, zoo_path

    return onnx.load(str(zoo_path(name))), zoo_inputs(name)


def run(model: onnx.ModelProto, inputs: dict, precision: str, target: str, max_streams: int):
    compiled = compile_module(import_model(model, {}, source="streams"), precision, target, max_streams=max_streams)
    result = simulate(assemble(compiled.module), inputs, target, races="error")
    return compiled, result


def measure(name: str, precision: str, target: str, max_streams: int) -> dict:
    model, inputs = load(name)
    one, one_res = run(model, inputs, precision, target, 1)
    many, many_res = run(model, inputs, precision, target, max_streams)
    want = onnxruntime_outputs(model, inputs)
    identical = all(np.array_equal(many_res.outputs[k], v, equal_nan=True) for k, v in one_res.outputs.items())
    ok = all(CRITERIA[precision].check(many_res.outputs[k].reshape(v.shape), v).ok for k, v in want.items())
    return {
        "model": name, "streams": many.streams, "events": many.events,
        "cycles_one": one_res.profile.total_cycles, "cycles_many": many_res.profile.total_cycles,
        "arena_one": int(one.memory.get("arena_size", 0)), "arena_many": int(many.memory.get("arena_size", 0)),
        "graph_arena": int(one.memory.get("graph_arena_size", 0)), "identical": identical, "ok": ok,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*", default=list(DEFAULT_MODELS))
    ap.add_argument("--precision-mode", default=DEFAULT_PRECISION)
    ap.add_argument("--target", default="davinci-910")
    ap.add_argument("--max-streams", type=int, default=0, help="streams of the parallel compile (0: the target's)")
    args = ap.parse_args()
    print(f"{args.precision_mode}, {args.target}, races=error, max streams={args.max_streams or 'the target'}")
    print("| model | streams (events) | cycles, 1 stream | cycles, streams | speed-up "
          "| arena, 1 stream | arena, streams | arena cost | outputs identical | criterion |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|---|")
    for name in args.models:
        try:
            r = measure(name, args.precision_mode, args.target, args.max_streams)
        except Exception as e:  # noqa: BLE001 - report and go on with the next model
            print(f"| {name} | failed: {type(e).__name__}: {str(e).splitlines()[0][:160]} |", flush=True)
            continue
        print(
            f"| {r['model']} | {r['streams']} ({r['events']}) | {r['cycles_one']:,} | {r['cycles_many']:,} "
            f"| {r['cycles_one'] / r['cycles_many']:.3f}x | {r['arena_one'] / 1e6:.2f} MB | {r['arena_many'] / 1e6:.2f} MB "
            f"| {r['arena_many'] / max(1, r['arena_one']) - 1:+.1%} | {'yes' if r['identical'] else '**no**'} "
            f"| {'yes' if r['ok'] else '**no**'} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
