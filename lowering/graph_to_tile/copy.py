"""Data movement of row-major tensors as vector-family kernels: slice
(strided along any dim but the innermost), split and concat as box copies (legality.copy_boxes: one kernel per box, a
tile.load of the source box and a tile.store into the destination box; DMA
only, unless a cast or a force_fp16 scale must be applied on the way), and
expand as a broadcasting map."""

from __future__ import annotations

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation

from gedialects.graph import ops as g
from gedialects.tile import structured as st
from gedialects.tile.structured import collapse_dims
from lowering.legality import VECTOR_KERNEL, CopyBox, copy_boxes, head_windows

from .registry import lowers
from .storage import TensorView
from .vector import VectorKernel


@lowers(g.SliceOp, g.SplitOp, g.ConcatOp, family=VECTOR_KERNEL)
def lower_box_copies(ctx, op: Operation) -> None:
    """A kernel per box. A result of a split of the last axis read only as
    attention heads (legality.head_windows: a merged query/key/value
    product's) makes none: it is a window of the split's input, which the
    products (cube.product_operand) or the heads' vector transposes read
    through the heads' permuted strides (`TensorView.window`)."""
    boxes = copy_boxes(op)
    assert not isinstance(boxes, str), boxes  # the partition checked
    widths = head_windows(op) or (None,) * len(boxes)
    source = ctx.values.get(op.operands[0])
    shape = tuple(g.shape_of(op.operands[0]))
    for box, d in zip(boxes, widths, strict=True):
        # a window is read as it is stored: in the compute type (not an fp32 input
        # in force_fp16, which products read through a cast kernel) and scale
        if (d is not None and source is not None and source.layout == "ND" and source.window is None
                and source.first_slice == 0 and ctx.stored_element(source.storage, box.src) == ctx.elem
                and ctx.scale_of(box.dst) == ctx.scale_of(box.src)):
            ctx.values[box.dst] = TensorView(source.storage, 0, "ND", tuple(box.shape),
                                             window=(shape, tuple(box.src_offsets or (0,) * len(shape))))
        else:
            copy_box(ctx, op, box)


def copy_box(ctx, op: Operation, box: CopyBox) -> None:
    """One kernel copying one box of op's source into its destination."""
    k = VectorKernel(ctx, op, "copy")
    name, element = k.source(box.src)
    window = None if box.src_offsets is None else (g.shape_of(box.src), box.src_offsets)
    value = k.emit(st.LoadOp(name, TensorType(element, list(box.shape)), window=window, steps=box.src_steps))
    if element != k.stored_as(box.dst) or ctx.scale_of(box.src) != ctx.scale_of(box.dst):
        value = k.map([value], box.shape, k.stored_as(box.dst),
                      lambda sb, x, src=box.src, dst=box.dst: k.narrow(sb, k.widen(sb, x, src), dst))
    window = None if box.dst_offsets is None else (g.shape_of(box.dst), box.dst_offsets)
    k.store(value, box.dst, window)


@lowers(g.ExpandOp, family=VECTOR_KERNEL)
def lower_expand(ctx, op: g.ExpandOp) -> None:
    """out = x broadcast to the result's shape: a map that reads x along
    its unit dims with stride 0."""
    shape, (xs,) = collapse_dims(g.shape_of(op.output), [g.shape_of(op.input)])
    k = VectorKernel(ctx, op, "expand")
    x = k.load(op.input, xs)
    k.store(k.map([x], shape, k.stored_as(op.output), lambda sb, a: k.narrow(sb, k.widen(sb, a, op.input), op.output)), op.output)
