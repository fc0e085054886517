"""A transpose between a 4-D map and its NHWC rows, as box copies through UB.

ConvNeXt and SegFormer move between their convs (maps, NC1HWC0) and a
layer_norm over channels (rows of [H, W, C]) with transpose(0, 2, 3, 1) and
back with transpose(0, 3, 1, 2). In NC1HWC0 a pixel's channels are already
contiguous, C0 at a time, so either direction is a strided copy, no product
(the partition gives these transposes to the CNN patterns,
`legality.map_transpose`; assign-layouts lets them read or write the map,
so no transdata goes around them).

Per chunk of pixels (spread over the cores, double-buffered):

* `to_rows`: the chunk's run of each C1 slice GM -> UB as [pixel][C1 x C0]
  (one DMA per slice), then its rows UB -> GM (one DMA; rows of C that are
  not whole blocks: a padded copy, exact bytes in GM);
* `to_map`: the chunk's rows GM -> UB as [pixel][C1 x C0] (one DMA; a row
  that is not whole blocks: padded, the pad channels zero), then each slice's
  run UB -> GM (one DMA per slice)."""

from __future__ import annotations

from gedialects.graph import ops as g
from gedialects.tile.pieces import row_runs
from gedialects.tile.transforms.ub_buffers import UB_RESERVE_BYTES
from lowering.legality import MapTranspose

from .context import LoweringContext
from .storage import TensorView


def lower_map_transpose(ctx: LoweringContext, op, mt: MapTranspose) -> None:
    _, C, H, W = mt.map_shape
    x = ctx.values[op.input]
    if mt.kind == "to_rows":
        fmap = x if len(x.shape) == 4 else x.flat_src  # the map, or its [1, C, H*W] view's
        assert fmap is not None and fmap.layout == "NC1HWC0", f"{op.name}: the map is {fmap}"
        _copy(ctx, op, mt.kind, fmap, ctx.storage_for(op.output, "ND", "map_rows"), C, H, W)
    elif len(g.shape_of(op.output)) == 4:
        _copy(ctx, op, mt.kind, ctx.storage_for(op.output, "NC1HWC0", "rows_map"), x, C, H, W)
    else:  # [1, C, H*W], which views read as the map
        fmap = ctx.temp_map(mt.map_shape, "rows_map")
        fmap.storage.halo = list(ctx.plan.halos.get(op.output, [0, 0, 0, 0]))
        ctx.values[op.output] = TensorView(fmap.storage, 0, "FLAT_NC1HWC0", tuple(g.shape_of(op.output)), flat_src=fmap)
        _copy(ctx, op, mt.kind, fmap, x, C, H, W)


def _copy(ctx: LoweringContext, op, kind: str, fmap: TensorView, rows: TensorView, C: int, H: int, W: int) -> None:
    """Copy between the map `fmap` and `rows` ([H*W, C]) in the direction `kind`."""
    c0, es = ctx.c0, ctx.elem_bytes
    c1 = -(-C // c0)
    line = c1 * c0  # a pixel's channels in UB: whole slices
    pw = fmap.storage.padded_w
    # pixels in runs along the map's rows, or (no side halo) along the whole map
    runs, run = (1, H * W) if pw == W else (H, W)
    budget = (ctx.config.capacity_bytes["ub"] - UB_RESERVE_BYTES) // (2 * line * es)  # double-buffered
    chunk = max(1, min(run, budget, max(16, -(-H * W // ctx.config.cube_cores))))
    pieces = row_runs(runs, run, chunk)
    block_dim = ctx.cores_for(sum(p.count for p in pieces))
    kernel = ctx.new_kernel(op, "transpose", block_dim)
    ub = kernel.alloc("ub", chunk * line, "ND", buffers=2)
    map_gm, rows_gm = kernel.gm(fmap.storage.name), kernel.gm(rows.storage.name)
    for piece in pieces:
        with kernel.tiles(piece.count, block_dim, pipeline=True) as i:
            r, col = piece.at(kernel, i)
            n = piece.size
            at_map = kernel.at(map_gm, fmap.origin(c0), kernel.mul(kernel.add(kernel.mul(r, pw), col), c0))
            at_rows = kernel.at(rows_gm, rows.origin(c0), kernel.mul(kernel.add(kernel.mul(r, W), col), C))
            # (shape, map-side strides, UB strides) and (shape, rows-side strides, UB strides)
            slices = ([c1, n, c0], [fmap.slice_stride(c0), c0, 1], [c0, line, 1])
            lines = ([n, C], [C, 1], [line, 1])
            if kind == "to_rows":
                kernel.copy(ub, at_map, slices[0], slices[2], slices[1])
                kernel.copy(at_rows, ub, *lines)
            else:
                kernel.copy(ub, at_rows, lines[0], lines[2], lines[1])
                kernel.copy(at_map, ub, *slices)
