"""Attention masks: the bool ops that build a where's condition, fused with it.

Transformer exports build the additive attention mask from the int64
`attention_mask` input with bool ops: `cast(mask -> bool)`, an unsqueeze,
`and` with a causal (or all-true) constant, then `where(cond, 0, -big)`.
Each bool op alone would store a bool tensor (one byte per element) between
kernels; fused with the where they are one map from the int64 input (and
the constants) to the float mask, which the vector unit computes on 0/1
values.

- `MaskWhereFusionPass`: where ← its condition's producers, as far back as
  they are casts to bool, comparisons, and/or/xor/not (the group's inputs
  are the values they read from outside: integer or float tensors,
  constants). A producer other ops read too (a padding mask every layer's
  where reads: DeBERTa, BART's encoder and decoder) is recomputed inside
  the fusion -- a bool tensor between kernels has no AI-core kernel, and
  the recomputation is a few vector ops on a mask -- and the where that
  reads it last absorbs it. The where's result is the fusion's only result.
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


def _condition_ops(cond: SSAValue, where: g.WhereOp) -> tuple[list[Operation], list[Operation]]:
    """The bool producers of `cond` (transitively): (those used only inside
    the group, those other ops read too, recomputed in the group)."""
    candidates: list[Operation] = []
    todo = [cond]
    while todo:
        op = todo.pop().owner
        if isinstance(op, BOOL_PRODUCERS) and _bool_result(op) and op not in candidates:
            candidates.append(op)
            todo.extend(op.operands)
    # consumers before producers: an op is the group's own when every user
    # is (a shared op makes its producers shared too)
    own: set[Operation] = {where}
    shared: list[Operation] = []
    for op in _consumers_first(candidates):
        (own.add if all(u in own for u in users(op.results[0])) else shared.append)(op)
    return [op for op in candidates if op in own], shared


def _consumers_first(ops: list[Operation]) -> list[Operation]:
    """ops (one block) from the last in block order to the first."""
    block = ops[0].parent if ops else None
    order = {o: i for i, o in enumerate(block.ops)} if block is not None else {}
    return sorted(ops, key=order.__getitem__, reverse=True)


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
        own, shared = _condition_ops(op.condition, op)
        if not own and not shared:
            return None
        return Match(op, _consumers_first(own)[::-1] + [op])

    def rewrite(self, match: Match) -> Rewrite:
        where = match.ops[-1]
        assert isinstance(where, g.WhereOp)
        _, shared = _condition_ops(where.condition, where)
        return build_fusion(list(match.ops), recompute=shared)
