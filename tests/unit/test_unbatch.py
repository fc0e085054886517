"""map-unbatch (lowering/unbatch.py): CNNs with a batch above 1 run on the
AI core as one batch-1 region per image, and match onnxruntime in both
precision modes -- a small CNN with every kind of op the pass rewrites, and
two zoo CNNs with their batch set to 2 (the zoo's example image and its
mirror image). Before the pass, every conv and pool of a batch went to the
AI CPU."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "zoo"))
from zoo import zoo_inputs, zoo_path  # noqa: E402

from oracle import matches_onnxruntime  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

MODES = ("force_fp16", "must_keep_origin_dtype")


def _cnn(n: int) -> onnx.ModelProto:
    """conv+bias -> relu -> padded max pool -> conv -> residual add -> relu
    -> channel concat with a batch-norm branch -> 1x1 conv -> global pool
    -> gemm (a classifier: M = n rows)."""
    rng = np.random.default_rng(0)

    def w(*shape, scale):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    inits = {"w1": w(16, 3, 3, 3, scale=0.4), "b1": w(16, scale=0.1), "w2": w(16, 16, 3, 3, scale=0.1),
             "w3": w(8, 32, 1, 1, scale=0.2), "fc": w(10, 8, scale=0.5),
             "s": w(16, scale=0.3) + 1, "bb": w(16, scale=0.1), "m": w(16, scale=0.1), "v": np.abs(w(16, scale=0.2)) + 0.5}
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["p1", "w2"], ["c2"], pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["c2", "p1"], ["a"]),
             helper.make_node("Relu", ["a"], ["r2"]),
             helper.make_node("BatchNormalization", ["p1", "s", "bb", "m", "v"], ["n"]),
             helper.make_node("Concat", ["r2", "n"], ["cat"], axis=1),
             helper.make_node("Conv", ["cat", "w3"], ["c3"]),
             helper.make_node("GlobalAveragePool", ["c3"], ["g"]),
             helper.make_node("Flatten", ["g"], ["f"]),
             helper.make_node("Gemm", ["f", "fc"], ["y"], transB=1)]
    graph = helper.make_graph(nodes, "batched", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, 3, 16, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, 10])],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


@pytest.mark.parametrize("precision", MODES)
@pytest.mark.parametrize("n", [2, 3])
def test_batched_cnn_runs_per_image_on_the_ai_core(n, precision):
    x = np.random.default_rng(n).standard_normal((n, 3, 16, 16)).astype(np.float32)
    compiled = matches_onnxruntime(_cnn(n), {"x": x}, precision)
    assert compiled.aicpu == 0
    assert compiled.kernel_kinds.get("conv") == 3 * n and compiled.kernel_kinds.get("max_pool") == n


@pytest.mark.parametrize("precision", MODES)
@pytest.mark.parametrize("name", ["tv_squeezenet1_1", "resnet_hf"])
def test_zoo_cnn_with_a_batch_of_two(name, precision):
    model = onnx.load(zoo_path(name))
    (image_name, image), = zoo_inputs(name).items()
    for value in (*model.graph.input, *model.graph.output):
        value.type.tensor_type.shape.dim[0].dim_value = 2
    del model.graph.value_info[:]
    batch = np.concatenate([image, image[..., ::-1]]).astype(np.float32)
    compiled = matches_onnxruntime(model, {image_name: batch}, precision)
    assert compiled.aicpu == 0
