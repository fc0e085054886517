"""ge-compile -> .om -> ge-run, the GM arena from the memory plan, ge-run --check."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest

from gedialects.frontend.onnx_import import import_model
from gedialects.numerics import CRITERIA, Criterion, assert_close
from gedialects.tools import ge_compile, ge_run
from gedialects.zoo import light_model_path, with_random_weights
from lowering.pipeline import compile_module, run_compiled
from target.assembler import assemble
from target.program import Program


@pytest.fixture(scope="module")
def squeezenet(tmp_path_factory):
    """squeezenet with random weights (the light model's are constant), as a file."""
    model = with_random_weights(onnx.load(str(light_model_path("squeezenet"))))
    path = tmp_path_factory.mktemp("sq") / "squeezenet.onnx"
    onnx.save(model, str(path))
    return model, path


def test_ge_compile_om_runs_and_matches_onnxruntime(squeezenet, tmp_path, capsys):
    _, path = squeezenet
    om = tmp_path / "squeezenet.om"
    assert ge_compile.main([str(path), "-o", str(om), "--dump-ir", str(tmp_path / "ir")]) == 0
    out = capsys.readouterr().out
    assert "kernels          35" in out and "GM arena" in out  # force_fp16: the softmax writes the fp32 output; 2 memsets; the classifier split in K
    assert sorted(p.name for p in (tmp_path / "ir").iterdir()) == [
        "00-import.mlir", "01-canonicalize.mlir", "02-decompose.mlir", "03-fuse.mlir",
        "04-plan-memory.mlir", "05-map-unbatch.mlir", "06-space-to-depth.mlir", "07-partition.mlir",
        "08-assign-layouts.mlir", "09-graph-to-tile.mlir", "10-tile-legalize-math.mlir",
        "11-tile-split-reduction.mlir", "12-tile-select-tiling.mlir", "13-tile-distribute.mlir",
        "14-tile-pipeline-buffers.mlir", "15-tile-share-alike-kernels.mlir", "16-tile-expand-structured.mlir",
        "17-tile-allocate.mlir", "18-tile-assign-streams.mlir", "19-tile-to-npu.mlir", "20-npu-insert-sync.mlir",
    ]
    program = Program.load(str(om))
    assert program.gm_size > 0
    # the simulator runs with race detection on; --check compares with onnxruntime
    assert ge_run.main([str(om), "--check", "--onnx", str(path)]) == 0
    assert "match onnxruntime (rtol=0.005, atol=0.001, force_fp16)" in capsys.readouterr().out
    # and a check that cannot pass exits non-zero (the fp16 error is not 0)
    assert ge_run.main([str(om), "--check", "--onnx", str(path), "--rtol", "0", "--atol", "0"]) == 1


def test_memory_planned_arena_is_smaller_than_no_reuse_and_correct(squeezenet):
    model, _ = squeezenet
    from gedialects.zoo import onnxruntime_outputs, random_inputs

    fp32 = "must_keep_origin_dtype"
    bump = compile_module(import_model(model, {}, source="squeezenet"), fp32, plan_memory=False)
    planned = compile_module(import_model(model, {}, source="squeezenet"), fp32)
    assert bump.memory == {}
    mem = planned.memory
    assert mem["arena_size"] < mem["no_reuse"]
    assert mem["arena_size"] <= 0.6 * mem["no_reuse"]
    assert assemble(planned.module).gm_size < assemble(bump.module).gm_size
    x = random_inputs(model)
    got = run_compiled(planned, x).outputs  # races="error"
    want = onnxruntime_outputs(model, x)
    for k, v in want.items():
        assert_close(got[k], v, fp32, err_msg=k)


def test_ge_compile_errors_are_one_line(squeezenet, tmp_path, capsys):
    _, path = squeezenet
    assert ge_compile.main([str(path), "-o", str(tmp_path / "x.om"), "--precision-mode", "fp8"]) == 1
    assert ge_compile.main([str(path), "-o", str(tmp_path / "no" / "x.om")]) == 1
    assert ge_compile.main([str(path), "-o", str(tmp_path / "x.om"), "--input-shape", "data_0:1,a"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and all(line.startswith("ge-compile: error: ") for line in err)


def test_check_tolerance_follows_precision_mode():
    assert ge_run.CHECK_TOLERANCE is CRITERIA  # gedialects/numerics.py
    assert CRITERIA["must_keep_origin_dtype"] == Criterion(rtol=1e-4, atol=1e-5, norm_rtol=1e-4)
    assert CRITERIA["force_fp16"] == Criterion(rtol=0.0, atol=1e-3, norm_rtol=5e-3)


def test_compile_pauses_the_cyclic_collector_and_restores_it(squeezenet):
    """The collector is off while the passes run (its generation-2 walks of
    the live IR were a third of densenet121's compile) and as it was after."""
    import gc

    model, _ = squeezenet
    seen = []
    assert gc.isenabled()
    compile_module(import_model(model, {}, source="squeezenet"), dump=lambda stage, m: seen.append(gc.isenabled()))
    assert seen and not any(seen)
    assert gc.isenabled()
    gc.disable()
    try:
        compile_module(import_model(model, {}, source="squeezenet"))
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_the_tools_pause_the_collector_over_the_whole_job(squeezenet, tmp_path, monkeypatch):
    """ge-compile keeps the collector paused from import to the .om write
    (resumed between compile and assembly, its first passes walked the
    finished IR) and resumes it after, also when the job fails; ge-run
    until its program is assembled."""
    import gc

    from gedialects.tools import ge_compile, ge_run
    from target.assembler import assemble as real_assemble
    from target.program import Program

    seen: dict[str, list[bool]] = {"save": [], "assemble": []}
    real_save = Program.save

    def save(self, path):
        seen["save"].append(gc.isenabled())
        real_save(self, path)

    def assemble(module, **kw):
        seen["assemble"].append(gc.isenabled())
        return real_assemble(module, **kw)

    monkeypatch.setattr(Program, "save", save)
    monkeypatch.setattr("target.assembler.assemble", assemble)
    _, path = squeezenet
    assert gc.isenabled()
    assert ge_compile.main([str(path), "-o", str(tmp_path / "s.om")]) == 0
    assert seen == {"save": [False], "assemble": [False]} and gc.isenabled()
    assert ge_compile.main([str(path), "-o", str(tmp_path / "s.om"), "--out-nodes", "nowhere:0"]) != 0
    assert gc.isenabled()
    assert ge_run.main([str(path), "--backend", "npu"]) == 0
    assert seen["assemble"][-1] is False and gc.isenabled()


def test_a_model_compiles_to_the_same_instructions_every_time():
    """A compile is a function of its input: GPT-2's fp32 program once took
    its UB buffers in an order that followed object ids (a set of operands
    released at their last use), so its instructions changed from run to run."""
    model = Path(__file__).resolve().parents[1] / "zoo" / "models" / "gpt2.onnx"

    def instructions():
        module = import_model(onnx.load(str(model)), {}, source="gpt2")
        compiled = compile_module(module, "must_keep_origin_dtype")
        return [(k.name, k.code) for k in compiled.program().kernels]

    first = instructions()
    assert all(instructions() == first for _ in range(2))  # the old code differed within three compiles
