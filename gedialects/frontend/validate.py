"""Checks an ONNX model against what onnx itself documents, before import.

A hostile or broken model must be refused at its root with one line naming
the file, the node (its op type and opset) or tensor, and what is wrong,
never reach the importer as a KeyError, a numpy reshape error, a
MemoryError or a hang. `validate_model` checks, from onnx's own tables:

* the IR version (3 .. `onnx.IR_VERSION`) and the opset of every domain
  onnx knows (`onnx.defs`' version map); one opset per domain;
* every node of the default domain against its schema for the model's
  opset (`onnx.defs.get_schema`): input and output counts (optional and
  variadic parameters), no empty name for a required one, attribute names
  the schema knows, attribute types equal to the schema's, required
  attributes present; nodes of subgraphs (If/Loop/Scan bodies) likewise;
* tensors (initializers, tensor attributes): a known element type,
  non-negative dims, data of exactly prod(dims) elements (raw_data bytes or
  the typed field's entries), no external data (no file is ever read);
* values: graph inputs, initializers and node outputs define each name
  once, every node input is defined before it is used, graph outputs are
  defined and listed once.

`MAX_TENSOR_ELEMENTS` is the one size limit of the frontend: the importer
checks any shape that comes from the model or the command line against it
(`size_problem`) before anything of that shape is allocated.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import onnx
from onnx import AttributeProto, TensorProto, defs, helper

from gedialects.frontend.errors import FrontendError

MAX_TENSOR_ELEMENTS = 1 << 28
"""The most elements one tensor of an imported model may have (1 GiB of
f32): graph inputs (also as fixed by --input-shape), ConstantOfShape,
Range and every folded constant, every graph-op result of static shape
(Expand, Tile, Pad, Resize, ...). Beyond it the model is refused, naming
the tensor and its size, before anything of that size is allocated."""

MIN_IR_VERSION = 3
"""The oldest IR version imported: opset imports exist from IR version 3 on."""

_DEFAULT_DOMAINS = ("", "ai.onnx")

_SUB_BYTE_BITS = {
    TensorProto.INT4: 4, TensorProto.UINT4: 4, TensorProto.FLOAT4E2M1: 4,
    TensorProto.INT2: 2, TensorProto.UINT2: 2,
}
for _name in ("FLOAT6E2M3", "FLOAT6E3M2"):
    if hasattr(TensorProto, _name):
        _SUB_BYTE_BITS[getattr(TensorProto, _name)] = 6
_COMPLEX = {TensorProto.COMPLEX64, TensorProto.COMPLEX128}


FLAG_ATTRIBUTES = frozenset({
    "keepdims", "noop_with_empty_axes", "select_last_index", "ceil_mode", "count_include_pad",
    "exclusive", "reverse", "upper", "largest", "sorted", "transA", "transB", "allowzero",
    "training_mode", "fmod", "detect_negative", "detect_positive", "center_point_box",
})
"""Integer attributes the operator specs define as booleans (0 or 1). The
schemas type them only as int; runtimes disagree on other values
(onnxruntime reads keepdims=-3 as false), so they are refused."""


def size_problem(what: str, shape: Sequence[int] | int) -> str | None:
    """Why a tensor of `shape` (or of that many elements) may not exist, or
    None. Dynamic (negative) dims are left out of the count."""
    if isinstance(shape, int):
        count, dims = shape, None
    else:
        dims = [int(d) for d in shape]
        count = math.prod(d for d in dims if d >= 0)
    if count <= MAX_TENSOR_ELEMENTS:
        return None
    of = "x".join("?" if d < 0 else str(d) for d in dims) + " = " if dims is not None and len(dims) > 1 else ""
    return (
        f"{what} of {of}{count} elements exceeds the limit of {MAX_TENSOR_ELEMENTS} elements "
        "per tensor (MAX_TENSOR_ELEMENTS)"
    )


def validate_model(model: onnx.ModelProto, source: str = "model") -> None:
    """Raise a one-line FrontendError for the first thing wrong in `model`."""
    _Validator(source).model(model)


def _type_name(t: int) -> str:
    try:
        return AttributeProto.AttributeType.Name(t).lower()
    except ValueError:
        return f"type {t}"


def _dtype_name(t: int) -> str:
    try:
        return TensorProto.DataType.Name(t)
    except ValueError:
        return str(t)


def _count(n: int, what: str) -> str:
    return f"{n} {what}" if n == 1 else f"{n} {what}s"


def _range(lo: int, hi: int, what: str) -> str:
    if lo == hi:
        return _count(lo, what)
    if hi >= 2**31 - 1:
        return f"at least {_count(lo, what)}"
    return f"{lo} to {hi} {what}s"


class _Validator:
    def __init__(self, source: str) -> None:
        self.source = source
        self.opset = 0
        self.schemas: dict[str, tuple[defs.OpSchema | None, str]] = {}

    def fail(self, message: str) -> FrontendError:
        return FrontendError(f"{self.source}: {message}")

    # ------------------------------------------------------------ model
    def model(self, model: onnx.ModelProto) -> None:
        ir = model.ir_version
        if not MIN_IR_VERSION <= ir <= onnx.IR_VERSION:
            raise self.fail(
                f"IR version {ir} is not supported (expected {MIN_IR_VERSION} to {onnx.IR_VERSION}, "
                f"those of onnx {onnx.__version__})"
            )
        known = _domain_versions()
        seen: dict[str, int] = {}
        for imp in model.opset_import:
            domain = "" if imp.domain == "ai.onnx" else imp.domain
            if domain in seen:
                raise self.fail(f"opset_import lists domain '{imp.domain}' twice")
            seen[domain] = imp.version
            if domain in known:
                lo, hi = known[domain]
                if not lo <= imp.version <= hi:
                    label = "the default ONNX domain" if domain == "" else f"domain '{domain}'"
                    raise self.fail(
                        f"opset {imp.version} of {label} is not supported (expected {lo} to {hi}, "
                        f"those of onnx {onnx.__version__})"
                    )
        self.opset = seen.get("", 0)
        if not self.opset and _uses_default_domain(model.graph):
            raise self.fail("the model imports no opset of the default ONNX domain (opset_import)")
        self.graph(model.graph, set(), "")

    # ------------------------------------------------------------ graph
    def graph(self, graph: onnx.GraphProto, outer: set[str], path: str) -> None:
        where = f" of subgraph '{path.rstrip('/')}'" if path else ""
        if graph.sparse_initializer:
            name = graph.sparse_initializer[0].values.name
            raise self.fail(f"sparse initializer '{name}'{where} is not supported")
        inputs: set[str] = set()
        for info in graph.input:
            if not info.name:
                raise self.fail(f"a graph input{where} has no name")
            if info.name in inputs:
                raise self.fail(f"graph input '{info.name}'{where} is listed twice")
            inputs.add(info.name)
        inits: set[str] = set()
        for init in graph.initializer:
            if not init.name:
                raise self.fail(f"an initializer{where} has no name")
            if init.name in inits:
                raise self.fail(f"initializer '{init.name}'{where} is defined twice")
            inits.add(init.name)
            self.tensor(init, f"initializer '{init.name}'")
        defined = outer | inputs | inits
        producer = {n: "a graph input" for n in inputs} | {n: "an initializer" for n in inits}
        for index, node in enumerate(graph.node):
            name = path + (node.name or (node.output[0] if node.output and node.output[0] else f"{node.op_type}_{index}"))
            self.node(node, name, defined)
            for out in node.output:
                if not out:
                    continue
                if out in producer or out in outer:
                    by = producer.get(out, "the enclosing graph")
                    raise self.fail(
                        f"value '{out}' is defined twice: by {by} and as an output of node '{name}' ({node.op_type}); "
                        "ONNX values are defined once"
                    )
                producer[out] = f"node '{name}' ({node.op_type})"
                defined.add(out)
        if not graph.output and not path:
            raise self.fail("the graph has no outputs")
        listed: set[str] = set()
        for out in graph.output:
            if out.name in listed:
                raise self.fail(f"graph output '{out.name}'{where} is listed twice")
            listed.add(out.name)
            if out.name not in defined:
                raise self.fail(f"graph output '{out.name}'{where} is not defined by any node, input or initializer")

    # ------------------------------------------------------------- node
    def node(self, node: onnx.NodeProto, name: str, defined: set[str]) -> None:
        default = node.domain in _DEFAULT_DOMAINS
        where = f"node '{name}' ({node.op_type}, opset {self.opset})" if default else f"node '{name}' ({node.domain}::{node.op_type})"

        def bad(message: str) -> FrontendError:
            return self.fail(f"{where}: {message}")

        for i, inp in enumerate(node.input):
            if inp and inp not in defined:
                raise bad(f"input {i} '{inp}' is not defined by a graph input, an initializer or an earlier node")
        schema = self.schema(node.op_type, bad) if default else None
        if schema is not None:
            self.arity(node.input, schema.inputs, schema.min_input, schema.max_input, "input", bad)
            self.arity(node.output, schema.outputs, schema.min_output, schema.max_output, "output", bad)
        names: set[str] = set()
        for attr in node.attribute:
            if attr.name in names:
                raise bad(f"attribute '{attr.name}' is given twice")
            names.add(attr.name)
            self.attribute(attr, schema, bad)
            for i, sub in enumerate(_subgraphs(attr)):
                suffix = f"[{i}]" if attr.type == AttributeProto.GRAPHS else ""
                self.graph(sub, set(defined), f"{name}/{attr.name}{suffix}/")
        if schema is not None:
            for key, spec in schema.attributes.items():
                if spec.required and key not in names:
                    raise bad(f"required attribute '{key}' is missing")

    def schema(self, op_type: str, bad) -> defs.OpSchema | None:
        """The schema of a default-domain operator at the model's opset; None
        for operators onnx does not know (the importer names them unsupported)."""
        if op_type not in self.schemas:
            self.schemas[op_type] = _schema(op_type, self.opset)
        schema, problem = self.schemas[op_type]
        if problem:
            raise bad(problem)
        return schema

    @staticmethod
    def arity(names: Sequence[str], params: Sequence, lo: int, hi: int, what: str, bad) -> None:
        if not lo <= len(names) <= hi:
            raise bad(f"takes {_range(lo, hi, what)}, got {len(names)}")
        for i, n in enumerate(names):
            if i >= len(params):
                break  # a variadic last parameter (the count is checked)
            if not n and params[i].option == defs.OpSchema.FormalParameterOption.Single:
                raise bad(f"{what} {i} ('{params[i].name}') is required but its name is empty")

    def attribute(self, attr: AttributeProto, schema: defs.OpSchema | None, bad) -> None:
        if attr.ref_attr_name:
            raise bad(f"attribute '{attr.name}' refers to a function attribute ('{attr.ref_attr_name}') outside a function")
        if attr.type == AttributeProto.UNDEFINED or attr.type not in AttributeProto.AttributeType.values():
            raise bad(f"attribute '{attr.name}' has no valid type ({_type_name(attr.type)})")
        if schema is not None:
            spec = schema.attributes.get(attr.name)
            if spec is None:
                if not attr.name.startswith("__"):  # onnx's checker lets internal names pass
                    known = ", ".join(sorted(schema.attributes)) or "none"
                    raise bad(f"attribute '{attr.name}' is not an attribute of {schema.name}-{schema.since_version} (it has: {known})")
            elif spec.type.value != attr.type:
                raise bad(f"attribute '{attr.name}' must be {_type_name(spec.type.value)}, got {_type_name(attr.type)}")
            elif attr.name in FLAG_ATTRIBUTES and attr.type == AttributeProto.INT and attr.i not in (0, 1):
                raise bad(f"attribute '{attr.name}' is a flag: 0 or 1, got {attr.i}")
        if attr.type == AttributeProto.STRING:
            try:
                attr.s.decode("utf-8")
            except UnicodeDecodeError:
                raise bad(f"attribute '{attr.name}' is not a UTF-8 string") from None
        elif attr.type == AttributeProto.STRINGS:
            for s in attr.strings:
                try:
                    s.decode("utf-8")
                except UnicodeDecodeError:
                    raise bad(f"attribute '{attr.name}' holds a string that is not UTF-8") from None
        elif attr.type == AttributeProto.TENSOR:
            self.tensor(attr.t, f"tensor of attribute '{attr.name}'", bad)
        elif attr.type == AttributeProto.TENSORS:
            for i, t in enumerate(attr.tensors):
                self.tensor(t, f"tensor {i} of attribute '{attr.name}'", bad)

    # ----------------------------------------------------------- tensor
    def tensor(self, t: TensorProto, what: str, bad=None) -> None:
        def fail(message: str) -> FrontendError:
            return bad(f"{what} {message}") if bad is not None else self.fail(f"{what} {message}")

        if t.data_location == TensorProto.EXTERNAL or t.external_data:
            location = next((e.value for e in t.external_data if e.key == "location"), "")
            at = f" ('{location}')" if location else ""
            raise fail(f"keeps its data in an external file{at}; external data is not supported (no file is read)")
        if t.HasField("segment"):
            raise fail("is a segment of a tensor; segmented tensors are not supported")
        if t.data_type == TensorProto.UNDEFINED or t.data_type not in TensorProto.DataType.values():
            raise fail(f"has no valid element type ({_dtype_name(t.data_type)})")
        if any(d < 0 for d in t.dims):
            raise fail(f"has negative dims {list(t.dims)}")
        n = math.prod(t.dims)
        shape = f"{_dtype_name(t.data_type)} {'x'.join(map(str, t.dims)) or 'scalar'}, {_count(n, 'element')}"
        if t.data_type == TensorProto.STRING:
            have, field = len(t.string_data), "string_data"
            if have != n:
                raise fail(f"({shape}) has {have} entries in {field}, expected {n}")
            return
        bits = _SUB_BYTE_BITS.get(t.data_type)
        if t.HasField("raw_data"):
            if bits is not None:
                expected = -(-n * bits // 8)
            else:
                expected = n * helper.tensor_dtype_to_np_dtype(t.data_type).itemsize
            if len(t.raw_data) != expected:
                raise fail(f"({shape}) has {len(t.raw_data)} bytes of raw_data, expected {expected}")
            return
        field = helper.tensor_dtype_to_field(t.data_type)
        have = len(getattr(t, field))
        if bits in (2, 4):
            expected = -(-n // (8 // bits))  # packed into int32_data entries
        elif t.data_type in _COMPLEX:
            expected = 2 * n
        else:
            expected = n
        if have != expected:
            raise fail(f"({shape}) has {have} entries in {field}, expected {expected}")


def _domain_versions() -> dict[str, tuple[int, int]]:
    """{domain: (first, last) opset} of the operator sets onnx knows."""
    from onnx.onnx_cpp2py_export import defs as cdefs

    return dict(cdefs.schema_version_map())


def _schema(op_type: str, opset: int) -> tuple[defs.OpSchema | None, str]:
    """(schema, "") or (None, why the operator does not exist at `opset`)."""
    try:
        return defs.get_schema(op_type, opset, ""), ""
    except defs.SchemaError:
        pass
    except (TypeError, ValueError):  # a name the bindings cannot take (a corrupted file)
        return None, f"operator name {op_type!r} is not a valid name"
    try:
        defs.get_schema(op_type, "")
    except defs.SchemaError:
        return None, ""
    first = min(
        s.since_version for s in defs.get_all_schemas_with_history() if s.name == op_type and s.domain == ""
    )
    return None, f"operator {op_type} does not exist in opset {opset} (it exists from opset {first} on)"


def _subgraphs(attr: AttributeProto) -> Iterable[onnx.GraphProto]:
    if attr.type == AttributeProto.GRAPH:
        return [attr.g]
    if attr.type == AttributeProto.GRAPHS:
        return list(attr.graphs)
    return []


def _uses_default_domain(graph: onnx.GraphProto) -> bool:
    for node in graph.node:
        if node.domain in _DEFAULT_DOMAINS:
            return True
        for attr in node.attribute:
            if any(_uses_default_domain(sub) for sub in _subgraphs(attr)):
                return True
    return False
