"""Tasks of a tile.program on streams: what each reads and writes in GM, what
it must wait for, and when its storage may be reused.

A task is a `tile.kernel`, a `tile.aicpu` or a `tile.memcpy`, in program order (the order the
host submits them). Task j depends on an earlier task i when they touch one
GM tensor and at least one of them writes it (`dependences`); tensors are
named, and views and concat pieces are already one tensor. Tasks of one stream run in program order; a
`tile.stream_record` after a task and a `tile.stream_wait` before a later
one on another stream order the two (npu.stream_record / npu.stream_wait).

`retire_positions` is what the GM arena needs to reuse storage safely with
several streams: the first position from which every task is ordered after
a given task (so storage its last reader held may be taken from there on).
With one stream it is the next position, and lifetimes are as before.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import ArrayAttr, StringAttr
from xdsl.ir import Operation, SSAValue

from gedialects.tile import ops as t
from gedialects.tile import structured as st
from gedialects.tile.map_kernels import MapKernelOp, written_by


MEMSET = "memset"
"""The `kind` of a kernel that zeroes a tensor before its writers (gedialects/tile/memset.py)."""


TASK_TYPES = (t.KernelOp, t.AicpuOp, t.MemcpyOp)


def tasks_of(prog: t.ProgramOp) -> list[Operation]:
    """The kernels, AI-CPU tasks and host copies of `prog`, in program order."""
    return [op for op in prog.body.block.ops if isinstance(op, TASK_TYPES)]


@dataclass(frozen=True)
class Access:
    reads: frozenset[str]
    writes: frozenset[str]
    clears: bool = False
    """A memset: it zeroes what it writes for the tensor's next writer."""

    @property
    def tensors(self) -> frozenset[str]:
        return self.reads | self.writes


def access_of(task: Operation) -> Access:
    """The GM tensors `task` reads and writes: a loop-level kernel writes the
    tensor a tile.copy's destination points into and reads every other GM
    operand; a structured kernel writes by tile.store and reads by
    tile.load/tile.gather; a conv, pool or gemm kernel writes its op's output
    and reads its other operands."""
    if isinstance(task, t.AicpuOp):
        return Access(frozenset(n.data for n in task.in_names.data),  # type: ignore[attr-defined]
                      frozenset(n.data for n in task.out_names.data))  # type: ignore[attr-defined]
    if isinstance(task, t.MemcpyOp):
        return Access(frozenset([task.src.data]), frozenset([task.dst.data]))
    reads: set[str] = set()
    writes: set[str] = set()
    for op in task.walk():
        kind = type(op)
        if kind in _NAMED_READS:
            reads.add(op.tensor.data)  # type: ignore[attr-defined]
        elif kind is st.StoreOp:
            writes.add(op.tensor.data)  # type: ignore[attr-defined]
        elif kind is t.GmOp:
            _reference_accesses(op.result, op.tensor.data, reads, writes)  # type: ignore[attr-defined]
    clears = task.attributes.get("kind") == StringAttr(MEMSET)
    if clears:
        reads |= writes  # it clears bytes the tensor's writers then fill: ordered with them, not beside
    return Access(frozenset(reads), frozenset(writes), clears)


_NAMED_READS = frozenset((st.LoadOp, st.GatherOp))
"""Structured ops that read the GM tensor they name (tile.store writes it)."""


def _reference_accesses(ref: SSAValue, name: str, reads: set[str], writes: set[str]) -> None:
    """Add GM tensor `name` to what the users of `ref` (through tile.at) read
    or write: a map kernel op writes its outputs and reads every other
    operand, a tile.copy writes its first operand, any other op reads. (From
    the references' uses, not by looking at every operand of every op: the
    kernel's few tile.gm ops lead to all its GM accesses.)"""
    for use in ref.uses:
        user = use.operation
        if isinstance(user, t.AtOp):
            _reference_accesses(user.result, name, reads, writes)
        elif isinstance(user, MapKernelOp):
            (writes if user.operands[use.index] in written_by(user) else reads).add(name)
        else:
            (writes if isinstance(user, t.CopyOp) and use.index == 0 else reads).add(name)


def rename_tensor(task: Operation, old: str, new: str) -> None:
    """Make `task` access GM tensor `new` wherever it accesses `old` (the
    places `access_of` reads names from)."""
    if isinstance(task, t.AicpuOp):
        for side in ("in_names", "out_names"):
            names = task.properties[side].data  # type: ignore[attr-defined]
            task.properties[side] = ArrayAttr([StringAttr(new) if n.data == old else n for n in names])
        return
    if isinstance(task, t.MemcpyOp):
        for side in ("src", "dst"):
            if task.properties[side] == StringAttr(old):
                task.properties[side] = StringAttr(new)
        return
    for op in task.walk():
        if isinstance(op, st.LoadOp | st.GatherOp | st.StoreOp | t.GmOp) and op.tensor.data == old:
            op.properties["tensor"] = StringAttr(new)


def dependences(accesses: list[Access]) -> list[list[int]]:
    """For each task, the earlier tasks it must follow: the writers a read
    sees (read after write), the reads before it for a write (write after
    read) and, for a task that reads and writes a tensor, its writers too.
    Tasks that only write one tensor, with no read between them, write
    disjoint parts of it (the pieces of an in-place concat): they form a
    group, each member ordered after the reads before the group but not
    after the others; the simulator's race detector checks that byte by byte."""
    writers: dict[str, list[int]] = {}  # the current group of writers
    before_group: dict[str, list[int]] = {}  # the reads the group follows
    readers: dict[str, list[int]] = {}  # reads since the group began
    preds: list[list[int]] = []
    for j, a in enumerate(accesses):
        deps: set[int] = set()
        for name in a.reads:
            deps.update(writers.get(name, ()))
        for name in a.writes:
            if name in a.reads:  # read-modify-write: after everything, and nobody joins it
                deps.update(readers.get(name, ()))
                deps.update(before_group.get(name, ()))
                writers[name], before_group[name], readers[name] = [j], [], [j]
            elif readers.get(name) or name not in writers:  # a new group
                before_group[name] = readers.get(name, [])
                deps.update(before_group[name])
                writers[name], readers[name] = [j], []
            else:  # one more piece of the current group
                deps.update(before_group[name])
                writers[name].append(j)
        for name in a.reads - a.writes:
            readers.setdefault(name, []).append(j)
        deps.discard(j)
        preds.append(sorted(deps))
    _memsets_start_with_their_writers(accesses, preds)
    return preds


def _memsets_start_with_their_writers(accesses: list[Access], preds: list[list[int]]) -> None:
    """A memset waits for what its tensor's next task waits for: it clears
    the storage for that writer, and must not start while the storage's
    earlier tenants may still be in use (the arena plan put the tensor there
    for the writer's position in the program, not for its start). What the
    writer waits for through tasks between the two counts too (split-K's sum
    kernel writes the tensor after the partials kernel, which waits for the
    tasks before the memset: without them the memset ran on a stream of its
    own, ordered after nothing, and the arena plan had to keep every earlier
    tensor live to its position -- SqueezeNet's arena 1.98 -> 6.25 MB)."""
    for m, a in enumerate(accesses):
        if not a.clears:
            continue
        writer = next((j for j in range(m + 1, len(accesses)) if accesses[j].tensors & a.writes), None)
        if writer is None:
            continue
        before: set[int] = set()
        seen: set[int] = set()
        pending = list(preds[writer])
        while pending:
            p = pending.pop()
            if p in seen or p == m:
                continue
            seen.add(p)
            if p < m:
                before.add(p)
            else:  # a task between the memset and the writer: what it waits for
                pending.extend(preds[p])
        preds[m] = sorted(before)


@dataclass
class Schedule:
    """Streams of the tasks and the events between them: `waits[j]` are the
    tasks j waits for across streams (one event each, recorded right after
    that task)."""

    streams: list[int]
    waits: list[list[int]]

    @property
    def count(self) -> int:
        return max(self.streams, default=-1) + 1

    @property
    def recorded(self) -> list[int]:
        """The tasks another stream waits for, in order."""
        return sorted({i for w in self.waits for i in w})


def schedule_of(prog: t.ProgramOp) -> Schedule:
    """The streams and events `prog` already carries."""
    streams: list[int] = []
    waits: list[list[int]] = []
    recorded: dict[int, int] = {}  # event -> task recorded after
    last: dict[int, int] = {}  # stream -> its latest task
    pending: dict[int, list[int]] = {}  # stream -> tasks its next task waits for
    for op in prog.body.block.ops:
        if isinstance(op, t.StreamRecordOp):
            s = op.stream.value.data
            if s in last:
                recorded[op.event.value.data] = last[s]
        elif isinstance(op, t.StreamWaitOp):
            ev = op.event.value.data
            if ev in recorded:
                pending.setdefault(op.stream.value.data, []).append(recorded[ev])
        elif isinstance(op, TASK_TYPES):
            s = t.stream_of(op)
            last[s] = len(streams)
            streams.append(s)
            waits.append(pending.pop(s, []))
    return Schedule(streams, waits)


def happens_before(schedule: Schedule) -> list[int]:
    """Per task, a bitmask of the tasks ordered before it or equal (stream
    order and events, transitively)."""
    before: list[int] = []
    last: dict[int, int] = {}
    for j, s in enumerate(schedule.streams):
        mask = 1 << j
        if s in last:
            mask |= before[last[s]]
        for i in schedule.waits[j]:
            mask |= before[i]
        before.append(mask)
        last[s] = j
    return before


def retire_positions(schedule: Schedule) -> list[int]:
    """Per task i, the first position p such that every task at p or later is
    ordered after i: storage i used may be handed to a task from p on."""
    before = happens_before(schedule)
    n = len(before)
    out = []
    for i in range(n):
        p = i + 1
        for j in range(n - 1, i, -1):
            if not (before[j] >> i) & 1:
                p = j + 1
                break
        out.append(p)
    return out


def assign(preds: list[list[int]], max_streams: int) -> Schedule:
    """Streams for tasks in program order: a task continues the stream of
    its latest predecessor that is still that stream's last task (a chain
    stays on one stream); else it takes a stream whose last task it already
    depends on, else a new stream while fewer than `max_streams` exist, else
    the stream idle longest (the one whose last task is earliest). Then one
    wait per predecessor on another stream that the stream does not already
    know finished (vector clocks: the fewest events)."""
    streams: list[int] = []
    tail: list[int] = []  # stream -> its last task
    ancestors: list[int] = []  # bitmask of each task's transitive predecessors
    for j, ps in enumerate(preds):
        anc = 0
        for p in ps:
            anc |= (1 << p) | ancestors[p]
        ancestors.append(anc)
        choice = None
        for p in sorted(ps, reverse=True):
            if tail[streams[p]] == p:
                choice = streams[p]
                break
        if choice is None:
            idle = [s for s, last in enumerate(tail) if (anc >> last) & 1]
            if idle:
                choice = max(idle, key=lambda s: tail[s])
            elif len(tail) < max(1, max_streams):
                choice = len(tail)  # a new stream
            else:
                choice = min(range(len(tail)), key=lambda s: tail[s])
        if choice == len(tail):
            tail.append(-1)
        streams.append(choice)
        tail[choice] = j
    # events: per stream, the latest task of every stream it knows finished
    known: dict[int, dict[int, int]] = {}
    at_task: list[dict[int, int]] = []  # what a task's stream knew when it finished
    waits: list[list[int]] = []
    for j, ps in enumerate(preds):
        s = streams[j]
        clock = known.setdefault(s, {})
        mine: list[int] = []
        for p in sorted(ps, key=lambda p: -p):
            sp = streams[p]
            if sp == s or clock.get(sp, -1) >= p:
                continue
            mine.append(p)
            for k, v in at_task[p].items():
                clock[k] = max(clock.get(k, -1), v)
        clock[s] = j
        at_task.append(dict(clock))
        waits.append(sorted(mine))
    return Schedule(streams, waits)

