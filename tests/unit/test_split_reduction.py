"""tile-split-reduction end to end: products split over K match a float64
reference in both precision modes (the partials are fp32 sums of K / R
terms each, added in slice order), with the race detector on, and the
split the cost model picks runs in fewer simulated cycles than the product
whole."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from gedialects.frontend.onnx_import import import_model
from gedialects.numerics import assert_close, assert_within, summation_bound
from gedialects.tile.transforms.split_reduction import TileSplitReductionPass
from lowering.pipeline import compile_module
from target.simulator import simulate

M, K, N = 32, 2048, 64


def dense_relu(weight_is_constant: bool, seed: int = 0) -> tuple[onnx.ModelProto, dict, tuple]:
    """relu(x @ w + bias), x [1, M, K]; w a constant (packed FRACTAL_NZ b^T)
    or a graph input (row-major b). Returns the model, its inputs and
    (x, w, bias) for the reference."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((1, M, K)).astype(np.float32)
    w = (rng.standard_normal((K, N)) / np.sqrt(K)).astype(np.float32)
    bias = (rng.standard_normal(N) * 0.1).astype(np.float32)
    inits = [numpy_helper.from_array(bias, "bias")]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, M, K])]
    feeds = {"x": x}
    if weight_is_constant:
        inits.append(numpy_helper.from_array(w, "w"))
    else:
        inputs.append(helper.make_tensor_value_info("w", TensorProto.FLOAT, [K, N]))
        feeds["w"] = w
    nodes = [helper.make_node("MatMul", ["x", "w"], ["p"]), helper.make_node("Add", ["p", "bias"], ["q"]),
             helper.make_node("Relu", ["q"], ["y"])]
    graph = helper.make_graph(nodes, "dense", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, M, N])],
                              inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), feeds, (x, w, bias)


def run(model, feeds, precision):
    compiled = compile_module(import_model(model, {}, source="dense"), precision)
    program = compiled.program()
    result = simulate(program, feeds, races="error")
    return [k.name for k in program.kernels], result


@pytest.mark.parametrize("precision", ["must_keep_origin_dtype", "force_fp16"])
@pytest.mark.parametrize("weight_is_constant", [True, False], ids=["packed_weight", "row_major_b"])
def test_split_product_matches_float64(precision, weight_is_constant):
    model, feeds, (x, w, bias) = dense_relu(weight_is_constant)
    names, result = run(model, feeds, precision)
    assert any(n.endswith("_sum") for n in names), f"K = {K} over {M} x {N} outputs is not split: {names}"
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    want = np.maximum(x64 @ w64 + bias, 0.0)
    got = result.outputs["y"]
    if precision == "force_fp16":
        assert_close(got, want, precision)
    else:  # fp32 products in any order, plus the bias add and the output's rounding
        bound = summation_bound(K + 1, np.abs(x64) @ np.abs(w64) + np.abs(bias)) + 2 ** -23 * np.abs(want)
        assert_within(got, want, bound)


def test_split_takes_fewer_cycles(monkeypatch):
    model, feeds, _ = dense_relu(True)
    names, split = run(model, feeds, "force_fp16")
    monkeypatch.setattr(TileSplitReductionPass, "apply", lambda self, ctx, op: None)
    whole_names, whole = run(model, feeds, "force_fp16")
    assert not any(n.endswith("_sum") for n in whole_names)
    assert split.profile.total_cycles < whole.profile.total_cycles, (split.profile.total_cycles, whole.profile.total_cycles)
    assert_close(split.outputs["y"], whole.outputs["y"], "force_fp16")


def test_roofline_counts_the_split_op_once():
    """The op's bound sits on its partial products' launch (the op's operands
    and result, fp16); the launch that adds the partials has none of its own."""
    from target.config import load_target
    from target.roofline import run_bound

    model, feeds, _ = dense_relu(True)
    names, result = run(model, feeds, "force_fp16")
    bounds = {k.name: k for k in run_bound(result.profile, load_target("davinci-910"), 2).kernels}
    partials, total = (next(b for n, b in bounds.items() if n.endswith(suffix)) for suffix in ("_matmul", "_sum"))
    assert partials.macs == M * N * K
    assert partials.min_bytes == 2 * (M * K + K * N + N + M * N)
    assert (total.macs, total.min_bytes) == (0, 0)
    assert total.lost == total.cycles - 1
