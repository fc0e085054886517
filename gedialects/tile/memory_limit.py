"""Fitting a tile.program's GM arena under a device-memory limit: host
offload and recompute (GE's feature-map memory limit), on the device's own
sizes.

graph-plan-memory{device-memory-limit} fits the graph-level plan, which
counts fp32 NCHW bytes; the device arena holds other bytes (NC1HWC0 padded
to whole fractals, halos, fp16 in force_fp16; gedialects/tile/gm_arena.py),
so a limit on the device is met here, on the stored sizes and the kernels'
lifetimes, with the graph level's method (`gedialects.graph.memory.limit`):
while the planned arena exceeds the limit, take the task where the most
arena bytes are live (the peak) and free one tensor alive across it that the
peak does not touch:

- offload: a `tile.memcpy` to a host tensor right after its last access
  before the peak, one back into a new GM tensor right before its first
  access after it; later tasks access the copy. The copy holds every stored
  byte (halo included), so it needs no memset. A tensor that already is such
  a copy is just copied back again from the same host tensor.
  Cost: the copies' cycles on the host link (`TargetConfig.memcpy_cycles`).
- recompute: clone its writer right before the first access after the peak,
  writing a new tensor. Only a vector kernel (structured loads, maps,
  reductions, stores: memory bound) that writes nothing else, whose GM
  operands are program inputs and constants or tensors live at that point
  anyway, so recomputing extends no other lifetime. Cost: its bytes over
  HBM plus one GM latency. When nothing reads the tensor before the peak,
  the writer is just moved down to the first reader (cost 0; counted as
  recomputed).

Candidates are ranked as the graph level ranks them (`preference_order`);
an action is kept only if it makes progress (fewer bytes at the peak, or,
once the lower bound fits, a smaller plan) and is undone otherwise. When no
candidate is left, `DeviceMemoryError` names the peak task and the tensors
live there; a limit below the arena bytes one task itself reads and writes
fails at once, naming that task and the smallest limit that could work. Memsets are planned afresh at the end: the plan decides which
zero-halo tensors land on storage another tensor wrote.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from xdsl.dialects.builtin import IntegerAttr, StringAttr, UnitAttr, i64
from xdsl.ir import Operation

from gedialects.graph.memory.lifetimes import align
from gedialects.graph.memory.limit import preference_order
from gedialects.graph.tensors import tensor_nbytes
from gedialects.tile import gm_arena, memset, streams
from gedialects.tile import ops as t
from gedialects.tile import structured as st

MAX_TRIES = 6
"""Candidates tried at one peak before the limit is declared impossible."""

_VECTOR_KERNEL_OPS = (st.LoadOp, st.MapOp, st.YieldOp, st.ReductionOp, st.StoreOp)


class DeviceMemoryError(Exception):
    """The limit cannot be met (the message names the peak and what is live there)."""


@dataclass(frozen=True)
class Costs:
    """Cycles of the actions, from the target config."""

    copy: Callable[[int], int]
    """A host copy of that many bytes (one direction)."""
    hbm_bytes_per_cycle: float
    gm_latency: int


@dataclass(frozen=True)
class Candidate:
    tensor: str
    action: str  # "offload" | "reload" | "recompute" | "move"
    freed: int  # arena bytes its slot takes
    cost: int  # cycles
    position: int  # its first task (ties)
    after: Operation | None  # offload: the task the copy to host follows
    before: Operation  # the first task after the peak that accesses the tensor
    source: Operation | None  # reload: the copy back it repeats; recompute: the writer


@dataclass
class Result:
    offsets: dict[str, int]
    summary: dict
    dirty: list[str]
    """Zero-halo tensors whose storage an earlier tensor wrote: they need a memset."""
    offloaded: int
    recomputed: int
    copy_cycles: int
    """Estimated cycles of the host copies inserted."""


@dataclass(frozen=True)
class _State:
    requests: list[gm_arena.Request]
    offsets: dict[str, int]
    summary: dict
    dirty: list[str]
    live: list[int]
    key: tuple[int, ...]

    @property
    def planned(self) -> int:
        return int(self.summary["arena_size"])


def _state(prog: t.ProgramOp, requests: list[gm_arena.Request], alignment: int, limit: int) -> _State:
    offsets, summary, dirty = gm_arena.plan_arena(prog, requests, alignment, clear=True)
    live = [int(b) for b in str(summary.pop("live_bytes")).split(";") if b]
    bound = max(live, default=0)
    at_bound = live.count(bound)
    key = (1, bound, at_bound) if bound > limit else (0, int(summary["arena_size"]), bound, at_bound)
    return _State(requests, offsets, summary, dirty, live, key)


def fit(prog: t.ProgramOp, limit: int, alignment: int, costs: Costs) -> Result:
    """Rewrite `prog` (already without memsets) until its arena plan fits `limit` bytes."""
    tensors = {op.tensor_name.data: op for op in prog.body.block.ops if isinstance(op, t.TensorOp)}
    requests = gm_arena.requests_of(prog)
    _check_floor(prog, requests, alignment, limit)
    state = _state(prog, requests, alignment, limit)
    names = _Names(prog)
    offloaded = recomputed = copy_cycles = 0
    while state.planned > limit:
        peak = state.live.index(max(state.live))
        need = (max(state.live) if state.key[0] else state.planned) - limit
        tasks = streams.tasks_of(prog)
        for choice in preference_order(_candidates(tasks, tensors, peak, costs, {r.name: r for r in state.requests}),
                                       need, lambda c: c.freed, lambda c: c.cost, lambda c: c.position)[:MAX_TRIES]:
            new_requests, undo = _apply(prog, tensors, state.requests, choice, names)
            new = _state(prog, new_requests, alignment, limit)
            if new.key < state.key:
                break
            undo()
        else:
            raise DeviceMemoryError(_impossible(prog, tasks, peak, state, limit))
        copied = choice.action in ("offload", "reload")
        offloaded += copied
        recomputed += not copied
        copy_cycles += choice.cost if copied else 0
        state = new
    return Result(state.offsets, state.summary, state.dirty, offloaded, recomputed, copy_cycles)


def _check_floor(prog: t.ProgramOp, requests: list[gm_arena.Request], alignment: int, limit: int) -> None:
    """No rewrite takes off the device what a task itself reads or writes:
    a limit below the most arena bytes one task touches fails at once."""
    slots = {r.name: align(gm_arena.slot(r.nbytes), alignment) for r in requests}
    over = {r.name: r.reuses for r in requests if r.reuses is not None}  # written in place: one slot
    tasks = streams.tasks_of(prog)
    touched = []
    for task in tasks:
        names = streams.access_of(task).tensors
        touched.append(sorted((n for n in names if n in slots and over.get(n) not in names), key=lambda n: (-slots[n], n)))
    k = max(range(len(tasks)), key=lambda k: sum(slots[n] for n in touched[k]), default=None)
    if k is None:
        return
    floor = sum(slots[n] for n in touched[k])
    if floor > limit:
        raise DeviceMemoryError(
            f"device-memory-limit={limit} cannot be met: task {k} ({_describe(tasks[k])}) itself reads and "
            f"writes {floor} bytes of the arena, which no offload or recompute takes off the device: "
            + ", ".join(f"{n} ({slots[n]} B)" for n in touched[k]) + f"; the limit must be at least {floor}")


def _describe(task: Operation) -> str:
    what = f"{task.name} @{task.properties['sym_name'].data}"  # type: ignore[attr-defined]
    source = task.attributes.get("source")
    return what + (f" ({source.data})" if isinstance(source, StringAttr) else "")


class _Names:
    """Fresh names for tensors and tasks (one namespace: the npu program's symbols and the tensors)."""

    def __init__(self, prog: t.ProgramOp):
        self.taken = {str(op.properties[k].data) for op in prog.body.block.ops  # type: ignore[attr-defined]
                      for k in ("name", "sym_name") if k in op.properties}

    def fresh(self, base: str) -> str:
        name, k = base, 1
        while name in self.taken:
            name, k = f"{base}_{k}", k + 1
        self.taken.add(name)
        return name


def _candidates(tasks: list[Operation], tensors: dict[str, t.TensorOp], peak: int,
                costs: Costs, requests: dict[str, gm_arena.Request]) -> list[Candidate]:
    accesses = [streams.access_of(task) for task in tasks]
    positions: dict[str, list[int]] = {}
    for k, a in enumerate(accesses):
        for name in a.tensors:
            positions.setdefault(name, []).append(k)
    out: list[Candidate] = []
    for name, request in requests.items():
        where = positions.get(name, [])
        if not where or not where[0] < peak < where[-1] or peak in where:
            continue
        a = max(k for k in where if k < peak)
        b = min(k for k in where if k > peak)
        writers = [k for k in where if name in accesses[k].writes]
        if any(k > peak for k in writers):
            continue  # written again later: the copy would be stale
        freed = gm_arena.slot(request.nbytes)
        copy = costs.copy(request.nbytes)
        only = tasks[writers[0]] if len(writers) == 1 else None
        if isinstance(only, t.MemcpyOp):  # a copy from host already: copy it back again
            out.append(Candidate(name, "reload", freed, copy, where[0], None, tasks[b], only))
        else:
            out.append(Candidate(name, "offload", freed, 2 * copy, where[0], tasks[a], tasks[b], None))
        if only is not None and _recomputable(only, accesses[writers[0]], name, positions, b, requests):
            if where[0] == a:  # nothing reads it before the peak: move the writer down, for free
                out.append(Candidate(name, "move", freed, 0, where[0], None, tasks[b], only))
                continue
            nbytes = sum(tensor_nbytes(tensors[n].type) for n in accesses[writers[0]].tensors)
            cost = costs.gm_latency + round(nbytes / costs.hbm_bytes_per_cycle)
            out.append(Candidate(name, "recompute", freed, cost, where[0], None, tasks[b], only))
    return out


def _recomputable(writer: Operation, access: streams.Access, name: str, positions: dict[str, list[int]], at: int,
                  requests: dict[str, gm_arena.Request]) -> bool:
    """A vector kernel writing only `name`, whose internal operands are live at task `at` anyway."""
    if not isinstance(writer, t.KernelOp) or access.clears or access.writes != {name}:
        return False
    if not all(isinstance(op, _VECTOR_KERNEL_OPS) or op.parent_op() is not writer for op in writer.walk()
               if op is not writer):
        return False
    return all(n not in requests or positions[n][-1] >= at for n in access.reads)


def _apply(prog: t.ProgramOp, tensors: dict[str, t.TensorOp], requests: list[gm_arena.Request], c: Candidate,
           names: _Names) -> tuple[list[gm_arena.Request], Callable[[], None]]:
    """Rewrite `prog` for `c`: the new requests, and how to undo it."""
    block = prog.body.block
    old = tensors[c.tensor]
    request = next(r for r in requests if r.name == c.tensor)
    inserted: list[Operation] = []

    def declare(kind: str, base: str) -> t.TensorOp:
        tensor = t.TensorOp(properties={
            "name": StringAttr(names.fresh(base)), "kind": StringAttr(kind), "offset": IntegerAttr(0, i64),
            "type": old.type, "layout": old.layout})
        block.insert_op_after(tensor, old)
        inserted.append(tensor)
        tensors[tensor.tensor_name.data] = tensor
        return tensor

    def task(op: Operation, where: Operation, after: bool = False) -> None:
        block.insert_op_after(op, where) if after else block.insert_op_before(op, where)
        inserted.append(op)

    if c.action == "move":
        assert c.source is not None
        writer, anchor = c.source, c.source.next_op
        assert anchor is not None
        writer.detach()
        block.insert_op_before(writer, c.before)

        def undo_move() -> None:
            writer.detach()
            block.insert_op_before(writer, anchor)

        return requests, undo_move
    if c.action == "recompute":
        assert c.source is not None
        copy = declare("internal", f"{c.tensor}_recomputed")
        new_request = dataclasses.replace(request, name=copy.tensor_name.data, cleared=False)
        clone = c.source.clone()
        clone.properties["sym_name"] = StringAttr(names.fresh(f"{c.source.properties['sym_name'].data}_recompute"))  # type: ignore[attr-defined]
        clone.attributes["source"] = StringAttr(f"recompute of {c.tensor}")
        streams.rename_tensor(clone, c.tensor, copy.tensor_name.data)
        task(clone, c.before)
    else:
        if c.action == "reload":
            assert isinstance(c.source, t.MemcpyOp)
            host = c.source.src.data
        else:
            assert c.after is not None
            host = declare("host", f"{c.tensor}_host").tensor_name.data
            out = t.MemcpyOp(names.fresh(f"{c.tensor}_to_host"), c.tensor, host)
            out.attributes["source"] = StringAttr(f"offload of {c.tensor}")
            task(out, c.after, after=True)
        copy = declare("internal", f"{c.tensor}_reloaded")
        new_request = gm_arena.Request(copy.tensor_name.data, request.nbytes)  # every byte copied: no zero halo
        back = t.MemcpyOp(names.fresh(f"{c.tensor}_from_host"), host, copy.tensor_name.data)
        back.attributes["source"] = StringAttr(f"reload of {c.tensor}")
        task(back, c.before)
    renamed = [op for op in _from(c.before) if isinstance(op, streams.TASK_TYPES)]
    for op in renamed:
        streams.rename_tensor(op, c.tensor, copy.tensor_name.data)
    gm_arena.annotate(copy, new_request)

    def undo() -> None:
        for op in renamed:
            streams.rename_tensor(op, copy.tensor_name.data, c.tensor)
        for op in reversed(inserted):
            if isinstance(op, t.TensorOp):
                del tensors[op.tensor_name.data]
            op.detach()
            op.erase()

    return requests + [new_request], undo


def _from(op: Operation):
    """`op` and the ops after it in its block."""
    at: Operation | None = op
    while at is not None:
        yield at
        at = at.next_op


def _impossible(prog: t.ProgramOp, tasks: list[Operation], peak: int, state: _State, limit: int) -> str:
    life = gm_arena.kernel_lifetimes(prog)
    live = sorted((r for r in state.requests if life.get(r.name, (0, -1))[0] <= peak <= life.get(r.name, (0, -1))[1]),
                  key=lambda r: -r.nbytes)
    what = _describe(tasks[peak])
    why = ("offloading or recomputing a tensor does not lower it" if state.live[peak] > limit
           else "no offload or recompute gave a smaller plan")
    return (f"device-memory-limit={limit} cannot be met: the arena plan needs {state.planned} bytes and "
            f"{state.live[peak]} bytes are live at task {peak} ({what}); {why}; live there: "
            + ", ".join(f"{r.name} ({r.nbytes} B)" for r in live))


def host_offsets(prog: t.ProgramOp) -> int:
    """Give every host tensor of `prog` its own slot in host memory (no
    reuse: host memory is not the scarce one); the bytes used."""
    offset = 0
    for op in prog.body.block.ops:
        if isinstance(op, t.TensorOp) and op.kind.data == "host":
            op.properties["offset"] = IntegerAttr(offset, i64)
            offset += gm_arena.slot(tensor_nbytes(op.type))
    return offset


def insert_memsets(prog: t.ProgramOp, names: list[str]) -> None:
    """Memsets for the zero-halo tensors the plan put on storage another tensor wrote."""
    tensors = {op.tensor_name.data: op for op in prog.body.block.ops if isinstance(op, t.TensorOp)}
    fresh = _Names(prog)
    count = sum(1 for op in streams.tasks_of(prog) if isinstance(op, t.KernelOp))

    def kernel_name() -> str:
        nonlocal count
        count += 1
        return fresh.fresh(f"k{count - 1}_memset")

    memset.insert_memsets(prog, names, lambda name: tensors[name].type, kernel_name)
    for name in names:
        tensors[name].attributes[gm_arena.CLEARED] = UnitAttr()
