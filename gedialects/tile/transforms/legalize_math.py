"""tile-legalize-math: rewrite map-body math the vector unit has no
instruction for into ops it has (tile-expand-structured's table).

* tanh(x) = 1 - 2 / (exp(2x) + 1)        (saturates to +-1 when exp overflows);
  for |x| < 0.25 its Taylor series to x^9 (the difference would cancel)
* erf(x): Abramowitz & Stegun 7.1.26, |error| <= 1.5e-7:
  y = 1 - erfc(|x|), erf(x) = x < 0 ? -y : y, where for z >= 0
  erfc(z) = t (a1 + t (a2 + t (a3 + t (a4 + t a5)))) exp(-z^2), t = 1 / (1 + p z)
  (`erfc_of_nonnegative`, which graph-to-tile's exact GELU uses as well)
* powf(x, c) for a constant c: x*x (2), x*x*x (3), sqrt (0.5), rsqrt (-0.5),
  1/x (-1), x (1), else exp(c ln x) (defined for x > 0, as the vector unit's ln).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.builder import InsertPoint
from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import FloatAttr, ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from gedialects.tile import structured as st
from gedialects.tile.conv import ConvOp
from gedialects.tile.elementwise import ElementwiseOp
from gedialects.tile.gemm import GemmOp

ERF_P = 0.3275911
ERF_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


class _Emitter:
    """Inserts scalar ops before `anchor`."""

    def __init__(self, rewriter: PatternRewriter, anchor: Operation):
        self.rewriter, self.anchor = rewriter, anchor
        self.type = anchor.results[0].type

    def emit(self, op: Operation) -> SSAValue:
        self.rewriter.insert(op, InsertPoint.before(self.anchor))
        return op.results[0]

    def const(self, value: float) -> SSAValue:
        return self.emit(arith.ConstantOp(FloatAttr(value, self.type)))

    def add(self, a, b):
        return self.emit(arith.AddfOp(a, b))

    def mul(self, a, b):
        return self.emit(arith.MulfOp(a, b))

    def div(self, a, b):
        return self.emit(arith.DivfOp(a, b))

    def exp(self, a):
        return self.emit(mathd.ExpOp(a))

    def neg(self, a):
        return self.emit(arith.NegfOp(a))


def erfc_of_nonnegative(b, z: SSAValue) -> SSAValue:
    """erfc(z) = 1 - erf(z) for z >= 0 by A&S 7.1.26 (ERF_P, ERF_A), in ops
    the vector unit has, emitted by `b` (a builder with const, add, mul,
    div, neg and exp: this pass's, or a map body's while graph-to-tile
    builds it). Both erf and the exact GELU need it for a non-negative
    argument only."""
    t = b.div(b.const(1.0), b.add(b.mul(z, b.const(ERF_P)), b.const(1.0)))
    poly = b.const(ERF_A[4])
    for a in reversed(ERF_A[:4]):
        poly = b.add(b.mul(poly, t), b.const(a))
    return b.mul(b.mul(poly, t), b.exp(b.neg(b.mul(z, z))))


def _in_map_body(op: Operation) -> bool:
    """In a tile.map or tile.elementwise body, a tile.conv's epilogue or
    stage or a tile.gemm's epilogue, or in a body being built that has no
    parent yet (a fused epilogue of a loop-level kernel, `legalize_body`)."""
    block = op.parent_block()
    return block is not None and (block.parent is None
                                  or isinstance(op.parent_op(), st.MapOp | ConvOp | GemmOp | ElementwiseOp))


TANH_SERIES = (1.0, -1.0 / 3, 2.0 / 15, -17.0 / 315, 62.0 / 2835)
"""tanh's Taylor coefficients (x, x^3, ..., x^9): below TANH_SERIES_LIMIT the
next term is under 1e-8 relative, where 1 - 2 / (e^2x + 1) cancels."""
TANH_SERIES_LIMIT = 0.25


class LegalizeTanh(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: mathd.TanhOp, rewriter: PatternRewriter) -> None:
        if not _in_map_body(op):
            return
        e = _Emitter(rewriter, op)
        x = op.operand
        ex = e.exp(e.mul(x, e.const(2.0)))
        frac = e.div(e.const(2.0), e.add(ex, e.const(1.0)))
        wide = e.emit(arith.SubfOp(e.const(1.0), frac))
        x2 = e.mul(x, x)
        series = e.const(TANH_SERIES[-1])
        for c in reversed(TANH_SERIES[:-1]):
            series = e.add(e.mul(series, x2), e.const(c))
        small = e.emit(arith.CmpfOp(e.emit(mathd.AbsFOp(x)), e.const(TANH_SERIES_LIMIT), "olt"))
        rewriter.replace(op, arith.SelectOp(small, e.mul(series, x), wide))


class LegalizeErf(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: mathd.ErfOp, rewriter: PatternRewriter) -> None:
        if not _in_map_body(op):
            return
        e = _Emitter(rewriter, op)
        x = op.operand
        y = e.emit(arith.SubfOp(e.const(1.0), erfc_of_nonnegative(e, e.emit(mathd.AbsFOp(x)))))
        negative = e.emit(arith.CmpfOp(x, e.const(0.0), "olt"))
        rewriter.replace(op, arith.SelectOp(negative, e.neg(y), y))


class LegalizePowf(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: mathd.PowFOp, rewriter: PatternRewriter) -> None:
        if not _in_map_body(op):
            return
        c_op = op.rhs.owner
        if not isinstance(c_op, arith.ConstantOp):
            e = _Emitter(rewriter, op)
            rewriter.replace(op, mathd.ExpOp(e.mul(op.rhs, e.emit(mathd.LogOp(op.lhs)))))
            return
        c = float(c_op.value.value.data)  # type: ignore[union-attr]
        x = op.lhs
        e = _Emitter(rewriter, op)
        if c == 1.0:
            rewriter.replace(op, [], [x])
        elif c == 2.0:
            rewriter.replace(op, arith.MulfOp(x, x))
        elif c == 3.0:
            rewriter.replace(op, arith.MulfOp(e.mul(x, x), x))
        elif c == 0.5:
            rewriter.replace(op, mathd.SqrtOp(x))
        elif c == -0.5:
            rewriter.replace(op, mathd.RsqrtOp(x))
        elif c == -1.0:
            rewriter.replace(op, arith.DivfOp(e.const(1.0), x))
        else:
            rewriter.replace(op, mathd.ExpOp(e.mul(e.emit(mathd.LogOp(x)), op.rhs)))


PATTERNS = (LegalizeTanh(), LegalizeErf(), LegalizePowf())


def legalize_body(block: Block) -> None:
    """Legalize a detached map body in place (what the pass does to tile.map
    bodies); the ops the patterns emit are all legal, so one sweep is enough."""
    for op in list(block.ops):
        for pattern in PATTERNS:
            if op.parent_block() is block:
                pattern.match_and_rewrite(op, PatternRewriter(op))


@dataclass(frozen=True)
class TileLegalizeMathPass(ModulePass):
    """Rewrite tanh, erf and powf in map bodies (tile.map, tile.conv, tile.gemm) into vector-unit ops."""

    name = "tile-legalize-math"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier(list(PATTERNS), dce_enabled=True),
            apply_recursively=False,
        ).rewrite_module(op)
