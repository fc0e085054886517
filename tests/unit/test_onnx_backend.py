"""The ONNX backend conformance suite (`onnx.backend.test`, node tests) on
the reference interpreter, through `GeReferenceBackend`.

Selection: every node test whose model uses only operators the importer
supports (`SUPPORTED_OPS`), read from the test's model (onnx generates the
node tests in memory), not guessed from its name. Tests of other operators
are not collected at all.

Expected failures are listed once, in EXPECTED_FAILURES (name regex ->
reason). They run as strict xfails that must fail with a clean
FrontendError: a test that starts passing shows as XPASS(strict), and its
entry must go. Counts: docs/onnx-conformance.md.
"""

from __future__ import annotations

import re
import unittest
import warnings

import numpy as np
import onnx
import onnx.backend.test
import pytest
from onnx import TensorProto, helper
from onnx.backend.test.loader import load_model_tests

from gedialects.frontend.errors import FrontendError
from gedialects.frontend.onnx_import import SUPPORTED_OPS
from gedialects.tools.onnx_backend import GeReferenceBackend

UNSUPPORTED_TYPE = (
    "element type outside the graph dialect's set (f32, f16, f64, i64, i32, i16, i8, ui8, bool)"
)
NOT_A_TENSOR = "sequence and optional values are not tensors; the graph dialect has tensors only"
RANDOM_DROPOUT = "Dropout in training mode (ratio > 0) is random; only inference is supported"
BATCHNORM_TRAINING = "BatchNormalization's training mode (batch statistics, running mean/var outputs) is not supported"
ARGMAX = "MaxPool's Indices output (argmax) is not supported"

EXPECTED_FAILURES: dict[str, str] = {
    r"BFLOAT16|FLOAT8E|FLOAT4E2M1|U?INT[24](_|$)|_uint(16|32|64)$": UNSUPPORTED_TYPE,
    r"^test_identity_(sequence|opt)$": NOT_A_TENSOR,
    r"^test_batchnorm_.*_training_mode$": BATCHNORM_TRAINING,
    r"^test_training_dropout(_default)?(_mask)?$": RANDOM_DROPOUT,
    r"^test_maxpool_with_argmax_": ARGMAX,
    r"_uint(16|32|64)_expanded$|^test_range_bfloat16_": UNSUPPORTED_TYPE,  # ops-A
    r"^test_equal_string(_broadcast)?$": UNSUPPORTED_TYPE,  # ops-A: strings
    r"^test_einsum_.*_bfloat16$": UNSUPPORTED_TYPE,  # ops-B
    r"^test_einsum_batch_diagonal$": "Einsum with a letter repeated in an operand (diagonal/trace) is not supported",  # ops-B
    r"^test_resize_downsample_(scales|sizes)_(linear|cubic)_antialias$": "Resize with antialias=1 is not supported",  # ops-B
    r"^test_resize_tf_crop_and_resize": "Resize coordinate_transformation_mode tf_crop_and_resize (roi) is not supported",  # ops-B
    r"^test_resize_downsample_scales_(linear|cubic)_align_corners$": (  # ops-B
        "align_corners by scales with a fractional extent * scale: onnx's reference uses the fraction, "
        "the spec and onnxruntime (which graph.resize follows) the integer output extent; refused as ambiguous"
    ),
    r"^test_center_crop_pad_.*_expanded$": (  # ops-B
        "CenterCropPad's expansion computes Pad's pads at run time from the target-shape input; "
        "the graph dialect needs them constant at import"
    ),
    r"^test_attention_.*_bf16_expanded$": UNSUPPORTED_TYPE,  # ops-C: selected by CastLike; bfloat16 inputs
}
"""Node tests that are expected to fail, each with its reason."""

# Some tests reach IEEE edge cases on purpose (log(0) of an empty ReduceLogSum).
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _in_scope(model: onnx.ModelProto) -> bool:
    nodes = model.graph.node
    return all(n.domain in ("", "ai.onnx") and n.op_type in SUPPORTED_OPS for n in nodes)


with warnings.catch_warnings():
    # Generating the node tests overflows casts on purpose.
    warnings.simplefilter("ignore")
    SELECTED = frozenset(t.name for t in load_model_tests(kind="node") if _in_scope(t.model))
    backend_test = onnx.backend.test.BackendTest(GeReferenceBackend, __name__)


def expected_failure(name: str) -> str | None:
    reasons = [r for pattern, r in EXPECTED_FAILURES.items() if re.search(pattern, name)]
    return reasons[0] if reasons else None


class OnnxBackendNodeModelTest(unittest.TestCase):
    """The selected node tests, on CPU (test names end in `_cpu`)."""


_generated = backend_test.test_cases["OnnxBackendNodeModelTest"]
for _name in sorted(SELECTED):
    _func = getattr(_generated, f"{_name}_cpu")
    _reason = expected_failure(_name)
    if _reason is not None:
        _func = pytest.mark.xfail(reason=_reason, raises=FrontendError, strict=True)(_func)
    setattr(OnnxBackendNodeModelTest, f"{_name}_cpu", _func)
del _generated, _name, _func, _reason


# ----------------------------------------------------------- the suite itself


def test_every_expected_failure_names_a_selected_test():
    for pattern in EXPECTED_FAILURES:
        assert any(re.search(pattern, n) for n in SELECTED), f"{pattern!r} matches no selected test"


def test_selection_covers_every_supported_operator():
    covered = {
        n.op_type for t in load_model_tests(kind="node") if t.name in SELECTED for n in t.model.graph.node
    }
    assert covered == SUPPORTED_OPS, sorted(SUPPORTED_OPS - covered)


# ------------------------------------------------------------ backend API


def _model(nodes, inputs, outputs, initializers=(), opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _reshape_model():
    return _model(
        [helper.make_node("Reshape", ["x", "shape"], ["y"])],
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
            helper.make_tensor_value_info("shape", TensorProto.INT64, [2]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )


def test_rep_takes_positional_and_named_inputs():
    model = _model(
        [helper.make_node("Sub", ["a", "b"], ["y"])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2]) for n in ("a", "b")],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    rep = GeReferenceBackend.prepare(model)
    a, b = np.array([5.0, 7.0], np.float32), np.array([1.0, 2.0], np.float32)
    (y,) = rep.run([a, b])
    np.testing.assert_array_equal(y, a - b)
    (y,) = rep.run({"b": b, "a": a})
    np.testing.assert_array_equal(y, a - b)
    with pytest.raises(ValueError, match="takes 2"):
        rep.run([a])


def test_rep_specialises_on_shape_inputs_per_value():
    rep = GeReferenceBackend.prepare(_reshape_model())
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    (y,) = rep.run([x, np.array([3, 2])])
    assert y.shape == (3, 2)
    (y,) = rep.run([x, np.array([6, 1])])
    assert y.shape == (6, 1)
    assert rep.bound == ["shape"]


def test_rep_takes_a_runner():
    seen = []

    def runner(module, feeds):
        seen.append(sorted(feeds))
        return {"y": np.zeros((3, 2), np.float32)}

    rep = type("Rep", (GeReferenceBackend,), {"runner": staticmethod(runner)}).prepare(_reshape_model())
    (y,) = rep.run([np.zeros((2, 3), np.float32), np.array([3, 2])])
    assert seen == [["x"]] and y.shape == (3, 2)


def test_run_node_and_devices():
    node = helper.make_node("Relu", ["x"], ["y"])
    (y,) = GeReferenceBackend.run_node(node, [np.array([-1.0, 2.0], np.float32)])
    np.testing.assert_array_equal(y, [0.0, 2.0])
    assert GeReferenceBackend.supports_device("CPU")
    assert not GeReferenceBackend.supports_device("CUDA")


def test_unsupported_element_type_is_a_clean_error():
    model = _model(
        [helper.make_node("Relu", ["x"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.BFLOAT16, [2])],
        [helper.make_tensor_value_info("y", TensorProto.BFLOAT16, [2])],
    )
    with pytest.raises(FrontendError, match="unsupported element type BFLOAT16"):
        GeReferenceBackend.prepare(model)
