"""The memory report, read back from the plan recorded on the IR.

- `memory_report(module)`: per function `no_reuse`, `lower_bound`, `planned`
  (bytes) and `planned/lower_bound`: exactly what `ge-opt --memory-report`
  writes as JSON;
- `tensor_table(fn)`: per tensor its offset, size and lifetime;
- `text_report(fn)`: both as text.
"""

from __future__ import annotations

from typing import Any

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType

from gedialects.graph.memory.attributes import (
    has_plan,
    memory_summary,
    op_lifetimes,
    op_offsets,
)
from gedialects.graph.memory.lifetimes import schedule, tensor_nbytes
from gedialects.graph.memory.verify import tensor_name
from gedialects.location import describe_op


def planned_functions(module: ModuleOp) -> list[func.FuncOp]:
    return [op for op in module.walk() if isinstance(op, func.FuncOp) and has_plan(op)]


def function_numbers(fn: func.FuncOp) -> dict[str, int | float]:
    s = memory_summary(fn)
    planned, bound = int(s["arena_size"]), int(s["lower_bound"])
    return {
        "no_reuse": int(s["no_reuse"]),
        "lower_bound": bound,
        "planned": planned,
        "planned/lower_bound": round(planned / bound, 4) if bound else 1.0,
    }


def memory_report(module: ModuleOp) -> dict[str, dict[str, int | float]]:
    """`{function name: {no_reuse, lower_bound, planned, planned/lower_bound}}`
    for every planned function of the module."""
    return {fn.sym_name.data: function_numbers(fn) for fn in planned_functions(module)}


def tensor_table(fn: func.FuncOp) -> list[dict[str, Any]]:
    """One row per tensor result of a step: name, op, offset (-1: not in the
    arena), size (bytes), lifetime [first, last]."""
    rows = []
    for s, op in enumerate(schedule(fn)):
        for r, (off, life) in enumerate(zip(op_offsets(op), op_lifetimes(op))):
            res = op.results[r]
            if not isinstance(res.type, TensorType):
                continue
            rows.append(
                {
                    "name": tensor_name(op, r, s),
                    "op": describe_op(op),
                    "offset": off,
                    "size": tensor_nbytes(res),
                    "lifetime": list(life),
                }
            )
    return rows


def summary_line(fn: func.FuncOp) -> str:
    n = function_numbers(fn)
    s = memory_summary(fn)
    text = (
        f"@{fn.sym_name.data}: arena {n['planned']} bytes by {s['strategy']}, lower bound "
        f"{n['lower_bound']}, no reuse {n['no_reuse']}, planned/lower_bound {n['planned/lower_bound']:.4f}"
    )
    if "device_memory_limit" in s:
        text += (
            f"; limit {s['device_memory_limit']}: {s['recomputed']} recomputed, "
            f"{s['offloaded']} offloaded, {s['host_bytes']} bytes on host"
        )
    return text


def text_report(fn: func.FuncOp) -> str:
    """The summary line, then a table of tensors by step."""
    rows = tensor_table(fn)
    width = max((len(r["name"]) for r in rows), default=4)
    lines = [summary_line(fn), f"  {'tensor':<{width}}  {'offset':>12}  {'size':>12}  lifetime"]
    for r in rows:
        off = "-" if r["offset"] < 0 else str(r["offset"])
        lines.append(
            f"  {r['name']:<{width}}  {off:>12}  {r['size']:>12}  [{r['lifetime'][0]}, {r['lifetime'][1]}]"
        )
    return "\n".join(lines)
