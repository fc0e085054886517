"""AI-CPU tasks: an op graph-partition placed on the AI CPU becomes a
tile.aicpu launch (`lower_on_aicpu`), not a kernel. The driver sends every
op whose engine is AI_CPU here, whatever its type (lowering/legality/)."""

from __future__ import annotations

import math

from xdsl.dialects import func
from xdsl.dialects.builtin import AnyFloat, ArrayAttr, FloatAttr, NameLoc, StringAttr, TensorType, f16, f64
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import PassFailedException

from gedialects.graph import ops as g
from gedialects.graph.shapes import fmt, is_static
from gedialects.graph.tensors import element_type
from gedialects.location import describe_op
from gedialects.tile import ops as t
from lowering.assign_layouts import FORMAT_ATTR
from lowering.fp16_scaling import FP16_MAX
from lowering.legality import AI_CORE, ENGINE_ATTR, REASON_ATTR, STRUCTURED_FAMILIES, engine_of, kernel_of

from .context import LoweringContext
from .storage import GmStorage, TensorView
from .vector import row_copy


def readers_through_views(v: SSAValue) -> list[Operation]:
    """The ops that read v's bytes: its users, looking through the views the
    AI core makes without a kernel (they alias v's storage)."""
    readers: list[Operation] = []
    for use in v.uses:
        user = use.operation
        if isinstance(user, g.VIEW_OPS) and engine_of(user) == AI_CORE:
            readers += readers_through_views(user.results[0])
        else:
            readers.append(user)
    return readers


def _short_name(op: Operation) -> str:
    return op.name.split(".")[-1]


def lower_on_aicpu(ctx: LoweringContext, op: Operation) -> None:
    """op itself, on logical types, reads its operands' GM tensors in their
    logical order (assign-layouts put transdata before it) and writes its
    results in theirs; constants it reads are cloned into the task."""
    body = Block()
    mapping: dict[SSAValue, SSAValue] = {}
    ins = _task_inputs(ctx, op, body, mapping)
    task = op.clone(value_mapper=mapping)
    for attr in (ENGINE_ATTR, REASON_ATTR, FORMAT_ATTR):
        task.attributes.pop(attr, None)
    body.add_op(task)
    outs = [_task_output(ctx, op, r) for r in op.results]
    results = [_saturated(ctx, op, body, y, out) for y, out in zip(task.results, outs)]
    body.add_op(t.AicpuReturnOp(results))
    name = ctx.fresh_name(f"k{ctx.stats.kernels}_aicpu_{_short_name(op)}")
    task_op = t.AicpuOp(name, ins, outs, Region(body))
    task_op.attributes["kind"] = StringAttr("aicpu")
    task_op.attributes["source"] = StringAttr(describe_op(op))
    task_op.attributes["reason"] = op.attributes.get(REASON_ATTR, StringAttr("placed on the AI CPU"))
    absorbed = op.attributes.get("absorbed") or op.properties.get("absorbed")
    if isinstance(absorbed, ArrayAttr):
        task_op.attributes["absorbed"] = absorbed
    elif isinstance(op.location, NameLoc):
        task_op.attributes["absorbed"] = ArrayAttr([op.location.desc])
    ctx.program.body.block.add_op(task_op)
    ctx.stats.count("aicpu")


def _saturated(ctx: LoweringContext, op: Operation, body: Block, y: SSAValue, out) -> SSAValue:
    """y as the task stores it: an fp16 result of an op that reads a mask
    sentinel (finfo(f32).min) clamped to fp16's finite range first
    (fp16_scaling.saturate_to_fp16: -65504, not -inf, so a row it fills
    stays equal values)."""
    _, stored, scale = out
    if not (ctx.fp16 and stored.element_type == f16 and any(ctx.is_mask_sentinel(v) for v in op.operands)):
        return y
    bound = FP16_MAX * scale
    clip = g.ClipOp.build(operands=[y], result_types=[y.type],
                          properties={"min": FloatAttr(-bound, f64), "max": FloatAttr(bound, f64)})
    body.add_op(clip)
    return clip.results[0]


def _task_inputs(ctx: LoweringContext, op: Operation, body: Block, mapping: dict) -> list[tuple[str, TensorType, float]]:
    """(GM tensor, stored type, scale) per distinct operand; block arguments
    (or cloned splats) of the task body in `mapping`."""
    ins: list[tuple[str, TensorType, float]] = []
    for v in dict.fromkeys(op.operands):
        if isinstance(v.owner, g.FillOp):  # a splat costs nothing in the task
            const = v.owner.clone()
            const.attributes.pop(FORMAT_ATTR, None)
            body.add_op(const)
            mapping[v] = const.results[0]
            continue
        if isinstance(v.owner, g.ConstantOp):  # weights are read from GM, in their own type:
            value = ctx.constant_value(v)  # the AI CPU computes in it (a mask's -3.4e38 stays finite)
            name = ctx.add_constant(f"{_short_name(op)}_const", value, keep_dtype=True)
            stored = ctx.constants[name]
            ins.append((name, TensorType(element_type(stored.dtype), stored.shape), 1.0))
            mapping[v] = body.insert_arg(v.type, len(body.args))
            continue
        x = ctx.values.get(v)
        if x is None:
            raise PassFailedException(f"{describe_op(op)}: operand not lowered")
        if x.layout not in g.ROW_MAJOR:
            raise PassFailedException(f"{describe_op(op)}: an AI-CPU operand is held in {x.layout} "
                                      "(assign-layouts puts a transdata here)")
        # a view of an NC1HWC0 map with H*W = 1 and no halo is its C values
        # in a row (assign-layouts: ND, no transdata); a task reads whole
        # tensors, so a row that does not start its tensor (a slice of a
        # channel concat written in place) is copied out first
        if x.storage.layout == "NC1HWC0" and x.origin(ctx.c0) != 0:
            x = row_copy(ctx, op, x)
        ins.append((x.storage.name, TensorType(ctx.stored_element(x.storage, v), g.shape_of(v)), ctx.scale_of(v)))
        mapping[v] = body.insert_arg(v.type, len(body.args))
    return ins


def _task_output(ctx: LoweringContext, op: Operation, r: SSAValue) -> tuple[str, TensorType, float]:
    """The GM tensor result r is written to: (name, stored type, scale)."""
    shape = g.shape_of(r)
    if not is_static(shape):  # its GM slot needs a size at compile time
        raise PassFailedException(f"{describe_op(op)}: result has the data-dependent shape {fmt(shape)}; "
                                  "the npu program holds static shapes only")
    readers = readers_through_views(r)
    # AI-core kernels other than transdata read the compute precision
    core_readers = any(engine_of(u) == AI_CORE and not isinstance(u, g.TransDataOp | func.ReturnOp) for u in readers)
    # force_fp16: a graph output is written in fp32, but AI-core kernels
    # (other than transdata) read fp16: such a result is stored in fp16
    # and finish_outputs casts it to the output (copy_out)
    fp16_readers = ctx.fp16 and isinstance(r.type.element_type, AnyFloat) and core_readers
    outputs = ctx.plan.outputs
    is_output = r in outputs and not fp16_readers
    st = GmStorage((outputs[r] if is_output else None) or ctx.fresh_name(f"{_short_name(op)}_aicpu"),
                   layout="ND", elems=math.prod(shape), shape=shape)
    st.kind = "output" if is_output else "internal"
    # a graph output is written in its own type, unscaled
    scale = 1.0 if st.kind == "output" else ctx.scale_of(r)
    elem = r.type.element_type if st.kind == "output" else ctx.stored_element(None, r)
    if any(isinstance(u, g.TransDataOp) for u in readers):
        elem = r.type.element_type  # transdata_in reads fp32 maps, as of graph inputs
        # structured kernels read an fp32 tensor as they read an fp32 graph
        # input (cast on the way); the CNN patterns read fp16 only
        if ctx.fp16 and any(engine_of(u) == AI_CORE and not isinstance(u, g.TransDataOp | func.ReturnOp)
                            and kernel_of(u) not in STRUCTURED_FAMILIES for u in readers):
            raise PassFailedException(f"{describe_op(op)}: force_fp16: an AI-CPU result read both by a "
                                      "transdata and by another AI-core kernel is not lowered")
    st.ttype = TensorType(elem, shape)
    ctx.storages.append(st)
    ctx.values[r] = TensorView(st, 0, "NCHW" if len(shape) == 4 else "ND", shape)
    return (st.name, st.ttype, scale)
