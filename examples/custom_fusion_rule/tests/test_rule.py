"""Tests of the example plugin. They install nothing: the package's `src/` is
put on sys.path, and "installed" is simulated by a `.dist-info` directory
(METADATA + entry_points.txt) in a temporary directory on the path, which is
exactly what importlib.metadata reads for a real installation."""

from __future__ import annotations

import importlib.metadata as md
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

EXAMPLE = Path(__file__).resolve().parents[1]
SRC = EXAMPLE / "src"
sys.path.insert(0, str(SRC))

from ge_swish_rule import SwishFusionRule

from gedialects.frontend.onnx_import import import_model
from gedialects.graph import ops as g
from gedialects.graph.fusion import (
    OTHER_USERS,
    PLUGIN_GROUP,
    load_plugins,
    register_rule,
    registered_rules,
    unregister_rule,
)
from gedialects.graph.interpreter import run
from gedialects.graph.transforms.fuse import fuse
from gedialects.numerics import assert_close
from gedialects.zoo import onnxruntime_outputs

NAME = SwishFusionRule.name


def _swish_model(extra_sigmoid_user: bool = False) -> onnx.ModelProto:
    """conv → sigmoid → mul(conv, sigmoid); optionally the sigmoid is an output too."""
    rng = np.random.default_rng(0)
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
        helper.make_node("Sigmoid", ["c"], ["s"], name="sig"),
        helper.make_node("Mul", ["s", "c"], ["y"], name="mul"),
    ]
    outputs = ["y"] + (["s"] if extra_sigmoid_user else [])
    graph = helper.make_graph(
        nodes,
        "swish",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 4])],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs],
        [numpy_helper.from_array(rng.standard_normal((2, 3, 1, 1)).astype(np.float32), "w")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.fixture
def clean_registry():
    yield
    unregister_rule(NAME)


def test_rule_registered_by_api_fuses_and_keeps_numerics(clean_registry):
    register_rule(SwishFusionRule)
    model = _swish_model()
    module = import_model(model)
    feeds = {"x": np.random.default_rng(1).standard_normal((1, 3, 4, 4)).astype(np.float32)}
    result = fuse(module)
    module.verify()
    applied = [r for r in result.remarks if r.kind == "applied"]
    assert [(r.rule, r.absorbed) for r in applied] == [(NAME, ("sig", "mul"))]
    (fusion,) = [op for op in module.walk() if isinstance(op, g.FusionOp)]
    assert [op.name for op in fusion.body.block.ops] == ["graph.sigmoid", "graph.mul", "graph.yield"]
    ours = run(module, feeds)
    for key, want in onnxruntime_outputs(model, feeds).items():
        assert_close(ours[key], want, "must_keep_origin_dtype", err_msg=key)


def test_missed_when_the_sigmoid_is_used_elsewhere(clean_registry):
    register_rule(SwishFusionRule)
    result = fuse(import_model(_swish_model(extra_sigmoid_user=True)))
    swish = [r for r in result.remarks if r.rule == NAME]
    assert [(r.kind, r.reason) for r in swish] == [("missed", OTHER_USERS)]
    assert result.report()["graph_fusion"][NAME]["missed"] == {OTHER_USERS: 1}


def _fake_installation(tmp_path: Path) -> Path:
    """A site directory in which ge-swish-rule looks installed."""
    info = tmp_path / "ge_swish_rule-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: ge-swish-rule\nVersion: 0.1.0\n")
    entry_points = (EXAMPLE / "pyproject.toml").read_text().split(f'[project.entry-points."{PLUGIN_GROUP}"]')[1]
    name, _, value = next(x for x in entry_points.splitlines() if "=" in x).partition("=")
    (info / "entry_points.txt").write_text(f"[{PLUGIN_GROUP}]\n{name.strip()} = {value.strip().strip(chr(34))}\n")
    return tmp_path


def test_entry_point_is_found_through_importlib_metadata(tmp_path, monkeypatch, clean_registry):
    site = _fake_installation(tmp_path)
    monkeypatch.syspath_prepend(str(site))
    (ep,) = [e for e in md.entry_points(group=PLUGIN_GROUP) if e.name == "swish"]
    assert ep.value == "ge_swish_rule:SwishFusionRule"
    assert load_plugins() == [NAME]
    assert load_plugins() == []  # once per process
    assert NAME in [r.name for r in registered_rules()]


def test_ge_opt_uses_the_installed_plugin_and_its_switch(tmp_path):
    site = _fake_installation(tmp_path)
    model = tmp_path / "swish.onnx"
    onnx.save(_swish_model(), model)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), str(SRC), os.environ.get("PYTHONPATH", "")]))
    ge_opt = Path(sys.executable).parent / "ge-opt"
    out = subprocess.run(
        [str(ge_opt), str(model), "-p", "graph-fuse", "--log=info"], capture_output=True, text=True, env=env, check=False
    )
    assert out.returncode == 0, out.stderr
    assert f"applied {NAME} at loc(\"sig\"): absorbed [sig, mul]" in out.stderr
    assert "graph.fusion" in out.stdout
    switches = tmp_path / "switches.cfg"
    switches.write_text(f"{NAME}:off\n")
    out = subprocess.run(
        [str(ge_opt), str(model), "-p", "graph-fuse", "--log=info", f"--fusion-switch-file={switches}"],
        capture_output=True, text=True, env=env, check=False,
    )
    assert out.returncode == 0, out.stderr
    assert f"missed {NAME} at loc(\"sig\"): rule switched off" in out.stderr
