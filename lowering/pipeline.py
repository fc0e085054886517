"""The whole way down: ONNX/graph module -> tile -> npu, in memory.

`compile_module(module, ...)` runs graph-canonicalize, graph-fuse (unless
`fuse=False`), convert-graph-to-tile and convert-tile-to-npu on one module and
returns a `Compiled` record (the npu module and what each stage reported).
The named pipeline `ge-compile` in gedialects/universe.py is the same list of
passes for ge-opt.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

DEFAULT_PRECISION = "must_keep_origin_dtype"


@dataclass
class Compiled:
    module: ModuleOp
    transdata: int
    kernels: int
    kernel_kinds: dict = field(default_factory=dict)
    npu_ops: int = 0
    seconds: float = 0.0


def compile_module(
    module: ModuleOp,
    precision: str = DEFAULT_PRECISION,
    target: str = "davinci-910",
    fuse: bool = True,
) -> Compiled:
    from gedialects.graph.transforms.canonicalize import GraphCanonicalizePass
    from lowering.graph_to_tile import convert
    from lowering.tile_to_npu import ConvertTileToNpuPass

    t0 = time.perf_counter()
    ctx = Context()
    GraphCanonicalizePass().apply(ctx, module)
    if fuse:
        from gedialects.graph.transforms.fuse import GraphFusePass

        GraphFusePass().apply(ctx, module)
    stats = convert(module, precision, target)
    ConvertTileToNpuPass(target=target).apply(ctx, module)
    n = sum(1 for _ in module.walk())
    return Compiled(module, stats.transdata, stats.kernels, dict(stats.ops), n, time.perf_counter() - t0)


def compile_onnx(path: str, precision: str = DEFAULT_PRECISION, target: str = "davinci-910", fuse: bool = True, input_shape: str = "") -> Compiled:
    from gedialects.frontend.onnx_import import import_model, load_model, parse_input_shapes

    module = import_model(load_model(path), parse_input_shapes(input_shape), source=path)
    return compile_module(module, precision, target, fuse)


def run_compiled(compiled: Compiled, inputs: dict, target: str = "davinci-910", races: str = "error"):
    from target.assembler import assemble
    from target.simulator import simulate

    program = assemble(compiled.module)
    return simulate(program, inputs, target, races=races)
