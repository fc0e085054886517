"""Reference interpreter for the graph dialect (xDSL Interpreter + numpy).

`run(module, inputs)` executes `@main` and returns its outputs by name. It is
the oracle every graph pass is checked against. Ops of other packages (fusion
ops, plugins) add kernels with `@kernel(OpClass)`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, ModuleOp, StringAttr
from xdsl.interpreter import Interpreter, InterpreterFunctions, impl, register_impls
from xdsl.ir import Operation
from xdsl.utils.exceptions import InterpretationError

from gedialects.graph import ops as g
from gedialects.graph import reference as ref
from gedialects.graph.ops import GraphOp, shape_of
from gedialects.graph.tensors import attr_array, contiguous, numpy_dtype
from gedialects.location import describe_op

Kernel = Callable[[Any, list[np.ndarray]], Sequence[np.ndarray] | np.ndarray]
KERNELS: dict[type[Operation], Kernel] = {}


def kernel(op_type: type[Operation]) -> Callable[[Kernel], Kernel]:
    """Register the numpy implementation of an op type."""

    def register(fn: Kernel) -> Kernel:
        KERNELS[op_type] = fn
        return fn

    return register


def _out_dtype(op: Operation, i: int = 0) -> np.dtype:
    return numpy_dtype(op.results[i].type.element_type)  # type: ignore[attr-defined]


def _window(op: GraphOp, x: np.ndarray):
    n = x.ndim - 2
    return (
        op.ints("strides", (1,) * n),
        op.ints("pads", (0,) * (2 * n)),
        op.ints("dilations", (1,) * n),
    )


def _spatial_out(op: GraphOp, x: np.ndarray, ins_shapes: list[tuple[int, ...]]):
    return op.infer_shapes(ins_shapes)[0][2:]


@kernel(g.ConstantOp)
def _constant(op: g.ConstantOp, args):
    return attr_array(op.value)


@kernel(g.FillOp)
def _fill(op: g.FillOp, args):
    # A read-only zero-stride view: a splat weight costs no memory.
    return np.broadcast_to(np.asarray(op.value.value.data, dtype=_out_dtype(op)), shape_of(op.output))


@kernel(g.ConvOp)
def _conv(op: g.ConvOp, args):
    x, w = args[0], args[1]
    bias = args[2] if op.bias is not None else None
    residual = args[-1] if op.residual is not None else None
    strides, pads, dil = _window(op, x)
    out_spatial = _spatial_out(op, x, [x.shape, w.shape] + [a.shape for a in args[2:]])
    y = ref.conv(x, w, bias, strides, pads, dil, op.int_("group", 1), out_spatial)
    if residual is not None:
        y = (y + residual).astype(x.dtype)
    return ref.activate(op.str_("activation", ""), op.floats("activation_params"), y)


@kernel(g.ConvTransposeOp)
def _conv_transpose(op: g.ConvTransposeOp, args):
    x, w = args[0], args[1]
    strides, pads, dil = _window(op, x)
    out_pad = op.ints("output_padding", (0,) * (x.ndim - 2))
    bias = args[2] if len(args) > 2 else None
    return ref.conv_transpose(x, w, bias, strides, pads, dil, out_pad, op.int_("group", 1))


@kernel(g.BatchNormOp)
def _batch_norm(op: g.BatchNormOp, args):
    return ref.batch_norm(*args, op.float_("epsilon", 1e-5))


@kernel(g.MaxPoolOp)
def _max_pool(op: g.MaxPoolOp, args):
    x = args[0]
    k = op.ints("kernel_shape")
    strides, pads, dil = _window(op, x)
    return ref.max_pool(x, k, strides, pads, dil, _spatial_out(op, x, [x.shape]))


@kernel(g.AvgPoolOp)
def _avg_pool(op: g.AvgPoolOp, args):
    x = args[0]
    k = op.ints("kernel_shape")
    strides, pads, dil = _window(op, x)
    return ref.avg_pool(
        x, k, strides, pads, dil, _spatial_out(op, x, [x.shape]),
        bool(op.int_("count_include_pad", 0)),
    )


@kernel(g.GlobalAvgPoolOp)
def _global_avg_pool(op, args):
    x = args[0]
    return x.mean(axis=tuple(range(2, x.ndim)), keepdims=True, dtype=np.float64).astype(x.dtype)


@kernel(g.GlobalMaxPoolOp)
def _global_max_pool(op, args):
    x = args[0]
    return x.max(axis=tuple(range(2, x.ndim)), keepdims=True)


@kernel(g.LrnOp)
def _lrn(op: g.LrnOp, args):
    return ref.lrn(
        args[0], op.int_("size", 1), op.float_("alpha", 1e-4), op.float_("beta", 0.75),
        op.float_("bias", 1.0),
    )


@kernel(g.MatMulOp)
def _matmul(op: g.MatMulOp, args):
    y = np.matmul(args[0], args[1])
    if len(args) > 2:
        y = y + args[2]
    y = y.astype(_out_dtype(op))
    return ref.activate(op.str_("activation", ""), op.floats("activation_params"), y)


@kernel(g.GemmOp)
def _gemm(op: g.GemmOp, args):
    y = ref.gemm(
        args[0], args[1], args[2] if len(args) > 2 else None,
        bool(op.int_("trans_a", 0)), bool(op.int_("trans_b", 0)),
        op.float_("alpha", 1.0), op.float_("beta", 1.0),
    )
    return ref.activate(op.str_("activation", ""), op.floats("activation_params"), y)


@kernel(g.AttentionOp)
def _attention(op: g.AttentionOp, args):
    return ref.attention(args[0], args[1], args[2], args[3:], op.float_("scale", 1.0),
                         zero_nan=op.zero_empty_rows is not None)


@kernel(g.SoftmaxOp)
def _softmax(op: g.SoftmaxOp, args):
    y = ref.softmax(args[0], op.int_("axis", -1))
    return y if op.shape is None else y.reshape(op.ints("shape"))


@kernel(g.LogSoftmaxOp)
def _log_softmax(op: g.LogSoftmaxOp, args):
    return ref.log_softmax(args[0], op.int_("axis", -1))


@kernel(g.LayerNormOp)
def _layer_norm(op: g.LayerNormOp, args):
    x = args[0]
    bias = args[2] if op.bias is not None else None
    if op.residual is not None:
        x = (x + args[-1]).astype(x.dtype)
    return ref.layer_norm(x, args[1], bias, op.int_("axis", -1), op.float_("epsilon", 1e-5))


@kernel(g.FusionOp)
def _fusion(op: g.FusionOp, args):
    env = dict(zip(op.body.block.args, args))
    for inner in op.body.block.ops:
        if isinstance(inner, g.YieldOp):
            return tuple(env[v] for v in inner.values)
        env.update(zip(inner.results, evaluate(inner, [env[o] for o in inner.operands])))
    raise InterpretationError(f"{describe_op(op)}: body has no graph.yield")


def _unary(fn: Callable[[np.ndarray], np.ndarray]) -> Kernel:
    return lambda op, args: np.asarray(fn(args[0])).astype(args[0].dtype, copy=False)


for _op, _fn in [
    (g.ReluOp, lambda x: np.maximum(x, 0)),
    (g.SigmoidOp, ref.sigmoid),
    (g.TanhOp, np.tanh),
    (g.ErfOp, ref.erf),
    (g.SqrtOp, np.sqrt),
    (g.ExpOp, np.exp),
    (g.LogOp, np.log),
    (g.NegOp, np.negative),
    (g.AbsOp, np.abs),
    (g.ReciprocalOp, np.reciprocal),
    (g.IdentityOp, lambda x: x),
    (g.TransDataOp, lambda x: x),
]:
    KERNELS[_op] = _unary(_fn)


@kernel(g.LeakyReluOp)
def _leaky_relu(op: g.LeakyReluOp, args):
    return ref.activate("leaky_relu", [op.float_("alpha", 0.01)], args[0])


@kernel(g.ClipOp)
def _clip(op: g.ClipOp, args):
    x = args[0]
    lo = op.float_("min", -np.inf)
    hi = op.float_("max", np.inf)
    if np.issubdtype(x.dtype, np.integer):
        # Clamp in the integer type: a float round trip loses int64 digits.
        info = np.iinfo(x.dtype)

        def bound(v: float, rounding: Callable[[float], int]) -> np.integer:
            return x.dtype.type(min(max(rounding(v), info.min), info.max) if math.isfinite(v) else info.min if v < 0 else info.max)

        return np.minimum(np.maximum(x, bound(lo, math.ceil)), bound(hi, math.floor))
    return np.clip(x, lo, hi).astype(x.dtype)


@kernel(g.GeluOp)
def _gelu(op: g.GeluOp, args):
    return ref.gelu(args[0], op.str_("approximate", "none"))


@kernel(g.CastOp)
def _cast(op: g.CastOp, args):
    return args[0].astype(_out_dtype(op))


def _binary(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Kernel:
    return lambda op, args: np.asarray(fn(args[0], args[1])).astype(_out_dtype(op), copy=False)


def _divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if np.issubdtype(a.dtype, np.integer):
        # ONNX integer Div truncates toward zero; stay in integers (a float
        # quotient loses int64 digits). Floor, then step back toward zero.
        with np.errstate(divide="ignore"):
            q, r = np.divmod(a, b)
        return q + ((r != 0) & ((a < 0) != (b < 0)))
    return a / b


for _op, _fn in [
    (g.AddOp, np.add),
    (g.SubOp, np.subtract),
    (g.MulOp, np.multiply),
    (g.DivOp, _divide),
    (g.PowOp, ref.pow_),
    (g.MaxOp, np.maximum),
    (g.MinOp, np.minimum),
]:
    KERNELS[_op] = _binary(_fn)


@kernel(g.SumOp)
def _sum(op, args):
    out = args[0]
    for a in args[1:]:
        out = out + a
    return out.astype(_out_dtype(op))


def _reduce(fn: Callable[..., np.ndarray]) -> Kernel:
    def run(op: g.ReduceOp, args):
        x = args[0]
        axes = op.ints("axes") or tuple(range(x.ndim))
        keep = bool(op.int_("keepdims", 1))
        return np.asarray(fn(x, axis=tuple(a % x.ndim for a in axes), keepdims=keep)).astype(x.dtype)

    return run


def _identity_of(fn: Callable[..., np.ndarray], sign: int) -> Callable[..., np.ndarray]:
    """Max/min reduction whose value over an empty set is its identity
    (-inf/+inf, or the integer extreme), as ONNX specifies."""

    def run(x: np.ndarray, axis, keepdims):
        if x.dtype == np.bool_:
            initial = sign < 0
        elif np.issubdtype(x.dtype, np.integer):
            info = np.iinfo(x.dtype)
            initial = info.min if sign > 0 else info.max
        else:
            initial = -np.inf if sign > 0 else np.inf
        return fn(x, axis=axis, keepdims=keepdims, initial=initial)

    return run


def _mean(x: np.ndarray, axis, keepdims):
    """The mean; 0 over an empty set. ONNX leaves it undefined (onnx's
    reference gives NaN); onnxruntime, the oracle here, gives 0."""
    count = int(np.prod([x.shape[a] for a in axis]))
    if count == 0:
        return np.sum(x, axis=axis, keepdims=keepdims)
    return np.mean(x, axis=axis, keepdims=keepdims)


KERNELS[g.ReduceMeanOp] = _reduce(_mean)
KERNELS[g.ReduceSumOp] = _reduce(np.sum)
KERNELS[g.ReduceMaxOp] = _reduce(_identity_of(np.max, +1))
KERNELS[g.ReduceMinOp] = _reduce(_identity_of(np.min, -1))


@kernel(g.ConcatOp)
def _concat(op: g.ConcatOp, args):
    return np.concatenate(args, axis=op.int_("axis", 0))


@kernel(g.SplitOp)
def _split(op: g.SplitOp, args):
    x = args[0]
    bounds = np.cumsum(op.ints("split"))[:-1]
    return tuple(np.split(x, bounds, axis=op.int_("axis", 0)))


@kernel(g.SliceOp)
def _slice(op: g.SliceOp, args):
    x = args[0]
    starts = op.ints("starts")
    axes = [a % x.ndim for a in op.ints("axes", range(len(starts)))]
    steps = op.ints("steps", (1,) * len(starts))
    return ref.slice_(x, starts, op.ints("ends"), axes, steps)


@kernel(g.ReshapeOp)
def _reshape(op: g.ReshapeOp, args):
    return args[0].reshape(op.infer_shapes([args[0].shape])[0])


@kernel(g.FlattenOp)
def _flatten(op: g.FlattenOp, args):
    return args[0].reshape(op.infer_shapes([args[0].shape])[0])


@kernel(g.TransposeOp)
def _transpose(op: g.TransposeOp, args):
    return contiguous(args[0].transpose(op.ints("perm")))


@kernel(g.SpaceToDepthOp)
def _space_to_depth(op: g.SpaceToDepthOp, args):
    x, s = args[0], op.int_("blocksize", 1)
    n, c, h, w = x.shape
    cells = x.reshape(n, c, h // s, s, w // s, s).transpose(op.cell_order())
    return contiguous(cells.reshape(n, s * s * c, h // s, w // s))


@kernel(g.SqueezeOp)
def _squeeze(op: g.SqueezeOp, args):
    return args[0].reshape(op.infer_shapes([args[0].shape])[0])


@kernel(g.UnsqueezeOp)
def _unsqueeze(op: g.UnsqueezeOp, args):
    return args[0].reshape(op.infer_shapes([args[0].shape])[0])


@kernel(g.GatherOp)
def _gather(op: g.GatherOp, args):
    x, idx = args
    axis = op.int_("axis", 0) % x.ndim
    n = x.shape[axis]
    bad = (idx < -n) | (idx >= n)
    if np.any(bad):
        raise InterpretationError(
            f"{describe_op(op)}: index {int(idx[bad].flat[0])} is out of range [-{n}, {n}) along axis {axis}"
        )
    return np.take(x, np.where(idx < 0, idx + n, idx), axis=axis)


@kernel(g.OffloadOp)
@kernel(g.ReloadOp)
def _copy(op, args):
    """Device <-> host copies (graph-plan-memory): the value is unchanged."""
    return np.array(args[0], copy=True)


@kernel(g.ShapeOp)
def _shape(op, args):
    return np.array(args[0].shape, dtype=np.int64)


def evaluate(op: Operation, args: Sequence[np.ndarray]) -> tuple[np.ndarray, ...]:
    """Run one op's kernel; the results as a tuple."""
    fn = KERNELS.get(type(op))
    if fn is None:
        raise InterpretationError(f"{describe_op(op)}: the reference interpreter has no kernel")
    out = fn(op, list(args))
    return tuple(out) if isinstance(out, tuple | list) else (out,)


def _dispatcher(op_type: type[Operation]):
    def run(self, interpreter: Interpreter, op: Operation, args: tuple[Any, ...]):
        return evaluate(op, args)

    return impl(op_type)(run)


def _functions() -> InterpreterFunctions:
    # xDSL dispatches on the exact op class: build one entry per kernel
    # registered so far (plugins may have added some since import).
    methods = {f"run_{i}": _dispatcher(t) for i, t in enumerate(KERNELS)}
    return register_impls(type("GraphKernels", (InterpreterFunctions,), methods))()


def main_function(module: ModuleOp, name: str = "main") -> func.FuncOp:
    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.sym_name.data == name:
            return op
    raise InterpretationError(f"the module has no func.func @{name}")


def input_names(fn: func.FuncOp) -> list[str]:
    """Graph input names: `ge.name` argument attributes, else arg0, arg1, ..."""
    return [_arg_name(fn.arg_attrs, i, "arg") for i in range(len(fn.args))]


def output_names(fn: func.FuncOp) -> list[str]:
    return [_arg_name(fn.res_attrs, i, "out") for i in range(len(fn.function_type.outputs))]


def _arg_name(attrs: ArrayAttr | None, i: int, prefix: str) -> str:
    if attrs is not None and i < len(attrs.data):
        d = attrs.data[i]
        if isinstance(d, DictionaryAttr) and isinstance(n := d.data.get("ge.name"), StringAttr):
            return n.data
    return f"{prefix}{i}"


def run(module: ModuleOp, inputs: Mapping[str, np.ndarray], entry: str = "main") -> dict[str, np.ndarray]:
    """Execute `@main` on named inputs; outputs by name."""
    fn = main_function(module, entry)
    names = input_names(fn)
    missing = [n for n in names if n not in inputs]
    if missing:
        raise InterpretationError(f"missing inputs: {', '.join(missing)}")
    args = []
    for name, arg in zip(names, fn.args):
        want = numpy_dtype(arg.type.element_type)  # type: ignore[attr-defined]
        args.append(np.asarray(inputs[name]).astype(want, copy=False))
    # imported here: the package imports every xDSL interpreter (RISC-V's
    # too), a fifth of a second at the start of every ge-opt / ge-compile
    # process, most of which never run the interpreter
    from xdsl.interpreters.func import FuncFunctions

    interpreter = Interpreter(module)
    interpreter.register_implementations(FuncFunctions())
    interpreter.register_implementations(_functions())
    results = interpreter.call_op(fn, tuple(args))
    return dict(zip(output_names(fn), (np.asarray(r) for r in results)))


# ---- ops-A: comparison, logic, selection

for _op, _fn in [
    (g.EqualOp, np.equal),
    (g.LessOp, np.less),
    (g.LessEqualOp, np.less_equal),
    (g.GreaterOp, np.greater),
    (g.GreaterEqualOp, np.greater_equal),
    (g.AndOp, np.logical_and),
    (g.OrOp, np.logical_or),
    (g.XorOp, np.logical_xor),
]:
    KERNELS[_op] = _binary(_fn)

for _op, _fn in [
    (g.NotOp, np.logical_not),
    (g.SinOp, np.sin),
    (g.CosOp, np.cos),
    (g.SoftplusOp, ref.softplus),
    (g.HardSwishOp, ref.hard_swish),
]:
    KERNELS[_op] = _unary(_fn)

KERNELS[g.IsNanOp] = lambda op, args: np.isnan(args[0])  # a bool result, not the operand's type


@kernel(g.HardSigmoidOp)
def _hard_sigmoid(op: g.HardSigmoidOp, args):
    return ref.hard_sigmoid(args[0], op.float_("alpha", 0.2), op.float_("beta", 0.5))


@kernel(g.ModOp)
def _mod(op: g.ModOp, args):
    return ref.mod(args[0], args[1], bool(op.int_("fmod", 0)))


@kernel(g.WhereOp)
def _where(op: g.WhereOp, args):
    return np.where(args[0], args[1], args[2]).astype(_out_dtype(op), copy=False)


@kernel(g.ExpandOp)
def _expand(op: g.ExpandOp, args):
    # A read-only broadcast view, as graph.fill gives: no copy of the data.
    return np.broadcast_to(args[0], op.infer_shapes([args[0].shape])[0])


@kernel(g.TileOp)
def _tile(op: g.TileOp, args):
    return np.tile(args[0], op.ints("repeats"))


@kernel(g.TriluOp)
def _trilu(op: g.TriluOp, args):
    fn = np.triu if op.int_("upper", 1) else np.tril
    return fn(args[0], op.int_("k", 0)).astype(args[0].dtype, copy=False)


@kernel(g.CumSumOp)
def _cumsum(op: g.CumSumOp, args):
    x = args[0]
    axis = op.int_("axis", 0) % x.ndim
    return ref.cumsum(x, axis, bool(op.int_("exclusive", 0)), bool(op.int_("reverse", 0)))


@kernel(g.RangeOp)
def _range(op: g.RangeOp, args):
    try:
        return ref.range_(*args)
    except ValueError as e:
        raise InterpretationError(f"{describe_op(op)}: {e}") from None


# ---- ops-B


@kernel(g.PadOp)
def _pad(op: g.PadOp, args):
    value = op.value.value.data if op.value is not None else 0
    return ref.pad(args[0], op.ints("pads"), op.str_("mode", "constant"), value)


@kernel(g.InstanceNormOp)
def _instance_norm(op: g.InstanceNormOp, args):
    return ref.instance_norm(*args, op.float_("epsilon", 1e-5))


@kernel(g.GroupNormOp)
def _group_norm(op: g.GroupNormOp, args):
    return ref.group_norm(*args, op.int_("num_groups", 1), op.float_("epsilon", 1e-5))


@kernel(g.ResizeOp)
def _resize(op: g.ResizeOp, args):
    x = args[0]
    return ref.resize(x, op.infer_shapes([x.shape])[0], op.floats("scales"), **op.interpolation())


@kernel(g.EinsumOp)
def _einsum(op: g.EinsumOp, args):
    return ref.einsum(op.equation.data, args)


def _arg_reduce(largest: bool) -> Kernel:
    def run(op: g.ArgReduceOp, args):
        x = args[0]
        return ref.arg_reduce(
            x, op.int_("axis", 0) % x.ndim, bool(op.int_("keepdims", 1)), bool(op.int_("select_last_index", 0)), largest
        )

    return run


KERNELS[g.ArgMaxOp] = _arg_reduce(True)
KERNELS[g.ArgMinOp] = _arg_reduce(False)


@kernel(g.TopKOp)
def _topk(op: g.TopKOp, args):
    x = args[0]
    return ref.top_k(x, op.int_("k", 0), op.int_("axis", -1) % x.ndim, bool(op.int_("largest", 1)))


@kernel(g.GatherElementsOp)
def _gather_elements(op: g.GatherElementsOp, args):
    x, idx = args
    try:
        return ref.gather_elements(x, idx, op.int_("axis", 0) % x.ndim)
    except IndexError as e:
        raise InterpretationError(f"{describe_op(op)}: {e}") from None


KERNELS[g.ReduceL2Op] = _reduce(ref.reduce_l2)
KERNELS[g.ReduceProdOp] = _reduce(ref.reduce_prod)


@kernel(g.GatherNDOp)
def _gather_nd(op: g.GatherNDOp, args):
    x, idx = args
    try:
        return ref.gather_nd(x, idx, op.int_("batch_dims", 0))
    except IndexError as e:
        raise InterpretationError(f"{describe_op(op)}: {e}") from None
