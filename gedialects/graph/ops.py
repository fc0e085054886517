"""The graph dialect: one op per neural-network operator, with ONNX semantics.

Values are builtin ranked tensors. Every op has a verifier that re-derives its
result types from its operands and attributes (the rules live in `shapes.py`)
and names the op's model node in its message. Operator attributes are
properties printed in the attribute dictionary:

    %y = graph.conv %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 3, 3, 3, 3>}
           : (tensor<1x3x224x224xf32>, tensor<64x3x7x7xf32>, tensor<64xf32>)
           -> tensor<1x64x112x112xf32> loc("conv1")

Fused ops stay ordinary ops: conv/matmul/gemm carry an optional `activation`
epilogue, and any op may carry an `absorbed` attribute listing the model
nodes that were folded into it.
"""

from __future__ import annotations

from abc import ABC
from collections.abc import Mapping, Sequence

import numpy as np
from xdsl.dialects.builtin import (
    AnyFloat,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    UnitAttr,
    f64,
    i1,
    i64,
)
from xdsl.ir import Attribute, Dialect, Region, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    ParsePropInAttrDict,
    VarResultDef,
    irdl_op_definition,
    lazy_traits_def,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import ConstantLike, HasParent, IsTerminator, Pure
from xdsl.utils.exceptions import VerifyException

from gedialects.graph import shapes
from gedialects.graph.memory_ops import OffloadOp, ReloadOp
from gedialects.graph.shapes import DYN, Shape, ShapeError
from gedialects.graph.tensors import is_float, numpy_dtype
from gedialects.location import describe_op

ACTIVATIONS = ("relu", "leaky_relu", "clip", "sigmoid", "tanh", "gelu", "hard_sigmoid", "hard_swish")
"""Epilogues a conv/matmul/gemm may apply to its result (see reference.activate)."""


def int_array(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, [int(v) for v in values])


def float_array(values: Sequence[float]) -> DenseArrayBase:
    return DenseArrayBase.from_list(f64, [float(v) for v in values])


def shape_of(value: SSAValue | Attribute) -> Shape:
    t = value.type if isinstance(value, SSAValue) else value
    assert isinstance(t, TensorType)
    return tuple(t.get_shape())


def element_type_of(value: SSAValue) -> Attribute:
    assert isinstance(value.type, TensorType)
    return value.type.element_type


class GraphOp(IRDLOperation, ABC):
    """Base of every operator: attribute accessors and the result-type verifier."""

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "operands attr-dict `:` functional-type(operands, results)"
    # Operators have no side effects, so xDSL's CSE and DCE apply to them
    # (and greedy rewrites drop results nobody uses, which is what we want).
    traits = traits_def(Pure())

    # --- attribute accessors with ONNX defaults ---------------------------
    def ints(self, name: str, default: Sequence[int] = ()) -> tuple[int, ...]:
        attr = self.properties.get(name)
        if attr is None:
            return tuple(default)
        assert isinstance(attr, DenseArrayBase)
        return tuple(int(v) for v in attr.get_values())

    def int_(self, name: str, default: int) -> int:
        attr = self.properties.get(name)
        return default if attr is None else attr.value.data  # type: ignore[union-attr]

    def float_(self, name: str, default: float) -> float:
        attr = self.properties.get(name)
        return default if attr is None else float(attr.value.data)  # type: ignore[union-attr]

    def floats(self, name: str) -> tuple[float, ...]:
        attr = self.properties.get(name)
        return () if attr is None else tuple(attr.get_values())  # type: ignore[union-attr]

    def str_(self, name: str, default: str) -> str:
        attr = self.properties.get(name)
        return default if attr is None else attr.data  # type: ignore[union-attr]

    # --- shape inference ---------------------------------------------------
    def infer_shapes(self, ins: list[Shape]) -> list[Shape]:
        """Result shapes from operand shapes; raise ShapeError when invalid."""
        raise NotImplementedError

    def infer_element_types(self, ins: list[Attribute]) -> list[Attribute | None]:
        """Result element types; None where the op leaves it free (cast)."""
        if len({*ins}) > 1:
            raise ShapeError(
                "operands mix element types " + ", ".join(str(t) for t in ins)
            )
        return [ins[0]] * len(self.results)

    def verify_(self) -> None:
        ins = [shape_of(o) for o in self.operands]
        try:
            expected = self.infer_shapes(ins)
            etypes = self.infer_element_types([element_type_of(o) for o in self.operands])
        except ShapeError as e:
            raise VerifyException(f"{describe_op(self)}: {e}") from None
        for i, (res, want, et) in enumerate(zip(self.results, expected, etypes)):
            got = shape_of(res)
            if len(got) != len(want) or any(
                g != w and DYN not in (g, w) for g, w in zip(got, want)
            ):
                raise VerifyException(
                    f"{describe_op(self)}: result #{i} has shape {shapes.fmt(got)} "
                    f"but the operands give {shapes.fmt(want)}"
                )
            if et is not None and element_type_of(res) != et:
                raise VerifyException(
                    f"{describe_op(self)}: result #{i} has element type "
                    f"{element_type_of(res)} but the operands give {et}"
                )

    @classmethod
    def build_inferred(
        cls,
        operands: Sequence[SSAValue | Sequence[SSAValue]],
        properties: Mapping[str, Attribute] | None = None,
        attributes: Mapping[str, Attribute] | None = None,
        location: Attribute | None = None,
        num_results: int = 1,
        element_type: Attribute | None = None,
    ):
        """Create the op with result types derived by its own shape rules.

        `operands` is grouped as for the IRDL constructor (a list, possibly
        empty, for each optional or variadic operand). `element_type` is
        the result element type of ops that leave it free (cast).
        """
        placeholder = TensorType(i64, [])
        variadic = any(
            isinstance(d, VarResultDef) for _, d in cls.get_irdl_definition().results
        )
        result_types = [[placeholder] * num_results] if variadic else [placeholder] * num_results
        op = cls(
            operands=operands,
            result_types=result_types,
            properties=dict(properties or {}),
            attributes=dict(attributes or {}),
        )
        if location is not None:
            op.location = location  # type: ignore[assignment]
        ins = [shape_of(o) for o in op.operands]
        out_shapes = op.infer_shapes(ins)
        etypes = op.infer_element_types([element_type_of(o) for o in op.operands])
        for res, s, et in zip(op.results, out_shapes, etypes, strict=True):
            # The op is brand new and its results have no uses yet, so giving
            # them their real type in place is safe.
            res._type = TensorType(et if et is not None else element_type, s)  # type: ignore[arg-type]
        return op


class ElementwiseUnaryOp(GraphOp, ABC):
    input = operand_def(TensorType)
    output = result_def(TensorType)

    def infer_shapes(self, ins: list[Shape]) -> list[Shape]:
        return [ins[0]]


class ElementwiseBinaryOp(GraphOp, ABC):
    """Numpy-broadcasting binary op."""

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    output = result_def(TensorType)

    def infer_shapes(self, ins: list[Shape]) -> list[Shape]:
        return [shapes.broadcast(*ins)]


# ---------------------------------------------------------------- constants


@irdl_op_definition
class ConstantOp(IRDLOperation):
    """A tensor constant: `dense<...>` for small values, `dense_resource<key>`
    (bytes in the file's dialect_resources section) for weights."""

    name = "graph.constant"
    value = prop_def(DenseIntOrFPElementsAttr | DenseResourceAttr)
    output = result_def(TensorType)
    traits = traits_def(ConstantLike(), Pure())

    def __init__(self, value: DenseIntOrFPElementsAttr | DenseResourceAttr):
        super().__init__(properties={"value": value}, result_types=[value.type])

    def verify_(self) -> None:
        if self.value.type != self.output.type:
            raise VerifyException(
                f"{describe_op(self)}: value type {self.value.type} differs from "
                f"result type {self.output.type}"
            )

    @classmethod
    def parse(cls, parser: Parser) -> ConstantOp:
        pos = parser.pos
        value = parser.parse_attribute()
        if not isinstance(value, DenseIntOrFPElementsAttr | DenseResourceAttr):
            parser.raise_error("graph.constant expects a dense or dense_resource value", pos)
        attrs = parser.parse_optional_attr_dict()
        op = cls(value)
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_attribute(self.value)
        printer.print_op_attributes(self.attributes)


@irdl_op_definition
class FillOp(IRDLOperation):
    """A tensor whose elements all equal one scalar (ONNX ConstantOfShape).

    Kept apart from graph.constant so a splat weight costs O(1) in the IR
    whatever its shape (xDSL materialises every element of a splat `dense`).
    """

    name = "graph.fill"
    value = prop_def(FloatAttr | IntegerAttr)
    output = result_def(TensorType)
    traits = traits_def(ConstantLike(), Pure())

    def __init__(self, value: float | int, type: TensorType):
        et = type.element_type
        attr = FloatAttr(value, et) if isinstance(et, AnyFloat) else IntegerAttr(int(value), et)  # type: ignore[arg-type]
        super().__init__(properties={"value": attr}, result_types=[type])

    def verify_(self) -> None:
        if self.value.type != self.output.type.element_type:
            raise VerifyException(
                f"{describe_op(self)}: value type {self.value.type} differs from "
                f"element type {self.output.type.element_type}"
            )
        if not shapes.is_static(shape_of(self.output)):
            raise VerifyException(f"{describe_op(self)}: fill needs a static shape")

    @classmethod
    def parse(cls, parser: Parser) -> FillOp:
        pos = parser.pos
        number = parser.parse_number()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        type = parser.parse_type()
        if not isinstance(type, TensorType):
            parser.raise_error("graph.fill expects a tensor type", pos)
        op = cls(number, type)
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        v = self.value.value.data
        if isinstance(self.value, FloatAttr):
            # The shortest text that reads back as the same element value.
            v = numpy_dtype(self.value.type).type(v)
            text = repr(float(v)) if v.dtype == np.float64 else str(v)
            if "e" in text and "." not in text:
                # 1e-05 is no float literal for the parser; 1.0e-05 is
                mantissa, _, exponent = text.partition("e")
                text = f"{mantissa}.0e{exponent}"
        else:
            text = str(abs(v) if self.value.type == i1 else v)  # i1 true is stored as -1
        printer.print_string(text)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.output.type)


# ------------------------------------------------------------------ NN ops


class WindowOpMixin:
    """Spatial attributes shared by conv and pooling: [begins..., ends...] pads."""

    def window(self: GraphOp, rank: int) -> tuple[tuple[int, ...], ...]:  # type: ignore[misc]
        n = rank - 2
        return (
            self.ints("strides", (1,) * n),
            self.ints("pads", (0,) * (2 * n)),
            self.ints("dilations", (1,) * n),
        )


def _check_broadcasts_to(what: str, s: Shape, out: Shape) -> None:
    """A bias/residual operand `s` must broadcast to `out` without growing it."""
    try:
        ok = shapes.broadcast(out, s) == tuple(out) or not shapes.is_static(out)
    except ShapeError:
        ok = False
    if not ok:
        raise ShapeError(f"{what} {shapes.fmt(s)} does not broadcast to {shapes.fmt(out)}")


def _check_activation(op: GraphOp) -> None:
    act = op.str_("activation", "")
    if act and act not in ACTIVATIONS:
        raise ShapeError(f"unknown activation '{act}' (expected one of {', '.join(ACTIVATIONS)})")


@irdl_op_definition
class ConvOp(GraphOp, WindowOpMixin):
    """N-d convolution (ONNX Conv, explicit pads), with optional bias, a
    residual operand added before the activation epilogue."""

    name = "graph.conv"
    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    residual = opt_operand_def(TensorType)
    output = result_def(TensorType)
    strides = opt_prop_def(DenseArrayBase)
    pads = opt_prop_def(DenseArrayBase)
    dilations = opt_prop_def(DenseArrayBase)
    group = opt_prop_def(IntegerAttr)
    activation = opt_prop_def(StringAttr)
    activation_params = opt_prop_def(DenseArrayBase)

    irdl_options = (ParsePropInAttrDict(), AttrSizedOperandSegments(as_property=True))
    assembly_format = (
        "$input `,` $weight (`bias` `(` $bias^ `:` type($bias) `)`)? "
        "(`residual` `(` $residual^ `:` type($residual) `)`)? attr-dict "
        "`:` type($input) `,` type($weight) `->` type($output)"
    )

    def infer_shapes(self, ins: list[Shape]) -> list[Shape]:
        _check_activation(self)
        strides, pads, dil = self.window(len(ins[0]))
        out = shapes.conv(ins[0], ins[1], strides, pads, dil, self.int_("group", 1))
        if self.bias is not None:
            b = shape_of(self.bias)
            if len(b) != 1 or (b[0] not in (DYN, out[1]) and out[1] != DYN):
                raise ShapeError(f"bias {shapes.fmt(b)} must be 1-d of extent {out[1]}")
        if self.residual is not None:
            _check_broadcasts_to("residual", shape_of(self.residual), out)
        return [out]


@irdl_op_definition
class ConvTransposeOp(GraphOp, WindowOpMixin):
    """N-d transposed convolution (ONNX ConvTranspose, explicit pads)."""

    name = "graph.conv_transpose"
    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    output = result_def(TensorType)
    strides = opt_prop_def(DenseArrayBase)
    pads = opt_prop_def(DenseArrayBase)
    dilations = opt_prop_def(DenseArrayBase)
    output_padding = opt_prop_def(DenseArrayBase)
    group = opt_prop_def(IntegerAttr)

    def infer_shapes(self, ins: list[Shape]) -> list[Shape]:
        n = len(ins[0]) - 2
        strides, pads, dil = self.window(len(ins[0]))
        out_pad = self.ints("output_padding", (0,) * n)
        return [
            shapes.conv_transpose(
                ins[0], ins[1], strides, pads, dil, out_pad, self.int_("group", 1)
            )
        ]


@irdl_op_definition
class BatchNormOp(GraphOp):
    """Inference batch normalisation: scale * (x - mean) / sqrt(var + eps) + bias."""

    name = "graph.batch_norm"
    input = operand_def(TensorType)
    scale = operand_def(TensorType)
    bias = operand_def(TensorType)
    mean = operand_def(TensorType)
    var = operand_def(TensorType)
    output = result_def(TensorType)
    epsilon = opt_prop_def(FloatAttr)

    def infer_shapes(self, ins: list[Shape]) -> list[Shape]:
        x = ins[0]
        if len(x) < 2:
            raise ShapeError(f"input {shapes.fmt(x)} needs a channel dim")
        for name, s in zip(("scale", "bias", "mean", "var"), ins[1:]):
            if len(s) != 1 or DYN not in (s[0], x[1]) and s[0] != x[1]:
                raise ShapeError(f"{name} {shapes.fmt(s)} must be 1-d of extent {x[1]}")
        return [x]


class PoolOp(GraphOp, WindowOpMixin, ABC):
    input = operand_def(TensorType)
    output = result_def(TensorType)
    kernel_shape = prop_def(DenseArrayBase)
    strides = opt_prop_def(DenseArrayBase)
    pads = opt_prop_def(DenseArrayBase)
    dilations = opt_prop_def(DenseArrayBase)
    ceil_mode = opt_prop_def(IntegerAttr)

    def infer_shapes(self, ins: list[Shape]) -> list[Shape]:
        k = self.ints("kernel_shape")
        strides, pads, dil = self.window(len(k) + 2)
        return [shapes.pool(ins[0], k, strides, pads, dil, bool(self.int_("ceil_mode", 0)))]


@irdl_op_definition
class MaxPoolOp(PoolOp):
    name = "graph.max_pool"


@irdl_op_definition
class AvgPoolOp(PoolOp):
    """Average pooling; `count_include_pad` counts padded cells in the divisor."""

    name = "graph.avg_pool"
    count_include_pad = opt_prop_def(IntegerAttr)


class GlobalPoolOp(GraphOp, ABC):
    input = operand_def(TensorType)
    output = result_def(TensorType)

    def infer_shapes(self, ins: list[Shape]) -> list[Shape]:
        x = ins[0]
        if len(x) < 3:
            raise ShapeError(f"input {shapes.fmt(x)} needs spatial dims")
        return [(x[0], x[1]) + (1,) * (len(x) - 2)]


@irdl_op_definition
class GlobalAvgPoolOp(GlobalPoolOp):
    name = "graph.global_avg_pool"


@irdl_op_definition
class GlobalMaxPoolOp(GlobalPoolOp):
    name = "graph.global_max_pool"


@irdl_op_definition
class LrnOp(GraphOp):
    """Local response normalisation across channels (ONNX LRN)."""

    name = "graph.lrn"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    size = prop_def(IntegerAttr)
    alpha = opt_prop_def(FloatAttr)
    beta = opt_prop_def(FloatAttr)
    bias = opt_prop_def(FloatAttr)

    def infer_shapes(self, ins: list[Shape]) -> list[Shape]:
        if len(ins[0]) < 3:
            raise ShapeError(f"input {shapes.fmt(ins[0])} needs rank >= 3")
        if self.int_("size", 1) < 1:
            raise ShapeError("size must be positive")
        return [ins[0]]


@irdl_op_definition
class MatMulOp(GraphOp):
    """Numpy matmul, with an optional bias added and an activation epilogue."""

    name = "graph.matmul"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    output = result_def(TensorType)
    activation = opt_prop_def(StringAttr)
    activation_params = opt_prop_def(DenseArrayBase)

    def infer_shapes(self, ins: list[Shape]) -> list[Shape]:
        _check_activation(self)
        out = shapes.matmul(ins[0], ins[1])
        if len(ins) > 2:
            _check_broadcasts_to("bias", ins[2], out)
        return [out]


@irdl_op_definition
class GemmOp(GraphOp):
    """alpha * op(A) @ op(B) + beta * C (ONNX Gemm), with an activation epilogue."""

    name = "graph.gemm"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    output = result_def(TensorType)
    trans_a = opt_prop_def(IntegerAttr)
    trans_b = opt_prop_def(IntegerAttr)
    alpha = opt_prop_def(FloatAttr)
    beta = opt_prop_def(FloatAttr)
    activation = opt_prop_def(StringAttr)
    activation_params = opt_prop_def(DenseArrayBase)

    def infer_shapes(self, ins: list[Shape]) -> list[Shape]:
        _check_activation(self)
        out = shapes.gemm(
            ins[0], ins[1], bool(self.int_("trans_a", 0)), bool(self.int_("trans_b", 0))
        )
        if len(ins) > 2:
            _check_broadcasts_to("bias", ins[2], out)
        return [out]


@irdl_op_definition
class AttentionOp(GraphOp):
    """Scaled dot-product attention, softmax(q . k^T * scale + mask) . v
    (ONNX Attention, opset 23, on 4-D inputs without a KV cache): q is
    [.., Sq, d], k is [.., Sk, d] (keys as rows, not transposed), v is
    [.., Sk, dv] and the additive `masks` (none, a padding or causal mask, a
    position bias, ...) broadcast to the scores [.., Sq, Sk]; batch dims
    broadcast. `AttentionFusionPass` builds it from
    the matmul / scale / mask / softmax / matmul chains of exported models.
    With `zero_empty_rows`, a query row whose every score is -inf gives 0
    instead of NaN: torch's sdpa exports guard the probabilities with
    where(is_nan(p), 0, p)."""

    name = "graph.attention"
    q = operand_def(TensorType)
    k = operand_def(TensorType)
    v = operand_def(TensorType)
    masks = var_operand_def(TensorType)
    output = result_def(TensorType)
    scale = opt_prop_def(FloatAttr)
    zero_empty_rows = opt_prop_def(UnitAttr)

    assembly_format = (
        "$q `,` $k `,` $v (`mask` `(` $masks^ `:` type($masks) `)`)? attr-dict "
        "`:` type($q) `,` type($k) `,` type($v) `->` type($output)"
    )

    def infer_shapes(self, ins: list[Shape]) -> list[Shape]:
        q, k, v = ins[:3]
        if min(len(q), len(k), len(v)) < 2:
            raise ShapeError("attention operands have rank >= 2")
        if q[-1] != DYN and k[-1] != DYN and q[-1] != k[-1]:
            raise ShapeError(f"query and key widths differ: {shapes.fmt(q)} vs {shapes.fmt(k)}")
        if k[-2] != DYN and v[-2] != DYN and k[-2] != v[-2]:
            raise ShapeError(f"keys and values differ in length: {shapes.fmt(k)} vs {shapes.fmt(v)}")
        try:
            batch = shapes.broadcast(shapes.broadcast(q[:-2], k[:-2]), v[:-2])
        except ShapeError:
            raise ShapeError(f"batch dims of {shapes.fmt(q)}, {shapes.fmt(k)}, {shapes.fmt(v)} do not broadcast") from None
        for mask in ins[3:]:
            _check_broadcasts_to("mask", mask, (*batch, q[-2], k[-2]))
        return [(*batch, q[-2], v[-1])]


@irdl_op_definition
class SoftmaxOp(GraphOp):
    """Softmax along one axis (ONNX opset >= 13 semantics; older opsets are
    rewritten at import). With `shape`, the result is also reshaped to it: a
    fused Reshape that keeps the softmax axis intact (see `reshaped_axis`)."""

    name = "graph.softmax"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    axis = opt_prop_def(IntegerAttr)
    shape = opt_prop_def(DenseArrayBase)

    def infer_shapes(self, ins: list[Shape]) -> list[Shape]:
        axis = shapes.normalize_axis(self.int_("axis", -1), len(ins[0]))
        if self.shape is None:
            return [ins[0]]
        out = self.ints("shape")
        if not shapes.is_static(ins[0]) or not shapes.is_static(out):
            raise ShapeError("a reshaping softmax needs static shapes")
        if reshaped_axis(ins[0], axis, out) is None:
            raise ShapeError(
                f"shape {shapes.fmt(out)} does not keep axis {axis} of {shapes.fmt(ins[0])} intact"
            )
        return [out]


def reshaped_axis(x: Shape, axis: int, y: Shape) -> int | None:
    """The axis of `y` that axis `axis` of `x` becomes when `x` is reshaped to
    `y` and stays intact (same extent, same elements before and after it), or
    None. Softmax along it commutes with the reshape."""
    if shapes.num_elements(x) != shapes.num_elements(y):
        return None
    before = shapes.num_elements(x[:axis])
    for i, d in enumerate(y):
        if d == x[axis] and shapes.num_elements(y[:i]) == before:
            return i
    return None


@irdl_op_definition
class LogSoftmaxOp(GraphOp):
    name = "graph.log_softmax"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    axis = opt_prop_def(IntegerAttr)

    def infer_shapes(self, ins: list[Shape]) -> list[Shape]:
        shapes.normalize_axis(self.int_("axis", -1), len(ins[0]))
        return [ins[0]]


@irdl_op_definition
class LayerNormOp(GraphOp):
    """Normalise over dims [axis, rank), then scale and shift (ONNX
    LayerNormalization, first output only). A `residual` operand is added to
    the input first (the fused Add+LayerNorm of transformer blocks)."""

    name = "graph.layer_norm"
    input = operand_def(TensorType)
    scale = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    residual = opt_operand_def(TensorType)
    output = result_def(TensorType)
    axis = opt_prop_def(IntegerAttr)
    epsilon = opt_prop_def(FloatAttr)

    irdl_options = (ParsePropInAttrDict(), AttrSizedOperandSegments(as_property=True))
    assembly_format = (
        "$input `,` $scale (`bias` `(` $bias^ `:` type($bias) `)`)? "
        "(`residual` `(` $residual^ `:` type($residual) `)`)? attr-dict "
        "`:` type($input) `,` type($scale) `->` type($output)"
    )

    def infer_shapes(self, ins: list[Shape]) -> list[Shape]:
        x = ins[0]
        ax = shapes.normalize_axis(self.int_("axis", -1), len(x))
        params = [("scale", self.scale), ("bias", self.bias)]
        for what, s in ((w, shape_of(v)) for w, v in params if v is not None):
            if len(s) > len(x) - ax:
                raise ShapeError(f"{what} {shapes.fmt(s)} has more dims than {shapes.fmt(x[ax:])}")
            _check_broadcasts_to(what, s, x[ax:])
        if self.residual is not None:
            _check_broadcasts_to("residual", shape_of(self.residual), x)
        return [x]


# ------------------------------------------------------------- elementwise


@irdl_op_definition
class ReluOp(ElementwiseUnaryOp):
    name = "graph.relu"


@irdl_op_definition
class LeakyReluOp(ElementwiseUnaryOp):
    name = "graph.leaky_relu"
    alpha = opt_prop_def(FloatAttr)


@irdl_op_definition
class ClipOp(ElementwiseUnaryOp):
    """Clamp to [min, max]; a missing bound is unbounded."""

    name = "graph.clip"
    min = opt_prop_def(FloatAttr)
    max = opt_prop_def(FloatAttr)


@irdl_op_definition
class SigmoidOp(ElementwiseUnaryOp):
    name = "graph.sigmoid"


@irdl_op_definition
class TanhOp(ElementwiseUnaryOp):
    name = "graph.tanh"


@irdl_op_definition
class ErfOp(ElementwiseUnaryOp):
    name = "graph.erf"


@irdl_op_definition
class GeluOp(ElementwiseUnaryOp):
    """GELU; approximate = "none" (erf form) or "tanh"."""

    name = "graph.gelu"
    approximate = opt_prop_def(StringAttr)

    def infer_shapes(self, ins: list[Shape]) -> list[Shape]:
        if self.str_("approximate", "none") not in ("none", "tanh"):
            raise ShapeError("approximate must be \"none\" or \"tanh\"")
        return [ins[0]]


@irdl_op_definition
class SqrtOp(ElementwiseUnaryOp):
    name = "graph.sqrt"


@irdl_op_definition
class ExpOp(ElementwiseUnaryOp):
    name = "graph.exp"


@irdl_op_definition
class LogOp(ElementwiseUnaryOp):
    name = "graph.log"


@irdl_op_definition
class NegOp(ElementwiseUnaryOp):
    name = "graph.neg"


@irdl_op_definition
class AbsOp(ElementwiseUnaryOp):
    name = "graph.abs"


@irdl_op_definition
class ReciprocalOp(ElementwiseUnaryOp):
    name = "graph.reciprocal"


@irdl_op_definition
class IdentityOp(ElementwiseUnaryOp):
    """Pass-through (ONNX Identity, and Dropout in inference)."""

    name = "graph.identity"


# ------------------------------------------------ comparison, logic, selection (ops-A)


def _check_bool(ins: list[Attribute], what: str = "operands") -> None:
    if any(t != i1 for t in ins):
        raise ShapeError(f"{what} must be bool (i1), got " + ", ".join(str(t) for t in ins))


def _check_number(t: Attribute, what: str = "operands") -> None:
    if t == i1:
        raise ShapeError(f"{what} must be numbers, got {t}")


class CompareOp(ElementwiseBinaryOp, ABC):
    """Broadcasting comparison: operands of one element type, a bool result."""

    def infer_element_types(self, ins: list[Attribute]) -> list[Attribute | None]:
        super().infer_element_types(ins)
        return [i1]


@irdl_op_definition
class EqualOp(CompareOp):
    name = "graph.equal"


@irdl_op_definition
class LessOp(CompareOp):
    name = "graph.less"


@irdl_op_definition
class LessEqualOp(CompareOp):
    name = "graph.less_equal"


@irdl_op_definition
class GreaterOp(CompareOp):
    name = "graph.greater"


@irdl_op_definition
class GreaterEqualOp(CompareOp):
    name = "graph.greater_equal"


class LogicOp(ElementwiseBinaryOp, ABC):
    """Broadcasting logical op of bool tensors."""

    def infer_element_types(self, ins: list[Attribute]) -> list[Attribute | None]:
        _check_bool(ins)
        return [i1]


@irdl_op_definition
class AndOp(LogicOp):
    name = "graph.and"


@irdl_op_definition
class OrOp(LogicOp):
    name = "graph.or"


@irdl_op_definition
class XorOp(LogicOp):
    name = "graph.xor"


@irdl_op_definition
class IsNanOp(ElementwiseUnaryOp):
    """Which elements are NaN (ONNX IsNaN): transformers' attention exports
    zero a fully masked row's softmax with `where(is_nan(p), 0, p)`."""

    name = "graph.is_nan"

    def infer_element_types(self, ins: list[Attribute]) -> list[Attribute | None]:
        if not is_float(ins[0]):
            raise ShapeError(f"operand must be a float tensor, got {ins[0]}")
        return [i1]


@irdl_op_definition
class NotOp(ElementwiseUnaryOp):
    name = "graph.not"

    def infer_element_types(self, ins: list[Attribute]) -> list[Attribute | None]:
        _check_bool(ins, "operand")
        return [i1]


@irdl_op_definition
class WhereOp(GraphOp):
    """`condition ? x : y`, all three broadcast to each other (ONNX Where)."""

    name = "graph.where"
    condition = operand_def(TensorType)
    x = operand_def(TensorType)
    y = operand_def(TensorType)
    output = result_def(TensorType)

    def infer_shapes(self, ins: list[Shape]) -> list[Shape]:
        return [shapes.broadcast(*ins)]

    def infer_element_types(self, ins: list[Attribute]) -> list[Attribute | None]:
        _check_bool(ins[:1], "condition")
        if ins[1] != ins[2]:
            raise ShapeError(f"x and y mix element types {ins[1]}, {ins[2]}")
        return [ins[1]]


@irdl_op_definition
class ModOp(ElementwiseBinaryOp):
    """Remainder (ONNX Mod): with fmod = 0 it has the sign of the divisor
    (Python's %), with fmod = 1 the sign of the dividend (C fmod)."""

    name = "graph.mod"
    fmod = opt_prop_def(IntegerAttr)

    def infer_shapes(self, ins: list[Shape]) -> list[Shape]:
        if self.int_("fmod", 0) not in (0, 1):
            raise ShapeError(f"fmod must be 0 or 1, got {self.int_('fmod', 0)}")
        return [shapes.broadcast(*ins)]

    def infer_element_types(self, ins: list[Attribute]) -> list[Attribute | None]:
        out = super().infer_element_types(ins)
        _check_number(ins[0])
        return out


class FloatUnaryOp(ElementwiseUnaryOp, ABC):
    """An elementwise function of float tensors only."""

    def infer_element_types(self, ins: list[Attribute]) -> list[Attribute | None]:
        if not is_float(ins[0]):
            raise ShapeError(f"operand must be a float tensor, got {ins[0]}")
        return [ins[0]]


@irdl_op_definition
class SinOp(FloatUnaryOp):
    name = "graph.sin"


@irdl_op_definition
class CosOp(FloatUnaryOp):
    name = "graph.cos"


@irdl_op_definition
class SoftplusOp(FloatUnaryOp):
    """log(1 + exp(x))."""

    name = "graph.softplus"


@irdl_op_definition
class HardSigmoidOp(FloatUnaryOp):
    """max(0, min(1, alpha * x + beta)); alpha = 0.2, beta = 0.5 by default."""

    name = "graph.hard_sigmoid"
    alpha = opt_prop_def(FloatAttr)
    beta = opt_prop_def(FloatAttr)


@irdl_op_definition
class HardSwishOp(FloatUnaryOp):
    """x * max(0, min(1, x / 6 + 0.5))."""

    name = "graph.hard_swish"


@irdl_op_definition
class ExpandOp(GraphOp):
    """Broadcast to a constant `shape`, numpy-style in both directions (ONNX
    Expand: a dim of 1 in `shape` keeps the input's extent)."""

    name = "graph.expand"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    shape = prop_def(DenseArrayBase)

    def infer_shapes(self, ins: list[Shape]) -> list[Shape]:
        return [shapes.expand(ins[0], self.ints("shape"))]


@irdl_op_definition
class TileOp(GraphOp):
    """Repeat the input `repeats[i]` times along each dim i (ONNX Tile)."""

    name = "graph.tile"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    repeats = prop_def(DenseArrayBase)

    def infer_shapes(self, ins: list[Shape]) -> list[Shape]:
        return [shapes.tile(ins[0], self.ints("repeats"))]


@irdl_op_definition
class TriluOp(GraphOp):
    """Keep the upper (upper = 1, the default) or lower triangle of the last
    two dims, from diagonal k on; zero the rest (ONNX Trilu)."""

    name = "graph.trilu"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    upper = opt_prop_def(IntegerAttr)
    k = opt_prop_def(IntegerAttr)

    def infer_shapes(self, ins: list[Shape]) -> list[Shape]:
        if self.int_("upper", 1) not in (0, 1):
            raise ShapeError(f"upper must be 0 or 1, got {self.int_('upper', 1)}")
        return [shapes.trilu(ins[0])]


@irdl_op_definition
class CumSumOp(GraphOp):
    """Running sum along `axis` (ONNX CumSum); `exclusive` leaves the current
    element out, `reverse` sums from the end."""

    name = "graph.cumsum"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    axis = prop_def(IntegerAttr)
    exclusive = opt_prop_def(IntegerAttr)
    reverse = opt_prop_def(IntegerAttr)

    def infer_shapes(self, ins: list[Shape]) -> list[Shape]:
        for key in ("exclusive", "reverse"):
            if self.int_(key, 0) not in (0, 1):
                raise ShapeError(f"{key} must be 0 or 1, got {self.int_(key, 0)}")
        shapes.normalize_axis(self.int_("axis", 0), len(ins[0]))
        return [ins[0]]

    def infer_element_types(self, ins: list[Attribute]) -> list[Attribute | None]:
        _check_number(ins[0], "elements")
        return [ins[0]]


@irdl_op_definition
class RangeOp(GraphOp):
    """start, start + delta, ... up to limit (exclusive), from three scalars
    (ONNX Range); the length is known only at run time. Constant operands
    fold at import."""

    name = "graph.range"
    start = operand_def(TensorType)
    limit = operand_def(TensorType)
    delta = operand_def(TensorType)
    output = result_def(TensorType)

    def infer_shapes(self, ins: list[Shape]) -> list[Shape]:
        return [shapes.range_(*ins)]

    def infer_element_types(self, ins: list[Attribute]) -> list[Attribute | None]:
        out = super().infer_element_types(ins)
        _check_number(ins[0])
        return out


STORAGE_FORMATS = ("ND", "NCHW", "NC1HWC0", "FLAT_NC1HWC0", "FRACTAL_Z")
"""Storage formats a tensor can be given (docs/LOWERING.md, "Layouts").
ND and NCHW are both the logical row-major order (NCHW names it for 4-D)."""

ROW_MAJOR = ("ND", "NCHW")


def same_format(a: str, b: str) -> bool:
    """Formats that lay the bytes out identically (ND and NCHW)."""
    return a == b or (a in ROW_MAJOR and b in ROW_MAJOR)


@irdl_op_definition
class TransDataOp(GraphOp):
    """A change of storage format (GE's TransData). On logical values it is the
    identity: the tensor type keeps the logical shape, the formats say how the
    bytes are laid out before and after. Inserted by assign-layouts."""

    name = "graph.transdata"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    src_format = prop_def(StringAttr)
    dst_format = prop_def(StringAttr)

    def infer_shapes(self, ins: list[Shape]) -> list[Shape]:
        src, dst = self.src_format.data, self.dst_format.data
        for f in (src, dst):
            if f not in STORAGE_FORMATS:
                raise ShapeError(f"unknown storage format '{f}' (expected one of {', '.join(STORAGE_FORMATS)})")
            if f in ("NCHW", "NC1HWC0") and len(ins[0]) != 4:
                raise ShapeError(f"format {f} needs a 4-D tensor, got {shapes.fmt(ins[0])}")
        if same_format(src, dst):
            raise ShapeError(f"{src} -> {dst} does not change the format")
        return [ins[0]]


@irdl_op_definition
class CastOp(ElementwiseUnaryOp):
    """Element type conversion; the target is the result's element type."""

    name = "graph.cast"

    def infer_element_types(self, ins: list[Attribute]) -> list[Attribute | None]:
        return [None]


@irdl_op_definition
class AddOp(ElementwiseBinaryOp):
    name = "graph.add"


@irdl_op_definition
class SubOp(ElementwiseBinaryOp):
    name = "graph.sub"


@irdl_op_definition
class MulOp(ElementwiseBinaryOp):
    name = "graph.mul"


@irdl_op_definition
class DivOp(ElementwiseBinaryOp):
    name = "graph.div"


@irdl_op_definition
class PowOp(ElementwiseBinaryOp):
    """x ** y; the exponent may have another element type (ONNX Pow)."""

    name = "graph.pow"

    def infer_element_types(self, ins: list[Attribute]) -> list[Attribute | None]:
        return [ins[0]]


@irdl_op_definition
class MaxOp(ElementwiseBinaryOp):
    name = "graph.max"


@irdl_op_definition
class MinOp(ElementwiseBinaryOp):
    name = "graph.min"


@irdl_op_definition
class SumOp(GraphOp):
    """Broadcasting sum of any number of tensors (ONNX Sum)."""

    name = "graph.sum"
    inputs = var_operand_def(TensorType)
    output = result_def(TensorType)

    def infer_shapes(self, ins: list[Shape]) -> list[Shape]:
        if not ins:
            raise ShapeError("sum needs at least one operand")
        return [shapes.broadcast(*ins)]


# -------------------------------------------------------------- reductions


class ReduceOp(GraphOp, ABC):
    """Reduce over `axes` (all axes when absent)."""

    input = operand_def(TensorType)
    output = result_def(TensorType)
    axes = opt_prop_def(DenseArrayBase)
    keepdims = opt_prop_def(IntegerAttr)

    def infer_shapes(self, ins: list[Shape]) -> list[Shape]:
        return [shapes.reduce(ins[0], self.ints("axes"), bool(self.int_("keepdims", 1)))]


@irdl_op_definition
class ReduceMeanOp(ReduceOp):
    name = "graph.reduce_mean"


@irdl_op_definition
class ReduceSumOp(ReduceOp):
    name = "graph.reduce_sum"


@irdl_op_definition
class ReduceMaxOp(ReduceOp):
    name = "graph.reduce_max"


@irdl_op_definition
class ReduceMinOp(ReduceOp):
    name = "graph.reduce_min"


# ---------------------------------------------------------- data movement


@irdl_op_definition
class ConcatOp(GraphOp):
    name = "graph.concat"
    inputs = var_operand_def(TensorType)
    output = result_def(TensorType)
    axis = prop_def(IntegerAttr)

    def infer_shapes(self, ins: list[Shape]) -> list[Shape]:
        return [shapes.concat(ins, self.int_("axis", 0))]


@irdl_op_definition
class SplitOp(GraphOp):
    name = "graph.split"
    input = operand_def(TensorType)
    outputs = var_result_def(TensorType)
    axis = opt_prop_def(IntegerAttr)
    split = prop_def(DenseArrayBase)

    def infer_shapes(self, ins: list[Shape]) -> list[Shape]:
        sizes = self.ints("split")
        if len(sizes) != len(self.outputs):
            raise ShapeError(f"split {list(sizes)} makes {len(sizes)} parts but the op has {len(self.outputs)} results")
        return shapes.split(ins[0], self.int_("axis", 0), sizes)

    def infer_element_types(self, ins: list[Attribute]) -> list[Attribute | None]:
        return [ins[0]] * len(self.ints("split"))


@irdl_op_definition
class SliceOp(GraphOp):
    """Strided slice with ONNX clamping of starts/ends."""

    name = "graph.slice"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    starts = prop_def(DenseArrayBase)
    ends = prop_def(DenseArrayBase)
    axes = opt_prop_def(DenseArrayBase)
    steps = opt_prop_def(DenseArrayBase)

    def infer_shapes(self, ins: list[Shape]) -> list[Shape]:
        starts = self.ints("starts")
        axes = self.ints("axes", range(len(starts)))
        steps = self.ints("steps", (1,) * len(starts))
        return [shapes.slice_shape(ins[0], starts, self.ints("ends"), axes, steps)]


@irdl_op_definition
class ReshapeOp(GraphOp):
    """ONNX Reshape with a constant `shape` (0 copies a dim unless allowzero,
    one -1 is inferred). A view: it moves no data."""

    name = "graph.reshape"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    shape = prop_def(DenseArrayBase)
    allowzero = opt_prop_def(IntegerAttr)

    def infer_shapes(self, ins: list[Shape]) -> list[Shape]:
        return [
            shapes.resolve_reshape(ins[0], self.ints("shape"), bool(self.int_("allowzero", 0)))
        ]


@irdl_op_definition
class FlattenOp(GraphOp):
    name = "graph.flatten"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    axis = opt_prop_def(IntegerAttr)

    def infer_shapes(self, ins: list[Shape]) -> list[Shape]:
        return [shapes.flatten(ins[0], self.int_("axis", 1))]


@irdl_op_definition
class TransposeOp(GraphOp):
    name = "graph.transpose"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    perm = prop_def(DenseArrayBase)

    def infer_shapes(self, ins: list[Shape]) -> list[Shape]:
        return [shapes.transpose(ins[0], self.ints("perm"))]


@irdl_op_definition
class SpaceToDepthOp(GraphOp):
    """ONNX SpaceToDepth: every `blocksize` x `blocksize` cell of pixels
    becomes channels, y[n, k, i, j] = x[n, c, s * i + dy, s * j + dx] with
    k = (dy * s + dx) * C + c (mode DCR, the default) or c * s * s + dy * s
    + dx (CRD)."""

    name = "graph.space_to_depth"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    blocksize = prop_def(IntegerAttr)
    mode = opt_prop_def(StringAttr)

    def cell_order(self) -> tuple[int, ...]:
        """The transpose of x as [N, C, H/s, s(dy), W/s, s(dx)] whose reshape to
        [N, s*s*C, H/s, W/s] is the result (as `channel` numbers the channels)."""
        return (0, 1, 3, 5, 2, 4) if self.str_("mode", "DCR") == "CRD" else (0, 3, 5, 1, 2, 4)

    def channel(self, dy: int, dx: int, c: int, channels: int) -> int:
        """The output channel of input channel c at (dy, dx) in its cell."""
        s = self.int_("blocksize", 1)
        return c * s * s + dy * s + dx if self.str_("mode", "DCR") == "CRD" else (dy * s + dx) * channels + c

    def infer_shapes(self, ins: list[Shape]) -> list[Shape]:
        if self.str_("mode", "DCR") not in ("DCR", "CRD"):
            raise ShapeError(f"unknown mode '{self.str_('mode', '')}' (expected DCR or CRD)")
        x, s = ins[0], self.int_("blocksize", 0)
        if len(x) != 4:
            raise ShapeError(f"needs a 4-D tensor, got {shapes.fmt(x)}")
        if s < 1:
            raise ShapeError(f"blocksize {s} must be positive")
        n, c, h, w = x
        if (h != DYN and h % s) or (w != DYN and w % s):
            raise ShapeError(f"height and width {h}x{w} must be multiples of the blocksize {s}")
        return [(n, DYN if c == DYN else c * s * s, DYN if h == DYN else h // s, DYN if w == DYN else w // s)]


@irdl_op_definition
class SqueezeOp(GraphOp):
    name = "graph.squeeze"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    axes = prop_def(DenseArrayBase)

    def infer_shapes(self, ins: list[Shape]) -> list[Shape]:
        return [shapes.squeeze(ins[0], self.ints("axes"))]


@irdl_op_definition
class UnsqueezeOp(GraphOp):
    name = "graph.unsqueeze"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    axes = prop_def(DenseArrayBase)

    def infer_shapes(self, ins: list[Shape]) -> list[Shape]:
        return [shapes.unsqueeze(ins[0], self.ints("axes"))]


@irdl_op_definition
class GatherOp(GraphOp):
    """Take entries of `input` along `axis` at integer `indices` (ONNX Gather)."""

    name = "graph.gather"
    input = operand_def(TensorType)
    indices = operand_def(TensorType)
    output = result_def(TensorType)
    axis = opt_prop_def(IntegerAttr)

    def infer_shapes(self, ins: list[Shape]) -> list[Shape]:
        return [shapes.gather(ins[0], ins[1], self.int_("axis", 0))]

    def infer_element_types(self, ins: list[Attribute]) -> list[Attribute | None]:
        if not isinstance(ins[1], IntegerType):
            raise ShapeError(f"indices must be integers, got {ins[1]}")
        return [ins[0]]


@irdl_op_definition
class ShapeOp(GraphOp):
    """The shape of a tensor as a 1-d i64 tensor; folds once it is static."""

    name = "graph.shape"
    input = operand_def(TensorType)
    output = result_def(TensorType)

    def infer_shapes(self, ins: list[Shape]) -> list[Shape]:
        return [(len(ins[0]),)]

    def infer_element_types(self, ins: list[Attribute]) -> list[Attribute | None]:
        return [i64]


# ------------------------------------------- padding, normalisation, resampling, selection (ops-B)

PAD_MODES = ("constant", "reflect", "edge", "wrap")


@irdl_op_definition
class PadOp(GraphOp):
    """Pad every dim (ONNX Pad): `pads` is [begins..., ends...] over all dims,
    a negative pad crops (crops apply first). `mode` constant fills with
    `value` (of the element type, 0 when absent), reflect mirrors without
    repeating the border, edge repeats the border, wrap repeats the tensor."""

    name = "graph.pad"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    pads = prop_def(DenseArrayBase)
    mode = opt_prop_def(StringAttr)
    value = opt_prop_def(FloatAttr | IntegerAttr)

    def infer_shapes(self, ins: list[Shape]) -> list[Shape]:
        mode = self.str_("mode", "constant")
        if mode not in PAD_MODES:
            raise ShapeError(f"unknown mode '{mode}' (expected one of {', '.join(PAD_MODES)})")
        if self.value is not None and mode != "constant":
            raise ShapeError(f"a fill value needs mode constant, not {mode}")
        return [shapes.pad(ins[0], self.ints("pads"), mode)]

    def infer_element_types(self, ins: list[Attribute]) -> list[Attribute | None]:
        if self.value is not None and self.value.type != ins[0]:
            raise ShapeError(f"value type {self.value.type} differs from element type {ins[0]}")
        return [ins[0]]


class _ChannelNormOp(GraphOp, ABC):
    input = operand_def(TensorType)
    scale = operand_def(TensorType)
    bias = operand_def(TensorType)
    output = result_def(TensorType)
    epsilon = opt_prop_def(FloatAttr)

    def infer_shapes(self, ins: list[Shape]) -> list[Shape]:
        x = ins[0]
        if len(x) < 3:
            raise ShapeError(f"input {shapes.fmt(x)} needs rank >= 3 (N, C, spatial...)")
        shapes.channel_params(x, "scale", ins[1])
        shapes.channel_params(x, "bias", ins[2])
        return [x]

    def infer_element_types(self, ins: list[Attribute]) -> list[Attribute | None]:
        out = super().infer_element_types(ins)
        if not is_float(ins[0]):
            raise ShapeError(f"operands must be float tensors, got {ins[0]}")
        return out


@irdl_op_definition
class InstanceNormOp(_ChannelNormOp):
    """(x - mean) / sqrt(var + epsilon) * scale + bias with statistics per
    sample and channel over the spatial dims (ONNX InstanceNormalization)."""

    name = "graph.instance_norm"


@irdl_op_definition
class GroupNormOp(_ChannelNormOp):
    """Normalise each of `num_groups` groups of channels per sample, then a
    per-channel scale and bias (ONNX GroupNormalization-21; opset 18's
    per-group scale and bias are expanded to channels at import)."""

    name = "graph.group_norm"
    num_groups = prop_def(IntegerAttr)

    def infer_shapes(self, ins: list[Shape]) -> list[Shape]:
        shapes.group_norm(ins[0], self.int_("num_groups", 1))
        return super().infer_shapes(ins)


RESIZE_MODES = ("nearest", "linear", "cubic")
COORDINATE_MODES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric")
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


@irdl_op_definition
class ResizeOp(GraphOp):
    """Resample every dim (ONNX Resize-19 semantics without roi): an output
    cell's input coordinate follows `coordinate_transformation_mode` from
    its index and the dim's scale; `mode` nearest rounds it (`nearest_mode`),
    linear interpolates between the two neighbours along each dim (N-linear,
    bilinear when only the last two dims resize), cubic between four with
    Keys' cubic convolution (`cubic_coeff_a`, -0.75 by default; edge cells
    repeated beyond the border, or with `exclude_outside` the weights that
    fall outside dropped and the rest renormalised). The result shape is
    `sizes` when present, else floor(extent * scale). Older opsets
    (Upsample, Resize-10) are expressed in these terms at import."""

    name = "graph.resize"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    scales = prop_def(DenseArrayBase)
    sizes = opt_prop_def(DenseArrayBase)
    mode = opt_prop_def(StringAttr)
    coordinate_transformation_mode = opt_prop_def(StringAttr)
    nearest_mode = opt_prop_def(StringAttr)
    cubic_coeff_a = opt_prop_def(FloatAttr)
    exclude_outside = opt_prop_def(IntegerAttr)

    def interpolation(self) -> dict:
        """How each dim resamples: the keyword arguments of reference.resize."""
        return {
            "mode": self.str_("mode", "nearest"),
            "coordinate_mode": self.str_("coordinate_transformation_mode", "half_pixel"),
            "nearest_mode": self.str_("nearest_mode", "round_prefer_floor"),
            "cubic_coeff_a": self.float_("cubic_coeff_a", -0.75),
            "exclude_outside": bool(self.int_("exclude_outside", 0)),
        }

    def infer_shapes(self, ins: list[Shape]) -> list[Shape]:
        mode = self.str_("mode", "nearest")
        if mode not in RESIZE_MODES:
            raise ShapeError(f"unsupported mode '{mode}' (expected one of {', '.join(RESIZE_MODES)})")
        coord = self.str_("coordinate_transformation_mode", "half_pixel")
        if coord not in COORDINATE_MODES:
            raise ShapeError(
                f"unsupported coordinate_transformation_mode '{coord}' (expected one of {', '.join(COORDINATE_MODES)})"
            )
        if self.nearest_mode is not None:
            if mode != "nearest":
                raise ShapeError(f"nearest_mode needs mode nearest, not {mode}")
            if self.nearest_mode.data not in NEAREST_MODES:
                raise ShapeError(
                    f"unknown nearest_mode '{self.nearest_mode.data}' (expected one of {', '.join(NEAREST_MODES)})"
                )
        sizes = self.ints("sizes") if self.sizes is not None else None
        return [shapes.resize(ins[0], self.floats("scales"), sizes)]

    def infer_element_types(self, ins: list[Attribute]) -> list[Attribute | None]:
        mode = self.str_("mode", "nearest")
        if mode != "nearest" and not is_float(ins[0]):
            raise ShapeError(f"{mode} resizing needs a float tensor, got {ins[0]}")
        return [ins[0]]


@irdl_op_definition
class EinsumOp(GraphOp):
    """Einstein summation of one or two operands (ONNX Einsum, the matmul-like
    forms): each letter at most once per operand, `...` for broadcast batch
    dims, letters missing from the output summed over."""

    name = "graph.einsum"
    inputs = var_operand_def(TensorType)
    output = result_def(TensorType)
    equation = prop_def(StringAttr)

    def infer_shapes(self, ins: list[Shape]) -> list[Shape]:
        return [shapes.einsum(self.equation.data, ins)]

    def infer_element_types(self, ins: list[Attribute]) -> list[Attribute | None]:
        out = super().infer_element_types(ins)
        if ins[0] == i1:
            raise ShapeError(f"operands must be numbers, got {ins[0]}")
        return out


class ArgReduceOp(GraphOp, ABC):
    """The index (i64) of the extreme along `axis`: the first one, or the last
    with `select_last_index`."""

    input = operand_def(TensorType)
    output = result_def(TensorType)
    axis = opt_prop_def(IntegerAttr)
    keepdims = opt_prop_def(IntegerAttr)
    select_last_index = opt_prop_def(IntegerAttr)

    def infer_shapes(self, ins: list[Shape]) -> list[Shape]:
        x = ins[0]
        ax = shapes.normalize_axis(self.int_("axis", 0), len(x))
        if x[ax] == 0:
            raise ShapeError(f"axis {ax} of {shapes.fmt(x)} is empty")
        return [shapes.reduce(x, [ax], bool(self.int_("keepdims", 1)))]

    def infer_element_types(self, ins: list[Attribute]) -> list[Attribute | None]:
        return [i64]


@irdl_op_definition
class ArgMaxOp(ArgReduceOp):
    name = "graph.argmax"


@irdl_op_definition
class ArgMinOp(ArgReduceOp):
    name = "graph.argmin"


@irdl_op_definition
class TopKOp(GraphOp):
    """The `k` largest (or smallest, largest = 0) entries along `axis` and
    their i64 indices, sorted, equal values in index order (onnxruntime's
    tie break). ONNX's sorted = 0 allows any order, so sorted serves it."""

    name = "graph.topk"
    input = operand_def(TensorType)
    values = result_def(TensorType)
    indices = result_def(TensorType)
    k = prop_def(IntegerAttr)
    axis = opt_prop_def(IntegerAttr)
    largest = opt_prop_def(IntegerAttr)

    def infer_shapes(self, ins: list[Shape]) -> list[Shape]:
        out = shapes.top_k(ins[0], self.int_("axis", -1), self.int_("k", 0))
        return [out, out]

    def infer_element_types(self, ins: list[Attribute]) -> list[Attribute | None]:
        return [ins[0], i64]


@irdl_op_definition
class GatherElementsOp(GraphOp):
    """out[i][j][k] = input[indices[i][j][k]][j][k] for axis 0, and so on
    (ONNX GatherElements); negative indices count from the end."""

    name = "graph.gather_elements"
    input = operand_def(TensorType)
    indices = operand_def(TensorType)
    output = result_def(TensorType)
    axis = opt_prop_def(IntegerAttr)

    def infer_shapes(self, ins: list[Shape]) -> list[Shape]:
        return [shapes.gather_elements(ins[0], ins[1], self.int_("axis", 0))]

    def infer_element_types(self, ins: list[Attribute]) -> list[Attribute | None]:
        if not isinstance(ins[1], IntegerType) or ins[1] == i1:
            raise ShapeError(f"indices must be integers, got {ins[1]}")
        return [ins[0]]


@irdl_op_definition
class ReduceL2Op(ReduceOp):
    """sqrt(sum(x * x)) over `axes`."""

    name = "graph.reduce_l2"


@irdl_op_definition
class ReduceProdOp(ReduceOp):
    name = "graph.reduce_prod"


# ------------------------------------------------------------------ ops-C


@irdl_op_definition
class GatherNDOp(GraphOp):
    """Gather slices of `input` at the index tuples in the last dim of
    `indices` (ONNX GatherND): after the first `batch_dims` dims, which the
    two share, each tuple of m i64 indices picks input[..., i0, ..., im-1, :];
    the result is indices.shape[:-1] + input.shape[batch_dims + m:]. Negative
    indices count from the end."""

    name = "graph.gather_nd"
    input = operand_def(TensorType)
    indices = operand_def(TensorType)
    output = result_def(TensorType)
    batch_dims = opt_prop_def(IntegerAttr)

    def infer_shapes(self, ins: list[Shape]) -> list[Shape]:
        return [shapes.gather_nd(ins[0], ins[1], self.int_("batch_dims", 0))]

    def infer_element_types(self, ins: list[Attribute]) -> list[Attribute | None]:
        if ins[1] != i64:
            raise ShapeError(f"indices must be i64, got {ins[1]}")
        return [ins[0]]


# ------------------------------------------------------------------ fusion


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Terminates a graph.fusion body; its operands are the fusion's results."""

    name = "graph.yield"
    values = var_operand_def(TensorType)
    traits = lazy_traits_def(lambda: (IsTerminator(), HasParent(FusionOp), Pure()))
    assembly_format = "($values^ `:` type($values))? attr-dict"

    def __init__(self, *values: SSAValue):
        super().__init__(operands=[values])


@irdl_op_definition
class FusionOp(IRDLOperation):
    """A fused group of elementwise/broadcast ops (XLA-style loop fusion):
    one kernel that reads its operands once and writes only its results.
    The body's block arguments stand for the operands."""

    name = "graph.fusion"
    inputs = var_operand_def(TensorType)
    outputs = var_result_def(TensorType)
    body = region_def("single_block")
    traits = traits_def(Pure())
    assembly_format = "$inputs attr-dict `:` functional-type($inputs, $outputs) $body"

    def __init__(self, inputs: Sequence[SSAValue], result_types: Sequence[Attribute], body: Region):
        super().__init__(operands=[inputs], result_types=[result_types], regions=[body])

    def verify_(self) -> None:
        block = self.body.block
        if [a.type for a in block.args] != [o.type for o in self.inputs]:
            raise VerifyException(f"{describe_op(self)}: body arguments must match the operand types")
        term = block.last_op
        if not isinstance(term, YieldOp):
            raise VerifyException(f"{describe_op(self)}: body must end with graph.yield")
        if [v.type for v in term.values] != [r.type for r in self.outputs]:
            raise VerifyException(f"{describe_op(self)}: graph.yield types must match the result types")
        for op in block.ops:
            if op is not term and not isinstance(op, ElementwiseUnaryOp | ElementwiseBinaryOp | SumOp | WhereOp | FillOp | ConstantOp):
                raise VerifyException(
                    f"{describe_op(self)}: {op.name} cannot be fused into a loop fusion body"
                )


RESHAPING_OPS = (ReshapeOp, FlattenOp, SqueezeOp, UnsqueezeOp)
"""Ops that only change a tensor's shape."""
VIEW_OPS = RESHAPING_OPS + (IdentityOp,)
"""Ops that move no data: their result is their operand's bytes."""

Graph = Dialect(
    "graph",
    [
        ConstantOp,
        FillOp,
        ConvOp,
        ConvTransposeOp,
        BatchNormOp,
        MaxPoolOp,
        AvgPoolOp,
        GlobalAvgPoolOp,
        GlobalMaxPoolOp,
        LrnOp,
        MatMulOp,
        GemmOp,
        AttentionOp,
        SoftmaxOp,
        LogSoftmaxOp,
        LayerNormOp,
        ReluOp,
        LeakyReluOp,
        ClipOp,
        SigmoidOp,
        TanhOp,
        ErfOp,
        GeluOp,
        SqrtOp,
        ExpOp,
        LogOp,
        NegOp,
        AbsOp,
        ReciprocalOp,
        IdentityOp,
        EqualOp,
        LessOp,
        LessEqualOp,
        GreaterOp,
        GreaterEqualOp,
        AndOp,
        OrOp,
        XorOp,
        NotOp,
        IsNanOp,
        WhereOp,
        ModOp,
        SinOp,
        CosOp,
        SoftplusOp,
        HardSigmoidOp,
        HardSwishOp,
        ExpandOp,
        TileOp,
        TriluOp,
        CumSumOp,
        RangeOp,
        TransDataOp,
        CastOp,
        AddOp,
        SubOp,
        MulOp,
        DivOp,
        PowOp,
        MaxOp,
        MinOp,
        SumOp,
        ReduceMeanOp,
        ReduceSumOp,
        ReduceMaxOp,
        ReduceMinOp,
        ConcatOp,
        SplitOp,
        SliceOp,
        ReshapeOp,
        FlattenOp,
        TransposeOp,
        SpaceToDepthOp,
        SqueezeOp,
        UnsqueezeOp,
        GatherOp,
        ShapeOp,
        PadOp,
        InstanceNormOp,
        GroupNormOp,
        ResizeOp,
        EinsumOp,
        ArgMaxOp,
        ArgMinOp,
        TopKOp,
        GatherElementsOp,
        ReduceL2Op,
        ReduceProdOp,
        GatherNDOp,
        FusionOp,
        YieldOp,
        OffloadOp,
        ReloadOp,
    ],
    [],
)
