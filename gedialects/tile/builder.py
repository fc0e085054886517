"""Building loop-level tile IR: index arithmetic folded where static, loops
over a core's share of tiles, buffers, GM references, copies, vector ops."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from xdsl.builder import Builder, InsertPoint
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, StringAttr
from xdsl.ir import Attribute, Block, Operation, SSAValue

from gedialects.index_ops import binary, index_constant
from gedialects.tile import ops as t

Index = int | SSAValue
PIPELINE_ATTR = "tile.pipeline"
PING_PONG = "ping-pong"
"""A pipelined loop's first iteration uses the first copy of each double buffer."""
PONG_PING = "pong-ping"
"""A pipelined loop's first iteration uses the second copy (an iteration peeled before it used the first)."""
"""Marks a loop whose double buffers alternate per iteration (ping-pong)."""


class TileBuilder:
    """Appends ops to a block (a kernel body, then loop bodies)."""

    def __init__(self, block: Block, constants_block: Block | None = None):
        self.builder = Builder(InsertPoint.at_end(block))
        self.constants_block = constants_block or block
        self._constants: dict[int, SSAValue] = {}
        self._last_alloc: Operation | None = None

    def emit(self, op: Operation) -> Operation:
        self.builder.insert(op)
        return op

    # -- index values ----------------------------------------------------
    def constant(self, value: int) -> SSAValue:
        if value not in self._constants:
            op = index_constant(value)
            first = self.constants_block.first_op
            if first is None:
                self.constants_block.add_op(op)
            else:
                self.constants_block.insert_op_before(op, first)
            self._constants[value] = op.result
        return self._constants[value]

    def value(self, x: Index) -> SSAValue:
        return self.constant(x) if isinstance(x, int) else x

    def _binary(self, cls, fold, a: Index, b: Index) -> Index:
        if isinstance(a, int) and isinstance(b, int):
            return fold(a, b)
        return self.emit(binary(cls, self.value(a), self.value(b))).results[0]

    def add(self, a: Index, b: Index) -> Index:
        if isinstance(b, int) and b == 0:
            return a
        if isinstance(a, int) and a == 0:
            return b
        return self._binary(arith.AddiOp, lambda x, y: x + y, a, b)

    def mul(self, a: Index, b: int) -> Index:
        if b == 1 or (isinstance(a, int) and a == 0):
            return a
        if b == 0:
            return 0
        return self._binary(arith.MuliOp, lambda x, y: x * y, a, b)

    def div(self, a: Index, b: int) -> Index:
        return a if b == 1 else self._binary(arith.FloorDivSIOp, lambda x, y: x // y, a, b)

    def rem(self, a: Index, b: int) -> Index:
        return 0 if b == 1 else self._binary(arith.RemSIOp, lambda x, y: x % y, a, b)

    def min(self, a: Index, b: Index) -> Index:
        return self._binary(arith.MinSIOp, min, a, b)

    def max(self, a: Index, b: Index) -> Index:
        return self._binary(arith.MaxSIOp, max, a, b)

    def block_idx(self) -> SSAValue:
        return self.emit(t.BlockIdxOp()).results[0]

    # -- structure ---------------------------------------------------------
    @contextmanager
    def loop(self, lower: Index, upper: Index, step: int = 1, pipeline: bool = False,
             after_first: bool = False) -> Iterator[SSAValue]:
        """An scf.for; the body is built inside the `with`, the induction
        variable is what it yields. `pipeline`: ping-pong its double buffers;
        `after_first`: the loop continues an iteration emitted before it
        (which used the first copies), so its own first iteration takes the
        second copies ("pong-ping") and does not wait for that one's reads."""
        body = Block(arg_types=[IndexType()])
        op = scf.ForOp(self.value(lower), self.value(upper), self.value(step), [], body)
        if pipeline:
            op.attributes[PIPELINE_ATTR] = StringAttr(PONG_PING if after_first else PING_PONG)
        self.emit(op)
        outer = self.builder
        self.builder = Builder(InsertPoint.at_end(body))
        try:
            yield body.args[0]
        finally:
            body.add_op(scf.YieldOp())
            self.builder = outer

    @contextmanager
    def core_tiles(self, count: int, cores: int, per_core: int, pipeline: bool) -> Iterator[SSAValue]:
        """Loop over this core's tiles: [b * per_core, min((b + 1) * per_core, count))."""
        if cores == 1:
            lower, upper = 0, count
        else:
            lower = self.mul(self.block_idx(), per_core)
            upper = self.min(self.add(lower, per_core), count)
        with self.loop(lower, upper, 1, pipeline) as tile:
            yield tile

    # -- references and data -----------------------------------------------
    def alloc(self, space: str, element: Attribute, count: int, buffers: int = 1) -> SSAValue:
        return self.alloc_at_entry(space, element, count, buffers)

    def alloc_at_entry(self, space: str, element: Attribute, count: int, buffers: int = 1) -> SSAValue:
        """A buffer, declared at the top of the kernel (after the earlier ones)
        wherever it is first used: buffers live for the whole kernel."""
        op = t.AllocOp(space, element, [count], "ND", buffers)
        block = self.constants_block
        if self._last_alloc is not None:
            block.insert_op_after(op, self._last_alloc)
        elif block.first_op is not None:
            block.insert_op_before(op, block.first_op)
        else:
            block.add_op(op)
        self._last_alloc = op
        return op.result

    def gm(self, tensor: str, element: Attribute) -> SSAValue:
        return self.emit(t.GmOp(tensor, element)).results[0]

    def at(self, ref: SSAValue, dynamic: Index = 0, offset: int = 0, within: int | None = None) -> SSAValue:
        """ref advanced by `offset` + `dynamic` elements; `within`: the
        elements from there that accesses through it stay in (tile.at)."""
        if isinstance(dynamic, int):
            offset, dynamic = offset + dynamic, None
        if offset == 0 and dynamic is None and within is None:
            return ref
        return self.emit(t.AtOp(ref, offset, dynamic, within)).results[0]

    def copy(self, dst: SSAValue, src: SSAValue, shape: Sequence[int], dst_strides: Sequence[int],
             src_strides: Sequence[int], cast: bool = False) -> None:
        self.emit(t.CopyOp(dst, src, shape, dst_strides, src_strides, cast))

    def vec(self, op: str, dst: SSAValue, srcs: Sequence[SSAValue], shape: Sequence[int],
            strides: Sequence[Sequence[int]], scalar: float | None = None) -> None:
        self.emit(t.VecOp(op, dst, srcs, shape, strides, scalar))


class TileKernelBuilder(TileBuilder):
    """Builds the body of one loop-level tile.kernel; `elem` is the default
    element type of its buffers and GM references. Buffers are declared
    where they are first used; index arithmetic on Python ints folds at
    build time, and index constants are hoisted to the top of the kernel,
    one per value."""

    def __init__(self, kernel: t.KernelOp, elem: Attribute):
        super().__init__(kernel.body.block)
        self.op = kernel
        self.elem = elem
        self.entry = kernel.body.block

    @contextmanager
    def tiles(self, count: int, block_dim: int, pipeline: bool = False) -> Iterator[SSAValue]:
        """Loop over this core's share of `count` tiles."""
        with self.core_tiles(count, block_dim, -(-count // block_dim), pipeline) as tile:
            yield tile

    def alloc(self, space: str, n: int, layout: str = "ND", buffers: int = 1, elem=None) -> SSAValue:  # type: ignore[override]
        """An on-chip buffer of n elements (`buffers=2`: double-buffered), declared here."""
        return self.emit(t.AllocOp(space, elem or self.elem, [n], layout, buffers)).results[0]

    def gm(self, name: str, elem=None) -> SSAValue:  # type: ignore[override]
        """A reference to the GM tensor `name`."""
        return super().gm(name, elem or self.elem)

    def at(self, ref: SSAValue, offset: int = 0, dynamic: Index = 0,  # type: ignore[override]
           within: int | None = None) -> SSAValue:
        """ref advanced by `offset` + `dynamic` elements (`within`: tile.at's)."""
        return super().at(ref, dynamic, offset, within)
