"""LayerNorm: rebuild it from its decomposition, and fuse the residual add.

- `LayerNormFusionPass`: the decomposition exporters emit for LayerNorm,

      m = reduce_mean(x, axes)           axes = trailing dims [a, rank)
      d = x - m
      v = reduce_mean(d ^ 2, axes)       (pow(d, 2) or d * d)
      n = d / sqrt(v + eps)
      y = n * gamma + beta               (each optional, either operand order)

  → `graph.layer_norm(x, gamma, beta) {axis = a, epsilon = eps}`;
- `AddLayerNormFusionPass`: layer_norm(a + b) → layer_norm(a, residual b),
  when the sum is used by the layer_norm only.
"""

from __future__ import annotations

from xdsl.dialects.builtin import FloatAttr, IntegerAttr, TensorType, f32
from xdsl.ir import Operation, SSAValue

from gedialects.graph import ops as g
from gedialects.graph import shapes
from gedialects.graph.constants import constant_value, materialize
from gedialects.graph.tensors import numpy_dtype
from gedialects.location import node_name

from ..helpers import (
    close,
    is_add,
    is_constant,
    only_user,
    other_operand,
    other_users_miss,
    rebuild,
    scalar_constant,
    users,
)
from ..registry import (
    NOT_CONSTANT,
    UNSUPPORTED_ATTRIBUTE,
    FusionRule,
    Match,
    Miss,
    Phase,
    Rewrite,
)


def _axes(op: g.ReduceMeanOp, rank: int) -> list[int]:
    axes = op.ints("axes") or tuple(range(rank))
    return sorted(a % rank for a in axes)


def _square_of(d: SSAValue, op: Operation) -> bool:
    if isinstance(op, g.PowOp):
        return op.lhs is d and close(scalar_constant(op.rhs), 2.0, 0)
    return isinstance(op, g.MulOp) and op.lhs is d and op.rhs is d


class LayerNormFusion(FusionRule):
    name = "LayerNormFusionPass"
    summary = "reduce_mean, sub, pow, reduce_mean, add eps, sqrt, div [, mul gamma, add beta] → layer_norm"
    anchors = (g.ReduceMeanOp,)
    phase = Phase.RECOGNIZE

    def match(self, op: Operation) -> Match | Miss | None:
        assert isinstance(op, g.ReduceMeanOp)
        x = op.input
        sub = next(
            (u for u in users(op.output) if isinstance(u, g.SubOp) and u.lhs is x and u.rhs is op.output),
            None,
        )
        if sub is None or op.int_("keepdims", 1) != 1:
            return None
        d = sub.output
        square = next((u for u in users(d) if _square_of(d, u)), None)
        div = next((u for u in users(d) if isinstance(u, g.DivOp) and u.lhs is d), None)
        if square is None or div is None:
            return None
        mean2 = only_user(square.results[0])
        if not isinstance(mean2, g.ReduceMeanOp) or mean2.int_("keepdims", 1) != 1:
            return None
        add = only_user(mean2.output)
        eps = other_operand(add, mean2.output) if add is not None and is_add(add) else None
        sqrt = only_user(add.results[0]) if eps is not None and add is not None else None
        if not isinstance(sqrt, g.SqrtOp) or div.rhs is not sqrt.output:
            return None
        assert add is not None and eps is not None
        core = [op, sub, square, mean2, add, sqrt, div]
        for value in (op.output, d, square.results[0], mean2.output, add.results[0], sqrt.output):
            miss = other_users_miss(op, value, core)
            if miss:
                return miss
        rank = len(g.shape_of(x))
        axes = _axes(op, rank)
        if _axes(mean2, rank) != axes or axes != list(range(axes[0], rank)):
            return Miss(op, UNSUPPORTED_ATTRIBUTE, f"the mean is taken over axes {axes}, not the trailing dims")
        epsilon = scalar_constant(eps)
        if epsilon is None:
            return Miss(op, NOT_CONSTANT, "epsilon is not a scalar constant")
        # optional affine tail: * gamma, then + beta
        tail: list[Operation] = []
        gamma = beta = None
        last = div.output
        norm_shape = g.shape_of(x)[axes[0] :]
        for _ in range(2):
            user = only_user(last)
            other = other_operand(user, last) if user is not None else None
            if other is None or _param(other, norm_shape) is None:
                break
            assert user is not None
            if isinstance(user, g.MulOp) and gamma is None and beta is None:
                gamma = other
            elif isinstance(user, g.AddOp) and beta is None:
                beta = other
            else:
                break
            tail.append(user)
            last = user.results[0]
        return Match(op, core + tail, (axes[0], epsilon, gamma, beta))

    def rewrite(self, match: Match) -> Rewrite:
        mean = match.anchor
        assert isinstance(mean, g.ReduceMeanOp)
        axis, epsilon, gamma, beta = match.data
        x = mean.input
        norm_shape = g.shape_of(x)[axis:]
        dtype = numpy_dtype(g.element_type_of(x))
        new: list[Operation] = []
        params: list[SSAValue] = []
        for what, value in (("scale", gamma), ("bias", beta)):
            if value is None:
                if what == "bias":
                    continue
                one = g.FillOp(1.0, TensorType(g.element_type_of(x), norm_shape))
                one.location = mean.location
                new.append(one)
                params.append(one.output)
                continue
            p = _param(value, norm_shape)
            if p is value:
                params.append(value)
            else:  # a constant with leading unit dims: drop them
                const = constant_value(value)
                assert const is not None and isinstance(p, tuple)
                c = materialize(const.reshape(p).astype(dtype), f"{node_name(mean)}_{what}", mean.location)
                new.append(c)
                params.append(c.results[0])
        fused = g.LayerNormOp.build_inferred(
            [x, params[0], params[1:], []],
            {"axis": IntegerAttr(axis, 64), "epsilon": FloatAttr(epsilon, f32)},
            location=mean.location,
        )
        return Rewrite([*new, fused], fused)


def _param(value: SSAValue, norm_shape: shapes.Shape) -> SSAValue | tuple[int, ...] | None:
    """`value` if it is a valid layer_norm scale/bias over `norm_shape`; the
    shape to reshape a constant with extra leading unit dims to; else None."""
    s = tuple(g.shape_of(value))
    if len(s) > len(norm_shape):
        extra = len(s) - len(norm_shape)
        if not is_constant(value) or any(d != 1 for d in s[:extra]):
            return None
        s = s[extra:]
        trimmed = True
    else:
        trimmed = False
    try:
        if shapes.broadcast(norm_shape, s) != tuple(norm_shape):
            return None
    except shapes.ShapeError:
        return None
    return s if trimmed else value


class AddLayerNormFusion(FusionRule):
    name = "AddLayerNormFusionPass"
    summary = "layer_norm(a + b) → layer_norm(a, residual b)"
    anchors = (g.LayerNormOp,)
    phase = Phase.EPILOGUE

    def match(self, op: Operation) -> Match | Miss | None:
        assert isinstance(op, g.LayerNormOp)
        add = op.input.owner
        if not isinstance(add, Operation) or not is_add(add):
            return None
        if op.residual is not None:
            return Miss(op, UNSUPPORTED_ATTRIBUTE, "the layer_norm already has a residual")
        miss = other_users_miss(op, op.input, [op])
        if miss:
            return miss
        a, b = add.operands
        out = g.shape_of(op.input)
        if g.shape_of(a) != out:
            a, b = b, a
        if g.shape_of(a) != out:
            return Miss(op, UNSUPPORTED_ATTRIBUTE, "neither addend has the full shape")
        return Match(op, [add, op], (a, b))

    def rewrite(self, match: Match) -> Rewrite:
        op = match.anchor
        assert isinstance(op, g.LayerNormOp)
        a, b = match.data
        fused = rebuild(op, operands={"input": a, "residual": b})
        return Rewrite([fused], fused)

