"""A pre-activation (an elementwise op whose only reader is a dense conv:
DenseNet's batch norm and ReLU before each conv) computed by the conv on its
input's way to L1 -- tile.conv's stage with per-channel operands -- when the
conv cost model says it costs less than a kernel of its own
(lowering/graph_to_tile/conv.py, `stage_pays`), on the npu backend against
onnxruntime in both precision modes, batch-norm statistics away from 0/1."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from oracle import matches_onnxruntime

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

MODES = ("force_fp16", "must_keep_origin_dtype")


def _preactivated_conv(cin, cout, size, kernel, pads, second_reader=False, seed=0):
    """x -> BatchNormalization -> Relu -> Conv (-> + Relu's output pooled, with `second_reader`)."""
    rng = np.random.default_rng(seed)
    scale = rng.uniform(0.5, 2.0, cin).astype(np.float32)
    bias = rng.standard_normal(cin).astype(np.float32)
    mean = rng.standard_normal(cin).astype(np.float32)
    var = rng.uniform(0.5, 2.0, cin).astype(np.float32)
    w = (rng.standard_normal((cout, cin) + kernel) / np.sqrt(cin * kernel[0] * kernel[1])).astype(np.float32)
    nodes = [helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["bn"]),
             helper.make_node("Relu", ["bn"], ["r"]),
             helper.make_node("Conv", ["r", "w"], ["y"], pads=pads)]
    outputs = [helper.make_empty_tensor_value_info("y")]
    if second_reader:
        nodes.append(helper.make_node("GlobalAveragePool", ["r"], ["p"]))
        outputs.append(helper.make_empty_tensor_value_info("p"))
    inits = [numpy_helper.from_array(a, n) for a, n in ((scale, "s"), (bias, "b"), (mean, "m"), (var, "v"), (w, "w"))]
    graph = helper.make_graph(nodes, "preact", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, cin] + size)],
                              outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    return model, {"x": rng.standard_normal([1, cin] + size).astype(np.float32)}


@pytest.mark.parametrize("precision", MODES)
@pytest.mark.parametrize("cin, cout, size, kernel, pads, staged", [
    # a DenseNet bottleneck's 1x1 conv after the concat: each band loaded once, the stage's work once
    (256, 128, [28, 28], (1, 1), [0, 0, 0, 0], True),
    # a 3x3 conv, padded on the fly: its rows of zeros stay zeros, not relu(shift)
    (64, 32, [14, 14], (3, 3), [1, 1, 1, 1], True),
    # a DenseNet transition's conv: its grid loads each band on several cores, each would redo the stage
    (1024, 512, [14, 14], (1, 1), [0, 0, 0, 0], False),
])
def test_the_conv_computes_its_pre_activation_when_that_costs_less(cin, cout, size, kernel, pads, staged, precision):
    model, feeds = _preactivated_conv(cin, cout, size, kernel, pads)
    compiled = matches_onnxruntime(model, feeds, precision)
    assert compiled.kernel_kinds.get("elementwise", 0) == (0 if staged else 1)


@pytest.mark.parametrize("precision", MODES)
def test_a_pre_activation_read_twice_stays_a_kernel(precision):
    model, feeds = _preactivated_conv(256, 128, [28, 28], (1, 1), [0, 0, 0, 0], second_reader=True, seed=1)
    compiled = matches_onnxruntime(model, feeds, precision)
    assert compiled.kernel_kinds.get("elementwise", 0) == 1
