"""Constant folding at import: any node whose inputs are all constant is
evaluated, with the reference interpreter when the node imports and with
onnx's reference evaluator otherwise; checked against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from gedialects.frontend import onnx_import
from gedialects.frontend.errors import FrontendError
from gedialects.frontend.onnx_import import import_model
from gedialects.graph import ops as g
from gedialects.graph.interpreter import run
from gedialects.zoo import onnxruntime_outputs

RNG = np.random.default_rng(0)


def _model(nodes, consts, x_shape, y_shape, opset=17):
    graph = helper.make_graph(
        nodes,
        "m",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in consts.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _graph_ops(module) -> list[str]:
    return [op.name for op in module.walk() if isinstance(op, g.GraphOp)]


def _check_folded(model, x_shape, ops_left):
    module = import_model(model, {}, source="test")
    assert _graph_ops(module) == ops_left
    x = RNG.standard_normal(x_shape).astype(np.float32)
    got = run(module, {"x": x})["y"]
    want = onnxruntime_outputs(model, {"x": x})["y"]
    np.testing.assert_array_equal(got, want)  # one add: exact


def _i64(*v):
    return np.array(v, dtype=np.int64)


def test_one_hot_and_eye_like_fold_through_the_onnx_evaluator():
    # neither has a graph op: the onnx reference evaluator computes them
    nodes = [
        helper.make_node("OneHot", ["idx", "depth", "vals"], ["oh"], axis=-1),
        helper.make_node("Cast", ["oh"], ["ohf"], to=TensorProto.FLOAT),
        helper.make_node("EyeLike", ["ohf"], ["eye"]),
        helper.make_node("Add", ["ohf", "eye"], ["c"]),
        helper.make_node("Add", ["x", "c"], ["y"]),
    ]
    consts = {"idx": _i64(0, 2, 1, 3), "depth": np.array(4, np.int64), "vals": np.array([0.0, 5.0], np.float32)}
    _check_folded(_model(nodes, consts, [4, 4], [4, 4]), (4, 4), ["graph.add"])


def test_nonzero_and_size_fold():
    nodes = [
        helper.make_node("NonZero", ["m"], ["nz"]),
        helper.make_node("Size", ["nz"], ["n"]),
        helper.make_node("Cast", ["n"], ["nf"], to=TensorProto.FLOAT),
        helper.make_node("Add", ["x", "nf"], ["y"]),
    ]
    consts = {"m": np.array([[1, 0, 2], [0, 3, 0]], np.float32)}
    _check_folded(_model(nodes, consts, [2, 3], [2, 3]), (2, 3), ["graph.add"])


def test_if_with_a_constant_condition_reads_outer_values():
    then_g = helper.make_graph(
        [helper.make_node("Mul", ["c", "two"], ["o"])], "then", [], [helper.make_tensor_value_info("o", TensorProto.FLOAT, [3])]
    )
    else_g = helper.make_graph(
        [helper.make_node("Neg", ["c"], ["o2"])], "else", [], [helper.make_tensor_value_info("o2", TensorProto.FLOAT, [3])]
    )
    nodes = [
        helper.make_node("If", ["cond"], ["z"], then_branch=then_g, else_branch=else_g),
        helper.make_node("Add", ["x", "z"], ["y"]),
    ]
    for cond in (True, False):
        consts = {"cond": np.array(cond), "c": np.array([1, 2, 3], np.float32), "two": np.array(2, np.float32)}
        _check_folded(_model(nodes, consts, [3], [3]), (3,), ["graph.add"])


def test_a_mask_subgraph_of_supported_ops_folds_with_our_kernels():
    # Shape -> Gather -> Unsqueeze -> Concat -> Reshape: shape arithmetic of a
    # traced model, all on constants once the input shape is static
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "zero"], ["d0"], axis=0),
        helper.make_node("Unsqueeze", ["d0", "ax0"], ["d0v"]),
        helper.make_node("Concat", ["d0v", "minus1"], ["shape"], axis=0),
        helper.make_node("Reshape", ["x", "shape"], ["y"]),
    ]
    consts = {"zero": np.array(0, np.int64), "ax0": _i64(0), "minus1": _i64(-1)}
    m = _model(nodes, consts, [2, 3, 4], [2, 12])
    module = import_model(m, {}, source="test")
    assert _graph_ops(module) == ["graph.reshape"]
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    np.testing.assert_array_equal(run(module, {"x": x})["y"], onnxruntime_outputs(m, {"x": x})["y"])


def test_random_nodes_are_never_folded():
    nodes = [
        helper.make_node("RandomNormalLike", ["c"], ["r"]),
        helper.make_node("Add", ["x", "r"], ["y"]),
    ]
    m = _model(nodes, {"c": np.zeros(3, np.float32)}, [3], [3])
    with pytest.raises(FrontendError, match=r"unsupported ONNX operator 'RandomNormalLike' \(node 'r'"):
        import_model(m, {}, source="test")


def test_a_failing_evaluation_is_one_line_naming_the_node():
    # OneHot's depth must be a scalar: the evaluator refuses it
    nodes = [
        helper.make_node("OneHot", ["idx", "depth", "vals"], ["oh"]),
        helper.make_node("Add", ["x", "oh"], ["y"]),
    ]
    consts = {"idx": _i64(0, 1), "depth": np.array([[2, 2]], np.int64), "vals": np.array([0.0, 1.0], np.float32)}
    with pytest.raises(FrontendError) as e:
        import_model(_model(nodes, consts, [2, 2], [2, 2]), {}, source="test")
    msg = str(e.value)
    assert "\n" not in msg and "node 'oh', OneHot" in msg and "evaluating it failed" in msg


def test_folded_results_beyond_the_limit_are_refused(monkeypatch):
    from gedialects.frontend import validate

    monkeypatch.setattr(validate, "MAX_TENSOR_ELEMENTS", 10)
    nodes = [
        helper.make_node("EyeLike", ["c"], ["e"]),
        helper.make_node("Add", ["x", "e"], ["y"]),
    ]
    m = _model(nodes, {"c": np.zeros((4, 4), np.float32)}, [1], [4, 4])
    with pytest.raises(FrontendError, match=r"constant result 'e' of 4x4 = 16 elements exceeds the limit of 10"):
        import_model(m, {}, source="test")


def test_big_results_of_supported_ops_stay_in_the_graph(monkeypatch):
    # a weight broadcast to a huge shape is not worth a folded weight
    monkeypatch.setattr(onnx_import, "FOLD_LIMIT", 8)
    nodes = [
        helper.make_node("Add", ["a", "b"], ["c"]),
        helper.make_node("Add", ["x", "c"], ["y"]),
    ]
    m = _model(nodes, {"a": RNG.standard_normal((4, 4)).astype(np.float32), "b": np.float32(1.0)}, [4, 4], [4, 4])
    assert _graph_ops(import_model(m, {}, source="test")) == ["graph.add", "graph.add"]
