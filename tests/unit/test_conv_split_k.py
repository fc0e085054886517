"""Split-K for convs (tile-split-reduction, gedialects/tile/transforms/split_conv.py)
end to end: a conv over many input channels at a small map (ResNet-50's last
stage: 2,048 -> 512 at 7x7, with bias, residual and ReLU) runs as a grouped
conv of partials and a sum kernel, matches a float64 reference in both
precision modes with the race detector on, and takes fewer simulated cycles
than the conv whole; a conv over few input channels is not split."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from gedialects.frontend.onnx_import import import_model
from gedialects.numerics import assert_close, assert_within, summation_bound
from gedialects.tile.transforms.split_conv import slice_counts
from gedialects.tile.transforms.split_reduction import TileSplitReductionPass
from lowering.pipeline import compile_module
from target.simulator import simulate

MODES = ("force_fp16", "must_keep_origin_dtype")


def conv_residual_relu(cin: int, cout: int, size: int, seed: int = 0,
                       residual: bool = True) -> tuple[onnx.ModelProto, dict, tuple]:
    """relu(conv1x1(x, w) + b + r): x [1, cin, size, size], r [1, cout, size, size]
    (without `residual`, relu(conv1x1(x, w) + b) and r zeros in the reference)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((1, cin, size, size)).astype(np.float32)
    r = rng.standard_normal((1, cout, size, size)).astype(np.float32) if residual else \
        np.zeros((1, cout, size, size), np.float32)
    w = (rng.standard_normal((cout, cin, 1, 1)) / np.sqrt(cin)).astype(np.float32)
    b = (rng.standard_normal(cout) * 0.1).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"])]
    nodes += [helper.make_node("Add", ["c", "r"], ["s"]), helper.make_node("Relu", ["s"], ["y"])] if residual else \
        [helper.make_node("Relu", ["c"], ["y"])]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)]
    if residual:
        inputs.append(helper.make_tensor_value_info("r", TensorProto.FLOAT, r.shape))
    graph = helper.make_graph(
        nodes, "conv_residual_relu", inputs,
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, (1, cout, size, size))],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model, ({"x": x, "r": r} if residual else {"x": x}), (x, w, b, r)


def run(model, feeds, precision):
    """(the program's kernel names, the simulation's result); the compile's
    kernel census counts the split's sum kernel."""
    compiled = compile_module(import_model(model, {}, source="conv"), precision)
    program = compiled.program()
    names = [k.name for k in program.kernels]
    assert compiled.kernels == len(names)
    assert compiled.kernel_kinds.get("split_k_sum", 0) == sum(n.endswith("_sum") for n in names)
    return names, simulate(program, feeds, races="error")


def reference(x, w, b, r) -> tuple[np.ndarray, np.ndarray]:
    """The float64 result and sum |terms| per element (for a summation bound)."""
    x64, w64 = x.astype(np.float64)[0], w.astype(np.float64)[:, :, 0, 0]
    conv = np.einsum("oc,chw->ohw", w64, x64)
    size = np.einsum("oc,chw->ohw", np.abs(w64), np.abs(x64)) + np.abs(b)[:, None, None] + np.abs(r[0])
    return np.maximum(conv + b[:, None, None] + r[0], 0.0)[None], size[None]


@pytest.mark.parametrize("precision", MODES)
def test_split_conv_matches_float64(precision):
    model, feeds, (x, w, b, r) = conv_residual_relu(2048, 512, 7)
    names, result = run(model, feeds, precision)
    assert [n for n in names if n.endswith("conv_sum")] == ["k2_conv_sum"], names
    want, size = reference(x, w, b, r)
    got = result.outputs["y"]
    assert np.std(want) > 0.1
    if precision == "force_fp16":
        assert_close(got, want, precision)
    else:  # fp32 partials of any order, their sum, bias and residual; ReLU is exact
        assert_within(got, want, summation_bound(2048 + 3, size) + 2 ** -23 * np.abs(want))


def test_split_conv_takes_fewer_cycles(monkeypatch):
    model, feeds, _ = conv_residual_relu(2048, 512, 7)
    split_names, split = run(model, feeds, "force_fp16")
    assert "k2_conv_sum" in split_names
    monkeypatch.setattr(TileSplitReductionPass, "apply", lambda self, ctx, op: None)
    whole_names, whole = run(model, feeds, "force_fp16")
    assert not any(n.endswith("_sum") for n in whole_names)
    assert split.profile.total_cycles < whole.profile.total_cycles, (split.profile.total_cycles,
                                                                     whole.profile.total_cycles)
    assert_close(split.outputs["y"], whole.outputs["y"], "force_fp16")


def test_conv_over_few_channels_stays_whole():
    """64 -> 256 at 14x14: each core reads little of K; the cost model keeps one kernel."""
    model, feeds, (x, w, b, r) = conv_residual_relu(64, 256, 14)
    names, result = run(model, feeds, "force_fp16")
    assert [n for n in names if "conv" in n] == ["k2_conv"], names
    assert_close(result.outputs["y"], reference(x, w, b, r)[0], "force_fp16")


def test_slice_counts():
    assert slice_counts(128) == [2, 4, 8]  # divisors of the input's C1 slices, at most MAX_SLICES
    assert slice_counts(6) == [2, 3, 6]
    assert slice_counts(1) == []


@pytest.mark.parametrize("precision", MODES)
def test_outputs_not_in_whole_fractals_split(precision):
    """SqueezeNet's classifier, 512 -> 1,000 at 13x13 (+ ReLU): each group's
    1,000 partial channels take 63 fractals of the workspace (1,008
    channels), and the sum reads each run from its group's first fractal."""
    model, feeds, (x, w, b, r) = conv_residual_relu(512, 1000, 13, residual=False)
    names, result = run(model, feeds, precision)
    assert [n for n in names if n.endswith("conv_sum")] == ["k1_conv_sum"], names
    want, size = reference(x, w, b, r)
    got = result.outputs["y"]
    if precision == "force_fp16":
        assert_close(got, want, precision)
    else:
        assert_within(got, want, summation_bound(512 + 3, size) + 2 ** -23 * np.abs(want))


def test_branch_convs_beside_peers_stay_whole():
    """An Inception block's four small branch convs run side by side on the
    streams, each on a few of the cores: split, the fp32 5x5 branch's
    partials would take its peers' cores and its sum wait for them (the
    block ran 5,601 -> 5,772 cycles on four streams), so it stays whole."""
    from test_streams import _branches_model

    model = _branches_model()
    compiled = compile_module(import_model(model, {}, source="branches"), "must_keep_origin_dtype")
    assert compiled.streams > 1
    assert "split_k_sum" not in compiled.kernel_kinds and compiled.kernel_kinds["conv"] == 4
