"""Graph outputs: fp32 (or their own type) in their logical order, each in
the GM tensor named after it (`finish_outputs`, after every op is lowered).

A kernel that can write an output in place already did (its storage is
named after the output). Everything else is copied there by a copy or cast
kernel (`copy_out`, a structured kernel): an fp16 result cast to fp32
(undoing force_fp16 range scaling), a row-major view of a graph input or of
an AI-CPU result, a constant folded at import. assign-layouts has put a
transdata before every output not already in its logical order."""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects.builtin import StringAttr, TensorType, f16, f32, i32
from xdsl.ir import SSAValue
from xdsl.utils.exceptions import PassFailedException

from gedialects.graph import ops as g
from gedialects.graph.interpreter import output_names
from gedialects.graph.tensors import attr_array, numpy_dtype, tensor_nbytes
from gedialects.tile import structured as st

from .context import LoweringContext
from .storage import GmStorage, TensorView
from .vector import VectorKernel

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
    """A contiguous value -> graph output, as a structured kernel the tile
    passes tile and spread over the cores: an fp16 source widened to fp32
    (times its force_fp16 scale); a source in the output's own type (a graph
    input, another graph output, integers, bools, a constant) copied byte for
    byte, as 32-bit words (the last word's padding lands in the tensors'
    GM slack). A source inside an NC1HWC0 storage ([1, C, 1, 1], whose C
    values are contiguous) is read from its origin. An empty output gets its
    (0-byte) slot and no kernel."""
    n = math.prod(x.shape)
    out = GmStorage(name, kind="output", layout="ND", elems=n, shape=x.shape)
    out.ttype = v.type
    ctx.storages.append(out)
    if n == 0:
        return  # an empty output: nothing to copy
    src = ctx.stored_element(x.storage, v)
    cast = src == f16 and v.type.element_type == f32
    if not cast and src != v.type.element_type:
        raise PassFailedException(f"output '{name}' is stored as {src}, not its type {v.type.element_type} "
                                  "(no conversion kernel)")
    kernel = VectorKernel(ctx, None, "cast" if cast else "copy")
    kernel.builder.op.attributes["source"] = StringAttr(f"output '{name}'" + (" f16 -> f32" if cast else ""))
    # a row-major value keeps its shape (its tiling follows its rows); a map's
    # [1, C, 1, 1] values and a byte copy's words are one row
    if not cast:
        shape = [-(-tensor_nbytes(v.type) // WORD_BYTES)]
    elif x.storage.layout == "ND":
        shape = list(x.shape)
    else:
        shape = [n]
    window = x.row_window(ctx.c0) if x.storage.layout == "NC1HWC0" and x.origin(ctx.c0) != 0 else None
    value = kernel.emit(st.LoadOp(x.storage.name, TensorType(f16 if cast else i32, shape), window=window))
    if cast:
        value = kernel.map([value], shape, f32, lambda sb, y: kernel.widen(sb, y, v))
    kernel.block.add_op(st.StoreOp(value, name))


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
