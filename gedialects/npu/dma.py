"""How a strided box copy becomes npu.dma instructions: the one definition,
used by convert-tile-to-npu (which emits them) and by the tile-level cost
model (which counts them: every DMA pays its fixed latency).

An `npu.dma` moves `nburst` bursts of `len` bytes with a gap after each
on either side. A box copy (shape, per-side element strides, innermost
contiguous) is planned as: dims merged where contiguous for both sides;
the innermost run is the burst length; the outer dim with the most
elements whose strides leave room for a burst becomes the bursts of one
instruction (a box copy's order is free); every other outer dim is a loop
of instructions. A run that is not whole 32-byte blocks on the on-chip side
of a GM copy is a padded DMA (its on-chip side takes whole blocks).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from collections.abc import Sequence

from gedialects.npu.isa import BLOCK_BYTES, MAX_NBURST, PAD_PATHS, MemSpace, padded_burst

Dim = tuple[int, list[int]]
"""(count, per-operand element strides)."""


def merge_dims(shape: Sequence[int], strides: Sequence[Sequence[int]]) -> list[Dim]:
    """Drop unit dims and merge dims that are contiguous for every operand."""
    dims = [(n, [s[i] for s in strides]) for i, n in enumerate(shape) if n != 1]
    if not dims:
        return [(1, [1] * len(strides))]
    out = [dims[0]]
    for n, st in dims[1:]:
        pn, pst = out[-1]
        if all(a == b * n for a, b in zip(pst, st)):
            out[-1] = (pn * n, st)
        else:
            out.append((n, st))
    return out


@dataclass(frozen=True)
class CopyPlan:
    outer: list[Dim]
    """Dims looped over, one instruction (or one per MAX_NBURST bursts) each."""
    burst: tuple[int, int, int, list[int]] | None
    """(bursts, dst gap, src gap in bytes, the dim's element strides), or None: one burst per instruction."""
    src_len: int
    """Bytes per burst on the source side (the destination's for a cast differ)."""
    pad: bool
    overlap: Dim | None = None
    """A padded copy whose bursts would overlap on chip (the dim), else None."""

    @property
    def instructions(self) -> int:
        loops = math.prod(d[0] for d in self.outer)
        return loops * (1 if self.burst is None else -(-self.burst[0] // MAX_NBURST))


def plan_copy(shape: Sequence[int], dst_strides: Sequence[int], src_strides: Sequence[int],
              dst_es: int, src_es: int, dst_space: str, src_space: str) -> CopyPlan:
    """The instructions of one box copy (element sizes in bytes; spaces as
    MemSpace values: "gm", "ub", "l1", ...)."""
    dims = merge_dims(shape, [dst_strides, src_strides])
    if dims[-1][1] != [1, 1]:  # the innermost dim had one element: a run of one, the rest are bursts
        dims.append((1, [1, 1]))
    n_in = dims[-1][0]
    slen, dlen = n_in * src_es, n_in * dst_es
    chip_len = dlen if dst_space != "gm" else slen
    pad = (MemSpace(src_space), MemSpace(dst_space)) in PAD_PATHS and chip_len % BLOCK_BYTES != 0
    s_ext = padded_burst(slen) if pad and src_space != "gm" else slen
    d_ext = padded_burst(dlen) if pad and dst_space != "gm" else dlen
    outer = dims[:-1]
    usable = [d for d in outer if d[1][0] * dst_es >= d_ext and d[1][1] * src_es >= s_ext]
    if usable:
        cand = max(usable, key=lambda d: d[0])
        burst = (cand[0], cand[1][0] * dst_es - d_ext, cand[1][1] * src_es - s_ext, cand[1])
        return CopyPlan([d for d in outer if d is not cand], burst, slen, pad)
    overlap = None
    if outer and pad:
        last = outer[-1]
        chip_gap = last[1][0] * dst_es - d_ext if dst_space != "gm" else last[1][1] * src_es - s_ext
        overlap = last if chip_gap < 0 else None
    return CopyPlan(outer, None, slen, pad, overlap)
