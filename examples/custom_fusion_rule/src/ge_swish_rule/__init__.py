"""An example fusion rule from outside gedialects: Swish (SiLU).

    y = x * sigmoid(x)        (either operand order)

becomes one `graph.fusion` holding the sigmoid and the mul, so the sigmoid
result never goes to memory. The rule runs in the epilogue phase, i.e. before
the built-in loop fusion would group the two ops anonymously, and its name
shows in remarks, the fusion report and the switch file
(`SwishFusionPass:off`).
"""

from __future__ import annotations

from xdsl.ir import Operation

from gedialects.graph import ops as g
from gedialects.graph.fusion import FusionRule, Match, Miss, Phase, Rewrite
from gedialects.graph.fusion.helpers import other_operand, other_users_miss, users
from gedialects.graph.fusion.rules.loop import build_fusion

__all__ = ["SwishFusionRule"]


class SwishFusionRule(FusionRule):
    name = "SwishFusionPass"
    summary = "x * sigmoid(x) → one graph.fusion (Swish / SiLU)"
    anchors = (g.SigmoidOp,)  # match() is called on every graph.sigmoid
    phase = Phase.EPILOGUE

    def match(self, op: Operation) -> Match | Miss | None:
        assert isinstance(op, g.SigmoidOp)
        x = op.input
        mul = next(
            (u for u in users(op.output) if isinstance(u, g.MulOp) and other_operand(u, op.output) is x),
            None,
        )
        if mul is None:
            return None  # no candidate here: no remark
        # the sigmoid result must not be needed by anyone else
        miss = other_users_miss(op, op.output, [mul])
        if miss:
            return miss
        # dtype and static-shape checks are done by the driver (float_only)
        return Match(op, [op, mul])

    def rewrite(self, match: Match) -> Rewrite:
        # build_fusion clones the ops into a graph.fusion body; the driver
        # inserts it, redirects uses, erases the originals, records `absorbed`
        # and emits the "applied SwishFusionPass ..." remark.
        return build_fusion(match.ops)
