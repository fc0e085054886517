"""convert-graph-to-tile: one tile.kernel per (fused) graph op.

The storage format of every value comes from assign-layouts (`ge.format`;
run here first on IR that has none) and is checked against what the
kernels build. Decisions made here (docs/LOWERING.md): storage details, GM
placement, force_fp16 range scaling (fp16_scaling.py), which unit does
what. Every kernel holds what the tile passes tile, distribute and
expand: a structured kernel, or one tile.conv, tile.pool, tile.gemm,
tile.elementwise or tile.transdata; no pattern writes loops.

The package, one job per module:
  __init__       the driver (`lower_function`, `convert`, the pass)
  registry       `@lowers(OpType)`: op type -> conversion pattern
  context        `LoweringContext`: the state the patterns share
  planning       aliases (views, in-place concat), halos, output storages
  storage        `GmStorage`, `TensorView`, `map_view`
  placement      GM offsets (memory plan or bump allocator)
  outputs        graph outputs: in place, or structured copy/cast kernels
  precision      the precision modes
  slicing        convs sliced under a device memory limit
  conv, pool, matmul, elementwise, data_movement (+ map_transpose), transdata:
                 the patterns of 4-D maps, one module per op family (imported
                 below: a new family module is one more line there)
  vector         structured vector kernels of row-major tensors (any rank):
                 elementwise/fusions, softmax, layer_norm, reductions
  copy, gather   box copies (slice/split/concat, expand), gathers by integer indices
  cube, attention  structured matmul/gemm kernels of row-major tensors, fused attention
  aicpu          ops graph-partition placed on the AI CPU
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import AnyFloat, IntegerAttr, ModuleOp, StringAttr, i64
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from gedialects.graph import ops as g
from gedialects.graph.interpreter import input_names
from gedialects.instrumentation import statistic
from gedialects.location import describe_op
from gedialects.tile import ops as t
from lowering.assign_layouts import assign_layouts, format_of, is_annotated
from lowering.fp16_scaling import calibrate, plan_scales
from lowering.plugins import load_kernel_plugins
from lowering.legality import AI_CORE, AI_CPU, engine_of, kernel_of, nonnegative_values

from . import (  # noqa: F401  the family modules: importing one registers its patterns
    attention,
    conv,
    copy,
    data_movement,
    elementwise,
    gather,
    matmul,
    pool,
    transdata,
    vector,
    cube,
)
from .aicpu import lower_on_aicpu
from .context import LoweringContext, LoweringStats
from .outputs import finish_outputs
from .placement import place
from .planning import CUBE_CHANNELS, plan_storage
from .precision import DEFAULT_PRECISION, PRECISION_MODES, check_precision_mode
from .registry import CNN_FAMILY, PATTERNS, lowers
from .storage import GmStorage, TensorView

NOT_LOWERED = (g.ConstantOp, g.FillOp, func.ReturnOp)
"""Ops without a kernel of their own: constants are read where they are used
(or become GM constants), the return is finish_outputs' business."""

__all__ = [
    "CUBE_CHANNELS",
    "DEFAULT_PRECISION",
    "PATTERNS",
    "PRECISION_MODES",
    "ConvertGraphToTilePass",
    "GmStorage",
    "LoweringContext",
    "LoweringStats",
    "TensorView",
    "check_precision_mode",
    "convert",
    "lower_function",
    "lowers",
]


def lower_function(fn: func.FuncOp, precision: str, config, name: str = "main", calibration=None,
                   device_memory_limit: int = 0, slice_in_place_convs: bool = False) -> LoweringContext:
    """The tile.program of fn (in `ctx.program`); fn is left as it is.
    `device_memory_limit`: convs whose own operands exceed it write their
    output in channel pieces (slicing.py; `slice_in_place_convs`: counting
    the output of a conv that may write over its residual too)."""
    load_kernel_plugins()
    ctx = LoweringContext(fn, precision, config, name)
    ctx.device_memory_limit = device_memory_limit
    ctx.slice_in_place_convs = slice_in_place_convs
    if not is_annotated(fn):
        assign_layouts(fn)
    ctx.plan = plan_storage(fn, ctx.c0)
    ctx.nonnegative = nonnegative_values(fn.body.block)
    if ctx.fp16:
        ctx.scales = plan_scales(fn, calibrate(fn, calibration))
    _bind_inputs(ctx)
    for op in fn.body.block.ops:
        lower_op(ctx, op)
        _check_format(ctx, op)
    finish_outputs(ctx)
    place(ctx)
    return ctx


def lower_op(ctx: LoweringContext, op: Operation) -> None:
    if isinstance(op, NOT_LOWERED) or op in ctx.folded:
        return
    if engine_of(op) == AI_CPU:
        return lower_on_aicpu(ctx, op)
    family = kernel_of(op)
    pattern = PATTERNS[family or CNN_FAMILY].get(type(op))
    if pattern is None:
        hint = "" if family else " (graph-partition chooses an op's kernel family: run it before this pass)"
        raise PassFailedException(f"{describe_op(op)}: no lowering to the tile dialect for {op.name}{hint}")
    pattern(ctx, op)


def _bind_inputs(ctx: LoweringContext) -> None:
    """Graph inputs are fp32 (or their own type) in their logical order, in GM."""
    fn = ctx.fn
    for name, arg in zip(input_names(fn), fn.args):
        shape = g.shape_of(arg)
        st = GmStorage(name, kind="input", layout="ND", elems=math.prod(shape), shape=shape)
        st.ttype = arg.type
        ctx.storages.append(st)
        # structured kernels read an fp32 input as it is (the cube through a cast kernel);
        # a view's readers are the legality table's (a 4-D view is a map: its input transdata converts)
        core_readers = any(engine_of(u.operation) == AI_CORE and kernel_of(u.operation) is None
                           and not isinstance(u.operation, (func.ReturnOp, *g.VIEW_OPS)) for u in arg.uses)
        if len(shape) != 4 and ctx.fp16 and core_readers and isinstance(arg.type.element_type, AnyFloat):
            raise PassFailedException(f"force_fp16: input '{name}' read by an AI-core op needs a cast kernel "
                                      "(not implemented; graph-partition places its readers on the AI CPU)")
        ctx.values[arg] = TensorView(st, 0, "NCHW" if len(shape) == 4 else "ND", shape)


def _check_format(ctx: LoweringContext, op: Operation) -> None:
    """What the kernels built must agree with what assign-layouts chose."""
    want = format_of(op)
    if want is None or not op.results or op.results[0] not in ctx.values:
        return
    got = ctx.values[op.results[0]].layout
    if not g.same_format(got, want):
        raise PassFailedException(f"{describe_op(op)}: assign-layouts chose {want}, the lowering produced {got}")


def convert(module: ModuleOp, precision: str = DEFAULT_PRECISION, target="davinci-910",
            calibration=None, device_memory_limit: int = 0, slice_in_place_convs: bool = False) -> LoweringStats:
    """Replace `@main` by a tile.program (in place); returns statistics.
    `calibration`: named inputs for force_fp16 range scaling (default: seeded
    standard normal; lowering/fp16_scaling.py); `device_memory_limit`: the
    bytes tile-fit-device-memory will fit the arena in (0: none), which
    convs whose own operands exceed it are sliced for (`slice_in_place_convs`:
    also those that only exceed it if they cannot write over their residual)."""
    from target.config import load_target

    config = load_target(target)
    fns = [op for op in module.body.block.ops if isinstance(op, func.FuncOp)]
    if len(fns) != 1:
        raise PassFailedException("convert-graph-to-tile: expected one func.func")
    fn = fns[0]
    ctx = lower_function(fn, precision, config, fn.sym_name.data, calibration, device_memory_limit,
                         slice_in_place_convs)
    prog: t.ProgramOp = ctx.program
    prog.attributes["ge.precision_mode"] = StringAttr(precision)
    prog.attributes["ge.transdata"] = IntegerAttr(ctx.stats.transdata, i64)
    statistic("kernels", ctx.stats.kernels, "kernels (AI-CPU tasks included)")
    statistic("transdata-kernels", ctx.stats.transdata, "transdata kernels")
    module.body.block.insert_op_before(prog, fn)
    fn.detach()
    fn.erase(safe_erase=False)
    return ctx.stats


@dataclass(frozen=True)
class ConvertGraphToTilePass(ModulePass):
    """Lower the graph function to one tile.kernel per (fused) op."""

    name = "convert-graph-to-tile"
    precision_mode: str = DEFAULT_PRECISION
    target: str = "davinci-910"
    device_memory_limit: int = 0
    slice_in_place_convs: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        convert(op, self.precision_mode, self.target, device_memory_limit=self.device_memory_limit,
                slice_in_place_convs=self.slice_in_place_convs)
