"""Data movement on the vector family (lowering/graph_to_tile/copy.py):
slice, split and concat of row-major tensors as box copies, expand as a
broadcasting map, against onnxruntime in both precision modes. Each case
asserts the op ran on the AI core, one kernel per box; in fp32 the copies
are exact."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from gedialects.frontend.onnx_import import import_model
from gedialects.numerics import assert_close
from gedialects.zoo import onnxruntime_outputs
from lowering.pipeline import compile_module, run_compiled

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

MODES = ("force_fp16", "must_keep_origin_dtype")


def _rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _model(nodes, x, inits, outputs):
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "c"], ["h"])] + nodes, "copy",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
        [helper.make_empty_tensor_value_info(o) for o in outputs],
        [numpy_helper.from_array(np.asarray(v), n) for n, v in inits.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _check(nodes, shape, outputs, precision, inits=None, exact=True):
    """h = x + c (an AI-core value) feeds `nodes`; every output is compared
    (`exact`: bit for bit in fp32)."""
    x = _rand(*shape, seed=1)
    model = _model(nodes, x, {"c": _rand(*shape, seed=2), **(inits or {})}, outputs)
    compiled = compile_module(import_model(model), precision)
    got = run_compiled(compiled, {"x": x}).outputs
    want = onnxruntime_outputs(model, {"x": x})
    for name in outputs:
        g = np.asarray(got[name]).reshape(want[name].shape)
        if exact and precision == "must_keep_origin_dtype":
            assert np.array_equal(g, want[name]), name
        else:
            assert_close(g, want[name], precision, err_msg=name)
    assert "aicpu" not in compiled.kernel_kinds
    return compiled


@pytest.mark.parametrize("precision", MODES)
def test_slice_of_the_last_dim_rotary_halves(precision):
    """Llama's rotate_half: x[..., :16] and x[..., 16:] of 32-wide heads."""
    i64 = lambda *v: np.array(v, np.int64)  # noqa: E731
    nodes = [helper.make_node("Slice", ["h", "s0", "e0", "ax"], ["lo"]),
             helper.make_node("Slice", ["h", "s1", "e1", "ax"], ["hi"])]
    inits = {"s0": i64(0), "e0": i64(16), "s1": i64(16), "e1": i64(2**62), "ax": i64(-1)}
    compiled = _check(nodes, (1, 4, 8, 32), ["lo", "hi"], precision, inits)
    assert compiled.kernel_kinds.get("copy") == 2


@pytest.mark.parametrize("precision", MODES)
def test_split_of_a_fused_projection(precision):
    """GPT-2's qkv split along the last dim, and a split along rows."""
    nodes = [helper.make_node("Split", ["h", "sizes"], ["q", "k", "v"], axis=2),
             helper.make_node("Split", ["h", "rows"], ["a", "b"], axis=1)]
    inits = {"sizes": np.array([32, 32, 32], np.int64), "rows": np.array([4, 12], np.int64)}
    compiled = _check(nodes, (1, 16, 96), ["q", "k", "v", "a", "b"], precision, inits)
    assert compiled.kernel_kinds.get("copy") == 5


@pytest.mark.parametrize("precision", MODES)
@pytest.mark.parametrize("axis", [1, 2])
def test_concat_of_rows_and_of_columns(axis, precision):
    """torch.roll as slice + concat (Swin's shifted windows), and a cls token
    prepended along the sequence (ViT)."""
    i64 = lambda *v: np.array(v, np.int64)  # noqa: E731
    nodes = [helper.make_node("Slice", ["h", "s", "e", "ax"], ["tail"]),
             helper.make_node("Concat", ["tail", "h"], ["y"], axis=axis)]
    inits = {"s": i64(8 * axis), "e": i64(16 * axis), "ax": i64(axis)}  # the second half
    compiled = _check(nodes, (2, 16, 32), ["y"], precision, inits)
    assert compiled.kernel_kinds.get("copy") == 3


@pytest.mark.parametrize("precision", MODES)
def test_concat_of_a_constant_class_token_and_the_patches(precision):
    """ViT: a learned class token (a constant [1, 1, 24]) before 16 patch
    embeddings: its box is copied from a GM constant of the kernel, the
    patches' from the activation (rows of 24 floats: padded DMA)."""
    token = _rand(1, 1, 24, seed=3)
    nodes = [helper.make_node("Concat", ["cls", "h"], ["y"], axis=1)]
    compiled = _check(nodes, (1, 16, 24), ["y"], precision, {"cls": token})
    assert compiled.kernel_kinds.get("copy") == 2


@pytest.mark.parametrize("precision", MODES)
def test_expand_broadcasts_rows_and_columns(precision):
    """A row mean (a column) broadcast back along the rows; a row along a new batch dim."""
    nodes = [helper.make_node("ReduceMean", ["h"], ["m"], axes=[2], keepdims=1),
             helper.make_node("Expand", ["m", "shape"], ["y"]),
             helper.make_node("Slice", ["h", "s", "e", "ax"], ["row"]),
             helper.make_node("Expand", ["row", "shape"], ["z"])]
    inits = {"shape": np.array([2, 8, 16], np.int64), "s": np.array([0], np.int64), "e": np.array([1], np.int64),
             "ax": np.array([1], np.int64)}
    compiled = _check(nodes, (2, 8, 16), ["y", "z"], precision, inits, exact=False)
    assert compiled.kernel_kinds.get("expand") == 2


@pytest.mark.parametrize("precision", MODES)
def test_channel_split_of_a_map_is_a_view(precision):
    """ShuffleNetV2's split of a conv's channels into halves: in whole C0
    slices it makes no kernel (the halves alias the conv's NC1HWC0 storage);
    the concat after it copies."""
    w = (np.random.default_rng(3).standard_normal((32, 8, 3, 3)) * 0.3).astype(np.float32)
    w2 = (np.random.default_rng(4).standard_normal((16, 16, 1, 1)) * 0.3).astype(np.float32)
    x = _rand(1, 8, 4, 4, seed=5)
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["r"]),
         helper.make_node("Split", ["r", "sp"], ["a", "b"], axis=1),
         helper.make_node("Conv", ["b", "w2"], ["bc"]), helper.make_node("Concat", ["a", "bc"], ["y"], axis=1)],
        "split", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)], [helper.make_empty_tensor_value_info("y")],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(w2, "w2"),
         numpy_helper.from_array(np.array([16, 16], np.int64), "sp")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    compiled = compile_module(import_model(model), precision)
    got = run_compiled(compiled, {"x": x}).outputs["y"]
    want = onnxruntime_outputs(model, {"x": x})["y"]
    assert_close(np.asarray(got).reshape(want.shape), want, precision)
    assert compiled.aicpu == 0 and "copy" not in compiled.kernel_kinds and compiled.kernel_kinds.get("conv") == 2


@pytest.mark.parametrize("precision", MODES)
@pytest.mark.parametrize("reader", ["Sin", "Tanh"], ids=["aicpu-reader", "vector-reader"])
def test_a_row_inside_a_concat_written_in_place(reader, precision):
    """b, a [1, 24, 1, 1] pooled map, is the second operand of a channel
    concat its producer writes in place (it lives at channel 16 of the
    concat's storage), and a row-major reader (an AI-CPU task, a vector
    kernel) reads it from a tensor's start: a structured copy kernel moves
    the row out (vector.row_copy: a box load at its origin, tiled by the
    tile passes)."""
    rng = np.random.default_rng(3)
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"]), helper.make_node("Conv", ["x", "w2"], ["c2"]),
             helper.make_node("GlobalAveragePool", ["c1"], ["a"]), helper.make_node("GlobalAveragePool", ["c2"], ["b"]),
             helper.make_node("Concat", ["a", "b"], ["cat"], axis=1),
             helper.make_node("Flatten", ["b"], ["bf"]), helper.make_node(reader, ["bf"], ["r"])]
    inits = {"w1": rng.standard_normal((16, 8, 1, 1)).astype(np.float32),
             "w2": rng.standard_normal((24, 8, 1, 1)).astype(np.float32)}
    graph = helper.make_graph(nodes, "rows", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 6, 6])],
                              [helper.make_empty_tensor_value_info(o) for o in ("cat", "r")],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    x = {"x": rng.standard_normal((1, 8, 6, 6)).astype(np.float32)}
    compiled = compile_module(import_model(model), precision)
    sources = [op.attributes["ge.source"].data for op in compiled.module.walk() if "ge.source" in op.attributes]
    assert any(s.endswith(": operand row") for s in sources), sources
    got = run_compiled(compiled, x).outputs
    want = onnxruntime_outputs(model, x)
    for name, value in want.items():
        assert np.std(value) > 1e-3
        assert_close(np.asarray(got[name]).reshape(value.shape), value, precision, err_msg=name)
