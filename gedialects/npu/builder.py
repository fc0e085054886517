"""A small builder for npu programs, for hand-written kernels and for lowering.

    pb = ProgramBuilder("add", gm_size=3 * 4096)
    pb.input("x", 0, (2048,), "f16"); pb.input("y", 4096, (2048,), "f16")
    pb.output("z", 8192, (2048,), "f16")
    with pb.kernel("add") as k:
        i = k.block_idx()
        with k.loop(0, 4) as j:              # scf.for over index values
            off = k.add(k.mul(i, 4096), k.mul(j, 1024))
            k.emit(DmaOp("mte2", k.ptr("ub", 0), k.ptr("gm", 0, off), len=1024))
            ...
    pb.launch("add", block_dim=2)
    module = pb.module()

Integer arguments of `add`/`mul`/... and `ptr(dyn=...)` become `arith.constant`s
hoisted to the top of the kernel; values are `index` SSA values.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np
from xdsl.builder import Builder, InsertPoint
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    Float16Type,
    Float32Type,
    IndexType,
    IntegerType,
    ModuleOp,
    TensorType,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue

from gedialects.index_ops import binary, index_constant
from gedialects.npu import ops as npu
from gedialects.npu.isa import MemSpace, Pipe

Value = SSAValue | int

_ELEM: dict[str, Attribute] = {
    "f16": Float16Type(),
    "f32": Float32Type(),
    "i8": IntegerType(8),
    "i32": IntegerType(32),
    "i64": IntegerType(64),
}


def tensor_type(shape: Sequence[int], dtype: str) -> TensorType:
    return TensorType(_ELEM[dtype], list(shape))


class KernelBuilder:
    """Appends ops to one npu.kernel body (or a loop body inside it)."""

    def __init__(self, kernel: npu.KernelOp):
        self.kernel = kernel
        self.entry = kernel.body.block
        self.builder = Builder(InsertPoint.at_end(self.entry))
        self._consts: dict[int, SSAValue] = {}
        self._static_ptrs: dict[tuple[MemSpace, int, str | None], SSAValue] = {}
        self._computed: dict[Block, dict[tuple, SSAValue]] = {}

    def emit(self, op: Operation) -> Operation:
        self.builder.insert(op)
        return op

    # -- scalars -------------------------------------------------------------

    def const(self, value: int) -> SSAValue:
        """An index constant, created once at the top of the kernel."""
        if value not in self._consts:
            op = index_constant(value)
            first = self.entry.first_op
            if first is None:
                self.entry.add_op(op)
            else:
                self.entry.insert_op_before(op, first)
            self._consts[value] = op.result
        return self._consts[value]

    def value(self, v: Value) -> SSAValue:
        return self.const(v) if isinstance(v, int) else v

    def _once(self, key: tuple, build) -> SSAValue:
        """The result of `build()` emitted, or of the op an equal `key` built
        earlier in the block being built (it dominates what follows)."""
        computed = self._computed.setdefault(self.builder.insertion_point.block, {})
        if key not in computed:
            computed[key] = self.emit(build()).results[0]
        return computed[key]

    def index_op(self, cls: type[Operation], a: Value, b: Value) -> SSAValue:
        """`cls(a, b)` for an arith op on index values; an equal op already
        in the block being built is reused (a loop body's offsets recompute
        the same products and sums: densenet121's kernels repeated 1,827 of
        their 5,823 arith ops), so the scalar unit issues it once."""
        lhs, rhs = self.value(a), self.value(b)
        return self._once((cls, lhs, rhs), lambda: binary(cls, lhs, rhs))

    def add(self, a: Value, b: Value) -> SSAValue:
        return self.index_op(arith.AddiOp, a, b)

    def sub(self, a: Value, b: Value) -> SSAValue:
        return self.index_op(arith.SubiOp, a, b)

    def mul(self, a: Value, b: Value) -> SSAValue:
        return self.index_op(arith.MuliOp, a, b)

    def min(self, a: Value, b: Value) -> SSAValue:
        return self.index_op(arith.MinSIOp, a, b)

    def rem(self, a: Value, b: Value) -> SSAValue:
        return self.index_op(arith.RemSIOp, a, b)

    def block_idx(self) -> SSAValue:
        return self.emit(npu.BlockIdxOp()).results[0]

    def block_num(self) -> SSAValue:
        return self.emit(npu.BlockNumOp()).results[0]

    def ptr(
        self, space: MemSpace | str, offset: int = 0, dyn: Value | None = None,
        extent: int | None = None, tensor: str | None = None,
    ) -> SSAValue:
        """A pointer `space[offset + dyn]`, within `extent` bytes of `offset` if given.
        A static one is created once, at the top of the kernel (pointers cost
        nothing at run time; a kernel names the same buffers over and over).
        `tensor`: the GM tensor it points into; pointers into two tensors are
        two ops even where the tensors share bytes (one written in place over
        the other), so each can be moved with its tensor (tile-share-alike-kernels)."""
        space = MemSpace(space)
        if dyn is None:
            key = (space, offset, tensor)
            if key not in self._static_ptrs:
                op = npu.PtrOp.at(space, offset)
                if self._static_ptrs:  # in the order they are first used, after the index constants
                    self.entry.insert_op_after(op, next(reversed(self._static_ptrs.values())).owner)  # type: ignore[arg-type]
                else:
                    after = self.entry.first_op
                    while isinstance(after, arith.ConstantOp):
                        after = after.next_op
                    self.entry.add_op(op) if after is None else self.entry.insert_op_before(op, after)
                self._static_ptrs[key] = op.result
            return self._static_ptrs[key]
        dyn = self.value(dyn)  # an equal pointer already in the block is reused, as index ops are
        return self._once((space, offset, dyn, extent, tensor), lambda: npu.PtrOp.at(space, offset, dyn, extent))

    @contextmanager
    def loop(self, lb: Value, ub: Value, step: Value = 1) -> Iterator[SSAValue]:
        """`scf.for iv = lb to ub step step`; ops emitted inside the `with` go
        into the loop body."""
        body = Block(arg_types=[IndexType()])
        op = scf.ForOp(self.value(lb), self.value(ub), self.value(step), [], body)
        self.emit(op)
        outer = self.builder
        self.builder = Builder(InsertPoint.at_end(body))
        try:
            yield body.args[0]
        finally:
            body.add_op(scf.YieldOp())
            self.builder = outer

    # -- sync ----------------------------------------------------------------

    def set_flag(self, src: Pipe | str, dst: Pipe | str, event: int) -> Operation:
        return self.emit(npu.SetFlagOp(src, dst, event))

    def wait_flag(self, src: Pipe | str, dst: Pipe | str, event: int) -> Operation:
        return self.emit(npu.WaitFlagOp(src, dst, event))

    def barrier(self, pipe: Pipe | str = Pipe.ALL) -> Operation:
        return self.emit(npu.PipeBarrierOp(pipe))


class ProgramBuilder:
    """Builds one npu.program: GM layout (and host memory), kernels, launches, copies."""

    def __init__(self, name: str = "main", gm_size: int = 1 << 20, host_size: int = 0):
        self.program = npu.ProgramOp(name, gm_size, host_size=host_size)
        self.block = self.program.body.block

    def input(
        self, name: str, offset: int, shape: Sequence[int], dtype: str
    ) -> npu.InputOp:
        op = npu.InputOp(name, offset, tensor_type(shape, dtype))
        self.block.add_op(op)
        return op

    def output(
        self, name: str, offset: int, shape: Sequence[int], dtype: str
    ) -> npu.OutputOp:
        op = npu.OutputOp(name, offset, tensor_type(shape, dtype))
        self.block.add_op(op)
        return op

    def constant(
        self, name: str, offset: int, data: np.ndarray, dtype: str
    ) -> npu.ConstantOp:
        """A constant placed in GM; small ones as dense<...> attributes."""
        ttype = tensor_type(data.shape, dtype)
        values = (
            [float(x) for x in np.asarray(data).ravel()]
            if dtype.startswith("f")
            else [int(x) for x in np.asarray(data).ravel()]
        )
        attr = DenseIntOrFPElementsAttr.from_list(ttype, values)
        op = npu.ConstantOp(name, offset, attr)
        self.block.add_op(op)
        return op

    @contextmanager
    def kernel(self, name: str) -> Iterator[KernelBuilder]:
        op = npu.KernelOp(name)
        self.block.add_op(op)
        yield KernelBuilder(op)

    def launch(self, kernel: str, block_dim: int = 1, stream: int = 0) -> npu.LaunchOp:
        op = npu.LaunchOp(kernel, block_dim, stream)
        self.block.add_op(op)
        return op

    def memcpy(
        self, name: str, direction: str, gm_offset: int, host_offset: int, nbytes: int, stream: int = 0
    ) -> npu.MemcpyOp:
        """A copy between GM and host memory (direction d2h or h2d)."""
        op = npu.MemcpyOp(name, direction, gm_offset, host_offset, nbytes, stream)
        self.block.add_op(op)
        return op

    def stream_record(self, stream: int, event: int) -> None:
        self.block.add_op(npu.StreamRecordOp(stream, event))

    def stream_wait(self, stream: int, event: int) -> None:
        self.block.add_op(npu.StreamWaitOp(stream, event))

    def module(self) -> ModuleOp:
        """The program wrapped in a builtin.module (detaches it from the builder)."""
        return ModuleOp([self.program])
