"""The nine light models of the onnx wheel through the importer and the
reference interpreter, against onnxruntime: with their shipped (constant)
weights and again with random weights."""

import numpy as np
import onnx
import pytest

from gedialects.frontend.onnx_import import import_model
from gedialects.graph.interpreter import run
from gedialects.numerics import assert_close
from gedialects.zoo import (
    LIGHT_MODELS,
    dummy_inputs,
    expected_output,
    light_model_path,
    onnxruntime_outputs,
    random_inputs,
    with_random_weights,
)


@pytest.mark.parametrize("name", LIGHT_MODELS)
def test_shipped_weights_match_shipped_output_and_onnxruntime(name):
    model = onnx.load(light_model_path(name))
    module = import_model(model, source=name)
    module.verify()
    feeds = dummy_inputs(model)
    ours = run(module, feeds)
    (got,) = ours.values()
    assert_close(got, expected_output(name), "must_keep_origin_dtype")
    theirs = onnxruntime_outputs(model, feeds)
    for key, want in theirs.items():
        assert_close(ours[key], want, "must_keep_origin_dtype", err_msg=key)


@pytest.mark.parametrize("name", LIGHT_MODELS)
def test_random_weights_match_onnxruntime(name):
    model = with_random_weights(onnx.load(light_model_path(name)), seed=1)
    module = import_model(model, source=name)
    feeds = random_inputs(model, seed=2)
    ours = run(module, feeds)
    theirs = onnxruntime_outputs(model, feeds)
    for key, want in theirs.items():
        # random weights must give a non-degenerate output, or the check is weak
        assert np.ptp(want) > 1e-3
        assert_close(ours[key], want, "must_keep_origin_dtype", err_msg=key)
