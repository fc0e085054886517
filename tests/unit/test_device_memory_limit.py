"""A device-memory limit on the NPU (tile-fit-device-memory): host offload and
recompute carried into the npu program, the arena within the limit, outputs
unchanged, the copies' cycles reported; an impossible limit is one line."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from xdsl.dialects.builtin import StringAttr

from gedialects.frontend.onnx_import import import_model
from gedialects.npu import ops as npu
from gedialects.numerics import CRITERIA
from gedialects.tools import ge_compile
from gedialects.zoo import onnxruntime_outputs, random_inputs
from lowering.pipeline import compile_module
from target.assembler import assemble
from target.simulator import simulate

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "zoo"))
from zoo import zoo_inputs, zoo_path  # noqa: E402


def _skip_net():
    """x -> conv a -> three 3x3 convs (32 channels in the middle) -> + a: `a`
    is alive across the three, written by a conv (nothing cheap to recompute
    it from), and the peak is between the wide maps, where only `a` is idle."""
    rng = np.random.default_rng(5)
    nodes, inits = [], []

    def conv(src: str, dst: str, k: int, i: int, cin: int = 16, cout: int = 16) -> None:
        w = (rng.standard_normal((cout, cin, k, k)) / (4 * k)).astype(np.float32)
        inits.append(helper.make_tensor(f"w{i}", TensorProto.FLOAT, w.shape, w.ravel()))
        nodes.append(helper.make_node("Conv", [src, f"w{i}"], [f"c{i}"], pads=[k // 2] * 4))
        nodes.append(helper.make_node("Relu", [f"c{i}"], [dst]))

    conv("x", "a", 1, 0)
    conv("a", "b1", 3, 1, cout=32)
    conv("b1", "b2", 3, 2, cin=32, cout=32)
    conv("b2", "b3", 3, 3, cin=32)
    nodes.append(helper.make_node("Add", ["b3", "a"], ["y"]))
    graph = helper.make_graph(
        nodes, "skip", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 16, 16])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.fixture
def no_conv_split_k(monkeypatch):
    """Convs' split-K off (gedialects/tile/transforms/split_conv.py): these
    tests take their limits from the free program's arena, which would hold
    the splits' workspaces, while under a limit split-K is off."""
    from gedialects.tile.transforms import split_reduction

    monkeypatch.setattr(split_reduction, "plan_conv_split", lambda *args: None)


def _compile(model, precision: str, limit: int = 0):
    return compile_module(import_model(model, {}, source="skip"), precision, device_memory_limit=limit)


def _copies(compiled) -> list[npu.MemcpyOp]:
    return [op for op in compiled.module.walk() if isinstance(op, npu.MemcpyOp)]


def _peak(compiled) -> int:
    prog = compiled.module.body.block.first_op
    return max(int(b) for b in prog.attributes["ge.arena_live_bytes"].data.split(";"))


@pytest.mark.parametrize("precision", ["must_keep_origin_dtype", "force_fp16"])
def test_offload_fits_the_limit_and_keeps_the_outputs(precision, no_conv_split_k):
    model = _skip_net()
    inputs = random_inputs(model)
    free = _compile(model, precision)
    arena = int(free.memory["arena_size"])
    limit = arena * 9 // 10
    fitted = _compile(model, precision, limit)
    assert int(fitted.memory["arena_size"]) <= limit < arena
    assert _peak(fitted) <= limit
    assert fitted.memory["offloaded"] >= 1 and fitted.memory["host_bytes"] > 0
    copies = _copies(fitted)
    assert {c.direction.data for c in copies} == {"d2h", "h2d"}
    before = simulate(assemble(free.module), inputs, races="error")
    after = simulate(assemble(fitted.module), inputs, races="error")
    assert all(np.array_equal(before.outputs[k], after.outputs[k]) for k in before.outputs)
    ((name, ref),) = onnxruntime_outputs(model, inputs).items()
    assert CRITERIA[precision].check(after.outputs[name].reshape(ref.shape), ref).ok
    # the cost is reported: the copies' cycles, and the whole run is longer by about them
    rows = [k for k in after.profile.kernels if k.task_type == "MEMCPY"]
    assert len(rows) == len(copies)
    assert after.profile.memcpy_cycles == sum(k.cycles for k in rows) > 0
    assert after.profile.total_cycles > before.profile.total_cycles


def test_without_the_copies_back_the_result_is_wrong(no_conv_split_k):
    """The test above can fail: drop the host-to-device copies and the
    reader sees whatever its storage held."""
    model = _skip_net()
    inputs = random_inputs(model)
    free = _compile(model, "must_keep_origin_dtype")
    fitted = _compile(model, "must_keep_origin_dtype", int(free.memory["arena_size"]) * 9 // 10)
    prog = fitted.module.body.block.first_op
    tasks = [op for op in prog.body.block.ops if isinstance(op, npu.LaunchOp | npu.AicpuOp | npu.MemcpyOp)]
    live = prog.attributes["ge.arena_live_bytes"].data.split(";")
    for i, task in reversed(list(enumerate(tasks))):
        if isinstance(task, npu.MemcpyOp) and task.direction.data == "h2d":
            del live[i]
            task.detach()
            task.erase()
    for op in fitted.module.walk():  # the profile's device-memory track: one entry per task
        if "ge.arena_live_bytes" in op.attributes:
            op.attributes["ge.arena_live_bytes"] = StringAttr(";".join(live))
    got = simulate(assemble(fitted.module), inputs, races="error").outputs
    want = simulate(assemble(free.module), inputs, races="error").outputs
    assert not all(np.array_equal(got[k], want[k]) for k in want)


def test_a_limit_already_met_changes_nothing():
    model = _skip_net()
    free = _compile(model, "force_fp16")
    roomy = _compile(model, "force_fp16", int(free.memory["arena_size"]))
    assert not _copies(roomy)
    assert roomy.memory["arena_size"] == free.memory["arena_size"]
    assert roomy.memory["device_memory_limit"] == free.memory["arena_size"]


def test_transformer_offloads_and_recomputes_and_matches_onnxruntime(tmp_path):
    """BERT with its attention unfused (its mask kernel is what gets
    recomputed; fused, the attention kernel reads the mask itself and the
    limit is met by offloads alone: test_ge_run_reports_the_copies)."""
    model = onnx.load(str(zoo_path("bert")))
    inputs = zoo_inputs("bert")
    switch = tmp_path / "switch.cfg"
    switch.write_text("AttentionFusionPass:off\n")
    free = compile_module(import_model(model, {}, source="bert"), fusion_switch_file=str(switch))
    limit = int(free.memory["arena_size"]) * 4 // 5
    fitted = compile_module(import_model(model, {}, source="bert"), device_memory_limit=limit,
                            fusion_switch_file=str(switch))
    assert int(fitted.memory["arena_size"]) <= limit
    assert fitted.memory["offloaded"] >= 1 and fitted.memory["recomputed"] >= 1
    assert fitted.streams > 1  # the arena kept as planned: copies overlap the kernels on other streams
    before = simulate(assemble(free.module), inputs, races="error")
    after = simulate(assemble(fitted.module), inputs, races="error")
    assert all(np.array_equal(before.outputs[k], after.outputs[k]) for k in before.outputs)
    want = onnxruntime_outputs(model, inputs)
    for k, ref in want.items():
        assert CRITERIA["force_fp16"].check(after.outputs[k].reshape(ref.shape), ref).ok


def test_impossible_limit_is_one_line(tmp_path, capsys):
    path = tmp_path / "skip.onnx"
    onnx.save(_skip_net(), str(path))
    rc = ge_compile.main([str(path), "-o", str(tmp_path / "skip.om"), "--device-memory-limit", "4096"])
    err = capsys.readouterr().err.strip()
    assert rc == 1
    assert len(err.splitlines()) == 1, err
    assert err.startswith("ge-compile: error: tile-fit-device-memory: @main: device-memory-limit=4096 cannot be met")
    assert "itself reads and writes" in err and "the limit must be at least" in err


def test_negative_limit_is_refused(tmp_path, capsys):
    path = tmp_path / "skip.onnx"
    onnx.save(_skip_net(), str(path))
    rc = ge_compile.main([str(path), "-o", str(tmp_path / "skip.om"), "--device-memory-limit", "-1"])
    assert rc == 1
    assert "--device-memory-limit must be >= 0 bytes" in capsys.readouterr().err


def test_ge_run_reports_the_copies(capsys):
    """ge-run compiles under the limit and says what the host link cost
    (85% of the arena: the fused attention kernel's own operands are 77%,
    the merged query/key/value product among them)."""
    from gedialects.tools import ge_run

    path = str(zoo_path("bert"))
    free = compile_module(import_model(onnx.load(path), {}, source="bert"))
    limit = int(free.memory["arena_size"]) * 17 // 20
    rc = ge_run.main([path, "--inputs", str(zoo_path("bert")).replace(".onnx", ".inputs.npz"),
                      "--device-memory-limit", str(limit), "--check"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "host offload: 6 host copies" in out and "cycles" in out
    assert "check: all 2 output(s) match onnxruntime" in out


def _wide_conv_pair(reader: str = "conv"):
    """x (32 channels) -> 1x1 conv to 64 channels -> a 3x3 conv to 16 (or a
    padded 3x3 max pool): the first conv's own input and output are most of
    the arena."""
    rng = np.random.default_rng(7)
    w1 = (rng.standard_normal((64, 32, 1, 1)) / 6).astype(np.float32)
    w2 = (rng.standard_normal((16, 64, 3, 3)) / 24).astype(np.float32)
    if reader == "conv":
        last, y_shape = helper.make_node("Conv", ["a", "w2"], ["y"], pads=[1, 1, 1, 1]), [1, 16, 16, 16]
    else:
        last = helper.make_node("MaxPool", ["a"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
        y_shape = [1, 64, 8, 8]
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w1"], ["c"]), helper.make_node("Relu", ["c"], ["a"]), last],
        "pair", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)],
        [helper.make_tensor(n, TensorProto.FLOAT, w.shape, w.ravel()) for n, w in (("w1", w1), ("w2", w2))])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("reader", ["conv", "max_pool"])
@pytest.mark.parametrize("precision", ["must_keep_origin_dtype", "force_fp16"])
def test_a_conv_over_the_limit_is_sliced_by_channels(precision, reader, no_conv_split_k):
    """No offload can take a task's own operands off the device: the conv
    writes its output in two channel pieces, two kernels, and the reader
    gathers them, or (a pool) runs once per piece (lowering/graph_to_tile/slicing.py)."""
    model = _wide_conv_pair(reader)
    inputs = random_inputs(model)
    free = compile_module(import_model(model, {}, source="pair"), precision)
    limit = int(free.memory["arena_size"]) * 88 // 100
    fitted = compile_module(import_model(model, {}, source="pair"), precision, device_memory_limit=limit)
    assert fitted.kernel_kinds["conv"] == free.kernel_kinds["conv"] + 1
    assert fitted.kernel_kinds.get("max_pool", 0) == 2 * free.kernel_kinds.get("max_pool", 0)
    assert fitted.memory["sliced"] == 1
    assert int(fitted.memory["arena_size"]) <= limit and _peak(fitted) <= limit
    before = simulate(assemble(free.module), inputs, races="error")
    after = simulate(assemble(fitted.module), inputs, races="error")
    ((name, ref),) = onnxruntime_outputs(model, inputs).items()
    assert CRITERIA[precision].check(after.outputs[name].reshape(ref.shape), ref).ok
    # the same products; the pieces' tiles only group the fp32 sums differently (which may also
    # round an fp16 result the other way): within the precision mode's criterion of the unsliced run
    assert CRITERIA[precision].check(after.outputs[name], before.outputs[name]).ok


def test_resnet50_runs_within_70_percent_of_its_arena(no_conv_split_k):
    """Issue 16's example: res3a's first 1x1 conv and its projection
    shortcut each read a 1,606 KB map and write an 803 KB one, above 70% of
    the 4-stream arena; sliced, the program fits and matches onnxruntime."""
    from gedialects.zoo import light_model_path, with_random_weights

    model = with_random_weights(onnx.load(str(light_model_path("resnet50"))), calibrate=True)
    inputs = random_inputs(model)
    free = compile_module(import_model(model, {}, source="resnet50"))
    arena = int(free.memory["arena_size"])
    # 80%: the one-stream plan fits, nothing sliced or copied
    roomy = compile_module(import_model(model, {}, source="resnet50"), device_memory_limit=arena * 8 // 10)
    assert roomy.memory["sliced"] == 0 and not _copies(roomy)
    limit = arena * 7 // 10
    fitted = compile_module(import_model(model, {}, source="resnet50"), device_memory_limit=limit)
    assert int(fitted.memory["arena_size"]) <= limit and _peak(fitted) <= limit
    assert fitted.memory["offloaded"] >= 1 and fitted.kernel_kinds["conv"] > free.kernel_kinds["conv"]
    # res3a's two convs alone do not do it: lowered again, the residual convs are sliced too
    assert fitted.memory["sliced"] > 2
    after = simulate(assemble(fitted.module), inputs, races="error")
    assert after.profile.memcpy_cycles > 0
    ((name, ref),) = onnxruntime_outputs(model, inputs).items()
    got = after.outputs[name].reshape(ref.shape)
    assert CRITERIA["force_fp16"].check(got, ref).ok
    assert np.argmax(got) == np.argmax(ref) and ref.max() < 0.99  # a real distribution, not a one-hot
