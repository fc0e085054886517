"""Pooling and local response normalisation on NC1HWC0 maps.

* max/avg pool (`lower_pool`): one kernel holding a `tile.pool`
  (gedialects/tile/pool.py) that the tile passes tile (bands of output rows
  of a C1 slice, pool_tiling.py) and expand (expand_pool.py); the padding is
  the map's zero halo, which a max pool of values that may be negative
  (YOLO's SPPF after SiLU) first turns into the storage type's lowest value
  in UB (`lowest_halo`, decided here from what is known non-negative); avg
  pool scales by 1/k^2, or by a constant of per-pixel reciprocal counts
  (built here) when the padding is not counted.
* global average pool: a `tile.pool` "global_avg" (a tree of strided vector
  adds, then x 1/HW).
* LRN: the channel window crosses C0 slices, so its sum is a 1x1 conv of x^2
  with a banded C x C weight on the cube; the squares and the power are the
  conv kernel's input stage and epilogue."""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from xdsl.utils.exceptions import PassFailedException

from gedialects.graph import ops as g
from gedialects.location import describe_op
from gedialects.tile.pool import PoolOp
from lowering.map_bodies import lrn_blocks

from .context import LoweringContext
from .conv import emit_conv
from .registry import lowers
from .slicing import channel_view, operand_maps, ranges_of
from .storage import TensorView, map_view


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
    """x (NC1HWC0, its zero halo as wide as the padding) pooled -> out: one
    kernel holding a tile.pool, tiled and expanded by the tile passes."""
    kh, kw = op.ints("kernel_shape")
    s = op.ints("strides", (1, 1))
    p = op.ints("pads", (0, 0, 0, 0))
    if op.int_("ceil_mode", 0) or op.ints("dilations", (1, 1)) != (1, 1):
        raise PassFailedException(f"{describe_op(op)}: ceil_mode/dilation pooling not lowered")
    is_max = isinstance(op, g.MaxPoolOp)
    _, _, H, W = x.shape
    OH, OW = g.shape_of(op.output)[2:]
    c0 = ctx.c0
    counts_name = None  # avg pool not counting the padding: 1 / (taps inside the map), per output pixel
    if not is_max and any(p) and not op.int_("count_include_pad", 0):
        ones = np.pad(np.ones((H, W)), ((p[0], p[2]), (p[1], p[3])))
        cnt = sliding_window_view(ones, (kh, kw))[:: s[0], :: s[1]].sum(axis=(2, 3))[:OH, :OW]
        counts_name = ctx.add_constant("pool_scale", np.repeat((1.0 / cnt)[:, :, None], c0, axis=2))
    kernel = ctx.new_kernel(op, "max_pool" if is_max else "avg_pool", 1)  # tile-distribute sets its cores
    kernel.emit(PoolOp(
        "max" if is_max else "avg", (kernel.gm(x.storage.name), map_view(x, c0)),
        (kernel.gm(out.storage.name), map_view(out, c0)), kernel_size=(kh, kw), strides=s, pads=p,
        lowest_halo=is_max and any(p) and op.input not in ctx.nonnegative,
        counts=kernel.gm(counts_name) if counts_name is not None else None))


@lowers(g.GlobalAvgPoolOp)
def lower_global_pool(ctx: LoweringContext, op: g.GlobalAvgPoolOp) -> None:
    """One kernel holding a tile.pool "global_avg" (its window the whole map)."""
    x = ctx.values[op.input]
    _, _, H, W = x.shape
    out = ctx.storage_for(op.output, "NC1HWC0", "gap")
    kernel = ctx.new_kernel(op, "global_avg_pool", 1)  # tile-distribute sets its cores
    kernel.emit(PoolOp("global_avg", (kernel.gm(x.storage.name), map_view(x, ctx.c0)),
                       (kernel.gm(out.storage.name), map_view(out, ctx.c0)), kernel_size=(H, W), strides=(1, 1),
                       pads=(0, 0, 0, 0)))


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
