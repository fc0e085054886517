"""Fitting a function under a device-memory limit: recompute and offload.

While the planned arena exceeds the limit, take the step where the most
bytes are live (the peak) and free one tensor that is alive across it but
not read there:

- recompute: clone its producer right before the first later reader, which
  then reads the clone. Only cheap producers (elementwise ops, batch_norm,
  loop fusions) whose device operands are alive at that point anyway, so
  recomputing extends no other lifetime. Cost: the bytes the producer reads
  and writes (such ops are memory bound). When nothing reads the tensor
  before the peak, the producer is just moved down to its first reader
  (cost 0; counted as recomputed).
- offload: `graph.offload` to host right after its last reader before the
  peak, `graph.reload` right before the first reader after it. Cost: the
  bytes moved, times HOST_LINK_COST. A tensor that already is a reload is
  simply reloaded again from the same host copy (half the traffic).

A candidate that alone frees enough at the peak is preferred (the cheapest
such); otherwise the one with the lowest cost per freed byte. A tensor only
counts as freed when nothing else sharing its storage (views, in-place
results, concat pieces) is alive across the peak. When no candidate is
left, `LimitError` names the peak step and the tensors live there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from xdsl.dialects import func
from xdsl.ir import Operation, SSAValue

from gedialects.graph import ops as g
from gedialects.graph.memory.lifetimes import Liveness, Tensor, analyse, tensor_nbytes
from gedialects.graph.memory.strategies import arena_size, plan
from gedialects.graph.memory.verify import tensor_name
from gedialects.graph.memory_ops import OffloadOp, ReloadOp
from gedialects.location import describe_op

HOST_LINK_COST = 16
"""Cost of moving one byte between host and device, in units of one byte of
device-memory traffic (the host link is roughly an order of magnitude slower
than HBM). An assumption of the planner: the graph level may not read the
target configs, so it is a named constant here, not a per-target figure."""

C = TypeVar("C")

_RECOMPUTABLE = (g.ElementwiseUnaryOp, g.ElementwiseBinaryOp, g.SumOp, g.BatchNormOp, g.FusionOp)


class LimitError(Exception):
    """The limit cannot be met; `op` is the peak step's op."""

    def __init__(self, op: Operation, message: str):
        super().__init__(message)
        self.op = op


@dataclass(frozen=True)
class Fitted:
    liveness: Liveness
    strategy: str
    offsets: list[int]
    recomputed: int
    offloaded: int
    host_bytes: int


@dataclass(frozen=True)
class _Candidate:
    tensor: Tensor
    action: str  # "move" | "recompute" | "offload" | "reload"
    cost: int
    after: Operation | None
    """Offload: the op after which the device copy is written to host."""
    before: Operation
    """The first reader after the peak (an op of the function body)."""


def _readers(fn: func.FuncOp, lv: Liveness, value: SSAValue) -> list[tuple[int, Operation]]:
    index = {op: i for i, op in enumerate(lv.steps)}
    block = fn.body.block
    out = []
    for use in value.uses:
        user = use.operation
        while user.parent_block() is not block:
            user = user.parent_op()  # type: ignore[assignment]
        out.append((lv.end if isinstance(user, func.ReturnOp) else index[user], user))
    return sorted(out, key=lambda x: x[0])


def _candidates(fn: func.FuncOp, lv: Liveness, peak: int) -> list[_Candidate]:
    spanning: dict[int, list[Tensor]] = {}
    for t in lv.tensors:
        if t.step <= peak <= t.last:
            spanning.setdefault(t.block, []).append(t)
    last_of = {t.value: t.last for t in lv.tensors}
    out = []
    for members in spanning.values():
        if len(members) != 1:
            continue  # the storage stays needed at the peak through another tensor
        t = members[0]
        if t.step == peak or t.nbytes == 0:
            continue
        readers = _readers(fn, lv, t.value)
        if any(s == peak for s, _ in readers):
            continue
        later = [(s, op) for s, op in readers if s > peak]
        if not later:
            continue
        first_after, before = later[0]
        earlier = [s for s, _ in readers if s < peak]
        after = lv.steps[max(earlier, default=t.step)]
        producer = t.value.owner
        assert isinstance(producer, Operation)
        if isinstance(producer, ReloadOp):
            out.append(_Candidate(t, "reload", HOST_LINK_COST * t.nbytes, None, before))
        else:
            out.append(_Candidate(t, "offload", 2 * HOST_LINK_COST * t.nbytes, after, before))
        if (
            isinstance(producer, _RECOMPUTABLE)
            and len(producer.results) == 1
            and all(last_of.get(o, lv.end) >= first_after for o in producer.operands)
        ):
            if earlier:
                traffic = t.nbytes + sum(tensor_nbytes(o) for o in producer.operands)
                out.append(_Candidate(t, "recompute", traffic, None, before))
            else:  # nothing reads it before the peak: move the producer down, for free
                out.append(_Candidate(t, "move", 0, None, before))
    return out


def preference_order(candidates: list[C], need: int, freed: Callable[[C], int], cost: Callable[[C], float],
                     position: Callable[[C], int]) -> list[C]:
    """Preference order of candidate actions at a peak: those that alone free
    `need` bytes, cheapest first; then the rest by cost per freed byte (ties:
    larger first, then earlier). Shared by the tile level's fitting
    (gedialects/tile/memory_limit.py)."""
    enough = sorted((c for c in candidates if freed(c) >= need), key=lambda c: (cost(c), -freed(c), position(c)))
    rest = sorted((c for c in candidates if freed(c) < need),
                  key=lambda c: (cost(c) / max(1, freed(c)), -freed(c), position(c)))
    return enough + rest


def _ranked(candidates: list[_Candidate], need: int) -> list[_Candidate]:
    return preference_order(candidates, need, lambda c: c.tensor.nbytes, lambda c: c.cost, lambda c: c.tensor.step)


def _apply(fn: func.FuncOp, c: _Candidate) -> tuple[str, Callable[[], None]]:
    """Rewrite the IR; a remark describing what was done, and its undo."""
    value = c.tensor.value
    producer = value.owner
    assert isinstance(producer, Operation)
    block = fn.body.block
    name = tensor_name(producer, producer.results.index(value), c.tensor.step)  # type: ignore[arg-type]
    inserted: list[Operation] = []
    if c.action == "move":
        anchor = producer.next_op
        assert anchor is not None
        producer.detach()
        block.insert_op_before(producer, c.before)

        def undo_move() -> None:
            producer.detach()
            block.insert_op_before(producer, anchor)

        return f"moved {name} down to its reader {describe_op(c.before)} ({c.tensor.nbytes} bytes, cost 0)", undo_move
    if c.action == "recompute":
        clone = producer.clone()
        block.insert_op_before(clone, c.before)
        inserted.append(clone)
        new = clone.results[0]
        what = f"recomputed {name} before {describe_op(c.before)}"
    else:
        if c.action == "reload":
            assert isinstance(producer, ReloadOp)
            host = producer.input
        else:
            offload = OffloadOp(value)
            offload.location = producer.location
            assert c.after is not None
            block.insert_op_after(offload, c.after)
            inserted.append(offload)
            host = offload.output
        reload = ReloadOp(host)
        reload.location = producer.location
        block.insert_op_before(reload, c.before)
        inserted.append(reload)
        new = reload.output
        what = f"offloaded {name} to host" if c.action == "offload" else f"reloaded {name} from host again"
        what += f" until {describe_op(c.before)}"
    index = {op: i for i, op in enumerate(block.ops)}
    at = index[c.before]
    replaced = []
    for use in list(value.uses):
        user = use.operation
        while user.parent_block() is not block:
            user = user.parent_op()  # type: ignore[assignment]
        if index[user] >= at:
            replaced.append((use.operation, use.index))
            use.operation.operands[use.index] = new

    def undo() -> None:
        for op, i in replaced:
            op.operands[i] = value
        for op in reversed(inserted):
            op.detach()
            op.erase()

    return f"{what} ({c.tensor.nbytes} bytes, cost {c.cost})", undo


@dataclass(frozen=True)
class _State:
    """Where a fitting attempt stands: `key` must fall with every action."""

    liveness: Liveness
    strategy: str
    offsets: list[int] | None
    key: tuple[int, ...]

    @property
    def planned(self) -> int | None:
        return None if self.offsets is None else arena_size(self.liveness.blocks, self.offsets)


def _state(lv: Liveness, strategy: str, limit: int) -> _State:
    live = lv.live_bytes()
    bound = max(live, default=0)
    at_bound = live.count(bound)
    if bound > limit:  # no placement can fit yet: do not plan
        return _State(lv, strategy, None, (1, bound, at_bound))
    name, offsets = plan(lv.blocks, strategy)
    return _State(lv, name, offsets, (0, arena_size(lv.blocks, offsets), bound, at_bound))


_COPIES = (OffloadOp, ReloadOp)

MAX_TRIES = 6
"""Candidates tried at one peak before the limit is declared impossible."""


def fit(
    fn: func.FuncOp,
    alignment: int,
    strategy: str,
    limit: int,
    remark: Callable[[Operation, str], None] = lambda op, text: None,
) -> Fitted:
    """Plan `fn` with an arena of at most `limit` bytes, rewriting the IR.

    An action is kept only if it makes progress: fewer bytes at the peak
    (or fewer steps at the peak), or, once the lower bound fits, a smaller
    plan; otherwise it is undone and the next candidate is tried.
    """
    state = _state(analyse(fn, alignment), strategy, limit)
    recomputed = offloaded = 0
    while state.planned is None or state.planned > limit:
        lv = state.liveness
        live = lv.live_bytes()
        peak = live.index(max(live))
        need = live[peak] - limit if state.planned is None else state.planned - limit
        for choice in _ranked(_candidates(fn, lv, peak), need)[:MAX_TRIES]:
            text, undo = _apply(fn, choice)
            new = _state(analyse(fn, alignment), strategy, limit)
            if new.key < state.key:
                break
            undo()
        else:
            # name a step of the model rather than a copy this pass inserted
            tops = [s for s, n in enumerate(live) if n == live[peak]]
            peak = next((s for s in tops if s < lv.end and not isinstance(lv.steps[s], _COPIES)), peak)
            at = lv.steps[peak] if peak < lv.end else fn.body.block.last_op
            assert at is not None
            raise LimitError(at, _impossible(lv, peak, limit, state.planned))
        producer = choice.tensor.value.owner
        assert isinstance(producer, Operation)
        remark(producer, text)
        recomputed += choice.action in ("move", "recompute")
        offloaded += choice.action in ("offload", "reload")
        state = new
    assert state.offsets is not None
    host = sum(tensor_nbytes(op.output) for op in fn.body.block.ops if isinstance(op, OffloadOp))
    return Fitted(state.liveness, state.strategy, state.offsets, recomputed, offloaded, host)


def _impossible(lv: Liveness, peak: int, limit: int, planned: int | None) -> str:
    live = lv.live_bytes()[peak]
    names = []
    for t in sorted(lv.tensors, key=lambda t: (-t.nbytes, t.step)):
        if t.step <= peak <= t.last and t.how != "view":
            op = t.value.owner
            assert isinstance(op, Operation)
            names.append(f"{tensor_name(op, op.results.index(t.value), t.step)} ({t.nbytes} B)")  # type: ignore[arg-type]
    where = describe_op(lv.steps[peak]) if peak < lv.end else "func.return"
    if planned is None:
        head = f"{live} bytes are live at step {peak} ({where})"
    else:
        head = f"the plan needs {planned} bytes; the peak is at step {peak} ({where})"
    return (
        f"device-memory-limit={limit} cannot be met: {head}, and recomputing or "
        f"offloading a tensor does not lower it; live there: {', '.join(names)}"
    )
