"""The AI-CPU fallback end to end: graph-partition places ops without an
AI-core kernel on the AI CPU, the lowering makes them npu.aicpu tasks between
AI-core kernels, the simulator runs them; outputs match onnxruntime in both
precision modes. `--no-aicpu-fallback` refuses, listing every such op."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from gedialects.frontend.onnx_import import import_model
from gedialects.numerics import assert_close
from gedialects.zoo import onnxruntime_outputs
from lowering.pipeline import compile_module, run_compiled
from target.profile import op_type

RNG = np.random.default_rng(7)
PRECISIONS = ["must_keep_origin_dtype", "force_fp16"]


def _w(*shape, scale=0.3):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def _model(nodes, inits, inputs, outputs, opset=17):
    graph = helper.make_graph(
        nodes, "m",
        [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _run(model, feeds, precision):
    compiled = compile_module(import_model(model, {}, source="test"), precision=precision)
    result = run_compiled(compiled, feeds)
    want = onnxruntime_outputs(model, feeds)
    for name, value in want.items():
        got = result.outputs[name].reshape(value.shape)
        if value.dtype.kind in "biu":
            np.testing.assert_array_equal(got, value, err_msg=name)
        else:
            assert_close(got, value, precision, err_msg=name)
    return compiled, result


F = TensorProto.FLOAT


@pytest.mark.parametrize("precision", PRECISIONS)
def test_an_ai_cpu_op_between_two_ai_core_convs(precision):
    # sin has no AI-core kernel: the map goes back to NCHW for the AI CPU and
    # into NC1HWC0 again for the second conv
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["a"], pads=[1, 1, 1, 1], name="conv1"),
        helper.make_node("Sin", ["a"], ["t"], name="sin"),
        helper.make_node("Conv", ["t", "w2"], ["y"], name="conv2"),
    ]
    m = _model(nodes, {"w1": _w(16, 3, 3, 3), "w2": _w(8, 16, 1, 1)}, [("x", F, [1, 3, 8, 8])], [("y", F, [1, 8, 8, 8])])
    compiled, result = _run(m, {"x": RNG.standard_normal((1, 3, 8, 8)).astype(np.float32)}, precision)
    assert compiled.aicpu == 1 and compiled.kernel_kinds["aicpu"] == 1
    kinds = [k.task_type for k in result.profile.kernels]
    assert kinds.count("AI_CPU") == 1 and kinds.count("AI_CORE") == len(kinds) - 1


@pytest.mark.parametrize("precision", PRECISIONS)
def test_a_global_pool_too_large_to_fold_runs_on_the_ai_cpu(precision):
    # 64 x 64 pixels: more than the 2,040 a vector add's 8-bit repeat count
    # folds; the lowering crashed (max() of nothing), now the legality table
    # places it on the AI CPU (and a 32 x 32 map stays on the AI core)
    for side, engine in ((64, "AI_CPU"), (32, "AI_CORE")):
        nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], name="conv"),
                 helper.make_node("GlobalAveragePool", ["c"], ["y"], name="gap")]
        m = _model(nodes, {"w": _w(16, 3, 3, 3)}, [("x", F, [1, 3, side, side])], [("y", F, [1, 16, 1, 1])])
        compiled, result = _run(m, {"x": RNG.standard_normal((1, 3, side, side)).astype(np.float32)}, precision)
        assert [k.task_type for k in result.profile.kernels if op_type(k) == "global_avg_pool"] == [engine]


@pytest.mark.parametrize("precision", PRECISIONS)
def test_token_embedding_mask_and_attention(precision):
    # int64 token ids, an embedding gather, a boolean mask with Where and
    # products of two activations over 8 tokens (rows of 8 fp16 scores are
    # 16 bytes: padded on chip): all on the AI core in both modes
    S, D, V = 8, 16, 32
    nodes = [
        helper.make_node("Gather", ["emb", "ids"], ["h"], axis=0),
        helper.make_node("MatMul", ["h", "wq"], ["q"]),
        helper.make_node("Transpose", ["h"], ["ht"], perm=[0, 2, 1]),
        helper.make_node("MatMul", ["q", "ht"], ["s"]),
        helper.make_node("Cast", ["mask"], ["mb"], to=TensorProto.BOOL),
        helper.make_node("Where", ["mb", "s", "ninf"], ["sm"]),
        helper.make_node("Softmax", ["sm"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "h"], ["y"]),
    ]
    inits = {"emb": _w(V, D), "wq": _w(D, D), "ninf": np.array(-1e4, np.float32)}
    m = _model(
        nodes, inits,
        [("ids", TensorProto.INT64, [1, S]), ("mask", TensorProto.INT64, [1, S, S])],
        [("y", F, [1, S, D])],
    )
    feeds = {
        "ids": RNG.integers(0, V, (1, S)).astype(np.int64),
        "mask": np.tril(np.ones((S, S), np.int64))[None],
    }
    compiled, _ = _run(m, feeds, precision)
    assert compiled.aicpu == 0, compiled.kernel_kinds


@pytest.mark.parametrize("precision", PRECISIONS)
def test_batch_two_runs_on_the_ai_core(precision):
    """map-unbatch: one batch-1 region per image (every op of a batch was an AI-CPU task before)."""
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("GlobalAveragePool", ["r"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Gemm", ["f", "fc"], ["y"]),
    ]
    m = _model(nodes, {"w": _w(16, 3, 3, 3), "fc": _w(16, 10)}, [("x", F, [2, 3, 8, 8])], [("y", F, [2, 10])])
    compiled, _ = _run(m, {"x": RNG.standard_normal((2, 3, 8, 8)).astype(np.float32)}, precision)
    assert compiled.aicpu == 0, compiled.kernel_kinds


def test_remarks_name_every_fallback(caplog):
    nodes = [helper.make_node("Sin", ["x"], ["s"], name="sin"),
             helper.make_node("CumSum", ["s", "axis"], ["y"], name="cumsum")]
    m = _model(nodes, {"axis": np.array(1, np.int64)}, [("x", F, [2, 4, 8])], [("y", F, [2, 4, 8])])
    with caplog.at_level(logging.INFO, logger="gedialects.partition"):
        compile_module(import_model(m, {}, source="test"), precision="must_keep_origin_dtype")
    lines = [r.getMessage() for r in caplog.records if "graph-partition" in r.getMessage()]
    assert lines == [
        "'graph.sin' op missed graph-partition at loc(\"sin\"): AI_CPU fallback (no AI-core kernel for graph.sin)",
        "'graph.cumsum' op missed graph-partition at loc(\"cumsum\"): AI_CPU fallback (no AI-core kernel for graph.cumsum)",
    ]


@pytest.mark.parametrize("tool", ["ge_run", "ge_compile"])
def test_no_aicpu_fallback_lists_every_op(tool, tmp_path, capsys):
    import onnx

    from gedialects.tools import ge_compile, ge_run

    nodes = [helper.make_node("Sin", ["x"], ["s"], name="sin"),
             helper.make_node("CumSum", ["s", "axis"], ["y"], name="cumsum")]
    path = tmp_path / "m.onnx"
    onnx.save(_model(nodes, {"axis": np.array(1, np.int64)}, [("x", F, [2, 4, 8])], [("y", F, [2, 4, 8])]), str(path))
    if tool == "ge_run":
        code = ge_run.main([str(path), "--no-aicpu-fallback"])
    else:
        code = ge_compile.main([str(path), "-o", str(tmp_path / "m.om"), "--no-aicpu-fallback"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1
    assert "2 op(s) have no AI-core kernel" in err[0]
    assert 'graph.sin at loc("sin")' in err[0] and 'graph.cumsum at loc("cumsum")' in err[0]


def test_offline_model_keeps_the_ai_cpu_tasks(tmp_path):
    from target.assembler import assemble
    from target.program import Program
    from target.simulator import simulate

    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"]),
        helper.make_node("Erf", ["c"], ["y"]),
    ]
    m = _model(nodes, {"w": _w(16, 16, 1, 1)}, [("x", F, [1, 16, 4, 4])], [("y", F, [1, 16, 4, 4])])
    compiled = compile_module(import_model(m, {}, source="test"), precision="must_keep_origin_dtype")
    program = assemble(compiled.module)
    path = tmp_path / "m.om"
    program.save(path)
    x = {"x": RNG.standard_normal((1, 16, 4, 4)).astype(np.float32)}
    a, b = simulate(program, x), simulate(Program.load(path), x)
    np.testing.assert_array_equal(a.outputs["y"], b.outputs["y"])
    assert a.profile.total_cycles == b.profile.total_cycles
    assert_close(a.outputs["y"], onnxruntime_outputs(m, x)["y"], "must_keep_origin_dtype")
