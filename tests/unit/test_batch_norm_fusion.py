"""A batch_norm no conv takes in (DenseNet's pre-activation: BatchNormalization
on a concatenation, then Mul and Add by per-channel constants, then Relu)
runs as one elementwise kernel with what follows it (BatchnormScaleFusionPass,
BatchnormLoopFusionPass, then loop fusion), against onnxruntime in both
precision modes, on statistics that make every channel's normalisation
matter (means and variances away from 0 and 1)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from gedialects.frontend.onnx_import import import_model
from gedialects.numerics import assert_close
from gedialects.zoo import onnxruntime_outputs
from lowering.pipeline import compile_module, run_compiled

MODES = ("force_fp16", "must_keep_origin_dtype")


def _model():
    rng = np.random.default_rng(7)
    c = 32

    def stats(prefix, channels):
        return {f"{prefix}_gamma": rng.uniform(0.5, 1.5, channels), f"{prefix}_beta": rng.normal(0, 0.5, channels),
                f"{prefix}_mean": rng.normal(0, 0.5, channels), f"{prefix}_var": rng.uniform(0.5, 2.0, channels)}

    inits = {**stats("bn", c), **stats("bn2", c // 2),
             "k": rng.uniform(0.5, 2.0, (c, 1, 1)), "d": rng.normal(0, 0.5, (c, 1, 1)),
             "e": rng.normal(0, 0.5, (c // 2, 1, 1)),
             "w": rng.normal(0, 0.3, (16, c, 1, 1)), "b": rng.normal(0, 0.1, 16)}
    bn = [f"bn_{p}" for p in ("gamma", "beta", "mean", "var")]
    bn2 = [f"bn2_{p}" for p in ("gamma", "beta", "mean", "var")]
    nodes = [
        helper.make_node("Concat", ["x1", "x2"], ["cat"], axis=1),
        helper.make_node("BatchNormalization", ["cat", *bn], ["n"], epsilon=1e-5),
        helper.make_node("Mul", ["n", "k"], ["m"]),
        helper.make_node("Add", ["m", "d"], ["a"]),
        helper.make_node("Relu", ["a"], ["r"]),
        helper.make_node("Conv", ["r", "w", "b"], ["y"]),
        # bn - e folds into the bias; relu after it
        helper.make_node("BatchNormalization", ["x1", *bn2], ["n2"], epsilon=1e-3),
        helper.make_node("Sub", ["n2", "e"], ["s"]),
        helper.make_node("Relu", ["s"], ["z"]),
    ]
    feeds = {name: rng.normal(0.3, 1.0, (1, c // 2, 8, 8)).astype(np.float32) for name in ("x1", "x2")}
    graph = helper.make_graph(
        nodes, "preactivation",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, a.shape) for n, a in feeds.items()],
        [helper.make_empty_tensor_value_info("y"), helper.make_empty_tensor_value_info("z")],
        [numpy_helper.from_array(np.asarray(v, dtype=np.float32), n) for n, v in inits.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model, feeds


@pytest.mark.parametrize("precision", MODES)
def test_a_pre_activation_batch_norm_is_one_kernel_with_its_chain(precision):
    model, feeds = _model()
    compiled = compile_module(import_model(model), precision)
    # one elementwise kernel per chain (they were a batch_norm kernel and a
    # mul/add/relu kernel each), and no AI-CPU task; the chain only the conv
    # reads is the conv's stage, computed on its input's way to L1
    # (test_conv_stage.py): the other chain's kernel and the conv
    assert compiled.aicpu == 0
    assert compiled.kernel_kinds.get("elementwise") == 1 and compiled.kernel_kinds.get("conv") == 1
    got = run_compiled(compiled, feeds).outputs
    want = onnxruntime_outputs(model, feeds)
    for name in ("y", "z"):
        assert np.std(want[name]) > 1e-1, "a near-constant output proves little"
        assert_close(np.asarray(got[name]).reshape(want[name].shape), want[name], precision)
