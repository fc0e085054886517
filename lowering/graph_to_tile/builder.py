"""`TileKernelBuilder`: appends the body of one tile.kernel.

Index arithmetic on Python ints folds at compile time; only values that
depend on a loop variable or the core index become arith ops. Index
constants are hoisted to the top of the kernel, one per value."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from xdsl.builder import Builder, InsertPoint
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, StringAttr
from xdsl.ir import Attribute, Block, Operation, SSAValue

from gedialects.tile import ops as t

Index = int | SSAValue
"""A static (int) or dynamic (SSA index) value."""

PIPELINE_ATTR = "tile.pipeline"
"""Marks a loop whose double buffers alternate per iteration (ping-pong)."""


class TileKernelBuilder:
    """Builds one tile.kernel; `elem` is the default element type of its buffers."""

    def __init__(self, kernel: t.KernelOp, elem: Attribute):
        self.op = kernel
        self.elem = elem
        self.entry = kernel.body.block
        self.builder = Builder(InsertPoint.at_end(self.entry))
        self._constants: dict[int, SSAValue] = {}

    def emit(self, op: Operation) -> Operation:
        self.builder.insert(op)
        return op

    # -- index arithmetic ----------------------------------------------------
    def constant(self, value: int) -> SSAValue:
        if value not in self._constants:
            op = arith.ConstantOp(IntegerAttr(value, IndexType()))
            first = self.entry.first_op
            if first is None:
                self.entry.add_op(op)
            else:
                self.entry.insert_op_before(op, first)
            self._constants[value] = op.result
        return self._constants[value]

    def as_value(self, x: Index) -> SSAValue:
        return self.constant(x) if isinstance(x, int) else x

    def _binary(self, op_class, fold, a: Index, b: Index) -> Index:
        if isinstance(a, int) and isinstance(b, int):
            return fold(a, b)
        return self.emit(op_class(self.as_value(a), self.as_value(b))).results[0]

    def add(self, a: Index, b: Index) -> Index:
        if isinstance(b, int) and b == 0:
            return a
        if isinstance(a, int) and a == 0:
            return b
        return self._binary(arith.AddiOp, lambda x, y: x + y, a, b)

    def mul(self, a: Index, b: Index) -> Index:
        if b == 1:
            return a
        return self._binary(arith.MuliOp, lambda x, y: x * y, a, b)

    def div(self, a: Index, b: Index) -> Index:
        if b == 1:
            return a
        return self._binary(arith.FloorDivSIOp, lambda x, y: x // y, a, b)

    def rem(self, a: Index, b: Index) -> Index:
        return self._binary(arith.RemSIOp, lambda x, y: x % y, a, b)

    def min(self, a: Index, b: Index) -> Index:
        return self._binary(arith.MinSIOp, min, a, b)

    def block_idx(self) -> SSAValue:
        return self.emit(t.BlockIdxOp()).results[0]

    # -- loops ---------------------------------------------------------------
    @contextmanager
    def loop(self, lower: Index, upper: Index, step: int = 1, pipeline: bool = False) -> Iterator[SSAValue]:
        """An scf.for; the body is built inside the `with`, the induction
        variable is what it yields. `pipeline`: ping-pong its double buffers."""
        body = Block(arg_types=[IndexType()])
        op = scf.ForOp(self.as_value(lower), self.as_value(upper), self.as_value(step), [], body)
        if pipeline:
            op.attributes[PIPELINE_ATTR] = StringAttr("ping-pong")
        self.emit(op)
        outer = self.builder
        self.builder = Builder(InsertPoint.at_end(body))
        try:
            yield body.args[0]
        finally:
            body.add_op(scf.YieldOp())
            self.builder = outer

    @contextmanager
    def tiles(self, count: int, block_dim: int, pipeline: bool = False) -> Iterator[SSAValue]:
        """Loop over this core's share of `count` tiles."""
        per_core = -(-count // block_dim)
        if block_dim == 1:
            lower, upper = 0, count
        else:
            lower = self.mul(self.block_idx(), per_core)
            upper = self.min(self.add(lower, per_core), count)
        with self.loop(lower, upper, 1, pipeline) as tile:
            yield tile

    # -- buffers, GM and data ------------------------------------------------
    def alloc(self, space: str, n: int, layout: str = "ND", buffers: int = 1, elem=None) -> SSAValue:
        """An on-chip buffer of n elements (`buffers=2`: double-buffered)."""
        return self.emit(t.AllocOp(space, elem or self.elem, [n], layout, buffers)).results[0]

    def gm(self, name: str, elem=None) -> SSAValue:
        """A reference to the GM tensor `name`."""
        return self.emit(t.GmOp(name, elem or self.elem)).results[0]

    def at(self, ref: SSAValue, offset: int = 0, dynamic: Index = 0) -> SSAValue:
        """ref advanced by `offset` + `dynamic` elements."""
        if isinstance(dynamic, int):
            offset, dynamic = offset + dynamic, None
        if offset == 0 and dynamic is None:
            return ref
        return self.emit(t.AtOp(ref, offset, dynamic)).results[0]

    def copy(self, dst, src, shape, dst_strides, src_strides, cast=False) -> None:
        self.emit(t.CopyOp(dst, src, shape, dst_strides, src_strides, cast))

    def vec(self, op, dst, srcs, shape, strides, scalar=None) -> None:
        self.emit(t.VecOp(op, dst, srcs, shape, strides, scalar))
