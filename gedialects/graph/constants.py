"""Constants as arrays and back: the one place that decides how a computed
array becomes IR (a splat stays a `graph.fill`, anything else a
`graph.constant`), shared by the importer, folding and fusion."""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Operation, SSAValue

from gedialects.graph import ops as g
from gedialects.graph import shapes
from gedialects.graph.tensors import constant_attr, contiguous, element_type


def constant_2d_window(op: Operation) -> tuple[tuple, tuple, np.ndarray, tuple, tuple, tuple] | None:
    """(input shape, output shape, weight, strides, pads, dilations) of a
    2-D conv-like op (conv, conv_transpose) with static shapes and a constant
    weight, else None: what a compile-time rewrite of its weight needs."""
    x, out = g.shape_of(op.input), g.shape_of(op.output)  # type: ignore[attr-defined]
    weight = constant_value(op.weight)  # type: ignore[attr-defined]
    if len(x) != 4 or weight is None or not (shapes.is_static(x) and shapes.is_static(out)):
        return None
    return (tuple(x), tuple(out), weight, *op.window(4))  # type: ignore[attr-defined]


def constant_value(value: SSAValue) -> np.ndarray | None:
    """The array of a value defined by graph.constant / graph.fill, else None
    (a fill gives a zero-stride view: folding a splat costs no memory)."""
    if not isinstance(value.owner, g.ConstantOp | g.FillOp):
        return None
    # Imported here: the interpreter pulls in xDSL's interpreters (slow to load).
    from gedialects.graph.interpreter import evaluate

    return evaluate(value.owner, [])[0]


def materialize(array: np.ndarray, name: str, location: Attribute) -> Operation:
    """A graph.fill for a splat, else a graph.constant (blob key from `name`)."""
    array = np.asarray(array)
    # zero strides: a broadcast splat, no need to compare its elements
    if array.size > 1 and (not any(array.strides) or np.all(array == array.flat[0])):
        op: Operation = g.FillOp(array.flat[0].item(), TensorType(element_type(array.dtype), array.shape))
    else:
        op = g.ConstantOp(constant_attr(name, contiguous(array)))
    op.location = location  # type: ignore[assignment]
    return op
