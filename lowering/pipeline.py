"""The whole way down: ONNX/graph module -> tile -> npu, in memory.

`compile_module(module, ...)` runs graph-canonicalize, graph-fuse (unless
`fuse=False`), graph-plan-memory (unless `plan_memory=False`),
assign-layouts, convert-graph-to-tile and convert-tile-to-npu on one module and returns a
`Compiled` record (the npu module and what each stage reported). With a
memory plan the lowering puts its intermediates in one reused GM arena
(lowering/gm_plan.py); `Compiled.memory` is that arena's summary.
The named pipelines `ge-graph-opt`, `ge-lower` and `ge-compile` in
gedialects/universe.py (this module's `GeGraphOptPass` & co.) are the same
stages for ge-opt.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from lowering.graph_to_tile import DEFAULT_PRECISION, check_precision_mode


@dataclass
class Compiled:
    module: ModuleOp
    transdata: int
    kernels: int
    kernel_kinds: dict = field(default_factory=dict)
    npu_ops: int = 0
    seconds: float = 0.0
    memory: dict = field(default_factory=dict)
    """GM arena summary (arena_size, no_reuse, graph_arena_size, strategy, ...); empty without a plan."""
    aicpu: int = 0
    """AI-CPU tasks (ops graph-partition placed on the AI CPU)."""


def compile_module(
    module: ModuleOp,
    precision: str = DEFAULT_PRECISION,
    target: str = "davinci-910",
    fuse: bool = True,
    plan_memory: bool = True,
    dump=None,
    fusion_switch_file: str = "",
    calibration=None,
    aicpu_fallback: bool = True,
) -> Compiled:
    """`dump(stage, module)`, when given, is called after every stage.
    `calibration`: named inputs for force_fp16's range scaling.
    `aicpu_fallback=False`: an op without an AI-core kernel is an error."""
    from gedialects.graph.transforms.canonicalize import GraphCanonicalizePass
    from lowering.assign_layouts import AssignLayoutsPass
    from lowering.graph_to_tile import convert
    from lowering.partition import GraphPartitionPass
    from gedialects.npu.transforms.insert_sync import NpuInsertSyncPass
    from lowering.tile_to_npu import ConvertTileToNpuPass

    t0 = time.perf_counter()
    ctx = Context()
    say = dump or (lambda stage, m: None)
    GraphCanonicalizePass().apply(ctx, module)
    say("canonicalize", module)
    if fuse:
        from gedialects.graph.transforms.fuse import GraphFusePass

        GraphFusePass(switch_file=fusion_switch_file).apply(ctx, module)
        say("fuse", module)
    if plan_memory:
        from gedialects.graph.transforms.plan_memory import GraphPlanMemoryPass

        GraphPlanMemoryPass().apply(ctx, module)
        say("plan-memory", module)
    check_static_inputs(module)
    GraphPartitionPass(precision, aicpu_fallback).apply(ctx, module)
    say("partition", module)
    AssignLayoutsPass().apply(ctx, module)
    say("assign-layouts", module)
    stats = convert(module, precision, target, calibration)
    memory = program_memory(module)
    say("graph-to-tile", module)
    for tile_pass in tile_passes(target):
        tile_pass.apply(ctx, module)
        say(tile_pass.name, module)
    ConvertTileToNpuPass(target=target).apply(ctx, module)
    say("tile-to-npu", module)
    NpuInsertSyncPass().apply(ctx, module)
    say("npu-insert-sync", module)
    n = sum(1 for _ in module.walk())
    return Compiled(module, stats.transdata, stats.kernels, dict(stats.ops), n, time.perf_counter() - t0, memory,
                    stats.ops.get("aicpu", 0))


def tile_passes(target: str) -> list:
    """The tile level, in order: what runs between convert-graph-to-tile and
    convert-tile-to-npu (the `ge-tile-opt` pipeline)."""
    from gedialects.tile.transforms.allocate import TileAllocatePass
    from gedialects.tile.transforms.distribute import TileDistributePass
    from gedialects.tile.transforms.expand_structured import TileExpandStructuredPass
    from gedialects.tile.transforms.legalize_math import TileLegalizeMathPass
    from gedialects.tile.transforms.pipeline_buffers import TilePipelineBuffersPass
    from gedialects.tile.transforms.select_tiling import TileSelectTilingPass

    return [
        TileLegalizeMathPass(),
        TileSelectTilingPass(target=target),
        TileDistributePass(target=target),
        TilePipelineBuffersPass(target=target),
        TileExpandStructuredPass(target=target),
        TileAllocatePass(target=target),
    ]


def emit_error(self, message: str):
    """Fail with a diagnostic about the op `self` (ge-opt reports it at the
    op's line: tools/verify_diagnostics.failing_op looks for this frame)."""
    from xdsl.utils.exceptions import PassFailedException

    raise PassFailedException(message)


def check_static_inputs(module: ModuleOp) -> None:
    """The lowering compiles one static shape: name the first dynamic input."""
    from xdsl.dialects import func

    from gedialects.graph.interpreter import input_names
    from gedialects.graph.shapes import fmt, is_static

    for fn in module.body.block.ops:
        if not isinstance(fn, func.FuncOp) or fn.is_declaration:
            continue
        for name, arg in zip(input_names(fn), fn.args):
            shape = tuple(arg.type.get_shape()) if hasattr(arg.type, "get_shape") else ()
            if not is_static(shape):
                emit_error(
                    fn,
                    f"input '{name}' has dynamic shape {fmt(shape)}: the lowering compiles static "
                    f"shapes only; fix it with --input-shape (e.g. --input-shape '{name}:"
                    + ",".join("1" if d < 0 else str(d) for d in shape) + "')",
                )


def program_memory(module: ModuleOp) -> dict:
    """The `ge.memory` summary of the tile.program in `module` ({} if none)."""
    from gedialects.graph.memory.attributes import NoPlanError, memory_summary
    from gedialects.tile.ops import ProgramOp

    for op in module.body.block.ops:
        if isinstance(op, ProgramOp):
            try:
                return memory_summary(op)  # type: ignore[arg-type]
            except (NoPlanError, AttributeError):
                return {}
    return {}


def compile_onnx(path: str, precision: str = DEFAULT_PRECISION, target: str = "davinci-910", fuse: bool = True, input_shape: str = "", plan_memory: bool = True, dump=None) -> Compiled:
    from gedialects.frontend.onnx_import import import_model, load_model, parse_input_shapes

    module = import_model(load_model(path), parse_input_shapes(input_shape), source=path)
    if dump is not None:
        dump("import", module)
    return compile_module(module, precision, target, fuse, plan_memory, dump)


def run_compiled(compiled: Compiled, inputs: dict, target: str = "davinci-910", races: str = "error"):
    from target.assembler import assemble
    from target.simulator import simulate

    program = assemble(compiled.module)
    return simulate(program, inputs, target, races=races)


# ------------------------------------------------------- named pipelines (ge-opt)

from dataclasses import dataclass as _dataclass  # noqa: E402

from xdsl.passes import ModulePass  # noqa: E402


@_dataclass(frozen=True)
class GeGraphOptPass(ModulePass):
    """graph-canonicalize, graph-fuse (unless fuse=false), graph-plan-memory."""

    name = "ge-graph-opt"
    fuse: bool = True
    plan_memory: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from gedialects.graph.transforms.canonicalize import GraphCanonicalizePass
        from gedialects.graph.transforms.fuse import GraphFusePass
        from gedialects.graph.transforms.plan_memory import GraphPlanMemoryPass

        GraphCanonicalizePass().apply(ctx, op)
        if self.fuse:
            GraphFusePass().apply(ctx, op)
        if self.plan_memory:
            GraphPlanMemoryPass().apply(ctx, op)


@_dataclass(frozen=True)
class GeLowerPass(ModulePass):
    """graph-partition, assign-layouts, convert-graph-to-tile, ge-tile-opt, convert-tile-to-npu, npu-insert-sync (graph -> npu program)."""

    name = "ge-lower"
    precision_mode: str = DEFAULT_PRECISION
    target: str = "davinci-910"
    aicpu_fallback: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from lowering.assign_layouts import AssignLayoutsPass
        from lowering.graph_to_tile import ConvertGraphToTilePass
        from lowering.partition import GraphPartitionPass
        from gedialects.npu.transforms.insert_sync import NpuInsertSyncPass
        from lowering.tile_to_npu import ConvertTileToNpuPass

        check_precision_mode(self.precision_mode)
        check_static_inputs(op)
        GraphPartitionPass(self.precision_mode, self.aicpu_fallback).apply(ctx, op)
        AssignLayoutsPass().apply(ctx, op)
        ConvertGraphToTilePass(self.precision_mode, self.target).apply(ctx, op)
        GeTileOptPass(self.target).apply(ctx, op)
        ConvertTileToNpuPass(target=self.target).apply(ctx, op)
        NpuInsertSyncPass().apply(ctx, op)


@_dataclass(frozen=True)
class GeTileOptPass(ModulePass):
    """The tile passes (`tile_passes`): legalize-math, select-tiling, distribute,
    pipeline-buffers, expand-structured, allocate."""

    name = "ge-tile-opt"
    target: str = "davinci-910"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for tile_pass in tile_passes(self.target):
            tile_pass.apply(ctx, op)


@_dataclass(frozen=True)
class GeCompilePass(ModulePass):
    """ge-graph-opt then ge-lower: what `ge-compile` (and compile_module) runs."""

    name = "ge-compile"
    precision_mode: str = DEFAULT_PRECISION
    target: str = "davinci-910"
    fuse: bool = True
    plan_memory: bool = True
    aicpu_fallback: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        check_precision_mode(self.precision_mode)
        GeGraphOptPass(self.fuse, self.plan_memory).apply(ctx, op)
        GeLowerPass(self.precision_mode, self.target, self.aicpu_fallback).apply(ctx, op)
