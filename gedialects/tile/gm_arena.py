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
  tensor (`tile.gm`): exact, and two tensors used by one kernel never share;
  with several streams (tile-assign-streams) `last` runs up to the task
  before the first position from which every task is ordered after the
  tensor's last users (`streams.retire_positions`), so a tensor reusing the
  storage is written only after the last read of the one before;
* a tensor with a zero halo (or with channels padded up to a whole
  16-channel fractal, which not every kernel writes) relies on GM being zero
  where it is never written, so its block is live from kernel 0: it only
  takes arena space no earlier tensor wrote (it may be reused after it
  dies). Zero-halo tensors of one geometry (`Request.geometry`) whose
  lifetimes do not overlap take turns in one such slot: the halo positions
  are the same and no kernel writes a halo. GM is zeroed per run (the simulator does; a runtime re-running the
  program in the same GM must zero the arena first).

The arena is at GM 0; inputs, outputs and constants follow it. Each
internal `tile.tensor` carries what its request was (`annotate`), so
`replan` can plan the arena again once the schedule changes.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from xdsl.dialects.builtin import IntegerAttr, StringAttr, UnitAttr, i64

from gedialects.graph.memory.lifetimes import Block, align
from gedialects.graph.memory.strategies import STRATEGIES, arena_size, plan
from gedialects.tile import ops as t
from gedialects.tile import streams
from gedialects.tile import structured as st

log = logging.getLogger("gedialects.lowering")

STORED_BYTES = "ge.stored_bytes"
ZERO_HALO = "ge.zero_halo"
HALO_GEOMETRY = "ge.halo_geometry"


@dataclass(frozen=True)
class Request:
    name: str
    nbytes: int  # stored bytes
    zero_halo: bool = False
    geometry: tuple | None = None
    """Zero-halo tensors of one geometry (same stored shape and halo) never
    write each other's halo, so they may take turns in one slot."""


def slot(nbytes: int) -> int:
    """GM bytes a tensor occupies (64-byte rounding plus 64 bytes of slack)."""
    return -(-nbytes // 64) * 64 + 64


def tensors_of(kernel: t.KernelOp) -> list[str]:
    """The GM tensors a kernel references: through tile.gm (loop-level) or
    tile.load / tile.store (structured, before tile-expand-structured)."""
    return [op.tensor.data for op in kernel.walk() if isinstance(op, t.GmOp | st.LoadOp | st.GatherOp | st.StoreOp)]


def kernel_lifetimes(prog: t.ProgramOp) -> dict[str, tuple[int, int]]:
    """Tensor name -> [first, last] index of the kernels (and AI-CPU tasks)
    referencing it; on several streams `last` extends to the task before
    the position from which every task is ordered after its last users."""
    out: dict[str, tuple[int, int]] = {}
    tasks = streams.tasks_of(prog)
    for k, task in enumerate(tasks):
        if isinstance(task, t.AicpuOp):
            names = [a.data for a in (*task.in_names.data, *task.out_names.data)]  # type: ignore[attr-defined]
        else:
            names = tensors_of(task)
        for name in names:
            lo, hi = out.get(name, (k, k))
            out[name] = (min(lo, k), max(hi, k))
    schedule = streams.schedule_of(prog)
    if schedule.count > 1:
        retire = streams.retire_positions(schedule)
        users: dict[str, list[int]] = {}
        for k, task in enumerate(tasks):
            for name in streams.access_of(task).tensors:
                users.setdefault(name, []).append(k)
        for name, (lo, hi) in out.items():
            out[name] = (lo, max([hi] + [retire[k] - 1 for k in users.get(name, ())]))
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


def plan_arena(
    prog: t.ProgramOp, requests: list[Request], alignment: int = 512, strategy: str = "auto"
) -> tuple[dict[str, int], dict[str, int | str]]:
    """Offsets (from GM 0) of the requested tensors and a summary."""
    if strategy not in STRATEGIES and strategy != "auto":
        strategy = "auto"
    life = kernel_lifetimes(prog)
    blocks: list[Block] = []
    chains: dict[tuple, list[tuple[int, int]]] = {}  # geometry -> [(block, last kernel)]
    order = sorted(range(len(requests)), key=lambda i: life.get(requests[i].name, (0, 0)))
    block_of = [-1] * len(requests)
    for i in order:
        r = requests[i]
        first, last = life.get(r.name, (0, 0))
        if r.zero_halo and r.geometry is not None:
            slots = chains.setdefault(r.geometry, [])
            for j, (b, end) in enumerate(slots):
                if end < first:  # the previous tenant is dead: take its slot
                    blocks[b] = Block(blocks[b].size, 0, last)
                    slots[j] = (b, last)
                    block_of[i] = b
                    break
            if block_of[i] >= 0:
                continue
            slots.append((len(blocks), last))
        block_of[i] = len(blocks)
        blocks.append(Block(align(slot(r.nbytes), alignment), 0 if r.zero_halo else first, last))
    used, block_offsets = plan(blocks, strategy)
    offsets = [block_offsets[block_of[i]] for i in range(len(requests))]
    summary: dict[str, int | str] = {
        "alignment": alignment,
        "arena_size": arena_size(blocks, block_offsets),
        "no_reuse": sum(align(slot(r.nbytes), alignment) for r in requests),
        "strategy": used,
        "tensors": len(requests),
    }
    tasks = sum(1 for op in prog.body.block.ops if isinstance(op, t.KernelOp | t.AicpuOp))
    summary["live_bytes"] = ";".join(str(b) for b in live_bytes(blocks, tasks))
    log.info(
        "GM arena of %s: %d bytes by %s for %d tensors (no reuse %d)",
        prog.sym_name.data,
        summary["arena_size"], used, len(requests), summary["no_reuse"],
    )
    return {r.name: o for r, o in zip(requests, offsets)}, summary


def annotate(tensor: t.TensorOp, request: Request) -> None:
    """Record on an internal tile.tensor what the arena plan needs of it."""
    tensor.attributes[STORED_BYTES] = IntegerAttr(request.nbytes, i64)
    if request.zero_halo:
        tensor.attributes[ZERO_HALO] = UnitAttr()
        if request.geometry is not None:  # only a zero-halo tensor takes turns in a slot by it
            tensor.attributes[HALO_GEOMETRY] = StringAttr(",".join(map(str, _flatten(request.geometry))))


def _flatten(items) -> list:
    out: list = []
    for x in items:
        out.extend(_flatten(x) if isinstance(x, tuple | list) else [x])
    return out


def requests_of(prog: t.ProgramOp) -> list[Request]:
    """The requests `annotate` recorded on the internal tensors of `prog`."""
    out = []
    for op in prog.body.block.ops:
        if isinstance(op, t.TensorOp) and op.kind.data == "internal" and STORED_BYTES in op.attributes:
            geometry = op.attributes.get(HALO_GEOMETRY)
            out.append(Request(op.tensor_name.data, op.attributes[STORED_BYTES].value.data,  # type: ignore[attr-defined]
                               ZERO_HALO in op.attributes,
                               tuple(geometry.data.split(",")) if isinstance(geometry, StringAttr) else None))
    return out


def replan(prog: t.ProgramOp, summary: dict) -> dict:
    """Plan the arena of `prog` again for the schedule it now has (its tasks'
    streams and events): new offsets for the internal tensors, the inputs,
    outputs and constants moved up if the arena grew. `summary` is the
    program's `ge.memory`; returns the new one (with `live_bytes`)."""
    requests = requests_of(prog)
    if not requests:
        return summary
    old = int(summary.get("arena_size", 0))
    offsets, new = plan_arena(prog, requests, int(summary.get("alignment", 512)))
    alignment = int(new["alignment"])
    shift = max(0, -(-(int(new["arena_size"]) - old) // alignment) * alignment)
    for op in prog.body.block.ops:
        if not isinstance(op, t.TensorOp):
            continue
        name = op.tensor_name.data
        offset = offsets[name] if name in offsets else op.offset.value.data + shift
        op.properties["offset"] = IntegerAttr(offset, i64)
    for key in ("graph_arena_size",):
        if key in summary:
            new[key] = summary[key]
    return new
