"""Expansion of a tiled `tile.pool` (gedialects/tile/pool.py) into its loop:
tile-expand-structured runs it on every pool kernel with a
`#tile.pool_tiling`.

Tiles = (C1 slice, band of output rows), contiguous runs per core, the UB
buffers double-buffered (the loop is `tile.pipeline`): the band's input rows
GM -> UB (the padding is the map's zero halo, first turned into the lowest
value where the pool says so: `lowest_halo`), one vector op per window tap
over the whole band (a strided source), an average pool's scaling, UB -> GM.
A global average pool's tiles are whole maps of several slices, their
pixels folded in halves (`_global_average`)."""

from __future__ import annotations

import numpy as np
from xdsl.ir import Block

from gedialects.npu.isa import BLOCK_BYTES
from gedialects.tile import ops as t
from gedialects.tile.builder import Index, TileKernelBuilder
from gedialects.tile.pool import PoolOp, PoolTilingAttr
from gedialects.tile.transforms.ub_buffers import elem_bytes



def expand_pool(kernel_op: t.KernelOp, pool: PoolOp, tiling: PoolTilingAttr) -> None:
    """Rewrite the body of `kernel_op` (which computes `pool`) into its loop."""
    elem = pool.output.type.element  # type: ignore[attr-defined]
    es = elem_bytes(elem)
    c0 = BLOCK_BYTES // es
    kh, kw = pool.ints("kernel_size")
    s = pool.ints("strides")
    p = pool.ints("pads")
    x, out = pool.input_view, pool.output_view
    _, C, H, W = x.dims
    OH, OW = out.dims[2:]
    C1 = -(-C // c0)
    padded_in_w = W + p[1] + p[3]
    is_max = pool.kind.data == "max"
    band_rows, block_dim = tiling.band_rows.data, tiling.cores.data
    in_rows = (band_rows - 1) * s[0] + kh
    bands = OH // band_rows
    tiles = C1 * bands

    old = kernel_op.body.block  # the new body is built in a fresh block; the old one (the tile.pool) goes after
    kernel_op.body.detach_block(old)
    kernel_op.body.add_block(Block())
    kernel = TileKernelBuilder(kernel_op, elem)
    if pool.kind.data == "global_avg":
        _global_average(kernel, pool, tiling, c0)
        old.erase(safe_erase=False)
        return

    ub_in = kernel.alloc("ub", in_rows * padded_in_w * c0, "NC1HWC0", buffers=2)
    ub_out = kernel.alloc("ub", band_rows * OW * c0, "NC1HWC0", buffers=2)
    ub_counts = kernel.alloc("ub", band_rows * OW * c0, "NC1HWC0", buffers=2) if pool.counts is not None else None
    in_gm, out_gm = kernel.gm(t.gm_tensor_of(pool.input)), kernel.gm(t.gm_tensor_of(pool.output))
    x_padded_w, x_stride = x.padded_w.data, x.slice_stride.data
    out_padded_w, out_stride = out.padded_w.data, out.slice_stride.data
    x_origin = x.origin.data - (p[0] * x_padded_w + p[1]) * c0  # the window's (0, 0), in the halo
    with kernel.tiles(tiles, block_dim, pipeline=True) as tile:
        c1 = kernel.div(tile, bands)
        band = kernel.rem(tile, bands)
        src = kernel.add(kernel.mul(c1, x_stride), kernel.mul(band, band_rows * s[0] * x_padded_w * c0))
        kernel.copy(ub_in, kernel.at(in_gm, x_origin, src), [in_rows, padded_in_w * c0], [padded_in_w * c0, 1],
                    [x_padded_w * c0, 1])
        if pool.lowest_halo is not None:
            lowest = float(np.finfo(np.float16 if es == 2 else np.float32).min)
            lowest_halo(kernel, ub_in, band, band_rows * s[0], in_rows, H, W, p, c0, lowest)
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
            if pool.counts is not None:
                counts_gm = kernel.gm(t.gm_tensor_of(pool.counts))
                kernel.copy(ub_counts, kernel.at(counts_gm, 0, kernel.mul(band, n)), [n], [1], [1])
                kernel.vec("mul", ub_out, [ub_out, ub_counts], [n], [[1], [1], [1]])
            else:
                kernel.vec("muls", ub_out, [ub_out], [n], [[1], [1]], 1.0 / (kh * kw))
        dst = kernel.add(kernel.mul(c1, out_stride), kernel.mul(band, band_rows * out_padded_w * c0))
        kernel.copy(kernel.at(out_gm, out.origin.data, dst), ub_out, [band_rows, OW * c0], [out_padded_w * c0, 1],
                    [OW * c0, 1])
    old.erase(safe_erase=False)


def lowest_halo(kernel: TileKernelBuilder, ub_in, band: Index, band_step: int, in_rows: int, H: int, W: int, p,
                c0: int, lowest: float) -> None:
    """The padding of a band in UB (the map's zero halo) -> `lowest` (the
    storage type's lowest finite value), so a max over a window never picks
    it over a negative pixel: + lowest on the zeros (exact) of the halo
    columns of every row, then of the halo rows above or below the map
    (edge bands only: the loops run no iteration elsewhere). Corners are
    done once."""
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


def _global_average(kernel: TileKernelBuilder, pool: PoolOp, tiling: PoolTilingAttr, c0: int) -> None:
    """Per tile (`slices` C1 slices of whole maps): the maps GM -> UB, the
    upper half of the pixels added onto the lower until one is left, x 1/HW,
    the slices' means UB -> GM."""
    x, out = pool.input_view, pool.output_view
    _, C, H, W = x.dims
    hw = H * W
    slices, block_dim = tiling.slices.data, tiling.cores.data
    tiles = -(-C // c0) // slices
    ub = kernel.alloc("ub", slices * hw * c0, "NC1HWC0", buffers=2)
    in_gm, out_gm = kernel.gm(t.gm_tensor_of(pool.input)), kernel.gm(t.gm_tensor_of(pool.output))
    with kernel.tiles(tiles, block_dim, pipeline=True) as tile:
        c1 = kernel.mul(tile, slices)
        kernel.copy(ub, kernel.at(in_gm, x.origin.data, kernel.mul(c1, x.slice_stride.data)), [slices, H, W * c0],
                    [hw * c0, W * c0, 1], [x.slice_stride.data, x.padded_w.data * c0, 1])
        n = hw
        while n > 1:  # fold the upper half of the pixels onto the lower
            half = n // 2
            kernel.vec("add", ub, [ub, kernel.at(ub, (n - half) * c0)], [slices, half * c0], [[hw * c0, 1]] * 3)
            n -= half
        kernel.vec("muls", ub, [ub], [slices, c0], [[hw * c0, 1], [hw * c0, 1]], 1.0 / hw)
        kernel.copy(kernel.at(out_gm, out.origin.data, kernel.mul(c1, out.slice_stride.data)), ub, [slices, c0],
                    [out.slice_stride.data, 1], [hw * c0, 1])
