"""The whole way down: ONNX/graph module -> tile -> npu, in memory.

`compile_module(module, ...)` runs the stages of `graph_stages`
(graph-canonicalize, graph-decompose, graph-fuse unless `fuse=False`, graph-plan-memory unless
`plan_memory=False`) and `lower_stages` (map-unbatch, conv-space-to-depth, graph-partition, assign-layouts,
convert-graph-to-tile, the tile passes, convert-tile-to-npu, npu-insert-sync)
on one module and returns a `Compiled` record (the npu module and what each
stage reported): the one definition of the pipeline, which the named passes
below run too. With a
memory plan the lowering puts its intermediates in one reused GM arena
(gedialects/tile/gm_arena.py); `Compiled.memory` is that arena's summary.
The named pipelines `ge-graph-opt`, `ge-lower` and `ge-compile` in
gedialects/universe.py (this module's `GeGraphOptPass` & co.) are the same
stages for ge-opt.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import PassFailedException

from gedialects.walk import outermost

from lowering.graph_to_tile import DEFAULT_PRECISION, check_precision_mode


@dataclass
class Compiled:
    module: ModuleOp
    transdata: int
    kernels: int
    """Kernels of the program (AI-CPU tasks included), the tile passes' too (split-K's sums)."""
    kernel_kinds: dict = field(default_factory=dict)
    """`kernels` by kind (`ge.kind`: conv, split_k_sum, ...; aicpu)."""
    npu_ops: int = 0
    seconds: float = 0.0
    memory: dict = field(default_factory=dict)
    """GM arena summary (arena_size, no_reuse, graph_arena_size, strategy, ...); empty without a plan."""
    aicpu: int = 0
    """AI-CPU tasks (ops graph-partition placed on the AI CPU)."""
    streams: int = 1
    """Streams the tasks are launched on (tile-assign-streams)."""
    events: int = 0
    """Events between streams."""

    def program(self, verify: bool = False):
        """The assembled program (target.program.Program). The module is
        this pipeline's own output, built by its passes, so it is not
        verified again unless asked (verifying densenet121's 105k npu ops
        took longer than assembling them four times over; the tests assemble
        with verification)."""
        from target.assembler import assemble

        return assemble(self.module, verify=verify)


@contextmanager
def collector_paused():
    """A compile builds and drops millions of small IR objects while most of
    what it built stays alive to the end: CPython's cyclic collector would
    walk the live ones again at every generation-2 pass (a fifth of
    ResNet-50's compile, a third of densenet121's). It is paused for the
    compile and resumes after, collecting what the passes dropped. The
    tools pause it over the whole job (import to .om): resumed between
    the compile and the assembly, its first passes walk the whole finished
    IR (0.3 s of densenet121's assembly and .om write)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@collector_paused()
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
    progress=None,
    fusion_report: str = "",
    max_streams: int = 0,
    device_memory_limit: int = 0,
) -> Compiled:
    """`dump(stage, module)`, when given, is called after every stage, and
    `progress(done, total, stage)` after every named one.
    `calibration`: named inputs for force_fp16's range scaling;
    `fusion_report`: where graph-fuse writes its per-rule counts (JSON).
    `aicpu_fallback=False`: an op without an AI-core kernel is an error;
    `max_streams`: streams tile-assign-streams may use (0: the target's, 1: one stream);
    `device_memory_limit`: bytes the GM arena may take (tile-fit-device-memory; 0: no limit)."""
    t0 = time.perf_counter()
    ctx = Context()
    say = dump or (lambda stage, m: None)
    record: dict = {}
    graph = graph_stages(fuse, plan_memory, fusion_switch_file, fusion_report)

    def lower(slice_in_place_convs: bool) -> list[Stage]:
        return lower_stages(precision, target, aicpu_fallback, calibration, record, max_streams,
                            device_memory_limit, slice_in_place_convs)

    total = sum(1 for name, _ in graph + lower(False) if name is not None)
    done = 0

    def run_all(stages: list[Stage], module: ModuleOp) -> None:
        nonlocal done
        for name, run in stages:
            run_stage(name, run, ctx, module)
            if name is not None:
                say(name, module)
                done = min(done + 1, total)
                if progress is not None:
                    progress(done, total, name)

    run_all(graph, module)
    graph_module = module.clone() if device_memory_limit else None
    try:
        run_all(lower(False), module)
    except PassFailedException as e:
        # under a limit the plan could not meet, slice the convs that write over
        # their residual too (slicing.py) and lower the graph again
        if graph_module is None or not str(e).startswith("tile-fit-device-memory"):
            raise
        module = graph_module
        done -= sum(1 for name, _ in lower(False) if name is not None)
        run_all(lower(True), module)
    from gedialects.npu import ops as npu

    stats = record["stats"]
    n = sum(1 for _ in module.walk())
    events = 0
    used = {0}
    kinds: dict[str, int] = {}  # the program's kernels by kind, the tile passes' (split-K's sums) included
    for op in outermost(module, (npu.LaunchOp, npu.AicpuOp, npu.MemcpyOp, npu.StreamRecordOp, npu.KernelOp)):
        if isinstance(op, npu.LaunchOp | npu.AicpuOp | npu.MemcpyOp):
            used.add(op.stream.value.data)
        elif isinstance(op, npu.StreamRecordOp):
            events += 1
        else:
            kind = op.attributes["ge.kind"].data  # type: ignore[attr-defined]
            kinds[kind] = kinds.get(kind, 0) + 1
    aicpu = stats.ops.get("aicpu", 0)
    if aicpu:
        kinds["aicpu"] = aicpu
    streams = len(used)
    return Compiled(module, stats.transdata, sum(kinds.values()), kinds, n, time.perf_counter() - t0,
                    record["memory"], aicpu, streams, events)


Stage = tuple["str | None", Callable[[Context, ModuleOp], None]]
"""(name of its IR dump or None, what it runs)."""


def run_stage(name: str | None, run, ctx: Context, module: ModuleOp) -> None:
    """Run one stage as a recorded pass (gedialects/instrumentation.py): the
    pass's registered name (convert-graph-to-tile / convert-tile-to-npu for
    the graph-to-tile / tile-to-npu stages), so --mlir-timing nests it under
    a named pipeline."""
    from gedialects.instrumentation import pass_scope

    owner = getattr(run, "__self__", None)
    label = getattr(owner, "name", None) or {"graph-to-tile": "convert-graph-to-tile",
                                             "tile-to-npu": "convert-tile-to-npu"}.get(name or "", name)
    with pass_scope(label or "check-static-inputs"):
        run(ctx, module)


def graph_stages(fuse: bool = True, plan_memory: bool = True, fusion_switch_file: str = "",
                 fusion_report: str = "") -> list[Stage]:
    """The graph level: graph-canonicalize, graph-decompose, graph-fuse, graph-plan-memory (the `ge-graph-opt` pipeline)."""
    from gedialects.graph.transforms.canonicalize import GraphCanonicalizePass
    from gedialects.graph.transforms.decompose import GraphDecomposePass
    from gedialects.graph.transforms.fuse import GraphFusePass
    from gedialects.graph.transforms.plan_memory import GraphPlanMemoryPass

    stages: list[Stage] = [("canonicalize", GraphCanonicalizePass().apply), ("decompose", GraphDecomposePass().apply)]
    if fuse:
        stages.append(("fuse", GraphFusePass(switch_file=fusion_switch_file, report=fusion_report).apply))
    if plan_memory:
        stages.append(("plan-memory", GraphPlanMemoryPass().apply))
    return stages


def lower_stages(precision: str = DEFAULT_PRECISION, target: str = "davinci-910", aicpu_fallback: bool = True,
                 calibration=None, record: dict | None = None, max_streams: int = 0,
                 device_memory_limit: int = 0, slice_in_place_convs: bool = False) -> list[Stage]:
    """graph -> npu (the `ge-lower` pipeline): static-shape check, map-unbatch, conv-space-to-depth,
    graph-partition, assign-layouts, convert-graph-to-tile, the tile passes (tile-assign-streams
    last: its GM arena summary goes to `record` with the lowering's statistics),
    convert-tile-to-npu, npu-insert-sync."""
    from gedialects.npu.transforms.insert_sync import NpuInsertSyncPass
    from lowering.assign_layouts import AssignLayoutsPass
    from lowering.graph_to_tile import convert
    from lowering.partition import GraphPartitionPass
    from lowering.space_to_depth import ConvSpaceToDepthPass
    from lowering.unbatch import MapUnbatchPass
    from lowering.tile_to_npu import ConvertTileToNpuPass

    record = {} if record is None else record
    check_precision_mode(precision)

    def graph_to_tile(ctx: Context, module: ModuleOp) -> None:
        record["stats"] = convert(module, precision, target, calibration, device_memory_limit, slice_in_place_convs)

    def tile_to_npu(ctx: Context, module: ModuleOp) -> None:
        record["memory"] = program_memory(module)  # the arena as the tile level left it
        ConvertTileToNpuPass(target=target).apply(ctx, module)

    return [
        (None, lambda ctx, module: check_static_inputs(module)),
        ("map-unbatch", MapUnbatchPass(precision).apply),
        ("space-to-depth", ConvSpaceToDepthPass(precision).apply),
        ("partition", GraphPartitionPass(precision, aicpu_fallback).apply),
        ("assign-layouts", AssignLayoutsPass().apply),
        ("graph-to-tile", graph_to_tile),
        *((p.name, p.apply) for p in tile_passes(target, max_streams, device_memory_limit)),
        ("tile-to-npu", tile_to_npu),
        ("npu-insert-sync", NpuInsertSyncPass().apply),
    ]


def tile_passes(target: str, max_streams: int = 0, device_memory_limit: int = 0) -> list:
    """The tile level, in order: what runs between convert-graph-to-tile and
    convert-tile-to-npu (the `ge-tile-opt` pipeline); tile-fit-device-memory
    only under a limit."""
    from gedialects.tile.transforms.allocate import TileAllocatePass
    from gedialects.tile.transforms.assign_streams import TileAssignStreamsPass
    from gedialects.tile.transforms.distribute import TileDistributePass
    from gedialects.tile.transforms.expand_structured import TileExpandStructuredPass
    from gedialects.tile.transforms.fit_device_memory import TileFitDeviceMemoryPass
    from gedialects.tile.transforms.legalize_math import TileLegalizeMathPass
    from gedialects.tile.transforms.pipeline_buffers import TilePipelineBuffersPass
    from gedialects.tile.transforms.select_tiling import TileSelectTilingPass
    from gedialects.tile.transforms.share_alike import TileShareAlikeKernelsPass
    from gedialects.tile.transforms.split_reduction import TileSplitReductionPass

    fit = [TileFitDeviceMemoryPass(target=target, device_memory_limit=device_memory_limit)] if device_memory_limit else []
    return [
        *fit,
        TileLegalizeMathPass(),
        TileSplitReductionPass(target=target),
        TileSelectTilingPass(target=target),
        TileDistributePass(target=target),
        TilePipelineBuffersPass(target=target),
        TileShareAlikeKernelsPass(),
        TileExpandStructuredPass(target=target),
        TileAllocatePass(target=target),
        TileAssignStreamsPass(target=target, max_streams=max_streams),
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
    from target.simulator import simulate

    return simulate(compiled.program(verify=True), inputs, target, races=races)  # the tests' helper: verified


# ------------------------------------------------------- named pipelines (ge-opt)

from dataclasses import dataclass as _dataclass  # noqa: E402

from xdsl.passes import ModulePass  # noqa: E402


@_dataclass(frozen=True)
class GeGraphOptPass(ModulePass):
    """graph-canonicalize, graph-decompose, graph-fuse (unless fuse=false), graph-plan-memory."""

    name = "ge-graph-opt"
    fuse: bool = True
    plan_memory: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for name, run in graph_stages(self.fuse, self.plan_memory):
            run_stage(name, run, ctx, op)


@_dataclass(frozen=True)
class GeLowerPass(ModulePass):
    """map-unbatch, conv-space-to-depth, graph-partition, assign-layouts, convert-graph-to-tile, ge-tile-opt, convert-tile-to-npu, npu-insert-sync (graph -> npu program)."""

    name = "ge-lower"
    precision_mode: str = DEFAULT_PRECISION
    target: str = "davinci-910"
    aicpu_fallback: bool = True
    max_streams: int = 0
    device_memory_limit: int = 0

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for name, run in lower_stages(self.precision_mode, self.target, self.aicpu_fallback,
                                      max_streams=self.max_streams, device_memory_limit=self.device_memory_limit):
            run_stage(name, run, ctx, op)


@_dataclass(frozen=True)
class GeTileOptPass(ModulePass):
    """The tile passes (`tile_passes`): fit-device-memory (under a limit), legalize-math,
    split-reduction, select-tiling, distribute, pipeline-buffers, expand-structured, allocate,
    assign-streams."""

    name = "ge-tile-opt"
    target: str = "davinci-910"
    max_streams: int = 0
    device_memory_limit: int = 0

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for tile_pass in tile_passes(self.target, self.max_streams, self.device_memory_limit):
            run_stage(tile_pass.name, tile_pass.apply, ctx, op)


@_dataclass(frozen=True)
class GeCompilePass(ModulePass):
    """ge-graph-opt then ge-lower: what `ge-compile` (and compile_module) runs."""

    name = "ge-compile"
    precision_mode: str = DEFAULT_PRECISION
    target: str = "davinci-910"
    fuse: bool = True
    plan_memory: bool = True
    aicpu_fallback: bool = True
    max_streams: int = 0
    device_memory_limit: int = 0

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        check_precision_mode(self.precision_mode)
        for stage in (GeGraphOptPass(self.fuse, self.plan_memory),
                      GeLowerPass(self.precision_mode, self.target, self.aicpu_fallback, self.max_streams,
                                  self.device_memory_limit)):
            run_stage(stage.name, stage.apply, ctx, op)
