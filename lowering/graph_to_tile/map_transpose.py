"""A transpose between a 4-D map and its NHWC rows: one kernel holding a
`tile.transdata` "NC1HWC0" to "NHWC" (or back), which the tile passes tile
(the chunk of pixels, transdata_tiling.py) and expand into strided copies
through UB (expand_transdata.py).

ConvNeXt and SegFormer move between their convs (maps, NC1HWC0) and a
layer_norm over channels (rows of [H, W, C]) with transpose(0, 2, 3, 1) and
back with transpose(0, 3, 1, 2). In NC1HWC0 a pixel's channels are already
contiguous, C0 at a time, so either direction is a strided copy, no product
(the partition gives these transposes to the CNN patterns,
`legality.map_transpose`; assign-layouts lets them read or write the map,
so no transdata goes around them)."""

from __future__ import annotations

from gedialects.graph import ops as g
from gedialects.tile.conv import MapViewAttr
from gedialects.tile.transdata import TransdataOp
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
    view = MapViewAttr((1, C, H, W), fmap.origin(ctx.c0), fmap.slice_stride(ctx.c0), fmap.storage.padded_w)
    kernel = ctx.new_kernel(op, "transpose", 1)  # tile-distribute sets its cores
    map_ref, rows_ref = kernel.gm(fmap.storage.name), kernel.gm(rows.storage.name)
    formats, refs = (("NC1HWC0", "NHWC"), (map_ref, rows_ref)) if kind == "to_rows" else \
        (("NHWC", "NC1HWC0"), (rows_ref, map_ref))
    kernel.emit(TransdataOp(*formats, *refs, view, offset=rows.origin(ctx.c0)))
