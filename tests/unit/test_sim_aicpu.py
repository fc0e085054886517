"""AI-CPU tasks (`npu.aicpu`) on the simulator: what they compute (the graph
dialect's reference kernels, with fp16 storage scales), what they cost (the
target config's `aicpu` numbers), races against AI-core launches, profiles,
and the offline model."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    i1,
    i64,
)
from xdsl.ir import Block, Region

from gedialects.graph import ops as g
from gedialects.npu import ops as npu
from gedialects.npu.builder import ProgramBuilder
from target import aicpu
from target.assembler import assemble
from target.config import ConfigError, config_from_dict, load_target
from target.errors import AssemblyError, RaceError, SimulationError
from target.profile import chrome_trace, format_profile
from target.program import Program
from target.run import parse_npu_mlir, run_npu_file
from target.simulator import simulate

RNG = np.random.default_rng(7)
F16, F32, F64 = Float16Type(), Float32Type(), Float64Type()


def _t(shape, elem) -> TensorType:
    return TensorType(elem, list(shape))


def _task(name, ins, outs, build, stream=0):
    """An npu.aicpu: ins/outs are (offset, stored type, scale[, logical element
    type]); build(args) appends graph ops to the body and returns the results."""
    logical = [s[3] if len(s) > 3 else s[1].get_element_type() for s in ins]
    block = Block(arg_types=[_t(s[1].get_shape(), e) for s, e in zip(ins, logical)])
    ops = []
    results = build(list(block.args), ops)
    for op in ops:
        block.add_op(op)
    block.add_op(npu.AicpuReturnOp(*results))
    return npu.AicpuOp(name, stream, [s[:3] for s in ins], [s[:3] for s in outs], Region(block))


def _program(name, gm_size, tensors, body_ops):
    """tensors: ("in"|"out", name, offset, shape, dtype); body_ops: ops added in order."""
    elems = {"i1": i1, "i64": i64, "f16": F16, "f32": F32, "f64": F64}
    pb = ProgramBuilder(name, gm_size)
    for kind, tname, off, shape, dtype in tensors:
        cls = npu.InputOp if kind == "in" else npu.OutputOp
        pb.block.add_op(cls(tname, off, _t(shape, elems[dtype])))
    for op in body_ops:
        pb.block.add_op(op)
    module = pb.module()
    module.verify()
    return module


def _op(cls, ops, operands, **props):
    op = cls.build_inferred(operands, properties=props)
    ops.append(op)
    return op.results[0]


# ---------------------------------------------------------------------------
# What tasks compute
# ---------------------------------------------------------------------------


def test_where_on_i1_and_f32():
    shape = (4, 8)
    task = _task(
        "k0_aicpu_where",
        [(0, _t(shape, i1), 1.0), (64, _t(shape, F32), 1.0), (192, _t(shape, F32), 1.0)],
        [(320, _t(shape, F32), 1.0)],
        lambda a, ops: [_op(g.WhereOp, ops, a)],
    )
    module = _program(
        "w",
        512,
        [("in", "c", 0, shape, "i1"), ("in", "x", 64, shape, "f32"), ("in", "y", 192, shape, "f32"),
         ("out", "z", 320, shape, "f32")],
        [task],
    )
    c = RNG.random(shape) > 0.5
    x, y = (RNG.standard_normal(shape).astype(np.float32) for _ in range(2))
    res = simulate(assemble(module), {"c": c, "x": x, "y": y})
    np.testing.assert_array_equal(res.outputs["z"], np.where(c, x, y))


def test_transpose():
    task = _task(
        "k0_aicpu_transpose",
        [(0, _t((3, 5), F32), 1.0)],
        [(64, _t((5, 3), F32), 1.0)],
        lambda a, ops: [_op(g.TransposeOp, ops, a, perm=DenseArrayBase.from_list(i64, [1, 0]))],
    )
    module = _program("t", 128, [("in", "x", 0, (3, 5), "f32"), ("out", "y", 64, (5, 3), "f32")], [task])
    x = RNG.standard_normal((3, 5)).astype(np.float32)
    res = simulate(assemble(module), {"x": x})
    np.testing.assert_array_equal(res.outputs["y"], x.T)


def _scaled_module(out_scale):
    """y = x * x on the AI CPU; x stored in fp16 with scale 0.25, computed in f32."""
    n = 64
    task = _task(
        "k0_aicpu_square",
        [(0, _t((n,), F16), 0.25, F32)],
        [(128, _t((n,), F16), out_scale)],
        lambda a, ops: [_op(g.MulOp, ops, [a[0], a[0]])],
    )
    return _program("s", 256, [("in", "x", 0, (n,), "f16"), ("out", "y", 128, (n,), "f16")], [task])


def test_f16_storage_with_scales():
    x = (RNG.standard_normal(64) * 100).astype(np.float16)
    res = simulate(assemble(_scaled_module(0.25)), {"x": x})
    logical = x.astype(np.float32) * np.float32(0.25)
    want = ((logical * logical) / np.float32(0.25)).astype(np.float16)
    np.testing.assert_array_equal(res.outputs["y"], want)


def test_fp16_overflow_gives_inf():
    x = np.full(64, 1000.0, dtype=np.float16)  # logical 250, squared 62500, / 0.5 = 125000 > fp16 max
    res = simulate(assemble(_scaled_module(0.5)), {"x": x})
    assert np.isinf(res.outputs["y"]).all()


def test_int64_gather():
    task = _task(
        "k0_aicpu_gather",
        [(0, _t((5, 4), F32), 1.0), (80, _t((3,), IntegerType(64)), 1.0)],
        [(128, _t((3, 4), F32), 1.0)],
        lambda a, ops: [_op(g.GatherOp, ops, a, axis=IntegerAttr(0, i64))],
    )
    module = _program(
        "g",
        256,
        [("in", "x", 0, (5, 4), "f32"), ("in", "i", 80, (3,), "i64"), ("out", "y", 128, (3, 4), "f32")],
        [task],
    )
    x = RNG.standard_normal((5, 4)).astype(np.float32)
    idx = np.array([4, -1, 0], dtype=np.int64)  # ONNX: negative indices count from the end
    res = simulate(assemble(module), {"x": x, "i": idx})
    np.testing.assert_array_equal(res.outputs["y"], np.take(x, idx, axis=0))
    bad = np.array([0, 7, 0], dtype=np.int64)
    with pytest.raises(SimulationError, match=r"AI-CPU task 'k0_aicpu_gather': graph.gather") as info:
        simulate(assemble(module), {"x": x, "i": bad})
    assert "\n" not in str(info.value)


def test_op_the_ai_cpu_cannot_run_is_refused_at_assembly():
    attr = DenseIntOrFPElementsAttr.from_list(_t((4,), F32), [1.0, 2.0, 3.0, 4.0])
    task = _task(
        "k0_aicpu_const",
        [],
        [(0, _t((4,), F32), 1.0)],
        lambda a, ops: [ops.append(c := arith.ConstantOp(attr)) or c.result],
    )
    module = _program("c", 64, [("out", "y", 0, (4,), "f32")], [task])
    with pytest.raises(AssemblyError, match="arith.constant has no AI-CPU kernel"):
        assemble(module)


# ---------------------------------------------------------------------------
# Cost model
# ---------------------------------------------------------------------------


WORK_BODY = """
func.func @f(%a: tensor<8x16xf32>, %b: tensor<16x4xf32>, %x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>,
             %m: tensor<16x8xf32>, %s16: tensor<16xf32>) {
  %mm = "graph.matmul"(%a, %b) : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  %gm = "graph.gemm"(%m, %b) <{trans_a = 1 : i64}> : (tensor<16x8xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  %cv = "graph.conv"(%x, %w) <{operandSegmentSizes = array<i32: 1, 1, 0, 0>}> : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  %ad = "graph.add"(%a, %a) : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  %rs = "graph.reduce_sum"(%a) <{axes = array<i64: 1>, keepdims = 0 : i64}> : (tensor<8x16xf32>) -> tensor<8xf32>
  %sm = "graph.softmax"(%a) <{axis = 1 : i64}> : (tensor<8x16xf32>) -> tensor<8x16xf32>
  %ln = "graph.layer_norm"(%a, %s16) <{axis = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 0, 0>}> : (tensor<8x16xf32>, tensor<16xf32>) -> tensor<8x16xf32>
  %mp = "graph.max_pool"(%x) <{kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>}> : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
  %tr = "graph.transpose"(%a) <{perm = array<i64: 1, 0>}> : (tensor<8x16xf32>) -> tensor<16x8xf32>
  %cc = "graph.concat"(%a, %a) <{axis = 0 : i64}> : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<16x16xf32>
  %fl = "graph.fill"() <{value = 1.0 : f32}> : () -> tensor<8x16xf32>
  %fu = "graph.fusion"(%a, %fl) ({
  ^bb0(%p: tensor<8x16xf32>, %q: tensor<8x16xf32>):
    %s = "graph.sub"(%p, %q) : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
    %r = "graph.relu"(%s) : (tensor<8x16xf32>) -> tensor<8x16xf32>
    "graph.yield"(%r) : (tensor<8x16xf32>) -> ()
  }) : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  func.return
}
"""


def test_work_rule_per_op_kind():
    fn = aicpu.parse_body(WORK_BODY, "work")
    got = {op.results[0].name_hint: (aicpu.work_rule(op), aicpu.op_work(op)) for op in fn.body.block.ops if op.results}
    assert got == {
        "mm": ("macs", 8 * 4 * 16),  # M N K
        "gm": ("macs", 8 * 4 * 16),  # K from A's rows when trans_a
        "cv": ("macs", 4 * 6 * 6 * 3 * 3 * 3),  # output elements x C_in kh kw
        "ad": ("output", 128),  # elementwise: output elements
        "rs": ("input", 128),  # reductions: input elements
        "sm": ("input", 128),  # softmax
        "ln": ("input", 128),  # normalisation
        "mp": ("window", 3 * 4 * 4 * 4),  # output elements x window
        "tr": ("output", 128),  # data movement: output elements
        "cc": ("output", 256),
        "fl": ("free", 0),  # constants are part of the task
        "fu": ("region", 2 * 128),  # sum of the fused ops
    }
    assert aicpu.body_work(fn) == sum(w for _, w in got.values())


def test_einsum_work_counts_multiply_accumulates():
    class FakeEinsum:  # the rule reads only the equation and the operand shapes
        name = "graph.einsum"

        def __init__(self, eq, shapes):
            self.properties = {"equation": StringAttr(eq)}
            self.attributes = {}
            self.operands = list(Block(arg_types=[_t(s, F32) for s in shapes]).args)
            self.results = []

    assert aicpu.op_work(FakeEinsum("ij,jk->ik", [(8, 16), (16, 4)])) == 8 * 16 * 4
    assert aicpu.op_work(FakeEinsum("b...i,b...j->b...ij", [(2, 3, 5), (2, 3, 7)])) == 2 * 3 * 5 * 7


@pytest.mark.parametrize("target", ["davinci-910", "davinci-910b"])
def test_cycles_follow_the_cost_formula(target):
    cfg = load_target(target)
    a = cfg.aicpu
    n = 64
    # Memory-bound: an elementwise op on f64; compute-bound: a matmul.
    for body, shape, dtype, elem, work, memory_bound in (
        (lambda x, ops: [_op(g.NegOp, ops, [x[0]])], (4096,), "f64", F64, 4096, True),
        (lambda x, ops: [_op(g.MatMulOp, ops, [x[0], x[0], []])], (n, n), "f32", F32, n * n * n, False),
    ):
        nbytes = np.dtype(dtype.replace("f", "float")).itemsize * math.prod(shape)
        task = _task("k0_aicpu", [(0, _t(shape, elem), 1.0)], [(nbytes, _t(shape, elem), 1.0)], body)
        module = _program("c", 2 * nbytes, [("in", "x", 0, shape, dtype), ("out", "y", nbytes, shape, dtype)], [task])
        prog = assemble(module)
        assert prog.aicpu_tasks[0].work == work
        res = simulate(prog, {"x": np.ones(shape)}, cfg)
        moving, computing = 2 * nbytes / a.bytes_per_cycle, work / a.elements_per_cycle
        assert (moving > computing) == memory_bound
        want = math.ceil(a.launch_cycles + max(moving, computing))
        assert res.profile.kernels[0].cycles == want == cfg.aicpu_cycles(2 * nbytes, work)
        assert res.profile.total_cycles == want


def test_aicpu_config_section_is_validated():
    with open(load_target("davinci-910").path) as f:
        data = json.load(f)
    cfg = config_from_dict(data)
    assert cfg.aicpu.cores > 0 and cfg.aicpu.launch_cycles > 0
    broken = json.loads(json.dumps(data))
    del broken["aicpu"]["bytes_per_cycle"]
    with pytest.raises(ConfigError, match="aicpu: missing key 'bytes_per_cycle'"):
        config_from_dict(broken)
    broken = json.loads(json.dumps(data))
    broken["aicpu"]["cores"] = 2.5
    with pytest.raises(ConfigError, match="aicpu.cores must be a positive integer"):
        config_from_dict(broken)
    broken = json.loads(json.dumps(data))
    broken["aicpu"]["threads"] = 4
    with pytest.raises(ConfigError, match=r"aicpu: unknown keys \['threads'\]"):
        config_from_dict(broken)


# ---------------------------------------------------------------------------
# Streams, races, profile
# ---------------------------------------------------------------------------

# A kernel on stream 0 writes y = x at [128, 160); an AI-CPU task reads it.
RACE_PROGRAM = """
npu.program @p gm_size 1024 {{
  npu.input "x" at 0 : tensor<16xf16>
  npu.output "z" at 256 : tensor<16xf16>
  npu.kernel @k0_copy {{
    %g = npu.ptr gm 0
    %o = npu.ptr gm 128
    %u = npu.ptr ub 0
    npu.dma mte2 %u, %g len 32 : !npu.ptr<ub>, !npu.ptr<gm>
    npu.set_flag mte2 -> mte3 event 0
    npu.wait_flag mte2 -> mte3 event 0
    npu.dma mte3 %o, %u len 32 : !npu.ptr<gm>, !npu.ptr<ub>
  }}
  npu.launch @k0_copy block_dim 1 stream 0
  {sync}
  npu.aicpu @k1_aicpu_abs stream {stream} ins [128 : tensor<16xf16>] outs [256 : tensor<16xf16>] {{
  ^bb0(%a: tensor<16xf16>):
    %r = graph.abs %a : (tensor<16xf16>) -> tensor<16xf16>
    npu.aicpu_return %r : tensor<16xf16>
  }}
}}
"""


def _race_program(stream: int, sync: str = ""):
    return assemble(parse_npu_mlir(RACE_PROGRAM.format(stream=stream, sync=sync)))


def _x16():
    return {"x": np.linspace(-3, 3, 16).astype(np.float16)}


def test_task_and_kernel_on_two_streams_race_without_an_event():
    with pytest.raises(
        RaceError,
        match=r"data race between launch of 'k0_copy' \(stream 0\) and AI-CPU task "
        r"'k1_aicpu_abs' \(stream 1\) on gm bytes \[128, 160\): no stream event orders them",
    ):
        simulate(_race_program(1), _x16())
    res = simulate(_race_program(1), _x16(), races="warn")
    assert len(res.profile.races) == 1


def test_task_ordered_by_a_stream_event_or_its_stream_is_not_a_race():
    x = _x16()["x"]
    for prog in (
        _race_program(1, "npu.stream_record stream 0 event 0\n  npu.stream_wait stream 1 event 0"),
        _race_program(0),
    ):
        res = simulate(prog, _x16())
        np.testing.assert_array_equal(res.outputs["z"], np.abs(x))
        kernel, task = res.profile.kernels
        assert task.start == kernel.start + kernel.cycles  # it waited for the launch
        assert res.profile.total_cycles == kernel.cycles + task.cycles


def test_task_on_an_independent_stream_overlaps_launches():
    res = simulate(_race_program(1), _x16(), races="off")
    kernel, task = res.profile.kernels
    assert kernel.start == task.start == 0
    assert res.profile.total_cycles == max(kernel.cycles, task.cycles)


def test_profile_table_and_trace_show_the_ai_cpu():
    res = simulate(_race_program(0), _x16())
    kernel, task = res.profile.kernels
    assert (kernel.task_type, task.task_type) == ("AI_CORE", "AI_CPU")
    assert task.cores == 0 and task.bytes == {"gm_aicpu": 32, "aicpu_gm": 32}
    assert task.memory_bound is None and task.info["work"] == 16
    table = format_profile(res.profile)
    assert "1 launch(es), 1 AI-CPU task(s)" in table
    # a hand-written task: no model nodes, so the op name is the task's
    row = next(line for line in table.splitlines() if line.startswith("k1_aicpu_abs"))
    fields = row.split()
    assert fields[2] == "AI_CPU" and fields[-1] == "aicpu"
    assert f"{task.cycles / res.profile.clock_mhz:.3f}" in row
    trace = chrome_trace(res.profile)
    names = {e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "process_name"}
    assert "AI CPU" in names
    (ev,) = [e for e in trace["traceEvents"] if e.get("ph") == "X" and e["name"] == "k1_aicpu_abs"]
    assert ev["pid"] != 0 and ev["args"]["task_type"] == "AI_CPU"
    assert trace["otherData"]["kernels"][1]["task_type"] == "AI_CPU"


# ---------------------------------------------------------------------------
# Offline model
# ---------------------------------------------------------------------------


def test_offline_model_round_trip_keeps_outputs_and_cycles(tmp_path):
    prog = _race_program(1, "npu.stream_record stream 0 event 0\n  npu.stream_wait stream 1 event 0")
    path = tmp_path / "t.om"
    prog.save(path)
    loaded = Program.load(path)
    assert loaded == prog
    assert loaded.aicpu_tasks[0].work == prog.aicpu_tasks[0].work
    a, b = simulate(prog, _x16()), simulate(loaded, _x16())
    np.testing.assert_array_equal(a.outputs["z"], b.outputs["z"])
    assert a.profile.total_cycles == b.profile.total_cycles
    assert [k.cycles for k in a.profile.kernels] == [k.cycles for k in b.profile.kernels]
    # ge-run runs the .om as it is
    out, profile = run_npu_file(path, _x16())
    np.testing.assert_array_equal(out["z"], a.outputs["z"])


def _rewrite_header(path, edit):
    from target.program import read_om, write_om

    header, arrays = read_om(path)
    edit(header)
    write_om(path, header, arrays)  # with a valid checksum: the body checks must refuse it


@pytest.mark.parametrize(
    "edit,message",
    [
        (lambda t: t.update(body=t["body"].replace('"graph.abs"(%a)', '"graph.abs"(%nope)')), "does not parse or verify"),
        (lambda t: t.update(body=t["body"][: len(t["body"]) // 2]), "does not parse or verify"),
        (lambda t: t.update(body=t["body"].replace("graph.abs", "graph.absolutely")), "does not parse or verify"),
        (lambda t: t.update(ins=[[128, "float16", [8], 1.0]]), "input #0 of the body is tensor<16xf16>"),
    ],
)
def test_corrupted_body_in_the_offline_model_is_refused(tmp_path, edit, message):
    path = tmp_path / "t.om"
    _race_program(0).save(path)
    _rewrite_header(path, lambda h: edit(h["aicpu_tasks"][0]))
    with pytest.raises(AssemblyError, match=message) as info:
        Program.load(path)
    text = str(info.value)
    assert "\n" not in text and "AI-CPU task 'k1_aicpu_abs'" in text and str(path) in text


def test_ge_run_runs_an_offline_model_with_ai_cpu_tasks(tmp_path, capsys):
    from gedialects.tools import ge_run

    path = tmp_path / "t.om"
    _race_program(0).save(path)
    np.savez(tmp_path / "in.npz", **_x16())
    assert ge_run.main([str(path), "--inputs", str(tmp_path / "in.npz")]) == 0
    printed = capsys.readouterr().out
    assert "AI_CPU" in printed and "k1_aicpu_abs" in printed
