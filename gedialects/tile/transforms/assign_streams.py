"""tile-assign-streams: put the kernels of independent branches on parallel
streams, with events at the joins (GE's stream allocation and event
insertion).

The tasks of a tile.program (kernels and AI-CPU tasks) keep their program
order, which is the order the host submits them; what changes is the
stream each is launched on (`stream = k` on the task) and the
`tile.stream_record` / `tile.stream_wait` pairs that order a task after the
tasks of other streams it depends on (gedialects/tile/streams.py: the
dependences are GM tensors read and written, the assignment keeps chains on
one stream). At most `max-streams` streams (0: the target config's
`streams`); 1 leaves the program on stream 0 as it was. Whether overlapping
pays is the simulator's to say (the kernels share the cores and HBM):
README, "Parallel streams".

Concurrent tasks cannot share GM storage as sequential ones could, so when
the program carries a planned GM arena, the arena is planned again with
lifetimes that last until every later task is ordered after a tensor's last
users (gedialects/tile/gm_arena.py): the memory cost of the parallelism.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from gedialects.graph.memory import attributes as mem
from gedialects.instrumentation import statistic
from gedialects.tile import gm_arena, streams
from gedialects.tile import ops as t
from target.config import MAX_STREAMS, load_target

log = logging.getLogger("gedialects.lowering")


def assign_program(prog: t.ProgramOp, max_streams: int) -> streams.Schedule:
    """Streams and events for `prog` (replacing any it had); the schedule.
    Under a device-memory limit (tile-fit-device-memory recorded one) the
    arena stays as planned: a task first touching storage another tensor
    used also waits for that tensor's users (`gm_arena.storage_handovers`)."""
    try:
        summary = mem.memory_summary(prog)  # type: ignore[arg-type]
    except mem.NoPlanError:  # no arena plan (compile_module(plan_memory=False)): nothing to plan again
        summary = None
    planned = summary is not None and bool(gm_arena.requests_of(prog))
    limited = planned and "device_memory_limit" in summary  # type: ignore[operator]
    schedule = _assign(prog, max_streams, limited)
    if schedule.count > 1 and planned and not limited:  # a planned arena to plan again for the overlap
        summary = gm_arena.replan_recorded(prog)
        statistic("gm-arena-bytes", int(summary["arena_size"]), "GM arena of the stored intermediates")
    events = len(schedule.recorded)
    statistic("streams", schedule.count, "streams the tasks are launched on")
    statistic("stream-events", events, "events between streams")
    log.info("@%s: %d tasks on %d stream(s), %d event(s)", prog.sym_name.data, len(schedule.streams),
             max(1, schedule.count), events)
    return schedule


def _assign(prog: t.ProgramOp, max_streams: int, keep_arena: bool) -> streams.Schedule:
    block = prog.body.block
    for op in list(block.ops):
        if isinstance(op, t.StreamRecordOp | t.StreamWaitOp):
            op.detach()
            op.erase()
    tasks = streams.tasks_of(prog)
    accesses = [streams.access_of(task) for task in tasks]
    preds = streams.dependences(accesses)
    if keep_arena:
        preds = [sorted(set(p) | set(h)) for p, h in zip(preds, gm_arena.storage_handovers(prog, accesses))]
    schedule = streams.assign(preds, max_streams)
    events: dict[int, int] = {i: e for e, i in enumerate(schedule.recorded)}
    for j, task in enumerate(tasks):
        task.properties.pop("stream", None)
        if schedule.count > 1:
            task.properties["stream"] = IntegerAttr(schedule.streams[j], i64)
        for i in schedule.waits[j]:
            block.insert_op_before(t.StreamWaitOp(schedule.streams[j], events[i]), task)
        if j in events:
            block.insert_op_after(t.StreamRecordOp(schedule.streams[j], events[j]), task)
    return schedule


@dataclass(frozen=True)
class TileAssignStreamsPass(ModulePass):
    """Launch independent kernels on parallel streams, with events at the joins."""

    name = "tile-assign-streams"
    target: str = "davinci-910"
    max_streams: int = 0
    """0: the target config's `streams`."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not 0 <= self.max_streams <= MAX_STREAMS:
            raise PassFailedException(f"tile-assign-streams: max-streams must be in [0, {MAX_STREAMS}], got {self.max_streams}")
        limit = self.max_streams or load_target(self.target).streams
        for prog in op.body.block.ops:
            if isinstance(prog, t.ProgramOp):
                assign_program(prog, limit)
