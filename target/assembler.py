"""Assembler: an npu-dialect module -> a compact `Program` (the offline model).

Decoding happens once. SSA index values become registers; `arith.constant`s
become initial register values; `npu.ptr` folds into (register, immediate)
address pairs of the instructions that use it; `scf.for` becomes a FOR/ENDFOR
pair (loops stay loops, so code size does not grow with trip counts).
`npu.aicpu` tasks become `AicpuTask`s (target/aicpu.py) with schedule entries
("aicpu", task index, stream), `npu.memcpy` copies `MemcpyTask`s with entries
("memcpy", task index, stream).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from xdsl.dialect_interfaces.op_asm import OpAsmDialectInterface
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import (
    ArrayAttr,
    BFloat16Type,
    Builtin,
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    FileLineColLoc,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    NameLoc,
    StringAttr,
    TensorType,
    UnknownLoc,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.utils.exceptions import DiagnosticException

from gedialects.npu import ops as npu
from gedialects.npu.isa import DMA_PATHS, PIPE_INDEX, SPACE_INDEX, MemSpace, Pipe
from gedialects.npu.syntax import dtype_name
from gedialects.npu.vector_ops import kind_id
from target import program as P
from target.errors import AssemblyError

PATHS = tuple(DMA_PATHS)  # path index -> (src, dst)
PATH_INDEX = {p: i for i, p in enumerate(PATHS)}

_ARITH_BINARY: dict[type, int] = {
    arith.AddiOp: P.ADD,
    arith.SubiOp: P.SUB,
    arith.MuliOp: P.MUL,
    arith.DivSIOp: P.DIVS,
    arith.DivUIOp: P.FLOORDIV,
    arith.FloorDivSIOp: P.FLOORDIV,
    arith.CeilDivSIOp: P.CEILDIV,
    arith.CeilDivUIOp: P.CEILDIV,
    arith.RemSIOp: P.REMS,
    arith.RemUIOp: P.REMS,
    arith.MinSIOp: P.MIN,
    arith.MinUIOp: P.MIN,
    arith.MaxSIOp: P.MAX,
    arith.MaxUIOp: P.MAX,
}


def loc_text(op: Operation) -> str:
    loc = op.location
    if isinstance(loc, UnknownLoc):
        return ""
    if isinstance(loc, NameLoc):
        return f'loc("{loc.desc.data}")'
    if isinstance(loc, FileLineColLoc):
        return f"loc({loc.filename.data}:{loc.line.data}:{loc.column.data})"
    return f"loc({loc})"


def _describe(op: Operation) -> str:
    where = loc_text(op)
    return f"{op.name}{' at ' + where if where else ''}"


def numpy_dtype(t: Attribute) -> np.dtype:
    if isinstance(t, Float16Type):
        return np.dtype(np.float16)
    if isinstance(t, Float32Type):
        return np.dtype(np.float32)
    if isinstance(t, Float64Type):
        return np.dtype(np.float64)
    if isinstance(t, IntegerType):
        width = t.width.data
        if width in (8, 16, 32, 64):
            unsigned = t.signedness.data.name == "UNSIGNED"
            return np.dtype(f"{'u' if unsigned else ''}int{width}")
        if width == 1:
            return np.dtype(np.bool_)
    if isinstance(t, BFloat16Type):
        raise AssemblyError("bf16 tensors are not supported by the simulator")
    raise AssemblyError(f"unsupported element type {t}")


def constant_bytes(op: npu.ConstantOp) -> bytes:
    """The raw bytes of an npu.constant (dense or dense_resource)."""
    value = op.value
    ttype = value.type
    assert isinstance(ttype, TensorType)
    dtype = numpy_dtype(ttype.get_element_type())
    count = int(np.prod(ttype.get_shape(), dtype=np.int64))
    if isinstance(value, DenseResourceAttr):
        key = value.resource_handle.data
        blob = Builtin.get_interface(OpAsmDialectInterface).lookup(key)
        if not blob:
            raise AssemblyError(
                f"{_describe(op)}: no blob for dense_resource<{key}> in the "
                f"file's dialect_resources section"
            )
        array = getattr(blob, "array", None)  # gedialects ArrayBlob: no hex round trip
        # MLIR blobs start with a 4-byte little-endian alignment word.
        data = (
            np.ascontiguousarray(array).tobytes()
            if array is not None
            else bytes.fromhex(blob[2:])[4:]
        )
        if len(data) != count * dtype.itemsize:
            raise AssemblyError(
                f"{_describe(op)}: blob '{key}' has {len(data)} bytes, "
                f"{ttype} needs {count * dtype.itemsize}"
            )
        return data
    assert isinstance(value, DenseIntOrFPElementsAttr)
    values = np.asarray(value.get_values(), dtype=dtype)
    if values.size == 1 and count != 1:
        values = np.full(count, values.reshape(()), dtype=dtype)
    return values.tobytes()


def kernel_info(op: Operation) -> dict[str, str]:
    """The ge.* attributes lowering put on an npu.kernel (P.KERNEL_INFO_KEYS)
    as strings: the absorbed model nodes ';'-separated."""
    info: dict[str, str] = {}
    for key in P.KERNEL_INFO_KEYS:
        attr = op.attributes.get(f"ge.{key}")
        if isinstance(attr, StringAttr):
            info[key] = attr.data
        elif isinstance(attr, ArrayAttr):
            info[key] = ";".join(a.data for a in attr.data if isinstance(a, StringAttr))
    return info


class _KernelAssembler:
    """Turns one npu.kernel body into code."""

    def __init__(self, kernel: npu.KernelOp, code: npu.KernelOp | None = None):
        """`code`: the kernel whose body `kernel` runs when it is `alike` it."""
        self.kernel = kernel
        self.body = (code or kernel).body.block
        # an alike kernel's instructions are its source's: their locations say so
        self.code_of = code.sym_name.data if code is not None else ""
        self.moves = {} if kernel.moves is None else {n: v.value.data for n, v in kernel.moves.data.items()}
        self.init: list[int] = [0, 0, 0]  # zero, block index, block count
        self.regs: dict[SSAValue, int] = {}
        self.ptrs: dict[SSAValue, tuple[MemSpace, int, int]] = {}
        self.code: list[tuple] = []
        self.locs: list[tuple[str, str]] = []
        self.uses_cube = False

    def new_reg(self, init: int = 0) -> int:
        self.init.append(init)
        return len(self.init) - 1

    def reg(self, value: SSAValue, user: Operation) -> int:
        if value not in self.regs:
            raise AssemblyError(
                f"{_describe(user)}: operand {value.name_hint or value} is not an "
                f"index value the assembler knows (defined by "
                f"{value.owner.name if isinstance(value.owner, Operation) else 'a block'})"
            )
        return self.regs[value]

    def emit(self, op: Operation, ins: tuple) -> int:
        self.code.append(ins)
        where = loc_text(op)
        if self.code_of:
            where = f"{where} (@{self.code_of}'s code)" if where else f"@{self.code_of}'s code"
        self.locs.append((op.name, where))
        return len(self.code) - 1

    def addr(self, value: SSAValue, user: Operation) -> tuple[MemSpace, int, int]:
        if value not in self.ptrs:
            raise AssemblyError(f"{_describe(user)}: pointer operand is not an npu.ptr")
        return self.ptrs[value]

    def run(self) -> P.Kernel:
        self.block(self.body.ops)
        return P.Kernel(
            name=self.kernel.sym_name.data,
            code=tuple(self.code),
            init_regs=tuple(self.init),
            locs=tuple(self.locs),
            uses_cube=self.uses_cube,
            info=kernel_info(self.kernel),
        )

    def block(self, ops) -> None:
        for op in ops:
            self.op(op)

    def op(self, op: Operation) -> None:
        if isinstance(op, arith.ConstantOp):
            value = op.value
            if not hasattr(value, "value") or not isinstance(value.value.data, int):
                raise AssemblyError(
                    f"{_describe(op)}: only integer constants are supported in kernels"
                )
            self.regs[op.result] = self.new_reg(int(value.value.data))
        elif type(op) in _ARITH_BINARY:
            dst = self.new_reg()
            self.regs[op.results[0]] = dst
            self.emit(
                op,
                (
                    _ARITH_BINARY[type(op)],
                    -1,
                    dst,
                    self.reg(op.lhs, op),
                    self.reg(op.rhs, op),
                ),
            )
        elif isinstance(op, arith.IndexCastOp):
            self.regs[op.result] = self.reg(op.input, op)  # same value, new type
        elif isinstance(op, npu.BlockIdxOp):
            self.regs[op.result] = 1
        elif isinstance(op, npu.BlockNumOp):
            self.regs[op.result] = 2
        elif isinstance(op, npu.LoadIndexOp):
            _, reg, imm = self.addr(op.ptr, op)
            dst = self.new_reg()
            self.regs[op.result] = dst
            dtype = P.INDEX_DTYPES.index(f"s{op.dtype.width.data}")
            self.emit(op, (P.LOAD_INDEX, -1, dst, reg, imm, dtype, op.bound.value.data))
        elif isinstance(op, npu.PtrOp):
            reg = 0 if op.dyn is None else self.reg(op.dyn, op)
            offset = op.offset.value.data
            if self.moves and op.mem_space == MemSpace.GM:  # the code of the kernel this one is alike, moved
                tensor = op.attributes.get(npu.GM_TENSOR_ATTR)
                if not isinstance(tensor, StringAttr):
                    raise AssemblyError(f"{_describe(op)}: @{self.kernel.sym_name.data} runs this code with its GM "
                                        f"pointers moved, and this one does not name its tensor ({npu.GM_TENSOR_ATTR})")
                offset += self.moves.get(tensor.data, 0)
            self.ptrs[op.result] = (op.mem_space, reg, offset)
        elif isinstance(op, scf.ForOp):
            self.for_loop(op)
        elif isinstance(op, npu.NpuInstruction):
            encoder = _ENCODERS.get(type(op))
            if encoder is None:
                raise AssemblyError(
                    f"{_describe(op)}: no encoding for this instruction"
                )
            self.emit(op, encoder(self, op))
        else:
            raise AssemblyError(
                f"{_describe(op)}: not allowed in an npu.kernel (use npu instructions, "
                f"npu.ptr, arith on index values and scf.for)"
            )

    def for_loop(self, op: scf.ForOp) -> None:
        lb, ub, step = (self.reg(v, op) for v in (op.lb, op.ub, op.step))
        iv, *iter_args = op.body.block.args
        iter_regs = []
        for arg, init in zip(iter_args, op.iter_args):
            r = self.new_reg()
            self.emit(op, (P.MOV, -1, r, self.reg(init, op)))
            self.regs[arg] = r
            iter_regs.append(r)
        iv_reg = self.new_reg()
        self.regs[iv] = iv_reg
        head = self.emit(op, (P.FOR, -1, iv_reg, lb, ub, step, -1))
        body_ops = list(op.body.block.ops)
        yield_op = (
            body_ops[-1] if body_ops and isinstance(body_ops[-1], scf.YieldOp) else None
        )
        if yield_op is not None:
            body_ops = body_ops[:-1]
        self.block(body_ops)
        copies: list[int] = []
        if yield_op is not None:
            for r, v in zip(iter_regs, yield_op.arguments):
                copies += [r, self.reg(v, yield_op)]
        tail = self.emit(op, (P.ENDFOR, -1, iv_reg, ub, step, head + 1, *copies))
        self.code[head] = (P.FOR, -1, iv_reg, lb, ub, step, tail)
        for res, r in zip(op.results, iter_regs):
            self.regs[res] = r


# ---------------------------------------------------------------------------
# Encoders: one per instruction class
# ---------------------------------------------------------------------------


def _ptrs(a: _KernelAssembler, op: npu.NpuInstruction) -> tuple[int, ...]:
    out: list[int] = []
    for v in op.operands:
        _, r, i = a.addr(v, op)
        out += [r, i]
    out += [0, 0] * (3 - len(op.operands))
    return tuple(out)


def _dtype(op, prop: str = "dtype") -> int:
    return P.DTYPES.index(dtype_name(op.properties[prop]))


def _enc_dma(a: _KernelAssembler, op: npu.DmaOp) -> tuple:
    f = op.fields()
    src, dst = op.src_space, op.dst_space
    return (
        P.DMA,
        PIPE_INDEX[op.pipe()],
        *_ptrs(a, op),
        SPACE_INDEX[src],
        SPACE_INDEX[dst],
        f["nburst"],
        f["len"],
        f["src_gap"],
        f["dst_gap"],
        P.DMA_PAD if f["pad"] else P.DMA_CAST_F16 if f["cast_f16"] else P.DMA_PLAIN,
        PATH_INDEX[(src, dst)],
    )


def _enc_load2d(a: _KernelAssembler, op: npu.Load2dOp) -> tuple:
    f = op.fields()
    dst = op.dst.type.mem_space  # type: ignore[attr-defined]
    return (
        P.LOAD2D,
        PIPE_INDEX[Pipe.MTE1],
        *_ptrs(a, op),
        SPACE_INDEX[dst],
        f["repeat"],
        f["src_stride"],
        int(f["transpose"]),
    )


def _enc_load3d(a: _KernelAssembler, op: npu.Load3dOp) -> tuple:
    f = op.fields()
    keys = (
        "fm_h",
        "fm_w",
        "kh",
        "kw",
        "stride_h",
        "stride_w",
        "pad_top",
        "pad_bottom",
        "pad_left",
        "pad_right",
        "dilation_h",
        "dilation_w",
        "m_start",
        "m_len",
    )
    return (
        P.LOAD3D,
        PIPE_INDEX[Pipe.MTE1],
        *_ptrs(a, op),
        *(f[k] for k in keys),
        int(f["f32"]),
    )


def _enc_mmad(a: _KernelAssembler, op: npu.MmadOp) -> tuple:
    a.uses_cube = True
    f = op.fields()
    return (
        P.MMAD,
        PIPE_INDEX[Pipe.M],
        *_ptrs(a, op),
        _dtype(op),
        f["m"],
        f["n"],
        f["k"],
        int(f["accumulate"]),
    )


def _enc_vector(a: _KernelAssembler, op: npu.VectorOp) -> tuple:
    """Every vector instruction, word by word as its family's encoding says."""
    spec = op.SPEC
    enc = P.VECTOR_ENCODINGS[P.VECTOR_OPCODES[spec.family]]
    f = op.fields()
    words: list = [0] * enc.length
    words[0], words[1] = enc.opcode, PIPE_INDEX[Pipe.V]
    for word, value in zip(enc.addresses, op.operands):
        _, words[word], words[word + 1] = a.addr(value, op)
    if enc.kind is not None:
        words[enc.kind] = kind_id(spec)
    words[enc.dtype] = _dtype(op)
    if enc.src_dtype is not None:
        words[enc.src_dtype] = _dtype(op, "src_dtype")
    words[enc.repeat] = f["repeat"]
    if enc.mask is not None:
        words[enc.mask] = f["mask"]
    for j, role in enumerate(op.ROLES):
        words[enc.blk + j] = f[f"{role}_blk"]
        words[enc.rep + j] = f[f"{role}_rep"]
    if enc.scalar is not None:
        words[enc.scalar] = float(f["scalar"])
    return tuple(words)


def _enc_set(a: _KernelAssembler, op: npu.SetFlagOp) -> tuple:
    src, dst = PIPE_INDEX[op.src], PIPE_INDEX[op.dst]
    return (P.SET_FLAG, src, 0, 0, 0, 0, 0, 0, src, dst, op.event.value.data)


def _enc_wait(a: _KernelAssembler, op: npu.WaitFlagOp) -> tuple:
    src, dst = PIPE_INDEX[op.src], PIPE_INDEX[op.dst]
    if op.dst == Pipe.S:
        return (P.WAIT_S, -1, src, op.event.value.data)
    return (P.WAIT_FLAG, dst, 0, 0, 0, 0, 0, 0, src, dst, op.event.value.data)


def _enc_barrier(a: _KernelAssembler, op: npu.PipeBarrierOp) -> tuple:
    if op.pipe() == Pipe.ALL:
        return (P.BARRIER_ALL, -1)
    return (P.BARRIER, PIPE_INDEX[op.pipe()], 0, 0, 0, 0, 0, 0)


_ENCODERS: dict[type, Callable] = {
    npu.DmaOp: _enc_dma,
    npu.Load2dOp: _enc_load2d,
    npu.Load3dOp: _enc_load3d,
    npu.MmadOp: _enc_mmad,
    **{cls: _enc_vector for cls in npu.VECTOR_OP_CLASSES.values()},
    npu.SetFlagOp: _enc_set,
    npu.WaitFlagOp: _enc_wait,
    npu.PipeBarrierOp: _enc_barrier,
}


# ---------------------------------------------------------------------------
# Program level
# ---------------------------------------------------------------------------


def find_program(module: Operation) -> npu.ProgramOp:
    if isinstance(module, npu.ProgramOp):
        return module
    programs = list(_programs_in(module))
    if len(programs) != 1:
        raise AssemblyError(
            f"expected exactly one npu.program in the module, found {len(programs)}"
        )
    return programs[0]


def _programs_in(op: Operation):
    """The npu.programs nested in `op`, not looking inside them (a walk of
    every op visited each kernel's instructions: 28k for densenet121)."""
    for region in op.regions:
        for block in region.blocks:
            for inner in block.ops:
                if isinstance(inner, npu.ProgramOp):
                    yield inner
                else:
                    yield from _programs_in(inner)


def _slot(op: npu.GmTensorOp) -> P.TensorSlot:
    t = op.tensor_type
    return P.TensorSlot(
        name=op.io_name.data,
        offset=op.offset.value.data,
        shape=tuple(t.get_shape()),
        dtype=numpy_dtype(t.get_element_type()).name,
    )


def _meta(prog: npu.ProgramOp) -> dict:
    """What the program says of itself (saved in the .om header): its
    precision mode, and the GM arena of its intermediates (planned, and
    without reuse, and the bytes of it held at each task) when the compiler
    planned one."""
    meta: dict = {}
    mode = prog.attributes.get("ge.precision_mode")
    if isinstance(mode, StringAttr):
        meta["precision_mode"] = mode.data
    for key in ("arena_bytes", "no_reuse_bytes"):
        value = prog.attributes.get(f"ge.{key}")
        if isinstance(value, IntegerAttr):
            meta[key] = value.value.data
    live = prog.attributes.get("ge.arena_live_bytes")
    if isinstance(live, StringAttr):
        meta["arena_live_bytes"] = live.data
    return meta


def assemble(module: ModuleOp | Operation, *, verify: bool = True) -> P.Program:
    """Assemble the (single) npu.program of `module` into a Program."""
    prog = find_program(module)
    if verify:
        try:
            prog.verify()
        except DiagnosticException as e:
            raise AssemblyError(f"the npu program does not verify: {e}") from e
    kernels: list[P.Kernel] = []
    kernel_index: dict[str, int] = {}
    # the kernels with code of their own, for those alike them
    bodies = {op.sym_name.data: op for op in prog.body.block.ops if isinstance(op, npu.KernelOp) and op.alike is None}
    inputs, outputs, constants, schedule = [], [], [], []
    tasks: list[P.AicpuTask] = []
    copies: list[P.MemcpyTask] = []
    for op in prog.body.block.ops:
        if isinstance(op, npu.InputOp):
            inputs.append(_slot(op))
        elif isinstance(op, npu.OutputOp):
            outputs.append(_slot(op))
        elif isinstance(op, npu.ConstantOp):
            constants.append(
                P.ConstBlob(
                    op.const_name.data, op.offset.value.data, constant_bytes(op)
                )
            )
        elif isinstance(op, npu.KernelOp):
            kernel_index[op.sym_name.data] = len(kernels)
            code = None
            if op.alike is not None:
                code = bodies.get(op.alike.root_reference.data)
                if code is None:
                    raise AssemblyError(f"{_describe(op)}: @{op.alike.root_reference.data} is not a kernel with a body")
            kernels.append(_KernelAssembler(op, code).run())
        elif isinstance(op, npu.LaunchOp):
            name = op.kernel.root_reference.data
            if name not in kernel_index:
                raise AssemblyError(
                    f"{_describe(op)}: kernel @{name} must be defined before its launch"
                )
            schedule.append(
                (
                    "launch",
                    kernel_index[name],
                    op.block_dim.value.data,
                    op.stream.value.data,
                )
            )
        elif isinstance(op, npu.AicpuOp):
            from target.aicpu import task_from_op  # the one graph-dialect user in target/

            tasks.append(task_from_op(op))
            schedule.append(("aicpu", len(tasks) - 1, op.stream.value.data))
        elif isinstance(op, npu.MemcpyOp):
            copies.append(_memcpy_task(op))
            schedule.append(("memcpy", len(copies) - 1, op.stream.value.data))
        elif isinstance(op, npu.StreamRecordOp):
            schedule.append(("record", op.stream.value.data, op.event.value.data))
        elif isinstance(op, npu.StreamWaitOp):
            schedule.append(("wait", op.stream.value.data, op.event.value.data))
        else:
            raise AssemblyError(
                f"{_describe(op)}: not allowed at the top of an npu.program"
            )
    return P.Program(
        name=prog.sym_name.data,
        gm_size=prog.size,
        inputs=tuple(inputs),
        outputs=tuple(outputs),
        constants=tuple(constants),
        kernels=tuple(kernels),
        schedule=tuple(schedule),
        meta=_meta(prog),
        aicpu_tasks=tuple(tasks),
        host_size=prog.host_bytes,
        memcpy_tasks=tuple(copies),
    )


def _memcpy_task(op: npu.MemcpyOp) -> P.MemcpyTask:
    return P.MemcpyTask(
        name=op.task_name,
        direction=op.direction.data,
        gm_offset=op.gm_offset.value.data,
        host_offset=op.host_offset.value.data,
        nbytes=op.nbytes.value.data,
        source=op.source,
        tensor=op.tensor,
    )
