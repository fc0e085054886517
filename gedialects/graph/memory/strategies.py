"""Offset assignment: each strategy is a pure function `(blocks) -> offsets`.

All of them place blocks one at a time, in a strategy-specific order, into
the best-fitting gap among the already placed blocks that are live at the
same time (the smallest gap that holds the block, counting the gap below
the lowest placed block; else on top of the highest). They differ only in
the order, as in TFLite's and XLA's planners:

- greedy-by-size: largest first (TFLite GreedyBySize; XLA's heap simulator
  sorts the same way); optimal on chains, suboptimal when a large short-lived
  block splits the address space under long-lived small ones;
- greedy-by-breadth: visit steps from the busiest to the least busy, placing
  the unplaced blocks live there, largest first (TFLite GreedyByBreadth);
- greedy-by-conflict: the block that overlaps the most bytes of other blocks
  in time first (TVM USMP greedy_by_conflicts);
- greedy-by-lifetime: longest-lived first, then largest (long-lived blocks
  settle at the bottom, short ones stack above them);
- `auto` runs them all and keeps the smallest arena (ties: first in this
  list), as GE's hybrid memory assigner does.
"""

from __future__ import annotations

from bisect import insort
from collections.abc import Callable, Sequence

from gedialects.graph.memory.lifetimes import Block

Strategy = Callable[[Sequence[Block]], list[int]]


def place_in_order(blocks: Sequence[Block], order: Sequence[int]) -> list[int]:
    """Best-fit placement of `blocks` visited in `order`; their offsets."""
    offsets = [-1] * len(blocks)
    placed: list[int] = []
    for i in order:
        b = blocks[i]
        busy = sorted(
            (offsets[j], offsets[j] + blocks[j].size) for j in placed if blocks[j].overlaps_in_time(b)
        )
        best, best_gap, top = None, None, 0
        for lo, hi in busy:
            gap = lo - top  # the first gap is [0, lowest block)
            if gap >= b.size and (best_gap is None or gap < best_gap):
                best, best_gap = top, gap
            top = max(top, hi)
        offsets[i] = top if best is None else best
        placed.append(i)
    return offsets


def greedy_by_size(blocks: Sequence[Block]) -> list[int]:
    order = sorted(range(len(blocks)), key=lambda i: (-blocks[i].size, blocks[i].first, i))
    return place_in_order(blocks, order)


def greedy_by_breadth(blocks: Sequence[Block]) -> list[int]:
    if not blocks:
        return []
    end = max(b.last for b in blocks)
    live: list[list[int]] = [[] for _ in range(end + 1)]
    for i, b in enumerate(blocks):
        for s in range(b.first, b.last + 1):
            live[s].append(i)
    breadth = [sum(blocks[i].size for i in ids) for ids in live]
    order: list[int] = []
    seen: set[int] = set()
    for s in sorted(range(end + 1), key=lambda s: (-breadth[s], s)):
        for i in sorted(live[s], key=lambda i: (-blocks[i].size, blocks[i].first, i)):
            if i not in seen:
                seen.add(i)
                order.append(i)
    return place_in_order(blocks, order)


def greedy_by_conflict(blocks: Sequence[Block]) -> list[int]:
    # bytes of other blocks live during each block's lifetime, by a sweep
    events = sorted((b.first, i) for i, b in enumerate(blocks))
    conflict = [0] * len(blocks)
    active: list[tuple[int, int]] = []  # (last, index), sorted
    for first, i in events:
        while active and active[0][0] < first:
            active.pop(0)
        for _, j in active:
            conflict[i] += blocks[j].size
            conflict[j] += blocks[i].size
        insort(active, (blocks[i].last, i))
    order = sorted(range(len(blocks)), key=lambda i: (-conflict[i], -blocks[i].size, i))
    return place_in_order(blocks, order)


def greedy_by_lifetime(blocks: Sequence[Block]) -> list[int]:
    order = sorted(
        range(len(blocks)),
        key=lambda i: (-(blocks[i].last - blocks[i].first), -blocks[i].size, blocks[i].first, i),
    )
    return place_in_order(blocks, order)


STRATEGIES: dict[str, Strategy] = {
    "greedy-by-size": greedy_by_size,
    "greedy-by-breadth": greedy_by_breadth,
    "greedy-by-conflict": greedy_by_conflict,
    "greedy-by-lifetime": greedy_by_lifetime,
}

STRATEGY_NAMES = ("auto", *STRATEGIES)


def arena_size(blocks: Sequence[Block], offsets: Sequence[int]) -> int:
    return max((o + b.size for o, b in zip(offsets, blocks)), default=0)


def plan(blocks: Sequence[Block], strategy: str = "auto") -> tuple[str, list[int]]:
    """(strategy used, offsets); `auto` keeps the smallest arena."""
    if strategy != "auto":
        return strategy, STRATEGIES[strategy](blocks)
    best: tuple[str, list[int]] | None = None
    for name, fn in STRATEGIES.items():
        offsets = fn(blocks)
        if best is None or arena_size(blocks, offsets) < arena_size(blocks, best[1]):
            best = (name, offsets)
    assert best is not None
    return best
