"""Lock-step simulation: the blocks of a launch run together.

The blocks of a launch execute one program and differ only in their block
index, so they walk the same instructions almost everywhere. The plain
simulator (`KernelRun`) interprets one block after another; `LockstepRun`
runs a *cohort* of blocks as one:

* a scalar register holds an int (the same in every block of the cohort) or
  an array with one value per block (anything computed from the block index
  or read from UB);
* every core-local memory has one row per block (`CoreRows`), and an
  instruction moves or computes the data of all blocks in one NumPy call
  (`target/semantics.py` indexes the last axis, so a row block is one memory
  to it); where the blocks' on-chip addresses differ, a source in GM differs,
  or the destination is GM (the blocks' stores stay in block order), it runs
  block by block on each row;
* timing does not depend on data: a block's cycles follow from the
  instructions it executes, so the cohort's pipes are timed once and its
  busy cycles and bytes count once per block;
* when a branch goes different ways in different blocks (a loop's last tile
  in the last block), the cohort splits and each part goes on alone.

Outputs, cycles and every profile counter are the plain simulator's for
programs whose blocks do not race (benchmarks/simulation_time.py compares
every light model; tests/unit/test_sim_lockstep.py kernels that split their
cohorts, zoo transformers and a light model). NumPy results do not depend on how many blocks are
stacked for the instructions run batched (`ROW_BATCHED_VECTOR_OPS`: IEEE
operations rounded once, exact reductions; a stacked matmul is the same BLAS
call per block); the others run row by row.

It does not detect races (the detector follows each block's own accesses) or
record traces: `simulate` uses it when races are off and no trace is asked
for, and runs the program again with the plain simulator when it meets an
error, so the message names the block the plain simulator meets first.
A kernel reading on-chip bytes it never wrote reads what another block left
there in both simulators, but not the same block's leftovers: no correct
kernel lets them reach its output (a direct 1x1 conv's last fractals read
past its band into rows of A whose results it never stores).
"""

from __future__ import annotations

from collections import defaultdict, deque

import numpy as np

from gedialects.npu.isa import FRACTAL_BYTES, SPACES
from target import program as P
from target.errors import SimulationError
from target.semantics import ESIZE, NP_DTYPES, dma_copy, im2col_index, load2d_copy, load3d_copy, mmad
from target.simulator import (
    FOUR_ADDRESS_OPS,
    GM,
    L0A,
    L0B,
    L0C,
    L1,
    NPIPES,
    PATH_L1_L0A,
    PATH_L1_L0B,
    UB,
    S,
    V,
    UNDEFINED_BYTE,
    KernelRun,
    dma_extents,
)

MAX_ROWS = 64
"""Blocks a cohort holds at most (each a row of every core-local memory:
1.25 MB on davinci-910); a launch with more blocks runs in chunks."""

ROW_BATCHED_VECTOR_OPS = frozenset({
    "vadd", "vsub", "vmul", "vdiv", "vmax", "vmin", "vrelu", "vsqrt", "vabs", "vrec", "vrsqrt",
    "vadds", "vmuls", "vmaxs", "vmins", "vreduce_max", "vconv", "vdup",
    "vcmp_lt", "vcmp_le", "vcmp_gt", "vcmp_ge", "vcmp_eq", "vcmp_ne", "vsel", "vbrcb",
})
"""Vector instructions whose NumPy results do not depend on where an element
sits in the array: each element is rounded once from exact operands (or
picked), and the one reduction is a max. Stacking the blocks' rows changes
the array, so the others (exp, ln, whose SIMD and scalar paths may differ in
the last bit; the fp32 sum, whose order NumPy chooses) run row by row."""


class CoreRows:
    """Every core-local memory (L1, L0A, L0B, L0C, UB) with one row per block
    of a cohort, and a machine's GM; by space index, as `Machine.bufs`, and
    viewed per dtype code, as `Machine.views`.

    Allocating them costs more than simulating a small model (the pages are
    touched for the first time), so a finished simulation leaves its set to
    the next in the process (`give_back`, one per target's capacities), which
    refills it (`for_machine`); a set in use is out of the pool."""

    _kept: dict[tuple, CoreRows] = {}

    def __init__(self, capacities: tuple[int, ...], rows: int):
        self.rows = rows
        local = [np.full((rows, cap), UNDEFINED_BYTE, dtype=np.uint8) for cap in capacities]
        self.bytes = [np.zeros(0, np.uint8)] + local  # GM: the machine's (bind)
        self.views = tuple([b.view(dt) for b in self.bytes] for dt in NP_DTYPES)
        # one row's memories, made once (bind points their GM entries at the machine's)
        self.row_bytes, self.row_views, self.row_ub = zip(*(self.memories(r) for r in range(rows)))

    @classmethod
    def for_machine(cls, machine, config, rows: int) -> CoreRows:
        """Rows for `machine`'s simulation: at least `rows`, local memories
        undefined (UNDEFINED_BYTE) as a fresh machine's, GM the machine's."""
        capacities = tuple(config.capacity_bytes[s.value] for s in SPACES[1:])
        kept = cls._kept.pop(capacities, None)
        if kept is None or kept.rows < rows:
            kept = cls(capacities, rows)
        else:
            for memory in kept.bytes[1:]:
                memory.fill(UNDEFINED_BYTE)
        kept.capacities = capacities
        kept.bind(machine)
        return kept

    def give_back(self) -> None:
        self.bind(None)
        kept = self._kept.get(self.capacities)
        if kept is None or kept.rows < self.rows:
            self._kept[self.capacities] = self

    def bind(self, machine) -> None:
        """Point every GM entry at `machine`'s GM (None: none, kept idle)."""
        gm = np.zeros(0, np.uint8) if machine is None else machine.bufs[GM]
        self.bytes[GM] = gm
        for code, views in enumerate(self.views):
            views[GM] = gm.view(NP_DTYPES[code])
        for r in range(self.rows):
            self.row_bytes[r][GM] = gm
            for code, views in enumerate(self.row_views[r]):
                views[GM] = self.views[code][GM]

    def memories(self, rows) -> tuple[list, tuple, tuple]:
        """The memories of `rows` (an index: one core; a slice: a row block):
        by space, viewed per dtype code (by space), and UB per dtype code."""
        def of(memories):
            return [m if space == GM else m[rows] for space, m in enumerate(memories)]

        views = tuple(of(v) for v in self.views)
        return of(self.bytes), views, tuple(v[UB] for v in views)


class Cohort:
    """Blocks at the same point of the same path, and that point's state: the
    registers (ints, or arrays by block), the issue time, the instruction
    counts, and the pipes' timing state (as KernelRun keeps it per block)."""

    def __init__(self, blocks: np.ndarray, rows: np.ndarray, regs: list, pc: int = 0, t: int = 0,
                 count: int = 0, scalar_n: int = 0, pipes: tuple | None = None):
        self.blocks = blocks
        self.rows = rows
        self.row_list = rows.tolist()
        # a contiguous run of rows is one view per memory: the batched path
        self.span = slice(self.row_list[0], self.row_list[-1] + 1) if (
            self.row_list[-1] - self.row_list[0] + 1 == len(self.row_list)) else None
        self.regs = regs
        self.pc, self.t, self.count, self.scalar_n = pc, t, count, scalar_n
        self.counted, self.scalar_counted = count, scalar_n  # already committed to the launch
        if pipes is None:
            pipes = ([0] * NPIPES, [False] * NPIPES, [deque() for _ in range(NPIPES)], [-1] * NPIPES,
                     defaultdict(deque))
        self.pf, self.blocked, self.pending, self.wait_key, self.flags = pipes
        self.end = 0

    def part(self, mask: np.ndarray, pc: int) -> Cohort:
        """The blocks of `mask`, continuing at `pc` with copies of this state."""
        def pick(v):
            return v[mask] if isinstance(v, np.ndarray) else v

        def pick_address(v):
            return tuple(pick(x) for x in v) if isinstance(v, tuple) else pick(v)

        pending = [deque((at, pick(a0), pick(a1), pick_address(a2), t) for at, a0, a1, a2, t in q)
                   for q in self.pending]
        pipes = (list(self.pf), list(self.blocked), pending, list(self.wait_key), defaultdict(deque, {key: deque(q) for key, q in self.flags.items()}))
        part = Cohort(self.blocks[mask], self.rows[mask], [pick(r) for r in self.regs], pc, self.t,
                      self.count, self.scalar_n, pipes)
        part.counted, part.scalar_counted = self.counted, self.scalar_counted
        return part


def _branch(cond):
    """True or False when every block of the cohort agrees, else the mask."""
    if isinstance(cond, np.ndarray):
        if cond.all():
            return True
        if not cond.any():
            return False
    return cond


def _at(value, j: int):
    """Block j's value of a register or address (an int is every block's)."""
    return value[j] if isinstance(value, np.ndarray) else value


def _uniform(*values) -> bool:
    return not any(isinstance(v, np.ndarray) for v in values)


class LockstepRun(KernelRun):
    """Runs every block of one launch in cohorts (see the module docstring);
    the plain KernelRun's timing and synchronisation, its checks and its
    messages, with data handlers that move every block's data."""

    def __init__(self, sim, kernel, block_dim, launch, hbm_sharers=0):
        if sim.core_rows is None:  # as many rows as the widest launch needs
            widest = max(entry[2] for entry in sim.program.schedule if entry[0] == "launch")
            sim.core_rows = CoreRows.for_machine(sim.machine, sim.config, min(widest, MAX_ROWS))
        self.core_rows = sim.core_rows
        self.cohort: Cohort | None = None
        super().__init__(sim, kernel, block_dim, launch, hbm_sharers)
        self.rd = self.events = None
        self.functional = sim.functional  # False: timing only, no data moved

    # ------------------------------------------------------------------
    # Blocks in cohorts
    # ------------------------------------------------------------------

    def run(self, pool, start: int) -> int:
        cycles = [0] * self.block_dim
        regs0 = list(self.kernel.init_regs)
        regs0[2] = self.block_dim
        for first in range(0, self.block_dim, MAX_ROWS):
            blocks = np.arange(first, min(self.block_dim, first + MAX_ROWS), dtype=np.int64)
            regs = list(regs0)
            regs[1] = blocks
            stack = [Cohort(blocks, blocks - first, regs)]
            while stack:
                cohort = stack.pop()
                parts = self.run_cohort(cohort)
                if parts:
                    stack.extend(reversed(parts))  # lower blocks first, as the plain order
                else:
                    for b in cohort.blocks.tolist():
                        cycles[b] = cohort.end
        return self.place_blocks(pool, start, lambda b, core, offset: cycles[b])

    def run_cohort(self, c: Cohort) -> tuple[Cohort, Cohort] | None:
        """Run `c` to the end of the kernel (None; `c.end` is its cycles) or
        to a branch its blocks take different ways (the two parts)."""
        self.cohort = c
        self.block = int(c.blocks[0])
        # the cohort's row block, when its rows are contiguous: the batched path
        self.span_bytes, self.span_views, self.span_ub = (
            self.core_rows.memories(c.span) if c.span is not None else (None, None, None))
        self.pf, self.blocked, self.pending, self.wait_key, self.flags = c.pf, c.blocked, c.pending, c.wait_key, c.flags
        pf, blocked, pending = c.pf, c.blocked, c.pending
        size = len(c.blocks)
        busy0, bytes0 = list(self.busy), list(self.bytes)
        code = self.kernel.code
        n = len(code)
        regs = c.regs
        exec_ = self.exec_
        c_issue, c_scalar = self.c_issue, self.c_scalar
        budget = min(self.budget, (P.MAX_RUN_INSTRUCTIONS - self.sim.executed - self.count) // size)
        t, pc, count, scalar_n = c.t, c.pc, c.count, c.scalar_n
        split = None
        while pc < n:
            ins = code[pc]
            op = ins[0]
            count += 1
            if op >= P.FIRST_PIPE_OP:
                t += c_issue
                p = ins[1]
                a0 = regs[ins[2]] + ins[3]
                a1 = regs[ins[4]] + ins[5]
                a2 = regs[ins[6]] + ins[7]
                if op in FOUR_ADDRESS_OPS:
                    a2 = (a2, regs[ins[8]] + ins[9])
                if blocked[p]:
                    pending[p].append((pc, a0, a1, a2, t))
                else:
                    exec_[pc](a0, a1, a2, t)
                pc += 1
                continue
            t += c_scalar
            scalar_n += 1
            if op == P.ENDFOR:
                if len(ins) > 6:
                    vals = [regs[s] for s in ins[7::2]]
                    for d, v in zip(ins[6::2], vals):
                        regs[d] = v
                iv = ins[2]
                regs[iv] = regs[iv] + regs[ins[4]]  # never in place: registers share arrays
                again = _branch(regs[iv] < regs[ins[3]])
                if again is not False:
                    if count > budget:
                        self.over_budget(pc, count, budget)
                    if again is True:
                        pc = ins[5]
                        continue
                    split = (again, ins[5], pc + 1)
                    break
            elif op == P.ADD:
                regs[ins[2]] = regs[ins[3]] + regs[ins[4]]
            elif op == P.MUL:
                regs[ins[2]] = regs[ins[3]] * regs[ins[4]]
            elif op == P.FOR:
                if np.any(regs[ins[5]] <= 0):
                    raise SimulationError(f"{self.where(pc)}: loop step is not positive")
                regs[ins[2]] = regs[ins[3]]
                skip = _branch(regs[ins[2]] >= regs[ins[4]])
                if skip is True:
                    pc = ins[6]
                elif skip is not False:
                    split = (skip, ins[6] + 1, pc + 1)
                    break
            elif op == P.MOV:
                regs[ins[2]] = regs[ins[3]]
            elif op == P.LOAD_INDEX:
                regs[ins[2]] = self.load_index_rows(ins, pc, regs[ins[3]] + ins[4])
            elif op == P.WAIT_S:
                t = self.wait_scalar(ins, pc, t)
            elif op == P.BARRIER_ALL:
                t = self.barrier_all(pc, t)
            else:
                regs[ins[2]] = self.scalar_op_rows(op, regs[ins[3]], regs[ins[4]], pc)
            pc += 1
        c.t, c.pc, c.count, c.scalar_n = t, pc, count, scalar_n
        self.commit(c, size, busy0, bytes0)
        if split is not None:
            mask, taken, other = split
            return c.part(mask, taken), c.part(~mask, other)
        for p in range(NPIPES):
            if blocked[p]:
                self.deadlock(p)
        c.end = max(max(pf), t)
        return None

    def commit(self, c: Cohort, size: int, busy0: list[int], bytes0: list[int]) -> None:
        """Count what `c` did since it was last committed once per block:
        the pipes' busy cycles and the bytes were counted once."""
        for p in range(NPIPES):
            self.busy[p] += (self.busy[p] - busy0[p]) * (size - 1)
        for path in range(len(self.bytes)):
            self.bytes[path] += (self.bytes[path] - bytes0[path]) * (size - 1)
        steps, scalars = c.count - c.counted, c.scalar_n - c.scalar_counted
        self.busy[S] += (scalars * self.c_scalar + (steps - scalars) * self.c_issue) * size
        self.count += steps * size
        c.counted, c.scalar_counted = c.count, c.scalar_n

    def scalar_op_rows(self, op: int, a, b, pc: int):
        if _uniform(a, b):
            return self.scalar_op(op, a, b, pc)
        if op == P.SUB:
            return a - b
        if op == P.MIN:
            return np.minimum(b, a)
        if op == P.MAX:
            return np.maximum(b, a)
        if np.any(b == 0):
            raise SimulationError(f"{self.where(pc)}: division by zero")
        if op == P.FLOORDIV:
            return a // b
        if op == P.CEILDIV:
            return -(-a // b)
        magnitude = np.abs(a) // np.abs(b)
        truncated = np.where((a >= 0) == (b > 0), magnitude, -magnitude)
        if op == P.DIVS:
            return truncated
        if op == P.REMS:
            return a - b * truncated
        return self.scalar_op(op, 0, 1, pc)  # the unknown-opcode error

    def load_index_rows(self, ins, pc: int, addr):
        if not self.functional:
            return 0  # an index picks the address a DMA reads, never its cost
        row_bytes = self.core_rows.row_bytes
        return np.array([self.load_index(ins, pc, _at(addr, j), row_bytes[r][UB])
                         for j, r in enumerate(self.cohort.row_list)], dtype=np.int64)

    def check_rows(self, space: int, lo, hi, pc: int, what: str) -> None:
        """KernelRun.check for every block (its message names the first block
        out of bounds)."""
        if _uniform(lo, hi):
            self.check(space, lo, hi, pc, what)
            return
        lo, hi = np.broadcast_arrays(lo, hi)
        bad = (lo < 0) | (hi > self.m.cap[space]) | (lo % self.m.align[space] != 0)
        if bad.any():
            j = int(np.argmax(bad))
            self.block = int(self.cohort.blocks[j])
            self.check(space, int(lo[j]), int(hi[j]), pc, what)

    # ------------------------------------------------------------------
    # Data handlers: every block's data, timed once
    # ------------------------------------------------------------------

    def h_dma(self, ins, pc, dst, src, a2, t) -> None:
        p, ssp, dsp, nb, ln, sg, dg, mode, path = ins[1], *ins[8:16]
        sx, dx = dma_extents(ssp, dsp, ln, mode)
        self.check_rows(ssp, src, src + nb * sx + (nb - 1) * sg, pc, "source")
        self.check_rows(dsp, dst, dst + nb * dx + (nb - 1) * dg, pc, "destination")
        pad, cast = mode == P.DMA_PAD, mode == P.DMA_CAST_F16
        c = self.cohort
        if not self.functional:
            pass
        elif c.span is not None and dsp != GM and _uniform(src, dst):
            bufs = self.span_bytes
            dma_copy(bufs[ssp], bufs[dsp], src, dst, nb, ln, sg, dg, sx, dx, pad, cast)
        else:
            for j, r in enumerate(c.row_list):
                bufs = self.core_rows.row_bytes[r]
                dma_copy(bufs[ssp], bufs[dsp], _at(src, j), _at(dst, j), nb, ln, sg, dg, sx, dx, pad, cast)
        self.occupy(p, t, self.dma_cost(path, nb * ln), pc)

    def h_load2d(self, ins, pc, dst, src, a2, t) -> None:
        dsp, rep, stride, transpose = ins[8], ins[9], ins[10], ins[11]
        self.check_rows(L1, src, src + ((rep - 1) * stride + 1) * FRACTAL_BYTES, pc, "source")
        self.check_rows(dsp, dst, dst + rep * FRACTAL_BYTES, pc, "destination")
        c = self.cohort
        if not self.functional:
            pass
        elif c.span is not None and _uniform(src, dst):
            bufs = self.span_bytes
            load2d_copy(bufs[L1], bufs[dsp], src, dst, rep, stride, transpose)
        else:
            for j, r in enumerate(c.row_list):
                bufs = self.core_rows.row_bytes[r]
                load2d_copy(bufs[L1], bufs[dsp], _at(src, j), _at(dst, j), rep, stride, transpose)
        path = PATH_L1_L0A if dsp == L0A else PATH_L1_L0B
        self.occupy(ins[1], t, self.dma_cost(path, rep * FRACTAL_BYTES), pc)

    def h_load3d(self, ins, pc, dst, src, a2, t) -> None:
        fm_h, fm_w, b32 = ins[8], ins[9], ins[22]
        es, c0 = (4, 8) if b32 else (2, 16)
        n_src = fm_h * fm_w * c0
        self.check_rows(L1, src, src + n_src * es, pc, "source")
        self.check_rows(L0A, dst, dst + ins[21] * ins[10] * ins[11] * c0 * es, pc, "destination")
        idx = im2col_index(*ins[8:22], c0)
        code = 1 if b32 else 0  # the f32 or f16 views
        c = self.cohort
        if not self.functional:
            pass
        elif c.span is not None and _uniform(src, dst):
            views = self.span_views[code]
            load3d_copy(views[L1], views[L0A], src // es, dst // es, n_src, idx)
        else:
            for j, r in enumerate(c.row_list):
                views = self.core_rows.row_views[r][code]
                load3d_copy(views[L1], views[L0A], _at(src, j) // es, _at(dst, j) // es, n_src, idx)
        self.occupy(ins[1], t, self.dma_cost(PATH_L1_L0A, idx.elements * es), pc)

    def h_mmad(self, ins, pc, c_addr, a, b, t) -> None:
        dt, m, n, k, acc = ins[8], ins[9], ins[10], ins[11], ins[12]
        es = ESIZE[dt]
        self.check_rows(L0A, a, a + m * k * es, pc, "A")
        self.check_rows(L0B, b, b + k * n * es, pc, "B")
        self.check_rows(L0C, c_addr, c_addr + m * n * 4, pc, "C")
        c = self.cohort
        if not self.functional:
            pass
        elif c.span is not None and _uniform(a, b, c_addr):
            views = self.span_views
            mmad(views[dt][L0A], views[dt][L0B], views[1][L0C], a // es, b // es, c_addr // 4, m, n, k, 32 // es, acc)
        else:
            for j, r in enumerate(c.row_list):
                row = self.core_rows.row_views[r]
                mmad(row[dt][L0A], row[dt][L0B], row[1][L0C],
                     _at(a, j) // es, _at(b, j) // es, _at(c_addr, j) // 4, m, n, k, 32 // es, acc)
        cost = self.static.get(pc)
        if cost is None:
            cost = self.static[pc] = self.cfg.mmad_cycles(P.DTYPES[dt], m, n, k)
        self.occupy(ins[1], t, cost, pc)

    def compile_vector(self, ins, pc):
        vec = self.decode_vector(ins)
        compute, cost, nops, spans = vec.compute, vec.cost, vec.nops, vec.spans
        batched = vec.mnemonic in ROW_BATCHED_VECTOR_OPS
        rows = self.core_rows
        four = nops == 4  # vsel: the run loop passes (a2, a3) as a2

        def run(a0, a1, a2, t):
            addrs = (a0, a1, *a2) if four else (a0, a1, a2)
            for i in range(nops):
                self.check_rows(UB, addrs[i], addrs[i] + spans[i], pc, "destination" if i == 0 else "source")
            c = self.cohort
            if not self.functional:
                pass
            elif batched and c.span is not None and _uniform(*addrs[:nops]):
                compute(self.span_ub, addrs)
            else:
                for j, r in enumerate(c.row_list):
                    compute(rows.row_ub[r], tuple(_at(a, j) for a in addrs))
            pf = self.pf
            start = max(t, pf[V])
            pf[V] = start + cost
            self.busy[V] += cost

        return run
