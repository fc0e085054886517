"""Elementwise ops, batch norms and loop fusions on NC1HWC0 maps
(`lower_elementwise`), and `copy_map` (a map copied without its halo): each
one `tile.elementwise` (gedialects/tile/elementwise.py) whose body is the
computation as a map body in the maps' element type. Per-channel constants
(a batch norm's scale and shift, a constant of C values) are packed C1 x C0
in GM and a computed squeeze-excite gate [1, C, 1, 1] is read where it is
stored: both broadcast over the pixels; a scalar is an arith.constant (an
immediate). How the kernel is tiled is the tile passes' choice
(tile-select-tiling's band, tile-distribute, tile-expand-structured)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import PassFailedException

from gedialects.graph import ops as g
from gedialects.location import describe_op
from gedialects.tile.builder import TileKernelBuilder
from gedialects.tile.conv import MapViewAttr
from gedialects.tile.elementwise import ElementwiseOp
from gedialects.tile.structured import YieldOp
from gedialects.tile.transforms.conv_tiling import stage_body_ops
from lowering.legality import AI_CORE, MAP_ELEMENTWISE, MAP_UNARY_OPS, engine_of
from lowering.map_bodies import ScalarBuilder, unary_value

from .context import LoweringContext
from .registry import lowers
from .slicing import operand_maps
from .storage import TensorView, map_view

SCALED_WITH_MAP = ("add", "sub", "max", "min")
"""force_fp16: a constant added to (or compared with) a scaled map is scaled with it."""
BINARY = {"add": "add", "sum": "add", "sub": "sub", "mul": "mul", "div": "div", "max": "max", "min": "min"}
"""Graph ops of a map body with two or more operands -> the ScalarBuilder method folding them."""


class ElementwiseBody:
    """The map body of a tile.elementwise being built: one block argument
    per input (a map of the output's shape, a per-channel constant or gate),
    scalar ops in the maps' element type."""

    def __init__(self, ctx: LoweringContext, kernel: TileKernelBuilder, shape: tuple[int, ...]):
        self.ctx, self.kernel, self.shape = ctx, kernel, tuple(shape)
        self.block = Block()
        self.sb = ScalarBuilder(self.block, ctx.elem)
        self.inputs: list[tuple[SSAValue, MapViewAttr]] = []
        self._args: dict[object, SSAValue] = {}

    def _arg(self, key: object, place: Callable[[], tuple[str, MapViewAttr]]) -> SSAValue:
        """The block argument of input `key`, placed (GM tensor, view) on first use."""
        if key not in self._args:
            tensor, view = place()
            self._args[key] = self.block.insert_arg(self.ctx.elem, len(self.block.args))
            self.inputs.append((self.kernel.gm(tensor), view))
        return self._args[key]

    def map(self, v: SSAValue) -> SSAValue:
        """Graph value v's map: of the output's shape, or per-channel (a gate)."""
        return self.view_input(("map", v), self.ctx.values[v])

    def own_input(self, v: SSAValue) -> SSAValue:
        """Graph value v's map as the body's next argument with no input
        of the op: whoever runs the body reads that map itself (a conv's
        stage, its own input)."""
        self._args[("map", v)] = self.block.insert_arg(self.ctx.elem, len(self.block.args))
        return self._args[("map", v)]

    def view_input(self, key: object, view: TensorView) -> SSAValue:
        return self._arg(key, lambda: (view.storage.name, map_view(view, self.ctx.c0)))

    def channel_constant(self, values: np.ndarray, padding: float = 0.0) -> SSAValue:
        """C values (or one, repeated) broadcast over the pixels: one GM
        constant per distinct array. The lanes past C hold `padding` (a
        divisor's 1: the map's padded lanes must stay finite, or the
        transdata product after them turns every channel into NaN)."""
        values = np.ascontiguousarray(values, np.float32).reshape(-1)
        c, c0 = self.shape[1], self.ctx.c0

        def place() -> tuple[str, MapViewAttr]:
            padded = np.full(-(-c // c0) * c0, padding, np.float32)
            padded[:c] = np.broadcast_to(values, (c,))
            return self.ctx.add_constant("chan", padded), MapViewAttr((1, c, 1, 1), 0, c0, 1)

        return self._arg(("chan", values.tobytes(), padding), place)

    def finish(self, results: list[SSAValue]) -> Region:
        self.block.add_op(YieldOp(results))
        return Region(self.block)


def _emit(ctx: LoweringContext, op: Operation | None, kind: str, shape: tuple[int, ...],
          build: Callable[[ElementwiseBody], list[SSAValue]], outs: list[TensorView]) -> None:
    """One elementwise kernel: `build` writes the body and returns the yielded elements, one per output."""
    kernel = ctx.new_kernel(op, kind, 1)  # tile-distribute sets its cores from the tiling
    body = ElementwiseBody(ctx, kernel, shape)
    results = build(body)
    outputs = [(kernel.gm(out.storage.name), map_view(out, ctx.c0)) for out in outs]
    kernel.emit(ElementwiseOp(body.inputs, outputs, body.finish(results)))


def copy_map(ctx: LoweringContext, op: Operation, kind: str, x: TensorView, out: TensorView) -> None:
    """out = x, map to map (a halo dropped or added on the way)."""
    _emit(ctx, op, kind, x.shape, lambda body: [body.view_input("source", x)], [out])


def _body_of(ctx: LoweringContext, op: Operation):
    """The kernel body of op as (args, env, body, results): the graph values
    it reads, block argument -> value, the steps (graph ops, or batch norm's
    ("mulc" | "addc", per-channel constant)), and (result, yielded value)."""
    out_v = op.results[0]
    if isinstance(op, g.FusionOp):
        args = list(op.inputs)
        env = dict(zip(op.body.block.args, args))
        body = [o for o in op.body.block.ops if not isinstance(o, g.YieldOp | g.ConstantOp | g.FillOp)]
        results = list(zip(op.results, op.body.block.last_op.operands))
    elif isinstance(op, g.BatchNormOp):
        scale, bias, mean, var = (ctx.constant_value(v) for v in op.operands[1:])
        if any(v is None for v in (scale, bias, mean, var)):
            raise PassFailedException(f"{describe_op(op)}: batch-norm parameters must be constant")
        inv = scale / np.sqrt(var.astype(np.float64) + op.float_("epsilon", 1e-5))
        env = {}
        body = [("mulc", inv.astype(np.float32)), ("addc", ((bias - mean * inv) / ctx.scale_of(out_v)).astype(np.float32))]
        results = [(out_v, None)]
        args = [op.operands[0]]
    else:
        args = list(op.operands)
        env = {}
        body = [op]
        results = [(out_v, out_v)]
    return args, env, body, results


@lowers(*MAP_ELEMENTWISE)
def lower_elementwise(ctx: LoweringContext, op: Operation) -> None:
    shape = tuple(g.shape_of(op.results[0]))
    if len(shape) != 4:
        raise PassFailedException(f"{describe_op(op)}: elementwise ops on non-4-D tensors are not lowered yet")
    if stage_conv(ctx, op) is not None:
        # the conv that reads it may compute it on its input's way to L1 (conv.py decides, by the cost
        # model, and lowers it here when not)
        ctx.staged[op.results[0]] = op
        return
    emit_elementwise(ctx, op)


def emit_elementwise(ctx: LoweringContext, op: Operation) -> None:
    """Elementwise op `op` as a kernel of its own."""
    _, _, _, results = _body_of(ctx, op)
    outs = [ctx.storage_for(r, "NC1HWC0", op.name.split(".")[-1]) for r, _ in results]
    _emit(ctx, op, "elementwise", tuple(g.shape_of(op.results[0])), lambda body: build_body(ctx, op, body), outs)


class _CountedBody(ElementwiseBody):
    """A map body built only to be counted: its inputs get block arguments
    but no GM tensor, constant or kernel operand."""

    def _arg(self, key: object, place: Callable[[], tuple[str, MapViewAttr]]) -> SSAValue:
        if key not in self._args:
            self._args[key] = self.block.insert_arg(self.ctx.elem, len(self.block.args))
            self.inputs.append(key)  # type: ignore[arg-type]
        return self._args[key]


def stage_size(ctx: LoweringContext, op: Operation) -> tuple[int, int]:
    """(scalar ops, per-channel operands) of elementwise op `op`'s body as
    a conv's stage: what the conv's tiling reads of the stage (conv_tiling's
    conv_shape counts the built tile.conv's the same way)."""
    body = _CountedBody(ctx, None, tuple(g.shape_of(op.results[0])))  # type: ignore[arg-type]
    body.own_input(stage_map(ctx, op))
    return stage_body_ops(body.finish(build_body(ctx, op, body)).block), len(body.inputs)


def build_body(ctx: LoweringContext, op: Operation, body: ElementwiseBody) -> list[SSAValue]:
    """The map body of elementwise op `op` written into `body`; the yielded elements, one per result."""
    out_v = op.results[0]
    shape = tuple(g.shape_of(out_v))
    C = shape[1]
    args, env, steps, results = _body_of(ctx, op)
    sb = body.sb
    computed: dict[SSAValue, SSAValue] = {}  # graph value of the fusion body -> its element

    def operand(v: SSAValue, const_scale: float = 1.0, divisor: bool = False) -> SSAValue:
        """v's element: a fusion argument's, a computed one, a map's, a constant's."""
        v = env.get(v, v)
        if v in computed:
            return computed[v]
        if v in ctx.values and tuple(g.shape_of(v)) in (shape, (1, C, 1, 1)):
            return body.map(v)
        arr = ctx.constant_value(v)
        if arr is None:
            raise PassFailedException(f"{describe_op(op)}: operand is neither a map nor a constant")
        if arr.size == 1:
            return sb.const(float(arr.reshape(-1)[0]) / const_scale)
        if arr.size == C:
            return body.channel_constant(np.asarray(arr, np.float32) / const_scale, 1.0 if divisor else 0.0)
        raise PassFailedException(f"{describe_op(op)}: broadcast of shape {arr.shape} not lowered")

    current: SSAValue | None = None
    for step in steps:
        if isinstance(step, tuple):  # batch norm: x * scale + shift, per channel
            kind, values = step
            x = current if current is not None else operand(args[0])
            c = body.channel_constant(values)
            current = sb.mul(x, c) if kind == "mulc" else sb.add(x, c)
            continue
        name = step.name.split(".")[-1]
        if isinstance(step, MAP_UNARY_OPS):
            current = unary_value(body.block, step, operand(step.operands[0]), ctx.elem)
        elif name == "relu":
            current = sb.max(operand(step.operands[0]), sb.const(0.0))
        elif name == "identity":
            current = operand(step.operands[0])
        elif name in BINARY:
            const_scale = ctx.scale_of(out_v) if BINARY[name] in SCALED_WITH_MAP else 1.0
            values = [operand(v, const_scale, divisor=BINARY[name] == "div" and k > 0)
                      for k, v in enumerate(step.operands)]
            current = values[0]
            for other in values[1:]:
                current = getattr(sb, BINARY[name])(current, other)
        else:
            raise PassFailedException(f"{describe_op(op)}: {step.name} is not lowered in elementwise kernels")
        computed[step.results[0]] = current
    return [current if yielded is None else operand(yielded) for _, yielded in results]  # type: ignore[misc]


def _reads(op: Operation) -> list[SSAValue]:
    """The values elementwise op `op` reads (a fusion's inputs, else its operands)."""
    return list(op.inputs) if isinstance(op, g.FusionOp) else list(op.operands)


def stage_map(ctx: LoweringContext, op: Operation) -> SSAValue:
    """The one map elementwise op `op` reads (`stage_conv` found it)."""
    return next(v for v in _reads(op) if ctx.constant_value(v) is None)


def stage_conv(ctx: LoweringContext, op: Operation) -> g.ConvOp | None:
    """The conv whose stage elementwise op `op` can be, or None: `op` has
    one result, read only by that conv as its input (a dense conv on the AI
    core), and reads one map -- of its own shape, held whole in one NC1HWC0
    storage -- and otherwise constants, scalar or per channel. The conv
    then reads the map and computes `op` slice by slice on its way to L1
    (tile.conv's stage): DenseNet's pre-activation batch norm and ReLU on
    the concatenation of the earlier layers, which a kernel of its own
    stored and the conv read back."""
    if len(op.results) != 1:
        return None
    uses = list(op.results[0].uses)
    if len(uses) != 1 or not isinstance(conv := uses[0].operation, g.ConvOp) or uses[0].index != 0:
        return None
    if conv.int_("group", 1) != 1 or engine_of(conv) != AI_CORE:
        return None
    shape = tuple(g.shape_of(op.results[0]))
    reads = _reads(op)
    maps = [v for v in reads if ctx.constant_value(v) is None]
    if len(maps) != 1 or tuple(g.shape_of(maps[0])) != shape or maps[0] not in ctx.values:
        return None
    if len(operand_maps(ctx, maps[0])) != 1 or ctx.values[maps[0]].layout != "NC1HWC0":
        return None
    constants = [ctx.constant_value(v) for v in reads if v is not maps[0]]
    if isinstance(op, g.FusionOp):
        constants += [ctx.constant_value(o.results[0]) for o in op.body.block.ops if isinstance(o, g.ConstantOp | g.FillOp)]
    if any(c is None or c.size not in (1, shape[1]) for c in constants):
        return None
    return conv
