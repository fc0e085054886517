"""Vector kernels over NC1HWC0 maps: graph elementwise ops and loop fusions
(`lower_elementwise`), and `map_kernel`, the kernel skeleton other patterns
reuse for a vector pass over maps (stripping a halo).

Per tile (a C1 slice x a band of rows): load each map operand GM -> UB,
apply the body on the vector unit (per-channel constants broadcast along
pixels; scalar constants as immediates), store UB -> GM. Tiles are
double-buffered and split over the cores."""

from __future__ import annotations

import numpy as np
from xdsl.ir import Operation, SSAValue
from xdsl.utils.exceptions import PassFailedException

from gedialects.graph import ops as g
from gedialects.location import describe_op
from gedialects.tile.builder import TileKernelBuilder
from gedialects.tile.transforms.buffer_body import BufferBody
from gedialects.tile.transforms.ub_buffers import UB_RESERVE_BYTES
from lowering.legality import MAP_ELEMENTWISE, MAP_UNARY_OPS
from lowering.map_bodies import unary_block

from .context import LoweringContext
from .registry import lowers
from .storage import TensorView


def map_kernel(ctx: LoweringContext, op: Operation, kind: str, ins: list[TensorView], out: TensorView,
               body, extra_bufs: int = 0) -> None:
    """A vector kernel over NC1HWC0 maps of one shape: per tile (C1 slice,
    band of rows) load every input, `body(kernel, srcs, dst, n, scratch)`
    computes the band into dst (n elements, dense; `extra_bufs` scratch
    buffers of n), store."""
    _, C, H, W = out.shape
    c0, es = ctx.c0, ctx.elem_bytes
    C1 = -(-C // c0)
    usable = ctx.config.capacity_bytes["ub"] - UB_RESERVE_BYTES
    nbuf = len(ins) + 1 + extra_bufs
    rows = [r for r in range(1, H + 1) if H % r == 0 and 2 * nbuf * r * W * c0 * es <= usable]
    if not rows:
        raise PassFailedException(f"{describe_op(op)}: a row does not fit UB")
    band_rows = max(rows)
    bands = H // band_rows
    tiles = C1 * bands
    block_dim = ctx.cores_for(tiles)
    kernel = ctx.new_kernel(op, kind, block_dim)
    n = band_rows * W * c0
    bufs = [kernel.alloc("ub", n, "NC1HWC0", buffers=2) for _ in ins]
    dst = kernel.alloc("ub", n, "NC1HWC0", buffers=2)
    scratch = [kernel.alloc("ub", n, "NC1HWC0", buffers=2) for _ in range(extra_bufs)]
    with kernel.tiles(tiles, block_dim, pipeline=True) as tile:
        c1 = kernel.div(tile, bands)
        band = kernel.rem(tile, bands)
        for view, buf in zip(ins, bufs):
            _load_band(ctx, kernel, buf, view, c1, band, band_rows, W)
        body(kernel, bufs, dst, n, scratch)
        _store_band(ctx, kernel, out, dst, c1, band, band_rows, W)


def _load_band(ctx: LoweringContext, kernel: TileKernelBuilder, buf: SSAValue, view: TensorView,
               c1, band, band_rows: int, W: int) -> None:
    """Rows [band * band_rows, +band_rows) of C1 slice c1 of view -> buf (dense, no halo)."""
    c0 = ctx.c0
    src = kernel.add(kernel.mul(c1, view.slice_stride(c0)), kernel.mul(band, band_rows * view.storage.padded_w * c0))
    kernel.copy(buf, kernel.at(kernel.gm(view.storage.name), view.origin(c0), src), [band_rows, W * c0], [W * c0, 1],
                [view.storage.padded_w * c0, 1])


def _store_band(ctx: LoweringContext, kernel: TileKernelBuilder, out: TensorView, buf: SSAValue,
                c1, band, band_rows: int, W: int) -> None:
    """buf -> rows [band * band_rows, +band_rows) of C1 slice c1 of out."""
    c0 = ctx.c0
    dst = kernel.add(kernel.mul(c1, out.slice_stride(c0)), kernel.mul(band, band_rows * out.storage.padded_w * c0))
    kernel.copy(kernel.at(kernel.gm(out.storage.name), out.origin(c0), dst), buf, [band_rows, W * c0],
                [out.storage.padded_w * c0, 1], [W * c0, 1])


# ------------------------------------------------------- elementwise ops and loop fusions

DENSE = ((1,), (1,), (1,))
"""Strides of a dense binary vector op (dst, a, b)."""
UNARY = ((1,), (1,))
"""Strides of a dense unary vector op (dst, a)."""
COMMUTATIVE = ("add", "mul", "max", "min")
SCALED_WITH_MAP = ("add", "sub", "max", "min")
"""force_fp16: a constant added to (or compared with) a scaled map is scaled with it."""


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
    out_v = op.results[0]
    shape = g.shape_of(out_v)
    if len(shape) != 4:
        raise PassFailedException(f"{describe_op(op)}: elementwise ops on non-4-D tensors are not lowered yet")
    _, C, H, W = shape
    c0, es = ctx.c0, ctx.elem_bytes
    C1 = -(-C // c0)
    args, env, body, results = _body_of(ctx, op)
    maps = [a for a in dict.fromkeys(args) if a in ctx.values and g.shape_of(a) == shape]
    outs = [ctx.storage_for(r, "NC1HWC0", op.name.split(".")[-1]) for r, _ in results]
    usable = ctx.config.capacity_bytes["ub"] - UB_RESERVE_BYTES
    # a unary op's map body takes up to 6 fp32 temporaries of the band (tanh's
    # series, erf's polynomial): 6 double-buffered units of >= 2 bytes each
    nbuf = len(maps) + len(body) + 1 + 6 * sum(isinstance(o, MAP_UNARY_OPS) for o in body)
    band_rows = (max(r for r in range(1, H + 1) if H % r == 0 and 2 * nbuf * r * W * c0 * es <= usable)
                 if 2 * nbuf * W * c0 * es <= usable else 0)
    if not band_rows:
        raise PassFailedException(f"{describe_op(op)}: a row does not fit UB")
    bands = H // band_rows
    tiles = C1 * bands
    block_dim = ctx.cores_for(tiles)
    kernel = ctx.new_kernel(op, "elementwise", block_dim)
    n = band_rows * W * c0
    bufs = {a: kernel.alloc("ub", n, "NC1HWC0", buffers=2) for a in maps}
    unary_bodies: dict[Operation, BufferBody] = {}  # each built once, applied per tile
    channel_consts: dict[bytes, tuple[str, SSAValue]] = {}  # values -> (GM constant, UB block), one per distinct array
    per_channel = [[c0, 1], [c0, 1], [0, 1]]  # strides: a per-channel block broadcast along pixels

    def channel_const(arr: np.ndarray) -> SSAValue:
        key = np.ascontiguousarray(arr, np.float32).tobytes()
        if key not in channel_consts:
            padded = np.zeros(C1 * c0, np.float32)
            padded[:C] = np.broadcast_to(arr.reshape(-1), (C,)) if arr.size in (1, C) else arr.reshape(-1)
            name = ctx.add_constant("chan", padded)
            channel_consts[key] = (name, kernel.alloc("ub", c0, "ND", buffers=2))
        return channel_consts[key][1]

    with kernel.tiles(tiles, block_dim, pipeline=True) as tile:
        c1 = kernel.div(tile, bands)
        band = kernel.rem(tile, bands)
        for a in maps:
            _load_band(ctx, kernel, bufs[a], ctx.values[a], c1, band, band_rows, W)

        def load_const(arr) -> SSAValue:
            """This tile's C0 values of a per-channel constant, in UB."""
            buf = channel_const(arr)
            name = channel_consts[np.ascontiguousarray(arr, np.float32).tobytes()][0]
            kernel.copy(buf, kernel.at(kernel.gm(name), 0, kernel.mul(c1, c0)), [c0], [1], [1])
            return buf

        def load_gate(v) -> SSAValue:
            """This tile's C0 values of a computed [1, C, 1, 1] map, in UB."""
            if v not in gates:
                gates[v] = kernel.alloc("ub", c0, "NC1HWC0", buffers=2)
            view = ctx.values[v]
            kernel.copy(gates[v], kernel.at(kernel.gm(view.storage.name), view.origin(c0),
                                            kernel.mul(c1, view.slice_stride(c0))), [c0], [1], [1])
            return gates[v]

        def operand(v):
            """("buf", UB buffer) | ("scalar", float) | ("chan", per-channel array) | ("gate", UB block)."""
            if v in env:
                v = env[v]
            if isinstance(v, tuple):
                return v
            if v in vals:
                return ("buf", vals[v])
            if v in ctx.values and tuple(g.shape_of(v)) == (1, C, 1, 1):
                return ("gate", load_gate(v))
            arr = ctx.constant_value(v)
            if arr is None:
                raise PassFailedException(f"{describe_op(op)}: operand is neither a map nor a constant")
            if arr.size == 1:
                return ("scalar", float(arr.reshape(-1)[0]))
            if arr.size == C:
                return ("chan", arr)
            raise PassFailedException(f"{describe_op(op)}: broadcast of shape {arr.shape} not lowered")

        vals: dict = {a: bufs[a] for a in maps}  # graph value -> its UB buffer in this tile
        gates: dict = {}
        cur = None
        for item in body:
            if isinstance(item, tuple):  # batch norm
                kind, arr = item
                src = cur if cur is not None else bufs[args[0]]
                dst = kernel.alloc("ub", n, "NC1HWC0", buffers=2)
                const = load_const(arr)
                kernel.vec("mul" if kind == "mulc" else "add", dst, [src, const], [band_rows * W, c0], per_channel)
                cur = dst
                continue
            o = item
            dst = kernel.alloc("ub", n, "NC1HWC0", buffers=2)
            ins = [operand(v) for v in o.operands]
            name = o.name.split(".")[-1]
            if name == "relu":
                kernel.vec("relu", dst, [ins[0][1]], [n], UNARY)
            elif isinstance(o, MAP_UNARY_OPS):
                if o not in unary_bodies:
                    unary_bodies[o] = BufferBody(kernel, unary_block(o, kernel.elem))
                unary_bodies[o].apply(ins[0][1], n, dst)
            elif name == "identity":
                kernel.vec("adds", dst, [ins[0][1]], [n], UNARY, 0.0)
            elif name in ("add", "sub", "mul", "div", "max", "min", "sum"):
                if name == "sum":
                    name = "add"
                acc = ins[0]
                for other in ins[1:]:
                    a, b = acc, other
                    if a[0] != "buf" and b[0] == "buf" and name in COMMUTATIVE:
                        a, b = b, a
                    if a[0] != "buf":
                        raise PassFailedException(f"{describe_op(op)}: constant-first {name} not lowered")
                    const_scale = ctx.scale_of(out_v) if name in SCALED_WITH_MAP else 1.0
                    if b[0] == "buf":
                        kernel.vec(name, dst, [a[1], b[1]], [n], DENSE)
                    elif b[0] == "gate":
                        kernel.vec(name, dst, [a[1], b[1]], [band_rows * W, c0], per_channel)
                    elif b[0] == "chan":
                        kernel.vec(name, dst, [a[1], load_const(np.asarray(b[1], np.float32) / const_scale)],
                                   [band_rows * W, c0], per_channel)
                    else:
                        _binary_with_scalar(kernel, name, dst, a[1], b[1] / const_scale, n)
                    acc = ("buf", dst)
            else:
                raise PassFailedException(f"{describe_op(op)}: {o.name} is not lowered in elementwise kernels")
            vals[o.results[0]] = dst
            cur = dst
        for out, (_, yielded) in zip(outs, results):  # a loop fusion may yield several values
            if yielded is None:
                final = cur
            elif yielded in env and env[yielded] in bufs:
                final = bufs[env[yielded]]
            else:
                final = vals[yielded]
            _store_band(ctx, kernel, out, final, c1, band, band_rows, W)


def _binary_with_scalar(kernel: TileKernelBuilder, name: str, dst, a, value: float, n: int) -> None:
    """dst = a <name> value, with the vector unit's scalar ops (adds, muls, maxs)."""
    if name == "add":
        kernel.vec("adds", dst, [a], [n], UNARY, value)
    elif name == "sub":
        kernel.vec("adds", dst, [a], [n], UNARY, -value)
    elif name == "mul":
        kernel.vec("muls", dst, [a], [n], UNARY, value)
    elif name == "div":
        kernel.vec("muls", dst, [a], [n], UNARY, 1.0 / value)
    elif name == "max":
        kernel.vec("maxs", dst, [a], [n], UNARY, value)
    else:  # min(a, v) = -max(-a, -v)
        kernel.vec("muls", dst, [a], [n], UNARY, -1.0)
        kernel.vec("maxs", dst, [dst], [n], UNARY, -value)
        kernel.vec("muls", dst, [dst], [n], UNARY, -1.0)
