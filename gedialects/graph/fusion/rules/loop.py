"""Loop fusion: chains and DAGs of elementwise ops → one `graph.fusion`.

`ElementwiseLoopFusionPass` (category UBFusion, last phase) groups connected
elementwise/broadcast ops (unary, binary, sum; not identity or cast) of one
block into a `graph.fusion` whose body holds clones of them: one kernel that
reads the group's operands once and writes only the values used outside.

- Operands: the values the group reads from outside; splat fills and small
  inline constants are cloned into the body instead.
- Results: every value of the group used outside it. An intermediate with
  users outside the group is *also* yielded, never dropped or recomputed.
  They all have one shape (one iteration space): a group whose escaping
  values differ in shape (a [1, 1, 1, S] padding mask every layer reads,
  fused with one layer's [1, H, S, S] scores) is cut after the longest
  prefix, in block order, where they agree; the rest forms its own fusion.
- The fusion op takes the place of the group's last op, so every outside
  user of a member must come after that op: growing the group (in block
  order) stops at the first op for which this fails (an outside user runs in
  between); if not even two ops remain, the candidate is missed with
  "intermediate has other users".
- One candidate per connected group, anchored at its first op.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import DenseIntOrFPElementsAttr
from xdsl.ir import Block, Operation, Region, SSAValue

from gedialects.graph import ops as g
from gedialects.location import describe_op

from ..registry import OTHER_USERS, UB_FUSION, FusionRule, Match, Miss, Phase, Rewrite

FUSABLE = (g.ElementwiseUnaryOp, g.ElementwiseBinaryOp, g.SumOp)
NOT_FUSED = (g.IdentityOp, g.CastOp, g.CompareOp, g.LogicOp, g.NotOp, g.IsNanOp)
"""Bool producers are fused only into the where that reads them (mask.py): a
bool tensor between kernels would be stored a byte per element."""


def fusable(op: Operation) -> bool:
    return (
        isinstance(op, FUSABLE)
        and not isinstance(op, NOT_FUSED)
        and not isinstance(op.parent_op(), g.FusionOp)
    )


def _neighbours(op: Operation) -> list[Operation]:
    out = [o.owner for o in op.operands if isinstance(o.owner, Operation)]
    out += [u.operation for r in op.results for u in r.uses]
    return [n for n in out if n.parent is op.parent and fusable(n)]


def _component(op: Operation) -> set[Operation]:
    seen = {op}
    todo = [op]
    while todo:
        for n in _neighbours(todo.pop()):
            if n not in seen:
                seen.add(n)
                todo.append(n)
    return seen


def _positions(members: set[Operation], start: Operation) -> dict[Operation, int]:
    """Relative block positions of everything between the first and the last
    member (found by walking outwards from `start`)."""
    left, right = start.prev_op, start.next_op
    found = 1
    before: list[Operation] = []
    after: list[Operation] = []
    while found < len(members) and (left is not None or right is not None):
        if left is not None:
            before.append(left)
            found += left in members
            left = left.prev_op
        if right is not None and found < len(members):
            after.append(right)
            found += right in members
            right = right.next_op
    span = [*reversed(before), start, *after]
    return {op: i for i, op in enumerate(span)}


def _in_block(op: Operation, block: Block | None) -> Operation | None:
    while op is not None and op.parent is not block:
        op = op.parent_op()  # type: ignore[assignment]
    return op


def cloneable_constant(value: SSAValue) -> bool:
    """Constants copied into a fusion body rather than passed in."""
    op = value.owner
    return isinstance(op, g.FillOp) or (
        isinstance(op, g.ConstantOp) and isinstance(op.value, DenseIntOrFPElementsAttr)
    )


def build_fusion(members: list[Operation], recompute: Sequence[Operation] = ()) -> Rewrite:
    """A `graph.fusion` computing `members` (in block order, all in one
    block); its results replace every member value used outside the group.
    `recompute`: ops of the same block the members read that stay for their
    other users; the body computes them again. Usable by plugin rules that
    form their own groups."""
    inside = set(members) | set(recompute)
    if recompute:
        block_ops = members[0].parent.ops if members[0].parent is not None else ()
        order = {o: i for i, o in enumerate(block_ops)}
        computed = sorted(inside, key=order.__getitem__)
    else:
        computed = members
    inputs: list[SSAValue] = []
    for m in computed:
        for v in m.operands:
            if v.owner not in inside and not cloneable_constant(v) and v not in inputs:
                inputs.append(v)
    block = Block(arg_types=[v.type for v in inputs])
    mapping: dict[SSAValue, SSAValue] = dict(zip(inputs, block.args))
    for m in computed:
        for v in m.operands:
            if v not in mapping and cloneable_constant(v):
                const = v.owner.clone()  # type: ignore[union-attr]
                block.add_op(const)
                mapping[v] = const.results[0]
        block.add_op(m.clone(value_mapper=mapping))
    outputs = [
        r for m in members for r in m.results if any(u.operation not in inside for u in r.uses)
    ]
    block.add_op(g.YieldOp(*(mapping[r] for r in outputs)))
    fusion = g.FusionOp(inputs, [r.type for r in outputs], Region(block))
    fusion.location = members[0].location
    return Rewrite([fusion], fusion, dict(zip(outputs, fusion.results)))


def _outputs(group: list[Operation]) -> list[SSAValue]:
    inside = set(group)
    return [r for m in group for r in m.results if any(u.operation not in inside for u in r.uses)]


def _one_shape_prefix(group: list[Operation]) -> list[Operation]:
    """The longest prefix (block order) of `group` whose results used outside
    it all have one shape: a fusion runs one iteration space. A smaller
    value other ops still need -- a [1, 1, 1, S] padding mask every layer
    adds to its [1, H, S, S] scores -- ends its fusion there, and the rest
    forms its own."""
    for end in range(len(group), 1, -1):
        if len({tuple(g.shape_of(r)) for r in _outputs(group[:end])}) <= 1:
            return group[:end]
    return group[:1]


class ElementwiseLoopFusion(FusionRule):
    name = "ElementwiseLoopFusionPass"
    summary = "connected elementwise/broadcast ops → one graph.fusion (loop fusion)"
    anchors = FUSABLE
    phase = Phase.LOOP
    category = UB_FUSION

    def match(self, op: Operation) -> Match | Miss | None:
        if not fusable(op):
            return None
        comp = _component(op)
        if len(comp) < 2:
            return None
        pos = _positions(comp, op)
        order = sorted(comp, key=pos.__getitem__)
        if order[0] is not op:
            return None  # one candidate per group: its first op
        block = op.parent
        group: list[Operation] = []
        blocked: tuple[Operation, Operation, Operation] | None = None
        for m in order:
            members = {*group, m}
            for member in group:
                for r in member.results:
                    for use in r.uses:
                        u = _in_block(use.operation, block)
                        if u is not None and u not in members and pos.get(u, len(pos)) < pos[m]:
                            blocked = (member, u, m)
                            break
                    if blocked:
                        break
                if blocked:
                    break
            if blocked:
                break
            group.append(m)
        # keep the part connected to the first op
        connected = {op}
        todo = [op]
        chosen = set(group)
        while todo:
            for n in _neighbours(todo.pop()):
                if n in chosen and n not in connected:
                    connected.add(n)
                    todo.append(n)
        group = _one_shape_prefix([m for m in group if m in connected])
        if len(group) < 2:
            if blocked is None:
                return None
            member, user, nxt = blocked
            return Miss(
                op, OTHER_USERS,
                f"{describe_op(member)} is also used by {describe_op(user)}, which runs before {describe_op(nxt)}",
            )
        return Match(op, group)

    def rewrite(self, match: Match) -> Rewrite:
        return build_fusion(match.ops)
