"""Race detection: vector clocks over the pipes of one core, and interval
overlap across blocks and launches.

Within a block, every instruction on pipe p advances p's own clock entry; a
set_flag snapshots the source pipe's clock into the flag, a wait_flag joins it
into the destination pipe's clock, `pipe_barrier all` joins all clocks. An
access by pipe p conflicts with an earlier access by pipe q (same space,
overlapping bytes, one of them a write) unless p's clock has caught up with
the epoch of q's access, i.e. a chain of flags/barriers orders them.

An access is (lo, hi, pattern): the byte envelope [lo, hi) and, when the access
does not cover its envelope densely, a pattern (base, n_outer, outer_stride,
n_inner, inner_stride, unit) listing the chunks it really touches, so that two
interleaved strided tiles are not reported as a race.
"""

from __future__ import annotations

import numpy as np

from gedialects.npu.isa import PIPE_INDEX, PIPES, SPACES, Pipe
from target.errors import RaceError

NPIPES = len(PIPES)
PIPE_NAMES = tuple(p.value for p in PIPES)
SPACE_NAMES = tuple(s.value for s in SPACES)

Pattern = tuple[int, int, int, int, int, int]
MAX_RECORDS = 4096  # unsynchronised access records kept per (space, pipe)


def chunk_starts(lo: int, hi: int, pat: Pattern | None) -> tuple[np.ndarray, int]:
    """Sorted start offsets of the chunks an access touches, and chunk length."""
    if pat is None:
        return np.array([lo], dtype=np.int64), hi - lo
    base, n_out, s_out, n_in, s_in, unit = pat
    starts = (
        base
        + s_out * np.arange(n_out, dtype=np.int64)[:, None]
        + s_in * np.arange(n_in, dtype=np.int64)[None, :]
    ).ravel()
    starts.sort()
    return starts, unit


def chunks_overlap(a: tuple[np.ndarray, int], b: tuple[np.ndarray, int]) -> bool:
    sa, ua = a
    sb, ub = b
    # For each chunk of a, the first chunk of b that ends after it starts.
    idx = np.searchsorted(sb, sa - ub, side="right")
    ok = idx < len(sb)
    return bool(np.any(sb[idx[ok]] < sa[ok] + ua))


def patterns_overlap(lo1, hi1, pat1, lo2, hi2, pat2) -> bool:
    if pat1 is None and pat2 is None:
        return True  # envelopes overlap and both are dense
    return chunks_overlap(chunk_starts(lo1, hi1, pat1), chunk_starts(lo2, hi2, pat2))


class BlockRaces:
    """Vector clocks and live access records of one block."""

    __slots__ = (
        "block",
        "describe",
        "found",
        "gm",
        "kernel",
        "limit",
        "live",
        "mode",
        "space_pipes",
        "vc",
    )

    def __init__(self, space_pipes, describe, mode: str, block: int, kernel: str = "?"):
        self.vc = [[0] * NPIPES for _ in range(NPIPES)]
        # live[space][pipe] = list of (lo, hi, write, epoch, pattern, pc)
        self.live = [[[] for _ in range(NPIPES)] for _ in SPACES]
        self.limit = [[16] * NPIPES for _ in SPACES]
        self.space_pipes = space_pipes
        self.describe = describe
        self.mode = mode
        self.found: list[str] = []
        self.gm: list[tuple] = []  # (lo, hi, pattern, write, pc) of GM accesses
        self.block = block
        self.kernel = kernel

    # -- clocks -------------------------------------------------------------

    def tick(self, p: int) -> None:
        self.vc[p][p] += 1

    def snapshot(self, p: int) -> list[int]:
        return self.vc[p][:]

    def join(self, p: int, snap: list[int]) -> None:
        mine = self.vc[p]
        for i in range(NPIPES):
            mine[i] = max(mine[i], snap[i])

    def join_all(self, snap: list[int] | None = None) -> None:
        top = [max(col) for col in zip(*self.vc)]
        if snap is not None:
            top = [max(a, b) for a, b in zip(top, snap)]
        for p in range(NPIPES):
            self.vc[p] = top[:]

    # -- accesses -----------------------------------------------------------

    def access(
        self, space: int, lo: int, hi: int, write: bool, pat, p: int, pc: int
    ) -> None:
        known = self.vc[p]
        lists = self.live[space]
        for q in self.space_pipes[space]:
            if q == p:
                continue
            seen = known[q]
            for rec in lists[q]:
                if (
                    rec[3] > seen
                    and rec[0] < hi
                    and lo < rec[1]
                    and (write or rec[2])
                    and patterns_overlap(lo, hi, pat, rec[0], rec[1], rec[4])
                ):
                    self.report(space, lo, hi, write, p, pc, rec, q)
        mine = lists[p]
        mine.append((lo, hi, write, known[p], pat, pc))
        if len(mine) > self.limit[space][p]:
            self.prune(space, p)
        if space == 0:
            self.gm.append((lo, hi, pat, write, pc))

    def scalar_read(self, space: int, lo: int, hi: int, pc: int) -> None:
        """A read by the scalar unit (npu.load_index): checked against earlier
        writes of the other pipes, not recorded, since everything the scalar
        unit issues after it is ordered after it by issue."""
        s = PIPE_INDEX[Pipe.S]
        known = self.vc[s]
        for q in self.space_pipes[space]:
            if q == s:
                continue
            for rec in self.live[space][q]:
                if rec[3] > known[q] and rec[2] and rec[0] < hi and lo < rec[1] and (
                    patterns_overlap(lo, hi, None, rec[0], rec[1], rec[4])
                ):
                    self.report(space, lo, hi, False, s, pc, rec, q)

    def prune(self, space: int, p: int) -> None:
        """Forget records every other pipe touching this space is ordered after.
        Records of pipes that never synchronise pile up; past MAX_RECORDS the
        oldest half is forgotten (the one place the detector can miss a race)."""
        others = [q for q in self.space_pipes[space] if q != p]
        horizon = min((self.vc[q][p] for q in others), default=1 << 62)
        kept = [r for r in self.live[space][p] if r[3] > horizon]
        if len(kept) > MAX_RECORDS:
            kept = kept[len(kept) // 2 :]
        self.live[space][p] = kept
        # Prune again only after the list has doubled: amortised O(1).
        self.limit[space][p] = max(16, 2 * len(kept))

    def report(self, space, lo, hi, write, p, pc, rec, q) -> None:
        a = max(lo, rec[0])
        b = min(hi, rec[1])
        msg = (
            f"data race in kernel '{self.kernel}' block {self.block} on {SPACE_NAMES[space]} bytes [{a}, {b}): "
            f"{self.describe(pc)} on {PIPE_NAMES[p]} {'writes' if write else 'reads'}, "
            f"{self.describe(rec[5])} on {PIPE_NAMES[q]} "
            f"{'writes' if rec[2] else 'reads'}; no flag or barrier orders them"
        )
        if self.mode == "error":
            raise RaceError(msg)
        self.found.append(msg)


def gm_intervals(records: list[tuple]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Expand GM access records into (starts, ends, is_write) chunk arrays."""
    starts, ends, writes = [], [], []
    for lo, hi, pat, write, _pc in records:
        s, unit = chunk_starts(lo, hi, pat)
        starts.append(s)
        ends.append(s + unit)
        writes.append(np.full(len(s), write, dtype=bool))
    if not starts:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0, dtype=bool)
    return np.concatenate(starts), np.concatenate(ends), np.concatenate(writes)


def merge(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Union of intervals, as sorted disjoint (starts, ends)."""
    if len(starts) == 0:
        return starts, ends
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], ends[order]
    run_end = np.maximum.accumulate(e)
    new = np.ones(len(s), dtype=bool)
    new[1:] = s[1:] > run_end[:-1]
    idx = np.flatnonzero(new)
    return s[idx], np.maximum.reduceat(e, idx)


def first_overlap(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]):
    """First [lo, hi) where two disjoint sorted interval sets overlap, or None."""
    sa, ea = a
    sb, eb = b
    if len(sa) == 0 or len(sb) == 0:
        return None
    idx = np.searchsorted(eb, sa, side="right")  # first b ending after a starts
    ok = idx < len(sb)
    hit = np.flatnonzero(ok & (sb[np.minimum(idx, len(sb) - 1)] < ea))
    if len(hit) == 0:
        return None
    i = hit[0]
    j = idx[i]
    return int(max(sa[i], sb[j])), int(min(ea[i], eb[j]))


class GmFootprint:
    """What one block (or launch) read and wrote in GM, as merged intervals."""

    def __init__(self, records: list[tuple]):
        s, e, w = gm_intervals(records)
        self.writes = merge(s[w], e[w])
        self.reads = merge(s[~w], e[~w])

    @staticmethod
    def union(parts: list[GmFootprint]) -> GmFootprint:
        fp = GmFootprint([])
        if parts:
            fp.writes = merge(
                np.concatenate([p.writes[0] for p in parts]),
                np.concatenate([p.writes[1] for p in parts]),
            )
            fp.reads = merge(
                np.concatenate([p.reads[0] for p in parts]),
                np.concatenate([p.reads[1] for p in parts]),
            )
        return fp

    def conflict(self, other: GmFootprint):
        """A byte range where one side writes what the other touches."""
        return (
            first_overlap(self.writes, other.writes)
            or first_overlap(self.writes, other.reads)
            or first_overlap(self.reads, other.writes)
        )


def cross_conflict(footprints: list[GmFootprint]):
    """Find bytes one part writes and another part touches, for parts that run
    unordered (the blocks of a launch). Returns (lo, hi, part_a, part_b) or None.
    """
    ws, we, wb = [], [], []
    for i, fp in enumerate(footprints):
        ws.append(fp.writes[0])
        we.append(fp.writes[1])
        wb.append(np.full(len(fp.writes[0]), i, dtype=np.int64))
    if not ws:
        return None
    s, e, b = np.concatenate(ws), np.concatenate(we), np.concatenate(wb)
    order = np.argsort(s, kind="stable")
    s, e, b = s[order].tolist(), e[order].tolist(), b[order].tolist()
    # Write/write: sweep keeping the furthest end and the furthest end of any
    # other part (each part's own intervals are already disjoint).
    top_end, top_part, second_end = -1, -1, -1
    for si, ei, bi in zip(s, e, b):
        other_end = top_end if top_part != bi else second_end
        if other_end > si:
            other = top_part if top_part != bi else _part_ending_after(s, e, b, si, bi)
            return si, min(ei, other_end), other, bi
        if ei > top_end:
            if top_part != bi:
                second_end = top_end
            top_end, top_part = ei, bi
        elif bi != top_part and ei > second_end:
            second_end = ei
    # Reads against the (now globally disjoint) writes of other parts.
    s_arr, e_arr, b_arr = np.array(s), np.array(e), np.array(b)
    for i, fp in enumerate(footprints):
        rs, re_ = fp.reads
        if len(rs) == 0:
            continue
        first = np.searchsorted(e_arr, rs, side="right")
        last = np.searchsorted(s_arr, re_, side="left")
        for k in np.flatnonzero(last > first):
            for j in range(first[k], last[k]):
                if b_arr[j] != i:
                    lo = max(int(rs[k]), int(s_arr[j]))
                    return lo, min(int(re_[k]), int(e_arr[j])), int(b_arr[j]), i
    return None


def _part_ending_after(s, e, b, start, part):
    for sj, ej, bj in zip(s, e, b):
        if sj >= start:
            break
        if bj != part and ej > start:
            return bj
    return -1
