"""Hand-written kernels on the simulator: numbers, timing, profile, trace."""

from __future__ import annotations

import json

import numpy as np
import pytest

from gedialects.npu import examples
from gedialects.numerics import assert_within, summation_bound
from target.assembler import assemble
from target.profile import format_profile, write_chrome_trace
from target.simulator import simulate

RNG = np.random.default_rng(1234)


def _run(module, inputs, **kw):
    return simulate(assemble(module), inputs, **kw)


def _assert_matmul(c, a, b):
    """c = a @ b in fp32 in any summation order: against the float64 product,
    within the worst-case bound of a length-k fp32 dot product."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    assert_within(c, a64 @ b64, summation_bound(a.shape[1], np.abs(a64) @ np.abs(b64)))


def _add_inputs(n):
    x = RNG.standard_normal(n).astype(np.float16)
    y = RNG.standard_normal(n).astype(np.float16)
    return x, y


@pytest.mark.parametrize("double_buffer", [True, False])
def test_vector_add_bigger_than_ub(double_buffer):
    n = 1 << 18  # 512 KB per tensor; UB holds 256 KB
    x, y = _add_inputs(n)
    res = _run(examples.vector_add(n, double_buffer=double_buffer), {"x": x, "y": y})
    np.testing.assert_array_equal(res.outputs["z"], x + y)
    assert res.profile.kernels[0].bytes == {"gm_ub": 2 * n * 2, "ub_gm": n * 2}


def test_double_buffering_is_faster_and_overlaps_mte2_with_v():
    n = 1 << 18
    x, y = _add_inputs(n)
    single = _run(
        examples.vector_add(n, double_buffer=False), {"x": x, "y": y}, trace=True
    )
    double = _run(
        examples.vector_add(n, double_buffer=True), {"x": x, "y": y}, trace=True
    )
    assert double.profile.total_cycles < single.profile.total_cycles

    def overlaps(profile):
        events = profile.kernels[0].events
        mte2 = [
            (s, s + d) for _, p, s, d, name, _ in events if p == 4 and name == "npu.dma"
        ]
        vec = [
            (s, s + d)
            for _, p, s, d, name, _ in events
            if p == 1 and name == "npu.vadd"
        ]
        return sum(1 for a, b in vec if any(c < b and a < d for c, d in mte2))

    # Every vadd but the last runs while MTE2 is loading the next tile.
    tiles = n // 16384
    assert overlaps(double.profile) >= tiles - 1
    assert overlaps(single.profile) == 0


def test_multi_core_vector_add_uses_the_block_index():
    n = 1 << 18
    x, y = _add_inputs(n)
    one = _run(examples.vector_add(n, block_dim=1), {"x": x, "y": y})
    four = _run(examples.vector_add(n, block_dim=4), {"x": x, "y": y})
    np.testing.assert_array_equal(four.outputs["z"], x + y)
    k = four.profile.kernels[0]
    assert (k.block_dim, k.cores) == (4, 4)
    assert four.profile.total_cycles < one.profile.total_cycles / 3


@pytest.mark.parametrize("block_dim", [1, 2, 4])
def test_tiled_matmul_accumulates_over_k(block_dim):
    a = RNG.standard_normal((64, 128)).astype(np.float16)
    b = RNG.standard_normal((128, 64)).astype(np.float16)
    res = _run(examples.matmul(block_dim=block_dim), {"a": a, "b": b})
    _assert_matmul(res.outputs["c"], a, b)
    k = res.profile.kernels[0]
    assert k.busy["cube"] > 0 and k.ratio["mte2"] > 0
    # each of the 4 output tiles loads a 32x128 panel of A and 128x32 of B
    assert k.bytes["gm_l1"] == 4 * (32 * 128 + 128 * 32) * 2


def test_non_square_matmul_tiles():
    a = RNG.standard_normal((32, 96)).astype(np.float16)
    b = RNG.standard_normal((96, 48)).astype(np.float16)
    res = _run(
        examples.matmul(32, 48, 96, tm=16, tn=48, tk=32, block_dim=2), {"a": a, "b": b}
    )
    _assert_matmul(res.outputs["c"], a, b)


@pytest.mark.parametrize("cols", [64, 256, 512])
def test_row_reduction(cols):
    x = RNG.standard_normal((64, cols)).astype(np.float32)
    res = _run(examples.row_sum(64, cols), {"x": x})
    x64 = x.astype(np.float64)
    assert_within(res.outputs["out"], x64.sum(axis=1), summation_bound(cols, np.abs(x64).sum(axis=1)))


def test_profile_ratios_and_memory_bound():
    x, y = _add_inputs(1 << 16)
    res = _run(examples.vector_add(1 << 16, tile=8192), {"x": x, "y": y})
    k = res.profile.kernels[0]
    assert set(k.ratio) == {"scalar", "vector", "cube", "mte1", "mte2", "mte3"}
    assert all(0.0 <= r <= 1.0 for r in k.ratio.values())
    assert k.ratio["cube"] == 0.0
    assert k.memory_bound == pytest.approx(k.ratio["mte2"] / k.ratio["vector"])
    assert k.memory_bound > 1  # an add is bound by loading its operands
    table = format_profile(res.profile)
    assert "bound" in table and "gm_ub" in table
    row = next(line for line in table.splitlines() if line.startswith(k.name))
    assert row.split()[-1] == "memory"  # GM loads take longer than the adds


def test_chrome_trace_has_a_track_per_core_and_pipe(tmp_path):
    a = RNG.standard_normal((64, 128)).astype(np.float16)
    b = RNG.standard_normal((128, 64)).astype(np.float16)
    res = _run(examples.matmul(block_dim=4), {"a": a, "b": b}, trace=True)
    path = tmp_path / "trace.json"
    write_chrome_trace(res.profile, path)
    data = json.loads(path.read_text())
    events = data["traceEvents"]
    names = {
        (e["pid"], e["args"]["name"]) for e in events if e.get("name") == "process_name"
    }
    assert {(c + 1, f"core {c}") for c in range(4)} <= names
    threads = {e["args"]["name"] for e in events if e.get("name") == "thread_name"}
    assert threads == {"scalar", "vector", "cube", "mte1", "mte2", "mte3"}
    spans = [e for e in events if e["ph"] == "X" and e["pid"] > 0]
    assert {e["name"] for e in spans} >= {"npu.mmad", "npu.load_2d", "npu.dma"}
    assert all(e["dur"] > 0 and e["ts"] >= 0 for e in spans)


def test_split_target_uses_its_own_core_counts():
    x, y = _add_inputs(1 << 16)
    res = simulate(
        assemble(examples.vector_add(1 << 16, tile=512, block_dim=64)),
        {"x": x, "y": y},
        "davinci-910b",
    )
    assert res.profile.kernels[0].cores == 48  # a vector-only kernel on AIV cores
    a = RNG.standard_normal((64, 128)).astype(np.float16)
    b = RNG.standard_normal((128, 64)).astype(np.float16)
    mm = simulate(
        assemble(examples.matmul(block_dim=4)), {"a": a, "b": b}, "davinci-910b"
    )
    assert mm.profile.clock_mhz == 1850
