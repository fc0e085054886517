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

PACK_BLOCK_BYTES = 8 << 20
"""Bytes of fp32 rows a gemm's weights are scaled in at a time before they
are converted and put in their fractal order: the only temporaries (a
weight-sized one is fresh memory the whole compile waits on: VGG-19's fc6
is 411 MB in fp32)."""


def pack_gemm_weights(weights: np.ndarray, scale: np.float32, K1: int, N1: int, k0: int, dtype: type,
                      flat_src: tuple | None = None) -> np.ndarray:
    """The right operand x `scale` (in fp32) as the cube's L1 wants it,
    [K1][N1][16][k0] in `dtype`, zero-padded to whole fractals. `flat_src`
    (N, C, H, W): the left operand is that map flattened and read in its
    NC1HWC0 order, so row (c1, pixel, c0) of K is weight row (channel,
    pixel); its padded channels' rows are zero. Built a block of K rows at a
    time (one C1 slice of a flattened map): each element scaled in fp32 and
    converted to `dtype` as packing the whole matrix would, with no
    weight-sized temporary."""
    K, N = weights.shape
    packed = np.empty((K1, N1, CUBE_CHANNELS, k0), dtype)
    if weights.T.flags.c_contiguous:  # a Gemm's trans_b: the weights' rows are N
        _pack_by_output_rows(weights.T, scale, packed, dtype, flat_src)
        return packed
    if flat_src is not None:
        _, C, H, W = flat_src
        C1, pixels = -(-C // k0), H * W
        rows = weights.reshape(C, pixels, N)
        per_block, blocks = pixels, C1  # fractal rows of K per block: a C1 slice's pixels
    else:
        per_block = max(1, PACK_BLOCK_BYTES // (k0 * N1 * CUBE_CHANNELS * 4))
        blocks = -(-K1 // per_block)
    scaled = np.empty((per_block * k0, N1 * CUBE_CHANNELS), np.float32)
    for block in range(blocks):
        first = block * per_block
        count = min(per_block, K1 - first)
        chunk = scaled[: count * k0]
        chunk.fill(0)
        if flat_src is not None:
            width = min(k0, C - block * k0)
            view = chunk.reshape(pixels, k0, N1 * CUBE_CHANNELS)
            np.multiply(rows[block * k0 : block * k0 + width].transpose(1, 0, 2), scale, out=view[:, :width, :N],
                        dtype=np.float32)
        else:
            k_rows = weights[first * k0 : min(K, (first + count) * k0)]
            np.multiply(k_rows, scale, out=chunk[: len(k_rows), :N], dtype=np.float32)
        values = to_fp16(chunk) if dtype == np.float16 else chunk
        packed[first : first + count] = values.reshape(count, k0, N1, CUBE_CHANNELS).transpose(0, 2, 3, 1)
    return packed


def _pack_by_output_rows(rows: np.ndarray, scale: np.float32, packed: np.ndarray, dtype: type,
                         flat_src: tuple | None) -> None:
    """pack_gemm_weights for weights stored [N][K] (a Gemm's trans_b), a
    block of N fractals at a time: their rows read as they lie (reading
    them as the [K][N] view's rows strides through all of them), each put
    in K's fractal order (a flattened map's: row (c1, pixel, cc) of K is
    channel c1 * k0 + cc at that pixel), then each block of 16 rows x k0
    columns moved to its place as a run of k0 elements."""
    N, K = rows.shape
    K1, N1, _, k0 = packed.shape
    per_block = max(1, PACK_BLOCK_BYTES // (CUBE_CHANNELS * K1 * k0 * 4))
    scaled = np.empty((per_block * CUBE_CHANNELS, K1 * k0), np.float32)
    for first in range(0, N1, per_block):
        count = min(per_block, N1 - first)
        chunk = scaled[: count * CUBE_CHANNELS]
        chunk.fill(0)
        source = rows[first * CUBE_CHANNELS : min(N, (first + count) * CUBE_CHANNELS)]
        if flat_src is None:
            np.multiply(source, scale, out=chunk[: len(source), :K], dtype=np.float32)
        else:
            _, C, H, W = flat_src
            pixels = H * W
            view = chunk.reshape(count * CUBE_CHANNELS, K1 // pixels, pixels, k0)
            channels = source.reshape(len(source), C, pixels)
            for c1 in range(K1 // pixels):
                width = min(k0, C - c1 * k0)
                np.multiply(channels[:, c1 * k0 : c1 * k0 + width].transpose(0, 2, 1), scale,
                            out=view[: len(source), c1, :, :width], dtype=np.float32)
        values = to_fp16(chunk) if dtype == np.float16 else chunk
        packed[:, first : first + count] = values.reshape(count, CUBE_CHANNELS, K1, k0).transpose(2, 0, 1, 3)


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
    # the weights are scaled as they are packed, a block of rows at a time
    # (pack_gemm_weights): a classifier's weights are most of a CNN's
    scale = np.float32(alpha * scale_in / scale_out)
    beta /= scale_out
    flat = a.layout == "FLAT_NC1HWC0"
    if flat:  # K runs over the map's NC1HWC0 order, padded channels included
        _, C, H, W = a.flat_src.shape
        K = -(-C // c0) * H * W * c0
    K1 = -(-K // k0)
    N1 = -(-N // CUBE_CHANNELS)
    packed = pack_gemm_weights(weights, scale, K1, N1, k0, np.float16 if ctx.fp16 else np.float32,
                               a.flat_src.shape if flat else None)
    wname = ctx.add_constant("gemm_w", packed)
    del packed
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
