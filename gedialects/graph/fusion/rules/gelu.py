"""GELU from its decompositions.

- `GeluErfFusionPass`: 0.5 * x * (1 + erf(x / sqrt(2))), with x / sqrt(2) or
  x * (1 / sqrt(2)), and the three factors multiplied in any order and
  association (0.5 may also be a division by 2);
- `GeluTanhFusionPass`: 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))),
  with x^3 as pow(x, 3), x * x * x or x * (x * x).

Both give `graph.gelu` (approximate = "none" / "tanh").
"""

from __future__ import annotations

import math

from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Operation, SSAValue

from gedialects.graph import ops as g
from gedialects.location import describe_op

from ..helpers import (
    close,
    is_add,
    other_operand,
    other_users_miss,
    scalar_constant,
    users,
)
from ..registry import OTHER_USERS, FusionRule, Match, Miss, Phase, Rewrite

SQRT2 = math.sqrt(2.0)
SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def _scaled_by(value: SSAValue, factor: float) -> SSAValue | None:
    """x if `value` is x * factor (either order) or x / (1 / factor)."""
    op = value.owner
    if isinstance(op, g.MulOp):
        if close(scalar_constant(op.rhs), factor):
            return op.lhs
        if close(scalar_constant(op.lhs), factor):
            return op.rhs
    if isinstance(op, g.DivOp) and close(scalar_constant(op.rhs), 1.0 / factor):
        return op.lhs
    return None


def _plus_one(value: SSAValue) -> Operation | None:
    """A user computing value + 1 (either order)."""
    for user in users(value):
        other = other_operand(user, value) if is_add(user) else None
        if other is not None and close(scalar_constant(other), 1.0):
            return user
    return None


def _half_x_product(anchor: Operation, start: SSAValue, x: SSAValue) -> list[Operation] | Miss | None:
    """The muls computing start * x * 0.5 in any order, the last one giving
    the result; None if they are not there."""
    need_x = need_half = True
    chain: list[Operation] = []
    cur = start
    while need_x or need_half:
        found = users(cur)
        step = None
        for u in found:
            step = _product_step(u, cur, x, need_x, need_half)
            if step is not None:
                break
        if step is None:
            return None
        u, took_x, took_half, extra = step
        if len(found) > 1:
            return Miss(anchor, OTHER_USERS, f"{describe_op(cur.owner)} is also used outside the GELU")  # type: ignore[arg-type]
        need_x = need_x and not took_x
        need_half = need_half and not took_half
        chain += [*extra, u]
        cur = u.results[0]
    return chain


def _product_step(
    u: Operation, cur: SSAValue, x: SSAValue, need_x: bool, need_half: bool
) -> tuple[Operation, bool, bool, list[Operation]] | None:
    """If `u` multiplies `cur` by x, by 0.5, by x * 0.5 (or divides it by 2):
    (u, took x, took 0.5, the x * 0.5 op if absorbed too)."""
    if isinstance(u, g.DivOp) and u.lhs is cur and need_half and close(scalar_constant(u.rhs), 2.0):
        return u, False, True, []
    if not isinstance(u, g.MulOp):
        return None
    o = other_operand(u, cur)
    if o is None:
        return None
    if o is x and need_x:
        return u, True, False, []
    if need_half and close(scalar_constant(o), 0.5):
        return u, False, True, []
    if need_x and need_half and _scaled_by(o, 0.5) is x and len(users(o)) == 1:
        return u, True, True, [o.owner]  # type: ignore[list-item]
    return None


def _tail(anchor: Operation, inner_ops: list[Operation], x: SSAValue) -> Match | Miss | None:
    """The common part: anchor (erf or tanh) + 1, times x, times 0.5."""
    plus = _plus_one(anchor.results[0])
    if plus is None:
        return None
    product = _half_x_product(anchor, plus.results[0], x)
    if product is None or isinstance(product, Miss):
        return product
    ops = [*inner_ops, anchor, plus, *product]
    for op in ops[:-1]:
        miss = other_users_miss(anchor, op.results[0], ops)
        if miss:
            return miss
    return Match(anchor, ops, x)


class GeluErfFusion(FusionRule):
    name = "GeluErfFusionPass"
    summary = "0.5 * x * (1 + erf(x / sqrt 2)) in any commutative order → gelu"
    anchors = (g.ErfOp,)
    phase = Phase.RECOGNIZE

    def match(self, op: Operation) -> Match | Miss | None:
        assert isinstance(op, g.ErfOp)
        x = _scaled_by(op.input, 1.0 / SQRT2)
        if x is None:
            return None
        return _tail(op, [op.input.owner], x)  # type: ignore[list-item]

    def rewrite(self, match: Match) -> Rewrite:
        fused = g.GeluOp.build_inferred([match.data], {}, location=match.anchor.location)
        return Rewrite([fused], fused)


def _cube_of(value: SSAValue) -> tuple[SSAValue, list[Operation]] | None:
    """(x, ops) if value is pow(x, 3), x * (x * x) or (x * x) * x."""
    op = value.owner
    if isinstance(op, g.PowOp) and close(scalar_constant(op.rhs), 3.0, 0):
        return op.lhs, [op]
    if isinstance(op, g.MulOp):
        for a, b in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            sq = b.owner
            if isinstance(sq, g.MulOp) and sq.lhs is a and sq.rhs is a:
                return a, [sq, op]
    return None


class GeluTanhFusion(FusionRule):
    name = "GeluTanhFusionPass"
    summary = "0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))) → gelu (tanh)"
    anchors = (g.TanhOp,)
    phase = Phase.RECOGNIZE

    def match(self, op: Operation) -> Match | Miss | None:
        assert isinstance(op, g.TanhOp)
        inner = _scaled_by(op.input, SQRT_2_OVER_PI)
        add = inner.owner if inner is not None else None
        if add is None or not is_add(add):
            return None
        for x, k in ((add.operands[0], add.operands[1]), (add.operands[1], add.operands[0])):
            cube = _scaled_by(k, 0.044715)
            found = _cube_of(cube) if cube is not None else None
            if found is not None and found[0] is x:
                inner_ops = [*found[1], k.owner, add, op.input.owner]
                return _tail(op, inner_ops, x)  # type: ignore[arg-type]
        return None

    def rewrite(self, match: Match) -> Rewrite:
        fused = g.GeluOp.build_inferred(
            [match.data], {"approximate": StringAttr("tanh")}, location=match.anchor.location
        )
        return Rewrite([fused], fused)
