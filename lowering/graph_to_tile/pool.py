"""Pooling and local response normalisation on NC1HWC0 maps.

* max/avg pool (`lower_pool`): tiles = (C1 slice, band of output rows), the
  band's rows picked by cost among those that fit UB, UB
  double-buffered; one vector op per window tap over the whole band (a
  strided source); the padding is the map's zero halo, which a max pool of
  values that may be negative (YOLO's SPPF after SiLU) first turns into the
  storage type's lowest value in UB (`lowest_halo`); avg pool scales by
  1/k^2, or by a constant of per-pixel reciprocal counts when the padding
  is not counted.
* global average pool: a tree of strided vector adds, then x 1/HW.
* LRN: the channel window crosses C0 slices, so its sum is a 1x1 conv of x^2
  with a banded C x C weight on the cube; the squares and the power are the
  conv kernel's input stage and epilogue."""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from xdsl.utils.exceptions import PassFailedException

from gedialects.graph import ops as g
from gedialects.location import describe_op
from gedialects.npu.isa import BLOCKS_PER_REPEAT, MAX_REPEAT
from lowering.map_bodies import lrn_blocks

from .context import LoweringContext
from .conv import emit_conv
from .registry import lowers
from .slicing import channel_view, operand_maps, ranges_of
from .storage import TensorView


@lowers(g.MaxPoolOp, g.AvgPoolOp)
def lower_pool(ctx: LoweringContext, op: g.PoolOp) -> None:
    """One kernel, or one per channel piece of a sliced input (slicing.py),
    each writing its channels of the one output map."""
    out = ctx.storage_for(op.output, "NC1HWC0", "pool")
    pieces = operand_maps(ctx, op.input)
    if len(pieces) == 1:
        return emit_pool(ctx, op, pieces[0], out)
    for (lo, hi), piece in zip(ranges_of(pieces), pieces):
        emit_pool(ctx, op, piece, channel_view(out, lo, hi, ctx.c0))


def emit_pool(ctx: LoweringContext, op: g.PoolOp, x: TensorView, out: TensorView) -> None:
    """x (NC1HWC0, its zero halo as wide as the padding) pooled -> out."""
    kh, kw = op.ints("kernel_shape")
    s = op.ints("strides", (1, 1))
    p = op.ints("pads", (0, 0, 0, 0))
    if op.int_("ceil_mode", 0) or op.ints("dilations", (1, 1)) != (1, 1):
        raise PassFailedException(f"{describe_op(op)}: ceil_mode/dilation pooling not lowered")
    is_max = isinstance(op, g.MaxPoolOp)
    halo_lowest = is_max and any(p) and op.input not in ctx.nonnegative
    _, C, H, W = x.shape
    OH, OW = g.shape_of(op.output)[2:]
    c0, es = ctx.c0, ctx.elem_bytes
    C1 = -(-C // c0)
    padded_in_w = W + p[1] + p[3]
    ub_bytes = ctx.config.capacity_bytes["ub"]
    counts = None  # avg pool not counting the padding: 1 / (taps inside the map), per output pixel
    if not is_max and any(p) and not op.int_("count_include_pad", 0):
        ones = np.pad(np.ones((H, W)), ((p[0], p[2]), (p[1], p[3])))
        cnt = sliding_window_view(ones, (kh, kw))[:: s[0], :: s[1]].sum(axis=(2, 3))[:OH, :OW]
        counts = np.repeat((1.0 / cnt)[:, :, None], c0, axis=2)
    config = ctx.config

    def cycles(band_rows: int) -> float:
        """The busiest core's cycles (the target's formulas): per tile the
        band's load, a vector op per tap and the store, the three
        overlapping across tiles (UB is double-buffered)."""
        tiles = C1 * (OH // band_rows)
        cores = ctx.cores_for(tiles)
        load = config.dma_cycles("gm_ub", ((band_rows - 1) * s[0] + kh) * W * c0 * es, cores)
        vector = kh * kw * config.vector_cycles("max", -(-band_rows * OW * c0 * es // 256))
        store = config.dma_cycles("ub_gm", band_rows * OW * c0 * es, cores)
        steady = max(load, vector, store)
        return -(-tiles // cores) * steady + load + vector + store - steady

    def fits(band_rows: int) -> bool:
        in_rows = (band_rows - 1) * s[0] + kh
        return 2 * (in_rows * padded_in_w + (2 if counts is not None else 1) * band_rows * OW) * c0 * es <= ub_bytes

    candidates = [r for r in range(OH, 0, -1) if OH % r == 0 and fits(r)]
    if not candidates:
        raise PassFailedException(f"{describe_op(op)}: a pooling row does not fit UB")
    band_rows = min(candidates, key=cycles)
    in_rows = (band_rows - 1) * s[0] + kh
    bands = OH // band_rows
    tiles = C1 * bands
    block_dim = ctx.cores_for(tiles)
    kernel = ctx.new_kernel(op, "max_pool" if is_max else "avg_pool", block_dim)
    ub_in = kernel.alloc("ub", in_rows * padded_in_w * c0, "NC1HWC0", buffers=2)
    ub_out = kernel.alloc("ub", band_rows * OW * c0, "NC1HWC0", buffers=2)
    ub_counts = kernel.alloc("ub", band_rows * OW * c0, "NC1HWC0", buffers=2) if counts is not None else None
    counts_name = ctx.add_constant("pool_scale", counts) if counts is not None else None
    in_gm, out_gm = kernel.gm(x.storage.name), kernel.gm(out.storage.name)
    x_origin = x.origin(c0) - (p[0] * x.storage.padded_w + p[1]) * c0  # the window's (0, 0), in the halo
    with kernel.tiles(tiles, block_dim, pipeline=True) as tile:
        c1 = kernel.div(tile, bands)
        band = kernel.rem(tile, bands)
        src = kernel.add(kernel.mul(c1, x.slice_stride(c0)), kernel.mul(band, band_rows * s[0] * x.storage.padded_w * c0))
        kernel.copy(ub_in, kernel.at(in_gm, x_origin, src), [in_rows, padded_in_w * c0], [padded_in_w * c0, 1],
                    [x.storage.padded_w * c0, 1])
        if halo_lowest:
            lowest_halo(ctx, kernel, ub_in, band, band_rows * s[0], in_rows, H, W, p)
        taps = [(i, j) for i in range(kh) for j in range(kw)]
        shape = [band_rows, OW, c0]
        dst_strides = [OW * c0, c0, 1]
        src_strides = [s[0] * padded_in_w * c0, s[1] * c0, 1]

        def tap(i: int, j: int):
            return kernel.at(ub_in, (i * padded_in_w + j) * c0)

        combine = "max" if is_max else "add"
        if len(taps) == 1:
            kernel.vec("adds", ub_out, [ub_in], shape, [dst_strides, src_strides], 0.0)
        else:
            kernel.vec(combine, ub_out, [tap(*taps[0]), tap(*taps[1])], shape, [dst_strides, src_strides, src_strides])
            for i, j in taps[2:]:
                kernel.vec(combine, ub_out, [ub_out, tap(i, j)], shape, [dst_strides, dst_strides, src_strides])
        if not is_max:
            n = band_rows * OW * c0
            if counts is not None:
                kernel.copy(ub_counts, kernel.at(kernel.gm(counts_name), 0, kernel.mul(band, n)), [n], [1], [1])
                kernel.vec("mul", ub_out, [ub_out, ub_counts], [n], [[1], [1], [1]])
            else:
                kernel.vec("muls", ub_out, [ub_out], [n], [[1], [1]], 1.0 / (kh * kw))
        dst = kernel.add(kernel.mul(c1, out.slice_stride(c0)), kernel.mul(band, band_rows * out.storage.padded_w * c0))
        kernel.copy(kernel.at(out_gm, out.origin(c0), dst), ub_out, [band_rows, OW * c0], [out.storage.padded_w * c0, 1],
                    [OW * c0, 1])


def lowest_halo(ctx: LoweringContext, kernel, ub_in, band, band_step: int, in_rows: int, H: int, W: int, p) -> None:
    """The padding of a band in UB (the map's zero halo) -> the storage
    type's lowest finite value, so a max over a window never picks it over
    a negative pixel: + lowest on the zeros (exact) of the halo columns of
    every row, then of the halo rows above or below the map (edge bands
    only: the loops run no iteration elsewhere). Corners are done once."""
    c0 = ctx.c0
    lowest = float(np.finfo(np.float16 if ctx.fp16 else np.float32).min)
    row = (W + p[1] + p[3]) * c0
    for start, width in ((0, p[1]), (p[1] + W, p[3])):
        if width:
            kernel.vec("adds", kernel.at(ub_in, start * c0), [kernel.at(ub_in, start * c0)], [in_rows, width * c0],
                       [[row, 1], [row, 1]], lowest)
    first = kernel.add(kernel.mul(band, band_step), -p[0])  # the band's first window row in the map (< 0: halo)

    def rows(lower, upper) -> None:
        with kernel.loop(lower, upper) as r:
            at = kernel.at(ub_in, p[1] * c0, kernel.mul(r, row))
            kernel.vec("adds", at, [at], [W * c0], [[1], [1]], lowest)

    if p[0]:
        rows(0, kernel.min(kernel.max(kernel.mul(first, -1), 0), in_rows))
    if p[2]:
        rows(kernel.min(kernel.max(kernel.add(kernel.mul(first, -1), H), 0), in_rows), in_rows)


MAX_REDUCE_PIXELS = MAX_REPEAT * BLOCKS_PER_REPEAT
"""Pixels of a global pool's C1 slice (one 32-byte block each): at most 255
repeats of 8 blocks (the vector repeat count is 8 bits)."""


@lowers(g.GlobalAvgPoolOp)
def lower_global_pool(ctx: LoweringContext, op: g.GlobalAvgPoolOp) -> None:
    x = ctx.values[op.input]
    _, C, H, W = x.shape
    c0, es = ctx.c0, ctx.elem_bytes
    C1 = -(-C // c0)
    hw = H * W
    out = ctx.storage_for(op.output, "NC1HWC0", "gap")
    ub_bytes = ctx.config.capacity_bytes["ub"]
    slices = max(n for n in range(1, C1 + 1)
                 if C1 % n == 0 and 2 * n * hw * c0 * es <= ub_bytes and hw <= MAX_REDUCE_PIXELS)
    tiles = C1 // slices
    block_dim = ctx.cores_for(tiles)
    kernel = ctx.new_kernel(op, "global_avg_pool", block_dim)
    ub = kernel.alloc("ub", slices * hw * c0, "NC1HWC0", buffers=2)
    in_gm, out_gm = kernel.gm(x.storage.name), kernel.gm(out.storage.name)
    with kernel.tiles(tiles, block_dim, pipeline=True) as tile:
        c1 = kernel.mul(tile, slices)
        kernel.copy(ub, kernel.at(in_gm, x.origin(c0), kernel.mul(c1, x.slice_stride(c0))), [slices, H, W * c0],
                    [hw * c0, W * c0, 1], [x.slice_stride(c0), x.storage.padded_w * c0, 1])
        n = hw
        while n > 1:  # fold the upper half of the pixels onto the lower
            half = n // 2
            kernel.vec("add", ub, [ub, kernel.at(ub, (n - half) * c0)], [slices, half * c0], [[hw * c0, 1]] * 3)
            n -= half
        kernel.vec("muls", ub, [ub], [slices, c0], [[hw * c0, 1], [hw * c0, 1]], 1.0 / hw)
        kernel.copy(kernel.at(out_gm, out.origin(c0), kernel.mul(c1, out.slice_stride(c0))), ub, [slices, c0],
                    [out.slice_stride(c0), 1], [hw * c0, 1])


@lowers(g.LrnOp)
def lower_lrn(ctx: LoweringContext, op: g.LrnOp) -> None:
    """y = x / (bias + alpha/size * sum of x^2 over a channel window)^beta, one
    kernel: the window sum is a 1x1 conv with a banded C x C weight whose
    input band is squared on its way to L1 and whose epilogue takes the
    power and multiplies by x (no map but y is stored)."""
    x = ctx.values[op.input]
    if x.layout != "NC1HWC0" or len(x.shape) != 4:
        raise PassFailedException(f"{describe_op(op)}: LRN of a non-4-D map")
    assert ctx.scale_of(op.input) == 1.0, "fp16_scaling pins LRN inputs"
    size = op.int_("size", 1)
    alpha, beta, bias = op.float_("alpha", 1e-4), op.float_("beta", 0.75), op.float_("bias", 1.0)
    C = x.shape[1]
    lo, hi = (size - 1) // 2, -(-(size - 1) // 2)
    window = np.zeros((C, C, 1, 1), np.float32)
    for co in range(C):
        window[co, max(0, co - lo): min(C, co + hi + 1), 0, 0] = alpha / size
    out = ctx.storage_for(op.output, "NC1HWC0", "lrn")
    # + bias in the power, not as the conv's bias: the padded channels of the
    # last slice then stay finite (ln(0) * 0 would be nan)
    square, power = lrn_blocks(bias, beta, ctx.elem)
    emit_conv(ctx, op, x, window, None, x, power, 1, 1, (0, 0, 0, 0), out, "lrn_window",
              stage=square, residual_mode="scale")
