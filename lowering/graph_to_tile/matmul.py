"""Gemm and matmul with a constant right operand, on the cube (`lower_gemm`).

The left operand is one row block (M <= 16, batch 1): an ND row, or a
flattened NC1HWC0 map read in its stored order, the weight rows permuted at
compile time to match (FLAT_NC1HWC0). The weights (alpha, force_fp16
scales folded in) are packed into [K1][N1][16][k0]. Tiles are blocks of
output fractals over the cores; K is accumulated in L0C in steps that fit
L0A/L0B halves (double-buffered); bias and the fused activation on the vector unit."""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects.builtin import f32
from xdsl.ir import Operation
from xdsl.utils.exceptions import PassFailedException

from gedialects.graph import ops as g
from gedialects.location import describe_op
from gedialects.npu.isa import FRACTAL_BYTES
from gedialects.tile import ops as t
from gedialects.tile.builder import Index

from .activation import EpilogueActivation
from .context import LoweringContext
from .planning import CUBE_CHANNELS, FRACTAL_ELEMS
from .registry import lowers

GEMM_STEP_CYCLES = 40
"""Cost model: fixed cycles of one K step (its loads and mmad issued and synchronised)."""


def _place_flat_map_rows(B: np.ndarray, src_shape: tuple, c0: int, out: np.ndarray) -> None:
    """Weight rows for a left operand that is a flattened map read in its
    NC1HWC0 order, written into `out` (zeros, [C1 * H * W * c0, >= N]): row
    (c1, pixel, c0) of `out` is row (channel, pixel) of B; padded channels
    stay zero. One C1 slice at a time, with no weight-sized temporary."""
    _, C, H, W = src_shape
    C1 = -(-C // c0)
    N = B.shape[1]
    rows = B.reshape(C, H * W, N)
    view = out[: C1 * H * W * c0].reshape(C1, H * W, c0, out.shape[1])
    for c1 in range(C1):
        width = min(c0, C - c1 * c0)
        view[c1, :, :width, :N] = rows[c1 * c0 : c1 * c0 + width].transpose(1, 0, 2)


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
    # weight-sized arrays are released as soon as the next one exists: a
    # classifier's weights are most of a CNN's (VGG-19's fc6: 411 MB in fp32)
    B = np.multiply(weights, np.float32(alpha * scale_in / scale_out), dtype=np.float32)
    del weights
    beta /= scale_out
    flat = a.layout == "FLAT_NC1HWC0"
    if flat:  # K runs over the map's NC1HWC0 order, padded channels included
        _, C, H, W = a.flat_src.shape
        K = -(-C // c0) * H * W * c0
    K1 = -(-K // k0)
    N1 = -(-N // CUBE_CHANNELS)
    packed = np.zeros((K1 * k0, N1 * CUBE_CHANNELS), np.float32)
    if flat:
        _place_flat_map_rows(B, a.flat_src.shape, c0, packed)
    else:
        packed[:K, :N] = B
    del B
    order = packed.reshape(K1, k0, N1, CUBE_CHANNELS).transpose(0, 2, 3, 1)
    wname = ctx.add_constant("gemm_w", np.ascontiguousarray(order, dtype=np.float16 if ctx.fp16 else np.float32))
    del packed, order
    bname = None
    if bias is not None:
        padded_bias = np.zeros(N1 * CUBE_CHANNELS, np.float32)
        padded_bias[:N] = (np.broadcast_to(bias.astype(np.float32) * beta, (N,)) if bias.size in (1, N)
                           else bias.reshape(-1)[:N] * beta)
        bname = ctx.add_constant("gemm_b", padded_bias)
    out = ctx.storage_for(op.results[0], "ND", "gemm")
    tile_fractals, k_fractals = _choose_gemm_tiling(ctx, K1, N1)
    tiles = N1 // tile_fractals
    block_dim = ctx.cores_for(tiles)
    tile_channels = tile_fractals * CUBE_CHANNELS
    kernel = ctx.new_kernel(op, "gemm", block_dim)
    l1a = kernel.alloc("l1", k_fractals * 16 * k0, "ZZ", buffers=2)
    l1b = kernel.alloc("l1", k_fractals * tile_channels * k0, "ZN", buffers=2)
    l0a = kernel.alloc("l0a", k_fractals * 16 * k0, "ZZ", buffers=2)
    l0b = kernel.alloc("l0b", k_fractals * tile_channels * k0, "ZN", buffers=2)
    l0c = kernel.alloc("l0c", tile_fractals * FRACTAL_ELEMS, "NZ", elem=f32)
    ub_out = kernel.alloc("ub", tile_fractals * FRACTAL_ELEMS, "NZ")
    ub_bias = kernel.alloc("ub", tile_channels, "ND") if bname else None
    activation = EpilogueActivation(kernel, op.str_("activation", ""), op.floats("activation_params"), scale_out)
    a_gm, w_gm, out_gm = kernel.gm(a.storage.name), kernel.gm(wname), kernel.gm(out.storage.name)
    a_origin = a.origin(c0) if a.storage.layout == "NC1HWC0" else 0

    def k_step(kk: Index, j: Index, first: bool) -> None:
        """K step kk of output block j: k_fractals fractals of A and of B -> L0, mmad into L0C."""
        kernel.copy(l1a, kernel.at(a_gm, a_origin, kernel.mul(kk, k_fractals * k0)), [k_fractals, k0], [16 * k0, 1], [k0, 1])
        w_offset = kernel.add(kernel.mul(kk, k_fractals * N1 * CUBE_CHANNELS * k0), kernel.mul(j, tile_channels * k0))
        kernel.copy(l1b, kernel.at(w_gm, 0, w_offset), [k_fractals, tile_channels * k0], [tile_channels * k0, 1],
                    [N1 * CUBE_CHANNELS * k0, 1])
        kernel.emit(t.LoadFractalOp(l0a, l1a, k_fractals))
        kernel.emit(t.LoadFractalOp(l0b, l1b, k_fractals * tile_fractals))
        kernel.emit(t.MatmulOp(l0c, l0a, l0b, 16, tile_channels, k_fractals * k0, not first))

    with kernel.tiles(tiles, block_dim) as j:
        k_step(0, j, True)
        if K1 // k_fractals > 1:
            with kernel.loop(1, K1 // k_fractals, 1, pipeline=True) as kk:
                k_step(kk, j, False)
        kernel.copy(ub_out, l0c, [tile_fractals * FRACTAL_ELEMS], [1], [1], cast=ctx.fp16)
        if ub_bias is not None:
            kernel.copy(ub_bias, kernel.at(kernel.gm(bname), 0, kernel.mul(j, tile_channels)), [tile_channels], [1], [1])
            kernel.vec("add", ub_out, [ub_out, ub_bias], [tile_fractals, 16], [[FRACTAL_ELEMS, 1], [FRACTAL_ELEMS, 1], [16, 1]])
        activation.apply(ub_out, tile_fractals * FRACTAL_ELEMS)
        if M == 1:
            kernel.copy(kernel.at(out_gm, 0, kernel.mul(j, tile_channels)), ub_out, [tile_fractals, 16], [16, 1], [FRACTAL_ELEMS, 1])
        else:
            if N % c0:
                raise PassFailedException(f"{describe_op(op)}: M > 1 needs N a multiple of {c0}")
            kernel.copy(kernel.at(out_gm, 0, kernel.mul(j, tile_channels)), ub_out, [tile_fractals, M, 16], [16, N, 1],
                        [FRACTAL_ELEMS, 16, 1])


def _choose_gemm_tiling(ctx: LoweringContext, K1: int, N1: int) -> tuple[int, int]:
    """(output fractals per tile, K fractals per step): the cheapest by GM
    traffic over the cores plus a fixed cost per K step; L0A/L0B halves
    (double buffering) bound the step."""
    cap = ctx.config.capacity_bytes
    best = None
    for tile_fractals in [x for x in range(1, N1 + 1) if N1 % x == 0]:
        k_fractals = min(K1, (cap["l0b"] // 2) // (tile_fractals * FRACTAL_BYTES), (cap["l0a"] // 2) // FRACTAL_BYTES)
        if k_fractals < 1:
            continue
        while K1 % k_fractals:
            k_fractals -= 1
        tiles = N1 // tile_fractals
        cores = ctx.cores_for(tiles)
        steps = (tiles / cores) * (K1 // k_fractals)
        cost = ctx.config.dma_cycles("gm_l1", K1 * N1 * FRACTAL_BYTES // cores, cores) + steps * GEMM_STEP_CYCLES
        if best is None or cost < best[0]:
            best = (cost, tile_fractals, k_fractals)
    _, tile_fractals, k_fractals = best
    return tile_fractals, k_fractals
