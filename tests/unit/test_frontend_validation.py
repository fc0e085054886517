"""Hostile ONNX input is refused at its root (issue #12): one line naming the
file, the node (op type, opset) or tensor, the attribute and what is wrong,
exit 1 through the command line; never an internal error, a MemoryError or
a hang. One test per class of the mutation campaign; each checks the
FrontendError of `import_model` and the `ge-opt` run on the saved file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper, numpy_helper

from gedialects.frontend import validate
from gedialects.frontend.errors import FrontendError
from gedialects.frontend.onnx_import import import_model, load_model, parse_input_shapes
from gedialects.tools import ge_opt, ge_run

X = helper.make_tensor_value_info("x", T.FLOAT, [1, 3, 8, 8])
Y = helper.make_tensor_value_info("y", T.FLOAT, None)
W = numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32), "w")


def _model(nodes, inputs=(X,), outputs=(Y,), inits=(), opset=13, ir_version=8) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", list(inputs), list(outputs), list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = ir_version
    return model


def _i64(*values) -> np.ndarray:
    return np.array(values, np.int64)


def _const(name: str, array) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(array), name)


def refused(model: onnx.ModelProto, tmp_path: Path, capsys, *fragments: str, input_shape: str = "", named: bool = True) -> str:
    """The model is refused with one FrontendError line holding `fragments`,
    by the API and by ge-opt (exit 1, one stderr line, no internal error)."""
    path = tmp_path / "hostile.onnx"
    path.write_bytes(model.SerializeToString())
    with pytest.raises(FrontendError) as info:
        import_model(load_model(str(path)), parse_input_shapes(input_shape), source=str(path))
    message = str(info.value)
    assert "\n" not in message, message
    assert message.startswith(f"{path}: ") or not named, message
    for fragment in fragments:
        assert fragment in message, (fragment, message)
    argv = [str(path)] + (["--input-shape", input_shape] if input_shape else [])
    capsys.readouterr()
    assert ge_opt.main(argv) == 1
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert out == "" and len(lines) == 1, err
    assert lines[0] == f"ge-opt: error: {message}", (lines[0], message)
    assert "internal error" not in err and "Traceback" not in err
    return message


# ---------------------------------------------------------------- attributes


def test_attribute_of_the_wrong_type(tmp_path, capsys):
    conv = helper.make_node("Conv", ["x", "w"], ["y"], name="conv1", strides=[1.0, 1.0])
    refused(_model([conv], inits=[W]), tmp_path, capsys,
            "node 'conv1' (Conv, opset 13): attribute 'strides' must be ints, got floats")


def test_attribute_without_a_type(tmp_path, capsys):
    node = helper.make_node("LeakyRelu", ["x"], ["y"], name="lr", alpha=0.5)
    node.attribute[0].type = onnx.AttributeProto.UNDEFINED
    refused(_model([node]), tmp_path, capsys, "node 'lr' (LeakyRelu, opset 13): attribute 'alpha' has no valid type")


def test_missing_required_attribute(tmp_path, capsys):
    pool = helper.make_node("MaxPool", ["x"], ["y"], name="pool1")  # no kernel_shape
    refused(_model([pool]), tmp_path, capsys, "node 'pool1' (MaxPool, opset 13): required attribute 'kernel_shape' is missing")


def test_attribute_unknown_to_the_schema(tmp_path, capsys):
    relu = helper.make_node("Relu", ["x"], ["y"], name="relu1", alpha=2.0)
    refused(_model([relu]), tmp_path, capsys, "node 'relu1' (Relu, opset 13): attribute 'alpha' is not an attribute of Relu")


def test_attribute_given_twice(tmp_path, capsys):
    node = helper.make_node("LeakyRelu", ["x"], ["y"], name="lr", alpha=0.5)
    node.attribute.append(helper.make_attribute("alpha", 0.25))
    refused(_model([node]), tmp_path, capsys, "node 'lr' (LeakyRelu, opset 13): attribute 'alpha' is given twice")


# ---------------------------------------------------------- opsets, versions


@pytest.mark.parametrize(
    "opset, ir_version, fragment",
    [
        (99, 8, "opset 99 of the default ONNX domain is not supported (expected 1 to"),
        (0, 8, "opset 0 of the default ONNX domain is not supported"),
        (13, 0, "IR version 0 is not supported (expected 3 to"),
        (13, 1 << 40, f"IR version {1 << 40} is not supported"),
    ],
)
def test_unknown_opset_or_ir_version(tmp_path, capsys, opset, ir_version, fragment):
    relu = helper.make_node("Relu", ["x"], ["y"], name="relu1")
    refused(_model([relu], opset=opset, ir_version=ir_version), tmp_path, capsys, fragment)


def test_no_default_opset(tmp_path, capsys):
    model = _model([helper.make_node("Relu", ["x"], ["y"], name="relu1")])
    del model.opset_import[:]
    refused(model, tmp_path, capsys, "imports no opset of the default ONNX domain")


def test_operator_newer_than_the_opset(tmp_path, capsys):
    gelu = helper.make_node("Gelu", ["x"], ["y"], name="gelu1")  # Gelu exists from opset 20
    refused(_model([gelu]), tmp_path, capsys, "node 'gelu1' (Gelu, opset 13): operator Gelu does not exist in opset 13")


# ------------------------------------------------------------ node arities


def test_extra_node_input(tmp_path, capsys):
    relu = helper.make_node("Relu", ["x", "x"], ["y"], name="relu1")
    refused(_model([relu]), tmp_path, capsys, "node 'relu1' (Relu, opset 13): takes 1 input, got 2")


def test_missing_node_input(tmp_path, capsys):
    add = helper.make_node("Add", ["x"], ["y"], name="add1")
    refused(_model([add]), tmp_path, capsys, "node 'add1' (Add, opset 13): takes 2 inputs, got 1")


def test_empty_required_input(tmp_path, capsys):
    conv = helper.make_node("Conv", ["x", ""], ["y"], name="conv1")
    refused(_model([conv]), tmp_path, capsys, "node 'conv1' (Conv, opset 13): input 1 ('W') is required but its name is empty")


def test_undefined_node_input(tmp_path, capsys):
    add = helper.make_node("Add", ["x", "nowhere"], ["y"], name="add1")
    refused(_model([add]), tmp_path, capsys, "node 'add1' (Add, opset 13): input 1 'nowhere' is not defined")


def test_extra_node_output(tmp_path, capsys):
    relu = helper.make_node("Relu", ["x"], ["y", "z"], name="relu1")
    refused(_model([relu]), tmp_path, capsys, "node 'relu1' (Relu, opset 13): takes 1 output, got 2")


# ------------------------------------------------------------------ values


def test_duplicate_graph_outputs(tmp_path, capsys):
    relu = helper.make_node("Relu", ["x"], ["y"], name="relu1")
    refused(_model([relu], outputs=[Y, Y]), tmp_path, capsys, "graph output 'y' is listed twice")


def test_value_defined_twice(tmp_path, capsys):
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu1"), helper.make_node("Neg", ["x"], ["y"], name="neg1")]
    refused(_model(nodes), tmp_path, capsys,
            "value 'y' is defined twice: by node 'relu1' (Relu) and as an output of node 'neg1' (Neg)")


def test_node_output_redefines_a_graph_input(tmp_path, capsys):
    nodes = [helper.make_node("Relu", ["x"], ["x"], name="relu1"), helper.make_node("Neg", ["x"], ["y"], name="neg1")]
    refused(_model(nodes), tmp_path, capsys, "value 'x' is defined twice: by a graph input and as an output of node 'relu1'")


def test_undefined_graph_output(tmp_path, capsys):
    relu = helper.make_node("Relu", ["x"], ["y"], name="relu1")
    z = helper.make_tensor_value_info("z", T.FLOAT, None)
    refused(_model([relu], outputs=[z]), tmp_path, capsys, "graph output 'z' is not defined")


# -------------------------------------------------------------- initializers


def test_raw_data_of_the_wrong_length(tmp_path, capsys):
    w = numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32), "w")
    w.raw_data = w.raw_data[:107 * 4]  # 107 floats for 108 elements
    conv = helper.make_node("Conv", ["x", "w"], ["y"], name="conv1")
    refused(_model([conv], inits=[w]), tmp_path, capsys,
            "initializer 'w' (FLOAT 4x3x3x3, 108 elements) has 428 bytes of raw_data, expected 432")


def test_typed_data_of_the_wrong_count(tmp_path, capsys):
    w = helper.make_tensor("w", T.FLOAT, [4, 3, 3, 3], [1.0] * 108)
    del w.float_data[-1]
    conv = helper.make_node("Conv", ["x", "w"], ["y"], name="conv1")
    refused(_model([conv], inits=[w]), tmp_path, capsys,
            "initializer 'w' (FLOAT 4x3x3x3, 108 elements) has 107 entries in float_data, expected 108")


def test_constant_attribute_tensor_is_checked_too(tmp_path, capsys):
    value = numpy_helper.from_array(np.ones((2, 2), np.float32))
    value.raw_data = b"\0" * 3
    nodes = [helper.make_node("Constant", [], ["c"], name="c1", value=value), helper.make_node("Add", ["x", "c"], ["y"])]
    refused(_model(nodes), tmp_path, capsys,
            "node 'c1' (Constant, opset 13): tensor of attribute 'value' (FLOAT 2x2, 4 elements) has 3 bytes of raw_data")


def test_data_sizes_match_onnx_for_every_element_type():
    # the expected sizes are exact: what onnx itself writes validates
    for dtype in T.DataType.values():
        if dtype in (T.UNDEFINED, T.STRING):
            continue
        try:
            np_type = helper.tensor_dtype_to_np_dtype(dtype)
        except (KeyError, ValueError):
            continue
        for n in (0, 1, 5, 7):
            array = np.zeros((n,), dtype=np_type)
            validate._Validator("t").tensor(numpy_helper.from_array(array, "t"), "t")  # raw_data
            typed = helper.make_tensor("t", dtype, [n], array.tolist() if dtype not in (T.COMPLEX64, T.COMPLEX128) else [0j] * n)
            if not typed.HasField("raw_data"):
                validate._Validator("t").tensor(typed, "t")


def test_external_data_is_refused_without_reading(tmp_path, capsys, monkeypatch):
    w = numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32), "w")
    (tmp_path / "weights.bin").write_bytes(w.raw_data)  # a valid file: still never read
    w.ClearField("raw_data")
    w.data_location = T.EXTERNAL
    w.external_data.add(key="location", value="weights.bin")
    conv = helper.make_node("Conv", ["x", "w"], ["y"], name="conv1")
    model = _model([conv], inits=[w])
    opened: list[str] = []
    real_open = open

    def spy(file, *args, **kwargs):
        opened.append(str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr("builtins.open", spy)
    refused(model, tmp_path, capsys,
            "initializer 'w' keeps its data in an external file ('weights.bin'); external data is not supported")
    assert not any(p.endswith("weights.bin") for p in opened)


# ------------------------------------------------------------------ shapes


def test_negative_input_shape_dims(tmp_path, capsys):
    relu = helper.make_node("Relu", ["x"], ["y"], name="relu1")
    dyn = helper.make_tensor_value_info("x", T.FLOAT, ["n", 3, 8, 8])
    message = refused(_model([relu], inputs=[dyn]), tmp_path, capsys,
                      "--input-shape: dim 0 of 'x' is -5; a dim is >= 0, or -1 to keep it dynamic",
                      input_shape="x:-5,3,8,8", named=False)
    assert parse_input_shapes("x:-1,3,8,8") == {"x": [-1, 3, 8, 8]}
    assert "x" in message


def test_huge_input_shape(tmp_path, capsys):
    relu = helper.make_node("Relu", ["x"], ["y"], name="relu1")
    dyn = helper.make_tensor_value_info("x", T.FLOAT, ["n", 3, 8, 8])
    with pytest.raises(FrontendError, match=r"input 'x' of 100000000x3x8x8 = 19200000000 elements exceeds the limit"):
        parse_input_shapes("x:100000000,3,8,8")
    path = tmp_path / "m.onnx"
    path.write_bytes(_model([relu], inputs=[dyn]).SerializeToString())
    assert ge_run.main([str(path), "--input-shape", "x:100000000,3,8,8", "--backend", "reference"]) == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "ge-run: error: --input-shape: input 'x'" in err
    assert "internal error" not in err


def test_huge_graph_input(tmp_path, capsys):
    relu = helper.make_node("Relu", ["x"], ["y"], name="relu1")
    big = helper.make_tensor_value_info("x", T.FLOAT, [1 << 20, 1 << 20])
    refused(_model([relu], inputs=[big]), tmp_path, capsys,
            "input 'x' of 1048576x1048576 = 1099511627776 elements exceeds the limit of")


def test_huge_constant_of_shape(tmp_path, capsys):
    node = helper.make_node("ConstantOfShape", ["s"], ["y"], name="cos1")
    refused(_model([node], inits=[_const("s", _i64(1 << 20, 1 << 20))]), tmp_path, capsys,
            "tensor 'y' of 1048576x1048576 = 1099511627776 elements exceeds the limit",
            "(node 'cos1', ConstantOfShape, opset 13)")


def test_huge_expand(tmp_path, capsys):
    nodes = [helper.make_node("Expand", ["one", "s"], ["e"], name="ex1"), helper.make_node("Add", ["x", "e"], ["y"])]
    inits = [_const("one", np.ones((1,), np.float32)), _const("s", _i64(1 << 12, 3, 1 << 12, 1 << 12))]
    refused(_model(nodes, inits=inits), tmp_path, capsys,
            "tensor 'e' of 4096x3x4096x4096 = 206158430208 elements exceeds the limit", "(node 'ex1', Expand, opset 13)")


def test_huge_tile(tmp_path, capsys):
    node = helper.make_node("Tile", ["x", "r"], ["y"], name="tile1")
    refused(_model([node], inits=[_const("r", _i64(1 << 10, 1, 1 << 10, 1 << 10))]), tmp_path, capsys,
            "tensor 'y' of 1024x3x8192x8192 = 206158430208 elements exceeds the limit", "(node 'tile1', Tile, opset 13)")


def test_huge_range(tmp_path, capsys):
    nodes = [helper.make_node("Range", ["a", "b", "c"], ["r"], name="range1"), helper.make_node("Cast", ["r"], ["y"], to=T.FLOAT)]
    inits = [_const("a", np.array(0, np.int64)), _const("b", np.array(1 << 40, np.int64)), _const("c", np.array(1, np.int64))]
    refused(_model(nodes, inits=inits), tmp_path, capsys,
            "tensor 'r' of 1099511627776 elements exceeds the limit", "(node 'range1', Range, opset 13)")


def test_huge_range_of_a_tiny_float_step(tmp_path, capsys):
    nodes = [helper.make_node("Range", ["a", "b", "c"], ["y"], name="range1")]
    inits = [_const("a", np.array(0, np.float32)), _const("b", np.array(1, np.float32)), _const("c", np.array(1e-30, np.float32))]
    refused(_model(nodes, inits=inits), tmp_path, capsys, "tensor 'y' of", "exceeds the limit", "(node 'range1', Range")


def test_huge_fold_without_a_graph_op_is_refused_before_evaluation(tmp_path, capsys):
    # OneHot has no graph op: onnx's reference would allocate 2**30 floats
    nodes = [helper.make_node("OneHot", ["i", "d", "v"], ["o"], name="onehot1"), helper.make_node("Add", ["x", "o"], ["y"])]
    inits = [_const("i", _i64(1)), _const("d", np.array(1 << 30, np.int64)), _const("v", np.array([0, 1], np.float32))]
    refused(_model(nodes, inits=inits), tmp_path, capsys,
            "constant result 'o' of 1x1073741824 = 1073741824 elements exceeds the limit", "(node 'onehot1', OneHot, opset 13)")


def test_the_limit_is_one_setting(monkeypatch):
    monkeypatch.setattr(validate, "MAX_TENSOR_ELEMENTS", 10)
    with pytest.raises(FrontendError, match="input 'x' of 4x4 = 16 elements exceeds the limit of 10"):
        parse_input_shapes("x:4,4")
    node = helper.make_node("ConstantOfShape", ["s"], ["y"], name="cos1")
    with pytest.raises(FrontendError, match="tensor 'y' of 11 elements exceeds the limit of 10"):
        import_model(_model([node], inputs=[helper.make_tensor_value_info("x", T.FLOAT, [2])], inits=[_const("s", _i64(11))]))


def test_graph_input_with_dim_minus_one_is_dynamic_and_round_trips(tmp_path, capsys):
    relu = helper.make_node("Relu", ["x"], ["y"], name="relu1")
    x = helper.make_tensor_value_info("x", T.FLOAT, [1, 3, 8, 8])
    x.type.tensor_type.shape.dim[0].dim_value = -1
    x.type.tensor_type.shape.dim[2].dim_value = -7
    model = _model([relu], inputs=[x])
    from gedialects.textual import print_module

    text = print_module(import_model(model, source="neg.onnx"))
    assert "tensor<?x3x?x8xf32>" in text and "-1x" not in text
    mlir = tmp_path / "neg.mlir"
    mlir.write_text(text)
    capsys.readouterr()
    assert ge_opt.main([str(mlir)]) == 0
    out, err = capsys.readouterr()
    assert err == "" and "tensor<?x3x?x8xf32>" in out
    # and --input-shape may fix such a dim
    fixed = print_module(import_model(model, {"x": [2, 3, 8, 8]}, source="neg.onnx"))
    assert "tensor<2x3x8x8xf32>" in fixed


# -------------------------------------------------------------------- Clip


def test_nan_clip_bound_input(tmp_path, capsys):
    clip = helper.make_node("Clip", ["x", "lo", ""], ["y"], name="clip1")
    refused(_model([clip], inits=[_const("lo", np.array(np.nan, np.float32))]), tmp_path, capsys,
            "Clip's min is NaN", "(node 'clip1', Clip, opset 13)")


def test_nan_clip_bound_attribute(tmp_path, capsys):
    clip = helper.make_node("Clip", ["x"], ["y"], name="clip1", max=float("nan"))
    refused(_model([clip], opset=6, ir_version=3), tmp_path, capsys, "Clip's max is NaN", "(node 'clip1', Clip, opset 6)")


# ---------------------------------------------------------------- subgraphs


def test_nodes_of_subgraphs_are_checked(tmp_path, capsys):
    bad = helper.make_node("MaxPool", ["x"], ["t"], name="inner_pool")  # no kernel_shape
    then = helper.make_graph([bad], "then", [], [helper.make_tensor_value_info("t", T.FLOAT, None)])
    other = helper.make_graph([helper.make_node("Identity", ["x"], ["e"])], "else", [], [helper.make_tensor_value_info("e", T.FLOAT, None)])
    node = helper.make_node("If", ["c"], ["y"], name="if1", then_branch=then, else_branch=other)
    refused(_model([node], inits=[_const("c", np.array(True))]), tmp_path, capsys,
            "node 'if1/then_branch/inner_pool' (MaxPool, opset 13): required attribute 'kernel_shape' is missing")


def test_valid_models_pass():
    conv = helper.make_node("Conv", ["x", "w"], ["y"], name="conv1", strides=[1, 1], pads=[1, 1, 1, 1])
    validate.validate_model(_model([conv], inits=[W]))
    import_model(_model([conv], inits=[W]))
