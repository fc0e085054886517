"""Epilogues of the heavy ops: residual add, bias add and activation.

- `ConvAddFusionPass`: add(conv(x), r) → conv(x, residual r) when r broadcasts
  to the conv result (graph.sum of two tensors counts as an add: ResNet's
  residuals are ONNX Sum);
- `ConvActivationFusionPass`, `MatMulActivationFusionPass`,
  `GemmActivationFusionPass`: an activation after the op (graph.ops.ACTIVATIONS:
  relu, leaky_relu, clip (ReLU6), sigmoid, tanh, gelu, hard_sigmoid,
  hard_swish) → its `activation` epilogue (after any residual);
- `MatMulBiasAddFusionPass`: add(matmul(a, b), c) with c on either side and
  broadcasting to the product → gemm(a, b, c) for 2-d operands, else
  matmul(a, b) with bias c; also fills in the bias of a gemm that has none.
"""

from __future__ import annotations

from xdsl.ir import Operation

from gedialects.graph import ops as g
from gedialects.graph import shapes

from ..helpers import (
    activation_candidate,
    activation_miss,
    activation_of,
    activation_props,
    is_add,
    other_operand,
    other_users_miss,
    rebuild,
    users,
)
from ..registry import UNSUPPORTED_ATTRIBUTE, FusionRule, Match, Miss, Phase, Rewrite


def _grows(value_shape: shapes.Shape, out: shapes.Shape) -> bool:
    """True if broadcasting `value_shape` against `out` changes `out`."""
    try:
        return shapes.broadcast(out, value_shape) != tuple(out)
    except shapes.ShapeError:
        return True


class ActivationEpilogue(FusionRule):
    """Base of the `<Op>ActivationFusionPass` rules."""

    phase = Phase.EPILOGUE

    def match(self, op: Operation) -> Match | Miss | None:
        assert isinstance(op, g.GraphOp)
        out = op.results[0]
        act = activation_candidate(out)
        if act is None:
            return None
        miss = activation_miss(op, act)
        if miss:
            return miss
        current = op.properties.get("activation")
        if current is not None:
            return Miss(op, UNSUPPORTED_ATTRIBUTE, f"the {op.name} already has a {current.data} epilogue")  # type: ignore[attr-defined]
        miss = other_users_miss(op, out, [act])
        if miss:
            return miss
        return Match(op, [op, act], activation_of(act))

    def rewrite(self, match: Match) -> Rewrite:
        kind, params = match.data
        op = match.anchor
        assert isinstance(op, g.GraphOp)
        fused = rebuild(op, properties=activation_props(kind, params))
        return Rewrite([fused], fused)


class ConvActivationFusion(ActivationEpilogue):
    name = "ConvActivationFusionPass"
    summary = f"conv (+bias, +residual) → {'/'.join(g.ACTIVATIONS)}: activation epilogue"
    anchors = (g.ConvOp,)


class MatMulActivationFusion(ActivationEpilogue):
    name = "MatMulActivationFusionPass"
    summary = f"matmul (+bias) → {'/'.join(g.ACTIVATIONS)}: activation epilogue"
    anchors = (g.MatMulOp,)


class GemmActivationFusion(ActivationEpilogue):
    name = "GemmActivationFusionPass"
    summary = f"gemm → {'/'.join(g.ACTIVATIONS)}: activation epilogue"
    anchors = (g.GemmOp,)


def _add_user(op: Operation) -> tuple[Operation, object] | None:
    """The first add/sum(2) using `op`'s result with another value."""
    out = op.results[0]
    for user in users(out):
        if is_add(user) and (other := other_operand(user, out)) is not None:
            return user, other
    return None


class ConvAddFusion(FusionRule):
    name = "ConvAddFusionPass"
    summary = "add(conv(x), r) (or sum of two) → conv with a residual epilogue"
    anchors = (g.ConvOp,)
    phase = Phase.EPILOGUE

    def match(self, op: Operation) -> Match | Miss | None:
        assert isinstance(op, g.ConvOp)
        found = _add_user(op)
        if found is None:
            return None
        add, residual = found
        if op.activation is not None:
            return Miss(
                op, UNSUPPORTED_ATTRIBUTE,
                f"the conv already has a {op.activation.data} epilogue (the residual is added before it)",
            )
        if op.residual is not None:
            return Miss(op, UNSUPPORTED_ATTRIBUTE, "the conv already has a residual")
        miss = other_users_miss(op, op.output, [add])
        if miss:
            return miss
        r = g.shape_of(residual)  # type: ignore[arg-type]
        if _grows(r, g.shape_of(op.output)):
            return Miss(
                op, UNSUPPORTED_ATTRIBUTE,
                f"the residual {shapes.fmt(r)} does not broadcast to {shapes.fmt(g.shape_of(op.output))}",
            )
        return Match(op, [op, add], residual)

    def rewrite(self, match: Match) -> Rewrite:
        op = match.anchor
        assert isinstance(op, g.ConvOp)
        fused = rebuild(op, operands={"residual": match.data})
        return Rewrite([fused], fused)


class MatMulBiasAddFusion(FusionRule):
    name = "MatMulBiasAddFusionPass"
    summary = "add(matmul(a, b), c) → gemm(a, b, c) (2-d) or matmul with bias c"
    anchors = (g.MatMulOp, g.GemmOp)
    phase = Phase.EPILOGUE

    def match(self, op: Operation) -> Match | Miss | None:
        assert isinstance(op, g.MatMulOp | g.GemmOp)
        found = _add_user(op)
        if found is None:
            return None
        add, bias = found
        if op.activation is not None:
            return Miss(op, UNSUPPORTED_ATTRIBUTE, f"the {op.name} already has a {op.activation.data} epilogue")
        if op.bias is not None:
            return Miss(op, UNSUPPORTED_ATTRIBUTE, f"the {op.name} already has a bias")
        miss = other_users_miss(op, op.output, [add])
        if miss:
            return miss
        b, out = g.shape_of(bias), g.shape_of(op.output)  # type: ignore[arg-type]
        if _grows(b, out):
            return Miss(op, UNSUPPORTED_ATTRIBUTE, f"the bias {shapes.fmt(b)} does not broadcast to {shapes.fmt(out)}")
        return Match(op, [op, add], bias)

    def rewrite(self, match: Match) -> Rewrite:
        op = match.anchor
        assert isinstance(op, g.MatMulOp | g.GemmOp)
        bias = match.data
        if isinstance(op, g.GemmOp):
            # no C so far: beta scaled nothing, and the new C is added as is
            fused = rebuild(op, operands={"bias": bias}, properties={"beta": None})
        elif len(g.shape_of(op.lhs)) == 2 and len(g.shape_of(op.rhs)) == 2:
            fused = rebuild(op, cls=g.GemmOp, operands={"bias": bias})
        else:
            fused = rebuild(op, operands={"bias": bias})
        return Rewrite([fused], fused)
