"""Progress bars (gedialects/tools/progress.py): ge-run draws one for the
compile stages and one for the simulated launches on stderr when stderr is
a terminal, and nothing when it is not or under --log=error."""

from __future__ import annotations

import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from gedialects.tools import ge_compile, ge_run

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture
def model(tmp_path):
    w = np.random.default_rng(0).standard_normal((8, 3, 3, 3)).astype(np.float32)
    graph = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
                               helper.make_node("Relu", ["c"], ["y"])], "bars",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 8, 8])],
                              [numpy_helper.from_array(w, "w")])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    path = tmp_path / "m.onnx"
    onnx.save(m, str(path))
    return str(path)


def _stderr(capsys, argv, tty: bool, monkeypatch, tool=ge_run) -> str:
    capsys.readouterr()
    monkeypatch.setattr(sys.stderr, "isatty", lambda: tty)
    assert tool.main(argv) == 0
    return capsys.readouterr().err


def test_bars_on_a_terminal(model, capsys, monkeypatch):
    err = _stderr(capsys, [model], True, monkeypatch)
    assert "compile:" in err and "simulate:" in err and "%|" in err


def test_no_bars_in_a_pipe_or_under_log_error(model, capsys, monkeypatch, tmp_path):
    assert "%|" not in _stderr(capsys, [model], False, monkeypatch)
    assert "%|" not in _stderr(capsys, [model, "--log", "error"], True, monkeypatch)
    om = str(tmp_path / "m.om")
    assert "%|" not in _stderr(capsys, [model, "-o", om], False, monkeypatch, ge_compile)
    assert "compile:" in _stderr(capsys, [model, "-o", om], True, monkeypatch, ge_compile)
