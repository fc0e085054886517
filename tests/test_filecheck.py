"""Runs the lit + FileCheck suite (tests/filecheck) as part of pytest, so one
command runs every test. Each lit test is its own pytest case."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent / "filecheck"
SUFFIXES = (".mlir", ".test")


def _lit_tests() -> list[str]:
    found = []
    for path in sorted(ROOT.rglob("*")):
        rel = path.relative_to(ROOT)
        if path.suffix in SUFFIXES and not {"Inputs", "Output"} & set(rel.parts):
            found.append(str(rel))
    return found


@pytest.fixture(scope="session")
def lit_results(tmp_path_factory) -> dict[str, tuple[str, str]]:
    """Run lit once over the whole suite (in parallel); result and output per test."""
    report = tmp_path_factory.mktemp("lit") / "report.json"
    cmd = [str(Path(sys.executable).parent / "lit"), "-q", "-j", str(os.cpu_count() or 2), f"--output={report}", str(ROOT)]
    subprocess.run(cmd, capture_output=True, text=True)
    import json

    data = json.loads(report.read_text())
    results = {}
    for t in data["tests"]:
        name = t["name"].split(" :: ", 1)[1]
        results[name] = (t["code"], t.get("output", ""))
    return results


@pytest.mark.parametrize("test", _lit_tests())
def test_lit(test, lit_results):
    code, output = lit_results.get(test, ("MISSING", "lit did not report this test"))
    if code == "UNSUPPORTED":
        pytest.skip(output or "unsupported")
    assert code in ("PASS", "XFAIL"), f"{test}: {code}\n{output}"
