"""graph.transdata and graph.space_to_depth: one kernel holding a
`tile.transdata` (gedialects/tile/transdata.py), which the tile passes tile
(transdata_tiling.py) and expand into products with 0/1 matrices on the
cube (expand_transdata.py). Counted in the `transdata` statistics.

* NCHW (an fp32 graph input or AI-CPU result; in force_fp16 an fp16
  row-major kernel's result read by a map kernel) -> NC1HWC0: `transdata_in`
  (an image of a batch: map-unbatch's batch slice).
* NCHW -> the space-to-depth map in NC1HWC0 (a conv-space-to-depth stem's
  input): `space_to_depth_in`.
* NC1HWC0 -> NCHW/ND (a graph output, or the operand of an AI-CPU task):
  `transdata_out`; a map with a halo (a padded conv or pool reads it too)
  is first copied without it."""

from __future__ import annotations

from xdsl.dialects.builtin import TensorType, f32
from xdsl.ir import Operation
from xdsl.utils.exceptions import PassFailedException

from gedialects.graph import ops as g
from gedialects.location import describe_op
from gedialects.npu.isa import BLOCK_BYTES
from gedialects.tile.conv import MapViewAttr
from gedialects.tile.transdata import TransdataOp
from gedialects.tile.transforms.ub_buffers import elem_bytes

from .context import LoweringContext
from .elementwise import copy_map
from .registry import lowers
from .storage import GmStorage, TensorView, map_view


@lowers(g.TransDataOp)
def lower_transdata(ctx: LoweringContext, op: g.TransDataOp) -> None:
    src, dst = op.src_format.data, op.dst_format.data
    x = ctx.values[op.input]
    if src == "NCHW" and dst == "NC1HWC0":
        return transdata_in(ctx, op, x)  # a graph input, an AI-CPU result or a row-major kernel's
    if src in ("NC1HWC0", "FLAT_NC1HWC0") and dst in g.ROW_MAJOR:
        return transdata_out(ctx, op, x.flat_src if x.flat_src is not None else x)
    raise PassFailedException(f"{describe_op(op)}: transdata {src} -> {dst} is not lowered "
                              "(NCHW -> NC1HWC0 and NC1HWC0 -> NCHW are)")


def transdata_in(ctx: LoweringContext, op: Operation, src: TensorView, first: int = 0) -> None:
    """NCHW -> NC1HWC0 in the source's stored type (an fp32 graph input in
    either mode; an fp16 intermediate in force_fp16, the result of a
    row-major kernel). `first`: the image's element offset in a batch of
    them (map-unbatch's batch slice)."""
    n, c, h, w = src.shape
    if n != 1 and not isinstance(op, g.SliceOp):  # (a batch slice reads one image of n)
        raise PassFailedException(f"{describe_op(op)}: batch {n}: only batch 1 is lowered")
    elem = ctx.stored_element(src.storage, op.operands[0])
    dst = ctx.storage_for(op.output, "NC1HWC0", "input_5hd")
    _emit(ctx, op, "NCHW", "NC1HWC0", (src.storage.name, elem), (dst.storage.name, ctx.elem),
          MapViewAttr((1, c, h, w), dst.origin(ctx.c0), dst.slice_stride(ctx.c0), dst.storage.padded_w), offset=first)


@lowers(g.SpaceToDepthOp)
def space_to_depth_in(ctx: LoweringContext, op: g.SpaceToDepthOp) -> None:
    """NCHW -> the space-to-depth map in NC1HWC0 in one kernel (a
    transdata_in that folds s x s cells of pixels into channels)."""
    src = ctx.values[op.input]
    n = src.shape[0]
    if n != 1:
        raise PassFailedException(f"{describe_op(op)}: batch {n}: only batch 1 is lowered")
    elem = ctx.stored_element(src.storage, op.input)
    es = elem_bytes(elem)
    dst = ctx.storage_for(op.output, "NC1HWC0", "input_5hd")
    # whole k0-pixel blocks: a short chunk reads up to k0 - 1 pixels past
    # its row (into products only cells past the chunk read)
    src.storage.overread = max(src.storage.overread, (BLOCK_BYTES // es - 1) * es)
    _emit(ctx, op, "NCHW", "NC1HWC0", (src.storage.name, elem), (dst.storage.name, ctx.elem), map_view(dst, ctx.c0),
          block_size=op.int_("blocksize", 1), mode=op.str_("mode", "DCR"))


def transdata_out(ctx: LoweringContext, op: g.TransDataOp, x: TensorView) -> None:
    """NC1HWC0 -> NCHW. A graph output comes out as fp32 (the cube
    accumulates in fp32), undoing force_fp16's range scale; an
    intermediate in the compute precision."""
    if any(x.storage.halo):  # a padded conv/pool reads it too: pixel runs are rows, copy without the halo
        flat = ctx.temp_map(x.shape, "no_halo")
        copy_map(ctx, op, "strip_halo", x, flat)
        x = flat
    _, C, H, W = x.shape
    v = op.output
    name = ctx.plan.outputs.get(v)
    st = GmStorage(name or ctx.fresh_name("transdata_nd"), kind="output" if name else "internal",
                   layout="ND", elems=C * H * W, shape=tuple(g.shape_of(v)))
    out_elem = f32 if name else ctx.elem
    if name:
        st.ttype = TensorType(f32, g.shape_of(v))
    ctx.storages.append(st)
    ctx.values[v] = TensorView(st, 0, "ND", tuple(g.shape_of(v)))
    # the last chunk's C0 slices are read up to whole 16-pixel fractals
    x.storage.overread = max(x.storage.overread, (-H * W) % 16 * ctx.c0 * ctx.elem_bytes)
    _emit(ctx, op, "NC1HWC0", "ND", (x.storage.name, ctx.elem), (st.name, out_elem),
          MapViewAttr((1, C, H, W), x.origin(ctx.c0), x.slice_stride(ctx.c0), x.storage.padded_w),
          scale=ctx.scale_of(v) if name else 1.0)


def _emit(ctx: LoweringContext, op: Operation, src_format: str, dst_format: str, src: tuple, dst: tuple,
          view: MapViewAttr, **options) -> None:
    """One transdata kernel; tile-distribute sets its cores."""
    ctx.stats.transdata += 1
    kernel = ctx.new_kernel(op, "transdata", 1)
    kernel.emit(TransdataOp(src_format, dst_format, kernel.gm(*src), kernel.gm(*dst), view, **options))
