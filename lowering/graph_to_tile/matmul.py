"""Gemm and matmul with a constant right operand, on the cube (`lower_gemm`).

The left operand is one row block (M <= 16, batch 1): an ND row, or a
flattened NC1HWC0 map read in its stored order, the weight rows permuted at
compile time to match (FLAT_NC1HWC0). The weights (alpha, force_fp16
scales folded in) are packed into [K1][N1][16][k0]. One kernel holding a
`tile.gemm` (gedialects/tile/gemm.py); the tile passes choose its blocks of
output fractals and K step (gemm_tiling.py) and write its loops
(expand_gemm.py)."""

from __future__ import annotations

import math

import numpy as np
from xdsl.ir import Operation, Region
from xdsl.utils.exceptions import PassFailedException

from gedialects.graph import ops as g
from gedialects.location import describe_op
from gedialects.tile.gemm import GemmOp
from lowering.fp16_scaling import to_fp16
from lowering.map_bodies import activation_block

from .context import LoweringContext
from .planning import CUBE_CHANNELS
from .registry import lowers

def _place_flat_map_rows(weights: np.ndarray, scale: np.float32, src_shape: tuple, c0: int, out: np.ndarray) -> None:
    """Weight rows times `scale` (in fp32) for a left operand that is a
    flattened map read in its NC1HWC0 order, written into `out` (zeros,
    [C1 * H * W * c0, >= N]): row (c1, pixel, c0) of `out` is row (channel,
    pixel) of the weights; padded channels stay zero. One C1 slice at a
    time, with no weight-sized temporary."""
    _, C, H, W = src_shape
    C1 = -(-C // c0)
    N = weights.shape[1]
    rows = weights.reshape(C, H * W, N)
    view = out[: C1 * H * W * c0].reshape(C1, H * W, c0, out.shape[1])
    for c1 in range(C1):
        width = min(c0, C - c1 * c0)
        np.multiply(rows[c1 * c0 : c1 * c0 + width].transpose(1, 0, 2), scale, out=view[c1, :, :width, :N],
                    dtype=np.float32)


@lowers(g.GemmOp, g.MatMulOp)
def lower_gemm(ctx: LoweringContext, op: Operation) -> None:
    a = ctx.values[op.operands[0]]
    weights = ctx.constant_value(op.operands[1])
    if weights is None:
        raise PassFailedException(f"{describe_op(op)}: the right operand must be constant")
    alpha, beta = 1.0, 1.0
    if isinstance(op, g.GemmOp):
        if op.int_("trans_a", 0):
            raise PassFailedException(f"{describe_op(op)}: trans_a not lowered")
        if op.int_("trans_b", 0):
            weights = weights.T
        alpha, beta = op.float_("alpha", 1.0), op.float_("beta", 1.0)
    bias = ctx.constant_value(op.bias) if op.bias is not None else None
    if op.bias is not None and bias is None:
        raise PassFailedException(f"{describe_op(op)}: bias must be constant")
    M = math.prod(a.shape[:-1]) if a.layout == "ND" else a.shape[0]
    if M > 16 or len(a.shape) > 1 and a.shape[0] != 1:  # a 1-D left operand is one row
        raise PassFailedException(f"{describe_op(op)}: only M <= 16 (batch 1) is lowered")
    K, N = weights.shape
    c0, k0 = ctx.c0, ctx.c0  # k0: the K depth of a fractal, one 32-byte block
    scale_in, scale_out = ctx.scale_of(op.operands[0]), ctx.scale_of(op.results[0])
    # the weights are scaled as they are packed and the fp32 packing released
    # once its fp16 copy exists: a classifier's weights are most of a CNN's
    # (VGG-19's fc6: 411 MB in fp32)
    scale = np.float32(alpha * scale_in / scale_out)
    beta /= scale_out
    flat = a.layout == "FLAT_NC1HWC0"
    if flat:  # K runs over the map's NC1HWC0 order, padded channels included
        _, C, H, W = a.flat_src.shape
        K = -(-C // c0) * H * W * c0
    K1 = -(-K // k0)
    N1 = -(-N // CUBE_CHANNELS)
    packed = np.zeros((K1 * k0, N1 * CUBE_CHANNELS), np.float32)
    if flat:
        _place_flat_map_rows(weights, scale, a.flat_src.shape, c0, packed)
    else:
        np.multiply(weights, scale, out=packed[:K, :N], dtype=np.float32)
    if ctx.fp16:  # converted as laid out, then reordered: `to_fp16` on the reordered view gathered every chunk
        packed = to_fp16(packed)
    order = packed.reshape(K1, k0, N1, CUBE_CHANNELS).transpose(0, 2, 3, 1)
    wname = ctx.add_constant("gemm_w", np.ascontiguousarray(order))
    del packed, order
    bname = None
    if bias is not None:
        padded_bias = np.zeros(N1 * CUBE_CHANNELS, np.float32)
        padded_bias[:N] = (np.broadcast_to(bias.astype(np.float32) * beta, (N,)) if bias.size in (1, N)
                           else bias.reshape(-1)[:N] * beta)
        bname = ctx.add_constant("gemm_b", padded_bias)
    out = ctx.storage_for(op.results[0], "ND", "gemm")
    if M > 1 and N % c0:
        raise PassFailedException(f"{describe_op(op)}: M > 1 needs N a multiple of {c0}")
    kernel = ctx.new_kernel(op, "gemm", 1)  # tile-distribute sets its cores
    act = op.str_("activation", "")
    epilogue = activation_block(act, op.floats("activation_params"), ctx.elem, scale_out) if act else None
    kernel.emit(GemmOp(
        kernel.gm(a.storage.name), kernel.gm(wname), kernel.gm(out.storage.name), m=M, n=N, k_fractals=K1,
        n_fractals=N1, a_origin=a.origin(c0) if a.storage.layout == "NC1HWC0" else 0,
        bias=kernel.gm(bname) if bname is not None else None, epilogue=Region(epilogue) if epilogue else None))
