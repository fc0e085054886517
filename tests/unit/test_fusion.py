"""Numerics of graph-fuse: for every rule a small ONNX model of our own (random
weights, tiny shapes) and the nine light models; the reference interpreter
must agree with onnxruntime before and after fusion, and the rule must fire.

The light models are checked after fusion only (before fusion is
test_light_models.py), with shipped weights, and with random weights (then
also their logits, as the probabilities saturate) except for vgg19, alexnet
and zfnet512: their random fully-connected weights (100M+ floats) make
import alone take tens of seconds.
"""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.context import Context

from gedialects.frontend.onnx_import import import_model
from gedialects.graph import ops as g
from gedialects.graph.fusion import (
    OTHER_USERS,
    SWITCHED_OFF,
    FusionRule,
    Match,
    Rewrite,
    Switches,
    parse_switch_text,
    register_rule,
    registered_rules,
    unregister_rule,
)
from gedialects.graph.interpreter import run
from gedialects.graph.transforms.canonicalize import GraphCanonicalizePass
from gedialects.graph.transforms.fuse import GraphFusePass, fuse
from gedialects.numerics import assert_close
from gedialects.zoo import (
    LIGHT_MODELS,
    light_model_path,
    onnxruntime_outputs,
    random_inputs,
    with_random_weights,
)

rng = np.random.default_rng(0)


def _w(*shape, scale: float = 0.5) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def _model(nodes, inputs, outputs, inits=(), opset=17) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs.items()],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs],
        [numpy_helper.from_array(np.asarray(v), n) for n, v in dict(inits).items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _fused(model: onnx.ModelProto, feeds=None):
    """Import, canonicalize, check before/after graph-fuse against onnxruntime;
    return the fused module and the applied-rule counts."""
    feeds = feeds or random_inputs(model, seed=3)
    module = import_model(model, source="test")
    GraphCanonicalizePass().apply(Context(), module)
    before = run(module, feeds)
    result = fuse(module)
    module.verify()
    after = run(module, feeds)
    theirs = onnxruntime_outputs(model, feeds)
    for key, want in theirs.items():
        assert_close(before[key], want, "must_keep_origin_dtype", err_msg=key)
        assert_close(after[key], want, "must_keep_origin_dtype", err_msg=key)
    applied = Counter(r.rule for r in result.remarks if r.kind == "applied")
    return module, applied, result


def _ops(module) -> Counter:
    fn = module.ops.first
    return Counter(op.name for op in fn.body.block.ops if not isinstance(op, g.ConstantOp | g.FillOp))


def _node(op, ins, outs, name=None, **attrs):
    return helper.make_node(op, ins, outs, name=name or outs[0], **attrs)


# ------------------------------------------------------------------ conv


@pytest.mark.parametrize("with_bias", [True, False])
def test_conv_batchnorm_relu(with_bias):
    c = 4
    inits = {
        "w": _w(c, 3, 3, 3),
        "s": rng.uniform(0.5, 1.5, c).astype(np.float32),
        "t": _w(c),
        "m": _w(c),
        "v": rng.uniform(0.5, 1.5, c).astype(np.float32),
    }
    conv_in = ["x", "w"]
    if with_bias:
        inits["b"] = _w(c)
        conv_in.append("b")
    model = _model(
        [
            _node("Conv", conv_in, ["c"], pads=[1, 1, 1, 1]),
            _node("BatchNormalization", ["c", "s", "t", "m", "v"], ["n"], epsilon=1e-3),
            _node("Relu", ["n"], ["y"]),
        ],
        {"x": [1, 3, 6, 6]},
        ["y"],
        inits,
    )
    module, applied, _ = _fused(model)
    assert applied == {"ConvBatchnormFusionPass": 1, "ConvActivationFusionPass": 1}
    assert _ops(module) == {"graph.conv": 1, "func.return": 1}


@pytest.mark.parametrize(
    "act, attrs, kind",
    [
        ("Relu", {}, "relu"),
        ("Sigmoid", {}, "sigmoid"),
        ("LeakyRelu", {"alpha": 0.2}, "leaky_relu"),
        ("Tanh", {}, "tanh"),
        ("Clip", {}, "clip"),
        ("HardSigmoid", {"alpha": 0.25, "beta": 0.4}, "hard_sigmoid"),
        ("HardSwish", {}, "hard_swish"),
    ],
)
def test_conv_activation(act, attrs, kind):
    inits = {"w": _w(4, 3, 1, 1), "b": _w(4)}
    ins = ["c"]
    if act == "Clip":  # ReLU6
        inits.update(lo=np.array(0.0, np.float32), hi=np.array(6.0, np.float32))
        ins += ["lo", "hi"]
    model = _model(
        [_node("Conv", ["x", "w", "b"], ["c"]), _node(act, ins, ["y"], **attrs)],
        {"x": [1, 3, 5, 5]},
        ["y"],
        inits,
    )
    feeds = {"x": (rng.standard_normal((1, 3, 5, 5)) * 6).astype(np.float32)}
    module, applied, _ = _fused(model, feeds)
    assert applied == {"ConvActivationFusionPass": 1}
    (conv,) = [op for op in module.walk() if isinstance(op, g.ConvOp)]
    assert conv.str_("activation", "") == kind


@pytest.mark.parametrize("op_type", ["Add", "Sum"])
def test_conv_residual_relu(op_type):
    model = _model(
        [
            _node("Conv", ["x", "w1"], ["a"], pads=[1, 1, 1, 1]),
            _node("Relu", ["a"], ["r"]),
            _node("Conv", ["r", "w2", "b2"], ["c"], pads=[1, 1, 1, 1]),
            _node(op_type, ["x", "c"], ["s"]),
            _node("Relu", ["s"], ["y"]),
        ],
        {"x": [1, 4, 5, 5]},
        ["y"],
        {"w1": _w(4, 4, 3, 3), "w2": _w(4, 4, 3, 3), "b2": _w(4)},
    )
    module, applied, _ = _fused(model)
    assert applied == {"ConvActivationFusionPass": 2, "ConvAddFusionPass": 1}
    assert _ops(module) == {"graph.conv": 2, "func.return": 1}


def test_conv_scale_like_densenet():
    """BatchNorm exported as Mul + Add by per-channel constants (C, 1, 1)."""
    model = _model(
        [
            _node("Conv", ["x", "w"], ["c"]),
            _node("Mul", ["c", "k"], ["m"]),
            _node("Add", ["d", "m"], ["a"]),
            _node("Sub", ["a", "e"], ["s"]),
            _node("Relu", ["s"], ["y"]),
        ],
        {"x": [1, 3, 4, 4]},
        ["y"],
        {"w": _w(5, 3, 3, 3), "k": _w(5, 1, 1), "d": _w(5, 1, 1), "e": _w(1)},
    )
    module, applied, _ = _fused(model)
    assert applied == {"ConvScaleFusionPass": 3, "ConvActivationFusionPass": 1}
    assert _ops(module) == {"graph.conv": 1, "func.return": 1}


# ---------------------------------------------------------------- matmul


def test_matmul_bias_first_operand_to_gemm_relu():
    model = _model(
        [_node("MatMul", ["x", "w"], ["m"]), _node("Add", ["b", "m"], ["a"]), _node("Relu", ["a"], ["y"])],
        {"x": [3, 8]},
        ["y"],
        {"w": _w(8, 6), "b": _w(6)},
    )
    module, applied, _ = _fused(model)
    assert applied == {"MatMulBiasAddFusionPass": 1, "GemmActivationFusionPass": 1}
    assert _ops(module) == {"graph.gemm": 1, "func.return": 1}


def test_batched_matmul_broadcast_bias_gelu():
    """3-d matmul + (1, 6) bias + erf-GELU: gelu is rebuilt, then becomes the epilogue."""
    model = _model(
        [
            _node("MatMul", ["x", "w"], ["m"]),
            _node("Add", ["m", "b"], ["a"]),
            _node("Div", ["a", "sqrt2"], ["d"]),
            _node("Erf", ["d"], ["e"]),
            _node("Add", ["e", "one"], ["e1"]),
            _node("Mul", ["a", "e1"], ["p"]),
            _node("Mul", ["p", "half"], ["y"]),
        ],
        {"x": [2, 3, 8]},
        ["y"],
        {
            "w": _w(8, 6),
            "b": _w(1, 6),
            "sqrt2": np.array(np.sqrt(2), np.float32),
            "one": np.array(1, np.float32),
            "half": np.array(0.5, np.float32),
        },
    )
    module, applied, _ = _fused(model)
    assert applied == {"GeluErfFusionPass": 1, "MatMulBiasAddFusionPass": 1, "MatMulActivationFusionPass": 1}
    assert _ops(module) == {"graph.matmul": 1, "func.return": 1}


def test_gemm_clip():
    model = _model(
        [_node("Gemm", ["x", "w", "b"], ["m"], transB=1), _node("Clip", ["m", "lo", "hi"], ["y"])],
        {"x": [3, 8]},
        ["y"],
        {"w": _w(6, 8), "b": _w(6), "lo": np.array(-0.5, np.float32), "hi": np.array(0.5, np.float32)},
    )
    _, applied, _ = _fused(model)
    assert applied == {"GemmActivationFusionPass": 1}


# --------------------------------------------------------------- softmax


def test_flatten_softmax_reshape_like_squeezenet():
    model = _model(
        [_node("Softmax", ["x"], ["y"], axis=1)],  # opset 11: flatten, softmax, reshape
        {"x": [1, 10, 1, 1]},
        ["y"],
        opset=11,
    )
    module, applied, _ = _fused(model)
    assert applied == {"SoftmaxReshapeFusionPass": 1, "ReshapeSoftmaxFusionPass": 1}
    assert _ops(module) == {"graph.softmax": 1, "func.return": 1}


def test_reshape_softmax_reshape_keeping_the_axis():
    model = _model(
        [
            _node("Reshape", ["x", "s1"], ["r"]),
            _node("Softmax", ["r"], ["sm"], axis=-1),
            _node("Reshape", ["sm", "s2"], ["y"]),
        ],
        {"x": [2, 3, 4, 5]},
        ["y"],
        {"s1": np.array([6, 4, 5]), "s2": np.array([2, 12, 5])},
    )
    module, applied, _ = _fused(model)
    assert applied == {"SoftmaxReshapeFusionPass": 1, "ReshapeSoftmaxFusionPass": 1}
    (sm,) = [op for op in module.walk() if isinstance(op, g.SoftmaxOp)]
    assert sm.ints("shape") == (2, 12, 5)


# ------------------------------------------------------------- layernorm


def _decomposed_layer_norm(x, out, pow_form=True):
    return [
        _node("ReduceMean", [x], [f"{out}_mean"], axes=[-1]),
        _node("Sub", [x, f"{out}_mean"], [f"{out}_d"]),
        _node("Pow", [f"{out}_d", "two"], [f"{out}_sq"])
        if pow_form
        else _node("Mul", [f"{out}_d", f"{out}_d"], [f"{out}_sq"]),
        _node("ReduceMean", [f"{out}_sq"], [f"{out}_var"], axes=[-1]),
        _node("Add", [f"{out}_var", "eps"], [f"{out}_ve"]),
        _node("Sqrt", [f"{out}_ve"], [f"{out}_std"]),
        _node("Div", [f"{out}_d", f"{out}_std"], [f"{out}_n"]),
        _node("Mul", [f"{out}_n", "gamma"], [f"{out}_g"]),
        _node("Add", ["beta", f"{out}_g"], [out]),
    ]


@pytest.mark.parametrize("pow_form", [True, False])
def test_decomposed_layer_norm_with_residual(pow_form):
    model = _model(
        [_node("Add", ["x", "r"], ["s"]), *_decomposed_layer_norm("s", "y", pow_form)],
        {"x": [2, 3, 16], "r": [2, 3, 16]},
        ["y"],
        {
            "two": np.array(2.0, np.float32),
            "eps": np.array(1e-5, np.float32),
            "gamma": _w(16),
            "beta": _w(1, 16),
        },
    )
    module, applied, _ = _fused(model)
    assert applied == {"LayerNormFusionPass": 1, "AddLayerNormFusionPass": 1}
    assert _ops(module) == {"graph.layer_norm": 1, "func.return": 1}


# ------------------------------------------------------------------ gelu


@pytest.mark.parametrize("order", ["x*a*h", "h*(x*a)", "(x*h)*a", "a*h*x", "div2"])
def test_gelu_erf_orders(order):
    consts = {
        "k": np.array(1 / np.sqrt(2), np.float32),
        "one": np.array(1, np.float32),
        "h": np.array(0.5, np.float32),
        "two": np.array(2, np.float32),
    }
    head = [_node("Mul", ["k", "x"], ["d"]), _node("Erf", ["d"], ["e"]), _node("Add", ["one", "e"], ["a"])]
    tails = {
        "x*a*h": [_node("Mul", ["x", "a"], ["p"]), _node("Mul", ["p", "h"], ["y"])],
        "h*(x*a)": [_node("Mul", ["a", "x"], ["p"]), _node("Mul", ["h", "p"], ["y"])],
        "(x*h)*a": [_node("Mul", ["x", "h"], ["p"]), _node("Mul", ["a", "p"], ["y"])],
        "a*h*x": [_node("Mul", ["a", "h"], ["p"]), _node("Mul", ["p", "x"], ["y"])],
        "div2": [_node("Mul", ["x", "a"], ["p"]), _node("Div", ["p", "two"], ["y"])],
    }
    model = _model(head + tails[order], {"x": [2, 7]}, ["y"], consts)
    module, applied, _ = _fused(model)
    assert applied == {"GeluErfFusionPass": 1}
    assert _ops(module) == {"graph.gelu": 1, "func.return": 1}


@pytest.mark.parametrize("cube", ["pow", "mul"])
def test_gelu_tanh(cube):
    cube_nodes = (
        [_node("Pow", ["x", "three"], ["c"])]
        if cube == "pow"
        else [_node("Mul", ["x", "x"], ["sq"]), _node("Mul", ["sq", "x"], ["c"])]
    )
    model = _model(
        [
            *cube_nodes,
            _node("Mul", ["c", "k"], ["kc"]),
            _node("Add", ["x", "kc"], ["i"]),
            _node("Mul", ["s", "i"], ["si"]),
            _node("Tanh", ["si"], ["t"]),
            _node("Add", ["t", "one"], ["a"]),
            _node("Mul", ["x", "h"], ["xh"]),
            _node("Mul", ["xh", "a"], ["y"]),
        ],
        {"x": [3, 5]},
        ["y"],
        {
            "three": np.array(3, np.float32),
            "k": np.array(0.044715, np.float32),
            "s": np.array(np.sqrt(2 / np.pi), np.float32),
            "one": np.array(1, np.float32),
            "h": np.array(0.5, np.float32),
        },
    )
    module, applied, _ = _fused(model)
    assert applied == {"GeluTanhFusionPass": 1}
    (gelu,) = [op for op in module.walk() if isinstance(op, g.GeluOp)]
    assert gelu.str_("approximate", "") == "tanh"


# ------------------------------------------------------------ loop fusion


def test_loop_fusion_keeps_intermediate_with_outside_users():
    model = _model(
        [
            _node("Add", ["x", "b"], ["a"]),
            _node("Exp", ["a"], ["e"]),
            _node("Mul", ["e", "h"], ["m"]),
            _node("Sub", ["m", "a"], ["y"]),
            _node("Neg", ["e"], ["z"]),
            _node("MaxPool", ["x"], ["p"], kernel_shape=[2, 2]),
            _node("Abs", ["p"], ["q"]),
        ],
        {"x": [1, 2, 4, 4]},
        ["y", "z", "e", "q"],
        {"b": _w(2, 4, 4), "h": np.array(0.5, np.float32)},
    )
    module, applied, _ = _fused(model)
    assert applied == {"ElementwiseLoopFusionPass": 1}
    (fusion,) = [op for op in module.walk() if isinstance(op, g.FusionOp)]
    assert len(fusion.outputs) == 3  # y, z and the intermediate e
    assert len(fusion.inputs) == 2  # x and the b blob; the scalar 0.5 is cloned inside


# ------------------------------------------------- switches and plugins


def test_switched_off_rule_is_a_missed_remark_and_keeps_numerics():
    model = _model(
        [_node("Conv", ["x", "w"], ["c"]), _node("Relu", ["c"], ["y"])],
        {"x": [1, 3, 4, 4]},
        ["y"],
        {"w": _w(2, 3, 1, 1)},
    )
    module = import_model(model)
    result = fuse(module, parse_switch_text("ConvActivationFusionPass:off\n"))
    (remark,) = result.remarks
    assert (remark.kind, remark.rule, remark.reason) == ("missed", "ConvActivationFusionPass", SWITCHED_OFF)
    report = result.report()["graph_fusion"]["ConvActivationFusionPass"]
    assert report == {"match_times": 1, "effect_times": 0, "switch": "off", "missed": {SWITCHED_OFF: 1}}


def test_report_file_and_disable_option(tmp_path):
    model = _model(
        [_node("Conv", ["x", "w"], ["c"]), _node("Relu", ["c"], ["r"]), _node("Relu", ["c"], ["y"])],
        {"x": [1, 3, 4, 4]},
        ["y", "r"],
        {"w": _w(2, 3, 1, 1)},
    )
    module = import_model(model)
    path = tmp_path / "fusion_result.json"
    GraphFusePass(report=str(path), disable=("GeluErfFusionPass",)).apply(Context(), module)
    report = json.loads(path.read_text())
    conv = report["graph_fusion"]["ConvActivationFusionPass"]
    assert conv["match_times"] == 1 and conv["effect_times"] == 0
    assert conv["missed"] == {OTHER_USERS: 1}
    assert report["graph_fusion"]["GeluErfFusionPass"]["switch"] == "off"
    assert "ElementwiseLoopFusionPass" in report["ub_fusion"]


def test_switch_file_forms():
    json_text = '{"Switch":{"GraphFusion":{"ALL":"off","ConvAddFusionPass":"on"},"UBFusion":{"ALL":"on"}}}'
    s = parse_switch_text(json_text)
    rules = {r.name: r for r in registered_rules()}
    assert not s.enabled(rules["ConvBatchnormFusionPass"])
    assert s.enabled(rules["ConvAddFusionPass"])
    assert s.enabled(rules["ElementwiseLoopFusionPass"])
    s = parse_switch_text("# comment\nConvBatchnormFusionPass:off\n\nConvAddFusionPass : on\n")
    assert not s.enabled(rules["ConvBatchnormFusionPass"]) and s.enabled(rules["ConvAddFusionPass"])
    assert s == Switches({"ConvBatchnormFusionPass": False, "ConvAddFusionPass": True}, {})
    with pytest.raises(ValueError, match="expected 'on' or 'off'"):
        parse_switch_text("ConvAddFusionPass:maybe")


class _DoubleNeg(FusionRule):
    """neg(neg(x)) → identity(x): a rule registered at run time."""

    name = "TestDoubleNegFusionPass"
    anchors = (g.NegOp,)

    def match(self, op):
        inner = op.input.owner
        return Match(op, [inner, op]) if isinstance(inner, g.NegOp) else None

    def rewrite(self, match):
        x = match.ops[0].input
        fused = g.IdentityOp.build_inferred([x], location=match.anchor.location)
        return Rewrite([fused], fused)


def test_run_time_registered_rule():
    model = _model(
        [_node("Neg", ["x"], ["a"]), _node("Neg", ["a"], ["y"])], {"x": [3]}, ["y"]
    )
    register_rule(_DoubleNeg)
    try:
        with pytest.raises(ValueError, match="already registered"):
            register_rule(_DoubleNeg())
        _, applied, _ = _fused(model)
        assert applied == {"TestDoubleNegFusionPass": 1}
    finally:
        unregister_rule("TestDoubleNegFusionPass")


# ---------------------------------------------------------- light models

SLOW_RANDOM = {"vgg19", "bvlc_alexnet", "zfnet512"}


def _with_logits(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model with the input of its last Softmax as an extra output: with
    random weights the probabilities saturate to 0 and 1, the logits do not."""
    softmax = [n for n in model.graph.node if n.op_type == "Softmax"]
    if softmax:
        model.graph.output.append(
            helper.make_tensor_value_info(softmax[-1].input[0], TensorProto.FLOAT, None)
        )
    return model


@pytest.mark.parametrize(
    "name, random_weights",
    [(n, False) for n in LIGHT_MODELS] + [(n, True) for n in LIGHT_MODELS if n not in SLOW_RANDOM],
)
def test_light_model_after_fusion_matches_onnxruntime(name, random_weights):
    model = onnx.load(light_model_path(name))
    if random_weights:
        model = _with_logits(with_random_weights(model, seed=1))
    module = import_model(model, source=name)
    GraphCanonicalizePass().apply(Context(), module)
    result = fuse(module)
    module.verify()
    assert any(r.kind == "applied" for r in result.remarks)
    feeds = random_inputs(model, seed=2)
    ours = run(module, feeds)
    for key, want in onnxruntime_outputs(model, feeds).items():
        # logits reach 1e5 with random weights: the criterion's normwise term scales
        assert_close(ours[key], want, "must_keep_origin_dtype", err_msg=key)
