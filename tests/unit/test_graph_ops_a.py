"""Comparison, logic and selection ops (Equal ... CumSum) and i64/bool tensors
through the existing ops: tiny ONNX models imported and run on the
reference interpreter, against onnxruntime. Integer and bool results must
be equal; float elementwise ones agree to rtol 1e-5 (with atol 1e-6, for
results near 0 such as sin(x) by x = pi)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from gedialects.frontend.errors import FrontendError
from gedialects.frontend.onnx_import import import_model
from gedialects.graph import ops as g
from gedialects.graph.interpreter import run
from gedialects.zoo import onnxruntime_outputs

RNG = np.random.default_rng(10)

_ONNX = {
    np.dtype(np.float32): TensorProto.FLOAT,
    np.dtype(np.float16): TensorProto.FLOAT16,
    np.dtype(np.float64): TensorProto.DOUBLE,
    np.dtype(np.int64): TensorProto.INT64,
    np.dtype(np.int32): TensorProto.INT32,
    np.dtype(np.bool_): TensorProto.BOOL,
}


def f32(*shape):
    return RNG.uniform(-3, 3, shape).astype(np.float32)


def i64(*shape, lo=-9, hi=10):
    return RNG.integers(lo, hi, shape).astype(np.int64)


def b(*shape):
    return RNG.random(shape) < 0.5


def _model(node, feeds, inits=None, opset=17):
    """One node; `feeds` are graph inputs, `inits` initializers (constants)."""
    inits = inits or {}
    inputs = [helper.make_tensor_value_info(n, _ONNX[v.dtype], v.shape) for n, v in feeds.items()]
    outputs = [helper.make_empty_tensor_value_info(o) for o in node.output]
    graph = helper.make_graph(
        [node], "m", inputs, outputs,
        [numpy_helper.from_array(np.asarray(v), n) for n, v in inits.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _check(model, feeds, exact):
    module = import_model(model, source="test")
    module.verify()
    ours = run(module, feeds)
    theirs = onnxruntime_outputs(model, feeds)
    assert ours.keys() == theirs.keys()
    for name, want in theirs.items():
        got = ours[name]
        assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
        if exact:
            np.testing.assert_array_equal(got, want)
        else:
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    return module


def _node(op, inputs, **attrs):
    return helper.make_node(op, inputs, ["y"], name=op.lower(), **attrs)


# (id, op type, feeds, initializers, attributes, opset, exact)
CASES = [
    # comparisons: broadcasting, bool results
    ("equal_f32_bcast", "Equal", {"a": f32(3, 4), "b": f32(4)}, {}, {}, 17, True),
    ("equal_i64", "Equal", {"a": i64(2, 3, lo=0, hi=3), "b": i64(2, 3, lo=0, hi=3)}, {}, {}, 17, True),
    ("equal_bool", "Equal", {"a": b(2, 3), "b": b(1, 3)}, {}, {}, 17, True),
    ("less_f32_bcast", "Less", {"a": f32(2, 1, 4), "b": f32(3, 1)}, {}, {}, 17, True),
    ("less_i64", "Less", {"a": i64(5), "b": i64(5)}, {}, {}, 17, True),
    ("greater_f32", "Greater", {"a": f32(2, 3), "b": f32(2, 3)}, {}, {}, 17, True),
    ("greater_i32_scalar", "Greater", {"a": i64(2, 3).astype(np.int32)}, {"b": np.array(0, np.int32)}, {}, 17, True),
    ("less_equal_i64_bcast", "LessOrEqual", {"a": i64(4, 1), "b": i64(3)}, {}, {}, 17, True),
    ("greater_equal_f32", "GreaterOrEqual", {"a": f32(3, 4).round(), "b": f32(1, 4).round()}, {}, {}, 17, True),
    # logic
    ("and_bcast", "And", {"a": b(2, 3, 4), "b": b(3, 1)}, {}, {}, 17, True),
    ("or", "Or", {"a": b(3, 4), "b": b(3, 4)}, {}, {}, 17, True),
    ("xor_bcast", "Xor", {"a": b(4), "b": b(2, 1)}, {}, {}, 17, True),
    ("not", "Not", {"a": b(2, 5)}, {}, {}, 17, True),
    # selection
    ("where_f32_bcast", "Where", {"c": b(3, 1), "t": f32(1, 4), "f": f32()}, {}, {}, 17, True),
    ("where_i64", "Where", {"c": b(2, 3), "t": i64(2, 3), "f": i64(3)}, {}, {}, 17, True),
    ("where_f16", "Where", {"c": b(4), "t": f32(2, 4).astype(np.float16), "f": f32(1).astype(np.float16)}, {}, {}, 17, True),
    ("expand_f32_bidirectional", "Expand", {"x": f32(3, 1)}, {"s": np.array([2, 1, 4])}, {}, 17, True),
    ("expand_i64_fewer_dims", "Expand", {"x": i64(2, 1, 3)}, {"s": np.array([4, 1])}, {}, 17, True),
    ("expand_bool", "Expand", {"x": b(1, 3)}, {"s": np.array([2, 3])}, {}, 13, True),
    ("tile_f32", "Tile", {"x": f32(2, 3)}, {"r": np.array([2, 1])}, {}, 17, True),
    ("tile_i64_zero", "Tile", {"x": i64(2, 3)}, {"r": np.array([1, 0])}, {}, 17, True),
    ("tile_bool", "Tile", {"x": b(2, 1, 2)}, {"r": np.array([1, 3, 2])}, {}, 17, True),
    ("trilu_upper", "Trilu", {"x": f32(3, 4)}, {}, {}, 14, True),
    ("trilu_lower_k", "Trilu", {"x": f32(2, 4, 3)}, {"k": np.array(-1)}, {"upper": 0}, 14, True),
    ("trilu_upper_k_i64", "Trilu", {"x": i64(5, 3)}, {"k": np.array(1)}, {}, 14, True),
    ("trilu_bool", "Trilu", {"x": b(4, 4)}, {}, {"upper": 0}, 14, True),
    ("cumsum_f32", "CumSum", {"x": f32(3, 4)}, {"axis": np.array(1)}, {}, 14, False),
    ("cumsum_exclusive", "CumSum", {"x": f32(3, 4)}, {"axis": np.array(0)}, {"exclusive": 1}, 14, False),
    ("cumsum_reverse_neg_axis", "CumSum", {"x": f32(2, 3, 4)}, {"axis": np.array(-1, np.int32)}, {"reverse": 1}, 14, False),
    ("cumsum_i64_both", "CumSum", {"x": i64(2, 5)}, {"axis": np.array([1])}, {"reverse": 1, "exclusive": 1}, 14, True),
    # Mod: the sign of the divisor (fmod = 0) or of the dividend (fmod = 1)
    ("mod_i64", "Mod", {"a": i64(2, 4), "b": i64(4, lo=1, hi=5) * np.array([1, -1, 1, -1])}, {}, {}, 13, True),
    ("mod_i32_fmod", "Mod", {"a": i64(3, 4).astype(np.int32), "b": np.array([3, -3, 2, -7], np.int32)}, {}, {"fmod": 1}, 13, True),
    ("mod_f32_fmod", "Mod", {"a": f32(2, 3) * 3, "b": f32(3)}, {}, {"fmod": 1}, 13, False),
    # Range of graph inputs (a `?` result) and of constants (folded)
    ("range_f32", "Range", {"s": np.array(1.5, np.float32), "l": np.array(7.0, np.float32), "d": np.array(0.5, np.float32)}, {}, {}, 17, False),
    ("range_i64_negative", "Range", {"s": np.array(10), "l": np.array(-3), "d": np.array(-3)}, {}, {}, 17, True),
    ("range_i64_empty", "Range", {"s": np.array(5), "l": np.array(1), "d": np.array(2)}, {}, {}, 17, True),
    ("range_constant", "Range", {}, {"s": np.array(2), "l": np.array(11), "d": np.array(4)}, {}, 17, True),
    # float elementwise
    ("sin", "Sin", {"x": f32(3, 4)}, {}, {}, 17, False),
    ("cos", "Cos", {"x": f32(3, 4)}, {}, {}, 17, False),
    ("sin_f64", "Sin", {"x": f32(5).astype(np.float64)}, {}, {}, 17, False),
    ("softplus", "Softplus", {"x": np.concatenate([f32(8), [-100, -20, 20, 100]]).astype(np.float32)}, {}, {}, 17, False),
    ("hard_sigmoid_default", "HardSigmoid", {"x": f32(3, 4) * 2}, {}, {}, 17, False),
    ("hard_sigmoid_alpha_beta", "HardSigmoid", {"x": f32(3, 4)}, {}, {"alpha": 0.5, "beta": 0.6}, 17, False),
    ("hard_swish", "HardSwish", {"x": f32(3, 4) * 2}, {}, {}, 17, False),
]


@pytest.mark.parametrize(
    "op, feeds, inits, attrs, opset, exact",
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_op_matches_onnxruntime(op, feeds, inits, attrs, opset, exact):
    node = _node(op, [*feeds, *inits], **attrs)
    _check(_model(node, feeds, inits, opset), feeds, exact)


def test_where_of_bool_values():
    """onnxruntime has no bool Where; numpy is the reference."""
    feeds = {"c": b(4), "t": b(2, 4), "f": b(1)}
    module = import_model(_model(_node("Where", list(feeds)), feeds), source="test")
    module.verify()
    got = run(module, feeds)["y"]
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, np.where(feeds["c"], feeds["t"], feeds["f"]))


def test_range_of_inputs_is_a_graph_range_with_unknown_length():
    feeds = {"s": np.array(0), "l": np.array(5), "d": np.array(1)}
    module = _check(_model(_node("Range", list(feeds)), feeds), feeds, True)
    (op,) = [o for o in module.walk() if isinstance(o, g.RangeOp)]
    assert g.shape_of(op.output) == (g.DYN,)


def test_range_of_constants_folds():
    model = _model(_node("Range", ["s", "l", "d"]), {}, {"s": np.array(0.0, np.float32), "l": np.array(1.0, np.float32), "d": np.array(0.25, np.float32)})
    module = import_model(model, source="test")
    assert not any(isinstance(o, g.RangeOp) for o in module.walk())
    np.testing.assert_array_equal(run(module, {})["y"], np.array([0, 0.25, 0.5, 0.75], np.float32))


def test_comparison_chain_is_not_loop_fused():
    """Bool-valued ops stay out of the loop fusion of the float ops around
    them; they fuse only into the where that reads them (MaskWhereFusionPass)."""
    from gedialects.graph.fusion.rules.loop import fusable

    feeds = {"a": f32(2, 3), "b": f32(2, 3)}
    nodes = [
        helper.make_node("Less", ["a", "b"], ["c"], name="less"),
        helper.make_node("Not", ["c"], ["n"], name="not"),
        helper.make_node("Sin", ["a"], ["s"], name="sin"),
        helper.make_node("Mod", ["s", "b"], ["m"], name="mod", fmod=1),
        helper.make_node("Where", ["n", "m", "b"], ["y"], name="where"),
    ]
    graph = helper.make_graph(
        nodes, "m",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, v.shape) for n, v in feeds.items()],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    module = import_model(model, source="test")
    kinds = {type(o): fusable(o) for o in module.walk() if isinstance(o, g.GraphOp)}
    assert kinds == {g.LessOp: False, g.NotOp: False, g.SinOp: True, g.ModOp: True, g.WhereOp: False}

    from gedialects.graph.transforms.fuse import fuse

    before = run(module, feeds)["y"]
    fuse(module)
    module.verify()
    loop, mask = [o for o in module.walk() if isinstance(o, g.FusionOp)]
    assert [o.name for o in loop.body.block.ops] == ["graph.sin", "graph.mod", "graph.yield"]
    assert [o.name for o in mask.body.block.ops] == ["graph.less", "graph.not", "graph.where", "graph.yield"]
    top = [o.name for o in module.body.block.first_op.body.block.ops]
    assert top == ["graph.fusion", "graph.fusion", "func.return"]
    np.testing.assert_array_equal(run(module, feeds)["y"], before)


def test_memory_plan_of_bool_results():
    """A bool result is 1/4 of its f32 operand: never written in place of it;
    a bool op over a dying bool operand is (same size, same index)."""
    from gedialects.graph.interpreter import main_function
    from gedialects.graph.memory.execute import run_planned
    from gedialects.graph.memory.lifetimes import analyse
    from gedialects.graph.memory.verify import verify_plan
    from gedialects.graph.transforms.plan_memory import plan_function

    feeds = {"a": f32(4, 256), "b": f32(4, 256)}
    nodes = [
        helper.make_node("Sin", ["a"], ["s"], name="sin"),
        helper.make_node("Less", ["s", "b"], ["c"], name="less"),
        helper.make_node("Not", ["c"], ["n"], name="not"),
        helper.make_node("Cast", ["n"], ["y"], name="cast", to=TensorProto.FLOAT),
    ]
    module = import_model(_chain(nodes, feeds), source="test")
    fn = main_function(module)
    assert plan_function(fn, alignment=32)
    verify_plan(fn)
    how = {t.value.owner.name: t.how for t in analyse(fn, 32).tensors}
    assert how == {"graph.sin": "own", "graph.less": "own", "graph.not": "in-place", "graph.cast": "own"}
    np.testing.assert_array_equal(run_planned(module, feeds)["y"], run(module, feeds)["y"])


def test_float_functions_run_inside_a_loop_fusion():
    from gedialects.graph.transforms.fuse import fuse

    feeds = {"a": f32(2, 8)}
    nodes = [
        helper.make_node("Sin", ["a"], ["s"]),
        helper.make_node("Cos", ["s"], ["c"]),
        helper.make_node("Softplus", ["c"], ["p"]),
        helper.make_node("HardSigmoid", ["p"], ["h"], alpha=0.3),
        helper.make_node("HardSwish", ["h"], ["y"]),
    ]
    model = _chain(nodes, feeds)
    module = import_model(model, source="test")
    fuse(module)
    module.verify()
    (fusion,) = [o for o in module.walk() if isinstance(o, g.FusionOp)]
    assert len(list(fusion.body.block.ops)) == 6
    np.testing.assert_allclose(run(module, feeds)["y"], onnxruntime_outputs(model, feeds)["y"], rtol=1e-5, atol=1e-6)


# ------------------------------------- i64 and bool through the existing ops

def _chain(nodes, feeds, inits=None, opset=17):
    graph = helper.make_graph(
        nodes, "m",
        [helper.make_tensor_value_info(n, _ONNX[v.dtype], v.shape) for n, v in feeds.items()],
        [helper.make_empty_tensor_value_info(o) for n in nodes[-1:] for o in n.output],
        [numpy_helper.from_array(np.asarray(v), n) for n, v in (inits or {}).items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


DATA_MOVEMENT = [
    ("reshape", lambda: [helper.make_node("Reshape", ["x", "shape"], ["y"])], {"shape": np.array([3, -1])}),
    ("concat", lambda: [helper.make_node("Concat", ["x", "x"], ["y"], axis=1)], {}),
    ("gather", lambda: [helper.make_node("Gather", ["x", "idx"], ["y"], axis=1)], {"idx": np.array([[2, 0], [-1, 1]])}),
    ("slice", lambda: [helper.make_node("Slice", ["x", "st", "en"], ["y"])], {"st": np.array([0, 1]), "en": np.array([1, 3])}),
    ("squeeze_unsqueeze", lambda: [
        helper.make_node("Unsqueeze", ["x", "ax"], ["u"]),
        helper.make_node("Squeeze", ["u", "ax"], ["y"]),
    ], {"ax": np.array([1])}),
    ("transpose", lambda: [helper.make_node("Transpose", ["x"], ["y"], perm=[1, 0])], {}),
    ("identity", lambda: [helper.make_node("Identity", ["x"], ["y"])], {}),
    ("flatten", lambda: [helper.make_node("Flatten", ["x"], ["y"], axis=0)], {}),
    ("split", lambda: [helper.make_node("Split", ["x", "sp"], ["y", "z"], axis=1)], {"sp": np.array([1, 2])}),
]


@pytest.mark.parametrize("dtype", [np.int64, np.bool_], ids=["i64", "bool"])
@pytest.mark.parametrize("name, nodes, inits", DATA_MOVEMENT, ids=[c[0] for c in DATA_MOVEMENT])
def test_data_movement_of_i64_and_bool(name, nodes, inits, dtype):
    x = i64(2, 3).astype(dtype)
    _check(_chain(nodes(), {"x": x}, inits), {"x": x}, True)


@pytest.mark.parametrize(
    "src, to",
    [(np.float32, TensorProto.BOOL), (np.int64, TensorProto.BOOL), (np.bool_, TensorProto.FLOAT),
     (np.bool_, TensorProto.INT64), (np.float32, TensorProto.INT64), (np.int64, TensorProto.FLOAT16)],
    ids=["f32_to_bool", "i64_to_bool", "bool_to_f32", "bool_to_i64", "f32_to_i64", "i64_to_f16"],
)
def test_cast_from_and_to_bool(src, to):
    x = np.array([[0.0, -1.5, 2.0], [0.25, 0.0, 7.0]]).astype(src)
    _check(_chain([helper.make_node("Cast", ["x"], ["y"], to=to)], {"x": x}), {"x": x}, True)


def test_mask_pipeline_of_i64_and_bool():
    """A causal mask as exporters write it: positions from Range, compared,
    negated, then selecting between scores and -inf."""
    scores = f32(4, 4)
    feeds = {"scores": scores, "n": np.array(4)}
    nodes = [
        helper.make_node("Range", ["zero", "n", "one"], ["pos"]),
        helper.make_node("Unsqueeze", ["pos", "ax1"], ["col"]),
        helper.make_node("Unsqueeze", ["pos", "ax0"], ["row"]),
        helper.make_node("LessOrEqual", ["row", "col"], ["keep"]),
        helper.make_node("Cast", ["keep"], ["keep_i"], to=TensorProto.INT64),
        helper.make_node("Cast", ["keep_i"], ["keep_b"], to=TensorProto.BOOL),
        helper.make_node("Not", ["keep_b"], ["drop"]),
        helper.make_node("Where", ["drop", "ninf", "scores"], ["y"]),
    ]
    inits = {"zero": np.array(0), "one": np.array(1), "ax0": np.array([0]), "ax1": np.array([1]),
             "ninf": np.array(-np.inf, np.float32)}
    _check(_chain(nodes, feeds, inits), feeds, True)


# -------------------------------------------------------- importer errors


@pytest.mark.parametrize(
    "node, inits, message",
    [
        (_node("Mod", ["a", "b"], fmod=2), {}, "node 'mod' (Mod, opset 17): attribute 'fmod' is a flag: 0 or 1, got 2"),
        (_node("CumSum", ["a", "axis"], exclusive=3), {"axis": np.array(0)}, "node 'cumsum' (CumSum, opset 17): attribute 'exclusive' is a flag: 0 or 1, got 3"),
        (_node("Trilu", ["a"], upper=5), {}, "node 'trilu' (Trilu, opset 17): attribute 'upper' is a flag: 0 or 1, got 5"),
        (_node("Expand", ["a", "s"]), {"s": np.array([[2, 3]])}, "Expand's shape must be a 1-d integer tensor, got int64 of shape 1x2"),
        (_node("Tile", ["a", "r"]), {"r": np.array([2])}, "repeats [2] must have one entry per dim of 2x3"),
        (_node("Expand", ["a", "s"]), {"s": np.array([4, 3])}, "input 2x3 does not broadcast to shape [4, 3]"),
        (_node("CumSum", ["a", "axis"]), {"axis": np.array([0, 1])}, "CumSum's axis must be an integer scalar"),
        (_node("Range", ["s", "l", "d"]), {"s": np.array(0), "l": np.array(3), "d": np.array(0)}, "delta must not be 0"),
    ],
    ids=["mod_fmod", "cumsum_flag", "trilu_upper", "expand_rank", "tile_length", "expand_broadcast", "cumsum_axis", "range_delta"],
)
def test_importer_errors(node, inits, message):
    feeds = {"a": f32(2, 3), "b": f32(2, 3)}
    feeds = {n: v for n, v in feeds.items() if n in node.input}
    model = _model(node, feeds, inits, opset=17)
    with pytest.raises(FrontendError, match=r"^test: " + re.escape(message)):
        import_model(model, source="test")


def test_expand_shape_must_be_constant():
    feeds = {"a": f32(2, 3), "s": np.array([2, 3])}
    with pytest.raises(FrontendError, match="Expand's shape must be a constant known at import"):
        import_model(_model(_node("Expand", ["a", "s"]), feeds), source="test")
