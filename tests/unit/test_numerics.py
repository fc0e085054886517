"""gedialects/numerics.py: the fp32 criterion passes a summation-order
difference and fails a real error; NaN/inf and shapes are strict."""

from __future__ import annotations

import numpy as np
import pytest

from gedialects.numerics import (
    CRITERIA,
    Criterion,
    assert_close,
    assert_within,
    summation_bound,
)

FP32 = CRITERIA["must_keep_origin_dtype"]


def _sums():
    """64 sums of 10^5 random-sign float32 values each (like a layer's dot
    products: |sum| ~ 316, some near cancellation), in pairwise (np.sum)
    and sequential (cumsum) order."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 100_000)).astype(np.float32)
    pairwise = np.sum(x, axis=1, dtype=np.float32)
    sequential = np.cumsum(x, axis=1, dtype=np.float32)[:, -1]
    return x, pairwise, sequential


def test_summation_order_passes_fp32_criterion():
    x, pairwise, sequential = _sums()
    assert not np.array_equal(pairwise, sequential)  # the orders do round differently
    # elementwise alone fails where a sum cancels; the normwise term absorbs it
    assert not Criterion(rtol=1e-4, atol=1e-5).check(sequential, pairwise).ok
    result = FP32.check(sequential, pairwise)
    assert result.ok and result.max_err < 0.2 * result.bound
    assert_close(sequential, pairwise, "must_keep_origin_dtype")
    # both are within the worst-case bound of the exact (float64) sums
    exact = x.astype(np.float64).sum(axis=1)
    bound = summation_bound(x.shape[1], np.abs(x.astype(np.float64)).sum(axis=1))
    assert_within(pairwise, exact, bound)
    assert_within(sequential, exact, bound)


def test_perturbed_element_fails_fp32_criterion():
    _, pairwise, _ = _sums()
    for i in (int(np.argmax(np.abs(pairwise))), 3):
        bad = pairwise.copy()
        # 1e-3 relative to the element for the largest, to the output's scale for another
        bad[i] += np.float32(1e-3 * np.abs(pairwise).max())
        result = FP32.check(bad, pairwise)
        assert not result.ok and result.index == (i,)
        assert result.err > 4 * result.bound
        with pytest.raises(AssertionError, match="not close"):
            assert_close(bad, pairwise, "must_keep_origin_dtype")
    # a shifted tile fails by orders of magnitude
    result = FP32.check(np.roll(pairwise, 1), pairwise)
    assert not result.ok and result.err > 100 * result.bound


def test_fp16_criterion_is_normwise():
    want = np.array([100.0, 0.01], np.float32)
    assert CRITERIA["force_fp16"] == Criterion(rtol=0.0, atol=1e-3, norm_rtol=5e-3)
    assert_close(want + [0.4, 0.4], want, "force_fp16")  # 0.4 <= 5e-3 * 100 + 1e-3
    with pytest.raises(AssertionError):
        assert_close(want + [0.0, 0.6], want, "force_fp16")


def test_nan_inf_and_shapes_are_strict():
    want = np.array([1.0, np.inf, -np.inf, np.nan], np.float32)
    assert FP32.check(want.copy(), want).ok  # equal infs, NaN at NaN
    for i, v in [(0, np.nan), (1, 1e30), (1, -np.inf), (3, 1.0), (0, np.inf)]:
        bad = want.copy()
        bad[i] = v
        assert not FP32.check(bad, want).ok, (i, v)
    huge = np.array([1.0, 2.0], np.float32)
    assert not FP32.check(np.array([1.0, np.inf], np.float32), huge).ok
    with pytest.raises(AssertionError, match="shape"):
        assert_close(np.zeros((2, 3)), np.zeros((3, 2)), FP32)
    assert FP32.check(np.zeros((0, 4)), np.zeros((0, 4))).ok


def test_override_replaces_the_terms_in_use():
    assert FP32.override(rtol=0, atol=0) == Criterion(0.0, 0.0, 0.0)
    assert FP32.override(rtol=1e-3) == Criterion(1e-3, 1e-5, 1e-3)
    assert CRITERIA["force_fp16"].override(rtol=1e-2) == Criterion(0.0, 1e-3, 1e-2)
