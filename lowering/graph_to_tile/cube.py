"""Matmul and gemm of row-major tensors on the cube, as structured kernels.

One kernel per graph.matmul / graph.gemm: tile.loads of both operands, a
tile.batch_matmul (fp32 result; tile-expand-structured moves the operands
GM -> L1 -> L0A/L0B as fractals and runs mmad over K), then one tile.map
epilogue: alpha, the bias (times beta), the fused activation, and in
force_fp16 the scales of the operands and of the result, before the store.

A constant right operand (a weight) is stored transposed, [.., N, K], so
its rows are the fractal columns L0B wants in either precision; an
activation is read as it is: row-major [.., K, N] (fp16: load_2d transposes
its fractals) or, for a gemm with trans_b or the transpose of attention's
keys (folded: no kernel), [.., N, K]. In force_fp16 an fp32
graph input gets a cast kernel first (the cube reads fp16).
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation

from gedialects.graph import ops as g
from gedialects.tile import structured as st
from lowering.legality import CUBE_KERNEL
from lowering.map_bodies import activation_body

from .registry import lowers
from .vector import VectorKernel


@lowers(g.MatMulOp, g.GemmOp, family=CUBE_KERNEL)
def lower_matmul(ctx, op: Operation) -> None:
    a, b = op.operands[0], op.operands[1]
    bias = op.operands[2] if len(op.operands) > 2 else None
    gemm = isinstance(op, g.GemmOp)
    trans_b = gemm and bool(op.int_("trans_b", 0))
    alpha = op.float_("alpha", 1.0) if gemm else 1.0
    beta = op.float_("beta", 1.0) if gemm else 1.0
    b_source = ctx.transposed_views.get(b, b)
    a_cast, b_cast = _fp16_copy(ctx, op, a), _fp16_copy(ctx, op, b_source)  # cast kernels run first
    k = VectorKernel(ctx, op, "matmul")
    la = k.emit(st.LoadOp(a_cast, TensorType(ctx.elem, list(g.shape_of(a))))) if a_cast else k.load(a, g.shape_of(a))
    weight = ctx.constant_value(b)
    if weight is not None:
        w = np.asarray(weight, dtype=np.float32)
        wt = w if trans_b else np.swapaxes(w, -1, -2)
        name = ctx.add_constant("weight_t", np.ascontiguousarray(wt))
        lb = k.emit(st.LoadOp(name, TensorType(ctx.elem, list(wt.shape))))
        transpose_b, b_scale = True, 1.0
    else:
        lb = (k.emit(st.LoadOp(b_cast, TensorType(ctx.elem, list(g.shape_of(b_source))))) if b_cast
              else k.load(b_source, g.shape_of(b_source)))
        transpose_b, b_scale = trans_b, ctx.scale_of(b_source)
        if b in ctx.transposed_views:  # attention's keys: read the transpose's source as b^T
            transpose_b = True
    product = k.emit(st.BatchMatmulOp(la, lb, transpose_b))
    scale = alpha * ctx.scale_of(a) * b_scale
    out = op.results[0]
    shape = st.shape_of(product)
    inputs = [product]
    if bias is not None:
        inputs.append(k.load(bias, g.shape_of(bias)))
    act, params = op.str_("activation", ""), op.floats("activation_params")

    def epilogue(sb, c, *rest):
        y = c if scale == 1.0 else sb.mul(c, sb.const(scale))
        if rest:
            t = k.widen(sb, rest[0], bias)
            y = sb.add(y, t if beta == 1.0 else sb.mul(t, sb.const(beta)))
        return k.narrow(sb, activation_body(sb, act, params, y), out)

    k.store(k.map(inputs, shape, k.stored, epilogue), out)


def _fp16_copy(ctx, op: Operation, v) -> str | None:
    """In force_fp16 the cube reads fp16: an fp32 graph input gets a cast
    kernel (stored value / its scale) into a GM tensor of its own; its name,
    or None when v is stored in the compute type already."""
    if ctx.constant_value(v) is not None or v not in ctx.values:
        return None
    view = ctx.values[v]
    if ctx.stored_element(view.storage, v) == ctx.elem:
        return None
    shape = g.shape_of(v)
    copy = ctx.temp_rows(shape, f"{view.storage.name}_fp16")
    k = VectorKernel(ctx, op, "cast")
    scale = ctx.scale_of(v)

    def body(sb, x):
        y = x if scale == 1.0 else sb.mul(x, sb.const(1.0 / scale))
        return sb.emit(arith.TruncFOp(y, ctx.elem))

    k.block.add_op(st.StoreOp(k.map([k.load(v, shape)], shape, ctx.elem, body), copy.name))
    return copy.name


@lowers(g.TransposeOp, family=CUBE_KERNEL)
def fold_keys_transpose(ctx, op: g.TransposeOp) -> None:
    """A transpose of the last two dims that only products read as their
    right operand (legality.keys_transpose): no kernel; the products read
    its source as b^T."""
    ctx.transposed_views[op.output] = op.input
