"""graph-partition: place every graph op on the AI core or the AI CPU.

GE never refuses a model because one operator has no AI-core kernel: it
runs that operator on the AI CPU and says so. Here, after fusion and before
layouts, each op is checked against the legality table (lowering/legality/,
the same table convert-graph-to-tile lowers by); an op no pattern lowers gets
`ge.engine = "AI_CPU"` and `ge.reason`, and a remark
`missed graph-partition at loc(...): AI_CPU fallback (reason)`. assign-layouts
then puts explicit transdata around it (the AI CPU reads and writes the
logical order), and convert-graph-to-tile makes it an AI-CPU task.

With `aicpu-fallback=false` (ge-compile/ge-run `--no-aicpu-fallback`) any
fallback is an error that lists every op that would fall back.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from gedialects.graph import ops as g
from gedialects.graph.memory_ops import OffloadOp, ReloadOp
from gedialects.instrumentation import statistic
from gedialects.location import describe_op
from gedialects.remarks import MISSED, Remark
from lowering.graph_to_tile import DEFAULT_PRECISION, check_precision_mode
from lowering.legality import AI_CPU, ENGINE_ATTR, KERNEL_ATTR, REASON_ATTR, STRUCTURED_FAMILIES, Context as LegalityContext, choose_kernel
from lowering.plugins import load_kernel_plugins

log = logging.getLogger("gedialects.partition")

PASS_NAME = "graph-partition"


def placed_ops(fn: func.FuncOp) -> list[Operation]:
    """The ops the partition places: everything but constants and the return."""
    return [op for op in fn.body.block.ops if not isinstance(op, g.ConstantOp | g.FillOp | func.ReturnOp)]


def partition(fn: func.FuncOp, precision: str) -> list[tuple[Operation, str]]:
    """Annotate fn's AI-CPU ops; (op, reason) for each, in order. Ops placed
    by an earlier run keep their placement."""
    load_kernel_plugins()
    ctx = LegalityContext(fn, precision)
    fallbacks = []
    for op in placed_ops(fn):
        if isinstance(op, OffloadOp | ReloadOp):  # the graph plan's copies: its sizes are not the device's
            from lowering.pipeline import emit_error  # reports the error at the op's line

            emit_error(op,
                f"{describe_op(op)}: graph-level offloads are not compiled (graph-plan-memory plans fp32 NCHW "
                f"sizes, not what the device stores); limit the device's memory with ge-compile "
                f"--device-memory-limit (tile-fit-device-memory) instead of graph-plan-memory{{device-memory-limit}}")
        if op.attributes.get(ENGINE_ATTR) is not None:
            if op.attributes[ENGINE_ATTR].data == AI_CPU:  # type: ignore[attr-defined]
                fallbacks.append((op, op.attributes[REASON_ATTR].data))  # type: ignore[attr-defined]
            continue
        family, reason = choose_kernel(op, ctx)
        if family in STRUCTURED_FAMILIES:
            op.attributes[KERNEL_ATTR] = StringAttr(family)
        if reason is not None:
            op.attributes[ENGINE_ATTR] = StringAttr(AI_CPU)
            op.attributes[REASON_ATTR] = StringAttr(reason)
            fallbacks.append((op, reason))
            Remark(MISSED, PASS_NAME, op, "AI_CPU fallback", reason).emit(log)
    return fallbacks


@dataclass(frozen=True)
class GraphPartitionPass(ModulePass):
    """Place each graph op on the AI core (a lowering pattern is legal for its
    op, shapes and dtypes) or on the AI CPU, with a remark per fallback."""

    name = PASS_NAME
    precision_mode: str = DEFAULT_PRECISION
    aicpu_fallback: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        check_precision_mode(self.precision_mode)
        for fn in op.body.block.ops:
            if not isinstance(fn, func.FuncOp) or fn.is_declaration:
                continue
            fallbacks = partition(fn, self.precision_mode)
            ops = sum(1 for o in fn.body.block.ops if not isinstance(o, (g.ConstantOp, g.FillOp, func.ReturnOp)))
            statistic("ops-on-ai-core", ops - len(fallbacks), "ops placed on the AI core (views included)")
            statistic("ops-on-ai-cpu", len(fallbacks), "ops without an AI-core kernel (AI-CPU tasks)")
            if fallbacks and not self.aicpu_fallback:
                listing = "; ".join(f"{describe_op(o)}: {why}" for o, why in fallbacks)
                raise PassFailedException(
                    f"{len(fallbacks)} op(s) have no AI-core kernel and AI-CPU fallback is off "
                    f"(--no-aicpu-fallback): {listing}"
                )
