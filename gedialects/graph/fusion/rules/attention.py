"""Scaled dot-product attention as one op.

Exported transformers spell attention as a chain: the scores q . k^T (a
matmul whose right operand is the keys transposed), a scale (mul or div by
a scalar constant), an additive mask or position bias, a softmax over the
keys and the product with the values. `AttentionFusionPass` anchors on the
softmax and replaces the chain by one `graph.attention` (the scores never
need to be stored: graph_to_tile/attention.py runs it as one flash-attention
kernel). It runs before the epilogue and loop fusions, which would
otherwise fold the scale and mask into a kernel of their own.

Recognised, from the softmax backwards: adds of masks or position biases
(one value per key, broadcast over the rest), then scalar muls/divs (the
scale) down to the product. BERT, DistilBERT, GPT-2, Llama, T5 and ViT
scale after the product; Swin and SegFormer scale q before it, and that
mul stays where it is. Missed, with the reason: a scale applied after a
mask, an added term that is not one value per key, a step that broadcasts
the scores to a larger shape, intermediates (or the probabilities) with
other users, a softmax over another axis, an epilogue on the product with v,
one key (MobileViT over a single patch).
Torch's sdpa exports (transformers' default attention: BERT, Llama, BART,
Mistral) guard the probabilities with `where(is_nan(p), 0, p)` so a row
whose every score is -inf gives 0: the guard is absorbed too, as the op's
`zero_empty_rows`.
"""

from __future__ import annotations

from xdsl.dialects.builtin import FloatAttr, UnitAttr, f32
from xdsl.ir import Operation, SSAValue

from gedialects.graph import ops as g
from gedialects.graph import shapes

from ..helpers import binary_operands, float_tensor, other_users_miss, scalar_constant, users
from ..registry import DYNAMIC_SHAPE, UNSUPPORTED_ATTRIBUTE, UNSUPPORTED_DTYPE, FusionRule, Match, Miss, Phase, Rewrite


def _scaled_input(op: Operation) -> tuple[SSAValue, float] | None:
    """(x, c) when op multiplies x by the scalar constant c (a mul by c, or
    a div by 1/c), else None."""
    pair = binary_operands(op)
    if pair is None or not isinstance(op, g.MulOp | g.DivOp):
        return None
    a, b = pair
    c = scalar_constant(b)
    if isinstance(op, g.DivOp):
        return (a, 1.0 / c) if c else None
    if c is not None:
        return a, c
    c = scalar_constant(a)
    return (b, c) if c is not None else None


def _keys_transpose(kt: SSAValue) -> g.TransposeOp | None:
    """The transpose that makes k^T, when the scores are its only use."""
    owner = kt.owner
    return owner if isinstance(owner, g.TransposeOp) and len(users(kt)) == 1 else None


def key_rows(kt: SSAValue, location) -> tuple[list[Operation], SSAValue]:
    """The keys as rows [.., Sk, d] from k^T [.., d, Sk]: when k^T is a
    transpose used only by the scores (absorbed by the match), one
    transpose of its source with the last two entries of its perm swapped;
    else a transpose of k^T. Returns (new ops, the keys)."""
    n = len(g.shape_of(kt))
    transpose = _keys_transpose(kt)
    if transpose is not None:
        perm = [p % n for p in transpose.ints("perm", ())] or list(range(n))[::-1]
        perm[-2], perm[-1] = perm[-1], perm[-2]
        source = transpose.input
    else:
        perm, source = [*range(n - 2), n - 1, n - 2], kt
    if perm == list(range(n)):
        return [], source
    rows = g.TransposeOp.build_inferred([source], {"perm": g.int_array(perm)}, location=location)
    return [rows], rows.results[0]


class AttentionFusion(FusionRule):
    name = "AttentionFusionPass"
    summary = "matmul(q, k^T) → scale → mask add → softmax → matmul(·, v): one graph.attention"
    anchors = (g.SoftmaxOp,)
    phase = Phase.ATTENTION
    float_only = False  # the NaN guard's is_nan is bool; every other member is checked in `match`

    def match(self, op: Operation) -> Match | Miss | None:
        assert isinstance(op, g.SoftmaxOp)
        guard: list[Operation] = []  # torch's where(is_nan(p), 0, p), absorbed: the kernel zeroes empty rows
        probs = op.output
        where = next((u for u in users(op.output) if _zeroes_nan(u, op.output)), None)
        if where is not None:
            guard = [where.operands[0].owner, where]
            if (miss := other_users_miss(op, op.output, guard)) is not None:
                return miss
            if (miss := other_users_miss(op, where.operands[0], [where])) is not None:
                return miss
            probs = where.results[0]
        pv = next((u for u in users(probs) if isinstance(u, g.MatMulOp) and u.operands[0] is probs
                   and u.operands[1] is not probs), None)
        if pv is None:
            return None
        if (miss := other_users_miss(op, probs, [pv])) is not None:
            return miss
        chain: list[Operation] = []  # from the softmax back to the scores
        scale, masks = 1.0, []
        x = op.input
        while not isinstance(x.owner, g.MatMulOp):
            step = x.owner
            if not isinstance(step, Operation):
                return None
            scaled = _scaled_input(step)
            if scaled is not None:
                inner, factor = scaled
                scale *= factor
            elif isinstance(step, g.AddOp):
                a, b = step.operands
                inner, term = (a, b) if _is_scores(a) else (b, a)
                if not _is_scores(inner):
                    return None
                if scale != 1.0:
                    return Miss(op, UNSUPPORTED_ATTRIBUTE, "the scores are scaled after the mask is added")
                masks.insert(0, term)
            else:
                return None
            if g.shape_of(step.results[0]) != g.shape_of(inner):
                return Miss(op, UNSUPPORTED_ATTRIBUTE, f"{step.name} broadcasts the scores to {shapes.fmt(g.shape_of(x))}")
            if (miss := other_users_miss(op, x, [op, *chain])) is not None:
                return miss
            chain.append(step)
            x = inner
        qk = x.owner
        if qk.bias is not None or qk.str_("activation", ""):
            return None
        if (miss := other_users_miss(op, x, [op, *chain])) is not None:
            return miss
        keys = g.shape_of(x)[-1]
        if keys == 1:
            # MobileViT on small images attends over one patch; the kernel's row
            # reductions need rows of keys, and the unfused chain is cheap
            return Miss(op, UNSUPPORTED_ATTRIBUTE, "one key: its softmax is 1, nothing to fuse")
        for term in masks:
            if not g.shape_of(term) or g.shape_of(term)[-1] != keys:
                return Miss(op, UNSUPPORTED_ATTRIBUTE,
                            f"the term {shapes.fmt(g.shape_of(term))} added to the scores is not one value per key")
        q, kt = qk.operands[0], qk.operands[1]
        v = pv.operands[1]
        if any(isinstance(w.owner, g.ConstantOp | g.FillOp) for w in (q, kt, v)):
            return None  # a product with a weight is a projection, not attention
        if pv.bias is not None or pv.str_("activation", ""):
            return Miss(op, UNSUPPORTED_ATTRIBUTE, "the product with the values has an epilogue")
        s = g.shape_of(op.input)
        if not all(shapes.is_static(g.shape_of(w)) for w in (q, kt, v, op.input)):
            return Miss(op, DYNAMIC_SHAPE, "attention needs static shapes")
        if op.shape is not None or shapes.normalize_axis(op.int_("axis", -1), len(s)) != len(s) - 1:
            return Miss(op, UNSUPPORTED_ATTRIBUTE, "the softmax is not over the keys (the last axis)")
        if min(len(g.shape_of(w)) for w in (q, kt, v)) < 2:
            return Miss(op, UNSUPPORTED_ATTRIBUTE, "a 1-D operand is not attention")
        transpose = _keys_transpose(kt)
        absorbed = [transpose] if transpose is not None else []
        for member in [*absorbed, qk, *chain, op, *guard[1:], pv]:
            if not all(float_tensor(r) for r in member.results):
                return Miss(op, UNSUPPORTED_DTYPE, f"{member.name} result has type {member.results[0].type}")
        return Match(op, [*absorbed, qk, *reversed(chain), op, *guard, pv], (q, kt, v, masks, scale, bool(guard)))

    def rewrite(self, match: Match) -> Rewrite:
        q, kt, v, masks, scale, guarded = match.data
        pv = match.ops[-1]
        new, keys = key_rows(kt, match.anchor.location)
        operands = [q, keys, v, list(masks)]
        props: dict = {} if scale == 1.0 else {"scale": FloatAttr(scale, f32)}
        if guarded:
            props["zero_empty_rows"] = UnitAttr()
        fused = g.AttentionOp.build_inferred(operands, props, location=pv.location)
        return Rewrite([*new, fused], fused)


def _zeroes_nan(op: Operation, p: SSAValue) -> bool:
    """op is where(is_nan(p), 0, p) of the same shape as p: torch's guard
    that zeroes the NaN probabilities of a row whose every score is -inf."""
    if not isinstance(op, g.WhereOp) or op.operands[2] is not p or g.shape_of(op.results[0]) != g.shape_of(p):
        return False
    cond = op.operands[0].owner
    return isinstance(cond, g.IsNanOp) and cond.input is p and scalar_constant(op.operands[1]) == 0.0


def _is_scores(x: SSAValue, depth: int = 4) -> bool:
    """x is the scores or comes from them through scalar muls/divs and adds
    (what the walk from the softmax can follow back to the product)."""
    owner = x.owner
    if isinstance(owner, g.MatMulOp):
        return True
    if depth == 0 or not isinstance(owner, Operation):
        return False
    if (scaled := _scaled_input(owner)) is not None:
        return _is_scores(scaled[0], depth - 1)
    return isinstance(owner, g.AddOp) and any(_is_scores(a, depth - 1) for a in owner.operands)
