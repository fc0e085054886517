"""Vector kernels of row-major tensors: elementwise ops and fusions of any
rank with numpy broadcasting, softmax / log-softmax, layer_norm, reductions.

Each graph op becomes one *structured* tile.kernel (gedialects/tile/structured.py):
loads of its operands' GM tensors, tile.map regions holding the scalar
computation (map_bodies.py), tile.reduction along the last dim, and a store.
How it is tiled, spread over cores, buffered and turned into instructions is
decided by the tile passes (tile-select-tiling ... tile-expand-structured).

Dims are collapsed first (adjacent dims every operand broadcasts alike merge),
so an attention mask [B, 1, 1, S] over scores [B, H, S, S] is a [B, H*S, S]
iteration with a [B, 1, S] operand.

In force_fp16 the kernel reads fp16 (or the fp32 of a graph input), computes in
fp32 (the stored values times their power-of-two scale) and writes fp16
divided by the result's scale.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import Float16Type, IntegerType, StringAttr, TensorType, f32, i64
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import PassFailedException

from gedialects.graph import ops as g
from gedialects.location import describe_op
from gedialects.tile import structured as st
from gedialects.tile.structured import collapse_dims
from lowering.fp16_scaling import FP16_MAX, holds_mask_sentinel
from lowering.legality import VECTOR_KERNEL
from lowering.map_bodies import ELEMENTWISE, ScalarBuilder, fusion_tensor_constants, scalar_value

from .registry import lowers
from .storage import GmStorage, TensorView


class VectorKernel:
    """Builds one structured kernel: operands, maps, reductions, the store."""

    def __init__(self, ctx, op: Operation, kind: str):
        self.ctx = ctx
        self.op = op
        self.builder = ctx.new_kernel(op, kind, 1)
        self.block = self.builder.op.body.block

    def emit(self, op: Operation) -> SSAValue:
        self.block.add_op(op)
        return op.results[0]

    def load(self, v: SSAValue, shape: Sequence[int]) -> SSAValue:
        """A tile.load of graph value v (or of a constant's GM copy), viewed as `shape`."""
        name, element = self.source(v)
        return self.emit(st.LoadOp(name, TensorType(element, list(shape))))

    def source(self, v: SSAValue) -> tuple[str, Attribute]:
        """(GM tensor, stored element type) a tile.load of graph value v reads."""
        array = self.ctx.constant_value(v)
        if array is not None and np.asarray(array).dtype.kind in "iu":  # converted on load, like an input
            name = self.ctx.add_constant("const", np.broadcast_to(array, g.shape_of(v)).astype(np.int64))
            element = i64
        elif array is not None:  # floats in the precision mode's type; bools as 0/1
            name = self.ctx.add_constant("const", np.broadcast_to(array, g.shape_of(v)).astype(np.float32))
            element = self.ctx.elem
        else:
            view = self.ctx.values[v]
            if view.window is not None:  # legality.head_windows: products and the heads' transposes read these
                raise PassFailedException(f"{describe_op(self.op)}: reads a window of {view.storage.name} "
                                          "that only products and transposes of heads read (a split result)")
            if view.storage.layout == "NC1HWC0" and view.origin(self.ctx.c0) != 0:
                # a row inside a map's storage (a slice of a channel concat
                # written in place): a tile.load reads from a tensor's start
                view = row_copy(self.ctx, self.op, view)
                copy = self.ctx.program.body.block.last_op  # the copy kernel runs before this one
                assert copy is not None
                copy.detach()
                self.ctx.program.body.block.insert_op_before(copy, self.builder.op)
            name = view.storage.name
            element = self.ctx.stored_element(view.storage, v)
        return name, element

    def map(self, inputs: Sequence[SSAValue], shape: Sequence[int], element: Attribute, body) -> SSAValue:
        """tile.map over `inputs`; body(ScalarBuilder, *args) returns the element."""
        block = Block(arg_types=[x.type.element_type for x in inputs])  # type: ignore[attr-defined]
        sb = ScalarBuilder(block)
        result = body(sb, *block.args)
        if len(inputs) == 1 and result is block.args[0] and inputs[0].type == TensorType(element, list(shape)):
            return inputs[0]  # the identity (a result already in its stored form): no map
        block.add_op(st.YieldOp([result]))
        return self.emit(st.MapOp(inputs, TensorType(element, list(shape)), Region(block)))

    def reduce(self, kind: str, x: SSAValue) -> SSAValue:
        return self.emit(st.ReductionOp(kind, x))

    def store(self, value: SSAValue, v: SSAValue, window=None) -> None:
        """tile.store of value into graph value v's GM tensor (`window`: a box of it)."""
        view = self.ctx.storage_for(v, "ND", self.op.name.split(".")[-1])
        self.block.add_op(st.StoreOp(value, view.storage.name, window))

    # -- precision -----------------------------------------------------------
    def widen(self, sb: ScalarBuilder, x: SSAValue, v: SSAValue | None) -> SSAValue:
        """A loaded element as its fp32 value (cast, times its scale)."""
        if isinstance(x.type, Float16Type):
            x = sb.emit(arith.ExtFOp(x, f32))
        elif isinstance(x.type, IntegerType):  # an integer tensor: its value in fp32 (vconv)
            return sb.emit(arith.SIToFPOp(x, f32))
        scale = self.ctx.scale_of(v) if v is not None and self.ctx.constant_value(v) is None else 1.0
        return x if scale == 1.0 else sb.mul(x, sb.const(scale))

    def narrow(self, sb: ScalarBuilder, y: SSAValue, v: SSAValue, saturate: bool = False) -> SSAValue:
        """The fp32 result as stored: divided by its scale, cast to fp16
        (`saturate`: clamped to fp16's finite range first, for a body that
        computes with a mask sentinel, as saturate_to_fp16 stores one); a
        graph output written in its own type as it is."""
        if self.ctx.writes_output_in_its_type(v):
            return y
        scale = self.ctx.scale_of(v)
        if scale != 1.0:
            y = sb.mul(y, sb.const(1.0 / scale))
        if self.ctx.fp16:
            if saturate:
                y = sb.min(sb.max(y, sb.const(-FP16_MAX)), sb.const(FP16_MAX))
            y = sb.emit(arith.TruncFOp(y, self.ctx.elem))
        return y

    def stored_as(self, v: SSAValue) -> Attribute:
        """The element type the kernel writes graph value v in."""
        return v.type.element_type if self.ctx.writes_output_in_its_type(v) else self.ctx.elem  # type: ignore[attr-defined]


# ----------------------------------------------------------------- patterns


@lowers(*ELEMENTWISE, g.FusionOp, family=VECTOR_KERNEL)
def elementwise(ctx, op: Operation) -> None:
    """Any elementwise graph op or graph.fusion: one map per result (the
    results of a fusion have one shape; each map computes what its result
    needs of the body from the shared loads)."""
    operands = [v for v in op.operands]
    scalars = {v: scalar_value(v) for v in operands}
    # each tensor loaded once (x * x reads x once); a fusion body's tensor
    # constants are loaded like operands
    tensors = list(dict.fromkeys(v for v in operands if scalars[v] is None)) + fusion_tensor_constants(op)
    shape, shapes = collapse_dims(g.shape_of(op.results[0]), [g.shape_of(v) for v in tensors])
    k = VectorKernel(ctx, op, "vector")
    loads = [k.load(v, s) for v, s in zip(tensors, shapes)]
    saturate = _reads_mask_sentinel(ctx, op)

    def body_of(index: int, out: SSAValue):
        def body(sb: ScalarBuilder, *args):
            env = {v: k.widen(sb, a, v) for v, a in zip(tensors, args)}
            for v, c in scalars.items():
                if c is not None:
                    env[v] = sb.const(c)
            return k.narrow(sb, scalar_body(sb, op, [env[v] for v in operands], env, index), out, saturate)

        return body

    for index, out in enumerate(op.results):
        k.store(k.map(loads, shape, k.stored_as(out), body_of(index, out)), out)


def scalar_body(sb: ScalarBuilder, op: Operation, args: list[SSAValue],
                loaded: dict[SSAValue, SSAValue] | None = None, result: int = 0) -> SSAValue:
    """The fp32 scalar computation of an elementwise op (a fusion: its body,
    up to its `result`-th yielded value; `loaded`: the elements of its body
    constants the kernel loads)."""
    if isinstance(op, g.FusionOp):
        env: dict[SSAValue, SSAValue] = dict(zip(op.body.block.args, args))
        for inner in op.body.block.ops:
            if isinstance(inner, g.YieldOp):
                return env[inner.values[result]]
            if isinstance(inner, g.ConstantOp | g.FillOp):
                if loaded is not None and inner.results[0] in loaded:
                    env[inner.results[0]] = loaded[inner.results[0]]
                else:
                    env[inner.results[0]] = sb.const(float(np.asarray(inner_constant(inner)).reshape(-1)[0]))
                continue
            env[inner.results[0]] = scalar_body(sb, inner, [env[v] for v in inner.operands])
        raise AssertionError("graph.fusion body without graph.yield")
    return ELEMENTWISE[type(op)](sb, op, *args)


def _reads_mask_sentinel(ctx, op: Operation) -> bool:
    """op computes with a mask sentinel (finfo(f32).min): a constant operand
    or, in a fusion, a constant of its body holds one."""
    if any(ctx.is_mask_sentinel(v) for v in op.operands):
        return True
    body = op.body.block.ops if isinstance(op, g.FusionOp) else ()
    constants = (inner_constant(inner) for inner in body if isinstance(inner, g.ConstantOp | g.FillOp))
    return any(c.dtype.kind == "f" and holds_mask_sentinel(c) for c in constants)


def row_copy(ctx, op: Operation, x: TensorView) -> TensorView:
    """The contiguous row x (a view inside an NC1HWC0 tensor: a slice of a
    channel concat written in place) copied to a tensor of its own, which a
    tile.load or an AI-CPU task reads from its start: a structured kernel,
    a box load of the map storage's elements from x's origin, stored whole
    (the tile passes tile it)."""
    n = math.prod(x.shape)
    row = GmStorage(ctx.fresh_name("row"), layout="ND", elems=n, shape=x.shape)
    ctx.storages.append(row)
    k = VectorKernel(ctx, op, "copy")
    k.builder.op.attributes["source"] = StringAttr(f"{describe_op(op)}: operand row")
    value = k.emit(st.LoadOp(x.storage.name, TensorType(ctx.elem, [n]), window=x.row_window(ctx.c0)))
    k.block.add_op(st.StoreOp(value, row.name))
    return TensorView(row, 0, "ND", x.shape)


def inner_constant(op: Operation) -> np.ndarray:
    from gedialects.graph.tensors import attr_array

    if isinstance(op, g.FillOp):
        return np.asarray([op.value.value.data])
    return np.asarray(attr_array(op.value))


def _rows(x_shape: Sequence[int], axis: int) -> tuple[int, int]:
    return math.prod(x_shape[:axis]), math.prod(x_shape[axis:])


@lowers(g.SoftmaxOp, g.LogSoftmaxOp, family=VECTOR_KERNEL)
def softmax(ctx, op: g.SoftmaxOp | g.LogSoftmaxOp) -> None:
    x = op.input
    shape = g.shape_of(x)
    axis = op.int_("axis", -1) % len(shape)
    rows, cols = _rows(shape, axis)
    k = VectorKernel(ctx, op, "softmax")
    xs = k.map([k.load(x, (rows, cols))], (rows, cols), f32, lambda sb, a: k.widen(sb, a, x))
    m = k.reduce("max", xs)
    e = k.map([xs, m], (rows, cols), f32, lambda sb, a, b: sb.exp(sb.sub(a, b)))
    s = k.reduce("sum", e)
    out = op.results[0]
    if isinstance(op, g.LogSoftmaxOp):
        y = k.map([xs, m, s], (rows, cols), k.stored_as(out),
                  lambda sb, a, b, c: k.narrow(sb, sb.sub(sb.sub(a, b), sb.log(c)), out))
    else:
        y = k.map([e, s], (rows, cols), k.stored_as(out), lambda sb, a, b: k.narrow(sb, sb.div(a, b), out))
    k.store(y, out)


@lowers(g.LayerNormOp, family=VECTOR_KERNEL)
def layer_norm(ctx, op: g.LayerNormOp) -> None:
    x = op.input
    shape = g.shape_of(x)
    axis = op.int_("axis", -1) % len(shape)
    rows, cols = _rows(shape, axis)
    eps = op.float_("epsilon", 1e-5)
    k = VectorKernel(ctx, op, "layer_norm")
    ins = [k.load(x, (rows, cols))]
    feeds = [x]
    if op.residual is not None:
        ins.append(k.load(op.residual, (rows, cols)))
        feeds.append(op.residual)

    def summed(sb, *args):
        vals = [k.widen(sb, a, v) for a, v in zip(args, feeds)]
        return vals[0] if len(vals) == 1 else sb.add(vals[0], vals[1])

    xs = k.map(ins, (rows, cols), f32, summed)
    mean = k.map([k.reduce("sum", xs)], (rows, 1), f32, lambda sb, s: sb.mul(s, sb.const(1.0 / cols)))
    d = k.map([xs, mean], (rows, cols), f32, lambda sb, a, b: sb.sub(a, b))
    sq = k.map([d], (rows, cols), f32, lambda sb, a: sb.mul(a, a))
    rstd = k.map([k.reduce("sum", sq)], (rows, 1), f32,
                 lambda sb, s: sb.rsqrt(sb.add(sb.mul(s, sb.const(1.0 / cols)), sb.const(eps))))
    params = [(op.scale, k.load(op.scale, (1, cols)))]
    if op.bias is not None:
        params.append((op.bias, k.load(op.bias, (1, cols))))
    out = op.results[0]

    def normalised(sb, a, r, gamma, beta=None):
        y = sb.mul(sb.mul(a, r), k.widen(sb, gamma, op.scale))
        if beta is not None:
            y = sb.add(y, k.widen(sb, beta, op.bias))
        return k.narrow(sb, y, out)

    k.store(k.map([d, rstd, *(p for _, p in params)], (rows, cols), k.stored_as(out), normalised), out)


@lowers(g.ReduceMeanOp, g.ReduceSumOp, g.ReduceMaxOp, family=VECTOR_KERNEL)
def reduction(ctx, op: g.ReduceOp) -> None:
    x = op.input
    shape = g.shape_of(x)
    axes = sorted(a % len(shape) for a in (op.ints("axes") or range(len(shape))))
    first = axes[0]
    rows, cols = _rows(shape, first)
    kind = "max" if isinstance(op, g.ReduceMaxOp) else "sum"
    out = op.results[0]
    k = VectorKernel(ctx, op, "reduce")
    xs = k.map([k.load(x, (rows, cols))], (rows, cols), f32, lambda sb, a: k.widen(sb, a, x))
    r = k.reduce(kind, xs)
    scale = 1.0 / cols if isinstance(op, g.ReduceMeanOp) else 1.0
    y = k.map([r], (rows, 1), k.stored_as(out),
              lambda sb, a: k.narrow(sb, a if scale == 1.0 else sb.mul(a, sb.const(scale)), out))
    k.store(y, out)


@lowers(g.TransposeOp, family=VECTOR_KERNEL)
def transpose(ctx, op: g.TransposeOp) -> None:
    """A transpose that keeps the innermost dim: a load through permuted GM
    strides (DMA rows with gaps), stored row-major; of attention heads that
    are a window of a merged product (legality.head_windows), through the
    window."""
    x, out = op.input, op.results[0]
    perm = [p % len(g.shape_of(x)) for p in op.ints("perm", ())] or list(range(len(g.shape_of(x))))[::-1]
    k = VectorKernel(ctx, op, "transpose")
    view = ctx.values[x]
    element = ctx.stored_element(view.storage, x)
    y = k.emit(st.LoadOp(view.storage.name, TensorType(element, list(g.shape_of(out))), perm, window=view.window))
    if ctx.scale_of(x) != ctx.scale_of(out) or element != k.stored_as(out):
        y = k.map([y], g.shape_of(out), k.stored_as(out), lambda sb, a: k.narrow(sb, k.widen(sb, a, x), out))
    k.store(y, out)
