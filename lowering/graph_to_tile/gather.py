"""graph.gather as a vector-family kernel: an embedding lookup (or any
gather along one axis) by integer indices read on the AI core.

The data is viewed as [A, V, B] (A: the dims before the axis, V: the axis,
B: the dims after it) and the indices as [N, 1]; a `tile.gather` reads, for
each index, one row of B elements from GM (the scalar unit reads the index
from UB, one DMA moves the row), and the result [A, N, B] is the output in
row-major order. In force_fp16 the rows are rescaled on the way when the
output's power-of-two scale differs from the data's.
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects.builtin import TensorType, i64

from gedialects.graph import ops as g
from gedialects.tile import structured as st
from lowering.legality import VECTOR_KERNEL, gather_view

from .registry import lowers
from .vector import VectorKernel


@lowers(g.GatherOp, family=VECTOR_KERNEL)
def lower_gather(ctx, op: g.GatherOp) -> None:
    table = gather_view(op)
    n = math.prod(g.shape_of(op.indices))
    k = VectorKernel(ctx, op, "gather")
    data, element = k.source(op.input)
    constant = ctx.constant_value(op.indices)
    if constant is not None:
        indices, index_element = ctx.add_constant("indices", np.asarray(constant, dtype=np.int64)), i64
    else:
        indices, index_element = k.source(op.indices)
    loaded = k.emit(st.LoadOp(indices, TensorType(index_element, [n, 1])))
    rows = k.emit(st.GatherOp(data, table, loaded, element))
    shape = g.shape_of(rows)
    if element != k.stored_as(op.output) or ctx.scale_of(op.input) != ctx.scale_of(op.output):
        rows = k.map([rows], shape, k.stored_as(op.output), lambda sb, x: k.narrow(sb, k.widen(sb, x, op.input), op.output))
    k.store(rows, op.output)
