"""Contiguous vector runs (gedialects/npu/vector_plan.py `run_plan`): a run
that is not whole repeats becomes one instruction of equal masked repeats
when its length splits into whole blocks on every operand and that costs no
more; the lowering emits it for tile.vec, tile.cast and tile.dup, the tile
cost model counts the same instructions, and the simulator computes the
same values."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.builtin import f32

from gedialects.npu import ops as npu
from gedialects.npu.transforms.insert_sync import insert_sync
from gedialects.npu.vector_plan import Run, run_plan, vector_plan
from gedialects.tile import ops as t
from gedialects.tile.transforms.allocate import allocate_kernel
from gedialects.tile.transforms.tile_cost import tile_work
from lowering.tile_to_npu import lower_program
from target.assembler import assemble
from target.config import load_target
from target.simulator import simulate
from test_vector_ops import _tile_program

CONFIG = load_target("davinci-910")


@pytest.mark.parametrize("n,sizes,want", [
    (112, (4,), [Run(0, 2, 56, (7,))]),  # 64 + 48 as 2 x 56
    (784, (2,), [Run(0, 7, 112, (7,))]),  # a 7 x 7 map's C0 slice in fp16
    (112, (4, 2), [Run(0, 7, 16, (2, 1))]),  # a conversion: whole blocks of the f16 side too
    (256, (4,), [Run(0, 4, 64, (8,))]),  # whole repeats: as before
    (100, (4,), [Run(0, 1, 64, (8,)), Run(64, 1, 36, (8,))]),  # no mask of whole blocks divides 100
    (40, (4,), [Run(0, 1, 40, (8,))]),  # under a repeat
])
def test_run_plan(n, sizes, want):
    assert run_plan(n, sizes, CONFIG) == want


def test_a_long_run_keeps_whole_repeats_when_equal_repeats_cost_more():
    # 4 x 64 + 8 f32: equal repeats of whole blocks would be 11 of 24, dearer than the 2 instructions
    assert run_plan(264, (4,), CONFIG) == [Run(0, 4, 64, (8,)), Run(256, 1, 8, (8,))]


def test_vector_plan_takes_the_run_for_a_contiguous_box():
    assert list(vector_plan([112], [[1], [1], [1]], 4, CONFIG)) == [([0, 0, 0], 2, 56, [1, 1, 1], [7, 7, 7])]


def test_lowered_runs_compute_what_numpy_does_and_the_cost_model_counts_them():
    n = 224  # f16: 128 + 96, or 2 x 112; f32: 3 x 64 + 32, or 4 x 56

    def body(r):
        wide = t.AllocOp("ub", f32, [n])
        one = [[1]] * 3
        return [wide,
                t.CastOp(wide.result, r["a"], n),
                t.VecOp("muls", wide.result, [wide.result], [n], one[:2], 0.5),
                t.CastOp(r["y"], wide.result, n),
                t.VecOp("add", r["y"], [r["y"], r["b"]], [n], one),
                t.DupOp(r["c"], n, 2.0),
                t.VecOp("mul", r["y"], [r["y"], r["c"]], [n], one)]

    prog, kernel = _tile_program(n, body)
    allocate_kernel(kernel, CONFIG)
    work = tile_work(kernel.body.block, CONFIG)
    module = lower_program(prog, CONFIG)
    for k in module.walk():
        if isinstance(k, npu.KernelOp):
            insert_sync(k)
    vector = [op for op in module.walk() if isinstance(op, npu.VectorOp)]
    assert [(op.name, op.int_field("repeat"), op.int_field("mask")) for op in vector] == [
        ("npu.vconv", 7, 32), ("npu.vmuls", 4, 56), ("npu.vconv", 7, 32), ("npu.vadd", 2, 112),
        ("npu.vdup", 2, 112), ("npu.vmul", 2, 112)]
    expected_cycles = sum(CONFIG.vector_cycles(op.name.removeprefix("npu."), op.int_field("repeat")) for op in vector)
    assert work.vector_cycles == expected_cycles
    rng = np.random.default_rng(3)
    ins = {k: rng.standard_normal(n).astype(np.float16) for k in "abc"}
    got = simulate(assemble(module), ins).outputs["y"]
    want = ((ins["a"].astype(np.float32) * np.float32(0.5)).astype(np.float16) + ins["b"]) * np.float16(2.0)
    np.testing.assert_array_equal(got, want)
