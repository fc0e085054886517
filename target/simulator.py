"""The simulated NPU: functional execution, timing per pipe, and race detection
in one pass over an assembled Program.

Timing model (ARCHITECTURE.md §5). The scalar unit walks the code in order,
spending `issue` cycles per instruction it hands to a pipe and `scalar` cycles
per scalar op or loop step. Each pipe is an in-order queue: an instruction
starts when it has been issued and the pipe's previous instruction is done,
and occupies the pipe for its cost. Pipes run concurrently. A set_flag fires
when all earlier work of its pipe is done; a wait_flag holds its pipe until a
matching set has fired, then consumes it (sets are counted). While a pipe
waits for a set not yet issued, the instructions issued to it are parked and
replayed, in order, when the set arrives, so every instruction executes (and
computes) only after what it waits for. Block time is when the last pipe
drains. Blocks of a launch go to the cores as they free up; a launch
lasts until its last block ends; GM bandwidth is split over the active cores.
Launches on one stream run in order; streams overlap, ordered by stream events,
and launches of different streams share the AI cores (`CorePool`): each
block goes to the core free first, and HBM is split over every busy core.
AI-CPU tasks (schedule entries "aicpu") run in their stream's order like a
launch, on the AI CPU (target/aicpu.py): they occupy their stream for
`TargetConfig.aicpu_cycles` and use no AI cores; their GM footprint is their
input and output ranges, checked against launches like any launch's. Copies
between GM and host memory (entries "memcpy") do the same on the host link
for `TargetConfig.memcpy_cycles`; their host ranges are checked against the
other copies' the same way.
"""

from __future__ import annotations

import math
from collections import defaultdict, deque
from dataclasses import dataclass
from functools import partial
from typing import NamedTuple

import numpy as np

from gedialects.npu.isa import (
    FRACTAL_BYTES,
    INT_BYTES,
    PIPE_INDEX,
    PIPES,
    REPEAT_BYTES,
    SPACE_INDEX,
    SPACES,
    MemSpace,
    Pipe,
    padded_burst,
)
from gedialects.npu.ops import INFINITIES_BY_DESIGN
from gedialects.npu.vector_ops import SPECS, contiguous_span
from target import program as P
from target.assembler import PATHS
from target.config import TargetConfig, load_target
from target.errors import DeadlockError, FlagBalanceError, RaceError, SimulationError
from target.profile import AI_CPU, MEMCPY, PIPE_LABELS, KernelProfile, Profile, op_name
from target.races import (
    NPIPES,
    PIPE_NAMES,
    SPACE_NAMES,
    BlockRaces,
    GmFootprint,
    cross_conflict,
)
from target.semantics import (
    ESIZE,
    NP_DTYPES,
    contiguous_layout,
    dma_copy,
    im2col_index,
    load2d_copy,
    load3d_copy,
    mmad,
    operand_extent,
    vector_layout,
    vread,
    vwrite,
)

GM, L1, L0A, L0B, L0C, UB = (SPACE_INDEX[s] for s in SPACES)
S = PIPE_INDEX[PIPES[0]]
V = PIPE_INDEX[Pipe.V]
PATH_NAMES = tuple(f"{s.value}_{d.value}" for s, d in PATHS)
PATH_L1_L0A = PATHS.index((MemSpace.L1, MemSpace.L0A))
PATH_L1_L0B = PATHS.index((MemSpace.L1, MemSpace.L0B))
RACE_MODES = ("error", "warn", "off")
VECTOR_OPS = frozenset(P.VECTOR_ENCODINGS)
# Opcodes with a fourth address pair (words 8, 9): the run loop computes it at
# issue, like the other three, and hands the pair over as the third address.
FOUR_ADDRESS_OPS = frozenset(op for op, e in P.VECTOR_ENCODINGS.items() if len(e.addresses) == 4)
INDEX_NUMPY = tuple(np.dtype(f"<i{INT_BYTES[d]}") for d in P.INDEX_DTYPES)  # by load_index dtype code


@dataclass
class SimResult:
    outputs: dict[str, np.ndarray]
    profile: Profile


UNDEFINED_BYTE = 0xFF
"""What the core-local memories hold before anything is written there: on
the hardware their contents are undefined, and 0xFF bytes are NaN in fp16
and fp32, so a kernel whose results depend on bytes it never wrote (a
product over padding nobody zeroed) shows it instead of reading zeros.
GM starts zeroed (the runtime clears the arena)."""


class KeptGm:
    """GM buffers a finished simulation leaves to the next in this process:
    touching fresh pages costs more than copying the weights into them
    (75 ms of ResNet-50's 51 MB, which then take 4 ms), so the largest buffer
    is kept and zeroed again. A buffer in use is out of the pool, so
    simultaneous simulations never share one."""

    _free: list[np.ndarray] = []

    @classmethod
    def take(cls, nbytes: int) -> np.ndarray:
        for i, buf in enumerate(cls._free):
            if buf.size >= nbytes:
                del cls._free[i]
                buf[:nbytes].fill(0)
                return buf
        return np.zeros(nbytes, dtype=np.uint8)

    @classmethod
    def give(cls, buf: np.ndarray) -> None:
        cls._free = [max([buf, *cls._free], key=lambda b: b.size)]


class Machine:
    """GM, host memory and one set of core-local memories. Blocks run one
    after another, so the local memories are reused by every block (as a
    core reuses them)."""

    def __init__(self, config: TargetConfig, gm_size: int, host_size: int = 0):
        self.gm_size = gm_size
        self.host_size = host_size
        if not 0 < gm_size <= P.MAX_GM_SIZE:
            raise SimulationError(f"gm_size {gm_size} is outside [1, {P.MAX_GM_SIZE}]")
        if not 0 <= host_size <= P.MAX_HOST_SIZE:
            raise SimulationError(f"host_size {host_size} is outside [0, {P.MAX_HOST_SIZE}]")
        cap = config.capacity_bytes
        try:
            self.gm_buffer = KeptGm.take(-(-gm_size // 64) * 64)
            gm = self.gm_buffer[: -(-gm_size // 64) * 64]
            self.bufs = [gm] + [np.full(cap[s.value], UNDEFINED_BYTE, dtype=np.uint8) for s in SPACES[1:]]
            self.host = np.zeros(host_size, dtype=np.uint8)  # what npu.memcpy copies to and from
        except MemoryError:
            raise SimulationError(f"cannot allocate the program's GM ({gm_size} bytes) "
                                  f"and host memory ({host_size} bytes)") from None
        self.f16 = [b.view(np.float16) for b in self.bufs]
        self.f32 = [b.view(np.float32) for b in self.bufs]
        self.views = (self.f16, self.f32, *([b.view(dt) for b in self.bufs] for dt in NP_DTYPES[2:]))  # by dtype code
        self.cap = [gm_size] + [cap[s.value] for s in SPACES[1:]]
        self.align = [config.alignment_bytes[s.value] for s in SPACES]


def _space_pipes(kernel: P.Kernel) -> list[tuple[int, ...]]:
    """For each memory space, the pipes whose instructions in this kernel touch
    it. Only they can race on it, so an access record can be forgotten once
    all of them are ordered after it."""
    touch: list[set[int]] = [set() for _ in SPACES]
    for ins in kernel.code:
        op = ins[0]
        if op < P.FIRST_PIPE_OP:
            continue
        p = ins[1]
        if op == P.DMA:
            touch[ins[8]].add(p)
            touch[ins[9]].add(p)
        elif op == P.LOAD2D:
            touch[L1].add(p)
            touch[ins[8]].add(p)
        elif op == P.LOAD3D:
            touch[L1].add(p)
            touch[L0A].add(p)
        elif op == P.MMAD:
            for sp in (L0A, L0B, L0C):
                touch[sp].add(p)
        elif op in VECTOR_OPS:
            touch[UB].add(p)
    return [tuple(sorted(t)) for t in touch]


def dma_extents(src_space: int, dst_space: int, length: int, mode: int) -> tuple[int, int]:
    """What one burst of a DMA covers at its source and its destination: with
    pad, whole 32-byte blocks on the on-chip side; a cast writes half the bytes."""
    pad = mode == P.DMA_PAD
    dst_length = length // 2 if mode == P.DMA_CAST_F16 else length
    return (padded_burst(length) if pad and src_space != GM else length,
            padded_burst(dst_length) if pad and dst_space != GM else dst_length)


class KernelRun:
    """Runs every block of one launch; holds the per-block machine state."""

    def __init__(self, sim: Simulation, kernel: P.Kernel, block_dim: int, launch: int, hbm_sharers: int = 0):
        """`hbm_sharers`: cores sharing HBM while it runs (CorePool.start;
        default: its own)."""
        cfg = sim.config
        self.sim = sim
        self.kernel = kernel
        self.block_dim = block_dim
        self.launch = launch
        self.m = sim.machine
        self.races_mode = sim.races
        self.space_pipes = _space_pipes(kernel)
        self.cores = min(block_dim, cfg.cores_for(kernel.uses_cube))
        hbm_sharers = hbm_sharers or self.cores
        lat = cfg.latency_cycles
        self.c_issue = lat["issue"]
        self.c_scalar = lat["scalar"]
        self.c_flag = lat["flag"]
        self.c_barrier = lat["barrier"]
        # (fixed latency, bytes per cycle) per DMA path at this launch's core count
        self.path_cost = []
        for name in PATH_NAMES:
            if name.startswith("gm_") or name.endswith("_gm"):
                self.path_cost.append(
                    (lat["dma_gm"], cfg.gm_bytes_per_cycle(name, hbm_sharers))
                )
            else:
                self.path_cost.append((lat["dma_local"], cfg.dma_bytes_per_cycle[name]))
        self.cfg = cfg
        self.static: dict[int, tuple] = {}  # per-pc decoded facts (layouts, costs)
        # One callable per pipe instruction: f(a0, a1, a2, issue_time).
        handlers = {
            P.DMA: self.h_dma,
            P.LOAD2D: self.h_load2d,
            P.LOAD3D: self.h_load3d,
            P.MMAD: self.h_mmad,
            P.SET_FLAG: self.h_set,
            P.WAIT_FLAG: self.h_wait,
            P.BARRIER: self.h_barrier,
        }  # (target/lockstep.py overrides the data handlers and compile_vector)
        self.busy = [0] * NPIPES
        self.bytes = [0] * len(PATHS)
        self.count = 0
        self.trace = [] if sim.trace else None
        # (core, set pipe, set done, wait pipe, wait released, block, "src->dst event e") when traced
        self.flows: list[tuple] = []
        self.footprints: list[GmFootprint] = []
        # Instruction budget of a block: the static bound of its loops
        # (program.instruction_bound), else the documented cap; the run's
        # remaining budget caps it too (Simulation.executed).
        bound, _ = sim.bounds.get((id(kernel), block_dim)) or P.instruction_bound(kernel, block_dim)
        self.budget = P.MAX_BLOCK_INSTRUCTIONS if bound is None else min(bound, P.MAX_BLOCK_INSTRUCTIONS)
        self.exec_ = [None] * len(kernel.code)
        for pc, ins in enumerate(kernel.code):
            op = ins[0]
            if op in VECTOR_OPS:
                self.exec_[pc] = self.compile_vector(ins, pc)
            elif op >= P.FIRST_PIPE_OP:
                self.exec_[pc] = partial(handlers[op], ins, pc)

    # ------------------------------------------------------------------
    # Messages
    # ------------------------------------------------------------------

    def where(self, pc: int) -> str:
        return f"kernel '{self.kernel.name}' block {self.block}: {self.kernel.describe(pc)}"

    def check(self, sp: int, lo: int, hi: int, pc: int, what: str) -> None:
        m = self.m
        if lo < 0 or hi > m.cap[sp]:
            limit = "gm_size" if sp == GM else "capacity"
            raise SimulationError(
                f"{self.where(pc)}: {what} {SPACE_NAMES[sp]} [{lo}, {hi}) is out of "
                f"bounds ({limit} {m.cap[sp]} bytes)"
            )
        if lo % m.align[sp]:
            raise SimulationError(
                f"{self.where(pc)}: {what} {SPACE_NAMES[sp]} address {lo} is not "
                f"aligned to {m.align[sp]} bytes"
            )

    # ------------------------------------------------------------------
    # Launch and block loop
    # ------------------------------------------------------------------

    def run(self, pool: CorePool, start: int) -> int:
        """Run the blocks from `start` on the cores of `pool` (CorePool), each
        on the core free first; the cycles from `start` to the last block's end."""
        cycles = self.place_blocks(pool, start, self.run_block)
        self.check_cross_block_races()
        return cycles

    def place_blocks(self, pool: CorePool, start: int, block_cycles) -> int:
        """Hand the blocks, in order, to the core of `pool` free first, from
        `start`; `block_cycles(b, core, offset)` is how long block b runs
        there (offset: its start from `start`). The cycles from `start` to
        the last block's end."""
        free = pool.free[self.kernel.uses_cube]
        end = start
        for b in range(self.block_dim):
            core = pool.next_core(self.kernel.uses_cube)
            begin = max(start, free[core])
            free[core] = begin + block_cycles(b, core, begin - start)
            end = max(end, free[core])
        return end - start

    def check_cross_block_races(self) -> None:
        if self.races_mode != "off" and self.block_dim > 1:
            hit = cross_conflict(self.footprints)
            if hit is not None:
                lo, hi, a, b = hit
                self.sim.race(
                    f"data race in kernel '{self.kernel.name}' between blocks {a} and "
                    f"{b} on gm bytes [{lo}, {hi}): one writes what the other "
                    f"touches, and the blocks of a launch are not ordered"
                )

    def run_block(self, b: int, core: int, offset: int) -> int:
        self.block = b
        self.pf = pf = [0] * NPIPES  # when each pipe has finished its queue
        self.blocked = blocked = [False] * NPIPES
        self.pending = pending = [deque() for _ in range(NPIPES)]
        self.wait_key = [-1] * NPIPES
        self.flags = defaultdict(deque)  # by (src * NPIPES + dst) * 8 + event
        self.rd = rd = (
            BlockRaces(
                self.space_pipes,
                self.kernel.describe,
                self.races_mode,
                b,
                self.kernel.name,
            )
            if self.races_mode != "off"
            else None
        )
        self.events = events = [] if self.trace is not None else None
        code = self.kernel.code
        n = len(code)
        regs = list(self.kernel.init_regs)
        regs[1] = b
        regs[2] = self.block_dim
        exec_ = self.exec_
        c_issue, c_scalar = self.c_issue, self.c_scalar
        budget = min(self.budget, P.MAX_RUN_INSTRUCTIONS - self.sim.executed - self.count)
        t = 0
        pc = 0
        count = 0
        scalar_n = 0
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
                regs[iv] += regs[ins[4]]
                if regs[iv] < regs[ins[3]]:
                    if count > budget:  # only loops repeat code: checked on back edges
                        self.over_budget(pc, count, budget)
                    pc = ins[5]
                    continue
            elif op == P.ADD:
                regs[ins[2]] = regs[ins[3]] + regs[ins[4]]
            elif op == P.MUL:
                regs[ins[2]] = regs[ins[3]] * regs[ins[4]]
            elif op == P.FOR:
                if regs[ins[5]] <= 0:
                    raise SimulationError(
                        f"{self.where(pc)}: loop step {regs[ins[5]]} is not positive"
                    )
                regs[ins[2]] = regs[ins[3]]
                if regs[ins[2]] >= regs[ins[4]]:
                    pc = ins[6]
            elif op == P.MOV:
                regs[ins[2]] = regs[ins[3]]
            elif op == P.LOAD_INDEX:
                regs[ins[2]] = self.load_index(ins, pc, regs[ins[3]] + ins[4])
            elif op == P.WAIT_S:
                t = self.wait_scalar(ins, pc, t)
            elif op == P.BARRIER_ALL:
                t = self.barrier_all(pc, t)
            else:
                regs[ins[2]] = self.scalar_op(op, regs[ins[3]], regs[ins[4]], pc)
            pc += 1
        for p in range(NPIPES):
            if blocked[p]:
                self.deadlock(p)
        if rd is not None:
            self.check_flag_balance()
        end = max(max(pf), t)
        self.busy[S] += scalar_n * c_scalar + (count - scalar_n) * c_issue
        self.count += count
        if rd is not None:
            self.footprints.append(GmFootprint(rd.gm))
            for msg in rd.found:
                self.sim.race(msg)
        if events is not None:
            locs = self.kernel.locs
            for p, start, dur, pc in events:
                self.trace.append((core, p, offset + start, dur, locs[pc][0], b))
            self.trace.append((core, S, offset, t, "issue", b))
            self.flows += _flag_flows(code, events, core, offset, b)
        return end

    def over_budget(self, pc: int, count: int, budget: int) -> None:
        if budget < self.budget:
            limit = f"the run's limit of {P.MAX_RUN_INSTRUCTIONS} instructions"
        elif budget == P.MAX_BLOCK_INSTRUCTIONS:
            limit = f"the limit of {P.MAX_BLOCK_INSTRUCTIONS} instructions per block"
        else:
            limit = f"the bound of {budget} instructions its loop counts allow"
        raise SimulationError(
            f"{self.where(pc)}: the block has executed {count} instructions, more than "
            f"{limit}; stopped (a loop count or loop register is corrupt)"
        )

    def check_flag_balance(self) -> None:
        for key, q in sorted(self.flags.items()):
            if not q:
                continue
            src, dst, ev = key // (NPIPES * 8), (key // 8) % NPIPES, key % 8
            msg = (
                f"kernel '{self.kernel.name}' block {self.block} ends with flag "
                f"{PIPE_NAMES[src]} -> {PIPE_NAMES[dst]} event {ev} set {len(q)} time(s) "
                f"more than waited; the next kernel on this core would pass a wait "
                f"early (add the matching npu.wait_flag)"
            )
            if self.races_mode == "error":
                raise FlagBalanceError(msg)
            if msg not in self.sim.profile.races:
                self.sim.race(msg)

    def scalar_op(self, op: int, a: int, b: int, pc: int) -> int:
        if op == P.SUB:
            return a - b
        if op == P.MIN:
            return min(b, a)
        if op == P.MAX:
            return max(b, a)
        if b == 0:
            raise SimulationError(f"{self.where(pc)}: division by zero")
        if op == P.FLOORDIV:
            return a // b
        if op == P.CEILDIV:
            return -(-a // b)
        if op == P.DIVS:
            q = abs(a) // abs(b)
            return q if (a >= 0) == (b > 0) else -q
        if op == P.REMS:
            return a - b * (
                abs(a) // abs(b) if (a >= 0) == (b > 0) else -(abs(a) // abs(b))
            )
        raise SimulationError(f"{self.where(pc)}: unknown scalar opcode {op}")

    # ------------------------------------------------------------------
    # Timing helpers
    # ------------------------------------------------------------------

    def occupy(self, p: int, t: int, cost: int, pc: int, busy: bool = True) -> int:
        pf = self.pf
        start = max(t, pf[p])
        pf[p] = start + cost
        if busy:
            self.busy[p] += cost
        if self.events is not None:
            self.events.append((p, start, cost, pc))
        return start

    def dma_cost(self, path: int, nbytes: int) -> int:
        fixed, rate = self.path_cost[path]
        self.bytes[path] += nbytes
        return fixed + math.ceil(nbytes / rate)

    # ------------------------------------------------------------------
    # Synchronisation
    # ------------------------------------------------------------------

    def h_set(self, ins, pc, a0, a1, a2, t) -> None:
        src = ins[8]
        start = self.occupy(src, t, self.c_flag, pc, busy=False)
        key = (ins[8] * NPIPES + ins[9]) * 8 + ins[10]
        snap = self.rd.snapshot(src) if self.rd is not None else None
        self.flags[key].append((start + self.c_flag, snap))
        wait_key = self.wait_key
        for p in range(NPIPES):
            if self.blocked[p] and wait_key[p] == key:
                self.drain(p)

    def h_wait(self, ins, pc, a0, a1, a2, t) -> None:
        p = ins[9]
        key = (ins[8] * NPIPES + p) * 8 + ins[10]
        q = self.flags[key]
        if not q:
            self.blocked[p] = True
            self.wait_key[p] = key
            self.pending[p].appendleft((pc, a0, a1, a2, t))
            return
        fired, snap = q.popleft()
        pf = self.pf
        ready = max(t, pf[p])
        start = max(ready, fired)
        pf[p] = start + self.c_flag
        if self.events is not None:
            self.events.append((p, ready, start - ready + self.c_flag, pc))
        if snap is not None:
            self.rd.join(p, snap)

    def drain(self, p: int) -> None:
        self.blocked[p] = False
        self.wait_key[p] = -1
        q = self.pending[p]
        exec_ = self.exec_
        while q and not self.blocked[p]:
            pc, a0, a1, a2, t = q.popleft()
            exec_[pc](a0, a1, a2, t)

    def wait_scalar(self, ins, pc, t) -> int:
        key = (ins[2] * NPIPES + S) * 8 + ins[3]
        q = self.flags[key]
        if not q:
            raise DeadlockError(
                f"{self.where(pc)}: the scalar unit waits for "
                f"{PIPE_NAMES[ins[2]]} -> s event {ins[3]}, which no issued set_flag "
                f"can fire (deadlock)"
            )
        fired, snap = q.popleft()
        if snap is not None:
            for p in range(NPIPES):
                self.rd.join(p, snap)
        return max(t, fired) + self.c_flag

    def load_index(self, ins, pc, addr: int, ub: np.ndarray | None = None) -> int:
        """npu.load_index: one integer from UB (the machine's, or the core's
        `ub`), wrapped once by the bound."""
        size = INDEX_NUMPY[ins[5]].itemsize
        if addr < 0 or addr + size > self.m.cap[UB]:
            raise SimulationError(
                f"{self.where(pc)}: index ub [{addr}, {addr + size}) is out of bounds "
                f"(capacity {self.m.cap[UB]} bytes)"
            )
        if addr % size:  # scalar reads need element alignment only, not a whole block
            raise SimulationError(f"{self.where(pc)}: index address {addr} is not aligned to {size} bytes")
        if self.rd is not None:
            self.rd.scalar_read(UB, addr, addr + size, pc)
        ub = self.m.bufs[UB] if ub is None else ub
        value = int(ub[addr : addr + size].view(INDEX_NUMPY[ins[5]])[0])
        bound = ins[6]
        if not -bound <= value < bound:
            raise SimulationError(
                f"{self.where(pc)}: index {value} is out of range [-{bound}, {bound}) "
                f"(ub byte {addr}); check the indices fed to the gather"
            )
        return value + bound if value < 0 else value

    def barrier_all(self, pc, t) -> int:
        for p in range(NPIPES):
            if self.blocked[p]:
                self.deadlock(
                    p, f"{self.kernel.describe(pc)} waits for every pipe, but "
                )
        if self.rd is not None:
            self.rd.join_all()
        end = max(max(self.pf), t) + self.c_barrier
        if self.events is not None:
            self.events.append((S, t, end - t, pc))
        return end

    def h_barrier(self, ins, pc, a0, a1, a2, t) -> None:
        self.occupy(ins[1], t, self.c_barrier, pc, busy=False)

    def deadlock(self, p: int, prefix: str = "") -> None:
        pc = self.pending[p][0][0]
        ins = self.kernel.code[pc]
        raise DeadlockError(
            f"deadlock in kernel '{self.kernel.name}' block {self.block}: {prefix}"
            f"{self.kernel.describe(pc)} on {PIPE_NAMES[p]} waits for "
            f"{PIPE_NAMES[ins[8]]} -> {PIPE_NAMES[ins[9]]} event {ins[10]}, which is "
            f"never set"
        )

    # ------------------------------------------------------------------
    # Data movement
    # ------------------------------------------------------------------

    def h_dma(self, ins, pc, dst, src, a2, t) -> None:
        p, ssp, dsp, nb, ln, sg, dg, mode, path = ins[1], *ins[8:16]
        sx, dx = dma_extents(ssp, dsp, ln, mode)
        s_hi = src + nb * sx + (nb - 1) * sg
        d_hi = dst + nb * dx + (nb - 1) * dg
        self.check(ssp, src, s_hi, pc, "source")
        self.check(dsp, dst, d_hi, pc, "destination")
        bufs = self.m.bufs
        dma_copy(bufs[ssp], bufs[dsp], src, dst, nb, ln, sg, dg, sx, dx, mode == P.DMA_PAD, mode == P.DMA_CAST_F16)
        self.occupy(p, t, self.dma_cost(path, nb * ln), pc)
        rd = self.rd
        if rd is not None:
            rd.tick(p)
            rd.access(
                ssp,
                src,
                s_hi,
                False,
                None if nb == 1 or sg == 0 else (src, nb, sx + sg, 1, 0, sx),
                p,
                pc,
            )
            rd.access(
                dsp,
                dst,
                d_hi,
                True,
                None if nb == 1 or dg == 0 else (dst, nb, dx + dg, 1, 0, dx),
                p,
                pc,
            )

    def h_load2d(self, ins, pc, dst, src, a2, t) -> None:
        dsp, rep, stride, transpose = ins[8], ins[9], ins[10], ins[11]
        s_hi = src + ((rep - 1) * stride + 1) * FRACTAL_BYTES
        d_hi = dst + rep * FRACTAL_BYTES
        self.check(L1, src, s_hi, pc, "source")
        self.check(dsp, dst, d_hi, pc, "destination")
        load2d_copy(self.m.bufs[L1], self.m.bufs[dsp], src, dst, rep, stride, transpose)
        path = PATH_L1_L0A if dsp == L0A else PATH_L1_L0B
        self.occupy(ins[1], t, self.dma_cost(path, rep * FRACTAL_BYTES), pc)
        rd = self.rd
        if rd is not None:
            p = ins[1]
            rd.tick(p)
            pat = (
                None
                if stride == 1 or rep == 1
                else (src, rep, stride * FRACTAL_BYTES, 1, 0, FRACTAL_BYTES)
            )
            rd.access(L1, src, s_hi, False, pat, p, pc)
            rd.access(dsp, dst, d_hi, True, None, p, pc)

    def h_load3d(self, ins, pc, dst, src, a2, t) -> None:
        fm_h, fm_w, b32 = ins[8], ins[9], ins[22]
        es, c0 = (4, 8) if b32 else (2, 16)
        n_src = fm_h * fm_w * c0
        s_hi = src + n_src * es
        d_hi = dst + ins[21] * ins[10] * ins[11] * c0 * es  # m_len rows of kh*kw*c0
        self.check(L1, src, s_hi, pc, "source")
        self.check(L0A, dst, d_hi, pc, "destination")
        idx = im2col_index(*ins[8:22], c0)
        view = self.m.f32 if b32 else self.m.f16
        load3d_copy(view[L1], view[L0A], src // es, dst // es, n_src, idx)
        self.occupy(ins[1], t, self.dma_cost(PATH_L1_L0A, idx.elements * es), pc)
        rd = self.rd
        if rd is not None:
            p = ins[1]
            rd.tick(p)
            rd.access(L1, src, s_hi, False, None, p, pc)
            rd.access(L0A, dst, d_hi, True, None, p, pc)

    # ------------------------------------------------------------------
    # Cube
    # ------------------------------------------------------------------

    def h_mmad(self, ins, pc, c, a, b, t) -> None:
        dt, m, n, k, acc = ins[8], ins[9], ins[10], ins[11], ins[12]
        es = ESIZE[dt]
        a_hi, b_hi, c_hi = a + m * k * es, b + k * n * es, c + m * n * 4
        self.check(L0A, a, a_hi, pc, "A")
        self.check(L0B, b, b_hi, pc, "B")
        self.check(L0C, c, c_hi, pc, "C")
        views = self.m.views[dt]
        mmad(
            views[L0A],
            views[L0B],
            self.m.f32[L0C],
            a // es,
            b // es,
            c // 4,
            m,
            n,
            k,
            32 // es,
            acc,
        )
        cost = self.static.get(pc)
        if cost is None:
            cost = self.static[pc] = self.cfg.mmad_cycles(P.DTYPES[dt], m, n, k)
        self.occupy(ins[1], t, cost, pc)
        rd = self.rd
        if rd is not None:
            p = ins[1]
            rd.tick(p)
            rd.access(L0A, a, a_hi, False, None, p, pc)
            rd.access(L0B, b, b_hi, False, None, p, pc)
            rd.access(L0C, c, c_hi, True, None, p, pc)

    # ------------------------------------------------------------------
    # Vector
    # ------------------------------------------------------------------

    def decode_vector(self, ins) -> VectorInstruction:
        """decode_vector, once per encoding in a simulation (kernels repeat
        their vector instructions; the address words do not matter)."""
        key = (ins[0], ins[8:])
        vec = self.sim.vector_decodes.get(key)
        if vec is None:
            vec = self.sim.vector_decodes[key] = decode_vector(ins, self.cfg)
        return vec

    def compile_vector(self, ins, pc):
        """A closure running one vector instruction, with its layouts, spans,
        chunk patterns, NumPy function and cost bound once."""
        vec = self.decode_vector(ins)
        compute, cost, nops, spans, pats = vec.compute, vec.cost, vec.nops, vec.spans, vec.patterns
        ub = tuple(views[UB] for views in self.m.views)
        cap, align = self.m.cap[UB], self.m.align[UB]
        busy = self.busy
        four = nops == 4  # vsel: the run loop passes (a2, a3) as a2

        def run(a0, a1, a2, t):
            addrs = (a0, a1, *a2) if four else (a0, a1, a2)
            for i in range(nops):
                a = addrs[i]
                if a < 0 or a + spans[i] > cap or a % align:
                    self.check(UB, a, a + spans[i], pc, "destination" if i == 0 else "source")
            compute(ub, addrs)
            pf = self.pf
            start = max(t, pf[V])
            pf[V] = start + cost
            busy[V] += cost
            if self.events is not None:
                self.events.append((V, start, cost, pc))
            rd = self.rd
            if rd is not None:
                rd.vc[V][V] += 1
                for i in (*range(1, nops), 0):  # sources are read before dst is written
                    a, p = addrs[i], pats[i]
                    rd.access(UB, a, a + spans[i], i == 0, None if p is None else (a, *p), V, pc)

        return run


class VectorInstruction(NamedTuple):
    """One vector instruction decoded once: what `compute(ub, addresses)`
    does to UB (ub: its view per dtype code), its cost, and per operand
    (destination first) the bytes it spans from its base and its chunk
    pattern for the race detector."""

    mnemonic: str
    compute: object
    cost: int
    nops: int
    spans: tuple[int, ...]
    patterns: tuple


def decode_vector(ins: tuple, config: TargetConfig) -> VectorInstruction:
    enc = P.VECTOR_ENCODINGS[ins[0]]
    family = enc.family_spec
    name = enc.mnemonic(ins)
    R = ins[enc.repeat]
    dt = ins[enc.dtype]
    sdt = dt if enc.src_dtype is None else ins[enc.src_dtype]
    M = ins[enc.mask] if enc.mask is not None else REPEAT_BYTES // max(ESIZE[dt], ESIZE[sdt])
    # Per operand (destination first): dtype code, layout, span, chunk pattern.
    operands = []
    strided = 0
    for i, operand in enumerate(family.operands):
        code = dt if i == 0 else sdt
        es = ESIZE[code]
        if operand.per_repeat is None:
            blk, rep = ins[enc.blk + strided], ins[enc.rep + strided]
            strided += 1
            span, pat = operand_extent(R, M, blk, rep, es)
            layout = vector_layout(R, M, blk, rep, es)
        else:
            span, pat = contiguous_span(R, operand.per_repeat, es), None
            layout = contiguous_layout(R, operand.per_repeat)
        operands.append((code, layout, span, pat))
    scalar = () if enc.scalar is None else (NP_DTYPES[dt].type(ins[enc.scalar]),)
    return VectorInstruction(
        name,
        _vector_compute(SPECS[name].semantics, family.elementwise, operands, scalar),
        config.vector_cycles(name, R),
        len(operands),
        tuple(span for _, _, span, _ in operands),
        tuple(pat for _, _, _, pat in operands),
    )


def _vector_compute(func, elementwise, operands, scalar):
    """The NumPy part of a vector instruction: f(ub, addresses) reading every
    source as its layout says and storing `func`'s result through the
    destination's layout (which rounds it to the destination's dtype). UB is
    one core's or one row per core (the rows are folded into the repeats:
    `func` sees [repeat, n] arrays either way)."""
    codes = [code for code, _, _, _ in operands]
    esizes = [ESIZE[code] for code in codes]
    layouts = [layout for _, layout, _, _ in operands]
    d_code, d_es, d_layout = codes[0], esizes[0], layouts[0]
    sources = list(zip(codes[1:], esizes[1:], layouts[1:]))
    if elementwise and all(lay[0] == 0 for lay in layouts):
        # Every operand is one contiguous run of the same length: flat slices.
        n = d_layout[1] * d_layout[2]

        def contiguous(ub, addrs):
            d = addrs[0] // d_es
            values = [ub[code][..., a // es : a // es + n] for (code, es, _), a in zip(sources, addrs[1:])]
            ub[d_code][..., d : d + n] = func(*values, *scalar)

        return contiguous

    def strided(ub, addrs):
        values = [vread(ub[code], a // es, lay) for (code, es, lay), a in zip(sources, addrs[1:])]
        dst = ub[d_code]
        if dst.ndim == 1:
            vwrite(dst, addrs[0] // d_es, d_layout, func(*values, *scalar))
            return
        lead = dst.shape[:-1]
        result = func(*(v.reshape((-1, v.shape[-1])) for v in values), *scalar)
        if np.ndim(result) == 2:
            result = result.reshape(lead + (-1, result.shape[-1]))
        vwrite(dst, addrs[0] // d_es, d_layout, result)

    return strided


class CorePool:
    """When each AI core is free, for the launches of all streams.

    Launches are dispatched in schedule order (the order the host submits
    them), block by block, as a block scheduler hands blocks to idle cores:
    each block goes to the core of its kind that is free first (ties: the
    lower core number), from when its stream is ready. With one stream every
    core is free when a launch starts, so blocks go round-robin over the
    first min(block_dim, cores) cores. A later launch never takes a core back
    from an earlier one. A coupled chip has one pool of cores; a split one a
    cube pool and a vector pool. GM bandwidth is shared by the launch's
    min(block_dim, cores) cores and the cores other launches keep busy when
    it starts, at most every core of the chip."""

    def __init__(self, config: TargetConfig):
        self.config = config
        self.free = {True: [0] * config.cube_cores, False: [0] * config.vector_cores}
        if config.coupled:
            self.free[False] = self.free[True]

    def start(self, uses_cube: bool, block_dim: int, ready: int) -> tuple[int, int]:
        """(when a launch whose stream is ready at `ready` starts, the cores
        sharing HBM while it runs)."""
        free = self.free[uses_cube]
        start = max(ready, min(free))
        pools = [self.free[True]] if self.config.coupled else [self.free[True], self.free[False]]
        busy = sum(1 for pool in pools for t in pool if t > start)
        return start, min(min(block_dim, len(free)) + busy, sum(len(pool) for pool in pools))

    def next_core(self, uses_cube: bool) -> int:
        free = self.free[uses_cube]
        return min(range(len(free)), key=lambda c: (free[c], c))


class Simulation:
    """One run of a program: GM, launches in schedule order, stream timing."""

    def __init__(
        self, program: P.Program, config: TargetConfig, races: str, trace: bool, lockstep: bool = False,
        functional: bool = True,
    ):
        """functional=False: timing only (lock-step): no value is computed,
        moved or read back; cycles and counters are the full run's."""
        if races not in RACE_MODES:
            raise ValueError(f"races must be one of {RACE_MODES}, got {races!r}")
        if lockstep and (races != "off" or trace):
            raise ValueError("lock-step simulation neither detects races nor traces: races='off', trace=False")
        if not (functional or lockstep):
            raise ValueError("timing-only simulation runs lock-step")
        self.functional = functional
        self.program = program
        self.config = config
        self.races = races
        self.trace = trace
        self.lockstep = lockstep
        self.core_rows = None  # lockstep.CoreRows: the cores' memories, one row per block
        self.bounds: dict[tuple[int, int], tuple] = {}  # instruction_bound per (id(kernel), block_dim)
        self.vector_decodes: dict[tuple, VectorInstruction] = {}  # decode_vector per encoding
        problem = P.budget_problem(program, self.bounds)
        if problem is not None:
            raise SimulationError(f"{problem[0]}: {problem[1]}")
        if program.memcpy_tasks and config.host_link is None:
            raise SimulationError(config.no_host_link())
        self.machine = Machine(config, program.gm_size, program.host_size)
        self.cores = CorePool(config)
        self.profile = Profile(target=config.name, clock_mhz=config.clock_mhz, device_bytes=program.gm_size,
                               host_bytes=program.host_size,
                               arena_bytes=int(program.meta.get("arena_bytes", 0)),
                               no_reuse_bytes=int(program.meta.get("no_reuse_bytes", 0)),
                               arena_live_bytes=P.arena_live_bytes(program))
        self.executed = 0  # instructions of the finished launches (MAX_RUN_INSTRUCTIONS)
        self.progress = None  # progress(done, total, name) after every launch and task (simulate sets it)

    def race(self, msg: str) -> None:
        if self.races == "error":
            raise RaceError(msg)
        self.profile.races.append(msg)

    def load_inputs(self, inputs: dict[str, np.ndarray]) -> None:
        gm = self.machine.bufs[GM]
        for c in self.program.constants if self.functional else ():
            gm[c.offset : c.offset + len(c.data)] = np.frombuffer(
                c.data, dtype=np.uint8
            )
        names = {s.name for s in self.program.inputs}
        unknown = set(inputs) - names
        if unknown:
            raise SimulationError(
                f"unknown input(s) {sorted(unknown)}; the program takes {sorted(names)}"
            )
        for slot in self.program.inputs:
            if slot.name not in inputs:
                raise SimulationError(
                    f"missing input '{slot.name}' ({slot.dtype}{list(slot.shape)})"
                )
            arr = np.asarray(inputs[slot.name])
            if tuple(arr.shape) != slot.shape:
                raise SimulationError(
                    f"input '{slot.name}' has shape {list(arr.shape)}, the program "
                    f"expects {list(slot.shape)}"
                )
            if self.functional:
                data = np.ascontiguousarray(arr, dtype=slot.dtype).view(np.uint8).ravel()
                gm[slot.offset : slot.offset + slot.nbytes] = data

    def read_outputs(self) -> dict[str, np.ndarray]:
        gm = self.machine.bufs[GM]
        out = {}
        for slot in self.program.outputs if self.functional else ():
            raw = gm[slot.offset : slot.offset + slot.nbytes].copy()
            out[slot.name] = raw.view(slot.dtype).reshape(slot.shape)
        return out

    def run(self) -> None:
        stream_time: dict[int, int] = {}
        event_time: dict[int, int] = {}
        event_stream: dict[int, int] = {}
        # happens-before between tasks: per stream, the last schedule index
        # of every stream known to be finished before its next task
        stream_vc: dict[int, dict[int, int]] = {}
        event_vc: dict[int, dict[int, int]] = {}
        done: list[tuple[int, int, dict[str, GmFootprint], str]] = []  # (stream, index, footprints, label)
        tasks = sum(1 for entry in self.program.schedule if entry[0] in P.TASK_KINDS)
        for i, entry in enumerate(self.program.schedule):
            kind = entry[0]
            if kind == "record":
                _, s, ev = entry
                event_time[ev] = stream_time.get(s, 0)
                event_vc[ev] = dict(stream_vc.get(s, {}))
                event_stream[ev] = s
                continue
            if kind == "wait":
                _, s, ev = entry
                if ev not in event_time:
                    raise DeadlockError(
                        f"stream {s} waits for event {ev}, which is never recorded"
                    )
                # (recording stream, recorded at, waiting stream, released at, event): a flow in the trace
                self.profile.stream_flows.append(
                    (event_stream[ev], event_time[ev], s, max(stream_time.get(s, 0), event_time[ev]), ev))
                stream_time[s] = max(stream_time.get(s, 0), event_time[ev])
                vc = stream_vc.setdefault(s, {})
                for k, v in event_vc[ev].items():
                    vc[k] = max(vc.get(k, -1), v)
                continue
            s = entry[-1]
            ready = stream_time.get(s, 0)
            if kind == "launch":
                ran = self.run_launch(i, self.program.kernels[entry[1]], entry[2], s, ready)
            elif kind == "aicpu":
                ran = self.run_aicpu(i, self.program.aicpu_tasks[entry[1]], s, ready)
            else:
                ran = self.run_memcpy(i, self.program.memcpy_tasks[entry[1]], s, ready)
            prof = ran.profile
            stream_time[s] = prof.start + prof.cycles
            vc = stream_vc.setdefault(s, {})
            if self.races != "off":
                for js, j, footprints, label in done:
                    if js == s or vc.get(js, -1) >= j:  # ordered by the stream or an event
                        continue
                    for memory, footprint in ran.footprints.items():
                        hit = footprint.conflict(footprints[memory]) if memory in footprints else None
                        if hit is not None:
                            self.race(_race_message(label, js, ran.label, s, hit, memory))
                done.append((s, i, ran.footprints, ran.label))
            vc[s] = i
            if self.functional:
                self.check_overflow(prof, ran.written)
            self.profile.kernels.append(prof)
            if self.progress is not None:
                self.progress(len(self.profile.kernels), tasks, prof.name)
        self.profile.total_cycles = max(stream_time.values(), default=0)

    def run_launch(self, i: int, kernel: P.Kernel, block_dim: int, stream: int, ready: int) -> Ran:
        """Run schedule entry `i`, a launch whose stream is ready at `ready`,
        on the AI cores."""
        start, sharers = self.cores.start(kernel.uses_cube, block_dim, ready)
        if self.lockstep:
            from target.lockstep import LockstepRun  # it builds on KernelRun

            run = LockstepRun(self, kernel, block_dim, i, sharers)
        else:
            run = KernelRun(self, kernel, block_dim, i, sharers)
        cycles = run.run(self.cores, start)
        self.executed += run.count
        footprints = {"gm": GmFootprint.union(run.footprints)} if self.races != "off" else {}
        return Ran(self.kernel_profile(run, i, stream, start, cycles), footprints,
                   f"launch of '{kernel.name}'", P.written_regions(kernel.info))

    def check_overflow(self, prof: KernelProfile, regions: list[tuple[int, int, str]]) -> None:
        """msprof's overflow check: the float results a kernel (or task) just
        wrote to GM that are inf or NaN (force_fp16 beyond its range, most
        often); recorded in its info and as a profile warning naming it."""
        inf = nan = 0
        by_design = prof.info.get("infinities") == INFINITIES_BY_DESIGN  # a mask's -inf: only NaN counts
        for offset, nbytes, dtype in regions:
            if dtype not in ("float16", "float32") or not nbytes:
                continue
            values = self.machine.bufs[GM][offset : offset + nbytes].view(dtype)
            if np.isfinite(values).all():
                continue
            inf += 0 if by_design else int(np.isinf(values).sum())
            nan += int(np.isnan(values).sum())
        if inf or nan:
            prof.info["overflow"] = f"{inf} inf, {nan} NaN"
            self.profile.warnings.append(
                f"overflow: {prof.name} ({op_name(prof)}) wrote {inf} inf and {nan} NaN values")

    def run_aicpu(self, i: int, task: P.AicpuTask, stream: int, ready: int) -> Ran:
        """Execute schedule entry `i`, an AI-CPU task, on GM: it starts when its
        stream is ready (no AI cores to wait for)."""
        from target.aicpu import execute  # graph-dialect kernels: only for programs with tasks

        if self.functional:
            execute(task, self.machine.bufs[GM], self.program.gm_size)
        cycles = self.config.aicpu_cycles(task.bytes_read + task.bytes_written, task.work)
        footprints = {"gm": _footprint([(t.offset, t.nbytes) for t in task.ins],
                                       [(t.offset, t.nbytes) for t in task.outs])}
        return Ran(self.aicpu_profile(task, i, stream, ready, cycles), footprints,
                   f"AI-CPU task '{task.name}'", [(t.offset, t.nbytes, t.dtype) for t in task.outs])

    def run_memcpy(self, i: int, copy: P.MemcpyTask, stream: int, ready: int) -> Ran:
        """Execute schedule entry `i`, a copy between GM and host memory: like
        an AI-CPU task it starts when its stream is ready and uses no AI core."""
        m = self.machine
        for memory, offset, size in (("gm", copy.gm_offset, m.gm_size), ("host", copy.host_offset, m.host_size)):
            if offset < 0 or offset + copy.nbytes > size:  # a hand-built Program: NumPy would clip the slice
                raise SimulationError(f"host copy '{copy.name}': {memory} [{offset}, {offset + copy.nbytes}) "
                                      f"is outside {memory}_size {size}")
        gm = slice(copy.gm_offset, copy.gm_offset + copy.nbytes)
        host = slice(copy.host_offset, copy.host_offset + copy.nbytes)
        gm_range, host_range = [(copy.gm_offset, copy.nbytes)], [(copy.host_offset, copy.nbytes)]
        if copy.writes_gm:  # h2d
            if self.functional:
                m.bufs[GM][gm] = m.host[host]
            footprints = {"gm": _footprint([], gm_range), "host": _footprint(host_range, [])}
        else:
            if self.functional:
                m.host[host] = m.bufs[GM][gm]
            footprints = {"gm": _footprint(gm_range, []), "host": _footprint([], host_range)}
        cycles = self.config.memcpy_cycles(copy.nbytes)
        # a copy computes nothing: the overflow check saw its values where they were computed
        return Ran(self.memcpy_profile(copy, i, stream, ready, cycles), footprints, f"host copy '{copy.name}'", [])

    def memcpy_profile(self, copy: P.MemcpyTask, i: int, stream: int, start: int, cycles: int) -> KernelProfile:
        path = "host_gm" if copy.writes_gm else "gm_host"
        info = {"kind": "memcpy", "direction": copy.direction, "source": copy.source, "tensor": copy.tensor}
        return _off_core_profile(copy.name, i, stream, start, cycles, MEMCPY, {path: copy.nbytes}, info)

    def aicpu_profile(
        self, task: P.AicpuTask, i: int, stream: int, start: int, cycles: int
    ) -> KernelProfile:
        return _off_core_profile(
            task.name, i, stream, start, cycles, AI_CPU,
            {k: v for k, v in (("gm_aicpu", task.bytes_read), ("aicpu_gm", task.bytes_written)) if v},
            {
                "kind": task.kind,
                "absorbed": list(task.absorbed),
                "source": task.source,
                "reason": task.reason,
                "work": task.work,
                "aicpu_cores": self.config.aicpu.cores,
                # the AI CPU reads and writes the logical order
                **{f"{side}_{what}": ";".join(fn(x) for x in tensors)
                   for side, tensors in (("in", task.ins), ("out", task.outs))
                   for what, fn in (("shapes", lambda x: ",".join(map(str, x.shape))),
                                    ("formats", lambda x: "NCHW" if len(x.shape) == 4 else "ND"))},
            },
        )

    def kernel_profile(
        self, run: KernelRun, i: int, stream: int, start: int, cycles: int
    ) -> KernelProfile:
        denom = max(1, cycles * run.cores)
        busy = {PIPE_LABELS[p]: run.busy[p] for p in range(NPIPES)}
        events = []
        if run.trace is not None:
            events = [
                (c, p, start + s, d, name, b) for c, p, s, d, name, b in run.trace
            ]
        return KernelProfile(
            name=run.kernel.name,
            launch=i,
            stream=stream,
            block_dim=run.block_dim,
            cores=run.cores,
            start=start,
            cycles=cycles,
            busy=busy,
            ratio={k: v / denom for k, v in busy.items()},
            bytes={PATH_NAMES[j]: n for j, n in enumerate(run.bytes) if n},
            instructions=run.count,
            events=events,
            flows=[(c, sp, start + sd, wp, start + wr, b, label) for c, sp, sd, wp, wr, b, label in run.flows],
            info=dict(run.kernel.info),
        )


class Ran(NamedTuple):
    """What running one schedule entry gave: its profile, what it touched per
    memory ("gm", "host") for the race check between streams, what names it
    there, and the GM tensors it wrote (offset, nbytes, dtype) for the
    overflow check."""

    profile: KernelProfile
    footprints: dict[str, GmFootprint]
    label: str
    written: list[tuple[int, int, str]]


def _footprint(reads: list[tuple[int, int]], writes: list[tuple[int, int]]) -> GmFootprint:
    """The byte ranges (offset, nbytes) a task off the AI cores reads and
    writes, as interval sets (the same for GM and host memory)."""
    return GmFootprint([(o, o + n, None, False, 0) for o, n in reads if n]
                       + [(o, o + n, None, True, 0) for o, n in writes if n])


def _off_core_profile(name: str, i: int, stream: int, start: int, cycles: int, task_type: str,
                      moved: dict[str, int], info: dict) -> KernelProfile:
    """The profile of a task that uses no AI core (an AI-CPU task, a copy):
    one block, no cores, no pipe busy; `moved` bytes per path."""
    return KernelProfile(
        name=name,
        launch=i,
        stream=stream,
        block_dim=1,
        cores=0,  # AI cores: none
        start=start,
        cycles=cycles,
        busy={label: 0 for label in PIPE_LABELS},
        ratio={label: 0.0 for label in PIPE_LABELS},
        bytes=moved,
        instructions=0,
        task_type=task_type,
        info=info,
    )


def _flag_flows(code, events, core: int, offset: int, block: int) -> list[tuple]:
    """The set_flag -> wait_flag pairs of one block's traced events, in the
    order the hardware pairs them (the n-th set of (src, dst, event) with its
    n-th wait): (core, set pipe, set done, wait pipe, wait released, block, label)."""
    sets: dict[tuple, deque] = {}
    flows = []
    for p, start, dur, pc in sorted(events, key=lambda e: e[1]):
        ins = code[pc]
        if ins[0] not in (P.SET_FLAG, P.WAIT_FLAG):
            continue
        key = (ins[8], ins[9], ins[10])
        if ins[0] == P.SET_FLAG:
            sets.setdefault(key, deque()).append((p, offset + start + dur))
        elif sets.get(key):
            sp, done = sets[key].popleft()
            label = f"{PIPE_LABELS[key[0]]} -> {PIPE_LABELS[key[1]]} event {key[2]}"
            flows.append((core, sp, done, p, offset + start + dur, block, label))
    return flows


def _race_message(a: str, sa: int, b: str, sb: int, hit: tuple[int, int], memory: str = "gm") -> str:
    where = f"on {memory} bytes [{hit[0]}, {hit[1]})"
    if a.startswith("launch of ") and b.startswith("launch of "):
        return (
            f"data race between launches of {a[10:]} (stream {sa}) and {b[10:]} "
            f"(stream {sb}) {where}: no stream event orders them"
        )
    return f"data race between {a} (stream {sa}) and {b} (stream {sb}) {where}: no stream event orders them"


def simulate(
    program: P.Program,
    inputs: dict[str, np.ndarray],
    config: TargetConfig | str = "davinci-910",
    *,
    races: str = "error",
    trace: bool = False,
    progress=None,
    lockstep: bool | None = None,
    timing_only: bool = False,
) -> SimResult:
    """Run `program` on the simulated NPU.

    races: "error" raises RaceError at the first race, "warn" collects them in
    `profile.races`, "off" skips detection (and runs lock-step). trace: record
    every instruction for `write_chrome_trace`. progress: `progress(done,
    total, name)` after every launch and AI-CPU task. lockstep: run the
    blocks of a launch together (target/lockstep.py: the same outputs and
    cycles, several times faster); by default whenever races are off and no
    trace is asked for, and a program that meets an error there runs again
    block by block for the message; True insists (errors as lock-step meets
    them), False runs block by block. timing_only: compute no value (VTA's
    "count traffic without computing"; lock-step, races off, no trace): the
    cycles and every profile counter of the full run, no outputs."""
    cfg = load_target(config)
    if timing_only and (races != "off" or trace or lockstep is False):
        raise ValueError("timing-only simulation runs lock-step: races='off', trace=False")
    if lockstep is None and races == "off" and not trace:
        try:
            return _simulate(program, inputs, cfg, races, trace, progress, lockstep=True, functional=not timing_only)
        except SimulationError:  # run block by block (computing values) for the message: it names
            return _simulate(program, inputs, cfg, races, trace, progress, lockstep=False)  # the block met first
    return _simulate(program, inputs, cfg, races, trace, progress, lockstep=bool(lockstep),
                     functional=not timing_only)


def _simulate(program, inputs, cfg, races, trace, progress, lockstep: bool, functional: bool = True) -> SimResult:
    sim = Simulation(program, cfg, races, trace, lockstep, functional)
    try:
        sim.progress = progress
        sim.load_inputs(inputs)
        with np.errstate(all="ignore"):  # inf/nan are values here, as on the NPU
            sim.run()
        return SimResult(outputs=sim.read_outputs(), profile=sim.profile)
    finally:
        KeptGm.give(sim.machine.gm_buffer)
        if sim.core_rows is not None:
            sim.core_rows.give_back()
