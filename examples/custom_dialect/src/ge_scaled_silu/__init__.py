"""An example plugin: a dialect of its own, with one op that runs on the AI core.

    act.scaled_silu %x {beta = 1.702} : (tensor<...>) -> tensor<...>
        y = x * sigmoid(beta * x)      (beta = 1: SiLU / Swish; 1.702: the sigmoid GELU)

What a package needs to bring an op to the simulated AI core, and where each
piece goes (nothing in gedialects changes):

* the dialect (`ACT`, below), to ge-opt through xDSL's `xdsl.universe` entry point;
* a fusion rule (`ScaledSiluFusionRule`) that rewrites `x * sigmoid(beta * x)`
  into the op, through `gedialects.fusion_rules`;
* `register_kernels`, through `gedialects.kernels`, called once before the
  first partition: the op's reference kernel (the numerical oracle and its
  AI-CPU implementation), its scalar body (with it the vector family's
  legality rule accepts the op and tile-legalize-math / tile-expand-structured
  make it vector instructions), and the vector family's elementwise pattern
  as its convert-graph-to-tile pattern.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import FloatAttr, f32
from xdsl.ir import Dialect, Operation
from xdsl.irdl import irdl_op_definition, opt_prop_def
from xdsl.universe import Universe

from gedialects.graph import ops as g
from gedialects.graph.fusion import FusionRule, Match, Phase, Rewrite
from gedialects.graph.fusion.helpers import other_operand, other_users_miss, scalar_constant, users

__all__ = ["ACT", "ScaledSiluOp", "ScaledSiluFusionRule", "UNIVERSE", "register_kernels"]


@irdl_op_definition
class ScaledSiluOp(g.ElementwiseUnaryOp):
    """y = x * sigmoid(beta * x)."""

    name = "act.scaled_silu"
    beta = opt_prop_def(FloatAttr)


ACT = Dialect("act", [ScaledSiluOp], [])
UNIVERSE = Universe(all_dialects={"act": lambda: ACT})


class ScaledSiluFusionRule(FusionRule):
    """mul(x, sigmoid(x)) or mul(x, sigmoid(mul(x, beta))) -> act.scaled_silu."""

    name = "ScaledSiluFusionPass"
    summary = "x * sigmoid(beta * x) -> act.scaled_silu"
    anchors = (g.SigmoidOp,)
    phase = Phase.EPILOGUE

    def match(self, op: Operation) -> Match | None:
        assert isinstance(op, g.SigmoidOp)
        arg = op.input
        beta, x, scaling = 1.0, arg, None
        if isinstance(arg.owner, g.MulOp):  # sigmoid(beta * x)
            for a, b in ((arg.owner.lhs, arg.owner.rhs), (arg.owner.rhs, arg.owner.lhs)):
                c = scalar_constant(b)
                if c is not None:
                    beta, x, scaling = float(c), a, arg.owner
                    break
        mul = next((u for u in users(op.output) if isinstance(u, g.MulOp) and other_operand(u, op.output) is x), None)
        if mul is None:
            return None
        ops = [scaling, op, mul] if scaling is not None else [op, mul]
        miss = other_users_miss(op, op.output, [mul])
        if miss is None and scaling is not None:
            miss = other_users_miss(scaling, scaling.output, [op])
        if miss:
            return miss
        return Match(op, ops, data=(x, beta))

    def rewrite(self, match: Match) -> Rewrite:
        x, beta = match.data
        fused = ScaledSiluOp.build_inferred([x], {"beta": FloatAttr(beta, f32)})
        return Rewrite([fused], fused)


def _reference(op: ScaledSiluOp, args):
    x = args[0].astype(np.float64)
    beta = op.float_("beta", 1.0)
    return (x / (1 + np.exp(-beta * x))).astype(args[0].dtype)


def _body(sb, op: ScaledSiluOp, x):
    beta = op.float_("beta", 1.0)
    return sb.mul(x, sb.sigmoid(sb.mul(x, sb.const(beta))))


def register_kernels() -> None:
    from gedialects.graph.interpreter import KERNELS
    from lowering.graph_to_tile.registry import lowers
    from lowering.graph_to_tile.vector import elementwise
    from lowering.legality import VECTOR_KERNEL
    from lowering.map_bodies import ELEMENTWISE

    KERNELS[ScaledSiluOp] = _reference
    ELEMENTWISE[ScaledSiluOp] = _body
    lowers(ScaledSiluOp, family=VECTOR_KERNEL)(elementwise)
