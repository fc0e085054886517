"""Graph outputs (lowering/graph_to_tile/outputs.py) against onnxruntime in
both precision modes: an output the kernel computing it writes itself (in
force_fp16 a structured kernel writes an fp32 output only the return reads
in fp32: no cast kernel), and the structured copy kernels (`copy_out`): an
fp16 value widened to fp32 (row-major, or a pooled [1, C, 1, 1] map), a
value in the output's own type copied as 32-bit words (a view of an int64
or fp32 input, an odd number of bytes of bools)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from gedialects.frontend.onnx_import import import_model
from gedialects.numerics import assert_close
from gedialects.zoo import onnxruntime_outputs
from lowering.pipeline import compile_module, run_compiled

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

MODES = ("force_fp16", "must_keep_origin_dtype")
RNG = np.random.default_rng(7)


def _model(nodes, inputs, outputs, inits=()) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "outputs", inputs, [helper.make_empty_tensor_value_info(o) for o in outputs],
                              [numpy_helper.from_array(np.asarray(v), n) for n, v in inits])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _run(model, feeds, precision):
    compiled = compile_module(import_model(model), precision)
    got = run_compiled(compiled, feeds).outputs
    want = onnxruntime_outputs(model, feeds)
    for name, ref in want.items():
        g = np.asarray(got[name]).reshape(ref.shape)
        assert g.dtype == ref.dtype, name
        if ref.dtype.kind in "biu":
            np.testing.assert_array_equal(g, ref, err_msg=name)
        else:
            assert_close(g, ref, precision, err_msg=name)
    return compiled


@pytest.mark.parametrize("precision", MODES)
def test_outputs_written_by_their_kernel_and_copied(precision):
    """s = softmax(x) is read by the relu too: stored in the mode's type, then
    cast (or, fp32, written in place); r, read only by the return, is written
    by its kernel; ids and x come back as copies of the inputs' bytes."""
    x = RNG.standard_normal((4, 40)).astype(np.float32) * 3
    ids = RNG.integers(-2**40, 2**40, size=(1, 7), dtype=np.int64)
    model = _model(
        [helper.make_node("Softmax", ["x"], ["s"], axis=-1),
         helper.make_node("Relu", ["s"], ["r"]),
         helper.make_node("Identity", ["x"], ["x_out"]),
         helper.make_node("Flatten", ["ids"], ["ids_out"], axis=0)],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape),
         helper.make_tensor_value_info("ids", TensorProto.INT64, ids.shape)],
        ["s", "r", "x_out", "ids_out"])
    compiled = _run(model, {"x": x, "ids": ids}, precision)
    assert compiled.aicpu == 0
    casts = compiled.kernel_kinds.get("cast", 0)
    assert casts == (1 if precision == "force_fp16" else 0)  # s only: r is written by the relu


@pytest.mark.parametrize("precision", MODES)
def test_a_pooled_map_as_the_output(precision):
    """conv -> relu -> global average pool: a [1, 32, 1, 1] NC1HWC0 map; in
    force_fp16 a cast kernel widens its 32 fp16 channels as one row."""
    x = RNG.standard_normal((1, 8, 6, 6)).astype(np.float32)
    w = (RNG.standard_normal((32, 8, 3, 3)) / 8).astype(np.float32)
    model = _model(
        [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c"], ["r"]),
         helper.make_node("GlobalAveragePool", ["r"], ["p"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)], ["p"], [("w", w)])
    compiled = _run(model, {"x": x}, precision)
    assert compiled.aicpu == 0
    assert compiled.kernel_kinds.get("cast", 0) == (1 if precision == "force_fp16" else 0)


@pytest.mark.parametrize("precision", MODES)
def test_bools_from_the_ai_cpu_and_a_copied_view(precision):
    """A comparison's bools (an AI-CPU result, 3 x 37 bytes: not whole words)
    and a reshape of the float input copied out beside them."""
    x = RNG.standard_normal((3, 37)).astype(np.float32)
    model = _model(
        [helper.make_node("Greater", ["x", "zero"], ["pos"]),
         helper.make_node("Reshape", ["x", "shape"], ["flat"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)], ["pos", "flat"],
        [("zero", np.zeros((1,), np.float32)), ("shape", np.array([111], np.int64))])
    _run(model, {"x": x}, precision)
