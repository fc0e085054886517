"""Command-line checks before the work starts: output paths, the target (name
or file, every key against its range), npz inputs against the model (names,
dtype kinds, value ranges, shapes), offline-model and npz files. Each refusal
is exit 1 and one `error:` line on stderr, never an `internal error`."""

from __future__ import annotations

import json
import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from gedialects.npu import examples
from gedialects.tools import ge_compile, ge_run
from target.assembler import assemble
from target.config import load_target


@pytest.fixture(scope="module")
def om(tmp_path_factory):
    """vector add of two fp16 inputs x, y [4096]."""
    path = tmp_path_factory.mktemp("om") / "vadd.om"
    assemble(examples.vector_add(1 << 12, tile=1024)).save(path)
    return path


@pytest.fixture(scope="module")
def onnx_i64(tmp_path_factory):
    """y = x + x on int64[3]."""
    g = helper.make_graph(
        [helper.make_node("Add", ["x", "x"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.INT64, [3])],
        [helper.make_tensor_value_info("y", TensorProto.INT64, [3])],
    )
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path_factory.mktemp("onnx") / "add64.onnx"
    onnx.save(model, path)
    return path


def _one_error(capsys, code: int, prog: str = "ge-run") -> str:
    """The run exited 1 with exactly one stderr line, a user error."""
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert code == 1, err
    assert len(lines) == 1, err
    assert "internal error" not in err and "Traceback" not in err
    assert lines[0].startswith(f"{prog}: error: "), err
    return lines[0]


def _x16(n: int = 4096):
    rng = np.random.default_rng(0)
    return {k: rng.standard_normal(n).astype(np.float16) for k in ("x", "y")}


# ---------------------------------------------------------------------------
# Output paths
# ---------------------------------------------------------------------------


def test_ge_run_refuses_an_unwritable_output_before_running(om, tmp_path, capsys):
    (tmp_path / "file.txt").write_text("")
    (tmp_path / "dir.npz").mkdir()
    cases = [
        (tmp_path / "missing" / "out.npz", "no such directory"),
        (tmp_path / "file.txt" / "out.npz", "not a directory"),
        (tmp_path / "dir.npz", "it is a directory"),
        (tmp_path / "dir", "it is a directory"),  # np.savez would write dir.npz
    ]
    for out, message in cases:
        line = _one_error(capsys, ge_run.main([str(om), "--output", str(out)]))
        assert f"--output: cannot write '{out}" in line and message in line, line
    # nothing ran: the check comes first
    ge_run.main([str(om), "--output", str(tmp_path / "missing" / "o.npz")])
    assert capsys.readouterr().out == ""
    line = _one_error(capsys, ge_run.main([str(om), "--profile", str(tmp_path / "missing" / "t.json")]))
    assert "--profile: cannot write" in line


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_ge_run_refuses_a_read_only_directory_or_file(om, tmp_path, capsys):
    ro = tmp_path / "ro"
    ro.mkdir()
    (ro / "old.npz").write_text("")
    os.chmod(ro / "old.npz", 0o444)
    os.chmod(ro, 0o555)
    try:
        line = _one_error(capsys, ge_run.main([str(om), "--output", str(ro / "o.npz")]))
        assert "is not writable" in line
        line = _one_error(capsys, ge_run.main([str(om), "--output", str(ro / "old.npz")]))
        assert "the file is not writable" in line
    finally:
        os.chmod(ro, 0o755)


def test_ge_run_writes_the_output_where_asked(om, tmp_path, capsys):
    np.savez(tmp_path / "in.npz", **_x16())
    assert ge_run.main([str(om), "--inputs", str(tmp_path / "in.npz"), "--output", str(tmp_path / "o")]) == 0
    with np.load(tmp_path / "o.npz") as z:
        assert z["z"].shape == (4096,)


def test_ge_compile_refuses_an_unwritable_output(onnx_i64, tmp_path, capsys):
    (tmp_path / "d.om").mkdir()
    (tmp_path / "f").write_text("")
    for out, message in (
        (tmp_path / "d.om", "it is a directory"),
        (tmp_path / "f" / "x.om", "not a directory"),
        (tmp_path / "no" / "x.om", "no such directory"),
    ):
        line = _one_error(capsys, ge_compile.main([str(onnx_i64), "-o", str(out)]), "ge-compile")
        assert f"cannot write '{out}'" in line and message in line, line
        assert capsys.readouterr().out == ""


# ---------------------------------------------------------------------------
# Targets
# ---------------------------------------------------------------------------


def test_a_bad_target_name_is_one_line(om, onnx_i64, tmp_path, capsys):
    for argv in ([str(om)], [str(onnx_i64)]):
        line = _one_error(capsys, ge_run.main([*argv, "--target", "davinci-0"]))
        assert "unknown target 'davinci-0'" in line and "davinci-910" in line
    line = _one_error(capsys, ge_compile.main([str(onnx_i64), "-o", str(tmp_path / "x.om"), "--target", "davinci-0"]),
                      "ge-compile")
    assert "unknown target 'davinci-0'" in line


def _preset() -> dict:
    with open(load_target("davinci-910").path) as f:
        return json.load(f)


TARGET_EDITS = [
    (lambda d: d["capacity_bytes"].update(ub=-5), "capacity_bytes.ub must be a positive integer in [1, 2147483648], got -5"),
    (lambda d: d["capacity_bytes"].update(l1=1.5e6), "capacity_bytes.l1 must be a positive integer in [1, 2147483648], got 1500000.0"),
    (lambda d: d["capacity_bytes"].update(ub=1000), "capacity_bytes.ub must be a multiple of alignment_bytes.ub (32), got 1000"),
    (lambda d: d["cores"].update(cube=2.5), "cores.cube must be a positive integer in [1, 65535], got 2.5"),
    (lambda d: d["cores"].update(vector=0), "cores.vector must be a positive integer in [1, 65535], got 0"),
    (lambda d: d["cores"].update(coupled="yes"), "cores.coupled must be true or false, got 'yes'"),
    (lambda d: d.update(bogus=1), "unknown keys ['bogus'] (allowed keys: name, description"),
    (lambda d: d["latency_cycles"].update(dma_gmm=5), "latency_cycles: unknown keys ['dma_gmm'] (allowed keys: issue"),
    (lambda d: d["latency_cycles"].update(issue=-1), "latency_cycles.issue must be an integer in [0, 1000000000], got -1"),
    (lambda d: d["vector_cycles_per_repeat"].update(vexq=2), "vector_cycles_per_repeat: unknown keys ['vexq']"),
    (lambda d: d["dma_bytes_per_cycle"].update(gm_ub=0), "dma_bytes_per_cycle.gm_ub must be a positive number in (0, 1e+09], got 0"),
    (lambda d: d.update(clock_mhz="fast"), "clock_mhz must be a positive number in (0, 1e+06], got 'fast'"),
    (lambda d: d["aicpu"].update(cores=2.5), "aicpu.cores must be a positive integer in [1, 65535], got 2.5"),
    (lambda d: d["alignment_bytes"].update(ub=16), "alignment_bytes.ub must be a multiple of 32 (the ISA's alignment), got 16"),
    (lambda d: d.pop("capacity_bytes"), "missing key 'capacity_bytes'"),
]


@pytest.mark.parametrize("edit,message", TARGET_EDITS, ids=[m for _, m in TARGET_EDITS])
def test_a_bad_target_file_names_the_key_and_its_range(om, tmp_path, capsys, edit, message):
    data = _preset()
    edit(data)
    path = tmp_path / "my.json"
    path.write_text(json.dumps(data))
    line = _one_error(capsys, ge_run.main([str(om), "--target", str(path)]))
    assert line.startswith(f"ge-run: error: {path}: ") and message in line, line


def test_target_files_that_are_not_json_objects(om, tmp_path, capsys):
    for text, message in (("[1, 2]", "expected an object, got list"), ("{", "not valid JSON"),
                          ('{"clock_mhz": NaN}', "not valid JSON: NaN is not a JSON number")):
        path = tmp_path / "t.json"
        path.write_text(text)
        assert message in _one_error(capsys, ge_run.main([str(om), "--target", str(path)]))
    assert "is a directory" in _one_error(capsys, ge_run.main([str(om), "--target", str(tmp_path)]))


# ---------------------------------------------------------------------------
# npz inputs against the model
# ---------------------------------------------------------------------------


def _run_with(path, model, tmp_path, capsys, **arrays):
    npz = tmp_path / "in.npz"
    np.savez(npz, **arrays)
    return ge_run.main([str(model), "--inputs", str(npz), *path])


NPU_INPUTS = [
    (dict(x=np.ones(4096, np.complex64), y=np.ones(4096, np.float16)),
     "input 'x' is complex64[4096]: complex values are not accepted; the model wants float16[4096]"),
    (dict(x=np.array(["2024-01-01"] * 4096, dtype="datetime64[D]"), y=np.ones(4096, np.float16)),
     "input 'x' is datetime64[D][4096]: datetime values are not accepted"),
    (dict(x=np.full(4096, 2**64 - 1, np.uint64), y=np.ones(4096, np.float16)),
     "input 'x' is uint64[4096]: value 18446744073709551615 is not exact in float16"),
    (dict(x=np.full(4096, 1e6), y=np.ones(4096, np.float16)),
     "input 'x' is float64[4096]: value 1e+06 overflows float16"),
    (dict(x=np.ones(4095, np.float16), y=np.ones(4096, np.float16)),
     "input 'x' is float16[4095]: wrong shape; the model wants float16[4096]"),
    (dict(x=np.ones((64, 64), np.float16), y=np.ones(4096, np.float16)),
     "input 'x' is float16[64, 64]: wrong shape"),
    (dict(x=np.ones(4096, np.float16), y=np.ones(4096, np.float16), q=np.ones(3)),
     "--inputs: unknown input 'q' (the model takes x, y)"),
    (dict(x=np.ones(4096, np.float16)), "--inputs lacks input 'y' (it has x)"),
    (dict(x=np.array(["a"] * 4096), y=np.ones(4096, np.float16)), "string values are not accepted"),
    (dict(x=np.ones(4096, bool), y=np.ones(4096, np.float16)), "cannot convert bool to float16"),
]


@pytest.mark.parametrize("arrays,message", NPU_INPUTS, ids=[m for _, m in NPU_INPUTS])
def test_npz_inputs_of_an_offline_model_are_checked(om, tmp_path, capsys, arrays, message):
    line = _one_error(capsys, _run_with([], om, tmp_path, capsys, **arrays))
    assert message in line, line
    assert "mean=" not in capsys.readouterr().out  # it did not run


def test_compatible_npz_inputs_run(om, onnx_i64, tmp_path, capsys):
    x = _x16()
    # float64 -> float16 (rounded to nearest) and integers exact in float16
    assert _run_with([], om, tmp_path, capsys, x=x["x"].astype(np.float64), y=np.arange(4096) % 7) == 0
    # int32 -> int64, int64 and uint8 in range
    for dtype in (np.int32, np.int64, np.uint8):
        assert _run_with(["--backend", "reference"], onnx_i64, tmp_path, capsys, x=np.array([1, 2, 3], dtype)) == 0


GRAPH_INPUTS = [
    (dict(x=np.array([2**64 - 1, 0, 1], np.uint64)),
     "input 'x' is uint64[3]: value 18446744073709551615 is outside int64's range [-9223372036854775808, "
     "9223372036854775807]; the model wants int64[3]"),
    (dict(x=np.array([1.0, 2.0, 3.5])), "input 'x' is float64[3]: cannot convert float64 to int64 (not an integer type)"),
    (dict(x=np.array([1, 2, 3], np.complex128)), "complex values are not accepted"),
    (dict(x=np.array([1, 2], np.int64)), "input 'x' is int64[2]: wrong shape; the model wants int64[3]"),
    (dict(x=np.array([1, 2, 3]), bias=np.array([1])), "--inputs: unknown input 'bias' (the model takes x)"),
    (dict(x=np.array([np.timedelta64(1, "s")] * 3)), "timedelta values are not accepted"),
]


@pytest.mark.parametrize("backend", ["reference", "npu"])
@pytest.mark.parametrize("arrays,message", GRAPH_INPUTS, ids=[m[:40] for _, m in GRAPH_INPUTS])
def test_npz_inputs_of_a_graph_model_are_checked(onnx_i64, tmp_path, capsys, backend, arrays, message):
    line = _one_error(capsys, _run_with(["--backend", backend], onnx_i64, tmp_path, capsys, **arrays))
    assert message in line, line


def test_unreadable_npz_files_are_one_line(om, tmp_path, capsys):
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"PK\x03\x04 not really a zip")
    assert "cannot read inputs" in _one_error(capsys, ge_run.main([str(om), "--inputs", str(bad)]))
    np.save(tmp_path / "single.npy", np.ones(3))
    line = _one_error(capsys, ge_run.main([str(om), "--inputs", str(tmp_path / "single.npy")]))
    assert "a single .npy array, not an npz" in line
    np.savez(tmp_path / "obj.npz", x=np.array([object()], dtype=object))
    line = _one_error(capsys, ge_run.main([str(om), "--inputs", str(tmp_path / "obj.npz")]))
    assert "cannot read inputs" in line and "allow_pickle" in line
    line = _one_error(capsys, ge_run.main([str(om), "--inputs", str(tmp_path / "none.npz")]))
    assert "no such file" in line
    np.savez_compressed(tmp_path / "ok.npz", **_x16())
    raw = bytearray((tmp_path / "ok.npz").read_bytes())
    raw[len(raw) // 3] ^= 0xFF  # inside a deflate stream
    (tmp_path / "flip.npz").write_bytes(bytes(raw))
    assert "cannot read inputs" in _one_error(capsys, ge_run.main([str(om), "--inputs", str(tmp_path / "flip.npz")]))


# ---------------------------------------------------------------------------
# Offline-model files on the command line
# ---------------------------------------------------------------------------


def test_corrupted_offline_models_are_one_line(om, tmp_path, capsys):
    raw = om.read_bytes()
    cases = {
        "truncated.om": raw[: len(raw) // 2],
        "notzip.om": b"hello, not a zip",
        "empty.om": b"",
    }
    for name, data in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        line = _one_error(capsys, ge_run.main([str(path)]))
        assert f"{path}: cannot read offline model" in line, line
    from target.program import read_om, write_om

    header, arrays = read_om(om)
    header["schedule"][0][2] = 0  # block_dim 0, checksum recomputed
    write_om(tmp_path / "bad.om", header, arrays)
    line = _one_error(capsys, ge_run.main([str(tmp_path / "bad.om")]))
    assert "invalid offline model: schedule[0] (launch).block_dim: 0 is outside [1, 65535]" in line
    data = bytearray(raw)
    data[len(data) // 2] ^= 0x10
    (tmp_path / "flip.om").write_bytes(bytes(data))
    assert f"{tmp_path / 'flip.om'}: " in _one_error(capsys, ge_run.main([str(tmp_path / "flip.om")]))


def test_random_integer_inputs_are_zero_or_one(onnx_i64, tmp_path, capsys):
    """Random integers are 0 or 1: a valid attention mask (BERT's (1 - mask) *
    finfo.min is -inf at a mask of 2, its softmax NaN), token id or index."""
    out = tmp_path / "y.npz"
    assert ge_run.main([str(onnx_i64), "--backend", "reference", "--output", str(out), "--seed", "3"]) == 0
    assert set(np.load(out)["y"].tolist()) <= {0, 2}  # y = x + x


def test_check_warns_when_the_oracle_is_not_finite(tmp_path, capsys):
    """--check against an output onnxruntime computes as NaN / inf passes
    only where the values are equal: it says so instead of a bare match."""
    g = helper.make_graph(
        [helper.make_node("Log", ["x"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
    )
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path / "log.onnx"
    onnx.save(model, path)
    inputs = tmp_path / "x.npz"
    np.savez(inputs, x=np.array([1.0, 2.0, -1.0, 0.0], np.float32))
    assert ge_run.main([str(path), "--backend", "reference", "--inputs", str(inputs), "--check"]) == 0
    err = capsys.readouterr().err
    assert "onnxruntime's output 'y' is NaN or infinite in 2 of 4 values" in err, err
    np.savez(inputs, x=np.array([1.0, 2.0, 3.0, 4.0], np.float32))
    assert ge_run.main([str(path), "--backend", "reference", "--inputs", str(inputs), "--check"]) == 0
    assert "NaN or infinite" not in capsys.readouterr().err
