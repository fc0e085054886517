"""Small queries rules ask about the graph: users, constants, activations."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from xdsl.dialects.builtin import (
    ArrayAttr,
    FloatAttr,
    NameLoc,
    StringAttr,
    TensorType,
    UnregisteredOp,
    f32,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import OptOperandDef, VarOperandDef

from gedialects.graph import ops as g
from gedialects.graph import shapes
from gedialects.graph.constants import constant_value, materialize
from gedialects.graph.tensors import is_float
from gedialects.location import describe_op, node_name

from .registry import NOT_CONSTANT, OTHER_USERS, UNKNOWN_OP, UNSUPPORTED_ATTRIBUTE, Miss, Rewrite

ABSORBED = "absorbed"
"""Discardable attribute of a fused op: the model nodes it absorbed."""


def users(value: SSAValue) -> list[Operation]:
    """The ops using `value`, each once, in use order."""
    seen: dict[int, Operation] = {}
    for use in value.uses:
        seen.setdefault(id(use.operation), use.operation)
    return list(seen.values())


def only_user(value: SSAValue) -> Operation | None:
    found = users(value)
    return found[0] if len(found) == 1 else None


def other_users(value: SSAValue, inside: Iterable[Operation]) -> list[Operation]:
    """Users of `value` that are not among `inside`."""
    ids = {id(o) for o in inside}
    return [u for u in users(value) if id(u) not in ids]


def other_users_miss(anchor: Operation, value: SSAValue, inside: Iterable[Operation]) -> Miss | None:
    """A Miss naming the outside users of an intermediate, or None."""
    others = other_users(value, inside)
    if not others:
        return None
    owner = value.owner
    what = describe_op(owner) if isinstance(owner, Operation) else "a block argument"
    names = ", ".join(describe_op(o) for o in others[:3]) + (", ..." if len(others) > 3 else "")
    return Miss(anchor, OTHER_USERS, f"{what} is also used by {names}")


def binary_operands(op: Operation) -> tuple[SSAValue, SSAValue] | None:
    """(lhs, rhs) of a binary elementwise op or a two-operand graph.sum."""
    if isinstance(op, g.ElementwiseBinaryOp) or (isinstance(op, g.SumOp) and len(op.operands) == 2):
        return op.operands[0], op.operands[1]
    return None


def is_add(op: Operation) -> bool:
    """graph.add, or graph.sum of two tensors (ONNX Sum in ResNets)."""
    return isinstance(op, g.AddOp) or (isinstance(op, g.SumOp) and len(op.operands) == 2)


def other_operand(op: Operation, value: SSAValue) -> SSAValue | None:
    """The operand of a binary op that is not `value` (None if both are)."""
    pair = binary_operands(op)
    if pair is None:
        return None
    a, b = pair
    if a is value and b is not value:
        return b
    if b is value and a is not value:
        return a
    return None


def scalar_constant(value: SSAValue) -> float | None:
    """The number a constant tensor holds in every element, if it is one."""
    owner = value.owner
    if isinstance(owner, g.FillOp):
        return float(owner.value.value.data)
    if isinstance(owner, g.ConstantOp):
        if shapes.num_elements(g.shape_of(value)) > 64:
            return None
        array = constant_value(value)
        if array is None or array.size == 0:
            return None
        first = array.flat[0]
        if np.all(array == first):
            return float(first)
    return None


def is_constant(value: SSAValue) -> bool:
    return isinstance(value.owner, g.ConstantOp | g.FillOp)


def close(x: float | None, want: float, rel: float = 1e-3) -> bool:
    """x equals want up to `rel` (f16 constants round at ~5e-4)."""
    return x is not None and abs(x - want) <= rel * abs(want)


def is_static(value: SSAValue) -> bool:
    return isinstance(value.type, TensorType) and shapes.is_static(g.shape_of(value))


def float_tensor(value: SSAValue) -> bool:
    return isinstance(value.type, TensorType) and is_float(value.type.element_type)


def absorbed_names(op: Operation) -> list[str]:
    """The model nodes `op` stands for: its `absorbed` list, else its own name."""
    attr = op.attributes.get(ABSORBED)
    if isinstance(attr, ArrayAttr):
        return [a.data for a in attr.data if isinstance(a, StringAttr)]
    return [node_name(op)]


def absorbed_attr(ops: Iterable[Operation]) -> ArrayAttr:
    """The model nodes `ops` stand for. An op named after a node that
    another of them lists as absorbed is a piece of that node (a rewrite
    split it: a batch_norm's scale and shift) and adds nothing."""
    ops = list(ops)
    listed = {n for op in ops if ABSORBED in op.attributes for n in absorbed_names(op)}
    names: list[str] = []
    for op in ops:
        if ABSORBED not in op.attributes and isinstance(op.location, NameLoc) and node_name(op) in listed:
            continue
        names += absorbed_names(op)
    return ArrayAttr([StringAttr(n) for n in names])


# --------------------------------------------------------------- activations

ACTIVATION_OPS = (g.ReluOp, g.LeakyReluOp, g.ClipOp, g.SigmoidOp, g.TanhOp, g.GeluOp, g.HardSigmoidOp, g.HardSwishOp)
"""Ops that become an `activation` epilogue of conv/matmul/gemm."""

_NOT_ACTIVATIONS = (g.IdentityOp, g.CastOp)


def _param(op: g.GraphOp, name: str, default: float) -> float:
    """A float attribute as an epilogue parameter (f64): an f32 attribute
    gives the shortest decimal that rounds back to it (0.2, not
    0.20000000298023224), so both apply the same f32 value."""
    attr = op.properties.get(name)
    value = op.float_(name, default)
    if isinstance(attr, FloatAttr) and attr.type == f32:
        return float(str(np.float32(value)))
    return value


def activation_of(op: Operation) -> tuple[str, list[float]] | str:
    """The (activation, activation_params) epilogue equal to `op`, or the
    reason it has none (an UNSUPPORTED_ATTRIBUTE detail)."""
    if isinstance(op, g.ReluOp):
        return "relu", []
    if isinstance(op, g.LeakyReluOp):
        return "leaky_relu", [_param(op, "alpha", 0.01)]
    if isinstance(op, g.ClipOp):
        lo, hi = op.properties.get("min"), op.properties.get("max")
        if lo is not None and hi is not None:
            return "clip", [_param(op, "min", 0.0), _param(op, "max", 0.0)]
        if lo is not None and hi is None and op.float_("min", 0.0) == 0.0:
            return "relu", []
        return "a clip with an open bound other than max(x, 0) has no epilogue form"
    if isinstance(op, g.SigmoidOp):
        return "sigmoid", []
    if isinstance(op, g.TanhOp):
        return "tanh", []
    if isinstance(op, g.GeluOp):
        return "gelu", [1.0] if op.str_("approximate", "none") == "tanh" else []
    if isinstance(op, g.HardSigmoidOp):
        return "hard_sigmoid", [_param(op, "alpha", 0.2), _param(op, "beta", 0.5)]
    if isinstance(op, g.HardSwishOp):
        return "hard_swish", []
    return f"{op.name} is not an activation"


def activation_candidate(value: SSAValue) -> Operation | None:
    """A user of `value` that looks like an activation applied to it: a
    supported activation, another unary elementwise graph op, or a one-operand
    op of another dialect (a custom op) of the same type."""
    found = None
    for user in users(value):
        if isinstance(user, ACTIVATION_OPS):
            return user
        if found is None and _unary_like(user, value):
            found = user
    return found


def _unary_like(op: Operation, value: SSAValue) -> bool:
    if isinstance(op, _NOT_ACTIVATIONS):
        return False
    if isinstance(op, g.ElementwiseUnaryOp):
        return True
    if isinstance(op, g.GraphOp | g.FusionOp):
        return False
    return (
        len(op.operands) == 1
        and op.operands[0] is value
        and len(op.results) == 1
        and op.results[0].type == value.type
    )


def _is_unregistered(op: Operation) -> bool:
    return isinstance(op, UnregisteredOp)


def activation_miss(anchor: Operation, act: Operation) -> Miss | None:
    """Why `act` cannot be an epilogue, or None if it can."""
    if not isinstance(act, g.GraphOp) or _is_unregistered(act):
        return Miss(anchor, UNKNOWN_OP, f"{op_label(act)} is not a graph op")
    kind = activation_of(act)
    if isinstance(kind, str):
        if isinstance(act, ACTIVATION_OPS):
            return Miss(anchor, UNSUPPORTED_ATTRIBUTE, kind)
        return Miss(anchor, UNKNOWN_OP, f"{act.name} has no epilogue form")
    return None


# ------------------------------------------------------------------ building

_SEGMENTS = "operandSegmentSizes"


def rebuild(
    op: g.GraphOp,
    cls: type[g.GraphOp] | None = None,
    operands: dict[str, SSAValue | None] | None = None,
    properties: dict[str, Attribute | None] | None = None,
) -> g.GraphOp:
    """A new op like `op` (or of class `cls`) with some operands and
    properties replaced (None removes an optional one); result types are
    inferred, the location is `op`'s."""
    cls = cls or type(op)
    operands = operands or {}
    groups: list[SSAValue | list[SSAValue]] = []
    for name, d in cls.get_irdl_definition().operands:
        value = operands[name] if name in operands else getattr(op, name, None)
        if isinstance(d, OptOperandDef):
            groups.append([] if value is None else [value])
        elif isinstance(d, VarOperandDef):
            groups.append(list(value or ()))
        else:
            assert value is not None, f"{cls.name} needs operand {name}"
            groups.append(value)
    props = {k: v for k, v in op.properties.items() if k != _SEGMENTS}
    for k, v in (properties or {}).items():
        if v is None:
            props.pop(k, None)
        else:
            props[k] = v
    known = {name for name, _ in cls.get_irdl_definition().properties.items()}
    props = {k: v for k, v in props.items() if k in known}
    return cls.build_inferred(groups, props, location=op.location)


def activation_props(kind: str, params: list[float]) -> dict[str, Attribute | None]:
    return {
        "activation": StringAttr(kind),
        "activation_params": g.float_array(params) if params else None,
    }


def op_label(op: Operation) -> str:
    """`describe_op`, with an unregistered op's own name."""
    if isinstance(op, UnregisteredOp):
        text = describe_op(op)
        return text.replace(op.name, op.op_name.data, 1)
    return describe_op(op)


def not_constant_miss(anchor: Operation, named: list[tuple[str, SSAValue | None]]) -> Miss | None:
    """A Miss naming the first of `named` that is computed, or None."""
    for what, value in named:
        if value is not None and not is_constant(value):
            return Miss(anchor, NOT_CONSTANT, f"the {what} is computed, not a constant")
    return None


def channel_vector(value: SSAValue, out: shapes.Shape) -> np.ndarray | None:
    """The per-output-channel vector of a constant broadcast against a result
    `out` (N, C, ...), or None if it varies along another dim."""
    c = g.shape_of(value)
    if len(c) > len(out):
        return None
    padded = (1,) * (len(out) - len(c)) + tuple(c)
    if any(d != 1 for i, d in enumerate(padded) if i != 1) or padded[1] not in (1, out[1]):
        return None
    array = constant_value(value)
    assert array is not None
    return np.broadcast_to(array.reshape(padded[1]).astype(np.float64), (out[1],))


def scaling_users(value: SSAValue) -> list[tuple[Operation, SSAValue]]:
    """(user, constant) for each user of `value` that multiplies it by, adds
    to it or subtracts from it a constant without growing its shape
    (`value - c`; `c - value` negates it: not a scale)."""
    found = []
    shape = g.shape_of(value)
    for user in users(value):
        pair = binary_operands(user)
        if pair is None or not isinstance(user, g.MulOp | g.SubOp) and not is_add(user):
            continue
        lhs, rhs = pair
        const = rhs if lhs is value else lhs
        if const is value or not is_constant(const) or (isinstance(user, g.SubOp) and rhs is value):
            continue
        if g.shape_of(user.results[0]) == shape:
            found.append((user, const))
    return found


def with_folded_constants(op: g.GraphOp, dtype: np.dtype, folded: dict[str, tuple[str, np.ndarray]]) -> Rewrite:
    """`op` rebuilt with operands replaced by new constants in `dtype`:
    {operand: (tag, values)}, each constant named `<node>_<tag>_folded`."""
    name = node_name(op)
    constants = {operand: materialize(values.astype(dtype, copy=False), f"{name}_{tag}_folded", op.location)
                 for operand, (tag, values) in folded.items()}
    fused = rebuild(op, operands={operand: c.results[0] for operand, c in constants.items()})
    return Rewrite([*constants.values(), fused], fused)
