"""convert-tile-to-npu: the mechanics of turning tile kernels into instructions.

* GM: each `tile.tensor` becomes an npu.input/output/constant (internal
  tensors are just byte ranges of the arena).
* On-chip addresses come from tile-allocate (`offset` on every tile.alloc).
* Ping-pong: a loop marked `tile.pipeline` is unrolled by two (plus a
  remainder loop of at most one iteration); the first copy of the body uses
  the first address of every double buffer, the second copy the second
  (swapped for a "pong-ping" loop, which follows a peeled first iteration).
* Expansion: strided copies become DMA bursts (<= 4095 per instruction,
  gaps for strides, static unrolling of outer dims; a GM <-> UB or GM -> L1
  run that is not whole 32-byte blocks on chip is a padded DMA); vector ops become
  repeats of 256 bytes (<= 255 per instruction) with block/repeat strides
  and masks, the dims mapped to blocks and repeats chosen by a cost estimate;
  fractal loads are split at 255.
* Synchronisation is npu-insert-sync's (gedialects/npu/transforms/insert_sync.py):
  dynamic pointers carry the extent of their buffer (`within N`) for it.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr, ModuleOp, StringAttr, SymbolRefAttr, i64
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from gedialects.graph.memory.attributes import NoPlanError, memory_summary
from gedialects.graph.tensors import numpy_dtype, tensor_nbytes
from gedialects.npu import ops as npu
from gedialects.npu.builder import KernelBuilder, ProgramBuilder
from gedialects.npu.dma import plan_copy
from gedialects.npu.vector_plan import reduce_plan, run_plan, vector_plan
from gedialects.npu.isa import (
    BLOCKS_PER_REPEAT,
    DMA_PATHS,
    MAX_NBURST,
    MAX_REPEAT,
    MemSpace,
)
from gedialects.npu.syntax import dtype_name
from gedialects.npu.vector_ops import TILE_SPECS, Family
from gedialects.tile import ops as t
from gedialects.tile import structured as st
from gedialects.tile.builder import PIPELINE_ATTR, PONG_PING
from gedialects.tile.map_kernels import MapKernelOp
from gedialects.tile.transforms.allocate import buffer_bytes
from gedialects.tile.transforms.share_alike import ALIKE_ATTR, ALIKE_TENSORS_ATTR
from lowering.fp16_scaling import MASK_SENTINEL

Index = int | SSAValue


def esize(elem: Attribute) -> int:
    es = t.element_bytes(elem)
    if es is None:
        raise PassFailedException(f"tile->npu: unsupported element type {elem}")
    return es


@dataclass
class Ref:
    base: tuple  # ("alloc", AllocOp) or ("gm", tensor name)
    off: int  # elements
    dyn: Index  # elements (0 if none)
    es: int
    space: str
    end: int | None = None  # elements from the buffer's start that accesses stay below (tile.at's within)


# tile.vec op -> the npu instruction it becomes (the table in gedialects/npu/vector_ops.py).
VECTOR_CLASSES = {name: npu.VECTOR_OP_CLASSES[spec.mnemonic] for name, spec in TILE_SPECS.items()}
ARITH_BIN = {
    arith.AddiOp: lambda a, b: a + b,
    arith.SubiOp: lambda a, b: a - b,
    arith.MuliOp: lambda a, b: a * b,
    arith.FloorDivSIOp: lambda a, b: a // b,
    arith.DivSIOp: lambda a, b: int(a / b),
    arith.DivUIOp: lambda a, b: a // b,
    arith.RemSIOp: lambda a, b: a % b,
    arith.MinSIOp: min,
    arith.MaxSIOp: max,
}


class KernelTranslator:
    HANDLERS: ClassVar[dict[type, Callable]]  # set below the class

    def __init__(self, kop: t.KernelOp, kb: KernelBuilder, gm: dict[str, tuple[int, int]], config):
        self.kop = kop
        self.k = kb
        self.gm = gm
        self.config = config
        self.env: dict[SSAValue, object] = {}
        self.parity = 0
        self.addr: dict[t.AllocOp, tuple[int, int]] = {}  # address, bytes per copy
        self.instructions = 0
        self.writes: set[str] = set()  # GM tensors the kernel stores to
        self.gm_ptrs: dict[Operation, str] = {}  # each npu.ptr into GM, and its tensor
        self.infinities = False  # an immediate has a mask's magnitude (`fp16_scaling.MASK_SENTINEL`)
        self._allocate()

    # -- allocation ------------------------------------------------------
    def _allocate(self) -> None:
        """Addresses come from tile-allocate."""
        for op in self.kop.walk():
            if isinstance(op, t.AllocOp):
                if op.offset is None:
                    raise PassFailedException(
                        f"tile.kernel @{self.kop.sym_name.data}: tile.alloc without an address (run tile-allocate first)"
                    )
                self.addr[op] = (op.offset.value.data, buffer_bytes(op, self.config))

    # -- index values ------------------------------------------------------
    def idx(self, v: SSAValue) -> Index:
        return self.env[v]  # type: ignore[return-value]

    def iadd(self, a: Index, b: Index) -> Index:
        if isinstance(a, int) and isinstance(b, int):
            return a + b
        if a == 0:
            return b
        if b == 0:
            return a
        return self.k.add(a, b)

    def imul(self, a: Index, b: int) -> Index:
        if isinstance(a, int):
            return a * b
        return a if b == 1 else self.k.mul(a, b)

    # -- references --------------------------------------------------------
    def ref(self, v: SSAValue) -> Ref:
        return self.env[v]  # type: ignore[return-value]

    def ptr(self, r: Ref, extra: int = 0) -> SSAValue:
        """An npu.ptr to element `extra` past reference `r`."""
        if r.base[0] == "gm":
            tensor = r.base[1]
            static = self.gm[tensor][0] + (r.off + extra) * r.es
            if isinstance(r.dyn, int):
                ptr = self.k.ptr(r.space, static + r.dyn * r.es, tensor=tensor)
            else:
                ptr = self.k.ptr(r.space, static, self.imul(r.dyn, r.es), tensor=tensor)
            self.gm_ptrs[ptr.owner] = tensor  # type: ignore[index]
            return ptr
        alloc = r.base[1]
        base, nbytes = self.addr[alloc]
        if alloc.buffers.value.data == 2:
            base += self.parity * nbytes
        static = base + (r.off + extra) * r.es
        end = base + (nbytes if r.end is None else min(nbytes, r.end * r.es))
        if isinstance(r.dyn, int):
            return self.k.ptr(r.space, static + r.dyn * r.es)
        return self.k.ptr(r.space, static, self.imul(r.dyn, r.es), None if end is None else end - static)

    def emit(self, op: Operation) -> None:
        self.k.emit(op)
        self.instructions += 1

    # -- translation -----------------------------------------------------
    def run(self) -> None:
        self.block(self.kop.body.block)

    def block(self, block: Block) -> None:
        for op in block.ops:
            self.op(op)

    def op(self, op: Operation) -> None:
        handler = self.HANDLERS.get(type(op))
        if handler is not None:
            handler(self, op)
        elif isinstance(op, st.STRUCTURED_OPS) or isinstance(op, MapKernelOp):
            raise PassFailedException(f"tile.kernel @{self.kop.sym_name.data}: {op.name} is not expanded "
                                      "(run tile-select-tiling, tile-distribute and tile-expand-structured first)")
        else:
            raise PassFailedException(f"convert-tile-to-npu: cannot lower {op.name}")

    def constant(self, op: arith.ConstantOp) -> None:
        self.env[op.result] = op.value.value.data  # type: ignore[union-attr]

    def index_arith(self, op: Operation) -> None:
        a, b = self.idx(op.operands[0]), self.idx(op.operands[1])
        if isinstance(a, int) and isinstance(b, int):
            self.env[op.results[0]] = ARITH_BIN[type(op)](a, b)
        else:
            self.env[op.results[0]] = self.k.index_op(type(op), a, b)

    def block_idx(self, op: t.BlockIdxOp) -> None:
        self.env[op.result] = self.k.block_idx() if self.kop.block_dim.value.data > 1 else 0

    def alloc(self, op: t.AllocOp) -> None:
        self.env[op.result] = Ref(("alloc", op), 0, 0, esize(op.result.type.element), t.space_of(op.result))

    def gm_ref(self, op: t.GmOp) -> None:
        self.env[op.result] = Ref(("gm", op.tensor.data), 0, 0, esize(op.result.type.element), "gm")

    def at(self, op: t.AtOp) -> None:
        r = self.ref(op.ref)
        dyn = r.dyn if op.dyn is None else self.iadd(r.dyn, self.idx(op.dyn))
        off = r.off + op.offset.value.data
        end = r.end if op.within is None else off + op.within.value.data
        self.env[op.result] = Ref(r.base, off, dyn, r.es, r.space, end)

    def load_index(self, op: t.LoadIndexOp) -> None:
        ref = self.ref(op.ref)
        element = op.ref.type.element  # type: ignore[attr-defined]
        self.emit(load := npu.LoadIndexOp(self.ptr(ref), element, op.bound.value.data))
        self.env[op.result] = load.result

    def matmul(self, op: t.MatmulOp) -> None:
        a = self.ref(op.a)
        self.emit(
            npu.MmadOp(
                "f16" if a.es == 2 else "f32",
                self.ptr(self.ref(op.c)),
                self.ptr(a),
                self.ptr(self.ref(op.b)),
                m=op.m.value.data,
                n=op.n.value.data,
                k=op.k.value.data,
                accumulate=op.accumulate is not None,
            )
        )

    def im2col(self, op: t.Im2colOp) -> None:
        p = t.ints(op.params)
        src = self.ref(op.src)
        self.emit(
            npu.Load3dOp(
                self.ptr(self.ref(op.dst)),
                self.ptr(src),
                fm_h=p[0], fm_w=p[1], kh=p[2], kw=p[3], stride=(p[4], p[5]),
                pad=(p[6], p[7], p[8], p[9]), dilation=(p[10], p[11]),
                m_start=p[12], m_len=p[13], f32=src.es == 4,
            )
        )

    def load_fractal(self, op: t.LoadFractalOp) -> None:
        dst, src = self.ref(op.dst), self.ref(op.src)
        count, stride = op.count.value.data, op.src_stride.value.data
        per = 512 // dst.es
        for s in range(0, count, MAX_REPEAT):
            n = min(MAX_REPEAT, count - s)
            self.emit(npu.Load2dOp(self.ptr(dst, s * per), self.ptr(src, s * stride * per), repeat=n, src_stride=stride,
                                   transpose=op.transpose is not None))

    def cast(self, op: t.CastOp) -> None:
        dst, src = self.ref(op.dst), self.ref(op.src)
        dd, sd = (dtype_name(v.type.element) for v in (op.dst, op.src))  # type: ignore[attr-defined]
        for run in run_plan(op.count.value.data, (dst.es, src.es), self.config):  # a repeat: 256 bytes of the wider side
            self.emit(npu.VconvOp(dd, sd, self.ptr(dst, run.start), self.ptr(src, run.start), repeat=run.repeat,
                                  mask=run.mask, dst_rep=run.rep_blocks[0], src_rep=run.rep_blocks[1]))

    def dup(self, op: t.DupOp) -> None:
        dst = self.ref(op.dst)
        dt = "f16" if dst.es == 2 else "f32"
        self.immediate(op.value.value.data)
        for run in run_plan(op.count.value.data, (dst.es,), self.config):
            self.emit(npu.VdupOp(dt, self.ptr(dst, run.start), op.value.value.data, repeat=run.repeat,
                                 mask=run.mask, dst_rep=run.rep_blocks[0]))

    def loop(self, op: scf.ForOp) -> None:
        lb, ub, st = self.idx(op.lb), self.idx(op.ub), self.idx(op.step)
        body = op.body.block
        pipelined = PIPELINE_ATTR in op.attributes
        first = 1 if pipelined and op.attributes[PIPELINE_ATTR] == StringAttr(PONG_PING) else 0  # the first copy used

        def run_body(iv: Index, parity: int) -> None:
            saved = self.parity
            self.parity = parity if pipelined else saved
            self.env[body.args[0]] = iv
            self.block(body)
            self.parity = saved

        if all(isinstance(x, int) for x in (lb, ub, st)):
            trips = max(0, -(-(ub - lb) // st))  # type: ignore[operator]
            if trips == 0:
                return
            if trips == 1:
                run_body(lb, first)
                return
            if not pipelined:
                with self.k.loop(lb, ub, st) as iv:
                    run_body(iv, 0)
                return
            pairs_end = lb + (trips // 2) * 2 * st  # type: ignore[operator]
            with self.k.loop(lb, pairs_end, 2 * st) as iv:  # type: ignore[operator]
                run_body(iv, first)
                run_body(self.k.add(iv, st), 1 - first)
            if trips % 2:
                run_body(pairs_end, first)
            return
        if not pipelined:
            with self.k.loop(lb, ub, st) as iv:
                run_body(iv, 0)
            return
        assert isinstance(st, int), "pipelined loops need a static step"
        n = self.k.index_op(arith.FloorDivSIOp, self.k.sub(ub, lb), 2 * st)
        # a core with no tiles has ub < lb: no pairs, and the remainder loop starts at lb
        n = self.k.index_op(arith.MaxSIOp, n, 0)
        pairs_end = self.k.add(lb, self.k.mul(n, 2 * st))
        with self.k.loop(lb, pairs_end, 2 * st) as iv:
            run_body(iv, first)
            run_body(self.k.add(iv, st), 1 - first)
        with self.k.loop(pairs_end, ub, st) as iv:
            run_body(iv, first)

    # -- expansion ---------------------------------------------------------
    def copy(self, op: t.CopyOp) -> None:
        dst, src = self.ref(op.dst), self.ref(op.src)
        if dst.space == "gm":
            self.writes.add(dst.base[1])
        cast = op.cast is not None
        pipe = DMA_PATHS.get((MemSpace(src.space), MemSpace(dst.space)))
        if pipe is None:
            raise PassFailedException(f"tile.copy: no DMA path {src.space} -> {dst.space}")
        plan = plan_copy(t.ints(op.shape), t.ints(op.dst_strides), t.ints(op.src_strides), dst.es, src.es,
                         dst.space, src.space)
        if plan.overlap is not None:
            chip = dst if dst.space != "gm" else src
            stride = plan.overlap[1][0] * dst.es if dst is chip else plan.overlap[1][1] * src.es
            chip_len = plan.src_len // src.es * chip.es
            raise PassFailedException(f"tile.copy: rows of {chip_len} bytes {stride} bytes apart in "
                                      f"{chip.space.upper()} are closer than their whole 32-byte blocks")
        outer, burst, slen, pad = plan.outer, plan.burst, plan.src_len, plan.pad
        for index in itertools.product(*(range(d[0]) for d in outer)):
            d_off = sum(i * d[1][0] for i, d in zip(index, outer))
            s_off = sum(i * d[1][1] for i, d in zip(index, outer))
            if burst is None:
                self.emit(npu.DmaOp(pipe, self.ptr(dst, d_off), self.ptr(src, s_off), len=slen, cast_f16=cast, pad=pad))
                continue
            count, dgap, sgap, strides = burst
            for b in range(0, count, MAX_NBURST):
                nb = min(MAX_NBURST, count - b)
                self.emit(
                    npu.DmaOp(
                        pipe,
                        self.ptr(dst, d_off + b * strides[0]),
                        self.ptr(src, s_off + b * strides[1]),
                        len=slen, nburst=nb, src_gap=sgap, dst_gap=dgap, cast_f16=cast, pad=pad,
                    )
                )

    def vec(self, op: t.VecOp) -> None:
        kind = op.op.data
        refs = [self.ref(op.dst)] + [self.ref(s) for s in op.srcs]
        es = refs[0].es
        dt = "f16" if es == 2 else "f32"
        scalar = None if op.scalar is None else op.scalar.value.data
        if scalar is not None:
            self.immediate(scalar)
        cls = VECTOR_CLASSES[kind]
        if TILE_SPECS[kind].family == Family.BROADCAST:
            # tile.vec brcb dst, src [n]: value i of src over block i of dst
            n, per = t.ints(op.shape)[0], BLOCKS_PER_REPEAT
            for r0 in range(0, -(-n // per), MAX_REPEAT):
                repeat = min(MAX_REPEAT, -(-n // per) - r0)
                dst, src = self.ptr(refs[0], r0 * per * (32 // es)), self.ptr(refs[1], r0 * per)
                self.emit(cls(dt, dst, src, repeat=repeat))
            return
        for chunk in vector_plan(list(t.ints(op.shape)), op.operand_strides(), es, self.config):
            offs, repeat, mask, blk, rep = chunk
            ptrs = [self.ptr(r, o) for r, o in zip(refs, offs)]
            strides = {}
            for role, b, r in zip(cls.ROLES, blk, rep):  # tile.vec's operands are in the roles' order
                strides[f"{role}_blk"] = b
                strides[f"{role}_rep"] = r
            args = (*ptrs, scalar) if scalar is not None else ptrs
            self.emit(cls(dt, *args, repeat=repeat, mask=mask, **strides))

    def immediate(self, value: float) -> None:
        """Note an instruction's immediate: one of a mask's magnitude (BERT's (1 - mask) *
        finfo(f32).min) means the kernel's infinities are by design."""
        if abs(value) >= MASK_SENTINEL:
            self.infinities = True

    def reduce(self, op: t.ReduceOp) -> None:
        dst, src = self.ref(op.dst), self.ref(op.src)
        dt = "f16" if src.es == 2 else "f32"
        fold = npu.VaddOp if op.op.data == "sum" else npu.VmaxOp
        red = npu.VreduceSumOp if op.op.data == "sum" else npu.VreduceMaxOp
        for step in reduce_plan(op.rows.value.data, op.cols.value.data, op.row_stride.value.data, src.es):
            if step.reduce:
                strides = {} if step.rep is None else {"src_rep": step.rep}
                self.emit(red(dt, self.ptr(dst, step.dst), self.ptr(src, step.src0), repeat=step.repeat,
                              mask=step.mask, **strides))
            else:
                strides = {} if step.rep is None else {"dst_rep": step.rep, "src0_rep": step.rep, "src1_rep": step.rep}
                self.emit(fold(dt, self.ptr(src, step.dst), self.ptr(src, step.src0), self.ptr(src, step.src1),
                               repeat=step.repeat, mask=step.mask, **strides))


KernelTranslator.HANDLERS = {
    arith.ConstantOp: KernelTranslator.constant,
    **{cls: KernelTranslator.index_arith for cls in ARITH_BIN},
    t.BlockIdxOp: KernelTranslator.block_idx,
    t.AllocOp: KernelTranslator.alloc,
    t.GmOp: KernelTranslator.gm_ref,
    t.AtOp: KernelTranslator.at,
    t.LoadIndexOp: KernelTranslator.load_index,
    scf.ForOp: KernelTranslator.loop,
    scf.YieldOp: lambda self, op: None,
    t.CopyOp: KernelTranslator.copy,
    t.VecOp: KernelTranslator.vec,
    t.MatmulOp: KernelTranslator.matmul,
    t.Im2colOp: KernelTranslator.im2col,
    t.LoadFractalOp: KernelTranslator.load_fractal,
    t.ReduceOp: KernelTranslator.reduce,
    t.CastOp: KernelTranslator.cast,
    t.DupOp: KernelTranslator.dup,
}
"""Each tile op's translation, by its exact type (one dictionary lookup per op; an isinstance
chain cost a dozen ABC checks for the later ones)."""


def lower_program(prog: t.ProgramOp, config) -> ModuleOp:
    """The npu program of one tile program."""
    gm: dict[str, tuple[int, int]] = {}
    host: dict[str, tuple[int, int]] = {}  # host memory (tile-fit-device-memory's offloads)
    size = host_size = 0
    tensors = [op for op in prog.body.block.ops if isinstance(op, t.TensorOp)]
    elements: dict[str, Attribute] = {}
    for op in tensors:
        nbytes = tensor_nbytes(op.type)
        end = op.offset.value.data + -(-nbytes // 64) * 64 + 64
        if op.kind.data == "host":
            host[op.tensor_name.data] = (op.offset.value.data, nbytes)
            host_size = max(host_size, end)
            continue
        gm[op.tensor_name.data] = (op.offset.value.data, nbytes)
        elements[op.tensor_name.data] = op.type.element_type
        size = max(size, end)
    pb = ProgramBuilder(prog.sym_name.data, gm_size=size, host_size=host_size)
    translated: dict[str, KernelTranslator] = {}
    alike: list[tuple[npu.KernelOp, t.KernelOp]] = []  # kernels that run an earlier kernel's code
    for op in tensors:
        kind = op.kind.data
        if kind == "input":
            pb.block.add_op(npu.InputOp(op.tensor_name.data, op.offset.value.data, op.type))
        elif kind == "output":
            pb.block.add_op(npu.OutputOp(op.tensor_name.data, op.offset.value.data, op.type))
        elif kind == "constant":
            pb.block.add_op(npu.ConstantOp(op.tensor_name.data, op.offset.value.data, op.value))
    for kop in prog.body.block.ops:
        if isinstance(kop, t.AicpuOp):
            pb.block.add_op(aicpu_task(kop, gm))
            continue
        if isinstance(kop, t.MemcpyOp):
            pb.block.add_op(memcpy_task(kop, gm, host))
            continue
        if isinstance(kop, t.StreamRecordOp):
            pb.stream_record(kop.stream.value.data, kop.event.value.data)
            continue
        if isinstance(kop, t.StreamWaitOp):
            pb.stream_wait(kop.stream.value.data, kop.event.value.data)
            continue
        if not isinstance(kop, t.KernelOp):
            continue
        with pb.kernel(kop.sym_name.data) as kb:
            if ALIKE_ATTR in kop.attributes:  # the earlier kernel's code, moved (below)
                alike.append((kb.kernel, kop))
            else:
                tr = translated[kop.sym_name.data] = KernelTranslator(kop, kb, gm, config)
                tr.run()
                _describe(kb.kernel, kop, tr.writes, tr.infinities, gm, elements)
        pb.launch(kop.sym_name.data, kop.block_dim.value.data, t.stream_of(kop))
    for kernel, kop in alike:
        _alike(kernel, kop, translated, gm, elements)
    for source in {kop.attributes[ALIKE_ATTR].data for _, kop in alike}:  # type: ignore[attr-defined]
        for ptr, tensor in translated[source].gm_ptrs.items():  # what the moves apply to
            ptr.attributes[npu.GM_TENSOR_ATTR] = StringAttr(tensor)
    module = pb.module()
    if "ge.precision_mode" in prog.attributes:  # ge-run --check of an .om picks its tolerance by it
        for op in module.body.block.ops:
            op.attributes["ge.precision_mode"] = prog.attributes["ge.precision_mode"]
    try:  # the GM arena the plan gave the intermediates, for the profile's device memory
        memory = memory_summary(prog)  # type: ignore[arg-type]
    except (NoPlanError, AttributeError):
        memory = {}
    for key, name in (("arena_size", "ge.arena_bytes"), ("no_reuse", "ge.no_reuse_bytes")):
        if key in memory:
            for op in module.body.block.ops:
                op.attributes[name] = IntegerAttr(int(memory[key]), i64)
    if "ge.arena_live_bytes" in prog.attributes:  # the arena bytes held at each task
        for op in module.body.block.ops:
            op.attributes["ge.arena_live_bytes"] = prog.attributes["ge.arena_live_bytes"]
    return module


def _describe(kernel: npu.KernelOp, kop: t.KernelOp, writes: set[str], infinities: bool,
              gm: dict[str, tuple[int, int]], elements: dict[str, Attribute]) -> None:
    """The npu.kernel's `ge.*` attributes: what the tile.kernel says of itself, the GM
    tensors it writes (the simulator's overflow check), whether it writes infinities."""
    for name in npu.KERNEL_INFO_KEYS:  # `writes` comes next
        if name in kop.attributes:
            kernel.attributes[f"ge.{name}"] = kop.attributes[name]
    kernel.attributes["ge.writes"] = StringAttr(";".join(
        f"{gm[n][0]}+{gm[n][1]}:{numpy_dtype(elements[n]).name}" for n in sorted(writes)))
    if infinities:
        kernel.attributes["ge.infinities"] = StringAttr(npu.INFINITIES_BY_DESIGN)


def _alike(kernel: npu.KernelOp, kop: t.KernelOp, translated: dict[str, KernelTranslator],
           gm: dict[str, tuple[int, int]], elements: dict[str, Attribute]) -> None:
    """Make `kernel` (tile.kernel `kop`, marked by tile-share-alike-kernels)
    `alike` the earlier kernel: its code, each pointer into a GM tensor moved
    to the same place in its own tensor, by the difference of the two
    tensors' addresses and of their origins (`moves`; lower_program has the
    earlier kernel's GM pointers name their tensors)."""
    source = kop.attributes[ALIKE_ATTR].data  # type: ignore[attr-defined]
    earlier = translated[source]
    ours: dict[str, str] = {}
    moves: dict[str, int] = {}
    for theirs, pair in kop.attributes[ALIKE_TENSORS_ATTR].data.items():  # type: ignore[attr-defined]
        name, shift = pair.data[0].data, pair.data[1].value.data
        ours[theirs] = name
        move = gm[name][0] - gm[theirs][0] + shift * esize(elements[theirs])
        if move:
            moves[theirs] = move
    kernel.properties["alike"] = SymbolRefAttr(source)
    kernel.properties["moves"] = DictionaryAttr({n: IntegerAttr(v, i64) for n, v in moves.items()})
    # a constant the expansion added (one per value) is not renamed: the same tensor
    _describe(kernel, kop, {ours.get(n, n) for n in earlier.writes}, earlier.infinities, gm, elements)


def aicpu_task(task: t.AicpuOp, gm: dict[str, tuple[int, int]]) -> npu.AicpuOp:
    """The npu.aicpu of a tile.aicpu: tensor names become GM offsets, the
    body (graph ops on logical types) moves over as it is."""

    def side(names, types, scales):
        return [(gm[n.data][0], ty, sc) for n, ty, sc in zip(names.data, types.data, scales.get_values())]

    body = task.detach_region(task.body)  # the tile program is dropped after lowering
    ret = body.block.last_op
    assert isinstance(ret, t.AicpuReturnOp)
    body.block.insert_op_before(npu.AicpuReturnOp(*ret.operands), ret)
    ret.detach()
    ret.erase()
    op = npu.AicpuOp(
        task.sym_name.data, t.stream_of(task),
        side(task.in_names, task.in_types, task.in_scales),
        side(task.out_names, task.out_types, task.out_scales),
        body,
    )
    for name in ("kind", "absorbed", "source", "reason"):
        if name in task.attributes:
            op.attributes[f"ge.{name}"] = task.attributes[name]
    return op


def memcpy_task(task: t.MemcpyOp, gm: dict[str, tuple[int, int]], host: dict[str, tuple[int, int]]) -> npu.MemcpyOp:
    """The npu.memcpy of a tile.memcpy: one end in GM, the other in host memory."""
    src, dst = task.src.data, task.dst.data
    to_host = dst in host
    (gm_offset, nbytes), (host_offset, _) = (gm[src], host[dst]) if to_host else (gm[dst], host[src])
    op = npu.MemcpyOp(task.sym_name.data, "d2h" if to_host else "h2d", gm_offset, host_offset, nbytes,
                      t.stream_of(task))
    if "source" in task.attributes:
        op.attributes["ge.source"] = task.attributes["source"]
    op.attributes["ge.tensor"] = StringAttr(src if to_host else dst)
    return op


@dataclass(frozen=True)
class ConvertTileToNpuPass(ModulePass):
    """Lower every tile.program of the module to an npu.program (addresses,
    ping-pong, instruction expansion, synchronisation)."""

    name = "convert-tile-to-npu"
    target: str = "davinci-910"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from target.config import load_target

        config = load_target(self.target)
        for prog in list(op.body.block.ops):
            if isinstance(prog, t.ProgramOp):
                new = lower_program(prog, config)
                inner = new.body.block.first_op
                assert inner is not None
                inner.detach()
                op.body.block.insert_op_before(inner, prog)
                # dropped, not erased: erasing walks every op of the tile program to unlink
                # uses that nothing reads again (the program is isolated from above)
                prog.detach()
