"""A batch_norm with constant statistics as what it computes per channel:
x * s + t, with s = scale / sqrt(var + eps) and t = bias - mean * s (in
float64), broadcast over the dims after the channel (dim 1).

One definition for graph-decompose (BatchNormAsAffine: a batch_norm of rows)
and graph-fuse (BatchnormLoopFusionPass: a batch_norm an elementwise chain
reads, which loop fusion then takes in)."""

from __future__ import annotations

import numpy as np
from xdsl.ir import Operation

from gedialects.graph import ops as g
from gedialects.graph.constants import constant_value, materialize
from gedialects.graph.tensors import numpy_dtype
from gedialects.location import node_name


def affine(op: g.BatchNormOp) -> tuple[np.ndarray, np.ndarray] | None:
    """(s, t) per channel, or None when a statistic or parameter is computed."""
    params = [constant_value(v) for v in (op.scale, op.bias, op.mean, op.var)]
    if any(p is None for p in params):
        return None
    gamma, beta, mean, var = (np.asarray(p, np.float64) for p in params)
    scale = gamma / np.sqrt(var + op.float_("epsilon", 1e-5))
    return scale, beta - mean * scale


def affine_ops(op: g.BatchNormOp, scale: np.ndarray, shift: np.ndarray) -> list[Operation]:
    """The graph ops computing x * scale + shift per channel of `op`'s input
    (constants in its dtype; a scale of ones is left out, and a shift of
    zeros when there is a scale); the last one's result replaces `op`'s."""
    x = g.shape_of(op.input)
    per_channel = [x[1]] + [1] * (len(x) - 2)
    dtype = numpy_dtype(g.element_type_of(op.input))
    loc, name = op.location, node_name(op)
    unit_scale = bool(np.all(scale == 1))
    steps = [] if unit_scale else [(scale, "scale", g.MulOp)]
    if not (np.all(shift == 0) and steps):
        steps.append((shift, "shift", g.AddOp))
    new: list[Operation] = []
    value = op.input
    for array, what, cls in steps:
        const = materialize(np.ascontiguousarray(array.astype(dtype).reshape(per_channel)), f"{name}_{what}", loc)
        step = cls.build_inferred([value, const.results[0]], {}, location=loc)
        new += [const, step]
        value = step.results[0]
    new[-1].attributes.update(op.attributes)
    return new
