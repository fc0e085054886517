"""Matmul and gemm of row-major tensors on the cube, as structured kernels.

One kernel per graph.matmul / graph.gemm: tile.loads of both operands, a
tile.batch_matmul (fp32 result; tile-expand-structured moves the operands
GM -> L1 -> L0A/L0B as fractals and runs mmad over K), then one tile.map
epilogue: alpha, the bias (times beta), the fused activation, and in
force_fp16 the scales of the operands and of the result, before the store.

A constant right operand (a weight) is stored transposed, [.., N, K], in
FRACTAL_NZ ([.., K/k0, N, k0]: a tile's rows of one K block are one
contiguous run), its rows the fractal columns L0B wants in either precision; an
activation is read as it is: row-major [.., K, N] (fp16: load_2d transposes
its fractals) or, for a gemm with trans_b, [.., N, K]. A transpose only
products read (attention's head split and keys) makes no kernel: the
product reads its source through permuted strides (as b^T when the
transpose moves the innermost dim); any other transpose that swaps two dim
groups is a product with an identity. In force_fp16 an fp32
graph input gets a cast kernel first (the cube reads fp16).
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation

from gedialects.graph import ops as g
from gedialects.tile import structured as st
from lowering.legality import CUBE_KERNEL, folded_into_products, group_swap, identity_block
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
    a_source, b_source = (ctx.transposed_views.get(v, (v, None))[0] for v in (a, b))
    casts = {v: fp16_copy(ctx, op, v) for v in (a_source, b_source)}  # cast kernels run first
    weight = ctx.constant_value(b)
    # and the transpose of an fp32 row-major right operand (fp32 fractals are
    # not transposed on the way to L0B)
    b_t = transposed_copy(ctx, op, b) if weight is None and not (trans_b or ctx.fp16 or b in ctx.transposed_views) else None
    k = VectorKernel(ctx, op, "matmul")
    la, _ = product_operand(ctx, k, a, casts, as_b=False)
    if weight is not None:
        w = np.asarray(weight, dtype=np.float32)
        wt = w if trans_b else np.swapaxes(w, -1, -2)
        # stored as the cube reads it: b^T in FRACTAL_NZ, a tile's column
        # block one contiguous run (one DMA per K chunk)
        name = ctx.add_constant("weight_nz", st.pack_fractal_nz(wt, ctx.c0), layout=st.FRACTAL_NZ)
        lb = k.emit(st.LoadOp(name, TensorType(ctx.elem, list(wt.shape)), layout=st.FRACTAL_NZ))
        transpose_b, b_scale = True, 1.0
    elif b_t is not None:
        sb = g.shape_of(b)
        lb = k.emit(st.LoadOp(b_t, TensorType(ctx.elem, [*sb[:-2], sb[-1], sb[-2]])))
        transpose_b, b_scale = True, ctx.scale_of(b)
    else:
        lb, swapped = product_operand(ctx, k, b, casts, as_b=True)
        transpose_b, b_scale = trans_b or swapped, ctx.scale_of(b_source)
    product = k.emit(st.BatchMatmulOp(la, lb, transpose_b))
    scale = alpha * ctx.scale_of(a_source) * b_scale
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

    k.store(k.map(inputs, shape, k.stored_as(out), epilogue), out)


def product_operand(ctx, k: VectorKernel, v, casts: dict, as_b: bool):
    """The tile.load of product operand v, and whether it is b^T. A folded
    transpose (legality.foldable_transpose) is a load of its source through
    permuted strides; as the right operand, one that moves the innermost dim
    is read as b^T (its last two dims swapped back)."""
    source, perm = ctx.transposed_views.get(v, (v, None))
    shape = list(g.shape_of(v))
    window = None
    if casts.get(source):
        name, element = casts[source], ctx.elem
    elif perm is None:
        return k.load(v, shape), False
    else:
        view = ctx.values[source]
        name, element = view.storage.name, ctx.stored_element(view.storage, source)
        window = view.window  # heads of a split result: a box of the split's input
    if perm is None:
        return k.emit(st.LoadOp(name, TensorType(element, shape))), False
    n = len(perm)
    if perm[-1] == n - 1:
        return k.emit(st.LoadOp(name, TensorType(element, shape), perm, window=window)), False
    assert as_b and perm[-2] == n - 1
    swapped = [*perm[:-2], perm[-1], perm[-2]]
    return k.emit(st.LoadOp(name, TensorType(element, [*shape[:-2], shape[-1], shape[-2]]), swapped,
                            window=window)), True


def fp16_copy(ctx, op: Operation, v) -> str | None:
    """In force_fp16 the cube reads fp16: an fp32 graph input gets a cast
    kernel (stored value / its scale) into a GM tensor of its own, shared by
    every product that reads v (BERT's query, key and value projections of
    the fp32 hidden states: one cast, not three); its name, or None when v
    is stored in the compute type already."""
    if ctx.constant_value(v) is not None or v not in ctx.values:
        return None
    if v in ctx.fp16_copies:
        return ctx.fp16_copies[v]
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
    ctx.fp16_copies[v] = copy.name
    return copy.name


@lowers(g.TransposeOp, family=CUBE_KERNEL)
def lower_transpose(ctx, op: g.TransposeOp) -> None:
    """A transpose that only products read (legality.foldable_transpose)
    makes no kernel: the products read its source through permuted strides.
    Any other (legality.group_swap: x as [batch, a, b] -> [batch, b, a]) is
    a product with a b x b identity, I . x^T, in one kernel."""
    n = len(g.shape_of(op.input))
    perm = tuple(p % n for p in op.ints("perm", ())) or tuple(range(n))[::-1]
    if folded_into_products(op):
        ctx.transposed_views[op.output] = (op.input, perm)
        return
    swap = group_swap(op)
    assert swap is not None, "the partition placed a transpose the cube cannot run"
    k, value = _identity_product(ctx, op, op.input, swap, op.output)
    k.store(value, op.output)


def _identity_product(ctx, op: Operation, x, swap: tuple[int, int, int], target):
    """A kernel computing x^T as I . x^T for x viewed as [batch, a, b]:
    (the kernel, the [batch, b, a] result in the stored type at the scale of
    graph value `target`); the caller adds the store. Rows longer than the
    identity-product limit go in blocks of bs (legality.identity_block):
    x read as [batch, b / bs, a, bs] (a transposing load), one bs x bs
    identity, the product [batch, b / bs, bs, a] is [batch, b, a]."""
    batch, a, b = swap
    bs = identity_block(b)
    assert bs is not None, "the partition placed a transpose the cube cannot run"
    blocks = b // bs
    cast = fp16_copy(ctx, op, x)
    k = VectorKernel(ctx, op, "transpose")
    identity = k.emit(st.LoadOp(ctx.identity(bs), TensorType(ctx.elem, [bs, bs])))
    if cast is not None:
        name, element = cast, ctx.elem
    else:
        name, element = k.source(x)
    if blocks == 1:
        lx = k.emit(st.LoadOp(name, TensorType(element, [batch, a, b])))
    else:  # perm: as transpose(x viewed [batch, a, blocks, bs], (0, 2, 1, 3))
        lx = k.emit(st.LoadOp(name, TensorType(element, [batch, blocks, a, bs]), (0, 2, 1, 3)))
    product = k.emit(st.BatchMatmulOp(identity, lx, transpose_b=True))
    scale = ctx.scale_of(x)  # the product is in x's stored units

    def narrow(sb, c):
        return k.narrow(sb, c if scale == 1.0 else sb.mul(c, sb.const(scale)), target)

    shape = [batch, b, a] if blocks == 1 else [batch, blocks, bs, a]
    return k, k.map([product], shape, k.stored_as(target), narrow)


def transposed_copy(ctx, op: Operation, v) -> str:
    """v^T (its last two dims swapped) in a GM tensor of its own, written by
    an identity-product kernel that runs first: fp32 cannot be transposed
    on the way to L0B, so a row-major fp32 right operand is read as b^T."""
    shape = g.shape_of(v)
    copy = ctx.temp_rows((*shape[:-2], shape[-1], shape[-2]), f"{ctx.values[v].storage.name}_t")
    k, value = _identity_product(ctx, op, v, (math.prod(shape[:-2]), shape[-2], shape[-1]), v)
    k.block.add_op(st.StoreOp(value, copy.name))
    return copy.name
