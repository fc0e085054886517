"""The ONNX backend conformance suite (`onnx.backend.test`, node tests)
through the npu backend: every test compiled for the simulated NPU
(must_keep_origin_dtype, the AI-CPU fallback on) and simulated with races an
error, through `GeNpuBackend`.

The selection and the frontend's expected failures are those of the
reference run (tests/unit/test_onnx_backend.py, imported, not repeated).
Tests that import but cannot be compiled for the NPU are listed once, in
NPU_EXPECTED_FAILURES (name regex -> reason), as strict xfails that must
fail with a clean PassFailedException from the lowering.

The comparison is the suite's own (`assert_similar_outputs`, each test's
rtol 1e-3 / atol 1e-7): must_keep_origin_dtype computes in the model's own
types (fp32 on the AI core, the reference kernels on the AI CPU), so the
reference criterion applies unchanged.

The node tests record how many AI-CPU tasks each run used;
`test_node_tests_that_run_entirely_on_the_ai_core` counts the passing tests
that used none.
"""

from __future__ import annotations

import functools
import re
import unittest
import warnings

import numpy as np
import onnx.backend.test
import pytest
from onnx import TensorProto, helper
from test_onnx_backend import SELECTED, expected_failure
from xdsl.utils.exceptions import PassFailedException

from gedialects.frontend.errors import FrontendError
from gedialects.tools.onnx_backend import GeBackendRep, GeNpuBackend

DATA_DEPENDENT_SHAPE = (
    "a Range whose extent is computed from graph inputs has a data-dependent result shape; "
    "the npu program's GM slots have static shapes (the reference interpreter sizes them at run time)"
)

NPU_EXPECTED_FAILURES: dict[str, str] = {
    r"^test_range_(float|float16|int32)_type_(positive|negative)_delta$": DATA_DEPENDENT_SHAPE,
    r"^test_(blackman|hamming|hann)window(_symmetric)?_expanded$": DATA_DEPENDENT_SHAPE,
}
"""Node tests that import but do not compile for the NPU, each with its reason."""

AI_CORE_ONLY = 538
"""Passing node tests whose program has no AI-CPU task (README, "ONNX backend conformance")."""

# Some tests reach IEEE edge cases on purpose (log(0) of an empty ReduceLogSum).
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def npu_expected_failure(name: str) -> tuple[str, type[Exception]] | None:
    """(reason, the exception it must fail with) of an expected failure."""
    reason = expected_failure(name)
    if reason is not None:
        return reason, FrontendError
    reasons = [r for pattern, r in NPU_EXPECTED_FAILURES.items() if re.search(pattern, name)]
    return (reasons[0], PassFailedException) if reasons else None


class _RecordingNpuBackend(GeNpuBackend):
    """GeNpuBackend keeping the reps the running node test prepared (their
    runners list the AI-CPU task count of every run)."""

    reps: list[GeBackendRep] = []

    @classmethod
    def prepare(cls, model, device="CPU", **kwargs):
        rep = super().prepare(model, device, **kwargs)
        cls.reps.append(rep)
        return rep


AICPU_TASKS: dict[str, list[int]] = {}
"""Node test -> the AI-CPU task count of each of its runs (filled as tests pass)."""


def _recorded(name: str, func):
    @functools.wraps(func)
    def test(*args, **kwargs):
        _RecordingNpuBackend.reps.clear()
        func(*args, **kwargs)
        AICPU_TASKS[name] = [n for rep in _RecordingNpuBackend.reps for n in rep.runner.aicpu]

    return test


with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    backend_test = onnx.backend.test.BackendTest(_RecordingNpuBackend, __name__)


class OnnxNpuNodeModelTest(unittest.TestCase):
    """The selected node tests on the npu backend (test names end in `_cpu`:
    the simulator runs on the host CPU)."""


_generated = backend_test.test_cases["OnnxBackendNodeModelTest"]
for _name in sorted(SELECTED):
    _func = _recorded(_name, getattr(_generated, f"{_name}_cpu"))
    _xfail = npu_expected_failure(_name)
    if _xfail is not None:
        _func = pytest.mark.xfail(reason=_xfail[0], raises=_xfail[1], strict=True)(_func)
    setattr(OnnxNpuNodeModelTest, f"{_name}_cpu", _func)
del _generated, _name, _func, _xfail


# ----------------------------------------------------------- the suite itself


def test_every_npu_expected_failure_names_a_selected_test():
    for pattern in NPU_EXPECTED_FAILURES:
        names = [n for n in SELECTED if re.search(pattern, n)]
        assert names, f"{pattern!r} matches no selected test"
        assert not any(expected_failure(n) for n in names), f"{pattern!r} repeats a frontend expected failure"


def test_node_tests_that_run_entirely_on_the_ai_core():
    """Counted over every passing node test: those not run in this session
    (a -k selection) are run here."""
    passing = sorted(n for n in SELECTED if npu_expected_failure(n) is None)
    for name in passing:
        if name not in AICPU_TASKS:
            method = f"{name}_cpu"
            getattr(OnnxNpuNodeModelTest(method), method)()
    ai_core_only = [n for n in passing if not any(AICPU_TASKS[n])]
    assert len(ai_core_only) == AI_CORE_ONLY, ai_core_only



# ------------------------------------------------------------ backend API


def test_npu_rep_records_the_ai_cpu_tasks_of_each_run():
    x = np.linspace(-1.0, 1.0, 64, dtype=np.float32).reshape(1, 4, 4, 4)
    for op_type, tasks, want in (("Relu", 0, np.maximum(x, 0)), ("Sin", 1, np.sin(x))):
        graph = helper.make_graph(
            [helper.make_node(op_type, ["x"], ["y"])],
            "g",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, x.shape)],
        )
        rep = GeNpuBackend.prepare(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
        for _ in range(2):
            (y,) = rep.run([x])
            np.testing.assert_allclose(y, want, rtol=1e-6, atol=1e-7)
        assert rep.runner.aicpu == [tasks, tasks], op_type
