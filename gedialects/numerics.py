"""When a result is close enough to its reference: the one place for the
numerical criteria of every comparison of our outputs with a reference
(onnxruntime, the numpy reference interpreter, a float64 computation) --
`ge-run --check`, `benchmarks/light_models_npu.py` and the tests.

A criterion holds element by element:

    |got - want| <= rtol * |want| + norm_rtol * max|want| + atol

(max over the finite elements of `want`). NaN and infinities are strict: a
NaN matches only a NaN, an infinity only the same infinity, and either
against a finite number is a mismatch; shapes must be equal.

must_keep_origin_dtype (fp32 throughout): rtol = 1e-4, norm_rtol = 1e-4,
atol = 1e-5. Why the normwise term: two correct fp32 programs sum in
different orders (the cube's K blocking, numpy's pairwise sums, the kernels
onnxruntime picks for the CPU it runs on), so they round differently. A
length-K sum s = t_1 + ... + t_K (a dot product of conv / matmul / gemm, a
reduction) computed in any order is off by at most gamma_K * sum|t_i|,
gamma_K = K u / (1 - K u), u = 2^-24 ~ 6e-8 (Higham, Accuracy and Stability
of Numerical Algorithms, section 3.1). That worst case needs every rounding
to go the same way; in practice the roundings are independent and the
error is ~ sqrt(K) u times the size of such sums (random-sign terms:
sum|t_i| ~ sqrt(K) * rms(s)); two orders differ by ~ sqrt(2) times that
(tests/unit/test_numerics.py: sequential vs pairwise sums of 10^5 terms
differ by 1e-5 of max|s|). Nothing bounds that
error relative to |s| itself: an output that is a cancellation (|s| <<
sum|t_i|) can miss `rtol * |s| + atol` by chance, on one CPU and not
another (1 of alexnet's 1,000 random-weight logits was 1.16e-5 off on one
machine). Relative to the output's scale max|want| it is small:
sqrt(1e5) * 6e-8 ~ 2e-5, so 1e-4 * max|want| holds with a margin of 5 up to
K ~ 1e5 (the light models' longest sum, vgg19's first fully connected
layer, has K = 25,088: margin 10; measured, their fp32 logits differ from
onnxruntime by 3e-7 to 7e-7 of max|want|, docs/LOWERING.md). A real bug --
a wrong or missing element, a shifted tile, a lost partial sum -- is off by
the size of the values themselves, orders of magnitude beyond 1e-4 of the
largest one, and still fails. The price of order independence: an element
much smaller than the largest is checked only to about 1e-4 * max|want|.

force_fp16 (fp16 storage, fp32 accumulation): normwise only, rtol = 0,
norm_rtol = 5e-3, atol = 1e-3. Every kernel rounds its stored output to
fp16 (u = 2^-11 ~ 4.9e-4), so the error follows the magnitude of the
activations, not each element's: max|got - want| <= 5e-3 * max|want| + 1e-3
(~ 10 u of the largest value; docs/LOWERING.md, Precision modes).

Where a test computes its own expected value with numpy, compare against a
float64 reference with the worst-case bound of the sum instead
(`summation_bound`, `assert_within`): it holds for every summation order.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

FP32_UNIT_ROUNDOFF = 2.0**-24
FP16_UNIT_ROUNDOFF = 2.0**-11


@dataclass(frozen=True)
class Check:
    """The outcome of a comparison. `index` is the element furthest beyond
    its bound (closest to it if all pass), `err` its error, `bound` its
    allowed error; `max_err` the largest error anywhere."""

    ok: bool
    max_err: float
    bound: float
    index: tuple[int, ...]
    err: float
    got: float
    want: float

    def describe(self) -> str:
        return (
            f"max |got - want| {self.max_err:.3g}; at {self.index} |{self.got:.7g} - {self.want:.7g}| "
            f"= {self.err:.3g} {'<=' if self.err <= self.bound else '>'} bound {self.bound:.3g}"
        )


@dataclass(frozen=True)
class Criterion:
    """|got - want| <= rtol * |want| + norm_rtol * max|want| + atol, element by element."""

    rtol: float
    atol: float
    norm_rtol: float = 0.0

    def bounds(self, want: np.ndarray) -> np.ndarray:
        """The allowed error of every element (0 slack beyond atol and the
        normwise term at non-finite `want`: those must match exactly)."""
        a = np.abs(np.asarray(want, dtype=np.float64))
        finite = np.isfinite(a)
        a = np.where(finite, a, 0.0)
        scale = float(a.max(initial=0.0))
        return self.rtol * a + (self.norm_rtol * scale + self.atol)

    def check(self, got, want) -> Check:
        want = np.asarray(want)
        return check_bound(got, want, self.bounds(want))

    def override(self, rtol: float | None = None, atol: float | None = None) -> Criterion:
        """`ge-run --rtol/--atol`: rtol replaces every relative term the
        criterion uses (elementwise and normwise), atol the absolute one."""
        c = self
        if rtol is not None:
            if c.rtol == 0 and c.norm_rtol == 0:
                c = dataclasses.replace(c, rtol=rtol)
            else:
                c = dataclasses.replace(c, rtol=rtol if c.rtol else 0.0, norm_rtol=rtol if c.norm_rtol else 0.0)
        if atol is not None:
            c = dataclasses.replace(c, atol=atol)
        return c

    def __str__(self) -> str:
        terms = []
        if self.rtol:
            terms.append(f"{self.rtol:g}*|want|")
        if self.norm_rtol:
            terms.append(f"{self.norm_rtol:g}*max|want|")
        terms.append(f"{self.atol:g}")
        return "|got - want| <= " + " + ".join(terms)


CRITERIA: dict[str, Criterion] = {
    "must_keep_origin_dtype": Criterion(rtol=1e-4, atol=1e-5, norm_rtol=1e-4),
    "force_fp16": Criterion(rtol=0.0, atol=1e-3, norm_rtol=5e-3),
}


def summation_bound(n: int, abs_sum, u: float = FP32_UNIT_ROUNDOFF) -> np.ndarray:
    """Worst-case error of a length-n sum or dot product computed with unit
    roundoff u in any order: gamma_n * sum|terms|, gamma_n = n u / (1 - n u).
    `abs_sum` is sum|t_i| (for a matrix product |A| @ |B|), in float64."""
    if n * u >= 1:
        raise ValueError(f"summation_bound: n = {n} is too long for u = {u}")
    return (n * u / (1 - n * u)) * np.asarray(abs_sum, dtype=np.float64)


def check_bound(got, want, bound) -> Check:
    """|got - want| <= bound element by element (bound broadcasts to want's
    shape); NaN and infinities strict (see the module docstring)."""
    g = np.asarray(got, dtype=np.float64)
    w = np.asarray(want, dtype=np.float64)
    if g.shape != w.shape:
        raise ValueError(f"shape {g.shape} vs reference {w.shape}")
    # a non-finite reference matches only exactly
    b = np.where(np.isfinite(w), np.broadcast_to(np.asarray(bound, dtype=np.float64), w.shape), 0.0)
    if w.size == 0:
        return Check(True, 0.0, 0.0, (), 0.0, 0.0, 0.0)
    with np.errstate(invalid="ignore"):
        err = np.abs(g - w)
    same = (g == w) | (np.isnan(g) & np.isnan(w))  # equal infinities, NaN at NaN
    err = np.where(same, 0.0, np.where(np.isnan(err), np.inf, err))
    with np.errstate(invalid="ignore"):
        excess = err - b
    excess = np.where(np.isnan(excess), np.inf, excess)
    i = np.unravel_index(int(np.argmax(excess)), w.shape)
    return Check(
        ok=bool(np.all(err <= b)),
        max_err=float(err.max()),
        bound=float(b[i]),
        index=tuple(int(k) for k in i),
        err=float(err[i]),
        got=float(g[i]),
        want=float(w[i]),
    )


def criterion(spec: str | Criterion) -> Criterion:
    """A precision mode's criterion, or the criterion given."""
    if isinstance(spec, Criterion):
        return spec
    if spec not in CRITERIA:
        raise KeyError(f"no numerical criterion for precision mode {spec!r} (have {', '.join(CRITERIA)})")
    return CRITERIA[spec]


def assert_close(got, want, precision_or_criterion: str | Criterion, err_msg: str = "") -> None:
    """For tests: got matches want under a precision mode's criterion."""
    c = criterion(precision_or_criterion)
    _assert(got, want, c.bounds(np.asarray(want)), str(c), err_msg)


def assert_within(got, want, bound, err_msg: str = "") -> None:
    """For tests: |got - want| <= bound element by element (e.g. want a
    float64 reference and bound a `summation_bound`)."""
    _assert(got, want, bound, "explicit bound", err_msg)


def _assert(got, want, bound, what: str, err_msg: str) -> None:
    g, w = np.asarray(got), np.asarray(want)
    prefix = f"{err_msg}: " if err_msg else ""
    if g.shape != w.shape:
        raise AssertionError(f"{prefix}shape {g.shape} vs reference {w.shape}")
    result = check_bound(g, w, bound)
    if not result.ok:
        raise AssertionError(f"{prefix}not close ({what}): {result.describe()}")
