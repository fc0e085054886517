"""Attention masks: the bool ops that build a where's condition, fused with it.

Transformer exports build the additive attention mask from the int64
`attention_mask` input with bool ops: `cast(mask -> bool)`, an unsqueeze,
`and` with a causal (or all-true) constant, then `where(cond, 0, -big)`.
Each bool op alone would store a bool tensor (one byte per element) between
kernels; fused with the where they are one map from the int64 input (and
the constants) to the float mask, which the vector unit computes on 0/1
values.

- `MaskWhereFusionPass`: where ← its condition's producers, as far back as
  they are casts to bool, comparisons, and/or/xor/not whose only user is
  inside the group (the group's inputs are the values they read from
  outside: integer or float tensors, constants). The where's result is the
  fusion's only result.
"""

from __future__ import annotations

from xdsl.ir import Operation, SSAValue

from gedialects.graph import ops as g

from ..helpers import users
from ..registry import UB_FUSION, FusionRule, Match, Miss, Phase, Rewrite
from .loop import build_fusion

BOOL_PRODUCERS = (g.CastOp, g.CompareOp, g.LogicOp, g.NotOp, g.IsNanOp)
"""Ops that may compute a where's condition inside the fusion."""


def _bool_result(op: Operation) -> bool:
    element = getattr(op.results[0].type, "element_type", None)
    return getattr(getattr(element, "width", None), "data", None) == 1


def _condition_ops(cond: SSAValue, where: g.WhereOp) -> list[Operation]:
    """The bool producers of `cond` (transitively) used only inside the group."""
    group: list[Operation] = []
    inside: set[Operation] = {where}
    todo = [cond]
    while todo:
        v = todo.pop()
        op = v.owner
        if not isinstance(op, BOOL_PRODUCERS) or not _bool_result(op) or op in inside:
            continue
        if any(u not in inside for u in users(op.results[0])):
            continue  # used elsewhere too: stays a tensor of its own
        inside.add(op)
        group.append(op)
        todo.extend(op.operands)
    return group


class MaskWhereFusion(FusionRule):
    name = "MaskWhereFusionPass"
    summary = "where ← the casts/comparisons/logic building its condition: one map to the float mask"
    anchors = (g.WhereOp,)
    phase = Phase.LOOP
    category = UB_FUSION
    float_only = False  # its members are bool by definition; the result is the where's

    def match(self, op: Operation) -> Match | Miss | None:
        assert isinstance(op, g.WhereOp)
        if isinstance(op.parent_op(), g.FusionOp):
            return None
        members = _condition_ops(op.condition, op)
        if not members:
            return None
        block = op.parent
        order = {o: i for i, o in enumerate(block.ops)} if block is not None else {}
        return Match(op, sorted(members, key=order.__getitem__) + [op])

    def rewrite(self, match: Match) -> Rewrite:
        return build_fusion(match.ops)
