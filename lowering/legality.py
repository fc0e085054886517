"""The legality table: which graph ops convert-graph-to-tile lowers to
AI-core kernels, for which shapes, element types and attributes.

One definition, read by the partition (`graph-partition`, which places every
other op on the AI CPU with the reason) and by convert-graph-to-tile (which
lowers an op only where this table says it can). Each entry states the
preconditions of one lowering pattern; `ai_core_refusal(op, ...)` returns None
when a pattern applies, else the reason, e.g. `no AI-core kernel for
graph.where` or `graph.transpose perm (0, 2, 1, 3) not lowered (only a
channel shuffle of a 4-D map)`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import Float32Type, IntegerType, TensorType
from xdsl.ir import Block, Operation, SSAValue

from gedialects.graph import ops as g
from gedialects.graph import shapes
from gedialects.npu.isa import FRACTAL
from gedialects.tile.transforms.pool_tiling import MAX_REDUCE_PIXELS

AI_CORE = "AI_CORE"
AI_CPU = "AI_CPU"
ENGINE_ATTR = "ge.engine"
REASON_ATTR = "ge.reason"

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


def engine_of(op: Operation) -> str:
    """Where the partition placed op (AI_CORE unless annotated otherwise)."""
    attr = op.attributes.get(ENGINE_ATTR)
    return getattr(attr, "data", AI_CORE)


def is_constant(v: SSAValue) -> bool:
    return isinstance(v.owner, g.ConstantOp | g.FillOp)


def _rank(v: SSAValue) -> int:
    return len(g.shape_of(v))


def _is_f32(v: SSAValue) -> bool:
    return isinstance(v.type, TensorType) and isinstance(v.type.element_type, Float32Type)


def _is_int(v: SSAValue) -> bool:
    """An i32 or i64 tensor (the integers the AI core reads)."""
    element = getattr(v.type, "element_type", None)
    return isinstance(element, IntegerType) and element.width.data in (32, 64)


def _nonnegative_activation(op: Operation) -> bool:
    act, params = op.str_("activation", ""), op.floats("activation_params")  # type: ignore[attr-defined]
    return act in ("relu", "sigmoid") or act == "clip" and params[0] >= 0


def nonnegative_values(block: Block) -> set[SSAValue]:
    """Values known to be >= 0 (a zero halo is exact for max-pooling them)."""
    nonneg: set[SSAValue] = set()
    for op in block.ops:
        if isinstance(op, g.ConvOp) and _nonnegative_activation(op) or isinstance(op, g.ReluOp | g.SigmoidOp):
            nonneg.add(op.results[0])
        elif isinstance(op, g.FusionOp):
            y = op.body.block.last_op
            if y is not None and y.operands and isinstance(y.operands[0].owner, g.ReluOp):
                nonneg.add(op.results[0])
        elif isinstance(op, g.MaxPoolOp | g.AvgPoolOp | g.GlobalAvgPoolOp | g.LrnOp) and op.operands[0] in nonneg:
            nonneg.add(op.results[0])
        elif isinstance(op, g.ConcatOp) and all(x in nonneg for x in op.inputs):
            nonneg.add(op.results[0])
        elif isinstance(op, g.VIEW_OPS + (g.TransposeOp, g.TransDataOp)) and op.operands[0] in nonneg:
            nonneg.add(op.results[0])
    return nonneg


class Context:
    """What a rule may need beyond the op: the precision mode and facts about
    the function (non-negative values)."""

    def __init__(self, fn: func.FuncOp, precision: str):
        self.precision = precision
        self.fp16 = precision == "force_fp16"
        self.nonneg = nonnegative_values(fn.body.block)
        # force_fp16 stores activations in fp16 but graph inputs stay fp32:
        # only 4-D maps get a conversion kernel (the input transdata)
        self.fp32_inputs = {a for a in fn.args if self.fp16 and _rank(a) != 4 and _is_f32(a)}
        # ... and only where they are read as maps (NC1HWC0): a gemm, softmax
        # or transpose reads a 4-D input (or a view of one) in its logical
        # order, with no transdata, and would take its fp32 bytes for fp16
        self.fp32_maps = {a for a in fn.args if self.fp16 and _rank(a) == 4 and _is_f32(a)}
        for op in fn.body.block.ops:  # views alias the input's bytes
            if isinstance(op, g.VIEW_OPS) and op.operands and op.operands[0] in self.fp32_maps | self.fp32_inputs:
                # a 4-D view of any fp32 input is a map the input transdata converts
                # (Whisper's [1, 80, 3000] features as a conv's [1, 80, 1, 3000])
                for r in op.results:
                    (self.fp32_maps if _rank(r) == 4 else self.fp32_inputs).add(r)


Rule = Callable[[Operation, Context], "str | None"]
RULES: dict[type[Operation], Rule] = {}


def rule(*op_types: type[Operation]):
    def register(fn: Rule) -> Rule:
        for t in op_types:
            RULES[t] = fn
        return fn

    return register


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
    if _rank(op.input) != 4:
        return f"{_rank(op.input) - 2}-d convolution not lowered (2-d only)"
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
    if _written_as_rows(op.operands[0]):  # (a map kernel would need a transdata each way)
        return "a slice of rows a structured kernel writes (a vector copy reads them in place)"
    return channel_boxes_refusal(op)  # whole C0 slices: a view; others: a 0/1 1x1 conv selects them


def batch_slice(op: Operation) -> int | None:
    """The image a slice takes from a batch of 4-D tensors (map-unbatch's
    slices), else None."""
    if not isinstance(op, g.SliceOp) or _rank(op.input) != 4 or op.ints("steps") or g.shape_of(op.output)[0] != 1:
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
    c0 = 32 // _compute_bytes(fp16)
    for box in copy_boxes(op):  # type: ignore[union-attr]
        if box.src_offsets[1] % c0 or box.shape[1] % c0:  # type: ignore[index]
            return f"channels [{box.src_offsets[1]}, {box.src_offsets[1] + box.shape[1]}) are not whole C0 = {c0} slices"  # type: ignore[index]
    return None


@rule(g.GemmOp, g.MatMulOp)
def _gemm(op: Operation, ctx: Context) -> str | None:
    a, b = op.operands[0], op.operands[1]
    if not is_constant(b):
        return "the right operand must be constant (a weight)"
    if _rank(b) != 2:
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
        x = op.input if _rank(op.input) == 4 else op.input.owner.operands[0]  # type: ignore[union-attr]
        if not _writes_map(x.owner):
            return "a transpose to rows of a tensor that is not a map a CNN kernel writes"
        return None
    maps = [op.output] if _rank(op.output) == 4 else [u.operation.results[0] for u in op.output.uses]
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
        return mt is not None and mt.kind == "to_map" and _rank(op.output) == 4
    return isinstance(op, MAP_WRITERS) and _rank(op.results[0]) == 4


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
    ok = x is not op.input and _rank(x) == 4 and isinstance(x.owner, Operation) and engine_of(x.owner) == AI_CORE
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
    if computed and all(_written_as_rows(v) for v in computed):  # (a map kernel would need a transdata each way)
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


def _written_as_rows(v: SSAValue) -> bool:
    """v (or what it views) is the result of a structured kernel: row-major."""
    while isinstance(v.owner, g.VIEW_OPS):
        v = v.owner.operands[0]
    return isinstance(v.owner, Operation) and kernel_of(v.owner) in STRUCTURED_FAMILIES


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
    if _rank(out) != 4 or op.int_("axis", 0) % 4 != 1:
        return "only a channel concat of 4-D maps is lowered"
    if (why := _map(out)) is not None:
        return why
    if any(is_constant(x) for x in op.inputs):
        return "concat of a constant operand is not lowered"
    if all(_written_as_rows(x) for x in op.inputs):  # (a map concat would need a transdata each way)
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
    if not _is_f32(x):
        return "only an fp32 input is lowered"
    return None


@rule(*g.VIEW_OPS, g.TransDataOp)
def _free(op: Operation, ctx: Context) -> str | None:
    return None


def _reads_as_map(op: Operation, v: SSAValue, fp16: bool) -> bool:
    """op reads the 4-D operand v in NC1HWC0 (assign-layouts gives a graph
    input a transdata to it): map ops, channel concats, 4-D elementwise ops
    on operands of the result's shape (as LayoutAssigner.accepted)."""
    if _rank(v) != 4:
        return False
    if isinstance(op, MAP_OPS):
        return True
    if isinstance(op, g.ConcatOp):
        return _rank(op.output) == 4 and op.int_("axis", 0) % 4 == 1
    if isinstance(op, g.SliceOp | g.SplitOp):
        return channel_boxes_refusal(op) is None and not _written_as_rows(op.operands[0])
    if isinstance(op, MAP_ELEMENTWISE):
        # only if the map kernels take it: otherwise a vector kernel reads the logical order
        return (_rank(op.results[0]) == 4 and g.shape_of(v) == g.shape_of(op.results[0])
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
        if not _is_f32(v) and not isinstance(op, g.VIEW_OPS):  # a view aliases any element type
            return f"element type {v.type.element_type} is not lowered on the AI core (f32 only)"  # type: ignore[attr-defined]
        if not shapes.is_static(g.shape_of(v)):
            return "dynamic shape"
    return check(op, ctx)


# ----------------------------------------------------------------- the vector family
# Ops the CNN patterns above refuse may still have a vector kernel of
# row-major tensors (lowering/graph_to_tile/vector.py): elementwise ops and
# fusions of any rank with broadcasting, softmax, layer_norm, reductions
# along the trailing dims. The partition records the family that lowers an
# op as `ge.kernel`; assign-layouts gives vector kernels the logical order.

KERNEL_ATTR = "ge.kernel"
VECTOR_KERNEL = "vector"
VECTOR_RULES: dict[type[Operation], Rule] = {}


def kernel_of(op: Operation) -> str | None:
    """The kernel family the partition chose for an AI-core op (None: the CNN patterns)."""
    attr = op.attributes.get(KERNEL_ATTR)
    return getattr(attr, "data", None)


def vector_rule(*op_types: type[Operation]):
    def register(fn: Rule) -> Rule:
        for t in op_types:
            VECTOR_RULES[t] = fn
        return fn

    return register


def _compute_bytes(fp16: bool) -> int:
    """Bytes of an element the AI core computes on in a precision mode."""
    return 2 if fp16 else 4


def _vector_elementwise(op: Operation, ctx: Context) -> str | None:
    from lowering.map_bodies import ELEMENTWISE, fusion_tensor_constants, scalar_value

    out = op.results[0]
    operands = [v for v in op.operands if not (is_constant(v) and scalar_value(v) is not None)]
    if isinstance(op, g.FusionOp):
        if len({g.shape_of(r) for r in op.results}) != 1:
            return "a fusion whose results differ in shape is not lowered"
        integers = {a for a, v in zip(op.body.block.args, op.inputs) if _is_int(v)}
        for inner in op.body.block.ops:
            if isinstance(inner, g.YieldOp):
                continue
            if isinstance(inner, g.ConstantOp | g.FillOp):
                if _is_int(inner.results[0]):
                    integers.add(inner.results[0])
                continue
            if type(inner) not in ELEMENTWISE:
                return f"{inner.name} has no vector kernel"
            if (why := _integer_use(inner, integers)) is not None:
                return why
            if _is_int(inner.results[0]):
                integers.add(inner.results[0])
        operands += fusion_tensor_constants(op)  # loaded like operands
    elif type(op) not in ELEMENTWISE:
        return f"no AI-core kernel for {op.name}"
    elif (why := _integer_use(op, {v for v in op.operands if _is_int(v)})) is not None:
        return why
    shape = g.shape_of(out)
    for v in operands:
        if not shapes.is_static(g.shape_of(v)) or len(g.shape_of(v)) > len(shape):
            return "an operand does not broadcast to the result"
    return None


def _integer_use(op: Operation, integers: set[SSAValue]) -> str | None:
    """Integers reach the vector unit as fp32 (vconv): a cast of them (to bool:
    != 0; to float: rounded, as ONNX Cast does) is exact, arithmetic and
    comparisons are not beyond 2^24."""
    if isinstance(op, g.CastOp) or not any(v in integers for v in op.operands):
        return None
    return (f"{op.name} of integers (the vector unit computes on them in fp32, exact only below 2^24; "
            f"the AI CPU computes them exactly)")


def _unit_reduction(length: int) -> str | None:
    """A reduction over one element has no column to reduce into (the
    expansion reduces along rows wider than 1)."""
    return "a reduction over one element" if length == 1 else None


@vector_rule(g.SoftmaxOp, g.LogSoftmaxOp)
def _vector_softmax(op: Operation, ctx: Context) -> str | None:
    s = g.shape_of(op.operands[0])
    axis = op.int_("axis", -1) % len(s)
    if math.prod(s[axis + 1 :]) != 1:
        return f"softmax along axis {axis} of {shapes.fmt(s)} is not along the last non-unit dim"
    return _unit_reduction(s[axis])


@vector_rule(g.LayerNormOp)
def _vector_layer_norm(op: g.LayerNormOp, ctx: Context) -> str | None:
    s = g.shape_of(op.input)
    axis = op.int_("axis", -1) % len(s)
    cols = math.prod(s[axis:])
    for p in (op.scale, op.bias):
        if p is not None and math.prod(g.shape_of(p)) != cols:
            return "scale/bias that do not cover the normalised dims"
    if op.residual is not None and g.shape_of(op.residual) != s:
        return "a broadcast residual is not lowered"
    return _unit_reduction(cols)


@vector_rule(g.ReduceMeanOp, g.ReduceSumOp, g.ReduceMaxOp)
def _vector_reduce(op: g.ReduceOp, ctx: Context) -> str | None:
    s = g.shape_of(op.input)
    axes = sorted(a % len(s) for a in (op.ints("axes") or range(len(s))))
    if axes != list(range(axes[0], len(s))):
        return f"reduction over axes {tuple(axes)} of {shapes.fmt(s)}: only trailing axes are lowered"
    return _unit_reduction(math.prod(s[axes[0] :]))


@dataclass(frozen=True)
class CopyBox:
    """One box copy of a data-movement op: src[src_offsets : + shape] ->
    dst[dst_offsets : + shape] (offsets None: the whole tensor); `src_steps`:
    every k-th source element along a dim (a strided slice; None: all 1)."""

    src: SSAValue
    src_offsets: tuple[int, ...] | None
    dst: SSAValue
    dst_offsets: tuple[int, ...] | None
    shape: tuple[int, ...]
    src_steps: tuple[int, ...] | None = None


def copy_boxes(op: Operation) -> list[CopyBox] | str:
    """The box copies a slice, split or concat is (one kernel each), or why
    it is not one: the one definition the legality rule and the pattern
    (graph_to_tile/copy.py) share."""
    if isinstance(op, g.SliceOp):
        x = g.shape_of(op.input)
        starts, ends = op.ints("starts"), op.ints("ends")
        axes = op.ints("axes") or tuple(range(len(starts)))
        steps = op.ints("steps") or (1,) * len(starts)
        offsets, strides = [0] * len(x), [1] * len(x)
        for st, en, ax, sp in zip(starts, ends, axes, steps):
            if sp < 1:
                return f"a slice with step {sp} (DMA moves forwards)"
            if sp != 1 and ax % len(x) == len(x) - 1:
                return f"a slice with step {sp} along the innermost dim (DMA moves contiguous rows)"
            offsets[ax % len(x)] = slice(st, en, sp).indices(x[ax % len(x)])[0]
            strides[ax % len(x)] = sp
        steps_or_none = tuple(strides) if any(sp != 1 for sp in strides) else None
        return [CopyBox(op.input, tuple(offsets), op.output, None, tuple(g.shape_of(op.output)), steps_or_none)]
    if isinstance(op, g.SplitOp):
        axis, boxes, at = op.int_("axis", 0) % len(g.shape_of(op.input)), [], 0
        for out in op.outputs:
            offsets = [0] * len(g.shape_of(op.input))
            offsets[axis] = at
            boxes.append(CopyBox(op.input, tuple(offsets), out, None, tuple(g.shape_of(out))))
            at += g.shape_of(out)[axis]
        return boxes
    if isinstance(op, g.ConcatOp):
        rank = len(g.shape_of(op.output))
        axis = op.int_("axis", 0) % rank
        if rank == 4 and axis == 1 and not all(_written_as_rows(x) for x in op.inputs):
            return "a channel concat of maps is written in place by its producers (the CNN patterns)"
        boxes, at = [], 0
        for x in op.inputs:
            offsets = [0] * rank
            offsets[axis] = at
            boxes.append(CopyBox(x, None, op.output, tuple(offsets), tuple(g.shape_of(x))))
            at += g.shape_of(x)[axis]
        return boxes
    return f"no AI-core kernel for {op.name}"


@vector_rule(g.SliceOp, g.SplitOp, g.ConcatOp)
def _vector_copy(op: Operation, ctx: Context) -> str | None:
    boxes = copy_boxes(op)
    if isinstance(boxes, str):
        return boxes
    if all(is_constant(box.src) for box in boxes):
        return "a copy of constants only (fold it)"
    return None  # a constant box (ViT's class token before the patches) is a GM constant of the kernel


@vector_rule(g.ExpandOp)
def _vector_expand(op: g.ExpandOp, ctx: Context) -> str | None:
    return None  # a broadcasting map


@vector_rule(g.TransposeOp)
def _vector_transpose(op: g.TransposeOp, ctx: Context) -> str | None:
    s = g.shape_of(op.input)
    perm = [p % len(s) for p in op.ints("perm", ())] or list(range(len(s)))[::-1]
    if perm[-1] != len(s) - 1:
        return f"graph.transpose perm {tuple(perm)} moves the innermost dim (DMA moves whole rows)"
    if is_constant(op.input):
        return "a transpose of a constant (fold it)"
    if s[-1] == 1:  # e.g. a channel shuffle of a [1, C, 1, 1] map, whose views assign-layouts reads as maps
        return "a transpose of rows of one element"
    return None


def gather_view(op: g.GatherOp) -> tuple[int, int, int]:
    """[A, V, B]: a gather's data as rows of B elements, V per index range."""
    shape = g.shape_of(op.input)
    axis = op.int_("axis", 0) % len(shape)
    return math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1 :])


@vector_rule(g.GatherOp)
def _vector_gather(op: g.GatherOp, ctx: Context) -> str | None:
    element = op.indices.type.element_type  # type: ignore[attr-defined]
    if not isinstance(element, IntegerType) or element.width.data not in (32, 64):
        return f"indices of type {element} (i32 or i64 only)"
    return None


def vector_refusal(op: Operation, ctx: Context) -> str | None:
    """None when the vector family lowers op, else why not."""
    from lowering.map_bodies import ELEMENTWISE

    if type(op) not in VECTOR_RULES and type(op) not in ELEMENTWISE and not isinstance(op, g.FusionOp):
        return f"no AI-core kernel for {op.name}"
    if isinstance(op, g.GatherOp):
        integer_operands = {op.indices}
    elif type(op) in ELEMENTWISE or isinstance(op, g.FusionOp):
        integer_operands = {v for v in op.operands if _is_int(v)}  # converted to fp32 where loaded
    else:
        integer_operands = set()
    for v in (*op.operands, *op.results):
        if not _is_f32(v) and not is_constant(v) and v not in integer_operands:
            return f"element type {v.type.element_type} is not lowered on the AI core (f32 only)"  # type: ignore[attr-defined]
        if not shapes.is_static(g.shape_of(v)):
            return "dynamic shape"
        if 0 in g.shape_of(v):
            return "an empty tensor"
    check = VECTOR_RULES.get(type(op), _vector_elementwise)
    return check(op, ctx)


# ----------------------------------------------------------------- the cube family
# graph.matmul / graph.gemm of row-major tensors the CNN gemm refuses
# (lowering/graph_to_tile/cube.py): any M, N and K (padded to fractals and
# blocks on chip), batch dims broadcast, either operand from GM.

CUBE_KERNEL = "cube"
STRUCTURED_FAMILIES = (VECTOR_KERNEL, CUBE_KERNEL)
"""Kernel families built as structured tile kernels: they read and write row-major (logical) tensors."""


IDENTITY_PRODUCT_LIMIT = 512
"""Longest block of a row an identity-product transpose contracts over (bs x bs MACs per block of a row)."""


def identity_block(b: int) -> int | None:
    """The block length bs an identity-product transpose of rows of b
    elements works in: b itself up to IDENTITY_PRODUCT_LIMIT, else the
    largest divisor of b up to it (the rows are read in b / bs blocks), or
    None when that is shorter than a fractal (16)."""
    if b <= IDENTITY_PRODUCT_LIMIT:
        return b
    bs = max(d for d in range(1, IDENTITY_PRODUCT_LIMIT + 1) if b % d == 0)
    return bs if bs >= 16 else None


ATTENTION_WIDTH_LIMIT = 512
"""Widest head (q/k and v rows) the attention kernel takes: a 16-row query
tile and a 16-key block of it fit L0A/L0B on every target."""


def attention_refusal(op: g.AttentionOp, ctx: Context) -> str | None:
    """None when the cube family runs op as one flash-attention kernel
    (graph_to_tile/attention.py), else why not."""
    for v in (*op.operands, *op.results):
        if not _is_f32(v):
            return f"element type {v.type.element_type} is not lowered on the AI core (f32 only)"  # type: ignore[attr-defined]
        if not shapes.is_static(g.shape_of(v)):
            return "dynamic shape"
    sq, sk, sv = (g.shape_of(x) for x in (op.q, op.k, op.v))
    d, keys, dv = sq[-1], sk[-2], sv[-1]
    if max(d, dv) > ATTENTION_WIDTH_LIMIT:
        return f"heads of {d} (values {dv}) are wider than {ATTENTION_WIDTH_LIMIT}"
    if keys % FRACTAL and keys > ATTENTION_WIDTH_LIMIT:
        return f"{keys} keys are not whole 16-key blocks and more than {ATTENTION_WIDTH_LIMIT} (one block)"
    for m in op.masks:
        if not g.shape_of(m) or g.shape_of(m)[-1] != keys:
            return f"mask {shapes.fmt(g.shape_of(m))} broadcasts over the keys"
    if not ctx.fp16:  # fp32 values are read as v^T, written by an identity product first
        if folded_transpose(op.v) is not None:
            return "fp32 values read through a transpose (load_2d transposes fp16 fractals only)"
        if identity_block(dv) is None:
            return (f"fp32 values with rows of {dv} elements, which have no divisor from 16 to "
                    f"{IDENTITY_PRODUCT_LIMIT} (the blocks of their identity-product transpose)")
    return None


def cube_refusal(op: Operation, ctx: Context) -> str | None:
    """None when the cube family lowers op, else why not."""
    if isinstance(op, g.AttentionOp):
        return attention_refusal(op, ctx)
    if not isinstance(op, g.MatMulOp | g.GemmOp):
        return f"no AI-core kernel for {op.name}"
    for v in (*op.operands, *op.results):
        if not _is_f32(v):
            return f"element type {v.type.element_type} is not lowered on the AI core (f32 only)"  # type: ignore[attr-defined]
        if not shapes.is_static(g.shape_of(v)):
            return "dynamic shape"
    a, b = op.operands[0], op.operands[1]
    sa, sb = g.shape_of(a), g.shape_of(b)
    if len(sa) < 2 or len(sb) < 2:
        return "a 1-D matmul operand is not lowered on the cube"
    gemm = isinstance(op, g.GemmOp)
    if gemm and op.int_("trans_a", 0):
        return "trans_a not lowered"
    trans_b = gemm and bool(op.int_("trans_b", 0))
    n = sb[-2] if trans_b else sb[-1]
    perm = folded_transpose(b)
    if perm is not None and perm[-1] != len(perm) - 1:
        trans_b = True  # the product reads the transpose's source as b^T
    if not is_constant(b) and not trans_b and not ctx.fp16:
        # fp32 is not transposed on the way to L0B: an identity product
        # writes b^T first (graph_to_tile/cube.py), from a tensor of its own
        if perm is not None:
            return "an fp32 row-major right operand read through a transpose (load_2d transposes fp16 fractals only)"
        if identity_block(n) is None:
            return (f"an fp32 row-major right operand with rows of {n} elements, which have no divisor from 16 "
                    f"to {IDENTITY_PRODUCT_LIMIT} (the blocks of its identity-product transpose)")
    bias = op.operands[2] if len(op.operands) > 2 else None
    if bias is not None:
        sbias = g.shape_of(bias)
        if len(sbias) > len(g.shape_of(op.results[0])) or (sbias and sbias[-1] not in (1, n)) or (sbias and sbias[-1] == 1 and n > 1):
            return f"bias {shapes.fmt(sbias)} is not a row of {n}"
    return None


def folded_transpose(v: SSAValue) -> tuple[int, ...] | None:
    """foldable_transpose(v), unless the partition placed that transpose
    as a kernel of its own (vector family or AI CPU): then its readers read
    its result, not its source."""
    perm = foldable_transpose(v)
    if perm is not None and (kernel_of(v.owner) == VECTOR_KERNEL or engine_of(v.owner) == AI_CPU):  # type: ignore[arg-type]
        return None
    return perm


def foldable_transpose(v: SSAValue) -> tuple[int, ...] | None:
    """The perm of v when v is a transpose only products (matmuls, attention)
    read and the cube can read its source through permuted strides instead
    (attention's head split and keys), else None: as the left operand the innermost dim must stay
    innermost; as the right operand it may also swap with the one before
    (the source is then read as b^T)."""
    op = v.owner
    if not isinstance(op, g.TransposeOp) or is_constant(op.input):
        return None
    n = len(g.shape_of(op.input))
    perm = tuple(p % n for p in op.ints("perm", ())) or tuple(range(n))[::-1]
    users = [u.operation for u in v.uses]
    if n < 2 or not users:
        return None
    for u in users:
        if isinstance(u, g.AttentionOp):  # q, keys and values are read as rows
            if perm[-1] != n - 1 or v in u.masks or sum(x is v for x in u.operands) > 1:
                return None
            continue
        if not isinstance(u, g.MatMulOp) or u.operands[0] is u.operands[1]:
            return None
        as_b = u.operands[1] is v
        if not (perm[-1] == n - 1 or as_b and perm[-2] == n - 1):
            return None
    return perm


def group_swap(op: g.TransposeOp) -> tuple[int, int, int] | None:
    """(batch, a, b) when op's perm keeps a prefix of dims and swaps the two
    groups after it -- x viewed as [batch, a, b] becomes [batch, b, a]
    ((0, 2, 1), NCHW <-> NHWC, a window's (0, 2, 3, 1)) -- else None."""
    shape = g.shape_of(op.input)
    n = len(shape)
    perm = [p % n for p in op.ints("perm", ())] or list(range(n))[::-1]
    p = 0
    while p < n and perm[p] == p:
        p += 1
    if p >= n - 1:
        return None
    q = perm[p]
    if perm[p:] != list(range(q, n)) + list(range(p, q)):
        return None
    return math.prod(shape[:p]), math.prod(shape[p:q]), math.prod(shape[q:])


def cube_transpose_refusal(op: g.TransposeOp, ctx: Context) -> str | None:
    """None when the cube runs this transpose as a product with an identity:
    y[.., j, i] = sum_k I[j, k] x[.., i, k] (exact for finite values: every
    product is by 1 or 0; an inf or NaN in a row of x makes that row of
    outputs NaN)."""
    if not _is_f32(op.input) or not shapes.is_static(g.shape_of(op.input)):
        return "a transpose on the cube takes static f32 tensors"
    swap = group_swap(op)
    if swap is None:
        return f"perm {op.ints('perm', ())} is not a swap of two dim groups"
    _, _, b = swap
    if identity_block(b) is None:
        return (f"rows of {b} elements have no divisor from 16 to {IDENTITY_PRODUCT_LIMIT} "
                "(the blocks of an identity-product transpose)")
    return None


def choose_kernel(op: Operation, ctx: Context) -> tuple[str | None, str | None]:
    """(family, None) for the patterns that lower op, or (None, reason)."""
    why = ai_core_refusal(op, ctx)
    if why is None:
        return "cnn", None
    if isinstance(op, g.GemmOp | g.MatMulOp | g.AttentionOp):
        cube_why = cube_refusal(op, ctx)
        return (CUBE_KERNEL, None) if cube_why is None else (None, f"{why}; on the cube: {cube_why}")
    if isinstance(op, g.TransposeOp) and foldable_transpose(op.output) is not None:
        users = [u.operation for u in op.output.uses]
        refusals = [r for r in (cube_refusal(u, ctx) for u in users) if r is not None]
        if not refusals:
            return CUBE_KERNEL, None  # folded into the products that read it
        why = f"{why}; read by a product that the cube refuses: {refusals[0]}"
    if isinstance(op, g.VIEW_OPS + (g.TransDataOp, g.SpaceToDepthOp, g.ConvOp, g.MaxPoolOp, g.AvgPoolOp)):
        return None, why
    vector_why = vector_refusal(op, ctx)
    if vector_why is None:
        return VECTOR_KERNEL, None
    if isinstance(op, g.TransposeOp):
        cube_why = cube_transpose_refusal(op, ctx)
        if cube_why is None:
            return CUBE_KERNEL, None
        vector_why = f"{vector_why}; on the cube: {cube_why}"
    if why.startswith("no AI-core kernel"):
        return None, vector_why
    return None, f"{why}; as a vector kernel: {vector_why}"
