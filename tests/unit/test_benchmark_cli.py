"""The benchmarks' command lines: bad input is a usage error in one line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.mark.parametrize("script", ["roofline", "light_models_npu", "compile_time", "simulation_time",
                                    "compile_memory", "fusion_table", "program_digest"])
def test_a_benchmark_names_an_unknown_model_in_one_line(script):
    """A mistyped model name is a usage error naming it, not a traceback."""
    bench = BENCHMARKS / f"{script}.py"
    run = subprocess.run([sys.executable, str(bench), "alexnet"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 2
    assert "Traceback" not in run.stderr
    assert run.stderr.strip().splitlines()[-1].startswith(f"{script}.py: error: no ")
    assert "'alexnet'" in run.stderr and "bvlc_alexnet" in run.stderr
