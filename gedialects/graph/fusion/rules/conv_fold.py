"""Fold per-channel affine ops that follow a convolution into its weights and bias.

- `ConvBatchnormFusionPass`: conv → batch_norm. With s = scale / sqrt(var + eps)
  per output channel: w' = w * s, b' = (b - mean) * s + beta (b = 0 without
  bias), computed in float64 and cast to the weight dtype.
- `ConvScaleFusionPass`: conv → mul/add/sub by a constant that varies along
  the channel only (BatchNorm exported as Mul+Add, as in DenseNet and
  Inception-v2): mul c gives w' = w * c, b' = b * c; add c gives b' = b + c.
- `PadConv2dFusionPass`: a zero constant pad of the spatial dims before a 2-d
  conv (TF "same" padding, as HF's MobileNetV2 and EfficientNet export it)
  → the conv's own pads (added to them; asymmetric is fine).
"""

from __future__ import annotations

import numpy as np
from xdsl.ir import Operation

from gedialects.graph import ops as g
from gedialects.graph import shapes
from gedialects.graph.constants import constant_value
from gedialects.graph.tensors import numpy_dtype

from ..helpers import (
    channel_vector,
    is_constant,
    not_constant_miss,
    other_users_miss,
    rebuild,
    scaling_users,
    with_folded_constants,
    users,
)
from ..registry import (
    NOT_CONSTANT,
    UNSUPPORTED_ATTRIBUTE,
    FusionRule,
    Match,
    Miss,
    Phase,
    Rewrite,
)


def _epilogue_miss(conv: g.ConvOp, *, residual_ok: bool = False) -> Miss | None:
    if conv.activation is not None:
        return Miss(conv, UNSUPPORTED_ATTRIBUTE, f"the conv already has a {conv.activation.data} epilogue")
    if conv.residual is not None and not residual_ok:
        return Miss(conv, UNSUPPORTED_ATTRIBUTE, "the conv already has a residual epilogue")
    return None


def _folded_conv(conv: g.ConvOp, w: np.ndarray, b: np.ndarray) -> Rewrite:
    return with_folded_constants(conv, numpy_dtype(g.element_type_of(conv.weight)), {"weight": ("w", w), "bias": ("b", b)})


def _weights(conv: g.ConvOp) -> tuple[np.ndarray, np.ndarray]:
    """The conv's weights as they are and its bias in float64 (zeros without one)."""
    w = constant_value(conv.weight)
    assert w is not None
    cout = w.shape[0]
    b = constant_value(conv.bias) if conv.bias is not None else None
    b64 = np.zeros(cout) if b is None else np.broadcast_to(b.astype(np.float64), (cout,))
    return w, b64


def _per_out_channel(conv: g.ConvOp, w: np.ndarray, v: np.ndarray) -> np.ndarray:
    """w * v per output channel, computed in float64 and rounded once to the
    weights' dtype. NumPy casts block by block inside the multiply, so no
    weight-sized float64 array exists (ResNet-50's would be 200 MB, and
    fresh memory is what such a fold mostly spent its time on)."""
    out = np.empty(w.shape, numpy_dtype(g.element_type_of(conv.weight)))
    np.multiply(w, v.reshape((-1,) + (1,) * (w.ndim - 1)), out=out, dtype=np.float64, casting="same_kind")
    return out


class ConvBatchnormFusion(FusionRule):
    name = "ConvBatchnormFusionPass"
    summary = "conv → batch_norm: fold the normalisation into the conv weights and bias"
    anchors = (g.ConvOp,)
    phase = Phase.FOLD

    def match(self, op: Operation) -> Match | Miss | None:
        assert isinstance(op, g.ConvOp)
        bn = next(
            (u for u in users(op.output) if isinstance(u, g.BatchNormOp) and u.input is op.output),
            None,
        )
        if bn is None:
            return None
        miss = (
            _epilogue_miss(op)
            or other_users_miss(op, op.output, [bn])
            or not_constant_miss(
                op,
                [
                    ("conv weight", op.weight),
                    ("conv bias", op.bias),
                    ("batch_norm scale", bn.scale),
                    ("batch_norm bias", bn.bias),
                    ("batch_norm mean", bn.mean),
                    ("batch_norm variance", bn.var),
                ],
            )
        )
        return miss or Match(op, [op, bn], bn)

    def rewrite(self, match: Match) -> Rewrite:
        conv, bn = match.anchor, match.data
        assert isinstance(conv, g.ConvOp) and isinstance(bn, g.BatchNormOp)
        w, b = _weights(conv)
        scale, beta, mean, var = (
            constant_value(v).astype(np.float64)  # type: ignore[union-attr]
            for v in (bn.scale, bn.bias, bn.mean, bn.var)
        )
        s = scale / np.sqrt(var + bn.float_("epsilon", 1e-5))
        return _folded_conv(conv, _per_out_channel(conv, w, s), (b - mean) * s + beta)


class ConvScaleFusion(FusionRule):
    name = "ConvScaleFusionPass"
    summary = "conv → mul/add/sub by a per-channel constant: fold it into the conv weights and bias"
    anchors = (g.ConvOp,)
    phase = Phase.FOLD

    def match(self, op: Operation) -> Match | Miss | None:
        assert isinstance(op, g.ConvOp)
        for user, const in scaling_users(op.output):
            out = g.shape_of(op.output)
            is_mul = isinstance(user, g.MulOp)
            if shapes.is_static(out) and channel_vector(const, out) is None:
                if not is_mul:
                    continue  # a residual add: ConvAddFusionPass's case
                return Miss(
                    op,
                    UNSUPPORTED_ATTRIBUTE,
                    f"the constant {shapes.fmt(g.shape_of(const))} of {user.name} varies along other dims than the channel",
                )
            miss = _epilogue_miss(op, residual_ok=not is_mul) or other_users_miss(op, op.output, [user])
            if miss:
                return miss
            if is_mul and not is_constant(op.weight):
                return Miss(op, NOT_CONSTANT, "the conv weight is computed, not a constant")
            if op.bias is not None and not is_constant(op.bias):
                return Miss(op, NOT_CONSTANT, "the conv bias is computed, not a constant")
            return Match(op, [op, user], (user, const))
        return None

    def rewrite(self, match: Match) -> Rewrite:
        conv = match.anchor
        assert isinstance(conv, g.ConvOp)
        user, const = match.data
        v = channel_vector(const, g.shape_of(conv.output))
        assert v is not None
        cout = g.shape_of(conv.weight)[0]
        b = constant_value(conv.bias).astype(np.float64) if conv.bias is not None else np.zeros(cout)  # type: ignore[union-attr]
        if isinstance(user, g.MulOp):
            w, b = _weights(conv)
            return _folded_conv(conv, _per_out_channel(conv, w, v), b * v)
        b = b - v if isinstance(user, g.SubOp) else b + v
        dtype = numpy_dtype(g.element_type_of(conv.output))
        return with_folded_constants(conv, dtype, {"bias": ("b", b)})


def _spatial_zero_pads(pad: g.PadOp) -> tuple[int, int, int, int] | str:
    """The (top, left, bottom, right) of a 4-d zero constant pad of H and W
    only, or why it is not one."""
    if pad.str_("mode", "constant") != "constant":
        return f"pad mode {pad.str_('mode', 'constant')} is not a zero fill"
    if pad.value is not None and float(pad.value.value.data) != 0.0:  # type: ignore[union-attr]
        return f"pad value {pad.value.value.data} is not zero"  # type: ignore[union-attr]
    p = pad.ints("pads")
    if len(p) != 8:
        return f"a {len(p) // 2}-d pad is not a 2-d conv's"
    if any(x < 0 for x in p):
        return "a negative pad crops"
    if p[0] or p[1] or p[4] or p[5]:
        return "the pad grows the batch or channel dims"
    return (p[2], p[3], p[6], p[7])


class PadConvFusion(FusionRule):
    name = "PadConv2dFusionPass"
    summary = "pad (zeros, H/W only) → conv: add the pad to the conv's pads"
    anchors = (g.ConvOp,)
    phase = Phase.FOLD

    def match(self, op: Operation) -> Match | Miss | None:
        assert isinstance(op, g.ConvOp)
        pad = op.input.owner
        if not isinstance(pad, g.PadOp):
            return None
        spatial = _spatial_zero_pads(pad)
        if isinstance(spatial, str):
            return Miss(op, UNSUPPORTED_ATTRIBUTE, spatial)
        miss = other_users_miss(op, pad.output, [op])
        return miss or Match(op, [pad, op], spatial)

    def rewrite(self, match: Match) -> Rewrite:
        conv = match.anchor
        assert isinstance(conv, g.ConvOp)
        pad = conv.input.owner
        assert isinstance(pad, g.PadOp)
        own = conv.ints("pads", (0, 0, 0, 0))
        pads = [a + b for a, b in zip(own, match.data)]
        fused = rebuild(conv, operands={"input": pad.input}, properties={"pads": g.int_array(pads)})
        return Rewrite([fused], fused)
