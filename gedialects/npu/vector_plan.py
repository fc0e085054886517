"""How a tile.vec over a strided box becomes vector instructions
(`vector_plan`), and a tile.reduce (`reduce_plan`): the one definition
convert-tile-to-npu emits and the tile cost model counts
(gedialects/tile/transforms/tile_cost.py), as gedialects/npu/dma.py's
`plan_copy` is for copies."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from xdsl.utils.exceptions import PassFailedException

from gedialects.npu.dma import merge_dims
from gedialects.npu.isa import BLOCK_BYTES, MAX_REPEAT, MAX_STRIDE, REPEAT_BYTES


def vector_plan(shape, strides, es, config):
    """Instructions for an elementwise op over a strided box: yields
    (per-operand element offsets, repeat, mask, per-operand blk, per-operand rep).
    Dims map onto the 8 blocks of a repeat and onto repeats; which dims go
    where is chosen by a cost estimate (issue + latency per instruction,
    one cycle per repeat); the other dims are unrolled."""
    epb, epr = 32 // es, 256 // es
    k = len(strides)
    dims = merge_dims(shape, strides)
    if len(dims) == 1 and all(s == 1 for s in dims[0][1]):
        for run in run_plan(dims[0][0], (es,), config):
            yield ([run.start] * k, run.repeat, run.mask, [1] * k, [run.rep_blocks[0]] * k)
        return
    n_in, s_in = dims[-1]
    # A source with innermost stride 0 holds each value replicated over one
    # 32-byte block (brcb): its blocks are read with block stride 0.
    if s_in[0] != 1 or any(x not in (0, 1) for x in s_in):
        raise PassFailedException("tile.vec: the innermost dim must be contiguous (or a replicated block) for every operand")
    outer = dims[:-1]
    for d in outer:
        if any(x % epb for x in d[1]):
            raise PassFailedException("tile.vec: outer strides must be whole 32-byte blocks")
    boxes: list[tuple[list[int], list, int | None]] = []
    if n_in % epb:
        if n_in > epr:
            raise PassFailedException("tile.vec: rows longer than a repeat must fill whole blocks")
        boxes.append(([0] * k, outer, n_in))
    else:
        nb = n_in // epb
        main, tail = nb - nb % 8, nb % 8
        if nb <= 8:
            boxes.append(([0] * k, outer + ([(nb, [epb * x for x in s_in])] if nb > 1 else []), None))
        else:
            if main:
                boxes.append(([0] * k, outer + [(main // 8, [8 * epb * x for x in s_in]), (8, [epb * x for x in s_in])], None))
            if tail:
                boxes.append(([main * epb * x for x in s_in], outer + [(tail, [epb * x for x in s_in])], None))
    lat = config.latency_cycles["vector"] + config.latency_cycles["issue"]
    plan = _placed(boxes, epb, lat)
    if n_in == epb and outer and outer[-1][0] > 8:
        # One block per row (a C0 of channels, a per-channel operand read with
        # stride 0 beside it): eight rows may fill a repeat's blocks and the
        # rest of the rows its repeats, as the innermost dim's blocks do above
        # (one instruction for 8 x 255 rows where one per 8 rows was the
        # choice), when that costs less (a pool's strided rows may not).
        (n, st), rows = outer[-1], outer[-1][0] - outer[-1][0] % 8
        split = [([0] * k, outer[:-1] + [(n // 8, [8 * x for x in st]), (8, st)], None)]
        if n % 8:
            split.append(([rows * x for x in st], outer[:-1] + [(n % 8, st)], None))
        plan = min(plan, _placed(split, epb, lat), key=lambda p: sum(cost for _, cost, _, _ in p))
    for (base, cands, inner_mask), _, bi, ri in plan:
        bst = [[x // epb for x in d[1]] for d in cands]
        rest = [i for i in range(len(cands)) if i not in (bi, ri)]
        nb = cands[bi][0] if bi is not None else 1
        nr = cands[ri][0] if ri is not None else 1
        blk = [bst[bi][o] if bi is not None else (1 if s_in[o] else 0) for o in range(k)]
        rep = [bst[ri][o] if ri is not None else 8 for o in range(k)]
        for index in itertools.product(*(range(cands[i][0]) for i in rest)):
            offs = [base[o] + sum(j * cands[i][1][o] for j, i in zip(index, rest)) for o in range(k)]
            for b0 in range(0, nb, 8):
                bcount = min(8, nb - b0)
                for r0 in range(0, nr, MAX_REPEAT):
                    rcount = min(MAX_REPEAT, nr - r0)
                    o2 = list(offs)
                    for o in range(k):
                        if bi is not None:
                            o2[o] += b0 * cands[bi][1][o]
                        if ri is not None:
                            o2[o] += r0 * cands[ri][1][o]
                    mask = inner_mask if inner_mask is not None else bcount * epb
                    yield (o2, rcount, mask, blk, rep)


@dataclass(frozen=True)
class Run:
    """One instruction of a contiguous run (`run_plan`): from element
    `start`, `repeat` repeats of `mask` elements, each repeat `rep_blocks`
    32-byte blocks after the last, per operand element size."""

    start: int
    repeat: int
    mask: int
    rep_blocks: tuple[int, ...]


def run_plan(n: int, sizes: tuple[int, ...], config) -> list[Run]:
    """The instructions for `n` contiguous elements whose operands have
    element sizes `sizes` (a conversion's two, else one): whole repeats of
    256 bytes of the widest, then the tail under a mask -- or, when `n`
    splits into equal repeats of whole blocks on every operand, one
    instruction of those (112 f32 elements: repeat 2 of 56, not a repeat of
    64 and one of 48), when the cost estimate (issue + latency per
    instruction, one cycle per repeat, as `vector_plan`'s) is no higher.
    The one definition for convert-tile-to-npu's contiguous vector ops,
    conversions and duplicates, and for the tile cost model."""
    epr = REPEAT_BYTES // max(sizes)
    default_rep = tuple(epr * size // BLOCK_BYTES for size in sizes)
    runs = []
    for s in range(0, n, epr * MAX_REPEAT):
        c = min(epr * MAX_REPEAT, n - s)
        full, tail = divmod(c, epr)
        if full:
            runs.append(Run(s, full, epr, default_rep))
        if tail:
            runs.append(Run(s + full * epr, 1, tail, default_rep))
    if len(runs) != 2 or n > epr * MAX_REPEAT:
        return runs
    # the widest mask that divides n in whole blocks of every operand, within the repeat and stride fields
    lat = config.latency_cycles["vector"] + config.latency_cycles["issue"]
    for mask in range(epr, 0, -1):
        if n % mask or any(mask * size % BLOCK_BYTES for size in sizes) or n // mask > MAX_REPEAT:
            continue
        if lat + n // mask <= 2 * lat + runs[0].repeat + 1:
            return [Run(0, n // mask, mask, tuple(mask * size // BLOCK_BYTES for size in sizes))]
        break
    return runs


def _placed(boxes, epb: int, lat: int) -> list[tuple[tuple, int, int | None, int | None]]:
    """Per box, (the box, its estimated cost, the dim mapped onto a repeat's
    blocks, the dim mapped onto repeats): the cheapest mapping by issue +
    latency per instruction and one cycle per repeat (a dim whose stride
    exceeds the instruction's field cannot be mapped); the other dims are
    unrolled."""
    placed = []
    for box in boxes:
        _, cands, inner_mask = box
        ok = [all(x // epb <= MAX_STRIDE for x in d[1]) for d in cands]
        best = None
        options = [None] + [i for i in range(len(cands)) if ok[i]]
        for bi in options if inner_mask is None else [None]:
            for ri in options:
                if ri is not None and ri == bi:
                    continue
                unrolled = 1
                for i, d in enumerate(cands):
                    if i not in (bi, ri):
                        unrolled *= d[0]
                nb = cands[bi][0] if bi is not None else 1
                nr = cands[ri][0] if ri is not None else 1
                instrs = unrolled * -(-nb // 8) * -(-nr // MAX_REPEAT)
                cost = instrs * lat + unrolled * -(-nb // 8) * nr
                if best is None or cost < best[0]:
                    best = (cost, bi, ri)
        assert best is not None
        placed.append((box, *best))
    return placed


@dataclass(frozen=True)
class ReduceStep:
    """One instruction of a row reduction (`reduce_plan`): a fold (vadd /
    vmax of `src1` onto `src0`, written to `dst`) or the final vreduce of
    `src0` into `dst`; element offsets into the source (a fold's `dst`) or
    the result (a reduce's `dst`); `rep`: every operand's repeat stride in
    blocks (None: contiguous repeats)."""

    reduce: bool
    dst: int
    src0: int
    src1: int
    repeat: int
    mask: int
    rep: int | None


def reduce_plan(rows: int, cols: int, row_stride: int, es: int) -> list[ReduceStep]:
    """The instructions of a tile.reduce of `rows` rows of `cols` elements
    `row_stride` apart: per group of at most MAX_REPEAT rows, one repeat per
    row, each row's later repeats folded onto its first, then one vreduce;
    a single row too long for that (its stride beyond MAX_STRIDE blocks)
    halved onto itself in contiguous repeats until one repeat is left.
    What convert-tile-to-npu emits and the tile cost model prices."""
    epb, epr = 32 // es, 256 // es
    if row_stride % epb:
        raise PassFailedException("tile.reduce: rows must start on 32-byte blocks")
    steps: list[ReduceStep] = []
    if row_stride // epb > MAX_STRIDE:  # rows too far apart for one repeat per row
        if rows > 1:  # each row's result would land at an unaligned UB address
            raise PassFailedException(
                f"tile.reduce: {rows} rows {row_stride // epb} blocks apart (at most {MAX_STRIDE}): narrow them first "
                "(tile-expand-structured does)"
            )
        width = cols
        while width > epr:
            half = -(-(-(-width // 2)) // epr) * epr  # the first half, whole repeats
            full, tail = divmod(width - half, epr)
            for start, repeat, mask in ((0, full, epr), (full * epr, 1 if tail else 0, tail)):
                for r0 in range(0, repeat, MAX_REPEAT):
                    at = start + r0 * epr
                    steps.append(ReduceStep(False, at, at, at + half, min(MAX_REPEAT, repeat - r0), mask, None))
            width = half
        return steps + [ReduceStep(True, 0, 0, 0, 1, width, None)]
    rep = row_stride // epb
    for r0 in range(0, rows, MAX_REPEAT):
        nr = min(MAX_REPEAT, rows - r0)
        base = r0 * row_stride
        for c in range(1, -(-cols // epr)):
            steps.append(ReduceStep(False, base, base, base + c * epr, nr, min(epr, cols - c * epr), rep))
        steps.append(ReduceStep(True, r0, base, base, nr, min(cols, epr), rep))
    return steps
