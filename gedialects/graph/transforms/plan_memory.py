"""graph-plan-memory: one device arena per graph function.

On the scheduled graph (the op order of each function), every intermediate
tensor gets a lifetime and a byte offset in one arena, recorded on the IR
(`ge.offsets`, `ge.lifetime` on ops; `ge.memory` on the function; see
`gedialects.graph.memory.attributes`). Views take no memory, elementwise ops
overwrite an operand that dies at them, concat pieces are written in place.
Offsets come from a strategy (`auto` runs them all and keeps the smallest).

Under `device-memory-limit` (bytes; 0 = none) tensors alive across the peak
are recomputed or offloaded to host (explicit `graph.offload`/`graph.reload`)
until the plan fits, cheapest first; otherwise the pass fails naming the
peak step and the tensors live there. Every plan is checked by the verifier
(`gedialects.graph.memory.verify`) before it is recorded.

Remarks (`--log=info`, or `expected-remark` under `--verify-diagnostics`):
one summary per function, one per recompute/offload. The per-tensor table
is logged at debug level. Functions with dynamic shapes are skipped with a
remark.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import NoReturn

from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from gedialects.graph.memory import attributes as attrs
from gedialects.graph.memory.lifetimes import MemoryPlanError, last_uses
from gedialects.graph.memory.limit import LimitError, fit
from gedialects.graph.memory.report import summary_line, text_report
from gedialects.graph.memory.strategies import STRATEGY_NAMES, arena_size
from gedialects.graph.memory.verify import plan_problems
from gedialects.instrumentation import statistic

log = logging.getLogger("gedialects.plan_memory")


def emit_error(self: Operation, message: str) -> NoReturn:
    """Fail the pass with a diagnostic about `self`.

    ge-opt reports an error at the op found as `self` in the innermost
    traceback frame named `emit_error` (tools/verify_diagnostics.failing_op),
    so the message gets the op's source line. xDSL's own `emit_error` would
    print the whole module into the message.
    """
    raise PassFailedException(message)


def plan_function(fn: func.FuncOp, strategy: str = "auto", alignment: int = 512, limit: int = 0) -> bool:
    """Plan one function and record the plan; False if it was skipped."""
    attrs.clear(fn)
    try:
        fitted = fit(fn, alignment, strategy, limit if limit > 0 else 1 << 62, _remark)
    except MemoryPlanError as e:
        log.info("not planned: %s", e, extra={"op": fn})
        return False
    except LimitError as e:
        emit_error(e.op, f"graph-plan-memory: {e}")
    lv = fitted.liveness
    lasts = last_uses(fn, lv.steps)
    offsets = lv.tensor_offsets(fitted.offsets)
    for s, op in enumerate(lv.steps):
        attrs.record_op(
            op,
            [offsets.get(r, attrs.NOT_IN_ARENA) for r in op.results],
            [(s, lasts[r]) for r in op.results],
        )
    summary: dict[str, int | str] = {
        "alignment": alignment,
        "arena_size": arena_size(lv.blocks, fitted.offsets),
        "lower_bound": lv.lower_bound(),
        "no_reuse": lv.no_reuse(),
        "strategy": fitted.strategy,
    }
    if limit > 0:
        summary |= {
            "device_memory_limit": limit,
            "host_bytes": fitted.host_bytes,
            "recomputed": fitted.recomputed,
            "offloaded": fitted.offloaded,
        }
    attrs.record_function(fn, summary)
    statistic("arena-bytes", int(summary["arena_size"]), "bytes of the planned arena")
    statistic("lower-bound-bytes", int(summary["lower_bound"]), "the most bytes live at one step")
    statistic("no-reuse-bytes", int(summary["no_reuse"]), "bytes without reuse")
    problems = plan_problems(fn)
    if problems:
        emit_error(fn, f"graph-plan-memory made an unsafe plan (a bug): {problems[0]}")
    log.info("%s", summary_line(fn), extra={"op": fn})
    if log.isEnabledFor(logging.DEBUG):
        log.debug("%s", text_report(fn))
    return True


def _remark(op: Operation, text: str) -> None:
    log.info("%s", text, extra={"op": op})


@dataclass(frozen=True)
class GraphPlanMemoryPass(ModulePass):
    """Assign every intermediate tensor an offset in one device arena per
    function (lifetimes, in-place reuse, strategies; recompute/offload under
    a device-memory limit) and record the plan on the IR."""

    name = "graph-plan-memory"

    strategy: str = "auto"
    """auto, greedy-by-size, greedy-by-breadth, greedy-by-conflict or greedy-by-lifetime."""
    alignment: int = 512
    """Every offset and size is a multiple of this (bytes, a power of two)."""
    device_memory_limit: int = 0
    """Arena limit in bytes; 0 means none."""

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        if self.strategy not in STRATEGY_NAMES:
            raise PassFailedException(
                f"graph-plan-memory: unknown strategy '{self.strategy}' "
                f"(expected one of {', '.join(STRATEGY_NAMES)})"
            )
        if self.alignment < 1 or self.alignment & (self.alignment - 1):
            raise PassFailedException(
                f"graph-plan-memory: alignment must be a positive power of two, got {self.alignment}"
            )
        if self.device_memory_limit < 0:
            raise PassFailedException(
                f"graph-plan-memory: device-memory-limit must be >= 0 bytes (0 = none), "
                f"got {self.device_memory_limit}"
            )
        for fn in [f for f in op.walk() if isinstance(f, func.FuncOp) and not f.is_declaration]:
            plan_function(fn, self.strategy, self.alignment, self.device_memory_limit)
