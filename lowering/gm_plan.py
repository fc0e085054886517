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
* a tensor with a zero halo (or with channels padded up to a whole
  16-channel fractal, which not every kernel writes) relies on GM being zero
  where it is never written, so its block is live from kernel 0: it only
  takes arena space no earlier tensor wrote (it may be reused after it
  dies). Zero-halo tensors of one geometry (`Request.geometry`) whose
  lifetimes do not overlap take turns in one such slot: the halo positions
  are the same and no kernel writes a halo. GM is zeroed per run (the simulator does; a runtime re-running the
  program in the same GM must zero the arena first).

The arena is at GM 0; inputs, outputs and constants follow it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from gedialects.graph.memory.lifetimes import Block, align
from gedialects.graph.memory.strategies import STRATEGIES, arena_size, plan
from gedialects.tile import ops as t
from gedialects.tile import structured as st

log = logging.getLogger("gedialects.lowering")


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
    referencing it."""
    out: dict[str, tuple[int, int]] = {}
    tasks = [op for op in prog.body.block.ops if isinstance(op, t.KernelOp | t.AicpuOp)]
    for k, task in enumerate(tasks):
        if isinstance(task, t.AicpuOp):
            names = [a.data for a in (*task.in_names.data, *task.out_names.data)]  # type: ignore[attr-defined]
        else:
            names = tensors_of(task)
        for name in names:
            lo, hi = out.get(name, (k, k))
            out[name] = (min(lo, k), max(hi, k))
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
