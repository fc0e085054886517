"""Random small CNNs (convs: 1x1/3x3, strided, grouped, depthwise; relu,
residual adds, channel concats, max/avg pools, batch-norm, a classifier
head; any of their values as graph outputs) compiled
with assign-layouts and both lowerings, simulated, and compared with
onnxruntime -- hypothesis looks for graphs the hand-written tests miss
(`GE_FUZZ_EXAMPLES=500 pytest tests/unit/test_lowering_fuzz.py` to look harder)."""

from __future__ import annotations

import numpy as np
import onnx
from hypothesis import given
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from fuzz_settings import fuzz_settings

from gedialects.frontend.onnx_import import import_model
from gedialects.numerics import assert_close

from gedialects.zoo import onnxruntime_outputs
from lowering.pipeline import compile_module, run_compiled

X_SHAPE = (1, 16, 8, 16)


@st.composite
def cnns(draw):
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    vals = {"x": (16, 8, 16, False)}  # name -> (channels, h, w, non-negative)
    nodes, inits = [], {}

    def new(name, spec):
        vals[name] = spec
        return name

    for i in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["conv", "conv", "add", "concat", "pool", "avgpool", "bn"]))
        a = draw(st.sampled_from(sorted(vals)))
        c, h, w, nonneg = vals[a]
        if kind == "conv":
            k = draw(st.sampled_from([1, 3]))
            co = draw(st.sampled_from([16, 32]))
            group = draw(st.sampled_from([1, 1, 2, c])) if k == 3 else 1
            stride = draw(st.sampled_from([1, 1, 2])) if k == 3 and h >= 2 and w >= 2 else 1
            co = c if group == c else co
            shape = (co, c // group, k, k)
            inits[f"w{i}"] = (rng.standard_normal(shape) * (0.5 / np.sqrt(c // group * k * k))).astype(np.float32)
            inits[f"b{i}"] = (rng.standard_normal(co) * 0.1).astype(np.float32)
            nodes.append(helper.make_node("Conv", [a, f"w{i}", f"b{i}"], [f"c{i}"], pads=[k // 2] * 4,
                                          group=group, strides=[stride, stride]))
            oh, ow = -(-h // stride), -(-w // stride)
            if draw(st.booleans()):
                nodes.append(helper.make_node("Relu", [f"c{i}"], [f"v{i}"]))
                new(f"v{i}", (co, oh, ow, True))
            else:
                new(f"c{i}", (co, oh, ow, False))
        elif kind == "avgpool":
            nodes.append(helper.make_node("AveragePool", [a], [f"v{i}"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
            new(f"v{i}", (c, h, w, nonneg))
        elif kind == "bn":
            for p_, lo in (("s", 0.5), ("t", -0.5), ("m", -0.5), ("q", 0.5)):
                inits[f"{p_}{i}"] = rng.uniform(lo, lo + 1.0, c).astype(np.float32)
            nodes.append(helper.make_node("BatchNormalization", [a, f"s{i}", f"t{i}", f"m{i}", f"q{i}"], [f"v{i}"]))
            new(f"v{i}", (c, h, w, False))
        elif kind in ("add", "concat"):
            same = sorted(n for n, s in vals.items() if s[1:3] == (h, w) and (kind == "concat" or s[0] == c))
            b = draw(st.sampled_from(same))
            if kind == "add":
                nodes.append(helper.make_node("Add", [a, b], [f"v{i}"]))
                new(f"v{i}", (c, h, w, nonneg and vals[b][3]))
            elif a != b:
                nodes.append(helper.make_node("Concat", [a, b], [f"v{i}"], axis=1))
                new(f"v{i}", (c + vals[b][0], h, w, nonneg and vals[b][3]))
        elif h >= 2 and w >= 2:  # a padded window over a possibly negative input: its halo is the lowest value
            if draw(st.booleans()):
                nodes.append(helper.make_node("MaxPool", [a], [f"v{i}"], kernel_shape=[2, 2], strides=[2, 2]))
                new(f"v{i}", (c, h // 2, w // 2, nonneg))
            else:
                nodes.append(helper.make_node("MaxPool", [a], [f"v{i}"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
                new(f"v{i}", (c, h, w, nonneg))
    produced = sorted(set(vals) - {"x"})
    outs = draw(st.lists(st.sampled_from(produced), unique=True, min_size=1, max_size=3)) if produced else []
    if draw(st.booleans()) or not outs:  # a classifier head on some value
        a = draw(st.sampled_from(sorted(vals)))
        c = vals[a][0]
        inits["fc"] = (rng.standard_normal((c, 10)) * 0.3).astype(np.float32)
        nodes += [
            helper.make_node("GlobalAveragePool", [a], ["gap"]),
            helper.make_node("Flatten", ["gap"], ["flat"]),
            helper.make_node("Gemm", ["flat", "fc"], ["logits"]),
            helper.make_node("Softmax", ["logits"], ["prob"]),
        ]
        outs.append("prob")
    info = {n: helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, s[0], s[1], s[2]]) for n, s in vals.items()}
    info["prob"] = helper.make_tensor_value_info("prob", TensorProto.FLOAT, [1, 10])
    graph = helper.make_graph(
        nodes, "fuzz", [info["x"]], [info[o] for o in outs],
        [numpy_helper.from_array(v, k) for k, v in inits.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


# CI runs a dozen graphs; GE_FUZZ_EXAMPLES=500 searches deeper
@fuzz_settings(12)
@given(cnns(), st.sampled_from(["must_keep_origin_dtype", "force_fp16"]))
def test_random_cnn_matches_onnxruntime(model, precision):
    x = {"x": np.random.default_rng(1).standard_normal(X_SHAPE).astype(np.float32)}
    want = onnxruntime_outputs(model, x)
    module = import_model(model, {}, source="fuzz")
    compiled = compile_module(module, precision=precision)
    got = run_compiled(compiled, x).outputs
    assert compiled.transdata >= 1
    for name, value in want.items():
        out = got[name].reshape(value.shape)
        where = f"{name} of\n{onnx.printer.to_text(model.graph)}"
        assert_close(out, value, precision, err_msg=where)

