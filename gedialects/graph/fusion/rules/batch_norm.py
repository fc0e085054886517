"""A batch_norm that no conv takes in: fold what follows it, then let loop
fusion take it.

A conv's batch_norm folds into the conv (`ConvBatchnormFusionPass`). One that
reads something else -- DenseNet's pre-activation on the concatenation of
the earlier layers, exported as BatchNormalization, then Mul and Add by
per-channel constants, then Relu -- was its own kernel, and the Mul/Add/Relu
another: two GM round trips of the same map.

- `BatchnormScaleFusionPass` (fold): batch_norm -> mul/add/sub by a
  per-channel constant: the constant goes into the normalisation's scale and
  bias (mul c: scale * c, bias * c; add c: bias + c; sub c: bias - c).
- `BatchnormLoopFusionPass` (epilogue phase, before loop fusion): a batch_norm
  with constant statistics whose result an elementwise op reads becomes the
  per-channel scale and shift it computes (gedialects/graph/batch_norm.py),
  which `ElementwiseLoopFusionPass` then fuses with that op: one kernel.
"""

from __future__ import annotations

import numpy as np
from xdsl.ir import Operation

from gedialects.graph import batch_norm
from gedialects.graph import ops as g
from gedialects.graph import shapes
from gedialects.graph.constants import constant_value
from gedialects.graph.tensors import numpy_dtype

from ..helpers import channel_vector, not_constant_miss, other_users_miss, scaling_users, users, with_folded_constants
from ..registry import UB_FUSION, FusionRule, Match, Miss, Phase, Rewrite
from .loop import ElementwiseLoopFusion, fusable


def _statistics(bn: g.BatchNormOp) -> list[tuple[str, object]]:
    return [("batch_norm scale", bn.scale), ("batch_norm bias", bn.bias), ("batch_norm mean", bn.mean),
            ("batch_norm variance", bn.var)]


def _conv_takes_it(bn: g.BatchNormOp) -> bool:
    """The batch_norm is a conv's, whose only reader it is: ConvBatchnormFusionPass's."""
    conv = bn.input.owner
    return isinstance(conv, g.ConvOp) and users(conv.output) == [bn]


class BatchnormScaleFusion(FusionRule):
    name = "BatchnormScaleFusionPass"
    summary = "batch_norm → mul/add/sub by a per-channel constant: fold it into the normalisation's scale and bias"
    anchors = (g.BatchNormOp,)
    phase = Phase.FOLD

    def match(self, op: Operation) -> Match | Miss | None:
        assert isinstance(op, g.BatchNormOp)
        out = g.shape_of(op.output)
        if not shapes.is_static(out) or _conv_takes_it(op):
            return None
        for user, const in scaling_users(op.output):
            if channel_vector(const, out) is None:
                continue  # the constant varies along other dims than the channel
            miss = other_users_miss(op, op.output, [user]) or not_constant_miss(
                op, [("batch_norm scale", op.scale), ("batch_norm bias", op.bias)])
            return miss or Match(op, [op, user], (user, const))
        return None

    def rewrite(self, match: Match) -> Rewrite:
        bn = match.anchor
        assert isinstance(bn, g.BatchNormOp)
        user, const = match.data
        channels = g.shape_of(bn.output)[1]
        v = channel_vector(const, g.shape_of(bn.output))
        gamma, beta = (np.broadcast_to(np.asarray(constant_value(p), np.float64), (channels,))
                       for p in (bn.scale, bn.bias))
        if isinstance(user, g.MulOp):
            gamma, beta = gamma * v, beta * v
        else:
            beta = beta - v if isinstance(user, g.SubOp) else beta + v
        return with_folded_constants(bn, numpy_dtype(g.element_type_of(bn.scale)),
                                     {"scale": ("scale", gamma), "bias": ("bias", beta)})


class BatchnormLoopFusion(FusionRule):
    name = "BatchnormLoopFusionPass"
    summary = "batch_norm → elementwise op: the normalisation as a per-channel scale and shift, for loop fusion"
    anchors = (g.BatchNormOp,)
    phase = Phase.EPILOGUE
    category = UB_FUSION
    requires = (ElementwiseLoopFusion.name,)  # alone it would make one kernel two

    def match(self, op: Operation) -> Match | Miss | None:
        assert isinstance(op, g.BatchNormOp)
        x = g.shape_of(op.input)
        if len(x) < 2 or not shapes.is_static(x) or not any(fusable(u) for u in users(op.output)):
            return None
        return not_constant_miss(op, _statistics(op)) or Match(op, [op])

    def rewrite(self, match: Match) -> Rewrite:
        bn = match.anchor
        assert isinstance(bn, g.BatchNormOp)
        params = batch_norm.affine(bn)
        assert params is not None  # match checked every statistic is a constant
        ops = batch_norm.affine_ops(bn, *params)
        return Rewrite(ops, ops[-1])
