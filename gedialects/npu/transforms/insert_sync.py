"""npu-insert-sync: synchronisation for npu kernels (one general pass, no op tables).

Every npu instruction says which pipe it runs on (`op.pipe()`) and which
pointers it reads and writes (operand 0 is written); the footprint of each
pointer follows from the instruction's fields. For every straight-line body
(the kernel, and each `scf.for` body, where a nested loop counts as one item
touching the union of what it touches):

* forward dependences (item i before item j in one iteration, on different
  pipes, overlapping bytes, one writing; i not a scalar-unit read
  (npu.load_index), which precedes everything issued after it): `set_flag P->C`
  right after i and `wait_flag P->C` right before j, unless an earlier pair
  (P, C) whose set follows i already orders them (several dependences of j
  on P share one pair, its set after the latest producer). The set goes
  as early as the producer allows, so a consumer never waits for P's later,
  unrelated work (a DMA into one ping-pong buffer does not wait for the
  scatter of the other); it never moves above a nested loop with flags
  of the same two pipes, whose own pairs would take its set first (other
  loops it passes: a conv's first C1 panel does not wait for the loops
  zeroing the padding rows of the later panels). These pairs use event 0: sets are
  counted and a wait takes the oldest, so the k-th set pairs with the k-th
  wait (sets and waits of a pair are both in program order).
* loop-carried dependences (item b of iteration t before item a of iteration
  t+1): unless already ordered, a "buffer free" flag: `set_flag` right after
  b, `wait_flag` before a, one set before the loop (so the first wait passes;
  right after the last item before the loop that what the wait guards
  conflicts with, not at the loop, where it would wait for all of the
  producer pipe's work; after an earlier loop, before that loop's closing
  waits) and one wait after it (so the kernel ends balanced). A nested loop's accesses after such a wait need no forward
  pair into the loop: a conv's loop over C1 slices that starts on the
  second L0A/L0B copies, the first slice's mmad reading the first, loads
  beside that mmad. Event ids 1..7 per
  (src, dst) pair, not used by enclosing loops; when they run out, flags of a
  pair are merged (one set after the latest producer, one wait before the
  earliest consumer), and as a last resort replaced by a forward pair.

A dynamic pointer's footprint is bounded by its `within` extent (its buffer;
convert-tile-to-npu writes it), else it reaches to the end of its space.
A kernel that already has flags is left as it is (hand-synchronised code).
GM is not analysed: a kernel never writes a GM tensor it reads (the lowering
guarantees it; the simulator's race detector checks it).
"""

from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import scf
from xdsl.dialects.builtin import Float16Type, ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass

from gedialects.npu import ops as npu
from gedialects.npu.isa import FRACTAL_BYTES, NUM_EVENTS, MemSpace, Pipe, padded_burst
from gedialects.walk import outermost


@dataclass
class SyncStats:
    forward: int = 0
    carried: int = 0
    merged: int = 0


@dataclass(frozen=True)
class Access:
    pipe: Pipe
    space: MemSpace
    lo: int
    hi: int
    write: bool


UNBOUNDED = 1 << 62
"""The end of a dynamic pointer without a `within` extent: anywhere past its offset."""


def _ptr(value: SSAValue, nbytes: int) -> tuple[MemSpace, int, int] | None:
    op = value.owner
    assert isinstance(op, npu.PtrOp)
    space = op.mem_space
    if space == MemSpace.GM:
        return None
    lo = op.offset.value.data
    if op.dyn is None:
        return space, lo, lo + nbytes
    return space, lo, lo + op.extent.value.data if op.extent is not None else UNBOUNDED


def accesses(op: Operation) -> list[Access]:
    """What one npu instruction reads and writes on chip."""
    pipe = op.pipe()  # type: ignore[attr-defined]
    f = op.fields() if isinstance(op, npu.NpuInstruction) else {}
    spans: list[tuple[SSAValue, int, bool]] = []
    if isinstance(op, npu.VectorOp):  # most instructions: first
        spans = op.operand_spans()
    elif isinstance(op, npu.DmaOp):
        dlen = f["len"] // 2 if f.get("cast_f16") else f["len"]
        slen = f["len"]
        if f.get("pad"):  # the on-chip side of a burst is whole blocks
            dlen, slen = (padded_burst(dlen), slen) if op.dst_space != MemSpace.GM else (dlen, padded_burst(slen))
        # to the end of the last burst: the gap after it is not touched (counting it made a
        # buffer right after a strided source look read, a false dependency on its next writer)
        spans = [
            (op.dst, (f["nburst"] - 1) * (dlen + f["dst_gap"]) + dlen, True),
            (op.src, (f["nburst"] - 1) * (slen + f["src_gap"]) + slen, False),
        ]
    elif isinstance(op, npu.Load2dOp):
        spans = [
            (op.dst, f["repeat"] * FRACTAL_BYTES, True),
            (op.src, ((f["repeat"] - 1) * f["src_stride"] + 1) * FRACTAL_BYTES, False),
        ]
    elif isinstance(op, npu.Load3dOp):
        spans = [
            (op.dst, f["m_len"] * f["kh"] * f["kw"] * 32, True),
            (op.src, f["fm_h"] * f["fm_w"] * 32, False),
        ]
    elif isinstance(op, npu.MmadOp):
        es = 2 if isinstance(op.properties["dtype"], Float16Type) else 4
        m, n, k = f["m"], f["n"], f["k"]
        spans = [(op.c, m * n * 4, True), (op.a, m * k * es, False), (op.b, k * n * es, False)]
    elif isinstance(op, npu.LoadIndexOp):
        spans = [(op.ptr, op.element_bytes, False)]
    out = []
    for value, nbytes, write in spans:
        r = _ptr(value, nbytes)
        if r is not None:
            out.append(Access(pipe, r[0], r[1], r[2], write))
    return out


@dataclass
class _Body:
    items: list[Operation]
    acc: list[list[Access]] = field(default_factory=list)
    by_pipe: dict = field(default_factory=dict)
    """space -> pipe -> ([(item index, access index)], [access]) in program
    order: what a conflict search scans (only accesses that can conflict)."""

    def add(self, op: Operation, acc: list[Access]) -> None:
        i = len(self.items)
        self.items.append(op)
        self.acc.append(acc)
        for k, a in enumerate(acc):
            index, found = self.by_pipe.setdefault(a.space, {}).setdefault(a.pipe, ([], []))
            index.append((i, k))
            found.append(a)


_INSTRUCTION_TYPES: dict[type, bool] = {}


def _is_instruction(op: Operation) -> bool:
    """An instruction whose accesses count (not a flag or barrier), by the op's type (memoised:
    every op of every body asks, and isinstance against these ABC bases is slow)."""
    kind = type(op)
    found = _INSTRUCTION_TYPES.get(kind)
    if found is None:
        found = _INSTRUCTION_TYPES[kind] = issubclass(kind, npu.LoadIndexOp) or (
            issubclass(kind, npu.NpuInstruction) and not issubclass(kind, npu.FlagOp | npu.PipeBarrierOp))
    return found


def _collect(block: Block, known: dict) -> _Body:
    """The block's items and their accesses; `known`: each instruction's
    accesses by id, computed once per kernel (a nested loop's instructions
    are items of every enclosing body too)."""

    def of(op: Operation) -> list[Access]:
        acc = known.get(id(op))
        if acc is None:
            acc = known[id(op)] = accesses(op)
        return acc

    def of_loop(loop: scf.ForOp) -> list[Access]:
        """Everything a loop nest touches, in program order; once per loop
        (each enclosing body asks again). Also records, per access, the
        index of the item of the loop's own body it belongs to."""
        acc = known.get(id(loop))
        if acc is None:
            acc, items = [], []
            index = 0
            for inner in loop.body.block.ops:
                if isinstance(inner, scf.ForOp):
                    found = of_loop(inner)
                elif _is_instruction(inner):
                    found = of(inner)
                else:
                    continue
                acc += found
                items += [index] * len(found)
                index += 1
            known[id(loop)] = acc
            known[(id(loop), "items")] = items
        return acc

    body = _Body([])
    for op in block.ops:
        if isinstance(op, scf.ForOp):
            acc = of_loop(op)
        elif _is_instruction(op):
            acc = of(op)
        else:
            continue
        body.add(op, acc)
    return body


def _meets(a: Access, b: Access) -> bool:
    """Whether two accesses conflict: the same bytes of one space, one of them a write."""
    return a.space == b.space and (a.write or b.write) and a.lo < b.hi and b.lo < a.hi


def _latest_conflicts(body: _Body, a: Access, upto: int) -> dict[Pipe, int]:
    """Latest item < upto per other pipe whose accesses conflict with `a`."""
    found: dict[Pipe, tuple[int, int]] = {}
    for pipe, (index, accs) in body.by_pipe.get(a.space, {}).items():
        # the scalar unit's reads are ordered before all it issues later
        if pipe in (a.pipe, Pipe.S):
            continue
        k = bisect_left(index, (upto, 0)) - 1
        while k >= 0:
            b = accs[k]
            if (a.write or b.write) and a.lo < b.hi and b.lo < a.hi:  # `_meets`, inline: the hot loop, one space
                if pipe in found and found[pipe][0] != index[k][0]:
                    break  # the latest item is found; this is an earlier one
                found[pipe] = index[k]  # its first conflicting access within the item
            elif pipe in found and found[pipe][0] != index[k][0]:
                break
            k -= 1
    # in the order a backward walk over the items meets them (the flags' order in the output)
    return {pipe: at[0] for pipe, at in sorted(found.items(), key=lambda kv: (-kv[1][0], kv[1][1]))}


def insert_sync(kernel: npu.KernelOp) -> SyncStats:
    """Insert set_flag/wait_flag pairs into `kernel` (in place)."""
    stats = SyncStats()
    _sync_block(kernel.body.block, None, defaultdict(set), stats, {}, {})
    return stats


@dataclass
class _Plan:
    """One body's dependences before event ids: forward pairs and loop-carried
    flags, each [set before item s, wait before item w], per (producer pipe,
    consumer pipe)."""
    body: _Body
    forward: dict[tuple[Pipe, Pipe], list[list[int]]]
    carried: dict[tuple[Pipe, Pipe], list[list[int]]]
    primes: dict[int, tuple[int, dict[tuple[Pipe, Pipe], dict[int, int]]]]
    """Per nested loop (its item index): the earliest place for a priming
    set, never above an earlier nested loop (whose flags may share the
    event), and per pipes, per item of the loop's body, the place right
    after the latest item before the loop it conflicts with."""

    _first_waits: dict[tuple[Pipe, Pipe], int] | None = None

    def prime_position(self, loop_item: int, key: tuple[Pipe, Pipe], guarded: range) -> int:
        """Where the priming set of a flag of the loop whose first wait
        guards the loop's items `guarded` goes: after every conflicting
        producer of those items."""
        floor, conflicts = self.primes[loop_item]
        return max([floor] + [at for x, at in conflicts.get(key, {}).items() if x in guarded])

    def first_waits(self) -> dict[tuple[Pipe, Pipe], int]:
        """The first item each pair's wait precedes: what a wait on that pair
        guards from the body's first iteration on (merging flags only moves
        a wait earlier). Computed once, before the flags are merged."""
        if self._first_waits is None:
            first: dict[tuple[Pipe, Pipe], int] = {}
            for flags in (self.forward, self.carried):
                for key, pairs in flags.items():
                    first[key] = min([first.get(key, len(self.body.items))] + [w for _, w in pairs])
            self._first_waits = first
        return self._first_waits


def _plan(block: Block, loop: scf.ForOp | None, known: dict, plans: dict) -> _Plan:
    """The dependences of `block` (a loop's body when `loop` is given).

    A dependence of an item of a nested loop on an item i before that loop
    needs no pair of this body when, in the nested loop's body, a wait on
    the same two pipes precedes the dependent item: that wait takes a set
    the producer pipe executes after i (a set within the iteration, or the
    priming set of a loop-carried flag, which `_insert_prime` puts after
    every item before the loop that the items it guards conflict with), so
    the loop's first accesses to the other copy of a ping-pong buffer no
    longer wait for i's pipe to finish with this copy."""
    body = _collect(block, known)
    n = len(body.items)

    def guarded(j: int, k: int, producer: Pipe, consumer: Pipe) -> bool:
        """Access k of item j, a nested loop's, comes after a wait of that loop on these pipes."""
        item = body.items[j]
        if not isinstance(item, scf.ForOp):
            return False
        inner = _loop_plan(item, known, plans).first_waits()
        return known[(id(item), "items")][k] >= inner.get((producer, consumer), UNBOUNDED)

    forward: dict[tuple[Pipe, Pipe], list[list[int]]] = defaultdict(list)  # [set before item s, wait before item w]
    primes: dict[int, tuple[int, dict[tuple[Pipe, Pipe], dict[int, int]]]] = {}
    last_loop = -1  # the latest nested loop before j
    # per pair of pipes, the latest nested loop before j with flags of that pair: no set
    # moves above it (its own pairs would take the set first); other loops it may pass
    last_loop_of: dict[tuple[Pipe, Pipe], int] = {}
    for j in range(n):
        if isinstance(body.items[j], scf.ForOp):
            primes[j] = (last_loop + 1, defaultdict(dict))
        for k, a in enumerate(body.acc[j]):
            for p, i in _latest_conflicts(body, a, j).items():
                if j in primes:
                    x = known[(id(body.items[j]), "items")][k]
                    after = primes[j][1][(p, a.pipe)]
                    after[x] = max(after.get(x, 0), i + 1)
                if guarded(j, k, p, a.pipe):
                    continue
                pairs = forward[(p, a.pipe)]
                if pairs and pairs[-1][0] > i:
                    continue  # a set after i, its wait before j
                s = max(i + 1, last_loop_of.get((p, a.pipe), -1) + 1)
                if pairs and pairs[-1][1] == j:
                    pairs[-1][0] = s
                else:
                    pairs.append([s, j])
        if isinstance(body.items[j], scf.ForOp):
            last_loop = j
            for key in _loop_pairs(body.items[j], known, plans):
                last_loop_of[key] = j
    carried: dict[tuple[Pipe, Pipe], list[list[int]]] = defaultdict(list)  # [s, w]
    if loop is not None:
        for j in range(n):
            for k, a in enumerate(body.acc[j]):
                for p, pb in _latest_conflicts(body, a, n).items():
                    key = (p, a.pipe)
                    if guarded(j, k, p, a.pipe):
                        continue
                    pairs = forward.get(key, [])
                    if pairs and (pairs[-1][0] > pb or pairs[0][1] <= j):
                        continue
                    if any(s > pb and w <= j for s, w in carried[key]):
                        continue
                    carried[key].append([pb + 1, j])
    return _Plan(body, forward, carried, primes)


def _loop_pairs(loop: scf.ForOp, known: dict, plans: dict) -> set[tuple[Pipe, Pipe]]:
    """The pairs of pipes a loop nest may have flags of (forward pairs, and
    loop-carried flags, which become forward pairs when events run out)."""
    pairs = plans.get((id(loop), "pairs"))
    if pairs is None:
        plan = _loop_plan(loop, known, plans)
        pairs = set(plan.forward) | set(plan.carried)
        for item in plan.body.items:
            if isinstance(item, scf.ForOp):
                pairs |= _loop_pairs(item, known, plans)
        plans[(id(loop), "pairs")] = pairs
    return pairs


def _loop_plan(loop: scf.ForOp, known: dict, plans: dict) -> _Plan:
    """A nested loop's plan, computed once (its enclosing bodies ask first)."""
    plan = plans.get(id(loop))
    if plan is None:
        plan = plans[id(loop)] = _plan(loop.body.block, loop, known, plans)
    return plan


def _sync_block(block: Block, loop: scf.ForOp | None, used: dict, stats: SyncStats,
                known: dict, plans: dict, outer: tuple[_Plan, int] | None = None,
                around: tuple[_Plan, int] | None = None) -> None:
    """Flags for `block`; `outer`: the enclosing body's plan and the loop's
    item index in it (where the loop's priming sets go); `around`: the same
    for the enclosing loop, when there is one (`_chains_across`)."""
    deps = _loop_plan(loop, known, plans) if loop is not None else _plan(block, None, known, plans)
    body, forward, carried = deps.body, deps.forward, deps.carried
    n = len(body.items)
    # event ids for carried flags
    plan: list[tuple[tuple[Pipe, Pipe], int, int, int]] = []  # key, s, w, id
    for key, flags in carried.items():
        free = [e for e in range(1, NUM_EVENTS) if e not in used[key]]
        while len(flags) > len(free) and len(flags) > 1:
            a, b = flags.pop(), flags.pop()
            flags.append([max(a[0], b[0]), min(a[1], b[1])])
            stats.merged += 1
        if not free:
            for _, w in flags:
                forward[key].append([w, w])
            continue
        for (s, w), e in zip(flags, free):
            plan.append((key, s, w, e))
    # emit
    def before(pos: int, op: Operation) -> None:
        if pos < n:
            block.insert_op_before(op, body.items[pos])
        else:
            last = block.last_op
            assert last is not None
            if isinstance(last, scf.YieldOp):
                block.insert_op_before(op, last)
            else:
                block.add_op(op)

    waits_of: dict[tuple[Pipe, Pipe], list[int]] = defaultdict(list)  # where each pair's waits go
    for key, _, w, _ in plan:
        waits_of[key].append(w)
    for key, pairs in forward.items():
        waits_of[key] += [w for _, w in pairs]
    for key, s, w, e in plan:
        p, c = key
        assert loop is not None
        before(s, npu.SetFlagOp(p, c, e))
        before(w, npu.WaitFlagOp(p, c, e))
        parent = loop.parent_block()
        assert parent is not None and outer is not None
        until = min([x for x in waits_of[key] if x > w], default=n)  # the items this wait is the latest before
        if around is not None and _chains_across(outer, key, known, plans):
            # the enclosing loop's next iteration takes this loop's last set: one priming set
            # before the enclosing loop, one closing wait after it
            enclosing = parent.parent_op()
            assert isinstance(enclosing, scf.ForOp) and enclosing.parent_block() is not None
            enclosing.parent_block().insert_op_before(npu.SetFlagOp(p, c, e), enclosing)
            _insert_closing_wait(enclosing.parent_block(), around, npu.WaitFlagOp(p, c, e), key, known, plans)
        else:
            _insert_prime(parent, outer, npu.SetFlagOp(p, c, e), key, range(w, until))
            _insert_closing_wait(parent, outer, npu.WaitFlagOp(p, c, e), key, known, plans)
        stats.carried += 1
    sets: dict[int, list[Operation]] = defaultdict(list)
    waits: dict[int, list[Operation]] = defaultdict(list)
    for (p, c), pairs in forward.items():
        latest = 0
        for s, w in sorted(pairs, key=lambda sw: sw[1]):
            latest = max(latest, s)  # the k-th set stays before the (k+1)-th
            sets[latest].append(npu.SetFlagOp(p, c, 0))
            waits[w].append(npu.WaitFlagOp(p, c, 0))
            stats.forward += 1
    for pos in sorted(sets.keys() | waits.keys()):
        for flag in sets[pos] + waits[pos]:  # a set never waits behind a wait at its place
            before(pos, flag)
    inner_used = defaultdict(set, {k: set(v) for k, v in used.items()})
    for key, _, _, e in plan:
        inner_used[key].add(e)
    for j, op in enumerate(body.items):
        if isinstance(op, scf.ForOp):
            _sync_block(op.body.block, op, inner_used, stats, known, plans, (deps, j), outer if loop is not None else None)


def _insert_prime(parent: Block, outer: tuple[_Plan, int], flag: Operation, key: tuple[Pipe, Pipe],
                  guarded: range) -> None:
    """A loop-carried flag's priming set (so the loop's first wait passes) as
    early as its pipe's work allows: right after the latest item before the
    loop that conflicts with the loop on the flag's pipes (at the loop, it
    would wait for all of the producer pipe's work before the loop: a conv's
    first load into the second L0A buffer for the mmad reading the first)."""
    plan, j = outer
    at = plan.prime_position(j, key, guarded)
    items = plan.body.items
    if at == j and not (at > 0 and isinstance(items[at - 1], scf.ForOp)):
        parent.insert_op_before(flag, items[at])
    elif at > 0 and isinstance(items[at - 1], scf.ForOp):
        # right after an earlier loop, before its closing waits: a wait there
        # on the flag's producer pipe (for a third pipe's last work, a ping-pong
        # loop's final store) would hold the set back, and the loop's first
        # iteration with it (a remainder loop after its main loop); a set of
        # the same flag still left by that loop is older, so its closing wait
        # takes that one and this loop's first wait this
        parent.insert_op_after(flag, items[at - 1])
    elif at == 0:
        first = parent.first_op
        assert first is not None
        parent.insert_op_before(flag, first)
    else:
        parent.insert_op_after(flag, items[at - 1])  # before the flags waiting at the next item


def _chains_across(outer: tuple[_Plan, int], key: tuple[Pipe, Pipe], known: dict, plans: dict) -> bool:
    """Whether a loop's carried flag on pipes `key` may run on across the
    iterations of the loop enclosing it, its first wait in one iteration
    taking its last set of the one before (which follows the producer pipe's
    last access to what the flag guards), instead of a priming set and a
    closing wait in every iteration: when no other item of the enclosing
    body has producer-pipe accesses meeting the loop's consumer-pipe ones,
    nor flags of the same two pipes. A priming set at the top of each
    iteration waited for the producer pipe's unrelated work of the one
    before: a staged conv's next band, copied GM -> UB (MTE2), waited for
    the previous band's result store (MTE3)."""
    plan, j = outer
    producer, consumer = key
    theirs = [a for a in plan.body.acc[j] if a.pipe == consumer]
    for t, item in enumerate(plan.body.items):
        if t == j:
            continue
        if isinstance(item, scf.ForOp) and key in _loop_pairs(item, known, plans):
            return False
        if any(b.pipe == producer and _meets(a, b) for b in plan.body.acc[t] for a in theirs):
            return False
    return True


def _insert_closing_wait(parent: Block, outer: tuple[_Plan, int], flag: Operation, key: tuple[Pipe, Pipe],
                         known: dict, plans: dict) -> None:
    """A loop-carried flag's closing wait (the loop's last set is left over:
    the kernel ends balanced) as late as is safe: before the first later
    item that is a loop with flags of the same two pipes (it may share the
    event: its first wait must take its own priming set, not this one), or
    whose accesses on the consumer pipe meet the loop's on the producer
    pipe; else at the end of the body. Right after the loop, it would hold
    the consumer pipe's unrelated work until the producer pipe's last
    iteration is done (a staged conv's weights copy, GM -> L1 on MTE2,
    behind the band's last copy UB -> L1 on MTE3)."""
    plan, j = outer
    producer, consumer = key
    items = plan.body.items
    mine = [a for a in plan.body.acc[j] if a.pipe == producer]
    for t in range(j + 1, len(items)):
        if isinstance(items[t], scf.ForOp) and key in _loop_pairs(items[t], known, plans):
            break
        if any(b.pipe == consumer and _meets(a, b) for b in plan.body.acc[t] for a in mine):
            break
    else:
        last = parent.last_op
        if isinstance(last, scf.YieldOp):
            parent.insert_op_before(flag, last)
        else:
            parent.add_op(flag)
        return
    parent.insert_op_before(flag, items[t])


class NpuInsertSyncPass(ModulePass):
    """Insert set_flag/wait_flag pairs into every npu.kernel (forward and loop-carried dependences)."""

    name = "npu-insert-sync"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in outermost(op, npu.KernelOp):
            if kernel.alike is None and not any(isinstance(o, npu.FlagOp) for o in kernel.walk()):  # alike: its source's flags
                insert_sync(kernel)
