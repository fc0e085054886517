"""Map bodies on the CNN kernels' buffers (the epilogue regions of tile.conv
and tile.gemm: gedialects/tile/transforms/buffer_body.py), against
onnxruntime in both precision modes: every activation graph-fuse
folds into a conv, a residual plus a bounded activation, a force_fp16 output
stored scaled (range scaling) under a non-equivariant activation, the CNN
gemm's tanh, and a squeeze-excite block (SiLU as a loop fusion on a
[1, C, 1, 1] map, its sigmoid gate broadcast over the pixels). Each case
asserts where the ops ran: in the conv/map kernels, not on the AI CPU."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from gedialects.frontend.onnx_import import import_model
from gedialects.numerics import assert_close
from gedialects.zoo import onnxruntime_outputs
from lowering.pipeline import compile_module, run_compiled

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

MODES = ("force_fp16", "must_keep_origin_dtype")


def _rand(*shape, scale=1.0, seed=0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


def _activation(kind: str, x: str, y: str) -> tuple[list, dict]:
    if kind == "Clip":
        return [helper.make_node("Clip", [x, "lo", "hi"], [y])], {"lo": np.float32(0), "hi": np.float32(6)}
    if kind == "LeakyRelu":
        return [helper.make_node("LeakyRelu", [x], [y], alpha=0.1)], {}
    if kind == "HardSigmoid":  # not ONNX's default alpha: the epilogue must carry it
        return [helper.make_node("HardSigmoid", [x], [y], alpha=0.25, beta=0.4)], {}
    return [helper.make_node(kind, [x], [y])], {}


def _conv_model(kind: str, weight_scale: float, residual: bool, residual_scale: float = 1.0):
    w = _rand(32, 16, 3, 3, scale=weight_scale, seed=1)
    inits = {"w": w, "b": _rand(32, seed=2)}
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1])]
    pre = "c"
    if residual:  # r from a second conv: a free scale class the sum joins (graph inputs are pinned at 1)
        w2 = _rand(32, 16, 1, 1, scale=0.3, seed=4)
        w2[0] *= residual_scale  # one channel large: the class scale, the others in f's range
        inits["w2"] = w2
        nodes += [helper.make_node("Conv", ["x", "w2"], ["r"]), helper.make_node("Add", ["c", "r"], ["s"])]
        pre = "s"
    act, consts = _activation(kind, pre, "y")
    inits.update(consts)
    feeds = {"x": _rand(1, 16, 8, 8, seed=3)}
    graph = helper.make_graph(
        nodes + act, "epilogue",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, a.shape) for n, a in feeds.items()],
        [helper.make_empty_tensor_value_info("y")],
        [numpy_helper.from_array(np.asarray(v, dtype=np.float32), n) for n, v in inits.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model, feeds


def _check(model, feeds, precision, calibration=None):
    compiled = compile_module(import_model(model), precision, calibration=calibration)
    got = run_compiled(compiled, feeds).outputs["y"]
    want = onnxruntime_outputs(model, feeds)["y"]
    assert np.std(want) > 1e-2, "a constant output proves nothing"
    assert_close(np.asarray(got).reshape(want.shape), want, precision)
    return compiled


@pytest.mark.parametrize("precision", MODES)
@pytest.mark.parametrize("kind", ["Relu", "Clip", "Sigmoid", "Tanh", "LeakyRelu", "HardSigmoid", "HardSwish"])
def test_conv_activation_runs_in_the_conv_kernel(kind, precision):
    model, feeds = _conv_model(kind, 0.2, residual=False)
    compiled = _check(model, feeds, precision)
    assert compiled.aicpu == 0
    assert compiled.kernel_kinds.get("conv") == 1 and set(compiled.kernel_kinds) <= {"conv", "transdata"}


@pytest.mark.parametrize("precision", MODES)
def test_conv_residual_then_clip(precision):
    model, feeds = _conv_model("Clip", 0.2, residual=True)
    compiled = _check(model, feeds, precision)
    assert compiled.aicpu == 0 and compiled.kernel_kinds.get("conv") == 2  # the add and clip are in the epilogue


@pytest.mark.parametrize("kind", ["Sigmoid", "Clip", "Tanh", "HardSwish"])
def test_force_fp16_scaled_output_under_a_bounded_activation(kind):
    """One residual channel of magnitude ~1e3 puts the conv's output class at
    a scale 2^k (the residual joins it): the epilogue must apply f to the
    logical values, f(x 2^k) / 2^k, not to the stored ones; the other
    channels stay in f's sensitive range."""
    model, feeds = _conv_model(kind, 0.2, residual=True, residual_scale=3000.0)
    compiled = _check(model, feeds, "force_fp16", calibration=feeds)
    assert compiled.aicpu == 0 and compiled.kernel_kinds.get("conv") == 2


@pytest.mark.parametrize("precision", MODES)
def test_gemm_vector_matrix_product_with_tanh(precision):
    """The pooler of BERT: tanh(h W^T + b) on one row (the CNN gemm kernel);
    h = x + c, so that in force_fp16 the gemm reads an fp16 activation."""
    x, w, b = _rand(1, 64, seed=5), _rand(64, 64, scale=0.2, seed=6), _rand(64, seed=7)
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "c"], ["h"]), helper.make_node("Gemm", ["h", "w", "b"], ["g"], transB=1),
         helper.make_node("Tanh", ["g"], ["y"])],
        "pooler", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
        [helper.make_empty_tensor_value_info("y")],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b"), numpy_helper.from_array(_rand(1, 64, seed=8), "c")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    compiled = _check(model, {"x": x}, precision)
    assert compiled.aicpu == 0 and compiled.kernel_kinds.get("gemm") == 1


@pytest.mark.parametrize("precision", MODES)
@pytest.mark.parametrize("gate", ["Sigmoid", "HardSigmoid"])
def test_squeeze_excite_block_stays_on_the_map_kernels(gate, precision):
    """EfficientNet's SE: pool, 1x1 conv, SiLU (x * sigmoid(x): a fusion with
    a unary map body), 1x1 conv + sigmoid (its epilogue), and the gate
    multiplied into the map (one C0 block per slice, broadcast over pixels).
    MobileNetV3's HardSigmoid gate is no conv epilogue: loop fusion puts it
    with the multiply, applied to the gate itself, which the map kernel does
    not take (legality refuses it; a miscompile was caught this way)."""
    c = 24
    inits = {"w1": _rand(c, 8, 3, 3, scale=0.3, seed=1), "w2": _rand(6, c, 1, 1, scale=0.3, seed=2),
             "w3": _rand(c, 6, 1, 1, scale=0.3, seed=3)}
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("GlobalAveragePool", ["c"], ["p"]),
        helper.make_node("Conv", ["p", "w2"], ["r"]),
        helper.make_node("Sigmoid", ["r"], ["rs"]),
        helper.make_node("Mul", ["r", "rs"], ["silu"]),
        helper.make_node("Conv", ["silu", "w3"], ["e"]),
        helper.make_node(gate, ["e"], ["g"]),
        helper.make_node("Mul", ["c", "g"], ["y"]),
    ]
    feeds = {"x": _rand(1, 8, 4, 4, seed=4)}
    graph = helper.make_graph(
        nodes, "se", [helper.make_tensor_value_info("x", TensorProto.FLOAT, feeds["x"].shape)],
        [helper.make_empty_tensor_value_info("y")], [numpy_helper.from_array(v, n) for n, v in inits.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    compiled = _check(model, feeds, precision)
    assert compiled.kernel_kinds.get("conv") == 3
    if gate == "Sigmoid":  # the gate multiply; the SiLU is the last conv's stage (test_conv_stage.py)
        assert compiled.aicpu == 0 and compiled.kernel_kinds.get("elementwise") == 1


@pytest.mark.parametrize("precision", MODES)
def test_loop_fusion_with_two_outputs_on_the_map_kernels(precision):
    """A relu used by a conv and by a per-channel scale and shift: loop
    fusion makes relu, mul and sub one graph.fusion with two results, one
    tile.elementwise whose body yields both (the relu straight into its
    output buffer, the scale reading it); both outputs against onnxruntime."""
    c = 16
    inits = {"w": _rand(c, 8, 3, 3, scale=0.3, seed=1), "s": _rand(c, 1, 1, seed=2),
             "half": np.float32(0.5), "w2": _rand(8, c, 1, 1, scale=0.3, seed=3)}
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["x", "w"], ["d"], pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c", "d"], ["a"]),
        helper.make_node("Relu", ["a"], ["r"]),
        helper.make_node("Mul", ["r", "s"], ["m"]),
        helper.make_node("Sub", ["m", "half"], ["y"]),
        helper.make_node("Conv", ["r", "w2"], ["z"]),
    ]
    feeds = {"x": _rand(1, 8, 6, 6, seed=4)}
    graph = helper.make_graph(
        nodes, "two_outputs", [helper.make_tensor_value_info("x", TensorProto.FLOAT, feeds["x"].shape)],
        [helper.make_empty_tensor_value_info("y"), helper.make_empty_tensor_value_info("z")],
        [numpy_helper.from_array(np.asarray(v, np.float32), n) for n, v in inits.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    compiled = compile_module(import_model(model), precision)
    got = run_compiled(compiled, feeds).outputs
    want = onnxruntime_outputs(model, feeds)
    for name in ("y", "z"):
        assert np.std(want[name]) > 1e-2, "a constant output proves nothing"
        assert_close(np.asarray(got[name]).reshape(want[name].shape), want[name], precision)
    assert compiled.aicpu == 0 and compiled.kernel_kinds.get("elementwise") == 1


@pytest.mark.parametrize("precision", MODES)
def test_division_by_a_per_channel_constant_of_a_padded_slice(precision):
    """4 channels fill half a C0 slice: the divisor's padded lanes are 1, so
    the map's padded lanes stay finite (zero-padded, 0 / 0 was NaN there and
    the output transdata's product spread it over every channel: the
    transformer fuzz test found it)."""
    inits = {"w": _rand(4, 1, 1, 1, seed=1), "c": _rand(1, 4, 1, 1, seed=2)}
    nodes = [helper.make_node("Conv", ["x", "w"], ["a"]), helper.make_node("Min", ["a", "a"], ["m"]),
             helper.make_node("Div", ["m", "c"], ["y"])]  # a loop fusion (a lone Div is a row-major kernel's)
    feeds = {"x": _rand(1, 1, 2, 4, seed=3)}
    graph = helper.make_graph(
        nodes, "div", [helper.make_tensor_value_info("x", TensorProto.FLOAT, feeds["x"].shape)],
        [helper.make_empty_tensor_value_info("y")], [numpy_helper.from_array(v, n) for n, v in inits.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    compiled = _check(model, feeds, precision)
    assert compiled.aicpu == 0 and compiled.kernel_kinds.get("elementwise") == 1
