"""tile-fit-device-memory: keep the device arena within a byte limit by
offloading activations to host memory and recomputing cheap ones (GE's
limit on feature-map memory), decided at compile time on the device's own
sizes (gedialects/tile/memory_limit.py says how).

It runs on a tile.program fresh from convert-graph-to-tile, whose GM arena
is planned (`ge.memory`, each internal tile.tensor's request): before
tile-select-tiling, so that the memsets it re-plans are tiled like any
kernel, and before tile-assign-streams, which then keeps the arena as
fitted (a task taking over storage waits for its previous tenant's users). Offload
copies are `tile.memcpy` tasks to `host` tensors (npu.memcpy: the host link
of the target config prices them).

`ge.memory` then also records `device_memory_limit`, `offloaded`,
`recomputed`, `host_bytes` and `copy_cycles` (the estimated cycles of the
copies); a program already within the limit is left as it is. A limit no
rewrite can meet is one error naming the peak task and the tensors live
there.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr, i64
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from gedialects.graph.memory import attributes as mem
from gedialects.instrumentation import statistic
from gedialects.tile import gm_arena, memory_limit, streams
from gedialects.tile import ops as t
from gedialects.tile import structured as st
from target.config import TargetConfig, load_target

log = logging.getLogger("gedialects.lowering")

LIMIT_KEY = "device_memory_limit"


def fit_program(prog: t.ProgramOp, limit: int, config: TargetConfig) -> None:
    where = f"tile-fit-device-memory: @{prog.sym_name.data}"
    try:
        summary = mem.memory_summary(prog)  # type: ignore[arg-type]
    except mem.NoPlanError:
        raise PassFailedException(f"{where}: no planned GM arena (run graph-plan-memory before convert-graph-to-tile)")
    _check_order(prog, where)
    old_arena = int(summary["arena_size"])
    summary[LIMIT_KEY] = limit
    if old_arena <= limit:
        mem.record_function(prog, summary)  # type: ignore[arg-type]
        return
    link = config.host_link
    if link is None:
        raise PassFailedException(f"{where}: the arena needs {old_arena} bytes, over the limit of {limit}, and target "
                                  f"'{config.name}' has no host_link to offload to")
    alignment = int(summary.get("alignment", 512))
    _drop_memsets(prog)
    costs = memory_limit.Costs(config.memcpy_cycles, config.hbm_bytes_per_cycle, config.latency_cycles["dma_gm"])
    try:
        result = memory_limit.fit(prog, limit, alignment, costs)
    except memory_limit.DeviceMemoryError as e:
        raise PassFailedException(f"{where}: {e}") from None
    memory_limit.insert_memsets(prog, result.dirty)
    host_bytes = memory_limit.host_offsets(prog)
    new_arena = int(result.summary["arena_size"])
    for op in prog.body.block.ops:
        if isinstance(op, t.TensorOp) and op.kind.data != "host":
            name = op.tensor_name.data
            offset = result.offsets[name] if name in result.offsets else op.offset.value.data - old_arena + new_arena
            op.properties["offset"] = IntegerAttr(offset, i64)
    prog.attributes["ge.arena_live_bytes"] = StringAttr(
        gm_arena.live_bytes_of(prog, gm_arena.requests_of(prog), alignment, clear=True))
    keep = {k: summary[k] for k in ("graph_arena_size", "sliced") if k in summary}
    mem.record_function(prog, {**result.summary, **keep, LIMIT_KEY: limit, "offloaded": result.offloaded,  # type: ignore[arg-type]
                               "recomputed": result.recomputed, "host_bytes": host_bytes,
                               "copy_cycles": result.copy_cycles})
    statistic("gm-arena-bytes", new_arena, "GM arena of the stored intermediates")
    statistic("offloaded", result.offloaded, "tensors copied to host memory and back")
    statistic("recomputed", result.recomputed, "tensors recomputed")
    log.info("@%s: GM arena %d -> %d bytes (limit %d): %d offloaded (%d host bytes, ~%d copy cycles), %d recomputed",
             prog.sym_name.data, old_arena, new_arena, limit, result.offloaded, host_bytes, result.copy_cycles,
             result.recomputed)


def _check_order(prog: t.ProgramOp, where: str) -> None:
    for op in prog.body.block.ops:
        if isinstance(op, t.StreamRecordOp | t.StreamWaitOp) or (
                isinstance(op, streams.TASK_TYPES) and op.properties.get("stream") is not None):
            raise PassFailedException(f"{where}: the program has streams already (run it before tile-assign-streams)")
        if isinstance(op, t.KernelOp) and isinstance(op.attributes.get(st.TILING_ATTR), st.TilingAttr):
            raise PassFailedException(f"{where}: tile.kernel {op.sym_name.data} is tiled already "
                                      f"(run it before tile-select-tiling: its memsets must be tiled)")


def _drop_memsets(prog: t.ProgramOp) -> None:
    """Remove the memsets of the current plan: the fitted plan decides its own."""
    for op in list(prog.body.block.ops):
        if isinstance(op, t.KernelOp) and op.attributes.get("kind") == StringAttr(streams.MEMSET):
            op.detach()
            op.erase()
        elif isinstance(op, t.TensorOp):
            op.attributes.pop(gm_arena.CLEARED, None)


@dataclass(frozen=True)
class TileFitDeviceMemoryPass(ModulePass):
    """Offload and recompute until the GM arena fits `device-memory-limit` bytes."""

    name = "tile-fit-device-memory"
    target: str = "davinci-910"
    device_memory_limit: int = 0
    """Bytes of the GM arena (intermediates); 0: no limit."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.device_memory_limit < 0:
            raise PassFailedException(f"tile-fit-device-memory: device-memory-limit must be >= 0 bytes (0 = none), "
                                      f"got {self.device_memory_limit}")
        if self.device_memory_limit == 0:
            return
        config = load_target(self.target)
        for prog in op.body.block.ops:
            if isinstance(prog, t.ProgramOp):
                fit_program(prog, self.device_memory_limit, config)
