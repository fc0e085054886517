"""The vector family's rules: ops the CNN patterns refuse may still have a
vector kernel of row-major tensors (lowering/graph_to_tile/vector.py, copy.py,
gather.py): elementwise ops and fusions of any rank with broadcasting,
softmax, layer_norm, reductions along the trailing dims, box copies,
transposes that keep the innermost dim, gathers -- `vector_refusal`, one
rule per op type in `VECTOR_RULES` (the elementwise rule for the rest)."""

from __future__ import annotations

import math

from xdsl.dialects.builtin import IntegerType
from xdsl.ir import Operation, SSAValue

from gedialects.graph import ops as g
from gedialects.graph import shapes

from .base import Context, Rule, copy_boxes, is_constant, is_f32, is_int, rule_registry

VECTOR_RULES: dict[type[Operation], Rule] = {}
vector_rule = rule_registry(VECTOR_RULES)


def _vector_elementwise(op: Operation, ctx: Context) -> str | None:
    from lowering.map_bodies import ELEMENTWISE, fusion_tensor_constants, scalar_value

    out = op.results[0]
    operands = [v for v in op.operands if not (is_constant(v) and scalar_value(v) is not None)]
    if isinstance(op, g.FusionOp):
        if len({g.shape_of(r) for r in op.results}) != 1:
            return "a fusion whose results differ in shape is not lowered"
        integers = {a for a, v in zip(op.body.block.args, op.inputs) if is_int(v)}
        for inner in op.body.block.ops:
            if isinstance(inner, g.YieldOp):
                continue
            if isinstance(inner, g.ConstantOp | g.FillOp):
                if is_int(inner.results[0]):
                    integers.add(inner.results[0])
                continue
            if type(inner) not in ELEMENTWISE:
                return f"{inner.name} has no vector kernel"
            if (why := _integer_use(inner, integers)) is not None:
                return why
            if is_int(inner.results[0]):
                integers.add(inner.results[0])
        operands += fusion_tensor_constants(op)  # loaded like operands
    elif type(op) not in ELEMENTWISE:
        return f"no AI-core kernel for {op.name}"
    elif (why := _integer_use(op, {v for v in op.operands if is_int(v)})) is not None:
        return why
    shape = g.shape_of(out)
    for v in operands:
        if not shapes.is_static(g.shape_of(v)) or len(g.shape_of(v)) > len(shape):
            return "an operand does not broadcast to the result"
    return None


def _integer_use(op: Operation, integers: set[SSAValue]) -> str | None:
    """Integers reach the vector unit as fp32 (vconv): a cast of them (to bool:
    != 0; to float: rounded, as ONNX Cast does) is exact, arithmetic and
    comparisons are not beyond 2^24."""
    if isinstance(op, g.CastOp) or not any(v in integers for v in op.operands):
        return None
    return (f"{op.name} of integers (the vector unit computes on them in fp32, exact only below 2^24; "
            f"the AI CPU computes them exactly)")


def _unit_reduction(length: int) -> str | None:
    """A reduction over one element has no column to reduce into (the
    expansion reduces along rows wider than 1)."""
    return "a reduction over one element" if length == 1 else None


@vector_rule(g.SoftmaxOp, g.LogSoftmaxOp)
def _vector_softmax(op: Operation, ctx: Context) -> str | None:
    s = g.shape_of(op.operands[0])
    axis = op.int_("axis", -1) % len(s)
    if math.prod(s[axis + 1 :]) != 1:
        return f"softmax along axis {axis} of {shapes.fmt(s)} is not along the last non-unit dim"
    return _unit_reduction(s[axis])


@vector_rule(g.LayerNormOp)
def _vector_layer_norm(op: g.LayerNormOp, ctx: Context) -> str | None:
    s = g.shape_of(op.input)
    axis = op.int_("axis", -1) % len(s)
    cols = math.prod(s[axis:])
    for p in (op.scale, op.bias):
        if p is not None and math.prod(g.shape_of(p)) != cols:
            return "scale/bias that do not cover the normalised dims"
    if op.residual is not None and g.shape_of(op.residual) != s:
        return "a broadcast residual is not lowered"
    return _unit_reduction(cols)


@vector_rule(g.ReduceMeanOp, g.ReduceSumOp, g.ReduceMaxOp)
def _vector_reduce(op: g.ReduceOp, ctx: Context) -> str | None:
    s = g.shape_of(op.input)
    axes = sorted(a % len(s) for a in (op.ints("axes") or range(len(s))))
    if axes != list(range(axes[0], len(s))):
        return f"reduction over axes {tuple(axes)} of {shapes.fmt(s)}: only trailing axes are lowered"
    return _unit_reduction(math.prod(s[axes[0] :]))


@vector_rule(g.SliceOp, g.SplitOp, g.ConcatOp)
def _vector_copy(op: Operation, ctx: Context) -> str | None:
    boxes = copy_boxes(op)
    if isinstance(boxes, str):
        return boxes
    if all(is_constant(box.src) for box in boxes):
        return "a copy of constants only (fold it)"
    return None  # a constant box (ViT's class token before the patches) is a GM constant of the kernel


@vector_rule(g.ExpandOp)
def _vector_expand(op: g.ExpandOp, ctx: Context) -> str | None:
    return None  # a broadcasting map


@vector_rule(g.TransposeOp)
def _vector_transpose(op: g.TransposeOp, ctx: Context) -> str | None:
    s = g.shape_of(op.input)
    perm = [p % len(s) for p in op.ints("perm", ())] or list(range(len(s)))[::-1]
    if perm[-1] != len(s) - 1:
        return f"graph.transpose perm {tuple(perm)} moves the innermost dim (DMA moves whole rows)"
    if is_constant(op.input):
        return "a transpose of a constant (fold it)"
    if s[-1] == 1:  # e.g. a channel shuffle of a [1, C, 1, 1] map, whose views assign-layouts reads as maps
        return "a transpose of rows of one element"
    return None


def gather_view(op: g.GatherOp) -> tuple[int, int, int]:
    """[A, V, B]: a gather's data as rows of B elements, V per index range."""
    shape = g.shape_of(op.input)
    axis = op.int_("axis", 0) % len(shape)
    return math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1 :])


@vector_rule(g.GatherOp)
def _vector_gather(op: g.GatherOp, ctx: Context) -> str | None:
    element = op.indices.type.element_type  # type: ignore[attr-defined]
    if not isinstance(element, IntegerType) or element.width.data not in (32, 64):
        return f"indices of type {element} (i32 or i64 only)"
    return None


def vector_refusal(op: Operation, ctx: Context) -> str | None:
    """None when the vector family lowers op, else why not."""
    from lowering.map_bodies import ELEMENTWISE

    if type(op) not in VECTOR_RULES and type(op) not in ELEMENTWISE and not isinstance(op, g.FusionOp):
        return f"no AI-core kernel for {op.name}"
    if isinstance(op, g.GatherOp):
        integer_operands = {op.indices}
    elif type(op) in ELEMENTWISE or isinstance(op, g.FusionOp):
        integer_operands = {v for v in op.operands if is_int(v)}  # converted to fp32 where loaded
    else:
        integer_operands = set()
    for v in (*op.operands, *op.results):
        if not is_f32(v) and not is_constant(v) and v not in integer_operands:
            return f"element type {v.type.element_type} is not lowered on the AI core (f32 only)"  # type: ignore[attr-defined]
        if not shapes.is_static(g.shape_of(v)):
            return "dynamic shape"
        if 0 in g.shape_of(v):
            return "an empty tensor"
    check = VECTOR_RULES.get(type(op), _vector_elementwise)
    return check(op, ctx)
