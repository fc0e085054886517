"""Ops that move or only reinterpret bytes: views (reshape and friends),
channel concat and a channel-permuting transpose.

* Reshape/flatten are views: NC1HWC0 with H=W=1 is byte-identical to ND; a
  flatten of a larger map is FLAT_NC1HWC0 (gemm reads it with its weight
  rows permuted at compile time).
* A channel concat is a view when planning.py let its producers write their
  slices in place; otherwise `concat_copy` builds it with two copy kernels.
* A transpose is a channel permutation of a 4-D map (a 1x1 conv with a
  0/1 matrix on the cube), or a map's transpose to its NHWC rows or back
  (map_transpose.py)."""

from __future__ import annotations

import math

import numpy as np
from xdsl.ir import Operation, SSAValue
from xdsl.utils.exceptions import PassFailedException

from gedialects.graph import ops as g
from gedialects.location import describe_op
from gedialects.tile.transdata import TransdataOp
from lowering.legality import batch_slice, channel_permutation, channel_view_refusal, copy_boxes, map_transpose

from .context import LoweringContext
from .conv import emit_conv
from .map_transpose import lower_map_transpose
from .registry import lowers
from .storage import GmStorage, TensorView, map_view
from .transdata import transdata_in

@lowers(*g.VIEW_OPS)
def lower_view(ctx: LoweringContext, op: Operation) -> None:
    """No kernel: the result is a view of the operand's storage."""
    x = ctx.values[op.operands[0]]
    out = op.results[0]
    shape = g.shape_of(out)
    if x.window is not None:  # attention heads of a split result (legality.head_windows)
        ctx.values[out] = x.split_last(shape)
        return
    if x.layout == "NC1HWC0":
        n, c, h, w = x.shape
        if len(shape) == 4 and shape[2:] == x.shape[2:] and shape[:2] == x.shape[:2]:
            layout = "NC1HWC0"
        elif h * w == 1 and not any(x.storage.halo):
            layout = "ND"
        else:
            layout = "FLAT_NC1HWC0"
    elif x.layout == "FLAT_NC1HWC0":
        src = x.flat_src
        if tuple(shape) == tuple(src.shape):  # back to the map (channel shuffle)
            ctx.values[out] = src
            return
        layout, x = "FLAT_NC1HWC0", src
    else:
        layout = x.layout
    ctx.values[out] = TensorView(x.storage, x.first_slice, layout, shape,
                                 flat_src=x if layout == "FLAT_NC1HWC0" else None)


@lowers(g.ConcatOp)
def lower_concat(ctx: LoweringContext, op: g.ConcatOp) -> None:
    for x in op.inputs:
        if x not in ctx.values:
            raise PassFailedException(f"{describe_op(op)}: operand not lowered")
    ctx.storage_for(op.output, "NC1HWC0", "concat")
    if ctx.plan.concat_copies.get(op):
        concat_copy(ctx, op, ctx.plan.concat_copies[op])


def concat_copy(ctx: LoweringContext, op: g.ConcatOp, copies: list[tuple[SSAValue, int]]) -> None:
    """A channel concat whose operands cannot all be written in place (an
    offset that is not a multiple of C0, a graph input, a view, a value
    placed in another concat): every operand keeps its own map. Each is
    copied into its columns of a pixel-major scratch [H*W, C] (a kernel
    holding a tile.transdata "NC1HWC0" to "NHWC" at its channel offset, the
    scratch's rows its `row_pitch`: GM is byte addressed, so an offset
    inside a C0 slice is only where its rows start, and a channel count that
    is not whole blocks is a padded copy writing its exact bytes), then the
    scratch into the result map ("NHWC" to "NC1HWC0", which pads each
    pixel's last slice with zeros in UB). Separate kernels: a kernel never
    reads GM it writes. The tile passes choose each copy's chunk of pixels."""
    out = ctx.values[op.output]
    _, Ct, H, W = out.shape
    c0 = ctx.c0
    srcs = []
    for x, channel in copies:
        view = ctx.values.get(x)
        if view is None or view.layout != "NC1HWC0" or len(view.shape) != 4 or tuple(view.shape[2:]) != (H, W):
            raise PassFailedException(f"{describe_op(op)}: concat operand is not a map in NC1HWC0 (not lowered)")
        srcs.append((view, channel))
    scratch = GmStorage(ctx.fresh_name("concat_rows"), layout="ND", elems=H * W * Ct, shape=(H * W, Ct))
    ctx.storages.append(scratch)
    for view, channel in srcs:
        kernel = ctx.new_kernel(op, "concat_gather", 1)  # tile-distribute sets its cores
        kernel.emit(TransdataOp("NC1HWC0", "NHWC", kernel.gm(view.storage.name), kernel.gm(scratch.name),
                                map_view(view, c0), offset=channel, row_pitch=Ct))
    kernel = ctx.new_kernel(op, "concat_scatter", 1)
    kernel.emit(TransdataOp("NHWC", "NC1HWC0", kernel.gm(scratch.name), kernel.gm(out.storage.name),
                            map_view(out, c0)))


@lowers(g.TransposeOp)
def lower_transpose(ctx: LoweringContext, op: g.TransposeOp) -> None:
    """A transpose of a view of a 4-D map that permutes channels only
    (shufflenet's reshape -> transpose -> reshape channel shuffle): a 1x1
    convolution with a 0/1 permutation matrix on the cube (exact: one
    product by 1.0 and sums of zeros per output). The result is a map
    (with the halo its consumers need) seen through the transposed view.
    A map's transpose to its NHWC rows or back: box copies (map_transpose.py)."""
    if (mt := map_transpose(op)) is not None:
        return lower_map_transpose(ctx, op, mt)
    x = ctx.values[op.input]
    perm = op.ints("perm", ())
    src = x.flat_src
    if x.layout != "FLAT_NC1HWC0" or src is None or len(src.shape) != 4:
        raise PassFailedException(f"{describe_op(op)}: transpose is only lowered as a channel permutation of a 4-D map")
    _, C, H, W = src.shape
    # the input view must split channels only: (1, C-dims..., H, W)
    chan = channel_permutation(tuple(x.shape), perm, C, H, W)
    if chan is None:
        raise PassFailedException(f"{describe_op(op)}: transpose moves spatial dims (not lowered)")
    permutation = np.zeros((C, C, 1, 1), np.float32)
    permutation[np.arange(C), chan, 0, 0] = 1.0
    shuffled = ctx.temp_map((1, C, H, W), "shuffle")
    shuffled.storage.halo = list(ctx.plan.halos.get(op.output, [0, 0, 0, 0]))
    emit_conv(ctx, op, src, permutation, None, None, ("", (), 1.0), 1, 1, (0, 0, 0, 0), shuffled, "shuffle")
    ctx.values[op.output] = TensorView(shuffled.storage, 0, "FLAT_NC1HWC0", tuple(g.shape_of(op.output)),
                                       flat_src=shuffled)


@lowers(g.SliceOp, g.SplitOp)
def lower_channel_view(ctx: LoweringContext, op: Operation) -> None:
    """No kernel: each result is its C0 slices of the source map's storage
    (planning aliased them to the source's root: the legality rule _channel_view);
    channels that are not whole C0 slices: a selection conv each.
    One image of a batch of row-major images: its input transdata."""
    src = ctx.values[op.operands[0]]
    if (image := batch_slice(op)) is not None:
        return transdata_in(ctx, op, src, first=image * math.prod(src.shape[1:]))
    if src.layout != "NC1HWC0":
        raise PassFailedException(f"{describe_op(op)}: a channel view of a {src.layout} tensor is not lowered")
    boxes = copy_boxes(op)
    assert not isinstance(boxes, str)
    view = channel_view_refusal(op, ctx.fp16) is None
    for box in boxes:
        assert box.src_offsets is not None
        first = box.src_offsets[1]
        if view:
            ctx.values[box.dst] = TensorView(src.storage, src.first_slice + first // ctx.c0, "NC1HWC0", box.shape)
            continue
        # channels that are not whole C0 slices: a 1x1 conv with a 0/1
        # selection matrix on the cube (exact, as the channel shuffle)
        C, cn = src.shape[1], box.shape[1]
        select = np.zeros((cn, C, 1, 1), np.float32)
        select[np.arange(cn), first + np.arange(cn), 0, 0] = 1.0
        out = ctx.storage_for(box.dst, "NC1HWC0", "channels")
        emit_conv(ctx, op, src, select, None, None, ("", (), 1.0), 1, 1, (0, 0, 0, 0), out, "select")
