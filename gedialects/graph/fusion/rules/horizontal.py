"""Horizontal fusion of products: `HorizontalMatMulFusionPass`.

matmul(x, W_1) (+ b_1), ..., matmul(x, W_n) (+ b_n), each by constant
weights [K, N_i] -- a transformer's query, key and value projections -- ->
one matmul(x, [W_1 | ... | W_n]) (+ [b_1 | ... | b_n]) whose result a
graph.split cuts back into the n results along the last axis.

Why: a product's cost on the NPU is mostly its operands' traffic, and each
core that computes a block of a product's columns reads its rows of x whole:
n products read x n times, one product of the n weights side by side reads
it once, and launches once (a BERT-base layer's three [128, 768] x [768, 768]
projections, 20.4k cycles, are one [128, 768] x [768, 2304] product of
13.2k).

When: the split must cost nothing, so every result must be read only as
attention heads -- a reshape of its last dim into [heads, d], a transpose
that keeps d innermost, read by graph.attention or graph.matmul -- which
the cube reads through windows of the merged result (legality.head_windows;
a split copied into three tensors made the zoo's small encoders 10% slower).
The products must agree on everything but their weights: the same x (their
left operand, the same value), weights of one rank-2 shape [K, *] and
dtype, a bias of shape [N_i] on all of them or on none, the same
activation epilogue. The rule anchors on the first of them in program
order; products that do not fit the first are left alone (a missed remark
names why, when fewer than two are left).
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import IntegerAttr, i64
from xdsl.ir import Operation

from gedialects.graph import ops as g
from gedialects.graph.constants import constant_value, materialize
from gedialects.location import node_name

from ..helpers import op_label, rebuild
from ..registry import UNSUPPORTED_ATTRIBUTE, FusionRule, Match, Miss, Phase, Rewrite


def _weights(op: g.MatMulOp) -> np.ndarray | None:
    w = constant_value(op.rhs)
    return None if w is None or np.ndim(w) != 2 else np.asarray(w)


def _bias_width(op: g.MatMulOp) -> int | None:
    """N_i when the bias is a constant [N_i] (0: no bias; None: another bias)."""
    if op.bias is None:
        return 0
    shape = g.shape_of(op.bias)
    if constant_value(op.bias) is None or len(shape) != 1 or shape[0] != g.shape_of(op.rhs)[-1]:
        return None
    return shape[0]


def _read_as_heads(v) -> str | None:
    """Why v is not read only as attention heads (None: it is)."""
    shape = g.shape_of(v)
    if not v.uses:
        return "a result is not read"
    for use in v.uses:
        reshape = use.operation
        heads = g.shape_of(reshape.results[0]) if isinstance(reshape, g.ReshapeOp) else None
        if heads is None or len(heads) != len(shape) + 1 or heads[:-2] != shape[:-1]:
            return f"a result is read by {op_label(reshape)}, not as heads (a reshape of its last dim)"
        for t in reshape.results[0].uses:
            transpose = t.operation
            n = len(heads)
            perm = [p % n for p in transpose.ints("perm", ())] if isinstance(transpose, g.TransposeOp) else []
            if not perm or perm[-1] != n - 1:
                return f"the heads are read by {op_label(transpose)}, not by a transpose that keeps d innermost"
            for r in transpose.results[0].uses:
                reader = r.operation
                if not (isinstance(reader, g.MatMulOp) or isinstance(reader, g.AttentionOp)
                        and transpose.results[0] not in reader.masks):
                    return f"the heads are read by {op_label(reader)}, not by a product"
    return None


def _epilogue(op: g.MatMulOp) -> tuple:
    return (op.activation, op.activation_params)


def _fits(first: g.MatMulOp, op: g.MatMulOp) -> str | None:
    """Why `op` cannot join `first`'s product (None: it can)."""
    if g.shape_of(op.rhs)[0] != g.shape_of(first.rhs)[0] or op.rhs.type.element_type != first.rhs.type.element_type:
        return "the weights' K or dtype differ"
    if (_bias_width(op) == 0) != (_bias_width(first) == 0):
        return "the biases differ in kind (a constant [N] bias on all or on none)"
    if _epilogue(op) != _epilogue(first):
        return "the activation epilogues differ"
    return None


class HorizontalMatMulFusion(FusionRule):
    name = "HorizontalMatMulFusionPass"
    summary = "matmuls of one input by constant weights (+bias) → one matmul by the weights side by side, split"
    anchors = (g.MatMulOp,)
    phase = Phase.HORIZONTAL

    def match(self, op: Operation) -> Match | Miss | None:
        assert isinstance(op, g.MatMulOp)
        block = op.parent_block()
        if block is None:
            return None
        # products by constant weights that read op's left operand as theirs
        # (not one this rule made: its result is split already)
        candidates = list(dict.fromkeys(
            u.operation for u in op.lhs.uses
            if isinstance(u.operation, g.MatMulOp) and u.index == 0 and u.operation.parent_block() is block
            and _weights(u.operation) is not None and _bias_width(u.operation) is not None
            and not any(isinstance(r.operation, g.SplitOp) for r in u.operation.output.uses)))
        if len(candidates) < 2:
            return None
        order = {id(o): i for i, o in enumerate(block.ops)}
        candidates.sort(key=lambda o: order[id(o)])
        heads = [c for c in candidates if _read_as_heads(c.output) is None]
        if len(heads) < 2:
            if op is not candidates[0]:
                return None
            why = next(w for w in (_read_as_heads(c.output) for c in candidates) if w is not None)
            return Miss(op, UNSUPPORTED_ATTRIBUTE, why)
        if heads[0] is not op:
            return None  # the first in program order anchors the group
        group = [op] + [c for c in heads[1:] if _fits(op, c) is None]
        if len(group) < 2:
            return Miss(op, UNSUPPORTED_ATTRIBUTE, f"{op_label(heads[1])}: {_fits(op, heads[1])}")
        return Match(op, group, group)

    def rewrite(self, match: Match) -> Rewrite:
        group: list[g.MatMulOp] = match.data
        first = group[0]
        name = node_name(first)
        weights = [_weights(o) for o in group]
        w = materialize(np.concatenate(weights, axis=1), f"{name}_w_merged", first.location)  # type: ignore[arg-type]
        new_ops: list[Operation] = [w]
        bias = None
        if first.bias is not None:
            b = materialize(np.concatenate([np.asarray(constant_value(o.bias)) for o in group]), f"{name}_b_merged",
                            first.location)
            new_ops.append(b)
            bias = b.results[0]
        product = rebuild(first, operands={"rhs": w.results[0], "bias": bias})
        rank = len(g.shape_of(product.results[0]))
        split = g.SplitOp.build_inferred(
            [product.results[0]],
            {"axis": IntegerAttr(rank - 1, i64), "split": g.int_array([w.shape[1] for w in weights])},  # type: ignore[union-attr]
            location=first.location, num_results=len(group))
        new_ops += [product, split]
        # before the first product, which every reader of the group's results follows
        return Rewrite(new_ops, product, {o.output: r for o, r in zip(group, split.results)}, before=first)
