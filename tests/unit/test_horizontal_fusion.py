"""HorizontalMatMulFusionPass end to end: a transformer's query, key and value
projections become one product whose result the attention reads through
windows (no split copy, no extra kernel), and the outputs still match
onnxruntime in both precision modes -- on the zoo's BERT and T5 encoders
(real exports: biased and bias-free projections), and on a graph where one
projection is also read otherwise (it stays its own product)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "zoo"))
from zoo import zoo_inputs, zoo_path  # noqa: E402

from gedialects.frontend.onnx_import import import_model  # noqa: E402
from gedialects.npu import ops as npu  # noqa: E402
from gedialects.numerics import assert_close  # noqa: E402
from gedialects.zoo import onnxruntime_outputs  # noqa: E402
from lowering.pipeline import compile_module, run_compiled  # noqa: E402

PRECISIONS = ["force_fp16", "must_keep_origin_dtype"]


def _kernels(compiled) -> list[dict[str, str]]:
    return [{k: getattr(v, "data", str(v)) for k, v in op.attributes.items()}
            for op in compiled.module.walk() if isinstance(op, npu.KernelOp)]


def _check(model: onnx.ModelProto, inputs: dict, precision: str, name: str):
    compiled = compile_module(import_model(model, {}, source=name), precision=precision)
    want = onnxruntime_outputs(model, inputs)
    got = run_compiled(compiled, inputs).outputs
    for key, value in want.items():
        assert np.std(value) > 1e-3, f"{key}: a degenerate reference proves nothing"
        assert_close(np.asarray(got[key]).reshape(value.shape), value, precision, err_msg=key)
    return _kernels(compiled)


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("name, layers", [("bert", 2), ("t5_encoder", 2)])
def test_zoo_projections_are_one_product_read_through_windows(name, layers, precision):
    kernels = _check(onnx.load(str(zoo_path(name))), zoo_inputs(name), precision, name)
    products = [k for k in kernels if k.get("ge.kind") == "matmul"]
    # a merged product's weights are [hidden, 3 * hidden]: the three projections side by side
    weights = [[int(d) for d in k["ge.in_shapes"].split(";")[1].split(",")] for k in products]
    merged = [w for w in weights if w[1] == 3 * w[0]]
    assert len(merged) == layers, weights
    assert not [k for k in kernels if k.get("ge.op_type") == "split"], "a split of the merged product was copied"


def _attention_block(value_read_twice: bool) -> tuple[onnx.ModelProto, dict]:
    """x [1, 16, 32] -> q, k, v projections (with biases) -> 2 heads of 16 ->
    softmax(q k^T / 4) v -> [1, 2, 16, 16]; optionally v also an output."""
    rng = np.random.default_rng(3)
    inits, nodes = [], []
    for p in "qkv":
        inits += [numpy_helper.from_array((rng.standard_normal((32, 32)) / 6).astype(np.float32), f"w{p}"),
                  numpy_helper.from_array(rng.standard_normal(32).astype(np.float32), f"b{p}")]
        nodes += [helper.make_node("MatMul", ["x", f"w{p}"], [f"{p}0"], name=f"{p}_proj"),
                  helper.make_node("Add", [f"{p}0", f"b{p}"], [f"{p}1"], name=f"{p}_bias"),
                  helper.make_node("Reshape", [f"{p}1", "heads"], [f"{p}2"], name=f"{p}_heads"),
                  helper.make_node("Transpose", [f"{p}2"], [f"{p}3"], perm=[0, 2, 1, 3], name=f"{p}_t")]
    inits.append(numpy_helper.from_array(np.array([1, 16, 2, 16], np.int64), "heads"))
    inits.append(numpy_helper.from_array(np.array(0.25, np.float32), "scale"))
    nodes += [helper.make_node("Transpose", ["k3"], ["kt"], perm=[0, 1, 3, 2], name="kt"),
              helper.make_node("MatMul", ["q3", "kt"], ["s"], name="qk"),
              helper.make_node("Mul", ["s", "scale"], ["ss"], name="scale"),
              helper.make_node("Softmax", ["ss"], ["p"], axis=-1, name="softmax"),
              helper.make_node("MatMul", ["p", "v3"], ["y"], name="pv")]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 16, 16])]
    if value_read_twice:
        outputs.append(helper.make_tensor_value_info("v1", TensorProto.FLOAT, [1, 16, 32]))
    graph = helper.make_graph(nodes, "attention", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 32])],
                              outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return model, {"x": rng.standard_normal((1, 16, 32)).astype(np.float32)}


@pytest.mark.parametrize("precision", PRECISIONS)
def test_a_projection_read_otherwise_stays_apart(precision):
    """v is also a graph output: q and k merge (one product, read through
    windows), v keeps its own product; the outputs match onnxruntime."""
    model, inputs = _attention_block(value_read_twice=True)
    kernels = _check(model, inputs, precision, "block")
    products = [k.get("ge.source", "") for k in kernels if k.get("ge.kind") == "matmul"]
    assert len(products) == 2, products
    assert not [k for k in kernels if k.get("ge.op_type") == "split"]


@pytest.mark.parametrize("precision", PRECISIONS)
def test_three_projections_read_as_heads_merge(precision):
    model, inputs = _attention_block(value_read_twice=False)
    kernels = _check(model, inputs, precision, "block")
    assert len([k for k in kernels if k.get("ge.kind") == "matmul"]) == 1
    assert not [k for k in kernels if k.get("ge.op_type") == "split"]


def _split_input_heads() -> tuple[onnx.ModelProto, dict]:
    """A graph input [1, 16, 96] split into q, k, v read as 2 heads of 16 by
    an attention: in force_fp16 the fp32 input is not stored as the cube
    reads it, so its split is copied (the copies cast), in fp32 the heads
    are windows of the input."""
    rng = np.random.default_rng(5)
    nodes = [helper.make_node("Split", ["x", "sizes"], ["q1", "k1", "v1"], axis=2, name="split")]
    for p in "qkv":
        nodes += [helper.make_node("Reshape", [f"{p}1", "heads"], [f"{p}2"], name=f"{p}_heads"),
                  helper.make_node("Transpose", [f"{p}2"], [f"{p}3"], perm=[0, 2, 1, 3], name=f"{p}_t")]
    nodes += [helper.make_node("Transpose", ["k3"], ["kt"], perm=[0, 1, 3, 2], name="kt"),
              helper.make_node("MatMul", ["q3", "kt"], ["s"], name="qk"),
              helper.make_node("Mul", ["s", "scale"], ["ss"], name="scale"),
              helper.make_node("Softmax", ["ss"], ["p"], axis=-1, name="softmax"),
              helper.make_node("MatMul", ["p", "v3"], ["y"], name="pv")]
    inits = [numpy_helper.from_array(np.array([32, 32, 32], np.int64), "sizes"),
             numpy_helper.from_array(np.array([1, 16, 2, 16], np.int64), "heads"),
             numpy_helper.from_array(np.array(0.25, np.float32), "scale")]
    graph = helper.make_graph(nodes, "split_heads", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 96])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 16, 16])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return model, {"x": rng.standard_normal((1, 16, 96)).astype(np.float32)}


@pytest.mark.parametrize("precision", PRECISIONS)
def test_heads_of_a_split_graph_input(precision):
    model, inputs = _split_input_heads()
    kernels = _check(model, inputs, precision, "split_heads")
    copies = [k for k in kernels if k.get("ge.op_type") == "split"]
    assert len(copies) == (3 if precision == "force_fp16" else 0), [k.get("ge.kind") for k in kernels]
