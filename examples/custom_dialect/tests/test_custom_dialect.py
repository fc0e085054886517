"""The example plugin end to end, each step in a fresh process that sees the
package as installed (a `.dist-info` with its entry points on PYTHONPATH, as
importlib.metadata reads a real installation), so nothing leaks into the
other tests: its dialect parses and prints in ge-opt, its fusion rule makes
the op, the partition puts it on the AI core as a vector kernel, the
structured kernel holds its scalar body, and the simulated NPU matches
onnxruntime in both precision modes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import re
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

EXAMPLE = Path(__file__).resolve().parents[1]
SRC = EXAMPLE / "src"
BIN = Path(sys.executable).parent


def _installed(tmp_path: Path) -> dict:
    """An environment in which the example package looks installed."""
    info = tmp_path / "ge_scaled_silu-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: ge-scaled-silu\nVersion: 0.1.0\n")
    # the [project.entry-points."group"] tables of pyproject.toml (tomllib is 3.11+)
    text, group = "", None
    for line in (EXAMPLE / "pyproject.toml").read_text().splitlines():
        header = re.fullmatch(r'\[project\.entry-points\."([^"]+)"\]', line.strip())
        if header or line.startswith("["):
            group = header.group(1) if header else None
            text += f"[{group}]\n" if group else ""
        elif group and "=" in line:
            key, _, value = line.partition("=")
            text += f"{key.strip()} = {value.strip().strip(chr(34))}\n"
    (info / "entry_points.txt").write_text(text)
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(SRC), os.environ.get("PYTHONPATH", "")]))


def _model(path: Path, beta: float) -> Path:
    """gelu-like: y = x * sigmoid(beta * x) on [2, 16, 64] (beta = 1: SiLU)."""
    nodes = [helper.make_node("Mul", ["x", "beta"], ["bx"], name="scale"),
             helper.make_node("Sigmoid", ["bx"], ["s"], name="sig"),
             helper.make_node("Mul", ["x", "s"], ["y"], name="mul")]
    graph = helper.make_graph(
        nodes, "scaled_silu", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 16, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 16, 64])],
        [helper.make_tensor("beta", TensorProto.FLOAT, [], [beta])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


def _run(args, env, stdin=None):
    out = subprocess.run(args, capture_output=True, text=True, env=env, input=stdin, check=False)
    assert out.returncode == 0, out.stderr
    return out


def test_dialect_round_trips_in_ge_opt(tmp_path):
    env = _installed(tmp_path)
    text = ('func.func @f(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {\n'
            '  %y = act.scaled_silu %x {beta = 1.702000e+00 : f32} : (tensor<4x8xf32>) -> tensor<4x8xf32>\n'
            '  func.return %y : tensor<4x8xf32>\n}\n')
    out = _run([str(BIN / "ge-opt")], env, stdin=text)
    assert "act.scaled_silu %x {beta = 1.702000e+00 : f32} : (tensor<4x8xf32>) -> tensor<4x8xf32>" in out.stdout


def test_fusion_rule_partition_and_structured_kernel(tmp_path):
    env = _installed(tmp_path)
    model = _model(tmp_path / "m.onnx", 1.702)
    fused = _run([str(BIN / "ge-opt"), str(model), "-p", "graph-fuse", "--log=info"], env)
    assert 'applied ScaledSiluFusionPass at loc("sig"): absorbed [scale, sig, mul]' in fused.stderr
    assert "act.scaled_silu" in fused.stdout and "graph.sigmoid" not in fused.stdout
    checks = tmp_path / "checks.txt"
    checks.write_text(
        "CHECK: tile.kernel \"k0_vector\" attributes {kind = \"vector\", source = \"act.scaled_silu\n"
        "CHECK: tile.map\n"
        "CHECK: arith.constant 1.702\n"
        "CHECK: math.exp\n"
        "CHECK: tile.store\n"
        "CHECK-NOT: tile.aicpu\n"
    )
    tile = _run([str(BIN / "ge-opt"), str(model), "-p",
                 "graph-fuse,graph-partition{precision_mode=must_keep_origin_dtype},assign-layouts,"
                 "convert-graph-to-tile{precision_mode=must_keep_origin_dtype}"], env)
    _run([str(BIN / "filecheck"), str(checks)], env, stdin=tile.stdout)


SCRIPT = """
import json, sys
import numpy as np, onnx
from gedialects.frontend.onnx_import import import_model
from gedialects.numerics import CRITERIA
from gedialects.zoo import onnxruntime_outputs
from lowering.pipeline import compile_module, run_compiled
model = onnx.load(sys.argv[1])
x = (np.random.default_rng(0).standard_normal((2, 16, 64)) * 3).astype(np.float32)
want = onnxruntime_outputs(model, {"x": x})["y"]
out = {}
for mode in ("force_fp16", "must_keep_origin_dtype"):
    c = compile_module(import_model(model), mode)
    got = np.asarray(run_compiled(c, {"x": x}).outputs["y"]).reshape(want.shape)
    out[mode] = {"kinds": c.kernel_kinds, "ok": bool(CRITERIA[mode].check(got, want)),
                 "err": float(np.abs(got - want).max()), "spread": float(want.std())}
print(json.dumps(out))
"""


@pytest.mark.parametrize("beta", [1.0, 1.702])
def test_runs_on_the_simulated_ai_core_and_matches_onnxruntime(tmp_path, beta):
    env = _installed(tmp_path)
    model = _model(tmp_path / "m.onnx", beta)
    result = json.loads(_run([sys.executable, "-c", SCRIPT, str(model)], env).stdout)
    for mode, r in result.items():
        assert r["ok"], (mode, r)
        assert r["spread"] > 0.1  # a meaningful output
        assert "aicpu" not in r["kinds"] and r["kinds"].get("vector") == 1, (mode, r)
