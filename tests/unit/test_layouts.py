"""assign-layouts changes formats, never values: the graph interpreter gives
the same results before and after it, and the compiled programs (which
lower every transdata it inserts to a kernel) match the interpreter in both
precision modes. The cases are the FileCheck test's functions."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects import func

from gedialects.graph import ops as g
from gedialects.graph.interpreter import input_names, run
from gedialects.numerics import assert_close
from gedialects.textual import parse_module
from lowering.assign_layouts import AssignLayoutsPass
from lowering.pipeline import compile_module, run_compiled

CASES = Path(__file__).parents[1] / "filecheck" / "lowering" / "assign-layouts.mlir"
CHUNKS = [c for c in CASES.read_text().split("// -----") if "func.func" in c]


def _entry(module) -> func.FuncOp:
    return next(op for op in module.body.block.ops if isinstance(op, func.FuncOp))


def _inputs(fn: func.FuncOp) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {n: rng.standard_normal(a.type.get_shape()).astype(np.float32) for n, a in zip(input_names(fn), fn.args)}


@pytest.mark.parametrize("chunk", CHUNKS, ids=lambda c: c.split("func.func @")[1].split("(")[0])
def test_assign_layouts_keeps_values(chunk):
    before = parse_module(chunk)
    fn = _entry(before)
    inputs = _inputs(fn)
    want = run(before, inputs, fn.sym_name.data)
    after = parse_module(chunk)
    AssignLayoutsPass().apply(Context(), after)
    after.verify()
    assert any(isinstance(op, g.TransDataOp) for op in _entry(after).body.block.ops)
    got = run(after, inputs, fn.sym_name.data)
    for name, value in want.items():
        np.testing.assert_array_equal(got[name], value)


@pytest.mark.parametrize("precision", ["must_keep_origin_dtype", "force_fp16"])
@pytest.mark.parametrize("chunk", CHUNKS, ids=lambda c: c.split("func.func @")[1].split("(")[0])
def test_compiled_layouts_match_interpreter(chunk, precision):
    module = parse_module(chunk)
    fn = _entry(module)
    inputs = _inputs(fn)
    want = run(parse_module(chunk), inputs, fn.sym_name.data)
    compiled = compile_module(module, precision=precision)
    got = run_compiled(compiled, inputs).outputs
    for name, value in want.items():
        out = np.asarray(got[name]).reshape(value.shape)
        assert_close(out, value, precision, err_msg=name)


@pytest.mark.parametrize("c, h, w", [(16, 6, 8), (20, 3, 40), (32, 2, 64)])
def test_row_major_fp16_result_read_as_a_map(c, h, w):
    """force_fp16: a product's row-major fp16 result viewed as a [1, C, H, W]
    map and read by a conv goes through the NCHW -> NC1HWC0 transdata in
    fp16 (k0 = 16 pixels a block; short rows, channels beyond one 16-block):
    no AI-CPU task, and the result matches onnxruntime."""
    from onnx import TensorProto, helper, numpy_helper

    from gedialects.frontend.onnx_import import import_model
    from gedialects.zoo import onnxruntime_outputs

    rng = np.random.default_rng(c + h + w)
    x = rng.standard_normal((1, c, 24)).astype(np.float32)
    inits = {"wm": (rng.standard_normal((24, h * w)) / 5).astype(np.float32),
             "shape": np.array([1, c, h, w], np.int64),
             "wc": (rng.standard_normal((8, c, 3, 3)) / np.sqrt(9 * c)).astype(np.float32)}
    nodes = [helper.make_node("MatMul", ["x", "wm"], ["p"]), helper.make_node("Reshape", ["p", "shape"], ["m"]),
             helper.make_node("Conv", ["m", "wc"], ["y"], pads=[1, 1, 1, 1])]
    graph = helper.make_graph(nodes, "rows_to_map", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
                              [helper.make_empty_tensor_value_info("y")],
                              [numpy_helper.from_array(v, n) for n, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    compiled = compile_module(import_model(model), precision="force_fp16")
    assert "aicpu" not in compiled.kernel_kinds and compiled.kernel_kinds.get("transdata", 0) >= 1
    got = np.asarray(run_compiled(compiled, {"x": x}).outputs["y"])
    want = onnxruntime_outputs(model, {"x": x})["y"]
    assert_close(got.reshape(want.shape), want, "force_fp16")


@pytest.mark.parametrize("precision", ["must_keep_origin_dtype", "force_fp16"])
@pytest.mark.parametrize("c, h, w", [(40, 2, 3), (128, 2, 2), (20, 3, 40), (3, 64, 64), (16, 17, 17), (1, 8, 4), (256, 10, 41)])
def test_transdata_in_and_out_of_odd_maps(c, h, w, precision):
    """A graph input read by a map kernel and its result as a graph output:
    both transdata kernels, on maps whose channels are not whole 16-channel
    blocks (the last block's stale rows), whose rows are shorter than a
    fractal (staged runs, padded DMAs), whose pixels are one row when the
    map has no side halo, whose pixel count is not whole fractals (the
    padded store of the last chunk, after its whole fractals: 256x10x41);
    relu is exact, so any misplaced
    element shows."""
    from onnx import TensorProto, helper

    from gedialects.frontend.onnx_import import import_model

    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "relu",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, h, w])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, c, h, w])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    x = np.random.default_rng(c * h * w).standard_normal((1, c, h, w)).astype(np.float32)
    compiled = compile_module(import_model(model), precision=precision)
    assert compiled.kernel_kinds.get("transdata") == 2 and "aicpu" not in compiled.kernel_kinds
    got = np.asarray(run_compiled(compiled, {"x": x}).outputs["y"]).reshape(x.shape)
    want = np.maximum(x, 0)
    if precision == "must_keep_origin_dtype":
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_array_equal(got, want.astype(np.float16).astype(np.float32))


MAP_TRANSPOSE_CHUNKS = [c for f in ("map-transpose.mlir", "rows-stay-rows.mlir")
                        for c in (CASES.parent / f).read_text().split("// -----") if "func.func" in c]


@pytest.mark.parametrize("precision", ["must_keep_origin_dtype", "force_fp16"])
@pytest.mark.parametrize("chunk", MAP_TRANSPOSE_CHUNKS, ids=lambda c: re.search(r"^func\.func @(\w+)", c, re.M).group(1))
def test_map_transposes_match_interpreter(chunk, precision):
    """The map <-> NHWC rows transposes (box copies, map-transpose.mlir's
    cases) and the 4-D ops of rows that stay structured (rows-stay-rows.mlir)
    against the graph interpreter: the rows output checks the copy to rows
    directly, the conv after the copy back reads every channel."""
    module = parse_module(chunk)
    fn = _entry(module)
    inputs = _inputs(fn)
    want = run(parse_module(chunk), inputs, fn.sym_name.data)
    got = run_compiled(compile_module(module, precision=precision), inputs).outputs
    for name, value in want.items():
        assert np.std(value) > 1e-2, "a constant output proves nothing"
        assert_close(np.asarray(got[name]).reshape(value.shape), value, precision, err_msg=name)


@pytest.mark.parametrize("precision", ["must_keep_origin_dtype", "force_fp16"])
@pytest.mark.parametrize("split", [(24, 24), (12, 36), (5, 40, 3)])
def test_channel_split_off_c0_slices_stays_a_map(split, precision):
    """A channel split of a map (ShuffleNetV2's) into parts that are not
    whole C0 slices: a 0/1 selection conv per part on the cube (exact), the
    parts stay maps for the map kernels after them; no transdata but the
    graph's input and outputs'."""
    from onnx import TensorProto, helper, numpy_helper

    from oracle import matches_onnxruntime

    rng = np.random.default_rng(sum(split))
    c = sum(split)
    w = (rng.standard_normal((c, 8, 1, 1)) / 3).astype(np.float32)
    parts = [f"s{i}" for i in range(len(split))]
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"]),
             helper.make_node("Split", ["c", "sizes"], parts, axis=1),
             *[helper.make_node("Relu", [p], [f"y{i}"]) for i, p in enumerate(parts)]]
    graph = helper.make_graph(nodes, "split", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 6, 6])],
                              [helper.make_empty_tensor_value_info(f"y{i}") for i in range(len(split))],
                              [numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.array(split, np.int64), "sizes")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    x = rng.standard_normal((1, 8, 6, 6)).astype(np.float32)
    compiled = matches_onnxruntime(model, {"x": x}, precision)
    assert compiled.aicpu == 0 and compiled.kernel_kinds.get("transdata") == 1 + len(split)
