"""GatherND (graph.gather_nd), CastLike (graph.cast to the type of its second
input) and Size (a constant at import), each on the reference interpreter
against onnxruntime. Every result here is data movement or a cast, so every
comparison is exact.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper
from xdsl.utils.exceptions import InterpretationError

from gedialects.frontend.errors import FrontendError
from gedialects.frontend.onnx_import import import_model
from gedialects.graph import interpreter
from gedialects.graph import ops as g
from gedialects.zoo import onnxruntime_outputs
from test_graph_ops_b import _model  # one ONNX model builder for the op tests

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

RNG = np.random.default_rng(11)

F32 = np.float32
I64 = np.int64


def check(model, feeds):
    """Our outputs equal onnxruntime's (shape, dtype and every element)."""
    module = import_model(model)
    module.verify()
    ours, theirs = interpreter.run(module, feeds), onnxruntime_outputs(model, feeds)
    assert set(ours) == set(theirs)
    for name, want in theirs.items():
        got = ours[name]
        assert got.shape == want.shape, (name, got.shape, want.shape)
        assert got.dtype == want.dtype, (name, got.dtype, want.dtype)
        np.testing.assert_array_equal(got, want, err_msg=name)
    return module


def ops_of(module, op_type):
    return [op for op in interpreter.main_function(module).body.walk() if isinstance(op, op_type)]


def rand(*shape, dtype=F32):
    return RNG.standard_normal(shape).astype(dtype)


def tuples(dims, batch_shape, m, negative=True):
    """Random index tuples of length m into `dims`, some negative."""
    cols = [RNG.integers(-d if negative else 0, d, batch_shape) for d in dims[:m]]
    return np.stack(cols, -1).astype(I64)


# ------------------------------------------------------------------ GatherND


@pytest.mark.parametrize("opset", [11, 12, 13])
@pytest.mark.parametrize(
    "data_shape, idx_shape",
    [
        ((2, 2), (2, 2)),  # the spec's examples: elements ...
        ((2, 2), (2, 1)),  # ... rows
        ((2, 2, 2), (2, 1, 2)),
        ((3, 4, 5), (6, 3)),  # m = rank: one element per tuple
        ((3, 4, 5), (2, 3, 1)),
        ((3, 4, 5), (4,)),  # a single tuple: a 0-d result
        ((3, 4), (0, 2)),  # no tuples at all
    ],
)
def test_gather_nd(opset, data_shape, idx_shape):
    x = rand(*data_shape)
    idx = tuples(data_shape, idx_shape[:-1], idx_shape[-1])
    node = helper.make_node("GatherND", ["x", "i"], ["y"])
    feeds = {"x": x, "i": idx}
    check(_model([node], feeds, opset=opset), feeds)


@pytest.mark.parametrize("opset", [12, 13])
@pytest.mark.parametrize(
    "batch_dims, data_shape, idx_shape",
    [
        (1, (2, 2, 2), (2, 1)),  # the spec's batch_dims = 1 example
        (1, (2, 3, 4), (2, 5, 2)),
        (1, (3, 4, 5), (3, 1)),
        (2, (2, 3, 4, 5), (2, 3, 4, 1)),
        (2, (2, 3, 4), (2, 3, 1)),  # m = rank - batch_dims
    ],
)
def test_gather_nd_batch_dims(opset, batch_dims, data_shape, idx_shape):
    x = rand(*data_shape)
    idx = tuples(data_shape[batch_dims:], idx_shape[:-1], idx_shape[-1])
    node = helper.make_node("GatherND", ["x", "i"], ["y"], batch_dims=batch_dims)
    feeds = {"x": x, "i": idx}
    module = check(_model([node], feeds, opset=opset), feeds)
    assert [op.int_("batch_dims", 0) for op in ops_of(module, g.GatherNDOp)] == [batch_dims]


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.bool_, np.float16])
def test_gather_nd_element_types(dtype):
    x = RNG.integers(0, 2 if dtype == np.bool_ else 100, (3, 4, 5)).astype(dtype)
    idx = tuples(x.shape, (2, 3), 2)
    node = helper.make_node("GatherND", ["x", "i"], ["y"])
    feeds = {"x": x, "i": idx}
    check(_model([node], feeds, opset=13), feeds)


def test_gather_nd_logits_at_arange_idx():
    """The dynamo exporter's `logits[torch.arange(B), idx]`: the index tuples
    are stacked in the graph from a range and a run-time index."""
    b, s, v = 3, 5, 7
    logits, idx = rand(b, s, v), np.array([4, 0, 2], I64)
    nodes = [
        helper.make_node("Range", ["zero", "b", "one"], ["ar"]),
        helper.make_node("Unsqueeze", ["ar", "last"], ["ar1"]),
        helper.make_node("Unsqueeze", ["idx", "last"], ["idx1"]),
        helper.make_node("Concat", ["ar1", "idx1"], ["tup"], axis=-1),
        helper.make_node("GatherND", ["logits", "tup"], ["y"]),
    ]
    inits = {"zero": np.array(0, I64), "b": np.array(b, I64), "one": np.array(1, I64), "last": np.array([-1], I64)}
    feeds = {"logits": logits, "idx": idx}
    module = check(_model(nodes, feeds, inits, opset=18), feeds)
    (op,) = ops_of(module, g.GatherNDOp)
    assert g.shape_of(op.output) == (b, v)


def test_gather_nd_hidden_first_token():
    """`hidden[:, 0]` as a batched GatherND (batch_dims = 1, one 0 per row)."""
    hidden = rand(2, 6, 8)
    node = helper.make_node("GatherND", ["h", "zeros"], ["y"], batch_dims=1)
    model = _model([node], {"h": hidden}, {"zeros": np.zeros((2, 1), I64)}, opset=13)
    check(model, {"h": hidden})
    np.testing.assert_array_equal(interpreter.run(import_model(model), {"h": hidden})["y"], hidden[:, 0])


def test_gather_nd_bool_mask_pattern():
    """The zoo's dynamo models: a (1, 16) bool mask indexed by (1, 1, 1, 16, 2) tuples."""
    mask = RNG.integers(0, 2, (1, 16)).astype(np.bool_)
    tup = np.stack(np.broadcast_arrays(np.zeros(16, I64), np.arange(16)[::-1]), -1).reshape(1, 1, 1, 16, 2)
    node = helper.make_node("GatherND", ["m", "t"], ["y"])
    feeds = {"m": mask, "t": tup.astype(I64)}
    check(_model([node], feeds, opset=18), feeds)


def test_gather_nd_folds_constants():
    x, idx = rand(3, 4), np.array([[0, -1], [2, 1]], I64)
    node = helper.make_node("GatherND", ["x", "i"], ["y"])
    model = _model([node], {}, {"x": x, "i": idx}, opset=13)
    module = check(model, {})
    assert not ops_of(module, g.GatherNDOp)


def test_gather_nd_index_out_of_range():
    x, idx = rand(3, 4), np.array([[0, 4]], I64)
    node = helper.make_node("GatherND", ["x", "i"], ["y"])
    module = import_model(_model([node], {"x": x, "i": idx}, opset=13))
    with pytest.raises(InterpretationError, match=r"graph.gather_nd.*index out of range of dims \(3, 4\)"):
        interpreter.run(module, {"x": x, "i": idx})


@pytest.mark.parametrize(
    "batch_dims, idx_shape, message",
    [
        (0, (2, 3), r"the last dim 3 of indices 2x3 must be in \[1, 2\] \(input rank 2 minus batch_dims 0\)"),
        (1, (3, 1), r"batch dim 0 of the input 2x4 and the indices 3x1 differ"),
        (2, (2, 1), r"batch_dims 2 must be in \[0, 1\] for input 2x4 and indices 2x1"),
    ],
)
def test_gather_nd_importer_errors(batch_dims, idx_shape, message):
    x, idx = rand(2, 4), np.zeros(idx_shape, I64)
    node = helper.make_node("GatherND", ["x", "i"], ["y"], batch_dims=batch_dims, name="gnd")
    with pytest.raises(FrontendError, match=message + r" \(node 'gnd', GatherND, opset 13\)"):
        import_model(_model([node], {"x": x, "i": idx}, opset=13))


# ------------------------------------------------------------------ CastLike


@pytest.mark.parametrize(
    "src, dst",
    [
        (np.float32, np.float16),
        (np.float16, np.float32),
        (np.float32, np.float64),
        (np.float32, np.int64),
        (np.int64, np.float32),
        (np.int32, np.int8),
        (np.float32, np.bool_),
        (np.bool_, np.float32),
        (np.uint8, np.int16),
    ],
)
@pytest.mark.parametrize("like_is_constant", [False, True])
def test_cast_like(src, dst, like_is_constant):
    if np.issubdtype(src, np.floating):
        x = (RNG.standard_normal((3, 4)) * 20).astype(src)  # within every target's range
    else:
        x = RNG.integers(0 if src in (np.bool_, np.uint8) else -100, 2 if src == np.bool_ else 100, (3, 4)).astype(src)
    like = np.zeros((2,), dst)
    node = helper.make_node("CastLike", ["x", "like"], ["y"])
    feeds = {"x": x} if like_is_constant else {"x": x, "like": like}
    model = _model([node], feeds, {"like": like} if like_is_constant else None, opset=15)
    module = check(model, feeds)
    (cast,) = ops_of(module, g.CastOp)
    assert g.shape_of(cast.output) == (3, 4)
    # A constant target type is read, not materialised.
    assert not ops_of(module, g.ConstantOp) or not like_is_constant


@pytest.mark.parametrize("opset", [15, 19, 21])
def test_cast_like_constant_input_folds(opset):
    """The expanded functions' CastLike(-inf, Q): the value is constant, the
    type comes from a graph input; it folds, so it may feed an input that
    must be constant (Pad's constant_value)."""
    q = rand(1, 2, 3, 3).astype(np.float16)
    nodes = [
        helper.make_node("CastLike", ["neg_inf", "q"], ["v"]),
        helper.make_node("Pad", ["q", "pads", "v"], ["y"], mode="constant"),
    ]
    inits = {"neg_inf": np.array(-np.inf, F32), "pads": np.array([0, 0, 0, 1, 0, 0, 0, 2], I64)}
    module = check(_model(nodes, {"q": q}, inits, opset=opset), {"q": q})
    assert not ops_of(module, g.CastOp)
    (pad,) = ops_of(module, g.PadOp)
    assert pad.float_("value", 0.0) == -np.inf


def test_cast_like_all_constant():
    x, like = np.array([1.5, -2.5, 3.0], F32), np.array(7, I64)
    node = helper.make_node("CastLike", ["x", "like"], ["y"])
    module = check(_model([node], {}, {"x": x, "like": like}, opset=15), {})
    assert not ops_of(module, g.CastOp)


# ---------------------------------------------------------------------- Size


@pytest.mark.parametrize("opset", [13, 19, 21])
@pytest.mark.parametrize("shape", [(3, 4, 5), (), (2, 0, 3)])
def test_size(opset, shape):
    x = rand(*shape)
    nodes = [helper.make_node("Size", ["x"], ["n"]), helper.make_node("Add", ["n", "k"], ["y"])]
    inits = {"k": np.array(1, I64)}
    module = check(_model(nodes, {"x": x}, inits, opset=opset), {"x": x})
    assert not ops_of(module, g.AddOp)  # Size is a constant, so Size + 1 folds


def test_size_of_a_constant():
    node = helper.make_node("Size", ["c"], ["y"])
    check(_model([node], {}, {"c": rand(2, 7)}, opset=13), {})


def test_size_dynamic_shape_is_refused():
    graph = helper.make_graph(
        [helper.make_node("Size", ["x"], ["y"], name="size")],
        "ops_c",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])],
        [helper.make_empty_tensor_value_info("y")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    with pytest.raises(FrontendError, match=r"Size of a tensor of dynamic shape \?x3 is not supported; fix it with --input-shape \(node 'size', Size, opset 13\)"):
        import_model(model)
    module = import_model(model, {"x": [4, 3]})
    assert interpreter.run(module, {"x": rand(4, 3)})["y"] == 12
