"""Map bodies as vector instructions: the one definition of how an arith/math
region (a tile.map body after tile-legalize-math, or a fused epilogue of a
loop-level kernel) becomes tile.vec / tile.cast / tile.dup over UB buffers.

`MapBodyEmitter.run(body, args, ...)` walks the body once: an op whose
operands are all constants folds to an immediate; a binary op with one
constant operand is one instruction with an immediate (`adds`, `muls`, ...);
operands broadcast along their unit dims (a column value through its brcb
copy). A result is written in place into an operand buffer that dies with
this op (same box), otherwise into a fresh buffer of the pool; temporaries
go back to the pool when dead.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from xdsl.dialects import arith
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import Float16Type, Float32Type
from xdsl.ir import Attribute, Block, Operation, SSAValue

from gedialects.tile import ops as t
from gedialects.tile import structured as st
from gedialects.tile.builder import TileBuilder
from gedialects.tile.transforms.ub_buffers import Buffer, BufferPool, TilingError, per_block, round_up


BINARY = {
    arith.AddfOp: "add", arith.SubfOp: "sub", arith.MulfOp: "mul", arith.DivfOp: "div",
    arith.MaximumfOp: "max", arith.MinimumfOp: "min", arith.MaxnumfOp: "max", arith.MinnumfOp: "min",
    # i1 values are 0/1 in the buffers (a comparison's result)
    arith.AndIOp: "min", arith.OrIOp: "max", arith.XOrIOp: "cmp_ne",
}
UNARY = {mathd.ExpOp: "exp", mathd.LogOp: "ln", mathd.SqrtOp: "sqrt", mathd.RsqrtOp: "rsqrt", mathd.AbsFOp: "abs"}
SCALAR_FORM = {"add": "adds", "mul": "muls", "max": "maxs", "min": "mins"}
"""Binary ops with a constant operand, as one instruction with an immediate."""
COMPARE = {"olt": "cmp_lt", "ult": "cmp_lt", "ole": "cmp_le", "ule": "cmp_le", "ogt": "cmp_gt", "ugt": "cmp_gt",
           "oge": "cmp_ge", "uge": "cmp_ge", "oeq": "cmp_eq", "ueq": "cmp_eq", "one": "cmp_ne", "une": "cmp_ne"}
CMPF_PREDICATES = ("false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord", "ueq", "ugt", "uge", "ult", "ule",
                   "une", "uno", "true")


def body_op_supported(op: Operation) -> str | None:
    """None when the vector unit runs this map-body op (after tile-legalize-math), else why not."""
    if isinstance(op, (*BINARY, *UNARY, arith.NegfOp, arith.ExtFOp, arith.TruncFOp, arith.ConstantOp,
                       arith.SelectOp, st.YieldOp)):
        return None
    if isinstance(op, arith.SIToFPOp):
        width = getattr(op.input.type, "width", None)
        return None if width is not None and width.data in (32, 64) else f"arith.sitofp of {op.input.type}"
    if isinstance(op, arith.CmpfOp):
        pred = CMPF_PREDICATES[op.predicate.value.data]
        return None if pred in COMPARE else f"arith.cmpf {pred} has no vector compare"
    return f"{op.name} has no vector instruction"


SCALAR_FOLDS = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "max": np.maximum, "min": np.minimum,
    "exp": np.exp, "ln": np.log, "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x), "abs": np.abs,
    "cmp_lt": np.less, "cmp_le": np.less_equal, "cmp_gt": np.greater, "cmp_ge": np.greater_equal,
    "cmp_eq": np.equal, "cmp_ne": np.not_equal,
}


def fold_scalar(op: Operation, values: list[float]) -> float:
    """A map-body op whose operands are all constants, evaluated here in fp32
    (e.g. a where on a constant condition): its result is an immediate."""
    x = [np.float32(v) for v in values]
    with np.errstate(all="ignore"):
        if isinstance(op, arith.SelectOp):
            return float(x[1] if x[0] != 0 else x[2])
        if isinstance(op, arith.NegfOp):
            return float(-x[0])
        if isinstance(op, arith.ExtFOp | arith.TruncFOp | arith.SIToFPOp):
            return float(x[0])
        if isinstance(op, arith.CmpfOp):
            kind = COMPARE[CMPF_PREDICATES[op.predicate.value.data]]
        else:
            kind = BINARY.get(type(op)) or UNARY.get(type(op))  # type: ignore[arg-type]
        if kind is None:
            raise TilingError(f"{op.name} has no vector instruction")
        return float(SCALAR_FOLDS[kind](*x))



Layout = Callable[[tuple[int, ...]], tuple[str, int]]
"""box -> (kind, pitch) of a buffer holding that box in the kernel's layout."""


class MapBodyEmitter:
    """Emits map bodies into `builder`, taking buffers from `pool`, laid out by `layout`."""

    def __init__(self, builder: TileBuilder, pool: BufferPool, layout: Layout):
        self.b, self.pool, self.layout = builder, pool, layout

    def new_buffer(self, box: tuple[int, ...], element: Attribute, buffers: int = 1) -> Buffer:
        kind, pitch = self.layout(box)
        return self.pool.new(kind, box, pitch, element, buffers)

    def run(self, body: Block, args: list[Buffer], result_box: tuple[int, ...], result_element: Attribute,
            consumable: set[Buffer] | None = None, into: Buffer | None = None) -> Buffer:
        """The body's yielded value over `result_box`, its block arguments
        bound to `args`. Buffers in `consumable` die with this body: results
        may be written into them, and the returned buffer may be one of them;
        any other returned buffer is a fresh one the caller owns. `into`: the
        op that yields writes its result there (returned)."""
        if into is not None:
            self.run_into(body, args, [into], consumable)
            return into
        return self._run(body, args, result_box, result_element, consumable or set(), None)  # type: ignore[return-value]

    def run_into(self, body: Block, args: list[Buffer], outs: list[Buffer], consumable: set[Buffer] | None = None) -> None:
        """The body's yielded values written into `outs`, one per value (a
        loop fusion yields several): the op that computes a yielded value
        writes it there directly."""
        self._run(body, args, outs[0].box, outs[0].element, consumable or set(), outs)

    def _run(self, body: Block, args: list[Buffer], result_box: tuple[int, ...], result_element: Attribute,
             consumable: set[Buffer], outs: list[Buffer] | None) -> Buffer | None:
        targets: dict[SSAValue, Buffer] = {}  # a yielded value -> the buffer its op writes
        if outs is not None and isinstance(body.last_op, st.YieldOp):
            for v, buf in zip(body.last_op.values, outs):
                targets.setdefault(v, buf)
        env: dict[SSAValue, Buffer | float] = dict(zip(body.args, args))
        uses_left = {v: len(list(v.uses)) for v in body.args}
        uses_left.update({v: len(list(v.uses)) for o in body.ops for v in o.results})
        holders: dict[Buffer, list[SSAValue]] = {}
        for v, x in env.items():
            holders.setdefault(x, []).append(v)  # type: ignore[arg-type]
        writable: set[Buffer] = set(consumable)  # temporaries of this body, and the consumable args

        def dead(buf: Buffer) -> bool:
            return all(uses_left[v] == 0 for v in holders.get(buf, []))

        for inner in body.ops:
            if isinstance(inner, st.YieldOp):
                if outs is not None:
                    for v, target in zip(inner.values, outs):
                        out = env[v]
                        if isinstance(out, float):  # a constant
                            self.dup(target, out)
                        elif out is not target:  # an argument, or a value yielded twice
                            self.vector("adds", target, [out], 0.0)
                    return None
                out = env[inner.values[0]]
                if not isinstance(out, Buffer):
                    buf = self.new_buffer(result_box, result_element)
                    self.dup(buf, out)
                    return buf
                if out not in writable or out.box != result_box:
                    buf = self.new_buffer(result_box, out.element)
                    self.vector("adds", buf, [out], 0.0)
                    if out in writable and out not in consumable:
                        self.pool.release(out)
                    return buf
                return out
            if isinstance(inner, arith.ConstantOp):
                value = inner.value.value.data  # type: ignore[union-attr]
                is_bool = getattr(inner.result.type, "width", None) is not None and inner.result.type.width.data == 1
                env[inner.result] = float(value != 0) if is_bool else float(value)
                continue
            why = body_op_supported(inner)
            if why is not None:
                raise TilingError(f"{why} (in a tile.map body)")
            operands = [env[v] for v in inner.operands]
            for v in inner.operands:
                uses_left[v] -= 1
            reusable = [x for x in operands if isinstance(x, Buffer) and x in writable and dead(x)]
            forced = targets.get(inner.results[0])
            result = self.body_op(inner, operands, reusable, forced)
            env[inner.results[0]] = result
            if isinstance(result, Buffer):
                holders.setdefault(result, []).append(inner.results[0])
                writable.add(result)
            for x in {id(x): x for x in operands if isinstance(x, Buffer)}.values():
                if x is not result and x in writable and dead(x) and x not in consumable:
                    self.pool.release(x)
        raise TilingError("a map body without tile.yield")  # pragma: no cover - the verifier requires it

    def body_op(self, op: Operation, operands: list, reusable: list[Buffer], forced: Buffer | None = None) -> Buffer | float:
        """One body op; `reusable`: operand buffers that die here (the result
        may go into one); `forced`: the buffer the result must go into."""
        if all(not isinstance(x, Buffer) for x in operands):
            if forced is not None:
                self.dup(forced, fold_scalar(op, operands))
                return forced
            return fold_scalar(op, operands)
        element = op.results[0].type
        if not isinstance(element, Float16Type | Float32Type):  # a comparison's i1: a 0/1 mask
            element = next(x.element for x in operands if isinstance(x, Buffer))
        bufs = [x for x in operands if isinstance(x, Buffer)]
        if isinstance(op, arith.SIToFPOp):  # an integer operand, converted once where it is read
            src = bufs[0]
            dst = forced or self.new_buffer(src.box, element)
            self.b.emit(t.CastOp(dst.ref, src.ref, min(dst.count(), src.count())))
            return dst
        bufs = [x for x in operands if isinstance(x, Buffer)]
        box = tuple(max(d) for d in zip(*(b.box for b in bufs)))
        if isinstance(op, arith.ExtFOp | arith.TruncFOp):
            src = bufs[0]
            dst = forced or self.new_buffer(src.box, element)
            self.b.emit(t.CastOp(dst.ref, src.ref, min(dst.count(), src.count())))
            return dst
        dst = forced or self._destination(box, element, reusable)
        if type(op) in UNARY:
            self.vector(UNARY[type(op)], dst, bufs)
        elif isinstance(op, arith.NegfOp):
            self.vector("muls", dst, bufs, -1.0)
        elif type(op) in BINARY:
            kind = BINARY[type(op)]
            a, b = operands
            if isinstance(a, Buffer) and isinstance(b, Buffer):
                self.vector(kind, dst, [a, b])
            elif kind not in SCALAR_FORM and kind not in ("sub", "div"):  # no immediate form (an xor's cmp_ne)
                self.vector(kind, dst, [self._materialise(x, box, element) for x in operands])
            elif kind == "max" and 0.0 in (a, b):  # max(x, 0): the relu instruction
                self.vector("relu", dst, bufs)
            elif isinstance(b, float):
                if kind == "sub":
                    self.vector("adds", dst, [a], -b)
                elif kind == "div":
                    self.vector("muls", dst, [a], 1.0 / b)
                else:
                    self.vector(SCALAR_FORM[kind], dst, [a], b)
            else:  # constant first
                if kind == "sub":  # c - x
                    self.vector("muls", dst, [b], -1.0)
                    self.vector("adds", dst, [dst], a)
                elif kind == "div":  # c / x
                    self.vector("rec", dst, [b])
                    if a != 1.0:
                        self.vector("muls", dst, [dst], a)
                else:
                    self.vector(SCALAR_FORM[kind], dst, [b], a)
        elif isinstance(op, arith.CmpfOp):
            kind = COMPARE[CMPF_PREDICATES[op.predicate.value.data]]
            self.vector(kind, dst, [self._materialise(x, box, bufs[0].element) for x in operands])
        elif isinstance(op, arith.SelectOp):
            srcs = [self._materialise(x, box, element) for x in operands]
            self.vector("sel", dst, srcs)
        else:  # pragma: no cover - body_op_supported filtered the rest
            raise TilingError(f"{op.name} has no vector instruction")
        return dst

    def _destination(self, box: tuple[int, ...], element: Attribute, reusable: list[Buffer]) -> Buffer:
        """A dying operand of the same box and layout (elementwise in place), else a fresh buffer."""
        layout = self.layout(box)
        for x in reusable:
            if x.box == box and x.element == element and (x.kind, x.pitch) == layout:
                if x.replicated is not None:  # its brcb copy goes stale
                    self.pool.release(x.replicated)
                    x.replicated = None
                return x
        return self.new_buffer(box, element)

    def _materialise(self, x, box, element) -> Buffer:
        if isinstance(x, Buffer):
            return x
        buf = self.new_buffer(tuple(1 for _ in box), element)
        self.dup(buf, x)
        return buf

    def dup(self, buf: Buffer, value: float) -> None:
        self.b.emit(t.DupOp(buf.ref, buf.elements(), value))

    def replicated(self, buf: Buffer) -> Buffer:
        """A column with each element over one 32-byte block (brcb)."""
        if buf.replicated is None:
            epb = per_block(buf.element)
            ref = self.pool.take("replicated", buf.rows, epb, buf.element)
            self.b.vec("brcb", ref, [buf.ref], [buf.rows], [[epb], [1]])
            buf.replicated = Buffer(ref, buf.box, buf.element, "replicated", epb)
        return buf.replicated

    def vector(self, kind: str, dst: Buffer, srcs: list[Buffer], scalar: float | None = None) -> None:
        """dst = kind(srcs) over dst's box, broadcasting srcs along their unit dims."""
        if all(s.box == dst.box and s.kind == dst.kind for s in srcs):
            # the same box everywhere: one contiguous run (padded rows included)
            self.b.vec(kind, dst.ref, [s.ref for s in srcs], [dst.count()], [[1]] * (1 + len(srcs)), scalar)
            return
        n = len(dst.box)
        dims = n if dst.kind == "row" else n - 1  # a compact column: its leading dims only
        shape = list(dst.box[:dims]) or [1]
        if dst.kind == "row":
            # rows to the end of their last 32-byte block (inside every row
            # buffer's pitch): the vector unit masks whole blocks only; what
            # lands in the padding is never stored or reduced
            shape[-1] = round_up(shape[-1], per_block(dst.element))

        def broadcast_strides(s: Buffer) -> list[int]:
            ss = s.strides()
            return [0 if s.box[k] == 1 and dst.box[k] > 1 else ss[k] for k in range(dims)] or [0]

        operands, strides = [], [dst.strides()[:dims] or [1]]
        for s in srcs:
            if s.kind == "row" and s.box[-1] == 1 and dst.box[-1] > 1:
                raise TilingError("a row operand of width 1 cannot broadcast along a row")
            if dst.kind == "row" and s.kind == "column":
                s = self.replicated(s)  # read each element's block with block stride 0
            elif dst.kind == "column" and broadcast_strides(s)[-1] == 0 and shape[-1] > 1:
                s = self.replicated(s)
            operands.append(s.ref)
            strides.append(broadcast_strides(s))
        self.b.vec(kind, dst.ref, operands, shape, strides, scalar)
