"""graph -> tile -> npu -> simulator, compared with onnxruntime (must_keep_origin_dtype)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from gedialects.frontend.onnx_import import import_model
from gedialects.zoo import onnxruntime_outputs
from lowering.pipeline import compile_module, run_compiled

RNG = np.random.default_rng(0)


def _model(nodes, inits, x_shape, y_shape):
    graph = helper.make_graph(
        nodes,
        "m",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)],
        [numpy_helper.from_array(v, k) for k, v in inits.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def _w(*shape, scale=0.3):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def _check(model, x_shape, fuse=True):
    module = import_model(model, {}, source="test")
    compiled = compile_module(module, fuse=fuse)
    x = RNG.standard_normal(x_shape).astype(np.float32)
    got = run_compiled(compiled, {"x": x}).outputs["y"]
    want = onnxruntime_outputs(model, {"x": x})["y"]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    return compiled


def test_conv_bias_relu_with_transdata_both_ways():
    m = _model(
        [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["y"])],
        {"w": _w(32, 3, 3, 3), "b": _w(32)},
        [1, 3, 32, 32],
        [1, 32, 32, 32],
    )
    c = _check(m, (1, 3, 32, 32))
    assert c.transdata == 2  # NCHW -> NC1HWC0 at the input, back at the 4-D output


def test_strided_conv_residual_maxpool():
    m = _model(
        [
            helper.make_node("Conv", ["x", "w1", "b1"], ["a"], pads=[3, 3, 3, 3], strides=[2, 2]),
            helper.make_node("Relu", ["a"], ["r"]),
            helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
            helper.make_node("Conv", ["p", "w2", "b2"], ["c"], pads=[1, 1, 1, 1]),
            helper.make_node("Add", ["c", "p"], ["s"]),
            helper.make_node("Relu", ["s"], ["y"]),
        ],
        {"w1": _w(16, 3, 7, 7, scale=0.1), "b1": _w(16), "w2": _w(16, 16, 3, 3, scale=0.1), "b2": _w(16)},
        [1, 3, 64, 64],
        [1, 16, 16, 16],
    )
    _check(m, (1, 3, 64, 64))


def test_concat_in_place_global_pool_gemm_softmax():
    m = _model(
        [
            helper.make_node("Conv", ["x", "wa"], ["a"]),
            helper.make_node("Conv", ["x", "wb"], ["b"], pads=[1, 1, 1, 1]),
            helper.make_node("Concat", ["a", "b"], ["c"], axis=1),
            helper.make_node("AveragePool", ["c"], ["ap"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
            helper.make_node("GlobalAveragePool", ["ap"], ["g"]),
            helper.make_node("Flatten", ["g"], ["f"]),
            helper.make_node("Gemm", ["f", "wf", "bf"], ["l"], transB=1),
            helper.make_node("Softmax", ["l"], ["y"], axis=1),
        ],
        {"wa": _w(16, 8, 1, 1), "wb": _w(32, 8, 3, 3), "wf": _w(10, 48), "bf": _w(10)},
        [1, 8, 16, 16],
        [1, 10],
    )
    c = _check(m, (1, 8, 16, 16))
    assert c.transdata == 1  # only at the input: flatten of a 1x1 map is a view


def test_flatten_of_a_map_folds_into_the_gemm_weights():
    m = _model(
        [
            helper.make_node("Conv", ["x", "w"], ["a"], pads=[1, 1, 1, 1]),
            helper.make_node("Flatten", ["a"], ["f"]),
            helper.make_node("Gemm", ["f", "wf"], ["y"], transB=1),
        ],
        {"w": _w(12, 3, 3, 3), "wf": _w(20, 12 * 16 * 16, scale=0.02)},
        [1, 3, 16, 16],
        [1, 20],
    )
    c = _check(m, (1, 3, 16, 16))
    assert c.transdata == 1


def test_batchnorm_and_elementwise_fusion_on_nc1hwc0():
    c = 24
    m = _model(
        [
            helper.make_node("Conv", ["x", "w"], ["a"], pads=[1, 1, 1, 1]),
            helper.make_node("BatchNormalization", ["a", "s", "bb", "mu", "var"], ["n"]),
            helper.make_node("Mul", ["n", "k"], ["m"]),
            helper.make_node("Add", ["m", "one"], ["p"]),
            helper.make_node("Relu", ["p"], ["y"]),
        ],
        {
            "w": _w(c, 3, 3, 3),
            "s": RNG.uniform(0.5, 1.5, c).astype(np.float32),
            "bb": _w(c),
            "mu": _w(c),
            "var": RNG.uniform(0.5, 1.5, c).astype(np.float32),
            "k": _w(1, c, 1, 1),
            "one": np.array(0.5, np.float32),
        },
        [1, 3, 16, 16],
        [1, c, 16, 16],
    )
    _check(m, (1, 3, 16, 16))


@pytest.mark.parametrize("fuse", [True, False])
def test_squeezenet_light_model_random_weights(fuse):
    from gedialects.zoo import light_model_path, random_inputs, with_random_weights

    model = with_random_weights(onnx.load(str(light_model_path("squeezenet"))))
    compiled = compile_module(import_model(model, {}, source="squeezenet"), fuse=fuse)
    x = random_inputs(model)
    got = run_compiled(compiled, x).outputs
    want = onnxruntime_outputs(model, x)
    for k, v in want.items():
        np.testing.assert_allclose(got[k], v, rtol=1e-4, atol=1e-5)
