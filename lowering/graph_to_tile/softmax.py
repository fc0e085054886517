"""Softmax over one row (`lower_softmax`), on the vector unit in one kernel:
max-reduce, subtract (broadcast), exp, sum-reduce, divide (broadcast).

Each reduction folds a copy of the row (a reduce clobbers its source) to one
value, then copies that value into every lane of one 32-byte block (a reduce
of rows of one column at stride 0): the broadcast operand of the next op."""

from __future__ import annotations

import math

from xdsl.utils.exceptions import PassFailedException

from gedialects.graph import ops as g
from gedialects.location import describe_op
from gedialects.npu.isa import BLOCK_BYTES, REPEAT_BYTES
from gedialects.tile import ops as t

from .context import LoweringContext
from .registry import lowers

FP16_SAFE_FACTOR = 2.0**15
"""The largest power of two fp16 holds (its max is 65504): the largest
factor a force_fp16 scale is undone by in one multiplication."""


@lowers(g.SoftmaxOp)
def lower_softmax(ctx: LoweringContext, op: g.SoftmaxOp) -> None:
    x = ctx.values[op.input]
    shape = x.shape
    axis = op.int_("axis", -1) % len(shape)
    if any(d != 1 for d in shape[axis + 1 :]) or math.prod(shape[:axis]) != 1:
        raise PassFailedException(f"{describe_op(op)}: softmax over one row along the last non-unit axis only")
    if x.layout == "NC1HWC0" and (any(x.storage.halo) or shape[2] * shape[3] != 1):
        raise PassFailedException(f"{describe_op(op)}: softmax of a spatial NC1HWC0 map")
    n = shape[axis]
    per_block, per_repeat = BLOCK_BYTES // ctx.elem_bytes, REPEAT_BYTES // ctx.elem_bytes
    npad = -(-n // per_block) * per_block
    out = ctx.storage_for(op.output, "ND", "softmax")
    kernel = ctx.new_kernel(op, "softmax", 1)
    ub_x = kernel.alloc("ub", npad)
    ub_work = kernel.alloc("ub", max(npad, per_repeat))
    ub_partial = kernel.alloc("ub", per_repeat)
    ub_block = kernel.alloc("ub", per_block)
    x_origin = x.origin(ctx.c0) if x.storage.layout == "NC1HWC0" else 0
    kernel.copy(ub_x, kernel.at(kernel.gm(x.storage.name), x_origin), [npad], [1], [1])

    def reduce_broadcast(kind: str) -> None:
        """ub_block = kind-reduction of the row, in every lane."""
        kernel.vec("adds", ub_work, [ub_x], [npad], [[1], [1]], 0.0)
        kernel.emit(t.ReduceOp(kind, ub_partial, ub_work, 1, n, 0))
        kernel.emit(t.ReduceOp("max", ub_block, ub_partial, per_block, 1, 0))

    broadcast = [[per_block, 1], [per_block, 1], [0, 1]]
    reduce_broadcast("max")
    kernel.vec("sub", ub_x, [ub_x, ub_block], [npad // per_block, per_block], broadcast)
    # force_fp16 range scaling: back to true differences before exp, in
    # factors fp16 can hold (what overflows is -inf, and exp(-inf) = 0)
    rest = ctx.scale_of(op.input)
    while rest > 1.0:
        factor = min(rest, FP16_SAFE_FACTOR)
        kernel.vec("muls", ub_x, [ub_x], [npad], [[1], [1]], factor)
        rest /= factor
    kernel.vec("exp", ub_x, [ub_x], [npad], [[1], [1]])
    reduce_broadcast("sum")
    kernel.vec("div", ub_x, [ub_x, ub_block], [npad // per_block, per_block], broadcast)
    kernel.copy(kernel.gm(out.storage.name), ub_x, [npad], [1], [1])
