"""gedialects/npu/dma.py: how a box copy becomes npu.dma instructions (the
plan convert-tile-to-npu emits and the tile cost model counts). Property:
the plan moves exactly the box's elements, each from its source to its
destination; the bursts run along the longest dim that leaves room for
them; padded copies whose bursts would overlap on chip are flagged."""

from __future__ import annotations

import itertools
import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as hs

from gedialects.npu.dma import merge_dims, plan_copy
from gedialects.npu.isa import MAX_NBURST
from gedialects.tile.structured import pack_fractal_nz


def _box_pairs(shape, dst_strides, src_strides):
    return {(sum(i * s for i, s in zip(idx, dst_strides)), sum(i * s for i, s in zip(idx, src_strides)))
            for idx in itertools.product(*(range(n) for n in shape))}


def _plan_pairs(plan, es):
    """(dst, src) element offsets the plan's instructions move."""
    run = plan.src_len // es
    pairs = set()
    for idx in itertools.product(*(range(d[0]) for d in plan.outer)):
        d0 = sum(i * d[1][0] for i, d in zip(idx, plan.outer))
        s0 = sum(i * d[1][1] for i, d in zip(idx, plan.outer))
        bursts = [(0, 0)] if plan.burst is None else [
            (b * plan.burst[3][0], b * plan.burst[3][1]) for b in range(plan.burst[0])]
        for bd, bs in bursts:
            pairs.update((d0 + bd + e, s0 + bs + e) for e in range(run))
    return pairs


@settings(max_examples=60, deadline=None)
@given(hs.lists(hs.integers(1, 5), min_size=1, max_size=3), hs.integers(1, 3), hs.randoms(use_true_random=False))
def test_the_plan_moves_exactly_the_box(outer, run_blocks, rnd):
    """Random boxes whose innermost run is whole blocks, laid out row-major
    on each side in two different dim orders: same elements, same pairing."""
    run = 16 * run_blocks  # fp16 elements: whole 32-byte blocks
    shape = [*outer, run]
    order_src = list(range(len(outer)))
    order_dst = order_src[:]
    rnd.shuffle(order_dst)

    def strides(order):
        st, step = [0] * len(outer), run
        for k in reversed(order):
            st[k] = step
            step *= outer[k]
        return [*st, 1]

    dst, src = strides(order_dst), strides(order_src)
    plan = plan_copy(shape, dst, src, 2, 2, "l1", "gm")
    assert plan.overlap is None and not plan.pad
    assert _plan_pairs(plan, 2) == _box_pairs(shape, dst, src)


def test_bursts_run_along_the_longest_dim():
    """A's rows into L1 column blocks (NZ): 64 rows x 48 blocks of 16 fp16;
    each column block's rows are 32 bytes apart in L1, each row's blocks 32
    bytes apart in GM: 48 instructions of 64 bursts, not 64 of 48."""
    plan = plan_copy([48, 64, 16], [64 * 16, 16, 1], [16, 768, 1], 2, 2, "l1", "gm")
    assert plan.burst is not None and plan.burst[0] == 64 and plan.instructions == 48
    assert plan.burst[1] == 0 and plan.burst[2] == 768 * 2 - 32  # dst contiguous, src skips the rest of a row


def test_more_bursts_than_one_instruction_holds():
    plan = plan_copy([2 * MAX_NBURST + 1, 16], [32, 1], [16, 1], 2, 2, "l1", "gm")
    assert plan.instructions == 3


def test_a_padded_copy_whose_bursts_overlap_on_chip_is_flagged():
    """Rows of 5 fp16 (10 bytes, padded to 32 on chip) 10 bytes apart in UB."""
    plan = plan_copy([4, 5], [5, 1], [8, 1], 2, 2, "ub", "gm")
    assert plan.pad and plan.burst is None and plan.overlap is not None


def test_merge_dims_drops_units_and_merges_contiguous_dims():
    assert merge_dims([2, 1, 3, 4], [[12, 7, 4, 1], [12, 9, 4, 1]]) == [(24, [1, 1])]
    assert merge_dims([2, 3], [[8, 1], [3, 1]]) == [(2, [8, 3]), (3, [1, 1])]


def test_fractal_nz_packing():
    """[.., R, C] -> [.., ceil(C / c0), round_up(R, 16), c0], zero padding;
    element (r, c) at [c // c0, r, c % c0]."""
    a = np.arange(2 * 20 * 13, dtype=np.float32).reshape(2, 20, 13) + 1
    p = pack_fractal_nz(a, 8)
    assert p.shape == (2, 2, 32, 8)
    r, c = np.meshgrid(np.arange(20), np.arange(13), indexing="ij")
    np.testing.assert_array_equal(p[:, c // 8, r, c % 8], a)
    assert p.sum() == a.sum()  # the padding is zeros
    assert math.prod(p.shape) == 2 * 2 * 32 * 8
