"""Write the tiny ONNX models of onnx-import-ops-a.test (comparison, logic,
selection ops) into the directory argv[1].

Usage: make_ops_a_models.py DIR [NAME...]   (all models when no NAME is given)

Every model is built with onnx.helper from fixed values, so the files (and
the IR the test checks) are the same on every run.
"""

from __future__ import annotations

from functools import partial
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

import make_models  # the shared helpers (same directory)

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


_model = partial(make_models._model, opset=17)
_x = make_models._x


def _c(name, value):
    return numpy_helper.from_array(np.asarray(value), name)


def mask_select():
    """Comparison, logic and where on a dynamic batch: y = where(!(x < 0) & m, x, 0)."""
    return _model(
        [
            helper.make_node("Less", ["x", "zero"], ["neg"], name="less1"),
            helper.make_node("Not", ["neg"], ["pos"], name="not1"),
            helper.make_node("And", ["pos", "m"], ["keep"], name="and1"),
            helper.make_node("Where", ["keep", "x", "zero"], ["y"], name="where1"),
        ],
        [_x("x", ["N", 4]), _x("m", [4], B)],
        [_x("y", ["N", 4])],
        [_c("zero", np.float32(0))],
    )


def shape_inputs():
    """Expand/Tile/Trilu/CumSum take constant tensor inputs as properties."""
    return _model(
        [
            helper.make_node("Expand", ["x", "shape"], ["e"], name="expand1"),
            helper.make_node("Tile", ["e", "repeats"], ["t"], name="tile1"),
            helper.make_node("Trilu", ["t", "k"], ["l"], name="trilu1", upper=0),
            helper.make_node("CumSum", ["l", "axis"], ["y"], name="cumsum1", reverse=1),
        ],
        [_x("x", [3, 1], I64)],
        [_x("y", [2, 3, 8], I64)],
        [_c("shape", [2, 1, 4]), _c("repeats", [1, 1, 2]), _c("k", -1), _c("axis", np.int32(-1))],
    )


def range_dynamic():
    """Range to a graph input: a graph.range with a `?` length; Range of
    constants folds (here into a 3-element constant)."""
    return _model(
        [
            helper.make_node("Range", ["zero", "n", "one"], ["pos"], name="range1"),
            helper.make_node("Range", ["zero", "three", "one"], ["c"], name="range2"),
            helper.make_node("Mod", ["pos", "three"], ["y"], name="mod1"),
        ],
        [_x("n", [], I64)],
        [_x("y", ["L"], I64), _x("c", [3], I64)],
        [_c("zero", 0), _c("one", 1), _c("three", 3)],
    )


def tile_opset1():
    """Tile-1 repeats `tiles` times along one `axis`."""
    return _model(
        [helper.make_node("Tile", ["x", "tiles", "axis"], ["y"], name="tile1")],
        [_x("x", [2, 3])],
        [_x("y", [2, 6])],
        [_c("tiles", 2), _c("axis", 1)],
        opset=1,
    )


def mod_bad_fmod():
    return _model(
        [helper.make_node("Mod", ["x", "x"], ["y"], name="mod1", fmod=3)],
        [_x("x", [4], I64)],
        [_x("y", [4], I64)],
    )


def expand_dynamic():
    return _model(
        [helper.make_node("Expand", ["x", "s"], ["y"], name="expand1")],
        [_x("x", [1, 4]), _x("s", [2], I64)],
        [_x("y", None)],
    )


MODELS = {
    "mask_select": mask_select,
    "shape_inputs": shape_inputs,
    "range_dynamic": range_dynamic,
    "tile_opset1": tile_opset1,
    "mod_bad_fmod": mod_bad_fmod,
    "expand_dynamic": expand_dynamic,
}


if __name__ == "__main__":
    make_models.save_models(MODELS, sys.argv)
