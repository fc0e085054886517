"""The op summary (target/profile.py: msprof's op_summary columns): every
kernel and AI-CPU task of a compiled model is a row naming the model nodes
it runs, its op type, shapes and formats; durations, ratios and bytes are
the simulator's profile; rows come longest first; `ge-run --op-summary`
writes it as CSV, an offline model keeps the names, and the trace's launch
events carry them."""

from __future__ import annotations

import csv

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from gedialects.frontend.onnx_import import import_model
from gedialects.tools import ge_compile, ge_run
from lowering.pipeline import compile_module
from target.assembler import assemble
from target.profile import OP_SUMMARY_COLUMNS, bound, op_summary
from target.program import Program
from target.simulator import simulate

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

RNG = np.random.default_rng(7)


def _model() -> onnx.ModelProto:
    """conv -> batch norm -> relu (one fused kernel), sin (the AI CPU), a
    reshape and a linear layer (the cube family)."""
    c = 16
    inits = {
        "w": (RNG.standard_normal((c, 3, 3, 3)) / 5).astype(np.float32),
        "scale": np.ones(c, np.float32), "bias": np.zeros(c, np.float32),
        "mean": np.zeros(c, np.float32), "var": np.ones(c, np.float32),
        "fc": (RNG.standard_normal((8 * 8, 10)) / 8).astype(np.float32),
        "rows": np.array([1, c, 64], np.int64),
    }
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], name="conv1"),
        helper.make_node("BatchNormalization", ["c", "scale", "bias", "mean", "var"], ["b"], name="bn1"),
        helper.make_node("Relu", ["b"], ["r"], name="relu1"),
        helper.make_node("Sin", ["r"], ["s"], name="sin1"),
        helper.make_node("Reshape", ["s", "rows"], ["f"], name="flat1"),
        helper.make_node("MatMul", ["f", "fc"], ["y"], name="fc1"),
    ]
    graph = helper.make_graph(nodes, "summary", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, c, 10])],
                              [numpy_helper.from_array(v, n) for n, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


@pytest.fixture(scope="module")
def run():
    compiled = compile_module(import_model(_model(), {}, source="summary"), "must_keep_origin_dtype")
    program = assemble(compiled.module)
    x = {"x": RNG.standard_normal((1, 3, 8, 8)).astype(np.float32)}
    return program, simulate(program, x).profile


def _row(rows, first_node: str) -> dict:
    (row,) = [r for r in rows if r["Op Name"].split(";")[0] == first_node]
    return row


def test_every_kernel_is_a_row_with_msprof_columns_longest_first(run):
    _, profile = run
    rows = op_summary(profile)
    assert len(rows) == len(profile.kernels)
    assert all(tuple(r) == OP_SUMMARY_COLUMNS for r in rows)
    cycles = [r["Cycles"] for r in rows]
    assert cycles == sorted(cycles, reverse=True)
    assert sum(cycles) == sum(k.cycles for k in profile.kernels)
    by_name = {k.name: k for k in profile.kernels}
    for r in rows:
        k = by_name[r["Kernel"]]
        assert r["Task Duration(us)"] == pytest.approx(k.cycles / profile.clock_mhz, abs=1e-3)
        assert r["Share(%)"] == pytest.approx(100 * k.cycles / profile.total_cycles, abs=0.01)
        assert r["Bound"] == bound(k) and r["Bound"] in ("compute", "memory", "latency", "aicpu")
        if r["Task Type"] == "AI_CORE":
            assert r["aic_mac_ratio"] == pytest.approx(k.ratio["cube"], abs=1e-4)
            assert r["aic_mte2_ratio"] == pytest.approx(k.ratio["mte2"], abs=1e-4)


def test_rows_name_the_model_nodes_their_op_type_shapes_and_formats(run):
    _, profile = run
    rows = op_summary(profile)
    conv = _row(rows, "conv1")
    assert conv["Op Name"] == "conv1;bn1;relu1"  # what the fused kernel absorbed
    assert (conv["OP Type"], conv["Task Type"]) == ("conv", "AI_CORE")
    assert conv["Input Shapes"].split(";")[:2] == ["1,3,8,8", "16,3,3,3"]
    assert conv["Input Formats"].split(";")[:2] == ["NC1HWC0", "FRACTAL_Z"]
    assert (conv["Output Shapes"], conv["Output Formats"]) == ("1,16,8,8", "NC1HWC0")
    sin = _row(rows, "sin1")
    assert (sin["OP Type"], sin["Task Type"], sin["Bound"], sin["aic_mac_ratio"]) == ("sin", "AI_CPU", "aicpu", "")
    assert (sin["Input Shapes"], sin["Input Formats"]) == ("1,16,8,8", "NCHW")  # the AI CPU's logical order
    fc = _row(rows, "fc1")
    assert (fc["OP Type"], fc["Input Shapes"], fc["Output Shapes"]) == ("matmul", "1,16,64;64,10", "1,16,10")
    assert fc["Input Formats"] == "ND;ND"  # structured kernels read the logical order


def test_ge_run_writes_the_csv_and_an_offline_model_keeps_the_names(run, tmp_path, capsys):
    program, profile = run
    model = tmp_path / "m.onnx"
    onnx.save(_model(), str(model))
    om = tmp_path / "m.om"
    assert ge_compile.main([str(model), "-o", str(om), "--precision-mode", "must_keep_origin_dtype"]) == 0
    assert [k.info for k in Program.load(om).kernels] == [k.info for k in program.kernels]
    assert any(k.info.get("absorbed") == "conv1;bn1;relu1" for k in program.kernels)
    capsys.readouterr()
    csv_path = tmp_path / "ops.csv"
    assert ge_run.main([str(om), "--op-summary", str(csv_path)]) == 0
    table = capsys.readouterr().out
    assert "conv1 +2" in table and "by op type:" in table and "device memory:" in table
    loaded = Program.load(om)  # the arena figures travel in the .om's meta, as ge-compile printed them
    assert 0 < loaded.meta["arena_bytes"] <= loaded.meta["no_reuse_bytes"] <= loaded.gm_size
    assert f"the intermediates' arena {loaded.meta['arena_bytes']} bytes" in table
    peak = max(int(b) for b in str(loaded.meta["arena_live_bytes"]).split(";"))
    assert peak <= loaded.meta["arena_bytes"]
    assert f"at most {peak} held at one task (its lower bound)" in table
    with open(csv_path, newline="") as f:
        rows = list(csv.DictReader(f))
    assert tuple(rows[0]) == OP_SUMMARY_COLUMNS
    assert {r["Op Name"] for r in rows} == {r["Op Name"] for r in op_summary(profile)}
    conv = next(r for r in rows if r["Op Name"] == "conv1;bn1;relu1")
    assert conv["Input Formats"].startswith("NC1HWC0;FRACTAL_Z")


def test_an_unwritable_op_summary_is_one_line_before_anything_runs(tmp_path, capsys):
    model = tmp_path / "m.onnx"
    onnx.save(_model(), str(model))
    code = ge_run.main([str(model), "--op-summary", str(tmp_path / "no" / "such" / "dir" / "ops.csv")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code != 0 and len(err) == 1 and "--op-summary" in err[0]


def test_trace_launch_events_carry_the_names_and_shapes(run):
    from target.profile import chrome_trace

    _, profile = run
    launches = [e for e in chrome_trace(profile)["traceEvents"] if e.get("ph") == "X" and e["pid"] == 0]
    conv = next(e for e in launches if e["args"].get("op_name") == "conv1;bn1;relu1")
    assert conv["args"]["op_type"] == "conv" and conv["args"]["in_shapes"].startswith("1,3,8,8;16,3,3,3")
    assert conv["args"]["bound"] in ("compute", "memory", "latency")


def test_trace_has_a_device_memory_counter_track(run):
    """At each task's start, what the whole run holds (inputs, outputs,
    weights) plus the arena bytes the plan holds then; back to the former
    at the end; never above the device memory."""
    from target.profile import chrome_trace

    program, profile = run
    counter = [e for e in chrome_trace(profile)["traceEvents"] if e.get("ph") == "C"]
    tasks = [k for k in profile.kernels]
    assert len(counter) == len(tasks) + 1 == len(profile.arena_live_bytes) + 1
    static = profile.device_bytes - profile.arena_bytes
    values = [e["args"]["in use (bytes)"] for e in counter]
    assert values[-1] == static and static < max(values) <= profile.device_bytes
    assert [e["ts"] for e in counter] == sorted(e["ts"] for e in counter)
    assert program.meta["arena_live_bytes"] == ";".join(map(str, profile.arena_live_bytes))


REQUIRED = {"X": {"name", "pid", "tid", "ts", "dur"}, "C": {"name", "pid", "ts", "args"},
            "s": {"name", "cat", "id", "pid", "tid", "ts"}, "f": {"name", "cat", "id", "pid", "tid", "ts"},
            "M": {"name", "pid", "args"}}


def test_pipe_level_trace_is_valid_trace_event_format(run):
    """Every event has the fields its phase needs (Chrome's trace-event
    format: complete spans, counters, flow starts and ends, metadata); every
    flow start has its end, at or after it; counter values are numbers."""
    import json

    from target.profile import chrome_trace

    program, _ = run
    x = {"x": RNG.standard_normal((1, 3, 8, 8)).astype(np.float32)}
    trace = json.loads(json.dumps(chrome_trace(simulate(program, x, trace=True).profile)))  # JSON-clean
    events = trace["traceEvents"]
    assert {e["ph"] for e in events} == set(REQUIRED)
    for e in events:
        assert REQUIRED[e["ph"]] <= set(e), e
        if "ts" in e:
            assert e["ts"] >= 0 and (e["ph"] != "X" or e["dur"] > 0)
        if e["ph"] == "C":
            assert all(isinstance(v, (int, float)) for v in e["args"].values())
    starts = {(e["cat"], e["id"]): e for e in events if e["ph"] == "s"}
    ends = {(e["cat"], e["id"]): e for e in events if e["ph"] == "f"}
    assert starts and starts.keys() == ends.keys()
    assert all(ends[k]["ts"] >= starts[k]["ts"] for k in starts)
    assert {"flag"} <= {cat for cat, _ in starts}


# -- the overflow alarm ----------------------------------------------------------------


def _scaled_model() -> onnx.ModelProto:
    """y = relu(x * 300) + 1 and its row sums: fp16 holds y for
    standard-normal x (the calibration), not for x beyond 218 (300 x 218 >
    65504). y is stored in fp16 for the sum to read (an output only the
    return read would be written in fp32 by its kernel)."""
    nodes = [helper.make_node("Mul", ["x", "k"], ["m"], name="scale1"),
             helper.make_node("Relu", ["m"], ["r"], name="relu1"),
             helper.make_node("Add", ["r", "one"], ["y"], name="add1"),
             helper.make_node("ReduceSum", ["y", "axes"], ["s"], name="sum1", keepdims=1)]
    graph = helper.make_graph(nodes, "overflow", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 64])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 64]),
                               helper.make_tensor_value_info("s", TensorProto.FLOAT, [4, 1])],
                              [numpy_helper.from_array(np.array(300.0, np.float32), "k"),
                               numpy_helper.from_array(np.array(1.0, np.float32), "one"),
                               numpy_helper.from_array(np.array([-1], np.int64), "axes")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def test_a_kernel_whose_fp16_results_overflow_is_named_before_the_check(tmp_path, capsys):
    model = tmp_path / "m.onnx"
    onnx.save(_scaled_model(), str(model))
    x = RNG.standard_normal((4, 64)).astype(np.float32)
    x[0, :3] = 1000.0  # far past the calibration range
    inputs = tmp_path / "in.npz"
    np.savez(inputs, x=x)
    code = ge_run.main([str(model), "--inputs", str(inputs), "--check"])
    err = capsys.readouterr().err.splitlines()
    alarms = [i for i, line in enumerate(err) if line.startswith("ge-run: warning: overflow:")]
    assert code == 1 and alarms, err
    assert "scale1" in err[alarms[0]] and "3 inf and 0 NaN" in err[alarms[0]]
    verdict = next(i for i, line in enumerate(err) if line.startswith("ge-run: mismatch"))
    assert alarms[0] < verdict  # the alarm comes before the numerical comparison


def test_no_alarm_within_range_and_the_profile_records_it(tmp_path):
    compiled = compile_module(import_model(_scaled_model(), {}, source="overflow"), "force_fp16")
    program = assemble(compiled.module)
    fine = simulate(program, {"x": RNG.standard_normal((4, 64)).astype(np.float32)}).profile
    assert not [w for w in fine.warnings if w.startswith("overflow:")]
    assert all("overflow" not in k.info for k in fine.kernels)
    x = RNG.standard_normal((4, 64)).astype(np.float32)
    x[1, 5] = -2000.0  # relu: 0, finite; and one past fp16 on the positive side
    x[2, 7] = 2000.0
    hot = simulate(program, {"x": x}).profile
    flagged = [k for k in hot.kernels if "overflow" in k.info]
    assert flagged and flagged[0].info["overflow"] == "1 inf, 0 NaN"
    assert any(w.startswith(f"overflow: {flagged[0].name} (") for w in hot.warnings)


def test_a_masks_infinities_are_by_design():
    """BERT's padding mask where(mask, 0, finfo(f32).min) is -inf once stored
    in fp16: on purpose, so no overflow alarm; the kernel says so in its info
    (`infinities`), and its NaN would still count."""
    from pathlib import Path

    zoo = Path(__file__).resolve().parents[1] / "zoo" / "models"
    program = assemble(compile_module(import_model(onnx.load(str(zoo / "bert.onnx")), {}, source="bert"),
                                      "force_fp16").module)
    inputs = dict(np.load(zoo / "bert.inputs.npz"))
    assert (inputs["attention_mask"] == 0).any()  # padding: the mask holds -inf
    profile = simulate(program, inputs).profile
    assert not [w for w in profile.warnings if w.startswith("overflow:")], profile.warnings
    masks = [k for k in profile.kernels if k.info.get("infinities") == "mask"]
    assert masks and all("overflow" not in k.info for k in masks)


@pytest.mark.parametrize("level", ["kernel", "pipe"])
def test_profile_level_kernel_by_default_pipe_on_request(level, tmp_path, capsys):
    """ge-run --profile writes launch spans (with their op names) by default;
    --profile-level pipe adds every instruction on its core and pipe track
    and a flow arrow from each set_flag to the wait_flag it releases."""
    import json

    from target.profile import AICPU_PID

    model = tmp_path / "m.onnx"
    onnx.save(_model(), str(model))
    trace = tmp_path / "t.json"
    argv = [str(model), "--profile", str(trace)] + (["--profile-level", level] if level == "pipe" else [])
    assert ge_run.main(argv) == 0
    capsys.readouterr()
    events = json.loads(trace.read_text())["traceEvents"]
    spans = [e for e in events if e.get("ph") == "X"]
    core_spans = [e for e in spans if e["pid"] not in (0, AICPU_PID)]
    assert any(e["pid"] == 0 and e["args"].get("op_name") == "conv1;bn1;relu1" for e in spans)
    assert (len(core_spans) > 0) == (level == "pipe")
    # flow arrows: every set_flag to the wait_flag it releases, on the same core, later
    starts = {e["id"]: e for e in events if e.get("ph") == "s"}
    finishes = {e["id"]: e for e in events if e.get("ph") == "f"}
    assert starts.keys() == finishes.keys() and (len(starts) > 0) == (level == "pipe")
    for fid, s in starts.items():
        f = finishes[fid]
        assert f["pid"] == s["pid"] and f["ts"] >= s["ts"] and f["name"] == s["name"]
        assert " event " in s["name"] and f["bp"] == "e"
