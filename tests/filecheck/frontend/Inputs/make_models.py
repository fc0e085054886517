"""Write the tiny ONNX models of the frontend tests into the directory argv[1].

Usage: make_models.py DIR [NAME...]   (all models when no NAME is given)

Every model is built with onnx.helper from fixed values, so the files (and
the IR the tests check) are the same on every run; each is well under 10 KB.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT


def _model(nodes, inputs, outputs, inits=(), opset=13, name="test"):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def _x(name, shape, elem=F):
    return helper.make_tensor_value_info(name, elem, shape)


def conv_relu():
    """conv1 (3x3, pads 1, weight blob + small bias) then relu1."""
    w = np.arange(4 * 3 * 3 * 3, dtype=np.float32).reshape(4, 3, 3, 3) / 100
    b = np.array([0.5, -0.5, 1.0, 0.0], dtype=np.float32)
    return _model(
        [
            helper.make_node("Conv", ["x", "W", "B"], ["c"], name="conv1", pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["c"], ["y"], name="relu1"),
        ],
        [_x("x", [1, 3, 8, 8])],
        [_x("y", [1, 4, 8, 8])],
        [numpy_helper.from_array(w, "W"), numpy_helper.from_array(b, "B")],
        name="conv_relu",
    )


def constant_of_shape():
    """Shape of a static tensor folds; ConstantOfShape becomes a graph.fill."""
    return _model(
        [
            helper.make_node("Shape", ["x"], ["s"], name="shape1"),
            helper.make_node(
                "ConstantOfShape", ["s"], ["f"], name="fill1",
                value=numpy_helper.from_array(np.array([1.5], dtype=np.float32)),
            ),
            helper.make_node("Add", ["x", "f"], ["y"], name="add1"),
        ],
        [_x("x", [2, 3])],
        [_x("y", [2, 3])],
    )


def softmax_opset9():
    """Before opset 13 Softmax coerces its input to 2-d around `axis`."""
    return _model(
        [helper.make_node("Softmax", ["x"], ["y"], name="softmax1", axis=1)],
        [_x("x", [1, 4, 2, 2])],
        [_x("y", [1, 4, 2, 2])],
        opset=9,
    )


def dynamic():
    """A symbolic batch dim and dynamic spatial dims."""
    return _model(
        [
            helper.make_node("Relu", ["x"], ["r"], name="relu1"),
            helper.make_node("GlobalAveragePool", ["r"], ["p"], name="pool1"),
            helper.make_node("Flatten", ["p"], ["y"], name="flatten1"),
        ],
        [_x("x", ["N", 3, "H", "W"])],
        [_x("y", ["N", 3])],
    )


def unknown_op():
    return _model(
        [helper.make_node("Det", ["x"], ["y"], name="det1")],
        [_x("x", [2, 2])],
        [_x("y", [])],
    )


def custom_domain():
    model = _model(
        [helper.make_node("FancyOp", ["x"], ["y"], name="fancy1", domain="com.example")],
        [_x("x", [2, 2])],
        [_x("y", [2, 2])],
    )
    model.opset_import.append(helper.make_opsetid("com.example", 1))
    return model


def reshape_dynamic():
    """Reshape whose target shape is a graph input, not a constant."""
    return _model(
        [helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape1")],
        [_x("x", [2, 6]), _x("shape", [2], TensorProto.INT64)],
        [_x("y", [3, 4])],
    )


def same_pad_dynamic():
    """auto_pad=SAME_UPPER needs the spatial dims, which are dynamic here."""
    w = numpy_helper.from_array(np.full((4, 3, 3, 3), 0.1, dtype=np.float32), "W")
    return _model(
        [helper.make_node("Conv", ["x", "W"], ["y"], name="conv_same", auto_pad="SAME_UPPER")],
        [_x("x", [1, 3, "H", "W"])],
        [_x("y", [1, 4, "H", "W"])],
        [w],
    )


def bad_shapes():
    """A MatMul whose contraction dims differ: the shape rule names the node."""
    return _model(
        [helper.make_node("MatMul", ["a", "b"], ["y"], name="matmul1")],
        [_x("a", [2, 3]), _x("b", [4, 5])],
        [_x("y", [2, 5])],
    )


def string_input():
    return _model(
        [helper.make_node("Identity", ["x"], ["y"], name="id1")],
        [_x("x", [2], TensorProto.STRING)],
        [_x("y", [2], TensorProto.STRING)],
    )


MODELS = {
    "conv_relu": conv_relu,
    "constant_of_shape": constant_of_shape,
    "softmax_opset9": softmax_opset9,
    "dynamic": dynamic,
    "unknown_op": unknown_op,
    "custom_domain": custom_domain,
    "reshape_dynamic": reshape_dynamic,
    "same_pad_dynamic": same_pad_dynamic,
    "bad_shapes": bad_shapes,
    "string_input": string_input,
}

# Not a protobuf at all (a truncated varint field), so parsing must fail.
CORRUPT = bytes([0x0A, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01]) + bytes(range(7, 40))


def save_models(models: dict, argv: list[str]) -> str:
    """Write models named by argv[2:] (all without names) into argv[1]; the directory."""
    out = argv[1]
    os.makedirs(out, exist_ok=True)
    for name in argv[2:] or models:
        onnx.save(models[name](), os.path.join(out, f"{name}.onnx"))
    return out


def main(argv: list[str]) -> None:
    out = save_models(MODELS, argv)
    with open(os.path.join(out, "corrupt.onnx"), "wb") as f:
        f.write(CORRUPT)
    # An empty file is a valid, empty ModelProto: a model without a graph.
    open(os.path.join(out, "empty.onnx"), "wb").close()


if __name__ == "__main__":
    main(sys.argv)
