"""The numerical oracle of the unit tests: compile a model for the npu
backend, simulate it and compare every output with onnxruntime under the
precision mode's criterion (gedialects/numerics.py)."""

from __future__ import annotations

import numpy as np
import onnx

from gedialects.frontend.onnx_import import import_model
from gedialects.numerics import assert_close
from gedialects.zoo import onnxruntime_outputs
from lowering.pipeline import Compiled, compile_module, run_compiled


def matches_onnxruntime(model: onnx.ModelProto, feeds: dict, precision: str, min_std: float = 1e-3,
                        **compile_options) -> Compiled:
    """The compiled model, after checking its outputs on `feeds`; an output
    whose reference is (nearly) constant proves nothing and fails."""
    compiled = compile_module(import_model(model), precision, **compile_options)
    got = run_compiled(compiled, feeds).outputs
    for name, want in onnxruntime_outputs(model, feeds).items():
        assert np.std(want) > min_std, f"{name}: a constant output proves nothing"
        assert_close(np.asarray(got[name]).reshape(want.shape), want, precision, err_msg=name)
    return compiled
