"""Graph outputs: fp32 (or their own type) in their logical order, each in
the GM tensor named after it (`finish_outputs`, after every op is lowered).

A kernel that can write an output in place already did (its storage is
named after the output). Everything else is copied there by a copy or cast
kernel (`copy_out`): an fp16 result cast to fp32 (undoing force_fp16 range
scaling; a row-major one by a structured kernel over all cores), a row-major view of a graph input or of an AI-CPU result, a
constant folded at import. assign-layouts has put a transdata before every
output not already in its logical order."""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects.builtin import StringAttr, TensorType, f16, f32
from xdsl.ir import SSAValue
from xdsl.utils.exceptions import PassFailedException

from gedialects.graph import ops as g
from gedialects.graph.interpreter import output_names
from gedialects.graph.tensors import attr_array, numpy_dtype, tensor_nbytes
from gedialects.tile import ops as t
from gedialects.tile import structured as st

from .context import LoweringContext
from .data_movement import COPY_CHUNK_ELEMS
from .storage import GmStorage, TensorView
from .vector import VectorKernel

COPY_PAD_ELEMS = 16
"""An output copy moves a multiple of 16 elements (one 32-byte block of
fp16, two of fp32); the padding lands in the tensors' 64-byte GM slack."""

WORD_BYTES = 4
"""An uncast copy moves 32-bit words, whatever the element type."""


def finish_outputs(ctx: LoweringContext) -> None:
    ret = ctx.fn.body.block.last_op
    for name, v in zip(output_names(ctx.fn), ret.operands):
        if v not in ctx.values and isinstance(v.owner, g.ConstantOp | g.FillOp):
            constant_out(ctx, name, v)
            continue
        view = ctx.values[v]
        if view.storage.name == name and view.storage.kind == "output":
            # the slot has the output's shape: v may be a view (unsqueeze,
            # reshape, ...) of the result that owns the storage, whose
            # ttype (an AI-CPU result's) has the source's shape
            st = view.storage
            st.ttype = v.type if st.ttype is None else TensorType(st.ttype.element_type, g.shape_of(v))
            continue
        # row-major (ND, or NCHW: a view of a graph input or of an AI-CPU result)
        flat = view.layout in g.ROW_MAJOR or view.layout == "NC1HWC0" and view.shape[2] * view.shape[3] == 1
        if flat and (view.storage.layout == "ND" or not any(view.storage.halo)):
            copy_out(ctx, name, v, view)
            continue
        raise PassFailedException(
            f"output '{name}' is held in {view.layout}, not its logical order (assign-layouts puts a transdata here)")


def copy_out(ctx: LoweringContext, name: str, v: SSAValue, x: TensorView) -> None:
    """A contiguous value -> graph output: GM -> UB, vconv from fp16,
    UB -> GM in chunks. From a source in the output's type, a plain copy:
    for a [1,C,1,1] map whose kernel writes whole 16-channel fractals, more
    than the output's C values. An empty output gets its (0-byte) slot and
    no kernel."""
    n = math.prod(x.shape)
    st = GmStorage(name, kind="output", layout="ND", elems=n, shape=x.shape)
    st.ttype = v.type
    ctx.storages.append(st)
    if n == 0:
        return  # an empty output: nothing to copy
    # cast from fp16 only when the source is stored in fp16 (force_fp16);
    # a source in the output's own type (a graph input, another graph
    # output, integers, bools, a constant) is copied byte for byte, as
    # 32-bit words
    src = ctx.stored_element(x.storage, v)
    cast = src == f16 and v.type.element_type == f32
    if not cast and src != v.type.element_type:
        raise PassFailedException(f"output '{name}' is stored as {src}, not its type {v.type.element_type} "
                                  "(no conversion kernel)")
    if cast and x.storage.layout == "ND" and len(x.shape) > 1:
        _cast_rows_out(ctx, name, v, x)
        return
    words = n if cast else -(-tensor_nbytes(v.type) // WORD_BYTES)
    npad = -(-words // COPY_PAD_ELEMS) * COPY_PAD_ELEMS
    chunk = min(npad, COPY_CHUNK_ELEMS)
    kernel = ctx.new_kernel(None, "cast" if cast else "copy", 1)
    kernel.op.attributes["source"] = StringAttr(f"output '{name}'" + (" f16 -> f32" if cast else ""))
    ub16 = kernel.alloc("ub", chunk, "ND", buffers=2) if cast else None
    ub32 = kernel.alloc("ub", chunk, "ND", buffers=2, elem=f32)
    src_gm, out_gm = kernel.gm(x.storage.name, None if cast else f32), kernel.gm(name, f32)
    start = x.origin(ctx.c0) if x.storage.layout == "NC1HWC0" else 0
    for c in range(0, npad, chunk):
        m = min(chunk, npad - c)
        if ub16 is None:
            kernel.copy(ub32, kernel.at(src_gm, start + c), [m], [1], [1])
        else:
            kernel.copy(ub16, kernel.at(src_gm, start + c), [m], [1], [1])
            kernel.emit(t.CastOp(ub32, ub16, m))
            if ctx.scale_of(v) != 1.0:  # force_fp16 range scaling undone in fp32
                kernel.vec("muls", ub32, [ub32], [m], [[1], [1]], ctx.scale_of(v))
        kernel.copy(kernel.at(out_gm, c), ub32, [m], [1], [1])


def _cast_rows_out(ctx: LoweringContext, name: str, v: SSAValue, x: TensorView) -> None:
    """An fp16 row-major result -> its fp32 output as a structured kernel
    (the tile passes spread it over the cores): widened, times its scale."""
    shape = list(x.shape)
    kernel = VectorKernel(ctx, None, "cast")
    kernel.builder.op.attributes["source"] = StringAttr(f"output '{name}' f16 -> f32")
    loaded = kernel.emit(st.LoadOp(x.storage.name, TensorType(f16, shape)))
    widened = kernel.map([loaded], shape, f32, lambda sb, y: kernel.widen(sb, y, v))
    kernel.block.add_op(st.StoreOp(widened, name))


def constant_out(ctx: LoweringContext, name: str, v: SSAValue) -> None:
    """A graph output that is a constant (the graph folded at import):
    a GM constant in the output's type, copied out by a copy kernel."""
    op = v.owner
    shape = g.shape_of(v)
    if isinstance(op, g.FillOp):
        array = np.full(shape, op.value.value.data, dtype=numpy_dtype(v.type.element_type))
    else:
        array = np.asarray(attr_array(op.value))
    cname = ctx.add_constant(f"{name}_value", array, keep_dtype=True) if array.size else name
    st = GmStorage(cname, kind="constant", layout="ND", elems=array.size, shape=shape, ttype=v.type)
    copy_out(ctx, name, v, TensorView(st, 0, "ND", shape))
