"""Write the tiny ONNX models of the ops-B importer tests (padding,
normalisation, resampling, selection) into the directory argv[1].

Usage: make_ops_b_models.py DIR [NAME...]   (all models when no NAME is given)

Built with onnx.helper from fixed values, so the files (and the IR the tests
check) are the same on every run.
"""

from __future__ import annotations

from functools import partial
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

import make_models  # the shared helpers (same directory)

F = TensorProto.FLOAT
I64 = TensorProto.INT64


_model = partial(make_models._model, opset=19)
_x = make_models._x


def _c(name, values, dtype=np.int64):
    return numpy_helper.from_array(np.array(values, dtype=dtype), name)


def pad():
    """Pad's pads/value/axes inputs (opset 18) become properties; the opset-2
    form takes them as attributes; a negative pad crops."""
    return _model(
        [
            helper.make_node("Pad", ["x", "pads", "value", "axes"], ["p1"], name="pad_axes"),
            helper.make_node("Pad", ["p1", "crop"], ["y"], name="pad_reflect", mode="reflect"),
        ],
        [_x("x", ["N", 3, 4, 4])],
        [_x("y", ["N", 3, 6, 6])],
        [_c("pads", [1, 0, 1, 2]), _c("value", 0.5, np.float32), _c("axes", [-1, 2]), _c("crop", [0, 0, 1, -1, 0, 0, 0, 0])],
    )


def pad_opset2():
    return _model(
        [helper.make_node("Pad", ["x"], ["y"], name="pad_edge", mode="edge", pads=[0, 1, 0, 2])],
        [_x("x", [2, 3])],
        [_x("y", [2, 6])],
        opset=9,
    )


def norms():
    """GroupNormalization-18 scales per group: spread to channels at import."""
    return _model(
        [
            helper.make_node("InstanceNormalization", ["x", "c", "c"], ["i"], name="inorm", epsilon=1e-3),
            helper.make_node("GroupNormalization", ["i", "gs", "gb"], ["y"], name="gnorm", num_groups=2),
        ],
        [_x("x", [1, 4, 3, 3])],
        [_x("y", [1, 4, 3, 3])],
        [_c("c", [1, 2, 3, 4], np.float32), _c("gs", [0.5, 2.0], np.float32), _c("gb", [0.0, 1.0], np.float32)],
        opset=18,
    )


def resize():
    """Resize by scales keeps dynamic dims; by sizes (of some axes, opset 18)
    the scales are derived as onnxruntime derives them, and sizes are left
    out when floor(extent * scale) gives them."""
    return _model(
        [
            helper.make_node("Resize", ["x", "", "s2"], ["r1"], name="up2", mode="nearest"),
            helper.make_node(
                "Resize", ["r1", "", "", "sizes"], ["y"], name="to_sizes", mode="linear",
                coordinate_transformation_mode="align_corners", axes=[2, 3],
            ),
        ],
        [_x("x", ["N", 3, 4, 4])],
        [_x("y", ["N", 3, 7, 5])],
        [_c("s2", [1, 1, 2, 2], np.float32), _c("sizes", [7, 5], np.int64)],
    )


def resize_sizes():
    """7 x float32(31 / 7) is 30.999998: the sizes stay a property."""
    return _model(
        [helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], name="to31", mode="nearest", nearest_mode="floor")],
        [_x("x", [1, 3, 7, 7])],
        [_x("y", [1, 3, 31, 5])],
        [_c("sizes", [1, 3, 31, 5], np.int64)],
    )


def resize_opset10():
    return _model(
        [
            helper.make_node("Upsample", ["x", "s"], ["u"], name="upsample", mode="nearest"),
            helper.make_node("Resize", ["u", "d"], ["y"], name="down", mode="nearest"),
        ],
        [_x("x", [1, 1, 2, 2])],
        [_x("y", [1, 1, 2, 2])],
        [_c("s", [1, 1, 2, 2], np.float32), _c("d", [1, 1, 0.5, 0.5], np.float32)],
        opset=10,
    )


def selection():
    """Einsum keeps its equation (spaces dropped); TopK's k input becomes a
    property; a 0-d Gather index drops the axis (the BERT/ViT pooler)."""
    return _model(
        [
            helper.make_node("Einsum", ["a", "b"], ["e"], name="einsum1", equation="bij, bjk -> bik"),
            helper.make_node("TopK", ["e", "k"], ["v", "i"], name="topk1", largest=0),
            helper.make_node("ArgMax", ["e"], ["am"], name="argmax1", axis=1, keepdims=0, select_last_index=1),
            helper.make_node("GatherElements", ["e", "i"], ["ge"], name="ge1", axis=2),
            helper.make_node("ReduceL2", ["ge", "axes"], ["l2"], name="l2", keepdims=0),
            helper.make_node("ReduceProd", ["v"], ["rp"], name="prod1"),
            helper.make_node("Gather", ["e", "zero"], ["cls"], name="cls", axis=1),
        ],
        [_x("a", [2, 3, 4]), _x("b", [2, 4, 5])],
        [_x("v", [2, 3, 2]), _x("i", [2, 3, 2], I64), _x("am", [2, 5], I64), _x("l2", [2, 3]), _x("rp", [1, 1, 1]), _x("cls", [2, 5])],
        [_c("k", [2]), _c("axes", [-1]), _c("zero", 0)],
    )


def resize_cubic():
    return _model(
        [helper.make_node("Resize", ["x", "", "s"], ["y"], name="cubic1", mode="cubic", cubic_coeff_a=-0.5,
                          exclude_outside=1)],
        [_x("x", [1, 1, 4, 4])],
        [_x("y", [1, 1, 8, 8])],
        [_c("s", [1, 1, 2, 2], np.float32)],
    )


# --- models the importer refuses


def resize_antialias():
    return _model(
        [helper.make_node("Resize", ["x", "", "s"], ["y"], name="smooth1", mode="cubic", antialias=1)],
        [_x("x", [1, 1, 8, 8])],
        [_x("y", [1, 1, 4, 4])],
        [_c("s", [1, 1, 0.5, 0.5], np.float32)],
    )


def einsum_diagonal():
    return _model(
        [helper.make_node("Einsum", ["x"], ["y"], name="diag1", equation="...ii->...i")],
        [_x("x", [3, 5, 5])],
        [_x("y", [3, 5])],
        opset=12,
    )


def topk_dynamic_k():
    return _model(
        [helper.make_node("TopK", ["x", "k"], ["v", "i"], name="topk1")],
        [_x("x", [3, 5]), _x("k", [1], I64)],
        [_x("v", [3, "K"]), _x("i", [3, "K"], I64)],
    )


def upsample_mixed():
    return _model(
        [helper.make_node("Resize", ["x", "s"], ["y"], name="mixed1", mode="nearest")],
        [_x("x", [1, 1, 4, 4])],
        [_x("y", [1, 1, 8, 2])],
        [_c("s", [1, 1, 2, 0.5], np.float32)],
        opset=10,
    )


MODELS = {
    "pad": pad,
    "pad_opset2": pad_opset2,
    "norms": norms,
    "resize": resize,
    "resize_sizes": resize_sizes,
    "resize_opset10": resize_opset10,
    "selection": selection,
    "resize_cubic": resize_cubic,
    "resize_antialias": resize_antialias,
    "einsum_diagonal": einsum_diagonal,
    "topk_dynamic_k": topk_dynamic_k,
    "upsample_mixed": upsample_mixed,
}


if __name__ == "__main__":
    make_models.save_models(MODELS, sys.argv)
