"""The model zoo (tests/zoo/models: 37 real architectures; the first 23 in
both exporters' forms): every model imports, matches onnxruntime on the
reference backend, and runs on the npu backend in both precision modes with
every op on the AI core (no AI-CPU task, but the integer ops
AICPU_BY_DESIGN lists) and matches onnxruntime by the criterion of the mode
(gedialects/numerics.py). The inputs are the models' own example inputs
(token ids and attention masks with padding; standard-normal images), on
random weights with calibrated batch-norm statistics, so logits are not
degenerate."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "zoo"))
from zoo import zoo_inputs, zoo_models, zoo_path  # noqa: E402

from gedialects.frontend.onnx_import import import_model  # noqa: E402
from gedialects.graph.interpreter import run as run_reference  # noqa: E402
from gedialects.numerics import CRITERIA, assert_close  # noqa: E402
from gedialects.zoo import onnxruntime_outputs  # noqa: E402
from lowering.pipeline import compile_module, run_compiled  # noqa: E402

MODELS = zoo_models()

FP16_ROUNDING = (
    "fp16 rounding accumulates over ~50 layers of a narrow-range network: an emulation that rounds "
    "every fused op's output to fp16 is itself off by 1.8% of max|logit| with fp32 weights and 4.8% "
    "(mobilenet_v2; shufflenet_v2 1.0% and 4.0%) with the weights rounded to fp16 as force_fp16 stores "
    "them, beyond the 0.5% normwise criterion; the npu is 4.3% (3.8%) off "
    "(benchmarks/fp16_emulation.py; docs/LOWERING.md, Precision modes)"
)
FP16_EXCEEDS_CRITERION = {
    "mobilenet_v2": FP16_ROUNDING,
    "mobilenet_v2.dynamo": FP16_ROUNDING,
    "tv_shufflenet_v2_x0_5": FP16_ROUNDING,
    "tv_shufflenet_v2_x0_5.dynamo": FP16_ROUNDING,
    "deeplabv3": (
        "fp16 rounding of dilated 3x3 convs and a bilinear upsampling by 8: the emulation that rounds every "
        "fused op's output to fp16 is itself 0.57% of max|logit| off, beyond the 0.5% criterion (npu 0.88%; "
        "benchmarks/fp16_emulation.py)"
    ),
}
"""Models whose fp16 result exceeds the fp16 criterion for a measured reason."""

INTEGER_ARITHMETIC = "int64 arithmetic on the attention mask or token ids (the vector unit computes in fp32, exact only below 2^24)"
AICPU_BY_DESIGN = {
    "bloom": (3, "ALiBi positions: cumsum of the int64 mask (no AI-core kernel) and " + INTEGER_ARITHMETIC),
    "opt": (4, "learned positions: cumsum of the int64 mask (no AI-core kernel) and " + INTEGER_ARITHMETIC),
    "clip_text": (3, "the pooled token: argmax of the int32 token ids (no AI-core kernel), its int cast and " + INTEGER_ARITHMETIC),
    "deberta_v2": (1, "the query x key padding mask: " + INTEGER_ARITHMETIC),
}
"""Models with AI-CPU tasks by design: (how many, why). Any other count is a regression (or a gain: update it)."""

_cache: dict[str, tuple[onnx.ModelProto, dict, dict]] = {}


def _model(name: str):
    """(model, inputs, onnxruntime outputs), once per model."""
    if name not in _cache:
        model = onnx.load(str(zoo_path(name)))
        inputs = zoo_inputs(name)
        _cache[name] = (model, inputs, onnxruntime_outputs(model, inputs))
    return _cache[name]


def _assert_matches(outputs: dict, want: dict, precision: str) -> None:
    for key, value in want.items():
        got = np.asarray(outputs[key]).reshape(value.shape)
        assert np.std(value) > 1e-3, f"{key}: a degenerate reference proves nothing"
        if value.dtype.kind in "biu":
            np.testing.assert_array_equal(got, value, err_msg=key)
        else:
            assert_close(got, value, precision, err_msg=key)


@pytest.mark.parametrize("name", MODELS)
def test_reference_backend_matches_onnxruntime(name):
    model, inputs, want = _model(name)
    got = run_reference(import_model(model, {}, source=name), inputs)
    _assert_matches(got, want, "must_keep_origin_dtype")


@pytest.mark.parametrize("precision", ["must_keep_origin_dtype", "force_fp16"])
@pytest.mark.parametrize("name", MODELS)
def test_npu_backend_matches_onnxruntime(name, precision):
    model, inputs, want = _model(name)
    compiled = compile_module(import_model(model, {}, source=name), precision=precision)
    # every op of every zoo model has an AI-core kernel (issue 11's bar) but
    # those AICPU_BY_DESIGN lists: another AI-CPU task is a regression,
    # whatever the numbers say
    expected = AICPU_BY_DESIGN.get(name.removesuffix(".dynamo"), (0, ""))[0]
    assert compiled.aicpu == expected, f"{name}: {compiled.aicpu} AI-CPU task(s), expected {expected}"
    result = run_compiled(compiled, inputs)  # races="error": a race fails the test
    if precision == "force_fp16" and name in FP16_EXCEEDS_CRITERION:
        errors = {k: float(np.abs(result.outputs[k].reshape(v.shape) - v).max() / np.abs(v).max()) for k, v in want.items()}
        bound = CRITERIA["force_fp16"].norm_rtol
        # strict: the day it passes, the entry must go
        assert max(errors.values()) > bound, f"now within the fp16 criterion: remove {name} from FP16_EXCEEDS_CRITERION"
        assert max(errors.values()) < 10 * bound, f"{name}: fp16 error {errors} is beyond fp16 rounding"
        return
    _assert_matches(result.outputs, want, precision)
