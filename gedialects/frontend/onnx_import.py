"""ONNX "parse mode": an ONNX model becomes `builtin.module { func.func @main }`
in the graph dialect.

Operator inputs that ONNX passes as tensors but that are really attributes
(Reshape's shape, Slice's starts, Unsqueeze's axes, Clip's bounds, ...) must be
constant at import; they become op properties. Every node whose inputs are
all constant is folded here, whatever its operator: with the reference
interpreter when it imports, with onnx's reference evaluator when the graph
dialect has no op for it (`_fold`), so the graph holds only real computation
and shape/mask arithmetic needs no graph op. Weights become `dense_resource`
blobs, splats `graph.fill`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import helper, numpy_helper
from xdsl.builder import Builder
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    NameLoc,
    StringAttr,
    TensorType,
    UnknownLoc,
    f16,
    f32,
    f64,
    i64,
)
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.rewriter import InsertPoint

from gedialects.frontend import validate as _validate
from gedialects.frontend.errors import FrontendError, NotConstantError
from gedialects.frontend.validate import validate_model
from gedialects.graph import ops as g
from gedialects.graph import shapes
from gedialects.graph.constants import materialize
from gedialects.graph.ops import int_array
from gedialects.graph.shapes import DYN, ShapeError
from gedialects.graph.tensors import element_type, numpy_dtype
from gedialects.location import name_loc

FOLD_LIMIT = 1 << 20
"""Results of all-constant nodes that import up to this many elements are
folded at import; bigger ones (a weight broadcast to a huge shape) stay ops.
Not a safety limit: that is `validate.MAX_TENSOR_ELEMENTS`, checked by
`_Importer.too_big` for every tensor whose shape the model or the command line gives
(nodes without a graph op fold whatever their size up to it)."""

_NEVER_FOLDED = frozenset({
    "Constant", "ConstantOfShape", "Shape",  # their importers make the constants
    "RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Multinomial", "Bernoulli",
})
"""Nodes never evaluated at import: constants already, or random."""

_ONNX_TO_NUMPY = {
    onnx.TensorProto.FLOAT: np.float32,
    onnx.TensorProto.FLOAT16: np.float16,
    onnx.TensorProto.DOUBLE: np.float64,
    onnx.TensorProto.INT64: np.int64,
    onnx.TensorProto.INT32: np.int32,
    onnx.TensorProto.INT16: np.int16,
    onnx.TensorProto.INT8: np.int8,
    onnx.TensorProto.UINT8: np.uint8,
    onnx.TensorProto.BOOL: np.bool_,
}

_FOLDED_DTYPES = frozenset(np.dtype(t) for t in _ONNX_TO_NUMPY.values())


def parse_input_shapes(spec: str) -> dict[str, list[int]]:
    """ATC's `--input-shape 'x:1,3,224,224;y:4,-1'` (-1 keeps a dim dynamic)."""
    out: dict[str, list[int]] = {}
    for item in filter(None, (s.strip() for s in spec.split(";"))):
        name, sep, dims = item.rpartition(":")
        if not sep or not name:
            raise FrontendError(f"--input-shape: '{item}' is not NAME:D0,D1,...")
        try:
            out[name] = [int(d) for d in dims.split(",") if d.strip()] if dims.strip() else []
        except ValueError:
            raise FrontendError(f"--input-shape: dims of '{name}' must be integers, got '{dims}'") from None
        for i, d in enumerate(out[name]):
            if d < -1:
                raise FrontendError(
                    f"--input-shape: dim {i} of '{name}' is {d}; a dim is >= 0, or -1 to keep it dynamic"
                )
        problem = _validate.size_problem(f"--input-shape: input '{name}'", out[name])
        if problem:
            raise FrontendError(problem)
    return out


def select_outputs(model: onnx.ModelProto, spec: str, source: str) -> onnx.ModelProto:
    """ATC's `--out_nodes 'node:0;other:1'`: the graph's outputs become those
    outputs of those nodes (by node name and output index), in that order."""
    nodes = {n.name: n for n in model.graph.node if n.name}
    chosen = []
    for item in filter(None, (x.strip() for x in spec.split(";"))):
        name, sep, index = item.rpartition(":")
        if not sep or not name or not index.isdigit():
            raise FrontendError(f"--out_nodes: '{item}' is not NODE:INDEX")
        if name not in nodes:
            raise FrontendError(f"{source}: --out_nodes: no node named '{name}'")
        outs = nodes[name].output
        if int(index) >= len(outs) or not outs[int(index)]:
            raise FrontendError(f"{source}: --out_nodes: node '{name}' has no output {index} ({len(outs)} outputs)")
        chosen.append(outs[int(index)])
    if not chosen:
        raise FrontendError("--out_nodes: no NODE:INDEX given")
    selected = onnx.ModelProto()
    selected.CopyFrom(model)
    del selected.graph.output[:]
    selected.graph.output.extend(onnx.helper.make_empty_tensor_value_info(v) for v in chosen)
    return selected


def load_model(path: str, data: bytes | None = None) -> onnx.ModelProto:
    try:
        if data is None:
            with open(path, "rb") as f:
                data = f.read()
        model = onnx.load_model_from_string(data)
    except OSError as e:
        raise FrontendError(f"{path}: cannot read: {e.strerror}") from None
    except Exception as e:  # protobuf raises DecodeError and friends
        raise FrontendError(f"{path}: not a valid ONNX model ({type(e).__name__}: {e})") from None
    if not model.graph.node and not model.graph.output:
        raise FrontendError(f"{path}: not a valid ONNX model (the graph is empty)")
    return model


def import_model(
    model: onnx.ModelProto,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    source: str = "model",
    bind: Mapping[str, np.ndarray] | None = None,
) -> ModuleOp:
    """The graph-dialect module of `model`. `bind` specialises the model to
    values of some graph inputs: they become constants, no longer inputs.
    The model is checked first (`validate.validate_model`)."""
    validate_model(model, source)
    importer = _Importer(model, dict(input_shapes or {}), source)
    importer.consts.update((name, np.asarray(v)) for name, v in (bind or {}).items())
    return importer.run()


@dataclass
class _Importer:
    model: onnx.ModelProto
    input_shapes: dict[str, Sequence[int]]
    source: str
    opset: int = 0
    consts: dict[str, np.ndarray] = field(default_factory=dict)
    used: set[str] = field(default_factory=set)
    values: dict[str, SSAValue] = field(default_factory=dict)
    builder: Builder | None = None
    node: onnx.NodeProto | None = None
    loc: Attribute = field(default_factory=UnknownLoc)

    # ------------------------------------------------------------- driver
    def run(self) -> ModuleOp:
        graph = self.model.graph
        self.opset = next(
            (o.version for o in self.model.opset_import if o.domain in ("", "ai.onnx")), 0
        )
        self.used = {n for node in graph.node for n in node.input} | {o.name for o in graph.output}
        bound = set(self.consts)
        unknown = bound - {i.name for i in graph.input}
        if unknown:
            raise FrontendError(f"{self.source}: cannot bind unknown input(s) {', '.join(sorted(unknown))}")
        for init in graph.initializer:
            if init.name not in bound:
                self.consts[init.name] = numpy_helper.to_array(init)
        inputs = [i for i in graph.input if i.name not in self.consts]
        unknown = set(self.input_shapes) - {i.name for i in inputs}
        if unknown:
            raise FrontendError(
                f"{self.source}: --input-shape names unknown input(s) {', '.join(sorted(unknown))}; "
                f"the inputs are {', '.join(i.name for i in inputs)}"
            )
        arg_types = [self._input_type(i) for i in inputs]
        block = Block(arg_types=arg_types)
        for arg, info in zip(block.args, inputs):
            self.values[info.name] = arg
        self.builder = Builder(InsertPoint.at_end(block))
        for index, node in enumerate(graph.node):
            self.node = node
            self.loc = name_loc(node.name or (node.output[0] if node.output else f"{node.op_type}_{index}"))
            self._import_node(node)
        results = [self.value(o.name) for o in graph.output]
        self.node = None
        self.builder.insert(func.ReturnOp(*results))
        fn = func.FuncOp(
            "main",
            (arg_types, [r.type for r in results]),
            Region(block),
            arg_attrs=ArrayAttr([DictionaryAttr({"ge.name": StringAttr(i.name)}) for i in inputs]),
            res_attrs=ArrayAttr([DictionaryAttr({"ge.name": StringAttr(o.name)}) for o in graph.output]),
        )
        fn.location = name_loc(graph.name or "main")
        return ModuleOp([fn])

    def _input_type(self, info: onnx.ValueInfoProto) -> TensorType:
        tt = info.type.tensor_type
        if not info.type.HasField("tensor_type"):
            raise FrontendError(f"{self.source}: input '{info.name}' is not a tensor")
        # A negative dim_value (-1 of some exporters) is a dynamic dim.
        dims = [d.dim_value if d.HasField("dim_value") and d.dim_value >= 0 else DYN for d in tt.shape.dim]
        if info.name in self.input_shapes:
            fixed = [DYN if d < 0 else d for d in self.input_shapes[info.name]]
            if tt.HasField("shape") and len(fixed) != len(dims):
                raise FrontendError(
                    f"{self.source}: --input-shape gives '{info.name}' rank {len(fixed)}, "
                    f"the model says rank {len(dims)}"
                )
            for i, (old, new) in enumerate(zip(dims, fixed)):
                if old != DYN and new not in (old, DYN):
                    raise FrontendError(
                        f"{self.source}: --input-shape sets dim {i} of '{info.name}' to {new}, "
                        f"the model fixes it to {old}"
                    )
            dims = [DYN if d < 0 else d for d in fixed]
        problem = _validate.size_problem(f"input '{info.name}'", [-1 if d == DYN else d for d in dims])
        if problem:
            raise FrontendError(f"{self.source}: {problem}")
        return TensorType(self._element(tt.elem_type, f"input '{info.name}'"), dims)

    def _element(self, onnx_type: int, what: str) -> Attribute:
        if onnx_type not in _ONNX_TO_NUMPY:
            name = onnx.TensorProto.DataType.Name(onnx_type) if onnx_type in onnx.TensorProto.DataType.values() else str(onnx_type)
            raise self.error(f"{what} has unsupported element type {name}")
        return element_type(np.dtype(_ONNX_TO_NUMPY[onnx_type]))

    # ------------------------------------------------------------ helpers
    def error(self, message: str) -> FrontendError:
        where = f" (node '{self.loc.desc.data}', {self.node.op_type}, opset {self.opset})" if self.node is not None and isinstance(self.loc, NameLoc) else ""
        return FrontendError(f"{self.source}: {message}{where}")

    def too_big(self, what: str, shape: Sequence[int] | int) -> None:
        """Refuse a tensor over `validate.MAX_TENSOR_ELEMENTS` elements
        (dynamic dims left out), before anything of its size exists."""
        if not isinstance(shape, int):
            shape = [-1 if d == DYN else int(d) for d in shape]
        problem = _validate.size_problem(what, shape)
        if problem:
            raise self.error(problem)

    def value(self, name: str) -> SSAValue:
        """The SSA value of an ONNX tensor, materialising constants on first use."""
        if name in self.values:
            return self.values[name]
        if name in self.consts:
            self.values[name] = self._materialize(name, self.consts[name])
            return self.values[name]
        raise self.error(f"tensor '{name}' is used before it is defined")

    def _materialize(self, name: str, array: np.ndarray) -> SSAValue:
        assert self.builder is not None
        return self.builder.insert(materialize(array, name, name_loc(name))).results[0]

    def const(self, name: str, what: str) -> np.ndarray:
        if name not in self.consts:
            raise NotConstantError(
                str(self.error(f"{what} must be a constant known at import (dynamic shapes are not supported here)")),
                name,
            )
        return self.consts[name]

    def inputs(self, node: onnx.NodeProto) -> list[str]:
        return list(node.input)

    def extra_outputs_used(self, node: onnx.NodeProto) -> bool:
        """Whether any output beyond the first feeds something."""
        return any(o and o in self.used for o in node.output[1:])

    def has_input(self, node: onnx.NodeProto, i: int) -> bool:
        return len(node.input) > i and node.input[i] != ""

    def define(self, node: onnx.NodeProto, results: Sequence[SSAValue]) -> None:
        for name, value in zip(node.output, results):
            if name:
                self.values[name] = value

    def emit(
        self,
        op_type: type[g.GraphOp],
        operands: Sequence[SSAValue | Sequence[SSAValue]],
        props: Mapping[str, Attribute] | None = None,
        num_results: int = 1,
        element: Attribute | None = None,
    ) -> list[SSAValue]:
        assert self.builder is not None
        try:
            op = op_type.build_inferred(
                operands, props, location=self.loc, num_results=num_results, element_type=element
            )
        except ShapeError as e:
            raise self.error(str(e)) from None
        for i, r in enumerate(op.results):
            if not isinstance(r.type, TensorType):
                continue
            node = self.node
            name = node.output[i] if node is not None and i < len(node.output) and node.output[i] else op.name
            self.too_big(f"tensor '{name}'", g.shape_of(r))
        self.builder.insert(op)
        return list(op.results)

    # ---------------------------------------------------------- dispatch
    def _import_node(self, node: onnx.NodeProto) -> None:
        if node.domain not in ("", "ai.onnx"):
            raise self.error(f"unsupported ONNX operator '{node.domain}::{node.op_type}' (custom domain)")
        importer = _IMPORTERS.get(node.op_type)
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        if self._fold(node, attrs, importer is not None):
            return
        if importer is None:
            raise self.error(f"unsupported ONNX operator '{node.op_type}'")
        importer(self, node, attrs)

    def _fold(self, node: onnx.NodeProto, attrs: dict, importable: bool) -> bool:
        """Evaluate a node whose inputs are all constant (constant folding at
        import, whatever the operator): with our own kernels when the node
        imports, else with onnx's reference evaluator. A node that imports
        stays in the graph when its result is too big to be worth a weight."""
        if node.op_type in _NEVER_FOLDED:
            return False
        names = [n for n in node.input if n]
        outer = _outer_scope_inputs(node)
        if not (names or outer) or not all(n in self.consts for n in (*names, *outer)):
            return False
        if importable and node.op_type in _FOLDABLE:
            results = self._fold_with_kernels(node, attrs, names)
            if results is not None:
                self.consts.update(results)
                return True
            return False
        if importable:
            return False
        self.consts.update(self._fold_with_onnx_reference(node, names, outer))
        return True

    def _fold_with_kernels(self, node: onnx.NodeProto, attrs: dict, names: list[str]) -> dict[str, np.ndarray] | None:
        """Import the node on its own into a scratch block and evaluate it with
        the reference interpreter; None when a result exceeds FOLD_LIMIT."""
        saved_builder, saved_values = self.builder, self.values
        scratch = Block()
        self.builder = Builder(InsertPoint.at_end(scratch))
        self.values = {}
        try:
            for n in names:
                self.values[n] = scratch.insert_arg(TensorType(element_type(self.consts[n].dtype), self.consts[n].shape), len(scratch.args))
            _IMPORTERS[node.op_type](self, node, attrs)
            produced = [self.values[o] for o in node.output if o in self.values]
            if any(shapes.num_elements(g.shape_of(v)) > FOLD_LIMIT for v in produced):
                return None
            env: dict[SSAValue, np.ndarray] = {a: self.consts[n] for n, a in zip(names, scratch.args)}
            # Imported here: the interpreter pulls in xDSL's interpreters (slow to load).
            from gedialects.graph.interpreter import evaluate

            for op in scratch.ops:
                outs = evaluate(op, [env[o] for o in op.operands])
                env.update(zip(op.results, outs))
            return {o: np.asarray(env[self.values[o]]) for o in node.output if o in self.values}
        finally:
            self.builder, self.values = saved_builder, saved_values
            for op in list(scratch.ops):
                op.detach()
                op.erase(safe_erase=False)

    def _fold_with_onnx_reference(self, node: onnx.NodeProto, names: list[str], outer: list[str]) -> dict[str, np.ndarray]:
        """Evaluate a node the graph dialect has no op for with onnx's
        reference evaluator (`onnx.reference`): the mask, position and shape
        arithmetic of exported transformers never needs a graph op."""
        from onnx.reference import ReferenceEvaluator

        feeds = {n: self.consts[n] for n in dict.fromkeys((*names, *outer))}
        outputs = [o for o in node.output if o]
        graph = helper.make_graph(
            [node],
            "fold",
            [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape) for n, v in feeds.items()],
            [helper.make_empty_tensor_value_info(o) for o in outputs],
        )
        model = helper.make_model(graph, opset_imports=list(self.model.opset_import), ir_version=self.model.ir_version)
        self._check_inferred_sizes(model, feeds)
        try:
            results = ReferenceEvaluator(model).run(None, {n: np.array(v) for n, v in feeds.items()})  # contiguous, rank kept
        except Exception as e:  # the evaluator raises whatever its kernels raise
            raise self.error(
                f"unsupported ONNX operator '{node.op_type}': its inputs are constant but "
                f"evaluating it failed ({type(e).__name__}: {e})"
            ) from None
        folded = {}
        for name, value in zip(outputs, results):
            value = np.asarray(value)
            self.too_big(f"constant result '{name}'", value.shape)
            if value.dtype not in _FOLDED_DTYPES:
                raise self.error(f"constant result '{name}' has element type {value.dtype}, which the graph dialect lacks")
            folded[name] = value
        return folded

    def _check_inferred_sizes(self, model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> None:
        """Refuse, before evaluating it, a fold whose results onnx's shape
        inference (given the small, shape-like constants) sizes beyond the
        limit: a OneHot depth or an EyeLike of 10**12 never gets allocated.
        Results it cannot size are checked once evaluated."""
        from onnx import shape_inference

        probe = onnx.ModelProto()
        probe.CopyFrom(model)
        probe.ir_version = max(probe.ir_version, 4)  # initializers need not be inputs
        small = [n for n, v in feeds.items() if v.size <= 4096 and v.dtype in _FOLDED_DTYPES]
        probe.graph.initializer.extend(numpy_helper.from_array(np.asarray(feeds[n]), n) for n in small)
        try:
            inferred = shape_inference.infer_shapes(probe, strict_mode=False, data_prop=True)
        except Exception:  # inference is only a pre-check here
            return
        for out in inferred.graph.output:
            dims = out.type.tensor_type.shape.dim
            if out.type.HasField("tensor_type") and all(d.HasField("dim_value") for d in dims):
                self.too_big(f"constant result '{out.name}'", [d.dim_value for d in dims])

    # ------------------------------------------------------ op importers
    def window_attrs(self, node: onnx.NodeProto, attrs: dict, spatial: Sequence[int], kernel: Sequence[int]) -> dict[str, Attribute]:
        n = len(kernel)
        strides = list(attrs.get("strides", [1] * n))
        dilations = list(attrs.get("dilations", [1] * n))
        pads = list(attrs.get("pads", [0] * (2 * n)))
        auto_pad = attrs.get("auto_pad", b"NOTSET")
        auto_pad = auto_pad.decode() if isinstance(auto_pad, bytes) else auto_pad
        if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            if not shapes.is_static(spatial):
                raise self.error(
                    f"auto_pad={auto_pad} needs static spatial dims, got {shapes.fmt(spatial)}; "
                    "fix them with --input-shape"
                )
            pads = shapes.same_pads(spatial, kernel, strides, dilations, auto_pad == "SAME_UPPER")
        elif auto_pad == "VALID":
            pads = [0] * (2 * n)
        elif auto_pad != "NOTSET":
            raise self.error(f"unknown auto_pad '{auto_pad}'")
        props: dict[str, Attribute] = {}
        if any(s != 1 for s in strides):
            props["strides"] = int_array(strides)
        if any(pads):
            props["pads"] = int_array(pads)
        if any(d != 1 for d in dilations):
            props["dilations"] = int_array(dilations)
        return props


def _outer_scope_inputs(node: onnx.NodeProto) -> list[str]:
    """Names a node's subgraphs (If/Loop/Scan bodies) read from outside them."""
    found: list[str] = []
    for attr in node.attribute:
        for sub in [attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs):
            local = {i.name for i in sub.input} | {t.name for t in sub.initializer}
            for inner in sub.node:
                local.update(inner.output)
            for inner in sub.node:
                found += [n for n in (*inner.input, *_outer_scope_inputs(inner)) if n and n not in local]
            found += [o.name for o in sub.output if o.name not in local]
    return list(dict.fromkeys(found))


def _i(v: int) -> IntegerAttr:
    return IntegerAttr(int(v), i64)


def _f(v: float) -> FloatAttr:
    return FloatAttr(float(v), f32)


_IMPORTERS: dict[str, Callable[[_Importer, onnx.NodeProto, dict], None]] = {}
_FOLDABLE: set[str] = set()


def onnx_op(*names: str, fold: bool = True):
    def register(fn):
        for n in names:
            _IMPORTERS[n] = fn
            if fold:
                _FOLDABLE.add(n)
        return fn

    return register


@onnx_op("Constant")
def _constant(im: _Importer, node, attrs):
    if "value" in attrs:
        array = numpy_helper.to_array(attrs["value"])
    elif "value_float" in attrs:
        array = np.array(attrs["value_float"], dtype=np.float32)
    elif "value_floats" in attrs:
        array = np.array(attrs["value_floats"], dtype=np.float32)
    elif "value_int" in attrs:
        array = np.array(attrs["value_int"], dtype=np.int64)
    elif "value_ints" in attrs:
        array = np.array(attrs["value_ints"], dtype=np.int64)
    else:
        raise im.error(f"Constant with attribute(s) {', '.join(attrs)} is not supported")
    im.consts[node.output[0]] = array


@onnx_op("ConstantOfShape")
def _constant_of_shape(im: _Importer, node, attrs):
    shape = _const_ints(im, node.input[0], "the shape of ConstantOfShape")
    if any(d < 0 for d in shape):
        raise im.error(f"the shape of ConstantOfShape {shape} has a negative dim")
    im.too_big(f"tensor '{node.output[0]}'", shape)
    value = numpy_helper.to_array(attrs["value"]) if "value" in attrs else np.zeros(1, np.float32)
    if value.size != 1:
        raise im.error(f"ConstantOfShape's value must have one element, got {value.size}")
    value = value.reshape(-1)[0]
    # A zero-stride view: a splat weight of any size costs no memory here.
    im.consts[node.output[0]] = np.broadcast_to(np.asarray(value), shape)


@onnx_op("Shape")
def _shape(im: _Importer, node, attrs):
    x = g.shape_of(im.value(node.input[0])) if node.input[0] not in im.consts else im.consts[node.input[0]].shape
    start, end = attrs.get("start", 0), attrs.get("end", None)
    if shapes.is_static(x):
        im.consts[node.output[0]] = np.array(x[start:end], dtype=np.int64)
        return
    if start != 0 or end is not None:
        raise im.error("Shape with start/end of a dynamic tensor is not supported")
    im.define(node, im.emit(g.ShapeOp, [im.value(node.input[0])]))


@onnx_op("Conv")
def _conv(im: _Importer, node, attrs):
    x, w = im.value(node.input[0]), im.value(node.input[1])
    xs, ws = g.shape_of(x), g.shape_of(w)
    props = im.window_attrs(node, attrs, xs[2:], attrs.get("kernel_shape", ws[2:]))
    if attrs.get("group", 1) != 1:
        props["group"] = _i(attrs["group"])
    bias = [im.value(node.input[2])] if im.has_input(node, 2) else []
    im.define(node, im.emit(g.ConvOp, [x, w, bias, []], props))


@onnx_op("ConvTranspose")
def _conv_transpose(im: _Importer, node, attrs):
    x, w = im.value(node.input[0]), im.value(node.input[1])
    xs, ws = g.shape_of(x), g.shape_of(w)
    n = len(xs) - 2
    kernel = list(attrs.get("kernel_shape", ws[2:]))
    strides = list(attrs.get("strides", [1] * n))
    dilations = list(attrs.get("dilations", [1] * n))
    out_pad = list(attrs.get("output_padding", [0] * n))
    pads = list(attrs.get("pads", [0] * (2 * n)))
    auto_pad = attrs.get("auto_pad", b"NOTSET")
    auto_pad = auto_pad.decode() if isinstance(auto_pad, bytes) else auto_pad
    if "output_shape" in attrs or auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        if not shapes.is_static(xs[2:]):
            raise im.error("ConvTranspose with output_shape/auto_pad needs static spatial dims; use --input-shape")
        target = list(attrs["output_shape"])[-n:] if "output_shape" in attrs else [xs[2 + i] * strides[i] for i in range(n)]
        pads = [0] * (2 * n)
        for i in range(n):
            total = strides[i] * (xs[2 + i] - 1) + out_pad[i] + (kernel[i] - 1) * dilations[i] + 1 - target[i]
            if total < 0:
                out_pad[i] += -total
                total = 0
            # SAME_UPPER puts the smaller half first; SAME_LOWER and NOTSET
            # (an explicit output_shape) the bigger half.
            upper = auto_pad == "SAME_UPPER"
            pads[i], pads[i + n] = (total // 2, total - total // 2) if upper else (total - total // 2, total // 2)
    props: dict[str, Attribute] = {}
    if any(s != 1 for s in strides):
        props["strides"] = int_array(strides)
    if any(pads):
        props["pads"] = int_array(pads)
    if any(d != 1 for d in dilations):
        props["dilations"] = int_array(dilations)
    if any(out_pad):
        props["output_padding"] = int_array(out_pad)
    if attrs.get("group", 1) != 1:
        props["group"] = _i(attrs["group"])
    bias = [im.value(node.input[2])] if im.has_input(node, 2) else []
    im.define(node, im.emit(g.ConvTransposeOp, [x, w, bias], props))


@onnx_op("BatchNormalization")
def _batch_norm(im: _Importer, node, attrs):
    if im.extra_outputs_used(node) or attrs.get("training_mode", 0):
        raise im.error("BatchNormalization in training mode (extra outputs) is not supported")
    props = {"epsilon": _f(attrs.get("epsilon", 1e-5))}
    x = im.value(node.input[0])
    # Opset 15 lets scale/bias and mean/var have other float types than x.
    params = [im.value(n) for n in node.input[1:5]]
    params = [
        p if g.element_type_of(p) == g.element_type_of(x) else im.emit(g.CastOp, [p], element=g.element_type_of(x))[0]
        for p in params
    ]
    im.define(node, im.emit(g.BatchNormOp, [x, *params], props))


def _unary(op_type: type[g.GraphOp]):
    def run(im: _Importer, node, attrs):
        im.define(node, im.emit(op_type, [im.value(node.input[0])]))

    return run


for _name, _op in [
    ("Relu", g.ReluOp),
    ("Sigmoid", g.SigmoidOp),
    ("Tanh", g.TanhOp),
    ("Erf", g.ErfOp),
    ("Sqrt", g.SqrtOp),
    ("Exp", g.ExpOp),
    ("Log", g.LogOp),
    ("Neg", g.NegOp),
    ("Abs", g.AbsOp),
    ("Reciprocal", g.ReciprocalOp),
    ("Identity", g.IdentityOp),
    ("GlobalAveragePool", g.GlobalAvgPoolOp),
    ("GlobalMaxPool", g.GlobalMaxPoolOp),
]:
    onnx_op(_name)(_unary(_op))


@onnx_op("Dropout")
def _dropout(im: _Importer, node, attrs):
    """Inference Dropout is the identity and its mask all ones. Training mode
    (opset >= 12's `training_mode` input) is random unless the ratio is 0."""
    x = im.value(node.input[0])
    if im.opset >= 12 and im.has_input(node, 2) and bool(im.const(node.input[2], "Dropout's training_mode")):
        ratio = float(im.const(node.input[1], "Dropout's ratio")) if im.has_input(node, 1) else 0.5
        if ratio != 0.0:
            raise im.error(
                f"Dropout in training mode (ratio {ratio}) is random and not supported; "
                "export the model for inference"
            )
    im.define(node, im.emit(g.IdentityOp, [x]))
    if im.extra_outputs_used(node):
        xs = g.shape_of(x)
        if not shapes.is_static(xs):
            raise im.error(f"Dropout's mask output needs a static shape, got {shapes.fmt(xs)}; use --input-shape")
        # Opset 10 made the mask boolean; before, it had the input's type.
        dtype = np.bool_ if im.opset >= 10 else numpy_dtype(g.element_type_of(x))
        im.consts[node.output[1]] = np.broadcast_to(np.ones((), dtype=dtype), xs)


@onnx_op("LeakyRelu")
def _leaky_relu(im: _Importer, node, attrs):
    props = {"alpha": _f(attrs.get("alpha", 0.01))}
    im.define(node, im.emit(g.LeakyReluOp, [im.value(node.input[0])], props))


@onnx_op("Clip")
def _clip(im: _Importer, node, attrs):
    x = im.value(node.input[0])
    # f32 bounds are exact for f32/f16 tensors; f64 and integer tensors
    # (int64 beyond 2**24) need f64 ones.
    bound_type = f32 if g.element_type_of(x) in (f32, f16) else f64
    props: dict[str, Attribute] = {}
    bounds: dict[str, float] = {}
    if im.opset < 11:
        for key in ("min", "max"):
            if key in attrs:
                bounds[key] = float(attrs[key])
    else:
        for i, key in ((1, "min"), (2, "max")):
            if im.has_input(node, i):
                v = im.const(node.input[i], f"Clip's {key}")
                if v.size != 1:
                    raise im.error(f"Clip's {key} must be a scalar, got shape {shapes.fmt(v.shape)}")
                bounds[key] = float(v.reshape(-1)[0])
    for key, bound in bounds.items():
        if np.isnan(bound):
            raise im.error(f"Clip's {key} is NaN; a bound must be a number (or left out)")
        props[key] = FloatAttr(bound, bound_type)
    im.define(node, im.emit(g.ClipOp, [x], props))


@onnx_op("Gelu")
def _gelu(im: _Importer, node, attrs):
    approx = attrs.get("approximate", b"none")
    approx = approx.decode() if isinstance(approx, bytes) else approx
    props = {"approximate": StringAttr(approx)} if approx != "none" else {}
    im.define(node, im.emit(g.GeluOp, [im.value(node.input[0])], props))


@onnx_op("Cast")
def _cast(im: _Importer, node, attrs):
    to = im._element(attrs["to"], "Cast target")
    im.define(node, im.emit(g.CastOp, [im.value(node.input[0])], element=to))


def _binary(op_type: type[g.GraphOp]):
    def run(im: _Importer, node, attrs):
        if attrs.get("broadcast") == 1 and "axis" in attrs:
            raise im.error("legacy broadcast with axis is not supported")
        im.define(node, im.emit(op_type, [im.value(node.input[0]), im.value(node.input[1])]))

    return run


for _name, _op in [("Add", g.AddOp), ("Sub", g.SubOp), ("Mul", g.MulOp), ("Div", g.DivOp), ("Pow", g.PowOp)]:
    onnx_op(_name)(_binary(_op))


def _variadic(op_type: type[g.GraphOp]):
    """Max/Min take any number of inputs: a left-to-right chain."""

    def run(im: _Importer, node, attrs):
        names = [n for n in node.input if n]
        acc = im.value(names[0])
        if len(names) == 1:
            acc = im.emit(g.IdentityOp, [acc])[0]
        for n in names[1:]:
            acc = im.emit(op_type, [acc, im.value(n)])[0]
        im.define(node, [acc])

    return run


onnx_op("Max")(_variadic(g.MaxOp))
onnx_op("Min")(_variadic(g.MinOp))


@onnx_op("Sum")
def _sum(im: _Importer, node, attrs):
    vals = [im.value(n) for n in node.input if n]
    if len(vals) == 1:
        im.define(node, im.emit(g.IdentityOp, vals))
    else:
        im.define(node, im.emit(g.SumOp, [vals]))


@onnx_op("MatMul")
def _matmul(im: _Importer, node, attrs):
    im.define(node, im.emit(g.MatMulOp, [im.value(node.input[0]), im.value(node.input[1]), []]))


@onnx_op("Gemm")
def _gemm(im: _Importer, node, attrs):
    props: dict[str, Attribute] = {}
    for key in ("transA", "transB"):
        if attrs.get(key, 0) not in (0, 1):
            raise im.error(f"Gemm's {key} must be 0 or 1, got {attrs[key]}")
        if attrs.get(key, 0):
            props["trans_a" if key == "transA" else "trans_b"] = _i(1)
    for key in ("alpha", "beta"):
        if attrs.get(key, 1.0) != 1.0:
            props[key] = _f(attrs[key])
    c = [im.value(node.input[2])] if im.has_input(node, 2) else []
    im.define(node, im.emit(g.GemmOp, [im.value(node.input[0]), im.value(node.input[1]), c], props))


def _softmax_like(op_type: type[g.GraphOp]):
    def run(im: _Importer, node, attrs):
        x = im.value(node.input[0])
        xs = g.shape_of(x)
        rank = len(xs)
        if im.opset >= 13:
            im.define(node, im.emit(op_type, [x], {"axis": _i(attrs.get("axis", -1))}))
            return
        # Before opset 13 the input is coerced to 2-d around `axis`.
        try:
            axis = shapes.normalize_axis(attrs.get("axis", 1), rank)
        except ShapeError as e:
            raise im.error(str(e)) from None
        if axis == rank - 1:
            im.define(node, im.emit(op_type, [x], {"axis": _i(-1)}))
            return
        flat = im.emit(g.FlattenOp, [x], {"axis": _i(axis)})[0]
        y = im.emit(op_type, [flat], {"axis": _i(1)})[0]
        if shapes.is_static(xs):
            target = list(xs)
        else:
            raise im.error("Softmax before opset 13 over several dynamic dims is not supported; use --input-shape")
        im.define(node, im.emit(g.ReshapeOp, [y], {"shape": int_array(target)}))

    return run


onnx_op("Softmax")(_softmax_like(g.SoftmaxOp))
onnx_op("LogSoftmax")(_softmax_like(g.LogSoftmaxOp))


@onnx_op("LayerNormalization")
def _layer_norm(im: _Importer, node, attrs):
    x = im.value(node.input[0])
    epsilon = attrs.get("epsilon", 1e-5)
    props = {"axis": _i(attrs.get("axis", -1)), "epsilon": _f(epsilon)}
    bias = [im.value(node.input[2])] if im.has_input(node, 2) else []
    im.define(node, im.emit(g.LayerNormOp, [x, im.value(node.input[1]), bias, []], props))
    if im.extra_outputs_used(node):
        _layer_norm_stats(im, node, x, attrs.get("axis", -1), epsilon, attrs.get("stash_type", onnx.TensorProto.FLOAT))


def _layer_norm_stats(im: _Importer, node, x: SSAValue, axis: int, epsilon: float, stash_type: int) -> None:
    """LayerNormalization's Mean and InvStdDev outputs (training graphs), in
    the stash type: reduce_mean(x) and 1 / sqrt(reduce_mean((x - mean)^2) + eps)."""
    rank = len(g.shape_of(x))
    try:
        axis = shapes.normalize_axis(axis, rank)
    except ShapeError as e:
        raise im.error(str(e)) from None
    stash = im._element(stash_type, "LayerNormalization's stash_type")
    if g.element_type_of(x) != stash:
        x = im.emit(g.CastOp, [x], element=stash)[0]
    reduce = {"axes": int_array(range(axis, rank)), "keepdims": _i(1)}
    mean = im.emit(g.ReduceMeanOp, [x], reduce)[0]
    centred = im.emit(g.SubOp, [x, mean])[0]
    var = im.emit(g.ReduceMeanOp, [im.emit(g.MulOp, [centred, centred])[0]], reduce)[0]
    eps_name = f"{node.output[0]}_epsilon"
    im.consts[eps_name] = np.array(epsilon, dtype=numpy_dtype(stash))
    std = im.emit(g.SqrtOp, [im.emit(g.AddOp, [var, im.value(eps_name)])[0]])[0]
    inv = im.emit(g.ReciprocalOp, [std])[0]
    for name, value in zip(node.output[1:3], (mean, inv)):
        if name:
            im.values[name] = value


_REDUCE_AXES_AS_INPUT = {"ReduceSum": 13, "ReduceMean": 18, "ReduceMax": 18, "ReduceMin": 18}


def _reduce(op_type: type[g.GraphOp], onnx_name: str):
    def run(im: _Importer, node, attrs):
        x = im.value(node.input[0])
        if im.opset >= _REDUCE_AXES_AS_INPUT[onnx_name]:
            axes = [int(a) for a in im.const(node.input[1], f"{onnx_name}'s axes")] if im.has_input(node, 1) else []
        else:
            axes = list(attrs.get("axes", []))
        if not axes and attrs.get("noop_with_empty_axes", 0):
            im.define(node, im.emit(g.IdentityOp, [x]))
            return
        props: dict[str, Attribute] = {"keepdims": _i(attrs.get("keepdims", 1))}
        if axes:
            props["axes"] = int_array(axes)
        im.define(node, im.emit(op_type, [x], props))

    return run


for _name, _op in [
    ("ReduceMean", g.ReduceMeanOp),
    ("ReduceSum", g.ReduceSumOp),
    ("ReduceMax", g.ReduceMaxOp),
    ("ReduceMin", g.ReduceMinOp),
]:
    onnx_op(_name)(_reduce(_op, _name))


def _pool(op_type: type[g.GraphOp]):
    def run(im: _Importer, node, attrs):
        if im.extra_outputs_used(node):
            raise im.error("MaxPool's Indices output is not supported")
        if attrs.get("storage_order", 0):
            raise im.error("MaxPool with storage_order=1 is not supported")
        x = im.value(node.input[0])
        kernel = list(attrs["kernel_shape"])
        props = im.window_attrs(node, attrs, g.shape_of(x)[2:], kernel)
        props["kernel_shape"] = int_array(kernel)
        if attrs.get("ceil_mode", 0):
            props["ceil_mode"] = _i(1)
        if attrs.get("count_include_pad", 0):
            props["count_include_pad"] = _i(1)
        im.define(node, im.emit(op_type, [x], props))

    return run


onnx_op("MaxPool")(_pool(g.MaxPoolOp))
onnx_op("AveragePool")(_pool(g.AvgPoolOp))


@onnx_op("LRN")
def _lrn(im: _Importer, node, attrs):
    props = {
        "size": _i(attrs["size"]),
        "alpha": _f(attrs.get("alpha", 1e-4)),
        "beta": _f(attrs.get("beta", 0.75)),
        "bias": _f(attrs.get("bias", 1.0)),
    }
    im.define(node, im.emit(g.LrnOp, [im.value(node.input[0])], props))


@onnx_op("Concat")
def _concat(im: _Importer, node, attrs):
    vals = [im.value(n) for n in node.input if n]
    im.define(node, im.emit(g.ConcatOp, [vals], {"axis": _i(attrs["axis"])}))


@onnx_op("Split")
def _split(im: _Importer, node, attrs):
    x = im.value(node.input[0])
    xs = g.shape_of(x)
    axis = attrs.get("axis", 0)
    if im.opset >= 13 and im.has_input(node, 1):
        sizes = [int(s) for s in im.const(node.input[1], "Split's sizes")]
    elif "split" in attrs:
        sizes = list(attrs["split"])
    else:
        try:
            extent = xs[shapes.normalize_axis(axis, len(xs))]
        except ShapeError as e:
            raise im.error(str(e)) from None
        if extent == DYN:
            raise im.error("Split into equal parts of a dynamic dim is not supported; use --input-shape")
        parts = attrs.get("num_outputs", len(node.output))
        chunk = -(-extent // parts)
        sizes = [min(chunk, extent - i * chunk) for i in range(parts)]
    im.define(node, im.emit(g.SplitOp, [x], {"axis": _i(axis), "split": int_array(sizes)}, num_results=len(sizes)))


@onnx_op("Slice")
def _slice(im: _Importer, node, attrs):
    x = im.value(node.input[0])
    if im.opset < 10:
        starts, ends = list(attrs["starts"]), list(attrs["ends"])
        axes = list(attrs.get("axes", range(len(starts))))
        steps = [1] * len(starts)
    else:
        starts = [int(v) for v in im.const(node.input[1], "Slice's starts")]
        ends = [int(v) for v in im.const(node.input[2], "Slice's ends")]
        axes = [int(v) for v in im.const(node.input[3], "Slice's axes")] if im.has_input(node, 3) else list(range(len(starts)))
        steps = [int(v) for v in im.const(node.input[4], "Slice's steps")] if im.has_input(node, 4) else [1] * len(starts)
    # int64 extremes mean "to the end"; keep them inside i64 printing range.
    clamp = lambda v: max(min(v, 2**62), -(2**62))  # noqa: E731
    props = {
        "starts": int_array([clamp(v) for v in starts]),
        "ends": int_array([clamp(v) for v in ends]),
        "axes": int_array(axes),
    }
    if any(s != 1 for s in steps):
        props["steps"] = int_array(steps)
    im.define(node, im.emit(g.SliceOp, [x], props))


@onnx_op("Reshape")
def _reshape(im: _Importer, node, attrs):
    x = im.value(node.input[0])
    if im.opset < 5:
        target = list(attrs["shape"])
    else:
        target = [int(v) for v in im.const(node.input[1], "Reshape's shape")]
    props: dict[str, Attribute] = {"shape": int_array(target)}
    if attrs.get("allowzero", 0):
        props["allowzero"] = _i(1)
    im.define(node, im.emit(g.ReshapeOp, [x], props))


@onnx_op("Flatten")
def _flatten(im: _Importer, node, attrs):
    im.define(node, im.emit(g.FlattenOp, [im.value(node.input[0])], {"axis": _i(attrs.get("axis", 1))}))


@onnx_op("Transpose")
def _transpose(im: _Importer, node, attrs):
    x = im.value(node.input[0])
    perm = list(attrs.get("perm", reversed(range(len(g.shape_of(x))))))
    im.define(node, im.emit(g.TransposeOp, [x], {"perm": int_array(perm)}))


@onnx_op("SpaceToDepth")
def _space_to_depth(im: _Importer, node, attrs):
    props = {"blocksize": _i(attrs["blocksize"]), "mode": StringAttr(_text(attrs, "mode", "DCR"))}  # mode: opset 24
    im.define(node, im.emit(g.SpaceToDepthOp, [im.value(node.input[0])], props))


def _axes_op(op_type: type[g.GraphOp], onnx_name: str):
    def run(im: _Importer, node, attrs):
        x = im.value(node.input[0])
        if im.opset >= 13:
            axes = [int(a) for a in im.const(node.input[1], f"{onnx_name}'s axes")] if im.has_input(node, 1) else None
        else:
            axes = list(attrs["axes"]) if "axes" in attrs else None
        if axes is None:
            xs = g.shape_of(x)
            if onnx_name == "Unsqueeze" or not shapes.is_static(xs):
                raise im.error(f"{onnx_name} without axes needs a static input shape")
            axes = [i for i, d in enumerate(xs) if d == 1]
        im.define(node, im.emit(op_type, [x], {"axes": int_array(axes)}))

    return run


onnx_op("Squeeze")(_axes_op(g.SqueezeOp, "Squeeze"))
onnx_op("Unsqueeze")(_axes_op(g.UnsqueezeOp, "Unsqueeze"))


@onnx_op("Gather")
def _gather(im: _Importer, node, attrs):
    props = {"axis": _i(attrs.get("axis", 0))}
    im.define(node, im.emit(g.GatherOp, [im.value(node.input[0]), im.value(node.input[1])], props))


# ---- ops-A: comparison, logic, selection

for _name, _op in [
    ("Equal", g.EqualOp),
    ("Less", g.LessOp),
    ("LessOrEqual", g.LessEqualOp),
    ("Greater", g.GreaterOp),
    ("GreaterOrEqual", g.GreaterEqualOp),
    ("And", g.AndOp),
    ("Or", g.OrOp),
    ("Xor", g.XorOp),
]:
    onnx_op(_name)(_binary(_op))

for _name, _op in [
    ("Not", g.NotOp),
    ("IsNaN", g.IsNanOp),
    ("Sin", g.SinOp),
    ("Cos", g.CosOp),
    ("Softplus", g.SoftplusOp),
    ("HardSwish", g.HardSwishOp),
]:
    onnx_op(_name)(_unary(_op))


def _const_ints(im: _Importer, name: str, what: str) -> list[int]:
    """A constant 1-d integer tensor (a shape, repeats) as a list."""
    v = im.const(name, what)
    if v.ndim != 1 or not np.issubdtype(v.dtype, np.integer):
        raise im.error(f"{what} must be a 1-d integer tensor, got {v.dtype} of shape {shapes.fmt(v.shape)}")
    return [int(d) for d in v]


def _const_int(im: _Importer, name: str, what: str) -> int:
    """A constant integer scalar (or one-element tensor)."""
    v = im.const(name, what)
    if v.size != 1 or v.ndim > 1 or not np.issubdtype(v.dtype, np.integer):
        raise im.error(f"{what} must be an integer scalar, got {v.dtype} of shape {shapes.fmt(v.shape)}")
    return int(v.reshape(-1)[0])


def _flag(im: _Importer, attrs: dict, key: str, default: int) -> int:
    v = attrs.get(key, default)
    if v not in (0, 1):
        raise im.error(f"{key} must be 0 or 1, got {v}")
    return int(v)


@onnx_op("Where")
def _where(im: _Importer, node, attrs):
    im.define(node, im.emit(g.WhereOp, [im.value(n) for n in node.input[:3]]))


@onnx_op("Mod")
def _mod(im: _Importer, node, attrs):
    # fmod = 0 on floats is Python's % (opset 28 defines it; before, it was invalid).
    props = {"fmod": _i(1)} if _flag(im, attrs, "fmod", 0) else {}
    im.define(node, im.emit(g.ModOp, [im.value(node.input[0]), im.value(node.input[1])], props))


@onnx_op("HardSigmoid")
def _hard_sigmoid(im: _Importer, node, attrs):
    props = {"alpha": _f(attrs.get("alpha", 0.2)), "beta": _f(attrs.get("beta", 0.5))}
    im.define(node, im.emit(g.HardSigmoidOp, [im.value(node.input[0])], props))


@onnx_op("Expand")
def _expand(im: _Importer, node, attrs):
    shape = _const_ints(im, node.input[1], "Expand's shape")
    im.define(node, im.emit(g.ExpandOp, [im.value(node.input[0])], {"shape": int_array(shape)}))


@onnx_op("Tile")
def _tile(im: _Importer, node, attrs):
    x = im.value(node.input[0])
    if im.opset < 6:
        # Tile-1: `tiles` copies along one `axis`.
        tiles = _const_int(im, node.input[1], "Tile's tiles")
        axis = _const_int(im, node.input[2], "Tile's axis")
        rank = len(g.shape_of(x))
        try:
            axis = shapes.normalize_axis(axis, rank)
        except ShapeError as e:
            raise im.error(str(e)) from None
        repeats = [tiles if i == axis else 1 for i in range(rank)]
    else:
        repeats = _const_ints(im, node.input[1], "Tile's repeats")
    im.define(node, im.emit(g.TileOp, [x], {"repeats": int_array(repeats)}))


@onnx_op("Trilu")
def _trilu(im: _Importer, node, attrs):
    props: dict[str, Attribute] = {}
    if not _flag(im, attrs, "upper", 1):
        props["upper"] = _i(0)
    k = _const_int(im, node.input[1], "Trilu's k") if im.has_input(node, 1) else 0
    if k:
        # |k| beyond any extent means "all" or "none": keep it printable.
        props["k"] = _i(max(min(k, 2**62), -(2**62)))
    im.define(node, im.emit(g.TriluOp, [im.value(node.input[0])], props))


@onnx_op("CumSum")
def _cumsum(im: _Importer, node, attrs):
    props: dict[str, Attribute] = {"axis": _i(_const_int(im, node.input[1], "CumSum's axis"))}
    for key in ("exclusive", "reverse"):
        if _flag(im, attrs, key, 0):
            props[key] = _i(1)
    im.define(node, im.emit(g.CumSumOp, [im.value(node.input[0])], props))


@onnx_op("Range", fold=False)
def _range(im: _Importer, node, attrs):
    """Constant operands fold here (the length is then known); otherwise a
    graph.range with a `?` result."""
    stash = attrs.get("stash_type", onnx.TensorProto.FLOAT)
    if stash not in (onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE):
        raise im.error(f"stash_type must be FLOAT (1) or DOUBLE (11), got {stash}")
    names = list(node.input[:3])
    if not all(n in im.consts for n in names):
        im.define(node, im.emit(g.RangeOp, [im.value(n) for n in names]))
        return
    from gedialects.graph.reference import range_

    vals = [np.asarray(im.consts[n]) for n in names]
    for what, v in zip(("start", "limit", "delta"), vals):
        if v.ndim:
            raise im.error(f"{what} must be a scalar, got shape {shapes.fmt(v.shape)}")
    if len({v.dtype for v in vals}) > 1:
        raise im.error("start, limit and delta mix element types " + ", ".join(str(v.dtype) for v in vals))
    if vals[2] == 0:
        raise im.error("delta must not be 0")
    start, limit, delta = (v.item() for v in vals)
    if not all(math.isfinite(v) for v in (start, limit, delta)):
        raise im.error(f"start {start}, limit {limit} and delta {delta} must be finite")
    if all(isinstance(v, int) for v in (start, limit, delta)):
        length = -((start - limit) // delta)  # ceil((limit - start) / delta)
    else:
        steps = (limit - start) / delta
        length = math.ceil(steps) if math.isfinite(steps) else 2**63
    im.too_big(f"tensor '{node.output[0]}'", max(length, 0))
    im.consts[node.output[0]] = range_(*vals)


# ---- ops-B: padding, normalisation, resampling, selection


def _text(attrs: dict, key: str, default: str) -> str:
    v = attrs.get(key, default)
    return v.decode() if isinstance(v, bytes) else v


def _scalar_attr(value, element: Attribute) -> Attribute:
    """A scalar property of a tensor's element type (Pad's fill value)."""
    from gedialects.graph.tensors import is_float

    if is_float(element):
        return FloatAttr(float(value), element)  # type: ignore[arg-type]
    return IntegerAttr(int(value), element)  # type: ignore[arg-type]


def _spread(im: _Importer, rank: int, axes: Sequence[int], values: Sequence, fill: Sequence, what: str) -> list:
    """Per-axis values given for `axes` (opset 18's axes input/attribute), as
    one entry per dim, `fill[d]` for the dims not listed."""
    try:
        axes = shapes.normalize_axes(axes, rank, f"{what} axes")
    except ShapeError as e:
        raise im.error(str(e)) from None
    if len(values) != len(axes):
        raise im.error(f"{what} has {len(values)} entries for {len(axes)} axes")
    out = list(fill)
    for a, v in zip(axes, values):
        out[a] = v
    return out


@onnx_op("Pad")
def _pad(im: _Importer, node, attrs):
    x = im.value(node.input[0])
    rank = len(g.shape_of(x))
    mode = _text(attrs, "mode", "constant")
    if mode not in g.PAD_MODES:
        raise im.error(f"Pad mode '{mode}' is not supported (expected one of {', '.join(g.PAD_MODES)})")
    if im.opset < 11:
        pads = list(attrs.get("pads", attrs.get("paddings", [])))
        value = attrs.get("value", 0.0)
    else:
        pads = _const_ints(im, node.input[1], "Pad's pads")
        value = 0
        if im.has_input(node, 2):
            v = im.const(node.input[2], "Pad's constant_value")
            if v.size != 1:
                raise im.error(f"Pad's constant_value must be a scalar, got shape {shapes.fmt(v.shape)}")
            value = v.reshape(-1)[0].item()
        if im.opset >= 18 and im.has_input(node, 3):
            axes = _const_ints(im, node.input[3], "Pad's axes")
            if len(pads) != 2 * len(axes):
                raise im.error(f"Pad's pads {pads} must have {2 * len(axes)} entries for axes {axes}")
            n = len(axes)
            pads = _spread(im, rank, axes, pads[:n], [0] * rank, "Pad's pads") + _spread(
                im, rank, axes, pads[n:], [0] * rank, "Pad's pads"
            )
    props: dict[str, Attribute] = {"pads": int_array(pads)}
    if mode != "constant":
        props["mode"] = StringAttr(mode)
    elif value != 0:
        props["value"] = _scalar_attr(value, g.element_type_of(x))
    im.define(node, im.emit(g.PadOp, [x], props))


@onnx_op("InstanceNormalization")
def _instance_norm(im: _Importer, node, attrs):
    operands = [im.value(n) for n in node.input[:3]]
    im.define(node, im.emit(g.InstanceNormOp, operands, {"epsilon": _f(attrs.get("epsilon", 1e-5))}))


@onnx_op("GroupNormalization")
def _group_norm(im: _Importer, node, attrs):
    """Opset 18 scales and shifts per group, opset 21 per channel: the op has
    opset 21's semantics, so an opset-18 scale/bias is repeated over each
    group's channels (in numpy when constant, else by a graph.gather)."""
    x = im.value(node.input[0])
    xs = g.shape_of(x)
    groups = int(attrs["num_groups"])
    props = {"num_groups": _i(groups), "epsilon": _f(attrs.get("epsilon", 1e-5))}
    params = list(node.input[1:3])
    if im.opset < 21:
        channels = xs[1] if len(xs) >= 2 else DYN
        if channels == DYN:
            raise im.error(
                "GroupNormalization before opset 21 needs a static channel dim to spread its "
                "per-group scale and bias; use --input-shape"
            )
        if groups < 1 or channels % groups:
            raise im.error(f"channels {channels} are not divisible by num_groups {groups}")
        index = np.repeat(np.arange(groups, dtype=np.int64), channels // groups)
        for i, name in enumerate(params):
            spread = f"{node.output[0]}_{'scale' if i == 0 else 'bias'}_per_channel"
            if name in im.consts:
                im.consts[spread] = np.asarray(im.consts[name])[index]
            else:
                im.consts[f"{spread}_index"] = index
                im.values[spread] = im.emit(g.GatherOp, [im.value(name), im.value(f"{spread}_index")], {"axis": _i(0)})[0]
            params[i] = spread
    im.define(node, im.emit(g.GroupNormOp, [x, *(im.value(n) for n in params)], props))


def _resize_props(
    im: _Importer,
    x: SSAValue,
    scales: list[float] | None,
    sizes: list[int] | None,
    coord: str,
    mode: str,
    nearest_mode: str | None,
    cubic_coeff_a: float = -0.75,
    exclude_outside: int = 0,
) -> dict[str, Attribute]:
    """The graph.resize properties: scales for every dim (from sizes when
    those are given, as onnxruntime computes them), sizes only when
    floor(extent * scale) does not give them."""
    xs = g.shape_of(x)
    if sizes is not None:
        for d, (i, o) in enumerate(zip(xs, sizes)):
            if i == DYN and o != DYN:
                raise im.error(f"Resize to sizes needs a static extent in dim {d} of {shapes.fmt(xs)}; use --input-shape")
        if scales is None:
            scales = [1.0 if i in (0, DYN) else float(np.float32(o) / np.float32(i)) for i, o in zip(xs, sizes)]
    assert scales is not None
    props: dict[str, Attribute] = {"scales": g.float_array(scales)}
    if sizes is not None:
        try:
            by_scale = shapes.resize(xs, scales, None)
        except ShapeError:
            by_scale = None
        if by_scale != tuple(sizes):
            if DYN in sizes:
                raise im.error(
                    f"Resize to sizes {shapes.fmt(sizes)} that floor(extent * scale) misses needs a static "
                    f"input, got {shapes.fmt(xs)}; use --input-shape"
                )
            props["sizes"] = int_array(sizes)
    props["mode"] = StringAttr(mode)
    props["coordinate_transformation_mode"] = StringAttr(coord)
    if mode == "nearest" and nearest_mode is not None:
        props["nearest_mode"] = StringAttr(nearest_mode)
    if mode == "cubic":
        props["cubic_coeff_a"] = FloatAttr(cubic_coeff_a, f64)
        props["exclude_outside"] = IntegerAttr(int(exclude_outside), i64)
    return props


def _legacy_nearest_mode(im: _Importer, scales: Sequence[float]) -> str:
    """Upsample and Resize-10 round a nearest coordinate down when upsampling
    and up when downsampling (onnxruntime's legacy rule), per dim."""
    up = any(s > 1 for s in scales)
    down = any(s < 1 for s in scales)
    if up and down:
        raise im.error(f"nearest resizing before opset 11 that up- and downsamples at once (scales {list(scales)}) is not supported")
    return "ceil" if down else "floor"


def _resample(im: _Importer, node, attrs, scales: list[float], what: str) -> None:
    """Upsample and Resize-10: asymmetric coordinates, scales only."""
    x = im.value(node.input[0])
    mode = _text(attrs, "mode", "nearest")
    if mode not in ("nearest", "linear"):
        raise im.error(f"{what} mode '{mode}' is not supported (expected nearest or linear)")
    if len(scales) != len(g.shape_of(x)):
        raise im.error(f"{what}'s scales {scales} must have one entry per dim of {shapes.fmt(g.shape_of(x))}")
    nearest = _legacy_nearest_mode(im, scales) if mode == "nearest" else None
    im.define(node, im.emit(g.ResizeOp, [x], _resize_props(im, x, scales, None, "asymmetric", mode, nearest)))


def _const_floats(im: _Importer, name: str, what: str) -> list[float]:
    v = im.const(name, what)
    if v.ndim != 1 or not np.issubdtype(v.dtype, np.floating):
        raise im.error(f"{what} must be a 1-d float tensor, got {v.dtype} of shape {shapes.fmt(v.shape)}")
    return [float(s) for s in v]


def _check_resized_length(im: _Importer, xs: Sequence[int], scales: Sequence[float], coord: str) -> None:
    """align_corners (and pytorch_half_pixel for a 1-cell result) use the
    resized length. Given scales, the spec and onnxruntime (whom graph.resize
    follows) take the integer output extent, onnx's reference implementation
    the fractional extent * scale: refuse what the two read differently."""
    for d, (i, s) in enumerate(zip(xs, scales)):
        if i == DYN or coord not in ("align_corners", "pytorch_half_pixel"):
            continue
        exact = float(np.float32(i) * np.float32(s))
        out = int(np.floor(exact))
        if exact != out and (coord == "align_corners" or out == 1):
            raise im.error(
                f"Resize {coord} by scale {s} makes a fractional length {exact:g} of dim {d}, which "
                f"onnxruntime and onnx's reference resolve differently; give sizes instead of scales"
            )


@onnx_op("Upsample")
def _upsample(im: _Importer, node, attrs):
    scales = list(attrs["scales"]) if im.opset < 9 else _const_floats(im, node.input[1], "Upsample's scales")
    _resample(im, node, attrs, [float(np.float32(s)) for s in scales], "Upsample")


@onnx_op("Resize")
def _resize(im: _Importer, node, attrs):
    if im.opset < 11:
        _resample(im, node, attrs, _const_floats(im, node.input[1], "Resize's scales"), "Resize")
        return
    x = im.value(node.input[0])
    xs = g.shape_of(x)
    rank = len(xs)
    mode = _text(attrs, "mode", "nearest")
    if mode not in g.RESIZE_MODES:
        raise im.error(f"Resize mode '{mode}' is not supported (expected one of {', '.join(g.RESIZE_MODES)})")
    coord = _text(attrs, "coordinate_transformation_mode", "half_pixel")
    if coord not in g.COORDINATE_MODES:
        raise im.error(
            f"Resize coordinate_transformation_mode '{coord}' is not supported "
            f"(expected one of {', '.join(g.COORDINATE_MODES)})"
        )
    if attrs.get("antialias", 0):
        raise im.error("Resize with antialias=1 is not supported")
    nearest_mode = _text(attrs, "nearest_mode", "round_prefer_floor")
    if nearest_mode not in g.NEAREST_MODES:
        raise im.error(f"Resize nearest_mode '{nearest_mode}' is not supported (expected one of {', '.join(g.NEAREST_MODES)})")
    cubic = (float(attrs.get("cubic_coeff_a", -0.75)), int(attrs.get("exclude_outside", 0)))
    scales = _const_floats(im, node.input[2], "Resize's scales") if im.has_input(node, 2) else []
    sizes = _const_ints(im, node.input[3], "Resize's sizes") if im.has_input(node, 3) else []
    if bool(scales) == bool(sizes):
        raise im.error("Resize needs exactly one of scales and sizes")
    axes = list(range(rank))
    if "axes" in attrs:
        try:
            axes = shapes.normalize_axes(list(attrs["axes"]), rank, "Resize's axes")
        except ShapeError as e:
            raise im.error(str(e)) from None
    policy = _text(attrs, "keep_aspect_ratio_policy", "stretch")
    if policy not in ("stretch", "not_larger", "not_smaller"):
        raise im.error(f"Resize keep_aspect_ratio_policy '{policy}' is not supported (expected stretch, not_larger or not_smaller)")
    if scales:
        full = _spread(im, rank, axes, scales, [1.0] * rank, "Resize's scales")
        _check_resized_length(im, xs, full, coord)
        im.define(node, im.emit(g.ResizeOp, [x], _resize_props(im, x, full, None, coord, mode, nearest_mode, *cubic)))
        return
    out = _spread(im, rank, axes, sizes, list(xs), "Resize's sizes")
    if policy != "stretch":
        if any(xs[a] == DYN for a in axes):
            raise im.error(f"keep_aspect_ratio_policy needs static extents, got {shapes.fmt(xs)}; use --input-shape")
        ratios = [np.float32(out[a]) / np.float32(xs[a]) for a in axes]
        scale = min(ratios) if policy == "not_larger" else max(ratios)
        for a in axes:
            out[a] = int(np.floor(scale * np.float32(xs[a]) + np.float32(0.5)))  # std::roundf
        full = [float(scale) if a in axes else 1.0 for a in range(rank)]
        im.define(node, im.emit(g.ResizeOp, [x], _resize_props(im, x, full, out, coord, mode, nearest_mode, *cubic)))
        return
    im.define(node, im.emit(g.ResizeOp, [x], _resize_props(im, x, None, out, coord, mode, nearest_mode, *cubic)))


@onnx_op("Einsum")
def _einsum(im: _Importer, node, attrs):
    equation = _text(attrs, "equation", "").replace(" ", "")
    operands = [im.value(n) for n in node.input if n]
    im.define(node, im.emit(g.EinsumOp, [operands], {"equation": StringAttr(equation)}))


def _arg_reduce(op_type: type[g.GraphOp]):
    def run(im: _Importer, node, attrs):
        props = {"axis": _i(attrs.get("axis", 0)), "keepdims": _i(attrs.get("keepdims", 1))}
        if attrs.get("select_last_index", 0):
            props["select_last_index"] = _i(1)
        im.define(node, im.emit(op_type, [im.value(node.input[0])], props))

    return run


onnx_op("ArgMax")(_arg_reduce(g.ArgMaxOp))
onnx_op("ArgMin")(_arg_reduce(g.ArgMinOp))


@onnx_op("TopK")
def _topk(im: _Importer, node, attrs):
    """k is an attribute before opset 10, a constant input since; sorted = 0
    (any order) is served by the sorted result."""
    k = int(attrs["k"]) if im.opset < 10 else _const_int(im, node.input[1], "TopK's k")
    props = {"k": _i(k), "axis": _i(attrs.get("axis", -1))}
    if not attrs.get("largest", 1):
        props["largest"] = _i(0)
    im.define(node, im.emit(g.TopKOp, [im.value(node.input[0])], props, num_results=2))


@onnx_op("GatherElements")
def _gather_elements(im: _Importer, node, attrs):
    props = {"axis": _i(attrs.get("axis", 0))}
    im.define(node, im.emit(g.GatherElementsOp, [im.value(node.input[0]), im.value(node.input[1])], props))


_REDUCE_AXES_AS_INPUT.update({"ReduceL2": 18, "ReduceProd": 18})
onnx_op("ReduceL2")(_reduce(g.ReduceL2Op, "ReduceL2"))
onnx_op("ReduceProd")(_reduce(g.ReduceProdOp, "ReduceProd"))


# ---- ops-C: GatherND, CastLike, Size


@onnx_op("GatherND")
def _gather_nd(im: _Importer, node, attrs):
    """Opset 11 has no batch_dims (it is 0); 12 and 13 add it."""
    props = {"batch_dims": _i(attrs.get("batch_dims", 0))}
    im.define(node, im.emit(g.GatherNDOp, [im.value(node.input[0]), im.value(node.input[1])], props))


@onnx_op("CastLike")
def _cast_like(im: _Importer, node, attrs):
    """graph.cast to the element type of input 1, whose value is never read
    (a constant one is not materialised). A constant input 0 folds whatever
    input 1 is: the expanded functions cast constants like -inf to the type
    of a graph input, and the result feeds inputs that must be constant
    (Pad's constant_value)."""
    like = node.input[1]
    if like not in im.consts:
        to = g.element_type_of(im.value(like))
    else:
        try:
            to = element_type(im.consts[like].dtype)
        except ValueError:
            raise im.error(f"CastLike target '{like}' has unsupported element type {im.consts[like].dtype}") from None
    x = node.input[0]
    if x in im.consts and im.consts[x].size <= FOLD_LIMIT:
        im.consts[node.output[0]] = np.asarray(im.consts[x]).astype(numpy_dtype(to))  # graph.cast's kernel
        return
    im.define(node, im.emit(g.CastOp, [im.value(x)], element=to))


@onnx_op("Size", fold=False)
def _size(im: _Importer, node, attrs):
    """The element count, a 0-d i64 constant: the shape must be static."""
    name = node.input[0]
    x = im.consts[name].shape if name in im.consts else g.shape_of(im.value(name))
    if not shapes.is_static(x):
        raise im.error(f"Size of a tensor of dynamic shape {shapes.fmt(x)} is not supported; fix it with --input-shape")
    im.consts[node.output[0]] = np.array(shapes.num_elements(x), dtype=np.int64)


SUPPORTED_OPS = frozenset(_IMPORTERS)
"""ONNX operator types of the default domain that import."""
