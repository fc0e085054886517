"""The CNN patterns' rules: 4-D batch-1 feature maps in NC1HWC0 around
the cube (conv, pooling, the classifier's gemm, elementwise ops and loop
fusions of maps, channel concat/slice/shuffle, map transposes, the input
space-to-depth) -- `ai_core_refusal`, one rule per op type in `RULES`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.ir import Operation, SSAValue

from gedialects.graph import ops as g
from gedialects.graph import shapes
from gedialects.npu.isa import FRACTAL
from gedialects.tile.transforms.pool_tiling import MAX_REDUCE_PIXELS

from .base import (AI_CORE, STRUCTURED_FAMILIES, Context, Rule, compute_bytes, copy_boxes, engine_of, is_constant,
                   is_f32, kernel_of, rank, rule_registry, written_as_rows)

CUBE_ACTIVATIONS = ("", *g.ACTIVATIONS)
"""Epilogues the conv and gemm kernels apply (every fused activation: its map
body runs on the output buffer: the epilogue region of their tile.conv or
tile.gemm, gedialects/tile/transforms/buffer_body.py)."""
MAP_OPS = (g.ConvOp, g.MaxPoolOp, g.AvgPoolOp, g.GlobalAvgPoolOp, g.LrnOp)
"""Ops only the map kernels run: they read and write 4-D feature maps in NC1HWC0."""
MAP_ELEMENTWISE = (g.FusionOp, g.BatchNormOp, g.ReluOp, g.AddOp, g.MulOp, g.SubOp, g.SumOp)
"""Elementwise ops the vector kernels run on 4-D maps."""
FUSION_BODY_OPS = (g.ReluOp, g.IdentityOp, g.AddOp, g.SubOp, g.MulOp, g.DivOp, g.MaxOp, g.MinOp, g.SumOp)
"""Ops a graph.fusion body may hold to run on the vector unit."""
MAP_UNARY_OPS = (g.SigmoidOp, g.TanhOp, g.ErfOp, g.GeluOp, g.SqrtOp, g.ExpOp, g.LogOp, g.NegOp, g.AbsOp,
                 g.ReciprocalOp, g.HardSigmoidOp, g.HardSwishOp, g.SoftplusOp, g.LeakyReluOp)
"""Unary ops a graph.fusion body on maps may also hold: their map bodies
(lowering/map_bodies.py) join the tile.elementwise's body."""
SCALE_EQUIVARIANT_BINARY = (g.AddOp, g.MulOp, g.MaxOp, g.MinOp)
"""Binary ops whose constant operand may come first (the kernel swaps it)."""


RULES: dict[type[Operation], Rule] = {}
rule = rule_registry(RULES)


def _map(v: SSAValue) -> str | None:
    """A 4-D batch-1 feature map, or why not."""
    s = g.shape_of(v)
    if len(s) != 4:
        return f"operand {shapes.fmt(s)} is not a 4-D feature map"
    if s[0] != 1:
        return f"batch {s[0]}: only batch 1 is lowered"
    return None


@rule(g.ConvOp)
def _conv(op: g.ConvOp, ctx: Context) -> str | None:
    if rank(op.input) != 4:
        return f"{rank(op.input) - 2}-d convolution not lowered (2-d only)"
    if (why := _map(op.input)) is not None:
        return why
    act = op.str_("activation", "")
    if act not in CUBE_ACTIVATIONS:
        return f"activation '{act}' not lowered in the conv epilogue"
    if not is_constant(op.weight) or op.bias is not None and not is_constant(op.bias):
        return "weights and bias must be constant"
    s, d = op.ints("strides", (1, 1)), op.ints("dilations", (1, 1))
    if s[0] != s[1] or d[0] != d[1]:
        return f"anisotropic stride {s} / dilation {d} not lowered"
    if op.residual is not None and (why := _map(op.residual)) is not None:
        return f"residual: {why}"
    if op.residual is not None and is_constant(op.residual):  # the epilogue reads a map, not a packed constant
        return "a constant residual is not lowered"
    if op.residual is not None and g.shape_of(op.residual) != g.shape_of(op.output):
        return "a broadcast residual is not lowered"
    return None


@rule(g.MaxPoolOp, g.AvgPoolOp)
def _pool(op: g.PoolOp, ctx: Context) -> str | None:
    if (why := _map(op.input)) is not None:
        return why
    if op.int_("ceil_mode", 0) or op.ints("dilations", (1, 1)) != (1, 1):
        return "ceil_mode/dilation pooling not lowered"
    (kh, kw), p = op.ints("kernel_shape"), op.ints("pads", (0, 0, 0, 0))
    _, _, h, w = g.shape_of(op.input)
    if kh > h + p[0] + p[2] or kw > w + p[1] + p[3] or 0 in g.shape_of(op.output):
        return "a window larger than the padded input is not lowered"
    return None


@rule(g.LrnOp)
def _map_op(op: Operation, ctx: Context) -> str | None:
    return _map(op.operands[0])


@rule(g.GlobalAvgPoolOp)
def _global_pool(op: Operation, ctx: Context) -> str | None:
    """Its pixels fold in vector repeats (an 8-bit count: pool_tiling.py)."""
    shape = g.shape_of(op.operands[0])
    if len(shape) == 4 and shape[2] * shape[3] > MAX_REDUCE_PIXELS:
        return f"a global pool over {shape[2] * shape[3]} pixels (at most {MAX_REDUCE_PIXELS} on the AI core)"
    return _map(op.operands[0])


@rule(g.SliceOp, g.SplitOp)
def _channel_view(op: Operation, ctx: Context) -> str | None:
    """A slice or split of a map's channels: along whole C0 slices a view of
    the source's storage, no kernel (planning aliases it); other runs of
    channels a 0/1 selection conv each. One image of a batch of row-major
    images, read as a map, is its input transdata."""
    if batch_slice(op) is not None:
        readers = [u.operation for u in op.results[0].uses]
        if readers and all(_reads_as_map(r, op.results[0], ctx.fp16) for r in readers):
            return None
        return "one image of a batch that not every reader reads as a map"
    if written_as_rows(op.operands[0]):  # (a map kernel would need a transdata each way)
        return "a slice of rows a structured kernel writes (a vector copy reads them in place)"
    return channel_boxes_refusal(op)  # whole C0 slices: a view; others: a 0/1 1x1 conv selects them


def batch_slice(op: Operation) -> int | None:
    """The image a slice takes from a batch of 4-D tensors (map-unbatch's
    slices), else None."""
    if not isinstance(op, g.SliceOp) or rank(op.input) != 4 or op.ints("steps") or g.shape_of(op.output)[0] != 1:
        return None
    boxes = copy_boxes(op)
    if isinstance(boxes, str) or boxes[0].shape[1:] != tuple(g.shape_of(op.input))[1:]:
        return None
    return boxes[0].src_offsets[0]  # type: ignore[index]


def channel_boxes_refusal(op: Operation) -> str | None:
    """None when each result of the slice or split is a run of the map's
    channels (all its pixels), else why not."""
    x = op.operands[0]
    if (why := _map(x)) is not None:
        return why
    boxes = copy_boxes(op)
    if isinstance(boxes, str):
        return boxes
    for box in boxes:
        assert box.src_offsets is not None
        if (any(o for k, o in enumerate(box.src_offsets) if k != 1) or box.shape[2:] != tuple(g.shape_of(x))[2:]
                or box.src_steps is not None):
            return "only a channel slice of a map is lowered on maps"
    return None


def channel_view_refusal(op: Operation, fp16: bool) -> str | None:
    """None when each result is whole C0 slices of the map: a view of its storage."""
    if (why := channel_boxes_refusal(op)) is not None:
        return why
    c0 = 32 // compute_bytes(fp16)
    for box in copy_boxes(op):  # type: ignore[union-attr]
        if box.src_offsets[1] % c0 or box.shape[1] % c0:  # type: ignore[index]
            return f"channels [{box.src_offsets[1]}, {box.src_offsets[1] + box.shape[1]}) are not whole C0 = {c0} slices"  # type: ignore[index]
    return None


@rule(g.GemmOp, g.MatMulOp)
def _gemm(op: Operation, ctx: Context) -> str | None:
    a, b = op.operands[0], op.operands[1]
    if not is_constant(b):
        return "the right operand must be constant (a weight)"
    if rank(b) != 2:
        return f"right operand {shapes.fmt(g.shape_of(b))}: a batched matmul is not lowered"
    if isinstance(op, g.GemmOp) and op.int_("trans_a", 0):
        return "trans_a not lowered"
    act = op.str_("activation", "")
    if act not in CUBE_ACTIVATIONS:
        return f"activation '{act}' not lowered in the gemm epilogue"
    bias = op.operands[2] if len(op.operands) > 2 else None
    if bias is not None and not is_constant(bias):
        return "bias must be constant"
    sa = g.shape_of(a)
    m = math.prod(sa[:-1])
    # The kernel's M > 1 path (up to one 16-row fractal) gives wrong rows
    # (found by the AI-CPU tests); until the tile level is rebuilt, only
    # the vector-matrix product of the light models' classifiers is legal.
    if m != 1:
        return f"left operand {shapes.fmt(sa)}: only M = 1 is lowered"
    return None


def channel_permutation(view_shape: tuple, perm, C: int, H: int, W: int):
    """For a transpose of a view (1, C-dims..., H, W) of a (1, C, H, W) map
    that permutes channel dims only: out channel -> in channel; else None."""
    ish = tuple(view_shape)
    if ish[0] != 1 or ish[-2:] != (H, W) or math.prod(ish[1:-2]) != C or list(perm[:1]) != [0] or list(perm[-2:]) != [len(ish) - 2, len(ish) - 1]:
        return None
    return np.arange(C).reshape(ish[1:-2]).transpose([q - 1 for q in perm[1:-2]]).reshape(-1)


MAP_TRANSPOSES = {(0, 2, 3, 1): "to_rows", (0, 3, 1, 2): "to_map"}
"""A 4-D batch-1 map's transposes to its NHWC rows and back (ConvNeXt's,
around a layer_norm over channels): box copies between the map's NC1HWC0
and the rows (graph_to_tile/map_transpose.py). SegFormer's are the same on
a [1, C, H*W] view of the map: transpose (0, 2, 1) of the view to rows, and
of rows to a [1, C, H*W] tensor that views read as the map."""
MAP_WRITERS = (*MAP_OPS, g.ConcatOp, *MAP_ELEMENTWISE)
"""Ops whose 4-D results the CNN patterns write in NC1HWC0."""


@dataclass(frozen=True)
class MapTranspose:
    kind: str
    """"to_rows" (the map to its [H*W, C] rows) or "to_map"."""
    map_shape: tuple[int, ...]
    """(1, C, H, W) of the map."""


def map_transpose(op: Operation) -> MapTranspose | None:
    """A transpose between a batch-1 map and its NHWC rows (of the map
    itself or of its [1, C, H*W] view), else None."""
    if not isinstance(op, g.TransposeOp) or g.shape_of(op.input)[:1] != (1,):
        return None
    perm, src, dst = tuple(op.ints("perm", ())), tuple(g.shape_of(op.input)), tuple(g.shape_of(op.output))
    if len(src) == 4 and perm in MAP_TRANSPOSES:
        kind = MAP_TRANSPOSES[perm]
        return MapTranspose(kind, src if kind == "to_rows" else dst)
    if perm != (0, 2, 1):
        return None
    view = op.input.owner
    if isinstance(view, g.VIEW_OPS) and _flat_view(g.shape_of(view.operands[0]), src):
        return MapTranspose("to_rows", tuple(g.shape_of(view.operands[0])))
    views = [u.operation for u in op.output.uses]
    if not views or not all(isinstance(v, g.VIEW_OPS) for v in views):
        return None
    shapes = {tuple(g.shape_of(v.results[0])) for v in views}
    if len(shapes) == 1 and _flat_view(next(iter(shapes)), dst):
        return MapTranspose("to_map", next(iter(shapes)))
    return None


def _flat_view(map_shape: Sequence[int], flat: Sequence[int]) -> bool:
    """flat is [1, C, H*W] of the batch-1 map [1, C, H, W]."""
    return len(map_shape) == 4 and tuple(map_shape[:2]) == tuple(flat[:2]) == (1, map_shape[1]) \
        and len(flat) == 3 and map_shape[2] * map_shape[3] == flat[2]


def _map_transpose_refusal(op: g.TransposeOp, mt: MapTranspose, ctx: Context) -> str | None:
    """The CNN patterns take a map transpose where it saves a transdata: to
    rows of a map a CNN kernel writes; to a map every reader reads as one."""
    if mt.kind == "to_rows":
        x = op.input if rank(op.input) == 4 else op.input.owner.operands[0]  # type: ignore[union-attr]
        if not _writes_map(x.owner):
            return "a transpose to rows of a tensor that is not a map a CNN kernel writes"
        return None
    maps = [op.output] if rank(op.output) == 4 else [u.operation.results[0] for u in op.output.uses]
    reads = [(u.operation, v) for v in maps for u in v.uses]
    if not any(_reads_as_map(user, v, ctx.fp16) for user, v in reads) or not all(
            _reads_as_map(user, v, ctx.fp16) or _viewed_as_rows(user) for user, v in reads):
        return "a transpose to a map that not every reader reads as one"
    return None


def _writes_map(op) -> bool:
    """op is a CNN kernel that writes its 4-D result in NC1HWC0 (a map
    transpose to a map is one)."""
    if not isinstance(op, Operation) or engine_of(op) != AI_CORE or kernel_of(op) is not None:
        return False
    if isinstance(op, g.TransposeOp):
        mt = map_transpose(op)
        return mt is not None and mt.kind == "to_map" and rank(op.output) == 4
    return isinstance(op, MAP_WRITERS) and rank(op.results[0]) == 4


def _viewed_as_rows(op: Operation) -> bool:
    """op is a view of a map whose every reader transposes it to rows
    (SegFormer's hidden states: a map for the next conv and, viewed as
    [1, C, H*W], rows for the next layer_norm)."""
    if not isinstance(op, g.VIEW_OPS):
        return False
    readers = [u.operation for u in op.results[0].uses]
    return bool(readers) and all((mt := map_transpose(r)) is not None and mt.kind == "to_rows" for r in readers)


@rule(g.TransposeOp)
def _transpose(op: g.TransposeOp, ctx: Context) -> str | None:
    if (mt := map_transpose(op)) is not None:
        return _map_transpose_refusal(op, mt, ctx)
    # shufflenet's reshape -> transpose -> reshape of a map's channels
    x = op.input
    while isinstance(x.owner, g.VIEW_OPS):
        x = x.owner.operands[0]
    perm = op.ints("perm", ())
    ok = x is not op.input and rank(x) == 4 and isinstance(x.owner, Operation) and engine_of(x.owner) == AI_CORE
    if not ok or channel_permutation(g.shape_of(op.input), perm, *g.shape_of(x)[1:]) is None:
        return f"graph.transpose perm {tuple(perm)} not lowered (only a channel shuffle of a 4-D map)"
    if math.prod(g.shape_of(x)[2:]) == 1:  # assign-layouts reads the view as a row, the kernel wants a map view
        return "a channel shuffle of a 1x1 map (its view is a row) is not lowered"
    return None


@rule(*MAP_ELEMENTWISE)
def _elementwise(op: Operation, ctx: Context) -> str | None:
    out = op.results[0]
    if (why := _map(out)) is not None:
        return f"elementwise on {shapes.fmt(g.shape_of(out))}: {why}"
    computed = [v for v in op.operands if not is_constant(v)]
    if computed and all(written_as_rows(v) for v in computed):  # (a map kernel would need a transdata each way)
        return "every operand is rows a structured kernel writes (a vector kernel reads them in place)"
    channels = g.shape_of(out)[1]
    fp16 = ctx is not None and ctx.fp16  # _reads_as_map asks without a context
    if isinstance(op, g.BatchNormOp):
        return None if all(is_constant(v) for v in op.operands[1:]) else "batch-norm parameters must be constant"
    if isinstance(op, g.FusionOp):
        body = [o for o in op.body.block.ops if not isinstance(o, g.YieldOp | g.ConstantOp | g.FillOp)]
        for inner in body:
            if isinstance(inner, MAP_UNARY_OPS):
                if is_constant(inner.operands[0]):
                    return f"{inner.name} of a constant (fold it)"
                continue
            if not isinstance(inner, FUSION_BODY_OPS):
                return f"{inner.name} is not lowered in elementwise kernels"
            for v in inner.operands:  # constants loop fusion cloned into the body
                if is_constant(v) and not _broadcastable_constant(v, channels):
                    return f"constant {shapes.fmt(g.shape_of(v))} is neither per-channel nor a scalar"
            first = inner.operands[0]
            if len(inner.operands) > 1 and is_constant(first) and not isinstance(inner, (*SCALE_EQUIVARIANT_BINARY, g.SumOp)):
                return f"constant-first {inner.name} not lowered"
        for v in op.inputs:
            if is_constant(v) and not _broadcastable_constant(v, channels):  # the kernel has no constant maps
                return f"constant {shapes.fmt(g.shape_of(v))} is neither per-channel nor a scalar"
            if g.shape_of(v) != g.shape_of(out) and not _broadcastable_constant(v, channels) \
                    and not _channel_map(v, channels, fp16):
                return f"operand {shapes.fmt(g.shape_of(v))} is neither a map nor a per-channel/scalar constant"
        return _gate_use_refusal(op, channels, fp16)

    first = True
    for v in op.operands:
        if is_constant(v) and not _broadcastable_constant(v, channels):  # the kernel has no constant maps
            return f"constant {shapes.fmt(g.shape_of(v))} is neither per-channel nor a scalar"
        if g.shape_of(v) != g.shape_of(out):
            if _channel_map(v, channels, fp16) and isinstance(op, SCALE_EQUIVARIANT_BINARY):
                continue  # a squeeze-excite scale: one value per channel, broadcast over pixels
            if not _broadcastable_constant(v, channels):
                return f"operand {shapes.fmt(g.shape_of(v))} is neither a map nor a per-channel/scalar constant"
            if first and not isinstance(op, SCALE_EQUIVARIANT_BINARY) and not isinstance(op, g.SumOp):
                return f"constant-first {op.name} not lowered"
        first = False
    return None


def _gate_use_refusal(op: g.FusionOp, channels: int, fp16: bool) -> str | None:
    """The map kernel reads a [1, C, 1, 1] gate only as the second operand
    of a binary op with a map (or either operand of a commutative one): any
    other use of it in the fusion body (a unary op, gate with constant) is
    refused here rather than miscompiled."""
    out = g.shape_of(op.results[0])
    kind = {arg: "gate" if _channel_map(x, channels, fp16) and g.shape_of(x) != out else "const" if is_constant(x) else "map"
            for arg, x in zip(op.body.block.args, op.inputs)}
    for inner in op.body.block.ops:
        if isinstance(inner, g.YieldOp | g.ConstantOp | g.FillOp):
            continue
        kinds = [kind.get(v, "const") for v in inner.operands]
        if "gate" in kinds:
            commutative = isinstance(inner, (*SCALE_EQUIVARIANT_BINARY, g.SumOp))
            if len(kinds) != 2 or "map" not in kinds or (kinds[0] == "gate" and not commutative):
                return f"{inner.name} of the [1, {channels}, 1, 1] gate (only a map combined with it is lowered)"
        for r in inner.results:
            kind[r] = "map" if "map" in kinds else "const"
    return None


def _channel_map(v: SSAValue, channels: int, fp16: bool = False) -> bool:
    """A computed [1, C, 1, 1] map (squeeze-excite's gate): the map kernels
    read its C0 values of each slice and broadcast them over the pixels. In
    force_fp16 not one a structured kernel writes row-major (there is no
    fp16 NCHW -> NC1HWC0 transdata for it)."""
    if fp16 and isinstance(v.owner, Operation) and kernel_of(v.owner) in STRUCTURED_FAMILIES:
        return False
    return not is_constant(v) and tuple(g.shape_of(v)) == (1, channels, 1, 1) and _map(v) is None


def _broadcastable_constant(v: SSAValue, channels: int) -> bool:
    """A constant the map kernels broadcast: a scalar, or one value per
    channel ((C,1,1) or (1,C,1,1): numpy aligns a (C,) constant with W)."""
    if not is_constant(v):
        return False
    s = tuple(g.shape_of(v))
    s = (1,) * (4 - len(s)) + s if len(s) <= 4 else s
    return all(d == 1 for d in s) or s == (1, channels, 1, 1)


@rule(g.ConcatOp)
def _concat(op: g.ConcatOp, ctx: Context) -> str | None:
    out = op.output
    if rank(out) != 4 or op.int_("axis", 0) % 4 != 1:
        return "only a channel concat of 4-D maps is lowered"
    if (why := _map(out)) is not None:
        return why
    if any(is_constant(x) for x in op.inputs):
        return "concat of a constant operand is not lowered"
    if all(written_as_rows(x) for x in op.inputs):  # (a map concat would need a transdata each way)
        return "every operand is rows a structured kernel writes (a vector copy reads them in place)"
    return None


@rule(g.SpaceToDepthOp)
def _space_to_depth(op: g.SpaceToDepthOp, ctx: Context) -> str | None:
    return space_to_depth_refusal(op.input, op.int_("blocksize", 1))


def space_to_depth_refusal(x: SSAValue, blocksize: int) -> str | None:
    """None when the space-to-depth kernel lowers a space_to_depth of `x`
    with cells of `blocksize`, else why not (also asked by
    conv-space-to-depth before it makes one)."""
    if not shapes.is_static(g.shape_of(x)) or g.shape_of(x)[0] != 1:
        return "only a static batch-1 space_to_depth is lowered"
    if blocksize**2 > FRACTAL:  # its on-chip buffers grow with the cube of s: built and tested up to 4x4
        return f"blocksize {blocksize}: cells of at most {FRACTAL} pixels are lowered"
    if not is_f32(x):
        return "only an fp32 input is lowered"
    return None


@rule(*g.VIEW_OPS, g.TransDataOp)
def _free(op: Operation, ctx: Context) -> str | None:
    return None


def _reads_as_map(op: Operation, v: SSAValue, fp16: bool) -> bool:
    """op reads the 4-D operand v in NC1HWC0 (assign-layouts gives a graph
    input a transdata to it): map ops, channel concats, 4-D elementwise ops
    on operands of the result's shape (as LayoutAssigner.accepted)."""
    if rank(v) != 4:
        return False
    if isinstance(op, MAP_OPS):
        return True
    if isinstance(op, g.ConcatOp):
        return rank(op.output) == 4 and op.int_("axis", 0) % 4 == 1
    if isinstance(op, g.SliceOp | g.SplitOp):
        return channel_boxes_refusal(op) is None and not written_as_rows(op.operands[0])
    if isinstance(op, MAP_ELEMENTWISE):
        # only if the map kernels take it: otherwise a vector kernel reads the logical order
        return (rank(op.results[0]) == 4 and g.shape_of(v) == g.shape_of(op.results[0])
                and _elementwise(op, None) is None)  # type: ignore[arg-type]
    return False


def ai_core_refusal(op: Operation, ctx: Context) -> str | None:
    """None when convert-graph-to-tile lowers op to AI-core kernels, else why not."""
    check = RULES.get(type(op))
    if check is None:
        return f"no AI-core kernel for {op.name}"
    if not isinstance(op, g.VIEW_OPS) and any(v in ctx.fp32_inputs for v in op.operands):
        return "force_fp16: reads a non-4-D fp32 graph input (no cast kernel for it on the AI core)"
    # (space_to_depth, as a transdata, reads whatever type its input is stored in)
    if not isinstance(op, g.VIEW_OPS + (g.SpaceToDepthOp,)) and batch_slice(op) is None and any(
            v in ctx.fp32_maps and not _reads_as_map(op, v, ctx.fp16) for v in op.operands):
        return "force_fp16: reads a 4-D fp32 graph input in its logical order (only map kernels get an input transdata)"
    for v in (*op.operands, *op.results):
        if not is_f32(v) and not isinstance(op, g.VIEW_OPS):  # a view aliases any element type
            return f"element type {v.type.element_type} is not lowered on the AI core (f32 only)"  # type: ignore[attr-defined]
        if not shapes.is_static(g.shape_of(v)):
            return "dynamic shape"
    return check(op, ctx)
