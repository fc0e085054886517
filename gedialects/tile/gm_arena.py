"""GM arena of a lowered program, planned by graph-plan-memory's strategies.

Why not `tensor_offset(value)` verbatim: graph-plan-memory sizes a tensor by
its graph type (fp32 NCHW bytes) and shares storage by graph rules (views,
concat pieces at aligned byte positions, elementwise in place). The lowering
stores 4-D maps as NC1HWC0 with C1 rounded up to whole 16-channel fractals
and a zero halo, writes every channel concat in place, and a kernel never
reads a GM tensor it writes. Offsets computed for the graph sizes would
overlap once the stored sizes are larger. So when the function carries a
plan, the lowering re-plans *its own* storages with the planner's code
(`gedialects.graph.memory.strategies.plan`, same strategy and alignment as
the graph plan recorded in `ge.memory`) on the tile level:

* one block per internal GM tensor (views and concat pieces are already one
  storage), size = its stored bytes rounded up to 64 plus 64 bytes of slack
  (as convert-tile-to-npu assumes), aligned;
* lifetime = [first, last] kernel (launch order) whose body references the
  tensor (`tile.gm`): exact, and two tensors used by one kernel never share,
  except in place: a tensor whose writer reads another of its size tile by
  tile where it writes (a conv's residual, `ge.reuses`) takes that one's
  block when that writer is the last task touching it; with several streams (tile-assign-streams) `last` runs up to the task
  before the first position from which every task is ordered after the
  tensor's last users (`streams.retire_positions`), so a tensor reusing the
  storage is written only after the last read of the one before;
* a tensor with a zero halo (or with channels padded up to a whole
  16-channel fractal, which not every kernel writes) relies on zeros where
  no kernel writes. Planned with `clear=True` (convert-graph-to-tile), it
  gets its exact lifetime like any tensor, and where its storage was another
  tensor's before, it must be cleared first: `plan_arena` names those, and
  the lowering puts a memset kernel before its first user (GE's
  AtomicAddrClean task); it is then `cleared` (`ge.cleared`). Not where the
  latest earlier tenant was a zero-halo map of its geometry at its offset
  with a zero halo: that halo is its halo, still zero (no kernel writes one). Elsewhere the
  arena is fresh: GM is zeroed per run (the simulator does; a runtime
  re-running the program in the same GM must zero the arena first). A
  zero-halo tensor planned without `clear` (a re-plan) that has no memset
  is live from task 0: it only takes arena space no earlier tensor wrote,
  or the slot of a dead zero-halo map of its geometry (`ge.halo_geometry`).

The arena is at GM 0; inputs, outputs and constants follow it. Each
internal `tile.tensor` carries what its request was (`annotate`), so
`replan` can plan the arena again once the schedule changes.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from xdsl.dialects.builtin import IntegerAttr, StringAttr, UnitAttr, i64

from gedialects.graph.memory import attributes as mem
from gedialects.graph.memory.lifetimes import Block, align
from gedialects.graph.memory.strategies import STRATEGIES, arena_size, plan
from gedialects.tile import ops as t
from gedialects.tile import streams

log = logging.getLogger("gedialects.lowering")

STORED_BYTES = "ge.stored_bytes"
ZERO_HALO = "ge.zero_halo"
CLEARED = "ge.cleared"
HALO_GEOMETRY = "ge.halo_geometry"
REUSES = "ge.reuses"


@dataclass(frozen=True)
class Request:
    name: str
    nbytes: int  # stored bytes
    zero_halo: bool = False
    """Relies on zeros where no kernel writes (a halo, padded channels)."""
    cleared: bool = False
    """A memset kernel clears it before its first user."""
    geometry: tuple[int, ...] | None = None
    """Zero-halo maps of one geometry (stored shape and halo) at one offset
    find each other's halo still zero: no kernel writes a halo."""
    reuses: str | None = None
    """A tensor of the same size its first writer reads tile by tile at the
    places it writes (a conv's residual): when that kernel is the last to
    touch it, this tensor takes its storage (GE's in-place reuse)."""


def slot(nbytes: int) -> int:
    """GM bytes a tensor occupies (64-byte rounding plus 64 bytes of slack)."""
    return -(-nbytes // 64) * 64 + 64


def kernel_lifetimes(prog: t.ProgramOp) -> dict[str, tuple[int, int]]:
    """Tensor name -> [first, last] index of the kernels (and AI-CPU tasks)
    referencing it; on several streams `last` extends to the task before
    the position from which every task is ordered after its last users."""
    out: dict[str, tuple[int, int]] = {}
    touched = [streams.access_of(task).tensors for task in streams.tasks_of(prog)]
    for k, names in enumerate(touched):
        for name in names:
            lo, hi = out.get(name, (k, k))
            out[name] = (min(lo, k), max(hi, k))
    schedule = streams.schedule_of(prog)
    if schedule.count > 1:
        retire = streams.retire_positions(schedule)
        for name, (lo, hi) in out.items():
            out[name] = (lo, max([hi] + [retire[k] - 1 for k, names in enumerate(touched) if name in names]))
    return out


def live_bytes(blocks: list[Block], tasks: int) -> list[int]:
    """Arena bytes held at each task (kernel or AI-CPU task, in order): the
    blocks whose lifetime covers it (a zero-halo block from task 0 on)."""
    live = [0] * (tasks + 1)
    for b in blocks:
        live[min(b.first, tasks)] += b.size
        live[min(b.last, tasks - 1) + 1] -= b.size
    out, held = [], 0
    for delta in live[:tasks]:
        held += delta
        out.append(held)
    return out


def _blocks(prog: t.ProgramOp, requests: list[Request], alignment: int, clear: bool) -> tuple[list[Block], list[int]]:
    """The blocks to place and each request's block. With `clear` every
    request is a block of its own lifetime (`_dirty` says which zero-halo
    ones need a memset). Without, a zero-halo tensor with no memset keeps to
    storage no other tensor wrote: live from task 0, sharing one slot with
    the zero-halo maps of its geometry whose lifetimes do not overlap."""
    life = kernel_lifetimes(prog)
    blocks: list[Block] = []
    block_of = [-1] * len(requests)
    index = {r.name: i for i, r in enumerate(requests)}
    chains: dict[tuple, list[tuple[int, int]]] = {}  # geometry -> [(block, last task)]
    for i in sorted(range(len(requests)), key=lambda i: life.get(requests[i].name, (0, 0))):
        r = requests[i]
        first, last = life.get(r.name, (0, 0))
        reused = block_of[index[r.reuses]] if r.reuses in index else -1
        if reused >= 0 and blocks[reused].last == first and requests[index[r.reuses]].nbytes == r.nbytes:
            blocks[reused] = Block(blocks[reused].size, blocks[reused].first, last)  # written over it, in place
            block_of[i] = reused
            continue
        from_zero = r.zero_halo and not r.cleared and not clear
        if from_zero and r.geometry is not None:
            slots = chains.setdefault(r.geometry, [])
            taken = next((k for k, (_, end) in enumerate(slots) if end < first), None)
            if taken is not None:  # the previous tenant is dead: take its slot
                b, _ = slots[taken]
                blocks[b] = Block(blocks[b].size, 0, last)
                slots[taken] = (b, last)
                block_of[i] = b
                continue
            slots.append((len(blocks), last))
        block_of[i] = len(blocks)
        blocks.append(Block(align(slot(r.nbytes), alignment), 0 if from_zero else first, last))
    return blocks, block_of


def plan_arena(
    prog: t.ProgramOp, requests: list[Request], alignment: int = 512, strategy: str = "auto", clear: bool = False
) -> tuple[dict[str, int], dict[str, int | str], list[str]]:
    """Offsets (from GM 0) of the requested tensors, a summary, and (with
    `clear`) the zero-halo tensors whose storage an earlier tensor used,
    which need a memset before their first user."""
    if strategy not in STRATEGIES and strategy != "auto":
        strategy = "auto"
    blocks, block_of = _blocks(prog, requests, alignment, clear)
    used, block_offsets = plan(blocks, strategy)
    offsets = [block_offsets[b] for b in block_of]
    to_clear = _dirty(requests, blocks, block_of, block_offsets) if clear else []
    summary: dict[str, int | str] = {
        "alignment": alignment,
        "arena_size": arena_size(blocks, block_offsets),
        "no_reuse": sum(align(slot(r.nbytes), alignment) for r in requests),
        "strategy": used,
        "tensors": len(requests),
    }
    summary["live_bytes"] = live_bytes_of(prog, requests, alignment, clear)
    # no placement of these blocks needs less than the bytes live at one task
    summary["lower_bound"] = max((int(b) for b in str(summary["live_bytes"]).split(";") if b), default=0)
    log.info(
        "GM arena of %s: %d bytes by %s for %d tensors (no reuse %d)",
        prog.sym_name.data,
        summary["arena_size"], used, len(requests), summary["no_reuse"],
    )
    return {r.name: o for r, o in zip(requests, offsets)}, summary, to_clear


def _dirty(requests: list[Request], blocks: list[Block], block_of: list[int], offsets: list[int]) -> list[str]:
    """The zero-halo tensors whose storage holds what an earlier tensor wrote
    there: it had an earlier tenant, and the latest one (which, covering all
    its bytes, overwrote any before it) was not a zero-halo map of its
    geometry at its offset whose halo was zero (fresh, or cleared). With
    `clear`, a zero-halo tensor has a block of its own (`offsets` per block);
    a block shared in place ends with its last tenant."""
    tenant = {block_of[i]: i for i in sorted(range(len(requests)), key=lambda i: blocks[block_of[i]].first)}
    dirty: list[str] = []
    zero: set[int] = set()  # zero-halo blocks whose halo is zero while they live
    for b in sorted(range(len(blocks)), key=lambda b: blocks[b].first):
        r = requests[tenant[b]]
        if not r.zero_halo:
            continue
        lo, hi = offsets[b], offsets[b] + blocks[b].size
        before = [j for j, other in enumerate(blocks)
                  if other.last < blocks[b].first and offsets[j] < hi and lo < offsets[j] + other.size]
        latest = max(before, key=lambda j: blocks[j].last, default=None)
        if latest is not None and not (
            latest in zero and requests[tenant[latest]].geometry is not None
            and requests[tenant[latest]].geometry == r.geometry and offsets[latest] == lo
        ):
            dirty.append(r.name)
        zero.add(b)  # fresh, inherited or cleared by its memset
    return dirty


def live_bytes_of(prog: t.ProgramOp, requests: list[Request], alignment: int, clear: bool = False) -> str:
    """The arena bytes held at each task of `prog` as it is now, `;`-separated
    (`ge.arena_live_bytes`: the profile's device-memory track)."""
    tasks = len(streams.tasks_of(prog))
    return ";".join(str(b) for b in live_bytes(_blocks(prog, requests, alignment, clear)[0], tasks))


def annotate(tensor: t.TensorOp, request: Request) -> None:
    """Record on an internal tile.tensor what the arena plan needs of it."""
    tensor.attributes[STORED_BYTES] = IntegerAttr(request.nbytes, i64)
    if request.zero_halo:
        tensor.attributes[ZERO_HALO] = UnitAttr()
    if request.cleared:
        tensor.attributes[CLEARED] = UnitAttr()
    if request.zero_halo and request.geometry is not None:
        tensor.attributes[HALO_GEOMETRY] = StringAttr(",".join(map(str, request.geometry)))
    if request.reuses is not None:
        tensor.attributes[REUSES] = StringAttr(request.reuses)


def requests_of(prog: t.ProgramOp) -> list[Request]:
    """The requests `annotate` recorded on the internal tensors of `prog`."""
    out = []
    for op in prog.body.block.ops:
        if isinstance(op, t.TensorOp) and op.kind.data == "internal" and STORED_BYTES in op.attributes:
            geometry = op.attributes.get(HALO_GEOMETRY)
            reuses = op.attributes.get(REUSES)
            out.append(Request(op.tensor_name.data, op.attributes[STORED_BYTES].value.data,  # type: ignore[attr-defined]
                               ZERO_HALO in op.attributes, CLEARED in op.attributes,
                               tuple(int(x) for x in geometry.data.split(",")) if isinstance(geometry, StringAttr) else None,
                               reuses.data if isinstance(reuses, StringAttr) else None))
    return out


def storage_handovers(prog: t.ProgramOp, accesses: list[streams.Access]) -> list[list[int]]:
    """Per task, the earlier tasks it must follow because it is the first to
    touch a tensor whose storage (its offset and slot) an earlier tensor
    used: every task that touched the earlier tensor. Ordering these keeps
    the arena as planned for program order whatever the streams (the plan
    under a device-memory limit); `accesses` are the tasks' (`tasks_of`)."""
    ranges: dict[str, tuple[int, int]] = {}
    for op in prog.body.block.ops:
        if isinstance(op, t.TensorOp) and op.kind.data == "internal" and STORED_BYTES in op.attributes:
            start = op.offset.value.data
            ranges[op.tensor_name.data] = (start, start + slot(op.attributes[STORED_BYTES].value.data))  # type: ignore[attr-defined]
    users: dict[str, list[int]] = {}
    for k, a in enumerate(accesses):
        for name in a.tensors:
            if name in ranges:
                users.setdefault(name, []).append(k)
    extra: list[set[int]] = [set() for _ in accesses]
    for later, (lo, hi) in ranges.items():
        if later not in users:
            continue
        first = users[later][0]
        for earlier, (elo, ehi) in ranges.items():
            if earlier != later and earlier in users and elo < hi and lo < ehi and users[earlier][-1] <= first:
                extra[first].update(k for k in users[earlier] if k < first)
    return [sorted(e) for e in extra]


def replan(prog: t.ProgramOp, summary: dict) -> dict:
    """Plan the arena of `prog` again for the schedule it now has (its tasks'
    streams and events): new offsets for the internal tensors, the inputs,
    outputs and constants moved up if the arena grew. `summary` is the
    program's `ge.memory`; returns the arena's new figures (with `live_bytes`)."""
    requests = requests_of(prog)
    if not requests:
        return summary
    old = int(summary.get("arena_size", 0))
    alignment = int(summary.get("alignment", 512))
    # exact lifetimes for every tensor if the memsets there are clear whatever it needs cleared
    offsets, new, dirty = plan_arena(prog, requests, alignment, clear=True)
    if not set(dirty) <= {r.name for r in requests if r.cleared}:
        offsets, new, _ = plan_arena(prog, requests, alignment)
    alignment = int(new["alignment"])
    shift = max(0, -(-(int(new["arena_size"]) - old) // alignment) * alignment)
    for op in prog.body.block.ops:
        if not isinstance(op, t.TensorOp):
            continue
        name = op.tensor_name.data
        offset = offsets[name] if name in offsets else op.offset.value.data + shift
        op.properties["offset"] = IntegerAttr(offset, i64)
    return new


def replan_recorded(prog: t.ProgramOp) -> dict:
    """`replan` with the program's recorded plan (`ge.memory`), recording the
    new one and its live bytes (`ge.arena_live_bytes`) on the program: what a
    tile pass that changes the tasks or their tensors does after."""
    before = mem.memory_summary(prog)  # type: ignore[arg-type]
    summary = replan(prog, before)
    live = summary.pop("live_bytes", None)
    if live is not None:
        prog.attributes["ge.arena_live_bytes"] = StringAttr(str(live))
    mem.record_function(prog, {**before, **summary})  # type: ignore[arg-type]
    return summary
