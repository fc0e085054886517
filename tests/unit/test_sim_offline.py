"""Offline model files, target configs, and the run entry points."""

from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest

from gedialects.npu import examples
from gedialects.numerics import assert_within, summation_bound
from target.assembler import assemble
from target.config import ConfigError, available_targets, load_target
from target.errors import AssemblyError
from target.program import Program
from target.run import main, random_inputs, run_npu_file
from target.simulator import simulate


def test_offline_model_round_trip(tmp_path):
    prog = assemble(examples.matmul(block_dim=2))
    path = tmp_path / "mm.om"
    prog.save(path)
    loaded = Program.load(path)
    assert loaded == prog  # code, layout, constants, schedule
    inputs = random_inputs(prog)
    a = simulate(prog, inputs)
    b = simulate(loaded, inputs)
    np.testing.assert_array_equal(a.outputs["c"], b.outputs["c"])
    assert a.profile.total_cycles == b.profile.total_cycles
    # a zip of arrays and a JSON header: no pickle anywhere
    with zipfile.ZipFile(path) as z:
        assert {"header.npy", "k0_code.npy", "k0_offsets.npy"} <= set(z.namelist())


def test_offline_model_keeps_floats_and_constants(tmp_path):
    from gedialects.npu import ops as npu
    from gedialects.npu.builder import ProgramBuilder

    pb = ProgramBuilder("c", gm_size=128)
    pb.constant("w", 0, np.arange(16, dtype=np.float32), "f32")
    pb.output("y", 64, (16,), "f32")
    with pb.kernel("k") as k:
        u = k.ptr("ub", 0)
        k.emit(npu.DmaOp("mte2", u, k.ptr("gm", 0), len=64))
        k.set_flag("mte2", "v", 0)
        k.wait_flag("mte2", "v", 0)
        k.emit(npu.VmulsOp("f32", u, u, -1.25, repeat=1, mask=16))
        k.set_flag("v", "mte3", 0)
        k.wait_flag("v", "mte3", 0)
        k.emit(npu.DmaOp("mte3", k.ptr("gm", 64), u, len=64))
    pb.launch("k")
    prog = assemble(pb.module())
    prog.save(tmp_path / "c.om")
    res = simulate(Program.load(tmp_path / "c.om"), {})
    np.testing.assert_array_equal(
        res.outputs["y"], np.arange(16, dtype=np.float32) * -1.25
    )


def test_bad_offline_model_file(tmp_path):
    bad = tmp_path / "bad.om"
    bad.write_bytes(b"not a zip")
    with pytest.raises(AssemblyError, match="cannot read offline model"):
        Program.load(bad)
    other = tmp_path / "other.om"
    with open(other, "wb") as f:
        np.savez(
            f, header=np.frombuffer(json.dumps({"format": "x"}).encode(), np.uint8)
        )
    with pytest.raises(AssemblyError, match="not an npu offline model"):
        Program.load(other)


def test_run_npu_file_accepts_mlir_and_om(tmp_path):
    mlir = tmp_path / "rs.mlir"
    mlir.write_text(str(examples.row_sum(64, 128)))
    x = np.random.default_rng(0).standard_normal((64, 128)).astype(np.float32)
    out, _ = run_npu_file(mlir, {"x": x})
    x64 = x.astype(np.float64)  # fp32 sums in any order: float64 reference, worst-case bound
    assert_within(out["out"], x64.sum(1), summation_bound(128, np.abs(x64).sum(1)))
    om = tmp_path / "rs.om"
    assemble(examples.row_sum(64, 128)).save(om)
    out2, profile2 = run_npu_file(om, {"x": x}, target="davinci-910b")
    np.testing.assert_array_equal(out["out"], out2["out"])
    assert profile2.target == "davinci-910b"


def test_cli_runs_a_file_and_writes_a_trace(tmp_path, capsys):
    mlir = tmp_path / "va.mlir"
    mlir.write_text(str(examples.vector_add(1 << 14, tile=4096)))
    trace = tmp_path / "t.json"
    om = tmp_path / "va.om"
    assert (
        main(
            [
                str(mlir),
                "--profile",
                str(trace),
                "--save-om",
                str(om),
                "--outputs",
                str(tmp_path),
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "vadd" in printed and "output z: float16[16384]" in printed
    assert json.loads(trace.read_text())["traceEvents"]
    assert np.load(tmp_path / "z.npy").shape == (16384,)
    assert main([str(om)]) == 0
    assert main([str(tmp_path / "missing.om")]) == 1


def test_presets_and_user_configs(tmp_path):
    assert {"davinci-910", "davinci-910b"} <= set(available_targets())
    c910 = load_target("davinci-910")
    c910b = load_target("davinci-910b")
    assert (c910.cube_cores, c910.vector_cores, c910.clock_mhz) == (32, 32, 1000)
    assert (c910b.cube_cores, c910b.vector_cores, c910b.clock_mhz) == (24, 48, 1850)
    assert (
        c910.capacity_bytes["l1"] == 1 << 20
        and c910b.capacity_bytes["ub"] == 192 * 1024
    )
    assert c910.dma_bytes_per_cycle["l1_l0a"] == 512
    # copy, edit, load by path
    with open(c910.path) as f:
        data = json.load(f)
    data["name"] = "my-npu"
    data["capacity_bytes"]["ub"] = 131072
    mine = tmp_path / "my-npu.json"
    mine.write_text(json.dumps(data))
    cfg = load_target(str(mine))
    assert cfg.name == "my-npu" and cfg.capacity_bytes["ub"] == 131072
    # mistakes are named
    data["latency_cycles"]["dma_gmm"] = 5
    mine.write_text(json.dumps(data))
    with pytest.raises(
        ConfigError, match=r"latency_cycles: unknown keys \['dma_gmm'\]"
    ):
        load_target(str(mine))
    del data["latency_cycles"]["dma_gmm"]
    data["alignment_bytes"]["ub"] = 16
    mine.write_text(json.dumps(data))
    with pytest.raises(
        ConfigError, match="alignment_bytes.ub must be a multiple of 32"
    ):
        load_target(str(mine))
    with pytest.raises(ConfigError, match="unknown target 'nope'"):
        load_target("nope")


def test_gm_bandwidth_is_shared_by_active_cores():
    cfg = load_target("davinci-910b")
    assert cfg.gm_bytes_per_cycle("gm_ub", 1) == 32
    assert cfg.gm_bytes_per_cycle("gm_ub", 48) == pytest.approx(864 / 48)
    assert cfg.dma_cycles("gm_ub", 3200, 1) == 150 + 100
    assert cfg.mmad_cycles("f16", 32, 32, 32) == 4 + 8
    assert cfg.vector_cycles("vexp", 10) == 4 + 20
