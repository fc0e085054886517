"""PyTorch "trace mode": a `torch.export.ExportedProgram` becomes
`builtin.module { func.func @main }` in the graph dialect, directly (no ONNX
in between), with the same graph ops the ONNX importer produces, so
canonicalisation, fusion, memory planning, layouts and lowering apply as
they are.

The program is first brought to core ATen (`run_decompositions()` with the
standard table). Then, node by node:

- parameters, buffers and lifted constants are constants, materialised as
  `dense_resource` weights (keyed by their state-dict name) when an op uses
  them; every node whose tensor inputs are all constant is evaluated with
  torch itself (its own kernels: masks, position ids and weight transposes
  fold exactly as eager torch computes them);
- locations are module paths (`layer1.0.conv1`, from the node's
  `nn_module_stack`), with the ATen node's name appended where a module
  holds several ops (`encoder.0.attention/bmm_1`);
- `view`/`permute`/`addmm`/`bmm` chains that ATen uses to run a linear or a
  batched product on 2-D/3-D operands are imported as the N-D matmul (+ add)
  they came from, as ONNX exporters write them, so both modes fuse alike.

An ATen op without an importer is one line naming the op, the module path
and the node (`TorchImportError`). Shapes are static: export with concrete
example inputs.
"""

from __future__ import annotations

import math
import operator
import re
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.builder import Builder
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    TensorType,
    f16,
    f32,
    f64,
    i64,
)
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.rewriter import InsertPoint
from xdsl.transforms.dead_code_elimination import region_dce

from gedialects.frontend import validate as _validate
from gedialects.frontend.errors import FrontendError
from gedialects.graph import ops as g
from gedialects.graph import shapes
from gedialects.graph.constants import materialize
from gedialects.graph.ops import int_array
from gedialects.graph.shapes import ShapeError
from gedialects.graph.tensors import element_type
from gedialects.location import name_loc

FOLD_LIMIT = 1 << 20
"""As in the ONNX importer: all-constant results up to this many elements
fold at import; bigger ones (a weight expanded to a huge shape) stay ops."""

_NEVER_FOLDED = frozenset({
    "aten.rand.default", "aten.randn.default", "aten.randint.default", "aten.rand_like.default",
    "aten.randn_like.default", "aten.bernoulli.default", "aten.bernoulli.p", "aten.native_dropout.default",
    "aten.normal.Tensor_float", "aten.uniform.default",
})

_SKIPPED = frozenset({
    "aten._assert_tensor_metadata.default", "aten._assert_scalar.default", "aten.sym_constrain_range.default",
    "aten.sym_constrain_range_for_size.default", "aten._assert_async.msg",
})
"""Checks with no result: nothing to import."""


class TorchImportError(FrontendError):
    """A torch program the importer cannot express in the graph dialect."""


def import_exported_program(program, source: str = "model", decompose: bool = True) -> ModuleOp:
    """The graph-dialect module of `program` (a torch.export.ExportedProgram),
    after the standard core-ATen decompositions unless `decompose=False`."""
    if decompose:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            program = program.run_decompositions(_decompositions())
    return _Importer(program, source).run()


KEPT_WHOLE = ("_safe_softmax.default",)
"""Ops the standard table would decompose that import better whole: SDPA's
safe softmax becomes softmax plus one guard for fully masked rows, not the
bool eq/not/any/where chain its decomposition spells out."""


def _decompositions():
    import torch

    table = torch.export.default_decompositions()
    for name in KEPT_WHOLE:
        packet, overload = name.split(".")
        op = getattr(getattr(torch.ops.aten, packet), overload)
        if op in table:
            del table[op]
    return table


def export_module(module, example_inputs: Sequence, source: str = "model"):
    """`torch.export.export` of an nn.Module (or any callable module) at the
    example inputs' static shapes, in eval mode; an export failure is one
    TorchImportError line."""
    import torch

    if isinstance(module, torch.nn.Module):
        module = module.eval()
    try:
        with warnings.catch_warnings():  # torch's own deprecations, nothing the user can act on
            warnings.simplefilter("ignore", FutureWarning)
            return torch.export.export(module, tuple(example_inputs), strict=False)
    except Exception as e:  # torch raises many kinds (Unsupported, UserError, ...)
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise TorchImportError(f"{source}: torch.export failed: {first}") from None


def load_pt2(path: str, data: bytes | None = None):
    """A saved ExportedProgram (`torch.export.save`), from `path` or from its
    bytes; an unreadable file and a missing torch are one line."""
    try:
        import torch
    except ImportError:
        raise FrontendError(
            f"{path}: reading a .pt2 program needs torch: pip install 'gedialects[torch]'"
        ) from None
    import io

    try:
        if data is None:
            with open(path, "rb") as f:
                data = f.read()
        with warnings.catch_warnings():  # torch's own deprecations, nothing the user can act on
            warnings.simplefilter("ignore", FutureWarning)
            return torch.export.load(io.BytesIO(data))
    except OSError as e:
        raise FrontendError(f"{path}: cannot read: {e.strerror or e}") from None
    except Exception as e:  # zipfile, pickle and torch errors of a foreign or truncated file
        first = (str(e).strip().splitlines() or [""])[0]
        raise FrontendError(f"{path}: not a torch.export program ({type(e).__name__}: {first})") from None


def module_path(text: str) -> str:
    """A module path as a user writes it: dynamo's `L['self'].layer1[0].conv1`
    and `L['self']._modules['fc']._parameters['weight']` become `layer1.0.conv1`
    and `fc.weight`; export's own paths (`layer1.0.conv1`) stay. '' when the
    text is not a plain path."""
    body = re.sub(r"^L\['[^']*'\]", "", text)
    body = re.sub(r"\._(?:modules|parameters|buffers)\['([^']*)'\]", r".\1", body)
    body = re.sub(r"\[(\d+)\]|\['([^']*)'\]", lambda m: "." + (m.group(1) or m.group(2)), body).lstrip(".")
    return body if re.fullmatch(r"[\w.]*", body) else ""


def _numpy(tensor) -> np.ndarray:
    import torch

    if tensor.dtype == torch.bfloat16:
        raise ValueError("bfloat16")
    return tensor.detach().cpu().resolve_conj().resolve_neg().numpy().copy()


def _torch_dtype_to_numpy(dtype) -> np.dtype:
    import torch

    table = {
        torch.float32: np.float32, torch.float16: np.float16, torch.float64: np.float64,
        torch.int64: np.int64, torch.int32: np.int32, torch.int16: np.int16, torch.int8: np.int8,
        torch.uint8: np.uint8, torch.bool: np.bool_,
    }
    if dtype not in table:
        raise KeyError(dtype)
    return np.dtype(table[dtype])


@dataclass
class _Importer:
    program: Any
    source: str
    values: dict[Any, Any] = field(default_factory=dict)
    """fx.Node -> SSAValue (or a list of them for multi-result ops)."""
    consts: dict[Any, Any] = field(default_factory=dict)
    """fx.Node -> torch.Tensor (or a tuple) known at import."""
    const_names: dict[Any, str] = field(default_factory=dict)
    materialized: dict[Any, SSAValue] = field(default_factory=dict)
    builder: Builder | None = None
    node: Any = None
    per_module: Counter = field(default_factory=Counter)

    # ------------------------------------------------------------- driver
    def run(self) -> ModuleOp:
        from torch.export.graph_signature import InputKind, OutputKind

        program = self.program
        signature = program.graph_signature
        graph = program.graph_module.graph
        placeholders = {n.name: n for n in graph.nodes if n.op == "placeholder"}
        user_inputs = []
        for spec in signature.input_specs:
            node = placeholders[spec.arg.name]
            if spec.kind == InputKind.USER_INPUT:
                user_inputs.append(node)
            elif spec.kind in (InputKind.PARAMETER, InputKind.BUFFER):
                self.consts[node] = program.state_dict[spec.target] if spec.target in program.state_dict else program.constants[spec.target]
                self.const_names[node] = spec.target
            elif spec.kind == InputKind.CONSTANT_TENSOR:
                self.consts[node] = program.constants[spec.target]
                self.const_names[node] = spec.target
            else:
                raise TorchImportError(f"{self.source}: program input '{spec.arg.name}' of kind {spec.kind.name} is not supported")
        for spec in signature.output_specs:
            if spec.kind != OutputKind.USER_OUTPUT:
                raise TorchImportError(
                    f"{self.source}: the program mutates '{spec.target}' ({spec.kind.name}); "
                    "export the model for inference (model.eval())"
                )
        arg_types = [self._input_type(n) for n in user_inputs]
        block = Block(arg_types=arg_types)
        for node, arg in zip(user_inputs, block.args):
            self.values[node] = arg
        self.builder = Builder(InsertPoint.at_end(block))
        # ops per module that stay ops (not folded, not getitem): a lone op's
        # location is the module's path
        constant = set(self.consts)
        for node in graph.nodes:
            if node.op != "call_function" or node.target is operator.getitem or str(node.target) in _SKIPPED:
                continue
            if str(node.target) not in _NEVER_FOLDED and all(a in constant for a in node.all_input_nodes):
                constant.add(node)
            else:
                self.per_module[self._module_path(node)] += 1
        output = None
        for node in graph.nodes:
            if node.op == "call_function":
                self.node = node
                self._import_node(node)
            elif node.op == "output":
                output = node
            elif node.op not in ("placeholder",):
                raise TorchImportError(f"{self.source}: fx node '{node.name}' ({node.op}) is not supported")
        self.node = None
        from torch.fx.node import map_aggregate

        leaves: list = []
        map_aggregate(output.args[0], leaves.append)
        results = [self._output_value(o, i) for i, o in enumerate(leaves)]
        self.builder.insert(func.ReturnOp(*results))
        names = [f"output_{i}" if len(results) > 1 else "output" for i in range(len(results))]
        fn = func.FuncOp(
            "main",
            (arg_types, [r.type for r in results]),
            Region(block),
            arg_attrs=ArrayAttr([DictionaryAttr({"ge.name": StringAttr(n.name)}) for n in user_inputs]),
            res_attrs=ArrayAttr([DictionaryAttr({"ge.name": StringAttr(n)}) for n in names]),
        )
        fn.location = name_loc("main")
        # the flattening views of products imported in N-D are left unused
        region_dce(fn.body)
        return ModuleOp([fn])

    def _output_value(self, node, index: int) -> SSAValue:
        if node is None or not hasattr(node, "op"):
            raise TorchImportError(f"{self.source}: output {index} is not a tensor ({node!r}); return tensors only")
        value = self.value(node)
        if isinstance(value.owner, Block) or value in self.materialized.values():
            # func.return of an argument or a weight: give the output its own op
            value = self._emit_at(node, g.IdentityOp, [value])[0]
        return value

    def _input_type(self, node) -> TensorType:
        val = node.meta.get("val")
        if val is None or not hasattr(val, "shape"):
            raise TorchImportError(f"{self.source}: input '{node.name}' is not a tensor ({type(val).__name__}); pass tensors only")
        dims = self._static_shape(val, f"input '{node.name}'")
        problem = _validate.size_problem(f"input '{node.name}'", dims)
        if problem:
            raise TorchImportError(f"{self.source}: {problem}")
        return TensorType(self._element(val.dtype, f"input '{node.name}'"), dims)

    def _static_shape(self, val, what: str) -> list[int]:
        for d in val.shape:
            if not isinstance(d, int):  # a SymInt of torch.export's dynamic_shapes
                raise self.error(
                    f"{what} has a dynamic dim ({d}); trace mode compiles static shapes: "
                    "export without dynamic_shapes"
                )
        return list(val.shape)

    def _element(self, dtype, what: str) -> Attribute:
        try:
            return element_type(_torch_dtype_to_numpy(dtype))
        except KeyError:
            raise self.error(f"{what} has element type {dtype}, which the graph dialect lacks") from None

    # ------------------------------------------------------------ helpers
    @staticmethod
    def _module_path(node) -> str:
        stack = node.meta.get("nn_module_stack") or {}
        paths = [module_path(path) for path, _ in stack.values()]
        paths = [p for p in paths if p]
        return paths[-1] if paths else ""

    def location_name(self, node, alone_ok: bool = True) -> str:
        path = self._module_path(node)
        if not path:
            return node.name
        return path if alone_ok and self.per_module[path] == 1 else f"{path}/{node.name}"

    def location(self, node):
        return name_loc(self.location_name(node))

    def error(self, message: str) -> TorchImportError:
        node = self.node
        if node is None:
            return TorchImportError(f"{self.source}: {message}")
        path = self._module_path(node)
        where = f"module '{path}', " if path else ""
        op = "" if str(node.target) in message else f", {node.target}"
        return TorchImportError(f"{self.source}: {message} ({where}node '{node.name}'{op})")

    def meta(self, node=None):
        node = node if node is not None else self.node
        return node.meta.get("val")

    def out_type(self, node=None) -> Attribute:
        val = self.meta(node)
        return self._element(val.dtype, "the result")

    def out_shape(self, node=None) -> list[int]:
        return self._static_shape(self.meta(node), "the result")

    def is_const(self, x) -> bool:
        return x in self.consts

    def const(self, x, what: str):
        if x in self.consts:
            return self.consts[x]
        raise self.error(f"{what} must be constant at import")

    def value(self, x, dtype: Attribute | None = None) -> SSAValue:
        """The SSA value of an fx node (constants materialised once), or of a
        Python number as a 0-d constant of `dtype`."""
        if isinstance(x, SSAValue):
            return x
        if not hasattr(x, "op"):  # a Python scalar
            if dtype is None:
                raise self.error(f"scalar operand {x!r} needs a tensor beside it")
            from gedialects.graph.tensors import numpy_dtype

            array = np.array(x, dtype=numpy_dtype(dtype))
            return self._insert(materialize(array, f"{self.node.name}_scalar", self.location(self.node)))
        if x in self.values:
            v = self.values[x]
            if isinstance(v, list):
                raise self.error(f"'{x.name}' has several results; pick one with getitem")
            return v
        if x in self.consts:
            if x not in self.materialized:
                c = self.consts[x]
                try:
                    array = _numpy(c)
                except ValueError:
                    raise self.error(f"constant '{x.name}' is bfloat16, which the graph dialect lacks") from None
                except (TypeError, AttributeError):
                    raise self.error(f"constant '{x.name}' is not a tensor") from None
                name = self.const_names.get(x) or self.location_name(x, alone_ok=False)
                self.materialized[x] = self._insert(materialize(array, name, name_loc(name)))
            return self.materialized[x]
        raise self.error(f"'{x.name}' is used before it is defined")

    def _insert(self, op) -> SSAValue:
        assert self.builder is not None
        self.builder.insert(op)
        return op.results[0]

    def emit(self, op_type, operands, props=None, num_results: int = 1, element: Attribute | None = None) -> list[SSAValue]:
        return self._emit_at(self.node, op_type, operands, props, num_results, element)

    def _emit_at(self, node, op_type, operands, props=None, num_results=1, element=None) -> list[SSAValue]:
        try:
            op = op_type.build_inferred(operands, props, location=self.location(node) if node is not None else None,
                                        num_results=num_results, element_type=element)
        except ShapeError as e:
            raise self.error(str(e)) from None
        for r in op.results:
            problem = _validate.size_problem(f"tensor '{node.name if node is not None else op.name}'", list(g.shape_of(r)))
            if problem:
                raise self.error(problem)
        self.builder.insert(op)
        return list(op.results)

    def cast(self, v: SSAValue, to: Attribute) -> SSAValue:
        if g.element_type_of(v) == to:
            return v
        return self.emit(g.CastOp, [v], element=to)[0]

    def define(self, value) -> None:
        """The node's value; a single result is checked against torch's own
        shape and brought to torch's result dtype."""
        node = self.node
        if isinstance(value, list) and len(value) == 1 and hasattr(self.meta(), "shape"):
            value = value[0]
        if isinstance(value, SSAValue):
            val = self.meta()
            if hasattr(val, "shape"):
                want = self.out_shape()
                got = list(g.shape_of(value))
                if got != want:
                    raise self.error(f"internal: imported as shape {got}, torch says {want}")
                value = self.cast(value, self.out_type())
        self.values[node] = value

    # ---------------------------------------------------------- dispatch
    def _import_node(self, node) -> None:
        if node in self.values:  # defined already by a pattern of its producers (the N-D matmul)
            return
        target = node.target
        if target is operator.getitem:
            source, index = node.args
            if source in self.consts:
                self.consts[node] = self.consts[source][index]
                return
            produced = self.values.get(source)
            if not isinstance(produced, list) or index >= len(produced) or produced[index] is None:
                raise self.error(f"result {index} of '{source.name}' is not supported")
            self.values[node] = produced[index]
            return
        name = str(target)
        if name in _SKIPPED:
            return
        handler = _HANDLERS.get(name)
        if self._fold(node, name, handler is not None):
            return
        if handler is None:
            raise self.error(f"unsupported ATen operator '{name}'")
        handler(self, *node.args, **node.kwargs)

    def _fold(self, node, name: str, importable: bool) -> bool:
        """Evaluate with torch a node whose tensor inputs are all constant
        (creation ops have none): exactly what eager torch computes."""
        if name in _NEVER_FOLDED:
            return False
        inputs = node.all_input_nodes
        if not all(a in self.consts for a in inputs):
            return False
        val = self.meta(node)
        if importable and inputs and hasattr(val, "shape") and math.prod(self._static_shape(val, "the result")) > FOLD_LIMIT:
            return False
        if hasattr(val, "shape"):
            problem = _validate.size_problem(f"constant result '{node.name}'", self._static_shape(val, "the result"))
            if problem:
                raise self.error(problem)
        import torch
        from torch.fx.node import map_arg

        args = map_arg(node.args, self.consts.__getitem__)
        kwargs = map_arg(node.kwargs, self.consts.__getitem__)
        try:
            with torch.no_grad():
                self.consts[node] = node.target(*args, **kwargs)
        except Exception as e:
            raise self.error(f"evaluating this all-constant op failed ({type(e).__name__}: {e})") from None
        return True


def _i(v: int) -> IntegerAttr:
    return IntegerAttr(int(v), i64)


def _f(v: float) -> FloatAttr:
    return FloatAttr(float(v), f32)


_HANDLERS: dict[str, Callable] = {}


def aten(*names: str):
    def register(fn):
        for n in names:
            _HANDLERS[n if n.startswith("aten.") else f"aten.{n}"] = fn
        return fn

    return register


def _rank(v: SSAValue) -> int:
    return len(g.shape_of(v))


def _axis(im: _Importer, dim: int, rank: int) -> int:
    try:
        return shapes.normalize_axis(dim, max(rank, 1))
    except ShapeError as e:
        raise im.error(str(e)) from None


# ------------------------------------------------------------ elementwise


def _unary(op_type):
    def run(im: _Importer, x, *rest, **kw):
        im.define(im.emit(op_type, [im.value(x)]))

    return run


for _name, _op in [
    ("relu.default", g.ReluOp), ("sigmoid.default", g.SigmoidOp), ("tanh.default", g.TanhOp),
    ("erf.default", g.ErfOp), ("sqrt.default", g.SqrtOp), ("exp.default", g.ExpOp), ("log.default", g.LogOp),
    ("neg.default", g.NegOp), ("abs.default", g.AbsOp), ("reciprocal.default", g.ReciprocalOp),
    ("sin.default", g.SinOp), ("cos.default", g.CosOp), ("logical_not.default", g.NotOp),
    ("bitwise_not.default", g.NotOp), ("hardswish.default", g.HardSwishOp), ("isnan.default", g.IsNanOp),
]:
    aten(_name)(_unary(_op))


@aten("rsqrt.default")
def _rsqrt(im: _Importer, x):
    im.define(im.emit(g.ReciprocalOp, [im.emit(g.SqrtOp, [im.value(x)])[0]]))


@aten("silu.default")
def _silu(im: _Importer, x):
    v = im.value(x)
    im.define(im.emit(g.MulOp, [v, im.emit(g.SigmoidOp, [v])[0]]))


@aten("hardsigmoid.default")
def _hardsigmoid(im: _Importer, x):
    im.define(im.emit(g.HardSigmoidOp, [im.value(x)], {"alpha": _f(1 / 6), "beta": _f(0.5)}))


@aten("gelu.default")
def _gelu(im: _Importer, x, approximate: str = "none"):
    props = {"approximate": StringAttr(approximate)} if approximate != "none" else {}
    im.define(im.emit(g.GeluOp, [im.value(x)], props))


@aten("leaky_relu.default")
def _leaky_relu(im: _Importer, x, negative_slope: float = 0.01):
    im.define(im.emit(g.LeakyReluOp, [im.value(x)], {"alpha": _f(negative_slope)}))


@aten("hardtanh.default", "clamp.default")
def _clip(im: _Importer, x, min_val=None, max_val=None):
    v = im.value(x)
    bound_type = f32 if g.element_type_of(v) in (f32, f16) else f64
    props = {k: FloatAttr(float(b), bound_type) for k, b in (("min", min_val), ("max", max_val)) if b is not None}
    if str(im.node.target) == "aten.hardtanh.default":  # its bounds default to [-1, 1]
        props.setdefault("min", FloatAttr(-1.0, bound_type))
        props.setdefault("max", FloatAttr(1.0, bound_type))
    im.define(im.emit(g.ClipOp, [v], props))


@aten("clamp.Tensor")
def _clamp_tensor(im: _Importer, x, min=None, max=None):
    out = im.out_type()
    v = im.cast(im.value(x), out)
    if min is not None:
        v = im.emit(g.MaxOp, [v, im.cast(im.value(min, out), out)])[0]
    if max is not None:
        v = im.emit(g.MinOp, [v, im.cast(im.value(max, out), out)])[0]
    im.define(v)


def _compute_type(im: _Importer, operands) -> Attribute:
    """The dtype torch computes a binary op in (its type promotion)."""
    import torch

    tensors = [im.meta(a) if hasattr(a, "op") else a for a in operands]
    probe = [t if not hasattr(t, "dtype") else torch.empty((), dtype=t.dtype) for t in tensors]
    return im._element(torch.result_type(*probe), "the operands")


def _binary(op_type, swap: bool = False, compare: bool = False):
    def run(im: _Importer, a, b, alpha=1, **kw):
        compute = _compute_type(im, [a, b]) if compare else im.out_type()
        if kw.get("rounding_mode") is not None:
            raise im.error(f"division with rounding_mode='{kw['rounding_mode']}' is not supported")
        lhs, rhs = im.cast(im.value(a, compute), compute), im.cast(im.value(b, compute), compute)
        if alpha != 1:
            rhs = im.emit(g.MulOp, [rhs, im.value(alpha, compute)])[0]
        if swap:
            lhs, rhs = rhs, lhs
        im.define(im.emit(op_type, [lhs, rhs]))

    return run


for _names, _op in [
    (("add.Tensor", "add.Scalar"), g.AddOp), (("sub.Tensor", "sub.Scalar"), g.SubOp),
    (("mul.Tensor", "mul.Scalar"), g.MulOp), (("div.Tensor", "div.Scalar", "div.Tensor_mode"), g.DivOp),
    (("pow.Tensor_Tensor", "pow.Tensor_Scalar", "pow.Scalar"), g.PowOp),
    (("maximum.default",), g.MaxOp), (("minimum.default",), g.MinOp),
]:
    aten(*_names)(_binary(_op))
aten("rsub.Tensor", "rsub.Scalar")(_binary(g.SubOp, swap=True))
for _names, _op in [
    (("eq.Tensor", "eq.Scalar"), g.EqualOp), (("lt.Tensor", "lt.Scalar"), g.LessOp),
    (("le.Tensor", "le.Scalar"), g.LessEqualOp), (("gt.Tensor", "gt.Scalar"), g.GreaterOp),
    (("ge.Tensor", "ge.Scalar"), g.GreaterEqualOp),
    (("logical_and.default", "bitwise_and.Tensor"), g.AndOp), (("logical_or.default", "bitwise_or.Tensor"), g.OrOp),
    (("logical_xor.default", "bitwise_xor.Tensor"), g.XorOp),
]:
    aten(*_names)(_binary(_op, compare=True))


@aten("ne.Tensor", "ne.Scalar")
def _ne(im: _Importer, a, b):
    compute = _compute_type(im, [a, b])
    eq = im.emit(g.EqualOp, [im.cast(im.value(a, compute), compute), im.cast(im.value(b, compute), compute)])[0]
    im.define(im.emit(g.NotOp, [eq]))


@aten("where.self")
def _where(im: _Importer, cond, a, b):
    out = im.out_type()
    c = im.value(cond)
    im.define(im.emit(g.WhereOp, [c, im.cast(im.value(a, out), out), im.cast(im.value(b, out), out)]))


@aten("masked_fill.Scalar", "masked_fill.Tensor")
def _masked_fill(im: _Importer, x, mask, value):
    out = im.out_type()
    im.define(im.emit(g.WhereOp, [im.value(mask), im.cast(im.value(value, out), out), im.value(x)]))


@aten("_to_copy.default", "to.dtype")
def _to_copy(im: _Importer, x, *args, **kw):
    im.define(im.cast(im.value(x), im.out_type()))


@aten("clone.default", "alias.default", "lift_fresh_copy.default", "detach.default", "contiguous.default")
def _alias(im: _Importer, x, *args, **kw):
    im.define(im.value(x))


@aten("full_like.default", "zeros_like.default", "ones_like.default", "empty_like.default")
def _like(im: _Importer, x, fill=None, **kw):
    """A tensor of x's shape: a constant (x's values do not matter)."""
    import torch

    name = str(im.node.target)
    value = {"aten.zeros_like.default": 0, "aten.ones_like.default": 1, "aten.empty_like.default": 0}.get(name, fill)
    val = im.meta()
    im.consts[im.node] = torch.full(tuple(im.out_shape()), value, dtype=val.dtype)


# ------------------------------------------------------- products, norms


@aten("convolution.default")
def _convolution(im: _Importer, x, w, b, stride, padding, dilation, transposed, output_padding, groups):
    n = len(stride)
    props: dict[str, Attribute] = {}
    if any(s != 1 for s in stride):
        props["strides"] = int_array(stride)
    if any(padding):
        props["pads"] = int_array(list(padding) * 2)
    if any(d != 1 for d in dilation):
        props["dilations"] = int_array(dilation)
    if groups != 1:
        props["group"] = _i(groups)
    bias = [im.value(b)] if b is not None else []
    if transposed:
        if any(output_padding):
            props["output_padding"] = int_array(output_padding)
        im.define(im.emit(g.ConvTransposeOp, [im.value(x), im.value(w), bias], props))
    else:
        if len(im.meta(x).shape) != n + 2:
            raise im.error("convolution of an unbatched input is not supported")
        im.define(im.emit(g.ConvOp, [im.value(x), im.value(w), bias, []], props))


def _ones_or(im: _Importer, p, shape, fill: float, dtype) -> SSAValue:
    """The parameter `p`, or a constant `fill` of `shape` where the module has none (affine=False)."""
    if p is not None:
        return im.value(p)
    from gedialects.graph.tensors import numpy_dtype

    array = np.full(tuple(np.atleast_1d(shape)), fill, dtype=numpy_dtype(dtype))
    return im._insert(materialize(array, f"{im.node.name}_{fill}", im.location(im.node)))


@aten("_native_batch_norm_legit_no_training.default")
def _batch_norm(im: _Importer, x, w, b, mean, var, momentum, eps):
    v = im.value(x)
    channels = g.shape_of(v)[1]
    dtype = g.element_type_of(v)
    params = [_ones_or(im, w, channels, 1.0, dtype), _ones_or(im, b, channels, 0.0, dtype), im.value(mean), im.value(var)]
    params = [im.cast(p, dtype) for p in params]
    im.values[im.node] = [im.emit(g.BatchNormOp, [v, *params], {"epsilon": _f(eps)})[0], None, None]


@aten("native_layer_norm.default")
def _layer_norm(im: _Importer, x, normalized_shape, w, b, eps):
    v = im.value(x)
    axis = -len(normalized_shape)
    scale = _ones_or(im, w, list(normalized_shape), 1.0, g.element_type_of(v))
    bias = [im.value(b)] if b is not None else []
    y = im.emit(g.LayerNormOp, [v, scale, bias, []], {"axis": _i(axis), "epsilon": _f(eps)})[0]
    im.values[im.node] = [y, None, None]


@aten("native_group_norm.default")
def _group_norm(im: _Importer, x, w, b, n, c, hw, groups, eps):
    v = im.value(x)
    dtype = g.element_type_of(v)
    props = {"epsilon": _f(eps), "num_groups": _i(groups)}
    y = im.emit(g.GroupNormOp, [v, _ones_or(im, w, c, 1.0, dtype), _ones_or(im, b, c, 0.0, dtype)], props)[0]
    im.values[im.node] = [y, None, None]


@aten("_softmax.default")
def _softmax(im: _Importer, x, dim, half_to_float=False):
    im.define(im.emit(g.SoftmaxOp, [im.value(x)], {"axis": _i(dim)}))


@aten("_safe_softmax.default")
def _safe_softmax(im: _Importer, x, dim, dtype=None):
    """softmax, except that a row with no finite element is 0 (SDPA's
    fully masked rows): where(rowmax == -inf, 0, softmax(x))."""
    v = im.value(x)
    out = im.out_type()
    if g.element_type_of(v) != out:
        v = im.cast(v, out)
    soft = im.emit(g.SoftmaxOp, [v], {"axis": _i(dim)})[0]
    row_max = im.emit(g.ReduceMaxOp, [v], {"axes": int_array([dim]), "keepdims": _i(1)})[0]
    masked = im.emit(g.EqualOp, [row_max, im.value(float("-inf"), out)])[0]
    im.define(im.emit(g.WhereOp, [masked, im.value(0.0, out), soft]))


@aten("_log_softmax.default")
def _log_softmax(im: _Importer, x, dim, half_to_float=False):
    im.define(im.emit(g.LogSoftmaxOp, [im.value(x)], {"axis": _i(dim)}))


def _is(node, *names: str) -> bool:
    return hasattr(node, "op") and node.op == "call_function" and str(node.target) in names


def _unflattened(im: _Importer, node, trailing: int):
    """The N-D tensor a `view` flattened into (batch, *trailing dims) — the
    way ATen feeds a linear or a batched product — or None. A no-op expand
    in between (a product of same-shaped batches) is looked through."""
    if not _is(node, "aten.view.default", "aten._unsafe_view.default", "aten.reshape.default"):
        return None
    source = node.args[0]
    if _is(source, "aten.expand.default") and list(im.meta(source.args[0]).shape) == list(im.meta(source).shape):
        source = source.args[0]
    src, out = list(im.meta(source).shape), list(im.meta(node).shape)
    if len(src) <= len(out) or src[len(src) - trailing:] != out[len(out) - trailing:]:
        return None
    if math.prod(src[: len(src) - trailing]) != math.prod(out[: len(out) - trailing]):
        return None
    return source


def _sole_view_user(im: _Importer, node, shape: Sequence[int]):
    """The one user of `node` when it is a view to `shape` (the N-D result)."""
    users = list(node.users)
    if len(users) == 1 and _is(users[0], "aten.view.default", "aten._unsafe_view.default") and list(im.meta(users[0]).shape) == list(shape):
        return users[0]
    return None


def _transposed_weight(im: _Importer, node):
    """The weight W of a folded `permute(W, [1, 0])` (a linear's W^T), or None."""
    if _is(node, "aten.permute.default", "aten.t.default") and node.args[0] in im.consts:
        perm = node.args[1] if len(node.args) > 1 else [1, 0]
        if list(perm) == [1, 0]:
            return node.args[0]
    return None


@aten("addmm.default", "mm.default")
def _addmm(im: _Importer, *args, beta=1, alpha=1):
    bias, a, b = args if len(args) == 3 else (None, *args)
    node = im.node
    source = _unflattened(im, a, 1)
    if source is not None and beta == 1 and alpha == 1:
        lead = list(im.meta(source).shape)[:-1]
        restored = _sole_view_user(im, node, lead + [im.out_shape()[-1]])
        if restored is not None:
            # linear on an N-D input: MatMul (+ Add) as ONNX exporters write it
            y = im.emit(g.MatMulOp, [im.value(source), im.value(b), []])[0]
            if bias is not None:
                y = im.emit(g.AddOp, [y, im.value(bias)])[0]
            im.values[node] = None  # its one user, the view back to N-D, takes y
            im.values[restored] = y
            return
    if bias is None and alpha == 1:
        im.define(im.emit(g.MatMulOp, [im.value(a), im.value(b), []]))
        return
    props: dict[str, Attribute] = {}
    weight = _transposed_weight(im, b)
    if weight is not None:
        props["trans_b"] = _i(1)
    for key, v in (("alpha", alpha), ("beta", beta)):
        if v != 1:
            props[key] = _f(v)
    c = [im.value(bias)] if bias is not None else []
    im.define(im.emit(g.GemmOp, [im.value(a), im.value(weight if weight is not None else b), c], props))


@aten("bmm.default")
def _bmm(im: _Importer, a, b):
    node = im.node
    sa, sb = _unflattened(im, a, 2), _unflattened(im, b, 2)
    if sa is not None and sb is not None and len(im.meta(sa).shape) == len(im.meta(sb).shape):
        batch = list(im.meta(sa).shape)[:-2]
        restored = _sole_view_user(im, node, batch + im.out_shape()[-2:])
        if restored is not None and list(im.meta(sb).shape)[:-2] == batch:
            y = im.emit(g.MatMulOp, [im.value(sa), im.value(sb), []])[0]
            im.values[node] = None  # its one user, the view back to N-D, takes y
            im.values[restored] = y
            return
    im.define(im.emit(g.MatMulOp, [im.value(a), im.value(b), []]))


@aten("embedding.default")
def _embedding(im: _Importer, weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    im.define(im.emit(g.GatherOp, [im.value(weight), im.value(indices)], {"axis": _i(0)}))


@aten("index.Tensor")
def _index(im: _Importer, x, indices):
    """x[i0, i1, ...] (advanced indexing). One index tensor on one dim is a
    gather along it; index tensors on the leading dims, all constant, are a
    gather_nd of their broadcast tuples (HF's mask[None-broadcast aranges])."""
    v = im.value(x)
    given = [(d, i) for d, i in enumerate(indices) if i is not None]
    if len(given) == 1:
        axis, index = given[0]
        im.define(im.emit(g.GatherOp, [v, im.value(index)], {"axis": _i(axis)}))
        return
    dims = [d for d, _ in given]
    if dims != list(range(len(given))) or not all(im.is_const(i) for _, i in given):
        raise im.error("advanced indexing with several index tensors is supported on the leading dims with constant indices only")
    arrays = np.broadcast_arrays(*(_numpy(im.consts[i]).astype(np.int64) for _, i in given))
    tuples = np.stack(arrays, axis=-1)
    where = im._insert(materialize(tuples, f"{im.location_name(im.node, alone_ok=False)}_indices", im.location(im.node)))
    im.define(im.emit(g.GatherNDOp, [v, where]))


@aten("as_strided.default")
def _as_strided(im: _Importer, x, size, stride, storage_offset=0):
    """A view that only relabels a contiguous tensor (what decompositions of
    pooling and flatten leave): a reshape; any other stride pattern is refused."""
    v = im.value(x)
    size = [int(d) for d in size]
    contiguous, step = [], 1
    for d in reversed(size):
        contiguous.insert(0, step)
        step *= d
    plain = all(int(s) == c for s, c, d in zip(stride, contiguous, size) if d != 1)
    if storage_offset or not plain or math.prod(size) != math.prod(g.shape_of(v)):
        raise im.error(f"as_strided with sizes {size} and strides {list(stride)} (not a contiguous view) is not supported")
    im.define(v if list(g.shape_of(v)) == size else im.emit(g.ReshapeOp, [v], {"shape": int_array(size)}))


@aten("index_select.default")
def _index_select(im: _Importer, x, dim, index):
    im.define(im.emit(g.GatherOp, [im.value(x), im.value(index)], {"axis": _i(dim)}))


@aten("gather.default")
def _gather(im: _Importer, x, dim, index, sparse_grad=False):
    im.define(im.emit(g.GatherElementsOp, [im.value(x), im.value(index)], {"axis": _i(dim)}))


# ---------------------------------------------------------------- reduces


def _reduce(op_type):
    def run(im: _Importer, x, dims=None, keepdim=False, **kw):
        v = im.value(x)
        props: dict[str, Attribute] = {"keepdims": _i(int(bool(keepdim)))}
        if dims is not None and not isinstance(dims, (list, tuple)):
            dims = [dims]
        if dims:
            props["axes"] = int_array(dims)
        if kw.get("dtype") is not None:
            v = im.cast(v, im.out_type())
        im.define(im.emit(op_type, [v], props))

    return run


for _names, _op in [
    (("mean.dim", "mean.default"), g.ReduceMeanOp), (("sum.dim_IntList", "sum.default"), g.ReduceSumOp),
    (("amax.default",), g.ReduceMaxOp), (("amin.default",), g.ReduceMinOp), (("prod.dim_int",), g.ReduceProdOp),
]:
    aten(*_names)(_reduce(_op))


@aten("any.dim", "any.dims")
def _any(im: _Importer, x, dims=None, keepdim=False):
    as_int = im.cast(im.value(x), i64) if g.element_type_of(im.value(x)) != i64 else im.value(x)
    dims = [dims] if isinstance(dims, int) else dims
    props: dict[str, Attribute] = {"keepdims": _i(int(bool(keepdim)))}
    if dims:
        props["axes"] = int_array(dims)
    im.define(im.emit(g.ReduceMaxOp, [as_int], props))


@aten("argmax.default", "argmin.default")
def _argreduce(im: _Importer, x, dim=None, keepdim=False):
    if dim is None:
        raise im.error("argmax/argmin over the whole tensor (no dim) is not supported")
    op = g.ArgMaxOp if "argmax" in str(im.node.target) else g.ArgMinOp
    im.define(im.emit(op, [im.value(x)], {"axis": _i(dim), "keepdims": _i(int(bool(keepdim)))}))


# ------------------------------------------------------------------ pools


def _window_props(im: _Importer, kernel, stride, padding, dilation=(1, 1), ceil_mode=False) -> dict[str, Attribute]:
    n = len(kernel)
    stride = list(stride) or list(kernel)
    padding = list(padding) if isinstance(padding, (list, tuple)) else [padding] * n
    padding = padding * (n // len(padding)) if len(padding) < n else padding
    dilation = list(dilation) if isinstance(dilation, (list, tuple)) else [dilation] * n
    dilation = dilation * (n // len(dilation)) if len(dilation) < n else dilation
    stride = stride * (n // len(stride)) if len(stride) < n else stride
    props: dict[str, Attribute] = {"kernel_shape": int_array(kernel)}
    if any(s != 1 for s in stride):
        props["strides"] = int_array(stride)
    if any(padding):
        props["pads"] = int_array(padding * 2)
    if any(d != 1 for d in dilation):
        props["dilations"] = int_array(dilation)
    if ceil_mode:
        props["ceil_mode"] = _i(1)
    return props


@aten("max_pool2d_with_indices.default", "max_pool1d_with_indices.default", "max_pool3d_with_indices.default")
def _max_pool(im: _Importer, x, kernel, stride=(), padding=0, dilation=1, ceil_mode=False):
    if any(u.target is operator.getitem and u.args[1] == 1 for u in im.node.users):
        raise im.error("max_pool's indices output is not supported")
    y = im.emit(g.MaxPoolOp, [im.value(x)], _window_props(im, kernel, stride, padding, dilation, ceil_mode))[0]
    im.values[im.node] = [y, None]


@aten("max_pool2d.default")
def _max_pool_plain(im: _Importer, x, kernel, stride=(), padding=0, dilation=1, ceil_mode=False):
    im.define(im.emit(g.MaxPoolOp, [im.value(x)], _window_props(im, kernel, stride, padding, dilation, ceil_mode)))


@aten("avg_pool2d.default", "avg_pool1d.default", "avg_pool3d.default")
def _avg_pool(im: _Importer, x, kernel, stride=(), padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None):
    if divisor_override is not None:
        raise im.error("avg_pool with divisor_override is not supported")
    props = _window_props(im, kernel, stride, padding, 1, ceil_mode)
    if count_include_pad and "pads" in props:
        props["count_include_pad"] = _i(1)
    im.define(im.emit(g.AvgPoolOp, [im.value(x)], props))


@aten("_adaptive_avg_pool2d.default", "adaptive_avg_pool2d.default")
def _adaptive_avg_pool(im: _Importer, x, output_size):
    v = im.value(x)
    spatial = list(g.shape_of(v)[2:])
    out = list(output_size)
    if all(o == 1 for o in out):
        im.define(im.emit(g.GlobalAvgPoolOp, [v]))
        return
    if any(i % o for i, o in zip(spatial, out)):
        raise im.error(f"adaptive_avg_pool from {spatial} to {out} (not a whole window per output) is not supported")
    kernel = [i // o for i, o in zip(spatial, out)]
    im.define(im.emit(g.AvgPoolOp, [v], _window_props(im, kernel, kernel, 0)))


# ------------------------------------------------------- data movement


@aten("view.default", "_unsafe_view.default", "reshape.default")
def _view(im: _Importer, x, shape):
    v = im.value(x)
    if list(g.shape_of(v)) == im.out_shape():
        im.define(v)
        return
    im.define(im.emit(g.ReshapeOp, [v], {"shape": int_array(im.out_shape())}))


@aten("permute.default")
def _permute(im: _Importer, x, dims):
    v = im.value(x)
    perm = [_axis(im, d, _rank(v)) for d in dims]
    if perm == list(range(len(perm))):
        im.define(v)
        return
    im.define(im.emit(g.TransposeOp, [v], {"perm": int_array(perm)}))


@aten("t.default")
def _t(im: _Importer, x):
    v = im.value(x)
    im.define(v if _rank(v) < 2 else im.emit(g.TransposeOp, [v], {"perm": int_array([1, 0])}))


@aten("transpose.int")
def _transpose(im: _Importer, x, a, b):
    v = im.value(x)
    perm = list(range(_rank(v)))
    a, b = _axis(im, a, len(perm)), _axis(im, b, len(perm))
    perm[a], perm[b] = perm[b], perm[a]
    im.define(im.emit(g.TransposeOp, [v], {"perm": int_array(perm)}))


@aten("expand.default")
def _expand(im: _Importer, x, sizes, implicit=False):
    v = im.value(x)
    if list(g.shape_of(v)) == im.out_shape():
        im.define(v)
        return
    im.define(im.emit(g.ExpandOp, [v], {"shape": int_array(im.out_shape())}))


@aten("unsqueeze.default")
def _unsqueeze(im: _Importer, x, dim):
    v = im.value(x)
    im.define(im.emit(g.UnsqueezeOp, [v], {"axes": int_array([_axis(im, dim, _rank(v) + 1)])}))


@aten("squeeze.dims", "squeeze.dim", "squeeze.default")
def _squeeze(im: _Importer, x, dims=None):
    v = im.value(x)
    xs = g.shape_of(v)
    if dims is None:
        dims = list(range(len(xs)))
    dims = [dims] if isinstance(dims, int) else dims
    axes = sorted({_axis(im, d, len(xs)) for d in dims if xs[_axis(im, d, len(xs))] == 1}) if xs else []
    im.define(im.emit(g.SqueezeOp, [v], {"axes": int_array(axes)}) if axes else v)


@aten("select.int")
def _select(im: _Importer, x, dim, index):
    v = im.value(x)
    axis = _axis(im, dim, _rank(v))
    index = index + g.shape_of(v)[axis] if index < 0 else index
    where = im._insert(materialize(np.array(index, dtype=np.int64), f"{im.node.name}_index", im.location(im.node)))
    im.define(im.emit(g.GatherOp, [v, where], {"axis": _i(axis)}))


@aten("slice.Tensor")
def _slice(im: _Importer, x, dim=0, start=None, end=None, step=1):
    v = im.value(x)
    axis = _axis(im, dim, _rank(v))
    extent = g.shape_of(v)[axis]
    start = 0 if start is None else start
    end = extent if end is None else end
    if start == 0 and end >= extent and step == 1:
        im.define(v)
        return
    clamp = lambda e: max(min(e, 2**62), -(2**62))  # noqa: E731
    props = {"starts": int_array([clamp(start)]), "ends": int_array([clamp(end)]), "axes": int_array([axis])}
    if step != 1:
        props["steps"] = int_array([step])
    im.define(im.emit(g.SliceOp, [v], props))


@aten("cat.default")
def _cat(im: _Importer, tensors, dim=0):
    out = im.out_type()
    vals = [im.cast(im.value(t), out) for t in tensors if math.prod(im.meta(t).shape) > 0 or len(tensors) == 1]
    im.define(im.emit(g.ConcatOp, [vals], {"axis": _i(dim)}))


@aten("split_with_sizes.default", "split.Tensor")
def _split(im: _Importer, x, sizes, dim=0):
    v = im.value(x)
    axis = _axis(im, dim, _rank(v))
    extent = g.shape_of(v)[axis]
    if isinstance(sizes, int):
        sizes = [min(sizes, extent - i) for i in range(0, extent, sizes)]
    im.values[im.node] = im.emit(g.SplitOp, [v], {"axis": _i(axis), "split": int_array(sizes)}, num_results=len(sizes))


@aten("constant_pad_nd.default")
def _pad(im: _Importer, x, pad, value=0):
    v = im.value(x)
    rank = _rank(v)
    begins, ends = [0] * rank, [0] * rank
    for i in range(len(pad) // 2):  # torch pads the last dim first
        begins[rank - 1 - i], ends[rank - 1 - i] = pad[2 * i], pad[2 * i + 1]
    props: dict[str, Attribute] = {"pads": int_array(begins + ends)}
    if value:
        et = g.element_type_of(v)
        props["value"] = FloatAttr(float(value), et) if et in (f16, f32, f64) else IntegerAttr(int(value), et)
    im.define(im.emit(g.PadOp, [v], props))


@aten("upsample_nearest2d.vec", "upsample_bilinear2d.vec", "upsample_nearest2d.default", "upsample_bilinear2d.default")
def _upsample(im: _Importer, x, output_size, *rest):
    v = im.value(x)
    bilinear = "bilinear" in str(im.node.target)
    align = bool(rest[0]) if bilinear and rest else False
    xs, out = list(g.shape_of(v)), im.out_shape()
    scales = [1.0, 1.0] + [float(np.float32(o) / np.float32(i)) for i, o in zip(xs[2:], out[2:])]
    props: dict[str, Attribute] = {"scales": g.float_array(scales)}
    if list(shapes.resize(xs, scales, None)) != out:
        props["sizes"] = int_array(out)
    props["mode"] = StringAttr("linear" if bilinear else "nearest")
    coord = "align_corners" if align else ("half_pixel" if bilinear else "asymmetric")
    props["coordinate_transformation_mode"] = StringAttr(coord)
    if not bilinear:
        props["nearest_mode"] = StringAttr("floor")
    im.define(im.emit(g.ResizeOp, [v], props))


@aten("triu.default", "tril.default")
def _trilu(im: _Importer, x, diagonal=0):
    props: dict[str, Attribute] = {"upper": _i(int("triu" in str(im.node.target)))}
    if diagonal:
        props["k"] = _i(diagonal)
    im.define(im.emit(g.TriluOp, [im.value(x)], props))


@aten("cumsum.default")
def _cumsum(im: _Importer, x, dim, dtype=None):
    im.define(im.emit(g.CumSumOp, [im.cast(im.value(x), im.out_type())], {"axis": _i(dim)}))


def supported_ops() -> list[str]:
    """The ATen overloads trace mode imports (beyond constant folding)."""
    return sorted(_HANDLERS)
