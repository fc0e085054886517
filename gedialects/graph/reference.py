"""Numpy kernels with ONNX semantics: the numerical ground truth of the graph
dialect. Pure functions on arrays; the interpreter maps ops onto them, and
constant folding reuses them."""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import product

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view


def _spatial_pad(x: np.ndarray, pads: Sequence[int], value: float) -> np.ndarray:
    n = len(pads) // 2
    width = [(0, 0)] * (x.ndim - n) + [(pads[i], pads[i + n]) for i in range(n)]
    if not any(pads):
        return x
    return np.pad(x, width, constant_values=value)


def _windows(
    xp: np.ndarray,
    kernel: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
    out: Sequence[int],
) -> np.ndarray:
    """View of shape (..., *out, *kernel) over the spatial dims of a padded input."""
    n = len(kernel)
    span = [d * (k - 1) + 1 for d, k in zip(dilations, kernel)]
    axes = tuple(range(xp.ndim - n, xp.ndim))
    win = sliding_window_view(xp, span, axis=axes)
    lead = (slice(None),) * (xp.ndim - n)
    index = (
        lead
        + tuple(slice(0, (o - 1) * s + 1, s) for o, s in zip(out, strides))
        + tuple(slice(None, None, d) for d in dilations)
    )
    return win[index]


def conv(
    x: np.ndarray,
    w: np.ndarray,
    b: np.ndarray | None,
    strides: Sequence[int],
    pads: Sequence[int],
    dilations: Sequence[int],
    group: int,
    out_spatial: Sequence[int],
) -> np.ndarray:
    n = x.ndim - 2
    batch, cin = x.shape[:2]
    cout, kernel = w.shape[0], w.shape[2:]
    cg, mg = cin // group, cout // group
    win = _windows(_spatial_pad(x, pads, 0.0), kernel, strides, dilations, out_spatial)
    npos = math.prod(out_spatial)
    ksize = math.prod(kernel)
    # im2col per group: (G, N*P, Cg*K) @ (G, Cg*K, Mg) is one batched GEMM.
    spatial_axes = tuple(range(2, 2 + n))
    kernel_axes = tuple(range(2 + n, 2 + 2 * n))
    cols = win.transpose(0, *spatial_axes, 1, *kernel_axes).reshape(batch * npos, group, cg * ksize)
    # Accumulate in float64: the reference must not depend on BLAS blocking
    # (ill-conditioned models otherwise differ per channel by an ulp).
    cols = np.ascontiguousarray(cols.transpose(1, 0, 2), dtype=np.float64)
    wg = w.reshape(group, mg, cg * ksize).transpose(0, 2, 1).astype(np.float64)
    y = np.matmul(cols, wg)  # (G, N*P, Mg)
    y = y.transpose(1, 0, 2).reshape(batch, *out_spatial, cout)
    y = np.moveaxis(y, -1, 1)
    if b is not None:
        y = y + b.reshape((1, cout) + (1,) * n)
    return np.ascontiguousarray(y, dtype=x.dtype)


def conv_transpose(
    x: np.ndarray,
    w: np.ndarray,
    b: np.ndarray | None,
    strides: Sequence[int],
    pads: Sequence[int],
    dilations: Sequence[int],
    output_padding: Sequence[int],
    group: int,
) -> np.ndarray:
    n = x.ndim - 2
    batch, cin = x.shape[:2]
    kernel = w.shape[2:]
    cg, mg = cin // group, w.shape[1]
    ins = x.shape[2:]
    full = [
        s * (i - 1) + d * (k - 1) + 1 + op
        for s, i, d, k, op in zip(strides, ins, dilations, kernel, output_padding)
    ]
    out = np.zeros((batch, mg * group, *full), dtype=np.float64)
    for g in range(group):
        xg = x[:, g * cg : (g + 1) * cg].astype(np.float64)
        wg = w[g * cg : (g + 1) * cg].astype(np.float64)
        for kk in product(*(range(k) for k in kernel)):
            contrib = np.tensordot(xg, wg[(slice(None), slice(None), *kk)], axes=([1], [0]))
            contrib = np.moveaxis(contrib, -1, 1)  # (N, Mg, *ins)
            index = (slice(None), slice(g * mg, (g + 1) * mg)) + tuple(
                slice(k * d, k * d + s * (i - 1) + 1, s)
                for k, d, s, i in zip(kk, dilations, strides, ins)
            )
            out[index] += contrib
    crop = (slice(None), slice(None)) + tuple(
        slice(pads[i], full[i] - pads[i + n]) for i in range(n)
    )
    y = out[crop]
    if b is not None:
        y = y + b.reshape((1, -1) + (1,) * n)
    return np.ascontiguousarray(y, dtype=x.dtype)


def _pool_padding(
    x: np.ndarray, pads: Sequence[int], kernel, strides, dilations, out
) -> list[int]:
    """Explicit pads plus whatever end padding ceil_mode windows reach into."""
    n = len(kernel)
    total = list(pads)
    for i in range(n):
        span = dilations[i] * (kernel[i] - 1) + 1
        need = (out[i] - 1) * strides[i] + span
        have = x.shape[2 + i] + pads[i] + pads[i + n]
        total[i + n] += max(0, need - have)
    return total


def max_pool(x, kernel, strides, pads, dilations, out_spatial) -> np.ndarray:
    fill = -np.inf if np.issubdtype(x.dtype, np.floating) else np.iinfo(x.dtype).min
    all_pads = _pool_padding(x, pads, kernel, strides, dilations, out_spatial)
    win = _windows(_spatial_pad(x, all_pads, fill), kernel, strides, dilations, out_spatial)
    n = len(kernel)
    return win.max(axis=tuple(range(-n, 0)))


def avg_pool(
    x, kernel, strides, pads, dilations, out_spatial, count_include_pad: bool
) -> np.ndarray:
    n = len(kernel)
    all_pads = _pool_padding(x, pads, kernel, strides, dilations, out_spatial)
    kaxes = tuple(range(-n, 0))
    sums = _windows(_spatial_pad(x.astype(np.float64), all_pads, 0.0), kernel, strides, dilations, out_spatial).sum(axis=kaxes)
    # Divisor: cells of the window inside the input (or inside the explicit
    # pads when they count), never the extra cells a ceil_mode window reaches.
    spatial = x.shape[2:]
    if count_include_pad:
        ones = np.ones([s + pads[i] + pads[i + n] for i, s in enumerate(spatial)])
        extra = [0] * n + [all_pads[i + n] - pads[i + n] for i in range(n)]
        mask = _spatial_pad(ones, extra, 0.0)
    else:
        mask = _spatial_pad(np.ones(spatial), all_pads, 0.0)
    counts = _windows(mask, kernel, strides, dilations, out_spatial).sum(axis=kaxes)
    return (sums / counts).astype(x.dtype)


def lrn(x: np.ndarray, size: int, alpha: float, beta: float, bias: float) -> np.ndarray:
    sq = np.square(x.astype(np.float64))
    c = x.shape[1]
    lo, hi = (size - 1) // 2, size - 1 - (size - 1) // 2
    padded = np.pad(sq, [(0, 0), (lo, hi)] + [(0, 0)] * (x.ndim - 2))
    acc = sum(padded[:, i : i + c] for i in range(size))
    return (x / np.power(bias + alpha / size * acc, beta)).astype(x.dtype)


def batch_norm(x, scale, bias, mean, var, eps: float) -> np.ndarray:
    shape = (1, -1) + (1,) * (x.ndim - 2)
    inv = scale / np.sqrt(var.astype(np.float64) + eps)
    y = (x - mean.reshape(shape)) * inv.reshape(shape) + bias.reshape(shape)
    return y.astype(x.dtype)


def softmax(x: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return (e / e.sum(axis=axis, keepdims=True)).astype(x.dtype)


def log_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    s = x - x.max(axis=axis, keepdims=True)
    return (s - np.log(np.exp(s).sum(axis=axis, keepdims=True))).astype(x.dtype)


def layer_norm(x, scale, bias, axis: int, eps: float) -> np.ndarray:
    axes = tuple(range(axis % x.ndim, x.ndim))
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=axes, keepdims=True)
    var = np.square(x64 - mean).mean(axis=axes, keepdims=True)
    y = (x64 - mean) / np.sqrt(var + eps) * scale
    if bias is not None:
        y = y + bias
    return y.astype(x.dtype)


_erf_scalar = np.frompyfunc(math.erf, 1, 1)


def erf(x: np.ndarray) -> np.ndarray:
    return _erf_scalar(x.astype(np.float64)).astype(x.dtype)


def gelu(x: np.ndarray, approximate: str) -> np.ndarray:
    x64 = x.astype(np.float64)
    if approximate == "tanh":
        inner = math.sqrt(2 / math.pi) * (x64 + 0.044715 * x64**3)
        return (0.5 * x64 * (1 + np.tanh(inner))).astype(x.dtype)
    return (0.5 * x64 * (1 + _erf_scalar(x64 / math.sqrt(2)).astype(np.float64))).astype(x.dtype)


def sigmoid(x: np.ndarray) -> np.ndarray:
    return (1 / (1 + np.exp(-x.astype(np.float64)))).astype(x.dtype)


def activate(kind: str, params: Sequence[float], x: np.ndarray) -> np.ndarray:
    """Apply a fused epilogue (graph.ops.ACTIVATIONS)."""
    if not kind:
        return x
    if kind == "relu":
        return np.maximum(x, 0).astype(x.dtype)
    if kind == "leaky_relu":
        alpha = params[0] if params else 0.01
        return np.where(x >= 0, x, x * alpha).astype(x.dtype)
    if kind == "clip":
        lo, hi = params
        return np.clip(x, lo, hi).astype(x.dtype)
    if kind == "sigmoid":
        return sigmoid(x)
    if kind == "tanh":
        return np.tanh(x)
    if kind == "gelu":
        return gelu(x, "tanh" if params and params[0] else "none")
    raise ValueError(f"unknown activation {kind}")


def gemm(a, b, c, trans_a: bool, trans_b: bool, alpha: float, beta: float) -> np.ndarray:
    y = (a.T if trans_a else a) @ (b.T if trans_b else b)
    if alpha != 1.0:
        y = y * alpha
    if c is not None:
        y = y + (c * beta if beta != 1.0 else c)
    return y.astype(a.dtype)


def slice_(x, starts, ends, axes, steps) -> np.ndarray:
    index = [slice(None)] * x.ndim
    for st, en, ax, sp in zip(starts, ends, axes, steps):
        start, stop, step = slice(st, en, sp).indices(x.shape[ax])
        # A negative stop from indices() means "past the front", not "from the end".
        index[ax] = slice(start, None if stop < 0 else stop, step)
    return x[tuple(index)]


def pow_(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """ONNX Pow: the result has x's type, whatever the exponent's."""
    if np.issubdtype(x.dtype, np.floating):
        return np.power(x, y.astype(x.dtype)).astype(x.dtype)
    if np.issubdtype(y.dtype, np.integer) and not np.any(y < 0):
        return np.power(x, y).astype(x.dtype)  # exact integer powers
    # Negative or fractional exponents of integers: through float64, truncated.
    return np.power(x.astype(np.float64), y.astype(np.float64)).astype(x.dtype)
