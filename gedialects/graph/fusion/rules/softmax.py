"""Softmax with the reshapes around it.

Older ONNX opsets (and many exporters) flatten to 2-d, take the softmax and
reshape back (SqueezeNet: flatten → softmax → reshape). When the reshape keeps
the softmax axis intact (same extent, same number of elements before it) the
softmax commutes with it, and one `graph.softmax` with a `shape` (its result
shape) does both:

- `SoftmaxReshapeFusionPass`: softmax → reshape/flatten/squeeze/unsqueeze;
- `ReshapeSoftmaxFusionPass`: reshape/flatten/squeeze/unsqueeze → softmax.
"""

from __future__ import annotations

from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import Operation

from gedialects.graph import ops as g
from gedialects.graph import shapes

from ..helpers import other_users_miss, users
from ..registry import (
    DYNAMIC_SHAPE,
    UNSUPPORTED_ATTRIBUTE,
    FusionRule,
    Match,
    Miss,
    Phase,
    Rewrite,
)



def _softmax(x, axis: int, out: shapes.Shape, location) -> g.SoftmaxOp:
    props: dict = {"axis": IntegerAttr(axis, 64)}
    if tuple(out) != g.shape_of(x):
        props["shape"] = g.int_array(out)
    return g.SoftmaxOp.build_inferred([x], props, location=location)


def _axis_miss(anchor: Operation, x: shapes.Shape, axis: int, y: shapes.Shape) -> Miss | None:
    if not (shapes.is_static(x) and shapes.is_static(y)):
        return Miss(anchor, DYNAMIC_SHAPE, "the reshape needs static shapes")
    if g.reshaped_axis(x, axis, y) is None:
        return Miss(
            anchor, UNSUPPORTED_ATTRIBUTE,
            f"the reshape {shapes.fmt(x)} -> {shapes.fmt(y)} does not keep softmax axis {axis} intact",
        )
    return None


class SoftmaxReshapeFusion(FusionRule):
    name = "SoftmaxReshapeFusionPass"
    summary = "softmax → reshape keeping the softmax axis: one softmax with a result shape"
    anchors = (g.SoftmaxOp,)
    phase = Phase.RECOGNIZE

    def match(self, op: Operation) -> Match | Miss | None:
        assert isinstance(op, g.SoftmaxOp)
        view = next((u for u in users(op.output) if isinstance(u, g.RESHAPING_OPS)), None)
        if view is None:
            return None
        x = g.shape_of(op.input)
        if not shapes.is_static(x):
            return Miss(op, DYNAMIC_SHAPE, "the softmax input has a dynamic shape")
        axis = shapes.normalize_axis(op.int_("axis", -1), len(x))
        miss = _axis_miss(op, x, axis, g.shape_of(view.results[0])) or other_users_miss(op, op.output, [view])
        return miss or Match(op, [op, view], axis)

    def rewrite(self, match: Match) -> Rewrite:
        op, view = match.ops
        assert isinstance(op, g.SoftmaxOp)
        fused = _softmax(op.input, match.data, g.shape_of(view.results[0]), op.location)
        return Rewrite([fused], fused)


class ReshapeSoftmaxFusion(FusionRule):
    name = "ReshapeSoftmaxFusionPass"
    summary = "reshape → softmax on an axis the reshape keeps: one softmax with a result shape"
    anchors = (g.SoftmaxOp,)
    phase = Phase.RECOGNIZE

    def match(self, op: Operation) -> Match | Miss | None:
        assert isinstance(op, g.SoftmaxOp)
        view = op.input.owner
        if not isinstance(view, g.RESHAPING_OPS):
            return None
        x, y = g.shape_of(view.operands[0]), g.shape_of(op.input)
        if not (shapes.is_static(x) and shapes.is_static(y)):
            return Miss(op, DYNAMIC_SHAPE, "the reshape needs static shapes")
        axis_y = shapes.normalize_axis(op.int_("axis", -1), len(y))
        # the x axis that becomes axis_y: reshape y back to x
        axis_x = g.reshaped_axis(y, axis_y, x)
        if axis_x is None:
            return Miss(
                op, UNSUPPORTED_ATTRIBUTE,
                f"the reshape {shapes.fmt(x)} -> {shapes.fmt(y)} does not keep softmax axis {axis_y} intact",
            )
        miss = other_users_miss(op, op.input, [op])
        return miss or Match(op, [view, op], axis_x)

    def rewrite(self, match: Match) -> Rewrite:
        view, op = match.ops
        assert isinstance(op, g.SoftmaxOp)
        fused = _softmax(view.operands[0], match.data, g.shape_of(op.output), op.location)
        return Rewrite([fused], fused)
