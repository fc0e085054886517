"""graph-canonicalize's GatherRunToSlice: a Gather whose constant indices,
flattened and with negative ones wrapped, run k, k+1, ..., k+n-1 becomes a
slice (+ a reshape); checked exactly against onnxruntime (a gather copies)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.context import Context

from gedialects.frontend.onnx_import import import_model
from gedialects.graph import ops as g
from gedialects.graph.interpreter import run
from gedialects.graph.transforms.canonicalize import GraphCanonicalizePass
from gedialects.zoo import onnxruntime_outputs

RNG = np.random.default_rng(0)


def _model(x_shape, x_type, indices: np.ndarray, axis: int, as_node: bool = False) -> onnx.ModelProto:
    """y = Gather(x, indices, axis); the indices an initializer, or a Constant node."""
    nodes = [helper.make_node("Gather", ["x", "idx"], ["y"], name="gather", axis=axis)]
    inits = [numpy_helper.from_array(indices, "idx")]
    if as_node:
        nodes.insert(0, helper.make_node("Constant", [], ["idx"], value=inits.pop()))
    graph = helper.make_graph(
        nodes,
        "m",
        [helper.make_tensor_value_info("x", x_type, x_shape)],
        [helper.make_tensor_value_info("y", x_type, None)],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _canonical(model: onnx.ModelProto, x: np.ndarray) -> list[str]:
    """Import and canonicalize; check the output equals onnxruntime's
    exactly; return the graph ops left."""
    module = import_model(model, source="test")
    GraphCanonicalizePass().apply(Context(), module)
    module.verify()
    got = run(module, {"x": x})["y"]
    want = onnxruntime_outputs(model, {"x": x})["y"]
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(got, want)
    return [op.name for op in module.walk() if isinstance(op, g.GraphOp)]


def _i64(*v) -> np.ndarray:
    return np.array(v, dtype=np.int64)


CASES = {
    # GPT-2's causal-mask rows: the whole axis in order, a reshape only
    "mask_rows_bool_4d_index": ((16, 1), TensorProto.BOOL, np.arange(16, dtype=np.int64).reshape(1, 1, 1, 16), 0,
                                ["graph.reshape"]),
    # BERT's pooler: the CLS token, a scalar index drops the axis
    "cls_token_scalar": ((1, 16, 64), TensorProto.FLOAT, np.array(0, np.int64), 1, ["graph.slice", "graph.reshape"]),
    "scalar_negative": ((3, 5, 2), TensorProto.FLOAT, np.array(-1, np.int64), 1, ["graph.slice", "graph.reshape"]),
    "negative_run": ((4, 6, 5), TensorProto.FLOAT, _i64(-4, -3, -2), 1, ["graph.slice"]),
    "mixed_signs_run": ((8, 3), TensorProto.FLOAT, _i64(5, -2, 7), 0, ["graph.slice"]),
    "negative_axis_2d_index": ((3, 7), TensorProto.FLOAT, _i64([1, 2], [3, 4]), -1, ["graph.slice", "graph.reshape"]),
    "int32_indices": ((2, 6, 4), TensorProto.FLOAT, np.array([2, 3, 4, 5], np.int32), 1, ["graph.slice"]),
    "bool_slice": ((5, 4), TensorProto.BOOL, _i64(1, 2), 0, ["graph.slice"]),
    "whole_axis_is_nothing": ((4, 3), TensorProto.FLOAT, _i64(-4, 1, 2, 3), 0, []),
    "single_index_1d": ((4, 3), TensorProto.FLOAT, _i64(2), 1, ["graph.slice"]),
}


def _input(shape, x_type) -> np.ndarray:
    if x_type == TensorProto.BOOL:
        return RNG.random(shape) > 0.5
    return RNG.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("as_node", [False, True], ids=["initializer", "constant_node"])
@pytest.mark.parametrize("case", list(CASES))
def test_consecutive_indices_become_a_slice(case, as_node):
    x_shape, x_type, indices, axis, ops_left = CASES[case]
    model = _model(x_shape, x_type, indices, axis, as_node)
    module = import_model(model, source="test")
    assert "graph.gather" in [op.name for op in module.walk()]
    assert _canonical(model, _input(x_shape, x_type)) == ops_left


@pytest.mark.parametrize(
    "indices",
    [_i64(0, 2), _i64(1, 0), _i64(3, 3), _i64([0, 1], [3, 2]), _i64(-1, 0)],
    ids=["gap", "descending", "repeated", "rows_not_a_run", "wraps_past_the_end"],
)
def test_other_indices_stay_a_gather(indices):
    model = _model((4, 5), TensorProto.FLOAT, indices, 0)
    assert _canonical(model, _input((4, 5), TensorProto.FLOAT)) == ["graph.gather"]


def test_non_constant_indices_stay_a_gather():
    graph = helper.make_graph(
        [helper.make_node("Gather", ["x", "idx"], ["y"], axis=0)],
        "m",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, (4, 5)),
         helper.make_tensor_value_info("idx", TensorProto.INT64, (2,))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    module = import_model(model, source="test")
    GraphCanonicalizePass().apply(Context(), module)
    assert [op.name for op in module.walk() if isinstance(op, g.GraphOp)] == ["graph.gather"]
    x, idx = _input((4, 5), TensorProto.FLOAT), _i64(1, 2)
    assert np.array_equal(run(module, {"x": x, "idx": idx})["y"], onnxruntime_outputs(model, {"x": x, "idx": idx})["y"])
