"""The device GM arena the lowering plans against graph-plan-memory's arena.

    .venv/bin/python benchmarks/device_arena.py [MODEL ...] [--precision-mode force_fp16|must_keep_origin_dtype]

Per bundled light model (default: all nine; compile only, nothing runs):
graph-plan-memory's arena (graph types: fp32 NCHW bytes, as the graph plan
sizes them), the device arena of the intermediates as convert-graph-to-tile
plans it on their stored sizes (NC1HWC0, channels rounded up to whole
fractals, halos, the precision mode's element size) with one stream and with
the target's streams (tile-assign-streams plans it again for the overlap),
the intermediates without reuse, the memset kernels that clear zero-halo maps
put in reused storage, and device / graph for one stream.
"""

from __future__ import annotations

import argparse

from gedialects.frontend.onnx_import import import_model, load_model
from gedialects.zoo import LIGHT_MODELS, light_model_path
from lowering.pipeline import DEFAULT_PRECISION, compile_module


def measure(name: str, precision: str) -> dict:
    model = load_model(str(light_model_path(name)))
    one = compile_module(import_model(model, {}, source=name), precision, max_streams=1)
    many = compile_module(import_model(model, {}, source=name), precision)
    return {
        "model": name,
        "graph": int(one.memory["graph_arena_size"]),
        "one": int(one.memory["arena_size"]),
        "many": int(many.memory["arena_size"]),
        "no_reuse": int(one.memory["no_reuse"]),
        "memsets": one.kernel_kinds.get("memset", 0),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*", default=list(LIGHT_MODELS))
    ap.add_argument("--precision-mode", default=DEFAULT_PRECISION)
    args = ap.parse_args()
    print(args.precision_mode)
    print("| model | graph plan | device, 1 stream | device, streams | no reuse | memsets | device / graph |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name in args.models:
        r = measure(name, args.precision_mode)
        print(f"| {name} | {r['graph'] / 1e6:.2f} MB | {r['one'] / 1e6:.2f} MB | {r['many'] / 1e6:.2f} MB "
              f"| {r['no_reuse'] / 1e6:.2f} MB | {r['memsets']} | {r['one'] / r['graph']:.2f} |", flush=True)


if __name__ == "__main__":
    main()
