"""Proof that a recorded memory plan is safe, from the IR alone.

The check does not trust the planner's aliasing decisions. It replays the
schedule and, at every step, compares the bytes the step writes with the
bytes of every tensor alive at that step (defined at or before it, read at
or after it). A write may touch a live tensor's bytes only when that tensor
is an operand the op reads solely at the index it writes (`inplace_operands`),
it dies at this step, and it occupies exactly the written slot.

What a step writes: each result's slot, except
- a view whose slot is its operand's slot (it moves no data);
- the parts of a concat's slot where a piece already lies (its producer
  wrote it there; only unit dims precede the axis, see `concat_positions`).
So a tensor's bytes are intact from its definition to its last read exactly
when no conflict is reported. Also checked: offsets aligned and inside the
arena, every arena tensor has an offset, and the recorded lifetimes are the
schedule's (a pass that reorders ops after planning makes the plan stale).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

from gedialects.graph import ops as g
from gedialects.graph.memory.attributes import (
    NoPlanError,
    memory_summary,
    op_lifetimes,
    op_offsets,
)
from gedialects.graph.memory.lifetimes import (
    concat_positions,
    inplace_operands,
    last_uses,
    schedule,
    tensor_nbytes,
)
from gedialects.graph.memory_ops import OffloadOp
from gedialects.location import describe_op, node_name


class PlanVerificationError(Exception):
    """The plan lets a write clobber a live tensor (or is malformed)."""


@dataclass(frozen=True)
class Slot:
    value: SSAValue
    step: int
    last: int
    lo: int
    hi: int
    name: str


def tensor_name(op: Operation, result: int, step: int) -> str:
    """`relu1` (the model node), `relu1#1` for a second result, or
    `graph.relu@3` (op name at its step) for an op without a node name."""
    name = node_name(op)
    if name == op.name:
        name = f"{op.name}@{step}"
    return name if len(op.results) == 1 else f"{name}#{result}"


def _slots(fn: func.FuncOp, steps: list[Operation], problems: list[str]) -> dict[SSAValue, Slot]:
    summary = memory_summary(fn)
    alignment, size = int(summary["alignment"]), int(summary["arena_size"])
    lasts = last_uses(fn, steps)
    slots: dict[SSAValue, Slot] = {}
    for s, op in enumerate(steps):
        try:
            offsets, lifetimes = op_offsets(op), op_lifetimes(op)
        except NoPlanError:
            problems.append(f"step {s} ({describe_op(op)}) has no ge.offsets/ge.lifetime")
            continue
        if len(offsets) != len(op.results) or len(lifetimes) != len(op.results):
            problems.append(f"step {s} ({describe_op(op)}) records {len(offsets)} offsets for {len(op.results)} results")
            continue
        for r, res in enumerate(op.results):
            name = tensor_name(op, r, s)
            if lifetimes[r] != (s, lasts[res]):
                problems.append(
                    f"{name}: recorded lifetime {list(lifetimes[r])} but the schedule gives "
                    f"[{s}, {lasts[res]}]; the plan is stale, re-run graph-plan-memory"
                )
            off = offsets[r]
            if off < 0:
                outside = (
                    not isinstance(res.type, TensorType)
                    or isinstance(op, OffloadOp)
                    or (isinstance(op, g.VIEW_OPS) and op.operands[0] not in slots)
                )
                if not outside:
                    problems.append(f"{name} has no offset in the arena")
                continue
            nbytes = tensor_nbytes(res)
            if off % alignment:
                problems.append(f"{name}: offset {off} is not a multiple of the alignment {alignment}")
            if off + nbytes > size:
                problems.append(f"{name}: bytes [{off}, {off + nbytes}) exceed the arena of {size} bytes")
            slots[res] = Slot(res, s, lasts[res], off, off + nbytes, name)
    return slots


def _writes(op: Operation, slots: dict[SSAValue, Slot]) -> list[tuple[Slot, int, int]]:
    """(result slot, lo, hi) ranges the op writes."""
    out = []
    for res in op.results:
        slot = slots.get(res)
        if slot is None or slot.hi == slot.lo:
            continue
        if isinstance(op, g.VIEW_OPS):
            src = slots.get(op.operands[0])
            if src is not None and src.lo == slot.lo:
                continue
        segments = [(slot.lo, slot.hi)]
        if isinstance(op, g.ConcatOp):
            positions = concat_positions(op) or []
            for x, pos in zip(op.operands, positions):
                piece = slots.get(x)
                if piece is not None and piece.hi > piece.lo and piece.lo == slot.lo + pos:
                    segments = [
                        part
                        for lo, hi in segments
                        for part in ((lo, min(hi, piece.lo)), (max(lo, piece.hi), hi))
                        if part[0] < part[1]
                    ]
        out += [(slot, lo, hi) for lo, hi in segments]
    return out


def _in_place(op: Operation, result: Slot, victim: Slot, step: int) -> bool:
    if victim.last != step or (victim.lo, victim.hi) != (result.lo, result.hi):
        return False
    r = op.results.index(result.value)  # type: ignore[arg-type]
    return any(op.operands[k] is victim.value for k in inplace_operands(op, r))


def plan_problems(fn: func.FuncOp) -> list[str]:
    """Every reason the recorded plan of `fn` is unsafe; empty if it is safe."""
    steps = schedule(fn)
    problems: list[str] = []
    try:
        summary = memory_summary(fn)
    except NoPlanError as e:
        return [str(e)]
    if int(summary["arena_size"]) < int(summary["lower_bound"]):
        problems.append(f"arena_size {summary['arena_size']} is below the lower bound {summary['lower_bound']}")
    slots = _slots(fn, steps, problems)
    starting: dict[int, list[Slot]] = {}
    for slot in slots.values():
        if slot.hi > slot.lo:
            starting.setdefault(slot.step, []).append(slot)
    live: list[Slot] = []
    for s, op in enumerate(steps):
        live = [t for t in live if t.last >= s] + starting.get(s, [])
        for result, lo, hi in _writes(op, slots):
            for t in live:
                if t is result or t.hi <= lo or hi <= t.lo:
                    continue
                if t.step < s and _in_place(op, result, t, s):
                    continue
                problems.append(
                    f"step {s} ({describe_op(op)}) writes {result.name} over bytes "
                    f"[{max(lo, t.lo)}, {min(hi, t.hi)}) of {t.name}, live over steps [{t.step}, {t.last}]"
                )
    return problems


def verify_plan(fn: func.FuncOp) -> None:
    """Raise PlanVerificationError naming the first problem of the plan."""
    problems = plan_problems(fn)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise PlanVerificationError(f"@{fn.sym_name.data}: unsafe memory plan: {problems[0]}{more}")
