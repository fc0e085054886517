"""ge-sweep: the grid, Ray and the process pool, resuming, failed cells as
rows, plots; a cell's cycles are those of `ge-run` on the same config."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

from gedialects.tools.ge_run import main as ge_run
from gedialects.tools.ge_sweep import main as ge_sweep
from target.config import CONFIG_DIR

ZOO = Path(__file__).resolve().parents[1] / "zoo" / "models"
MODELS = [str(ZOO / "resnet_hf.onnx"), str(ZOO / "tv_squeezenet1_1.onnx")]
UB_SIZES = [32768, 131072, 262144]


FP32 = {"precision_mode": ["must_keep_origin_dtype"]}


def _spec(tmp_path: Path, models=MODELS, overrides=None, options=FP32, name="spec.json") -> str:
    spec = {"models": models, "overrides": overrides or {"capacity_bytes.ub": UB_SIZES}}
    if options:
        spec["options"] = options
    path = tmp_path / name
    path.write_text(json.dumps(spec))
    return str(path)


def _rows(path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _ge_run_cycles(model: str, field: str, value: int, tmp_path: Path, capsys) -> int:
    """ge-run on a copy of the preset with one dotted field set by hand (not by ge-sweep)."""
    config = json.loads((CONFIG_DIR / "davinci-910.json").read_text())
    section, key = field.split(".")
    config[section][key] = value
    target = tmp_path / f"{section}-{key}-{value}.json"
    target.write_text(json.dumps(config))
    capsys.readouterr()
    assert ge_run([model, "--target", str(target), "--precision-mode", "must_keep_origin_dtype"]) == 0
    out = capsys.readouterr().out
    return int(re.search(r": (\d+) cycles", out).group(1))


def test_sweep_on_ray_matches_ge_run(tmp_path, capsys):
    pytest.importorskip("ray")
    out = tmp_path / "results.csv"
    # the GM -> L1 rate: what the convs' loads take (the UB no longer changes
    # these models' tilings: the kernels pick their tiles by cost, not by size)
    field, rates = "dma_bytes_per_cycle.gm_l1", [16, 32, 64]
    assert ge_sweep([_spec(tmp_path, overrides={field: rates}), "-o", str(out), "--executor", "ray", "--jobs", "2"]) == 0
    rows = _rows(out)
    assert len(rows) == 6 and {r["status"] for r in rows} == {"ok"}
    assert {r["check"] for r in rows} == {"ok"}
    for r in rows:
        model = next(m for m in MODELS if m.endswith(r["model"]))
        assert int(r["cycles"]) == _ge_run_cycles(model, field, int(r[field]), tmp_path, capsys), r["cell"]
    # the swept field changes what is measured
    assert len({r["cycles"] for r in rows if r["model"] == "resnet_hf.onnx"}) > 1


def test_resume_runs_only_missing_cells(tmp_path, capsys):
    spec = _spec(tmp_path, models=MODELS[:1], overrides={"capacity_bytes.ub": UB_SIZES[:2]})
    out = tmp_path / "r.csv"
    assert ge_sweep([spec, "-o", str(out), "--executor", "processes", "--jobs", "2"]) == 0
    full = _rows(out)
    lines = out.read_text().splitlines()
    out.write_text("\n".join(lines[:-1]) + "\n")  # as if interrupted before the last cell
    capsys.readouterr()
    assert ge_sweep([spec, "-o", str(out), "--executor", "serial"]) == 0
    assert "2 cells, 1 already in" in capsys.readouterr().out
    again = _rows(out)
    assert sorted(r["cell"] for r in again) == sorted(r["cell"] for r in full)
    assert {r["cell"]: r["cycles"] for r in again} == {r["cell"]: r["cycles"] for r in full}


def test_failed_cells_are_rows_with_a_reason(tmp_path, capsys):
    bad = tmp_path / "broken.onnx"
    bad.write_bytes(b"not a model")
    spec = _spec(tmp_path, models=[str(bad), MODELS[0]], overrides={"capacity_bytes.ub": [0, 262144]})
    out = tmp_path / "f.csv"
    assert ge_sweep([spec, "-o", str(out), "--executor", "serial"]) == 0
    rows = {(r["model"], r["capacity_bytes.ub"]): r for r in _rows(out)}
    assert len(rows) == 4
    assert rows[("resnet_hf.onnx", "262144")]["status"] == "ok"
    assert rows[("broken.onnx", "262144")]["status"] == "refused"
    assert "not a valid ONNX model" in rows[("broken.onnx", "262144")]["reason"]
    ub0 = rows[("resnet_hf.onnx", "0")]
    assert ub0["status"] == "refused" and "ub" in ub0["reason"] and "\n" not in ub0["reason"]
    assert "refused" in capsys.readouterr().err
    # --retry-failed runs those again (still failing), the ok row stays
    assert ge_sweep([spec, "-o", str(out), "--executor", "serial", "--retry-failed"]) == 0
    assert len(_rows(out)) == 4


@pytest.mark.parametrize("spec, message", [
    ({"models": []}, "'models' must list at least one model"),
    ({"models": ["squeezenet"], "colour": 1}, "unknown key(s) colour"),
    ({"models": ["squeezenet"], "options": {"max_stream": [1]}}, "unknown option 'max_stream'"),
    ({"models": ["squeezenet"], "options": {"fuse": ["yes"]}}, "option 'fuse' takes bool values"),
    ({"models": ["squeezenet"], "options": {"max_streams": [True]}}, "option 'max_streams' takes non-negative int"),
    ({"models": ["squeezenet"], "options": {"device_memory_limit": [-1]}}, "option 'device_memory_limit' takes non-negative int"),
    ({"models": ["no_such_model"]}, "no_such_model: no such file or directory"),
])
def test_spec_errors_are_one_line(tmp_path, capsys, spec, message):
    path = tmp_path / "s.json"
    path.write_text(json.dumps(spec))
    assert ge_sweep([str(path), "-o", str(tmp_path / "x.csv")]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("ge-sweep: error:") and message in err and len(err.splitlines()) == 1


def test_override_of_a_missing_field_is_a_refused_row(tmp_path):
    spec = _spec(tmp_path, models=MODELS[:1], overrides={"capacity_bytes.l2": [1024]})
    out = tmp_path / "o.csv"
    assert ge_sweep([spec, "-o", str(out), "--executor", "serial"]) == 0
    (row,) = _rows(out)
    assert row["status"] == "refused" and "no field 'capacity_bytes.l2'" in row["reason"]


def test_toml_spec_options_and_plots(tmp_path):
    pytest.importorskip("matplotlib")
    spec = tmp_path / "s.toml"
    spec.write_text(
        f'models = ["{MODELS[0]}"]\ncheck = false\n'
        '[options]\nprecision_mode = ["force_fp16", "must_keep_origin_dtype"]\n'
    )
    out = tmp_path / "t.csv"
    assert ge_sweep([str(spec), "-o", str(out), "--executor", "serial", "--plot", str(tmp_path / "plots")]) == 0
    rows = _rows(out)
    assert [r["precision_mode"] for r in rows] == ["force_fp16", "must_keep_origin_dtype"]
    assert {r["check"] for r in rows} == {"n/a"}
    assert (tmp_path / "plots" / "cycles-vs-precision_mode.png").stat().st_size > 1000


def test_streams_and_memory_limit_options(tmp_path):
    """The streams and the device-memory limit are options like the others;
    a limit the compiler cannot meet is a refused row naming the task."""
    spec = _spec(tmp_path, models=MODELS[:1], overrides={"capacity_bytes.ub": [262144]},
                 options={**FP32, "max_streams": [1], "device_memory_limit": [0, 4096]})
    out = tmp_path / "m.csv"
    assert ge_sweep([spec, "-o", str(out), "--executor", "serial"]) == 0
    rows = {r["device_memory_limit"]: r for r in _rows(out)}
    assert rows["0"]["status"] == "ok" and rows["0"]["max_streams"] == "1" and int(rows["0"]["cycles"]) > 0
    assert rows["4096"]["status"] == "refused"
    assert "device-memory-limit=4096 cannot be met" in rows["4096"]["reason"]
