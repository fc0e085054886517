"""Parallel streams: the scheduler's analysis (tile-assign-streams), the
simulator's sharing of the AI cores between streams, and whole models
compiled on several streams against one stream and onnxruntime."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs
from onnx import TensorProto, helper

from gedialects.frontend.onnx_import import import_model
from gedialects.numerics import CRITERIA
from target.run import parse_npu_mlir
from gedialects.tile import streams
from gedialects.zoo import light_model_path, onnxruntime_outputs, random_inputs, with_random_weights
from lowering.pipeline import compile_module
from target.assembler import assemble
from target.config import load_target
from target.simulator import simulate

# ---------------------------------------------------------------- analysis


@hs.composite
def task_graphs(draw):
    """Tasks in program order, each reading some earlier tasks' tensors and
    writing its own tensor, or a piece of one shared concat tensor."""
    n = draw(hs.integers(1, 14))
    accesses = []
    for j in range(n):
        earlier = [f"t{i}" for i in range(j)] + (["cat"] if j else [])
        reads = draw(hs.sets(hs.sampled_from(earlier), max_size=3)) if earlier else set()
        writes = {"cat"} if draw(hs.booleans()) and "cat" not in reads else {f"t{j}"}
        accesses.append(streams.Access(frozenset(reads | {"x"}), frozenset(writes)))
    return accesses


def _conflicts(a: streams.Access, b: streams.Access) -> bool:
    """Must two tasks be ordered? (Writers of one tensor that do not read it
    write disjoint pieces.)"""
    return bool(a.writes & b.reads or a.reads & b.writes)


@settings(max_examples=150, deadline=None)
@given(task_graphs(), hs.integers(1, 5))
def test_every_conflicting_pair_is_ordered_and_retire_is_exact(accesses, max_streams):
    preds = streams.dependences(accesses)
    schedule = streams.assign(preds, max_streams)
    assert schedule.count <= max_streams
    before = streams.happens_before(schedule)
    for j in range(len(accesses)):
        for i in range(j):
            if _conflicts(accesses[i], accesses[j]):
                assert (before[j] >> i) & 1, f"task {j} is not ordered after task {i}"
    retire = streams.retire_positions(schedule)
    n = len(accesses)
    for i in range(n):
        after = [j for j in range(i + 1, n + 1) if all((before[k] >> i) & 1 for k in range(j, n))]
        assert retire[i] == min(after)
    if max_streams == 1:
        assert schedule.streams == [0] * n and not any(schedule.waits)
        assert retire == list(range(1, n + 1))


def test_a_memset_waits_for_what_its_writer_waits_for_through_tasks_between():
    """A memset clears tensor c for its writer, the sum kernel of a split conv,
    which follows the partials kernel: the memset waits for what the partials
    wait for (the conv's input's writer), so it cannot start while the tasks
    before it (the storage's earlier tenants) may still run."""
    access = streams.Access
    tasks = [access(frozenset({"x"}), frozenset({"a"})),  # 0: a
             access(frozenset({"a"}), frozenset({"b"})),  # 1: b, the conv's input
             access(frozenset({"c"}), frozenset({"c"}), clears=True),  # 2: the memset of c
             access(frozenset({"b"}), frozenset({"p"})),  # 3: partials
             access(frozenset({"p"}), frozenset({"c"}))]  # 4: the sum writes c
    preds = streams.dependences(tasks)
    assert preds[2] == [1]
    before = streams.happens_before(streams.assign(preds, 4))
    assert (before[2] >> 1) & 1 and (before[2] >> 0) & 1


def test_independent_branches_get_streams_and_a_chain_does_not():
    # x -> a; a -> b; a -> c; b, c -> y (a diamond)
    diamond = [
        streams.Access(frozenset({"x"}), frozenset({"a"})),
        streams.Access(frozenset({"a"}), frozenset({"b"})),
        streams.Access(frozenset({"a"}), frozenset({"c"})),
        streams.Access(frozenset({"b", "c"}), frozenset({"y"})),
    ]
    schedule = streams.assign(streams.dependences(diamond), 4)
    assert schedule.streams == [0, 0, 1, 1]
    assert schedule.waits == [[], [], [0], [1]]
    chain = [streams.Access(frozenset({f"t{i}"}), frozenset({f"t{i + 1}"})) for i in range(5)]
    schedule = streams.assign(streams.dependences(chain), 4)
    assert schedule.streams == [0] * 5 and schedule.count == 1


# ------------------------------------------------------ cores shared by streams


def _program(launches: str):
    """Kernel k: every block loads its 2 KB of x into UB (reads only: launches
    on any streams are race-free)."""
    return assemble(parse_npu_mlir(f"""
    npu.program @p gm_size 131072 {{
      npu.input "x" at 0 : tensor<32768xf16>
      npu.kernel @k {{
        %b = npu.block_idx
        %c = arith.constant 2048 : index
        %o = arith.muli %b, %c : index
        %gb = npu.ptr gm 0 + %o
        %u = npu.ptr ub 0
        npu.dma mte2 %u, %gb len 2048 : !npu.ptr<ub>, !npu.ptr<gm>
      }}
      {launches}
    }}"""))


def _run(launches: str, target="davinci-910"):
    res = simulate(_program(launches), {"x": np.ones(32768, np.float16)}, target)
    return res.profile


def test_launches_of_two_streams_run_side_by_side_on_free_cores():
    alone = _run("npu.launch @k block_dim 16 stream 0")
    both = _run("npu.launch @k block_dim 16 stream 0\n npu.launch @k block_dim 16 stream 1")
    a, b = both.kernels
    assert a.start == b.start == 0 and a.cycles == b.cycles == alone.total_cycles
    assert both.total_cycles == alone.total_cycles
    one_stream = _run("npu.launch @k block_dim 16 stream 0\n npu.launch @k block_dim 16 stream 0")
    assert one_stream.total_cycles == 2 * alone.total_cycles


def test_a_launch_waits_for_cores_another_stream_holds():
    full = _run("npu.launch @k block_dim 32 stream 0")
    both = _run("npu.launch @k block_dim 32 stream 0\n npu.launch @k block_dim 32 stream 1")
    a, b = both.kernels
    assert b.start == a.start + a.cycles  # no core was free before
    assert both.total_cycles == 2 * full.total_cycles
    # 24 + 24 blocks: 8 of the second start at once, the rest as cores free up
    part = _run("npu.launch @k block_dim 24 stream 0\n npu.launch @k block_dim 24 stream 1")
    a, b = part.kernels
    assert b.start == 0 and a.cycles < part.total_cycles < 2 * a.cycles + a.cycles


def test_concurrent_launches_share_hbm():
    cfg = load_target("davinci-910")
    narrow = dataclasses.replace(cfg, hbm_bytes_per_cycle=32.0)  # one core's DMA rate in all
    alone = simulate(_program("npu.launch @k block_dim 1 stream 0"), {"x": np.ones(32768, np.float16)}, narrow)
    both = simulate(_program("npu.launch @k block_dim 1 stream 0\n npu.launch @k block_dim 1 stream 1"),
                    {"x": np.ones(32768, np.float16)}, narrow)
    first, second = both.profile.kernels
    assert first.cycles == alone.profile.total_cycles
    assert second.cycles > first.cycles  # started while the first held HBM: half the rate


# ------------------------------------------------------------- whole models


def _branches_model() -> onnx.ModelProto:
    """Four branches of different convs on one input, concatenated (an
    Inception block); each branch is too small to fill the 32 cores."""
    rng = np.random.default_rng(7)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32, 14, 14])
    nodes, inits, outs = [], [], []
    for i, (k, c) in enumerate([(1, 16), (3, 32), (5, 16), (1, 16)]):
        w = (rng.standard_normal((c, 32, k, k)) / np.sqrt(32 * k * k)).astype(np.float32)
        inits.append(helper.make_tensor(f"w{i}", TensorProto.FLOAT, w.shape, w.ravel()))
        nodes.append(helper.make_node("Conv", ["x", f"w{i}"], [f"c{i}"], pads=[k // 2] * 4))
        nodes.append(helper.make_node("Relu", [f"c{i}"], [f"r{i}"]))
        outs.append(f"r{i}")
    nodes.append(helper.make_node("Concat", outs, ["y"], axis=1))
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 80, 14, 14])
    graph = helper.make_graph(nodes, "branches", [x], [y], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _compile_and_run(model, precision, max_streams, inputs):
    compiled = compile_module(import_model(model, {}, source="streams"), precision, max_streams=max_streams)
    res = simulate(assemble(compiled.module), inputs, races="error")
    return compiled, res


@pytest.mark.parametrize("precision", ["must_keep_origin_dtype", "force_fp16"])
def test_branches_on_streams_same_outputs_fewer_cycles(precision):
    model = _branches_model()
    inputs = random_inputs(model)
    one, one_res = _compile_and_run(model, precision, 1, inputs)
    many, many_res = _compile_and_run(model, precision, 4, inputs)
    assert one.streams == 1 and one.events == 0
    assert many.streams > 1 and many.events > 0
    for name, value in one_res.outputs.items():
        np.testing.assert_array_equal(many_res.outputs[name], value)
    assert many_res.profile.total_cycles < one_res.profile.total_cycles
    want = onnxruntime_outputs(model, inputs)
    assert CRITERIA[precision].check(many_res.outputs["y"].reshape(want["y"].shape), want["y"]).ok


def test_inception_branches_on_streams():
    # GoogLeNet's inception modules: four branches whose 1x1 convs leave
    # cores idle (squeezenet's fire modules no longer do: its expand convs
    # each take all 32 cores since convs share tiles as a core grid)
    model = with_random_weights(onnx.load(str(light_model_path("inception_v1"))), calibrate=True)
    inputs = random_inputs(model)
    one, one_res = _compile_and_run(model, "force_fp16", 1, inputs)
    many, many_res = _compile_and_run(model, "force_fp16", 0, inputs)  # the target's streams
    assert many.streams > 1
    for name, value in one_res.outputs.items():
        np.testing.assert_array_equal(many_res.outputs[name], value)
    assert many_res.profile.total_cycles < one_res.profile.total_cycles
    streams_used = {k.stream for k in many_res.profile.kernels}
    assert len(streams_used) == many.streams


def test_max_streams_out_of_range_is_one_line(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "gedialects.tools.ge_compile", "squeezenet", "--max-streams", "99",
                           "-o", str(tmp_path / "m.om")], capture_output=True, text=True)
    assert proc.returncode == 1
    assert proc.stderr.strip() == "ge-compile: error: --max-streams must be in [1, 64] (0: the target's), got 99"
