"""Numpy kernels with ONNX semantics: the numerical ground truth of the graph
dialect. Pure functions on arrays; the interpreter maps ops onto them, and
constant folding reuses them."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from itertools import product

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

_CONV_ACCUMULATOR: ContextVar[type] = ContextVar("conv_accumulator", default=np.float64)


@contextmanager
def conv_accumulation(dtype: type) -> Iterator[None]:
    """Convolutions accumulate in `dtype` inside the block (default float64,
    the oracle's). force_fp16's calibration only needs each value's
    magnitude, to within its power of two, and float32 products run twice as
    fast (VGG-19's 20 GMAC of calibration convs)."""
    token = _CONV_ACCUMULATOR.set(dtype)
    try:
        yield
    finally:
        _CONV_ACCUMULATOR.reset(token)


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
    # im2col per group: (G, Mg, Cg*K) @ (G, Cg*K, N*P) is one batched GEMM;
    # channels-first columns make the products come out channels-first (a
    # 1x1 conv's columns are its input as it lies) and save two transposes.
    # Accumulate in float64: the reference must not depend on BLAS blocking
    # (ill-conditioned models otherwise differ per channel by an ulp).
    accumulator = _CONV_ACCUMULATOR.get()
    spatial_axes = tuple(range(2, 2 + n))
    kernel_axes = tuple(range(2 + n, 2 + 2 * n))
    cols = np.ascontiguousarray(win.transpose(1, *kernel_axes, 0, *spatial_axes), dtype=accumulator)
    cols = cols.reshape(group, cg * ksize, batch * npos)
    wg = w.reshape(group, mg, cg * ksize).astype(accumulator)
    y = np.matmul(wg, cols).reshape(cout, batch, *out_spatial)  # (G, Mg, N*P)
    y = np.moveaxis(y, 1, 0)
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
    """Explicit pads plus whatever end padding the last windows reach into
    (ceil_mode, or a window bigger than the padded input: shapes.window_output)."""
    n = len(kernel)
    total = list(pads)
    for i in range(n):
        span = dilations[i] * (kernel[i] - 1) + 1
        need = (out[i] - 1) * strides[i] + span
        have = x.shape[2 + i] + pads[i] + pads[i + n]
        total[i + n] += max(0, need - have)
    return total


def max_pool(x, kernel, strides, pads, dilations, out_spatial) -> np.ndarray:
    if 0 in out_spatial:
        return np.zeros((*x.shape[:2], *out_spatial), dtype=x.dtype)
    fill = -np.inf if np.issubdtype(x.dtype, np.floating) else np.iinfo(x.dtype).min
    all_pads = _pool_padding(x, pads, kernel, strides, dilations, out_spatial)
    win = _windows(_spatial_pad(x, all_pads, fill), kernel, strides, dilations, out_spatial)
    # one maximum per window offset over the whole output: a max over the window axes of the
    # strided view runs ~10x slower (force_fp16's calibration runs every max pool of the model)
    offsets = product(*(range(k) for k in kernel))
    result = win[(Ellipsis, *next(offsets))].copy()
    for offset in offsets:
        np.maximum(result, win[(Ellipsis, *offset)], out=result)
    return result


def avg_pool(
    x, kernel, strides, pads, dilations, out_spatial, count_include_pad: bool
) -> np.ndarray:
    if 0 in out_spatial:
        return np.zeros((*x.shape[:2], *out_spatial), dtype=x.dtype)
    n = len(kernel)
    all_pads = _pool_padding(x, pads, kernel, strides, dilations, out_spatial)
    kaxes = tuple(range(-n, 0))
    sums = _windows(_spatial_pad(x.astype(np.float64), all_pads, 0.0), kernel, strides, dilations, out_spatial).sum(axis=kaxes)
    # Divisor: cells of the window inside the input (or inside the explicit
    # pads when they count), never the extra cells a last window reaches.
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


def _row_max(x: np.ndarray, axis: int) -> np.ndarray:
    # initial: an empty axis (a 0-length sequence) has no maximum
    return x.max(axis=axis, keepdims=True, initial=-np.inf)


def attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, masks: Sequence[np.ndarray], scale: float,
              zero_nan: bool = False) -> np.ndarray:
    """softmax(q . k^T * scale + masks...) . v along the keys (graph.attention);
    `zero_nan`: NaN probabilities (a row of -inf scores) count as 0."""
    scores = np.matmul(q, np.swapaxes(k, -1, -2)) * np.asarray(scale, q.dtype)
    for mask in masks:
        scores = scores + mask
    p = softmax(scores, -1)
    if zero_nan:
        p = np.where(np.isnan(p), np.zeros((), p.dtype), p)
    return np.matmul(p, v).astype(q.dtype)


def softmax(x: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(x - _row_max(x, axis))
    return (e / e.sum(axis=axis, keepdims=True)).astype(x.dtype)


def log_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    s = x - _row_max(x, axis)
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


def _erf64(x64: np.ndarray) -> np.ndarray:
    # frompyfunc gives a Python float (no .astype) for a 0-d input
    return np.asarray(_erf_scalar(x64), dtype=np.float64)


def erf(x: np.ndarray) -> np.ndarray:
    return _erf64(x.astype(np.float64)).astype(x.dtype)


def gelu(x: np.ndarray, approximate: str) -> np.ndarray:
    x64 = np.asarray(x, dtype=np.float64)
    if approximate == "tanh":
        inner = math.sqrt(2 / math.pi) * (x64 + 0.044715 * x64**3)
        return np.asarray(0.5 * x64 * (1 + np.tanh(inner))).astype(x.dtype)
    return np.asarray(0.5 * x64 * (1 + _erf64(x64 / math.sqrt(2)))).astype(x.dtype)


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
    if kind == "hard_sigmoid":
        return hard_sigmoid(x, *params)
    if kind == "hard_swish":
        return hard_swish(x)
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


# ---- ops-A: comparison, logic, selection


def mod(a: np.ndarray, b: np.ndarray, fmod: bool) -> np.ndarray:
    """ONNX Mod: the sign of the divisor (fmod = 0) or of the dividend (C fmod).
    Integer remainders by 0 are 0 (numpy's convention; ONNX leaves them undefined)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return (np.fmod(a, b) if fmod else np.mod(a, b)).astype(a.dtype, copy=False)


def range_(start: np.ndarray, limit: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """ONNX Range: max(ceil((limit - start) / delta), 0) elements start + i * delta."""
    dtype = np.asarray(start).dtype
    s, l, d = (np.asarray(v).item() for v in (start, limit, delta))
    if d == 0:
        raise ValueError("Range's delta must not be 0")
    if np.issubdtype(dtype, np.integer):
        n = max(-((s - l) // d), 0)  # exact ceil((l - s) / d)
        return (s + np.arange(n, dtype=np.int64) * d).astype(dtype)
    n = max(math.ceil((l - s) / d), 0)
    # float64 for the arithmetic (f16's stash_type = float, and then some)
    return (s + np.arange(n, dtype=np.float64) * d).astype(dtype)


def cumsum(x: np.ndarray, axis: int, exclusive: bool, reverse: bool) -> np.ndarray:
    if reverse:
        x = np.flip(x, axis)
    y = np.cumsum(x, axis=axis, dtype=x.dtype)
    if exclusive:
        y = np.roll(y, 1, axis=axis)
        index = [slice(None)] * x.ndim
        index[axis] = slice(0, 1)
        y[tuple(index)] = 0
    return np.ascontiguousarray(np.flip(y, axis) if reverse else y)


def softplus(x: np.ndarray) -> np.ndarray:
    return np.logaddexp(0.0, x.astype(np.float64)).astype(x.dtype)


def hard_sigmoid(x: np.ndarray, alpha: float, beta: float) -> np.ndarray:
    # In x's type, as onnxruntime (and onnx's reference) compute it.
    t = x.dtype.type
    return np.clip(x * t(alpha) + t(beta), t(0), t(1)).astype(x.dtype, copy=False)


def hard_swish(x: np.ndarray) -> np.ndarray:
    return (x * hard_sigmoid(x, 1 / 6, 0.5)).astype(x.dtype, copy=False)


# ---- ops-B: padding, normalisation, resampling, selection


def pad(x: np.ndarray, pads: Sequence[int], mode: str, value: float | int = 0) -> np.ndarray:
    """ONNX Pad: negative pads crop first, then the rest is padded."""
    rank = x.ndim
    crop = tuple(slice(max(-pads[i], 0), x.shape[i] - max(-pads[i + rank], 0)) for i in range(rank))
    y = x[crop]
    width = [(max(pads[i], 0), max(pads[i + rank], 0)) for i in range(rank)]
    if not any(b or e for b, e in width):
        return np.array(y)
    if mode == "constant":
        return np.pad(y, width, mode="constant", constant_values=np.asarray(value).astype(x.dtype))
    return np.pad(y, width, mode=mode)


def instance_norm(x: np.ndarray, scale: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    """(x - mean) / sqrt(var + eps) * scale + bias, the statistics per sample
    and channel over the spatial dims (accumulated in float64)."""
    axes = tuple(range(2, x.ndim))
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=axes, keepdims=True)
    var = np.square(x64 - mean).mean(axis=axes, keepdims=True)
    shape = (1, -1) + (1,) * (x.ndim - 2)
    y = (x64 - mean) / np.sqrt(var + eps) * scale.reshape(shape) + bias.reshape(shape)
    return y.astype(x.dtype)


def group_norm(x: np.ndarray, scale: np.ndarray, bias: np.ndarray, groups: int, eps: float) -> np.ndarray:
    """Normalise each group of channels of a sample, then a per-channel scale
    and bias (ONNX GroupNormalization-21)."""
    n, c = x.shape[:2]
    g = x.astype(np.float64).reshape(n, groups, -1)
    mean = g.mean(axis=2, keepdims=True)
    var = np.square(g - mean).mean(axis=2, keepdims=True)
    y = ((g - mean) / np.sqrt(var + eps)).reshape(x.shape)
    shape = (1, c) + (1,) * (x.ndim - 2)
    return (y * scale.reshape(shape) + bias.reshape(shape)).astype(x.dtype)


def resize_coordinates(out_len: int, in_len: int, scale: float, mode: str) -> np.ndarray:
    """Input coordinates of the output cells along one axis (ONNX Resize's
    coordinate_transformation_mode), in float32 and in onnxruntime's order
    of operations, so that nearest rounding ties agree with it."""
    f = np.float32
    xr = np.arange(out_len, dtype=f)
    s, length, resized = f(scale), f(in_len), f(out_len)
    if mode == "asymmetric":
        return xr / s
    if mode == "align_corners":
        return np.zeros(out_len, f) if out_len == 1 else xr * (length - f(1)) / (resized - f(1))
    if mode == "pytorch_half_pixel" and out_len == 1:
        return np.zeros(1, f)
    if mode == "half_pixel_symmetric":
        adjustment = resized / (s * length)
        offset = length / f(2) * (f(1) - adjustment)
        return (np.float64(offset) + (xr.astype(np.float64) + 0.5) / np.float64(s) - 0.5).astype(f)
    return (xr + f(0.5)) / s - f(0.5)  # half_pixel, pytorch_half_pixel


def _nearest_index(c: np.ndarray, nearest_mode: str, in_len: int) -> np.ndarray:
    if nearest_mode == "round_prefer_floor":
        idx = np.ceil(c - np.float32(0.5))
    elif nearest_mode == "round_prefer_ceil":
        idx = np.floor(c + np.float32(0.5))
    elif nearest_mode == "floor":
        idx = np.floor(c)
    else:
        idx = np.ceil(c)
    return np.clip(idx.astype(np.int64), 0, in_len - 1)


def cubic_weights(c: np.ndarray, in_len: int, a: float, exclude_outside: bool) -> np.ndarray:
    """[len(c), in_len]: Keys' cubic convolution weights (coefficient a) of
    the four cells around each coordinate, floor(c) - 1 .. floor(c) + 2;
    cells beyond the border read the edge cell (or, with exclude_outside,
    get no weight and the others are renormalised), as the ONNX reference."""
    c = c.astype(np.float64)
    base = np.floor(c)
    t = c - base
    taps = base[:, None].astype(np.int64) + np.arange(-1, 3)
    d = np.abs(t[:, None] - np.arange(-1, 3))  # distance of each tap
    w = np.where(d <= 1, ((a + 2) * d - (a + 3)) * d * d + 1, ((a * d - 5 * a) * d + 8 * a) * d - 4 * a)
    w = np.where(d < 2, w, 0.0)
    if exclude_outside:
        w = np.where((taps < 0) | (taps >= in_len), 0.0, w)
        w /= w.sum(axis=1, keepdims=True)
    matrix = np.zeros((len(c), in_len))
    np.add.at(matrix, (np.repeat(np.arange(len(c)), 4), np.clip(taps, 0, in_len - 1).ravel()), w.ravel())
    return matrix


def resize(
    x: np.ndarray,
    out_shape: Sequence[int],
    scales: Sequence[float],
    mode: str,
    coordinate_mode: str,
    nearest_mode: str = "round_prefer_floor",
    cubic_coeff_a: float = -0.75,
    exclude_outside: bool = False,
) -> np.ndarray:
    """ONNX Resize, nearest, (N-)linear or cubic, separable along each axis."""
    coords = [resize_coordinates(o, i, s, coordinate_mode) for o, i, s in zip(out_shape, x.shape, scales)]
    if mode == "nearest":
        idx = [_nearest_index(c, nearest_mode, i) for c, i in zip(coords, x.shape)]
        return np.array(x[np.ix_(*idx)])
    y = x.astype(np.float64)
    for axis, (c, in_len) in enumerate(zip(coords, x.shape)):
        if len(c) == in_len and np.array_equal(c, np.arange(in_len)):
            continue  # identity along this axis
        if mode == "cubic":
            y = np.moveaxis(np.tensordot(cubic_weights(c, in_len, cubic_coeff_a, exclude_outside), y, axes=([1], [axis])),
                            0, axis)
            continue
        c = np.clip(c, np.float32(0), np.float32(in_len - 1))
        lo = np.minimum(c.astype(np.int64), in_len - 1)
        hi = np.minimum(lo + 1, in_len - 1)
        w = (c - lo.astype(np.float32)).astype(np.float64).reshape((-1,) + (1,) * (x.ndim - 1 - axis))
        y = np.take(y, lo, axis=axis) * (1 - w) + np.take(y, hi, axis=axis) * w
    return y.astype(x.dtype)


def arg_reduce(x: np.ndarray, axis: int, keepdims: bool, select_last: bool, largest: bool) -> np.ndarray:
    """ArgMax/ArgMin: the first (or last) index of the extreme along axis."""
    fn = np.argmax if largest else np.argmin
    if select_last:
        idx = x.shape[axis] - 1 - fn(np.flip(x, axis), axis=axis)
    else:
        idx = fn(x, axis=axis)
    idx = np.asarray(idx, dtype=np.int64)
    return np.expand_dims(idx, axis) if keepdims else idx


def top_k(x: np.ndarray, k: int, axis: int, largest: bool) -> tuple[np.ndarray, np.ndarray]:
    """The k largest (smallest) entries along axis, sorted; equal values in
    index order (onnxruntime's tie break). No negation, so integer extremes
    sort right: a stable sort of the reversed axis, reversed, is descending
    with ties in ascending index."""
    n = x.shape[axis]
    if largest:
        order = n - 1 - np.flip(np.argsort(np.flip(x, axis), axis=axis, kind="stable"), axis)
    else:
        order = np.argsort(x, axis=axis, kind="stable")
    idx = np.take(order, np.arange(k), axis=axis).astype(np.int64)
    return np.take_along_axis(x, idx, axis), idx


def gather_elements(x: np.ndarray, indices: np.ndarray, axis: int) -> np.ndarray:
    n = x.shape[axis]
    if indices.size and (indices.min() < -n or indices.max() >= n):
        raise IndexError(f"index out of range [{-n}, {n - 1}] along axis {axis}")
    idx = np.where(indices < 0, indices + n, indices).astype(np.int64)
    # Off the axis the indices may cover less than the data.
    part = tuple(slice(None) if i == axis else slice(0, d) for i, d in enumerate(indices.shape))
    return np.take_along_axis(x[part], idx, axis)


def gather_nd(x: np.ndarray, indices: np.ndarray, batch_dims: int) -> np.ndarray:
    """ONNX GatherND: per batch (the first batch_dims dims), each index tuple
    in the last dim of indices picks a slice of the remaining dims."""
    b, m = batch_dims, indices.shape[-1]
    dims = np.array(x.shape[b : b + m], dtype=np.int64)
    if indices.size and (np.any(indices < -dims) or np.any(indices >= dims)):
        raise IndexError(f"index out of range of dims {x.shape[b : b + m]} (input {x.shape}, batch_dims {b})")
    idx = np.where(indices < 0, indices + dims, indices).astype(np.int64)
    nb = math.prod(x.shape[:b])
    tuples = idx.reshape(nb, math.prod(indices.shape[b:-1]), m)
    xb = x.reshape((nb, *x.shape[b:]))
    y = xb[(np.arange(nb)[:, None], *(tuples[..., j] for j in range(m)))]
    return np.ascontiguousarray(y).reshape((*indices.shape[:-1], *x.shape[b + m :]))


def reduce_l2(x: np.ndarray, axis, keepdims: bool) -> np.ndarray:
    x64 = x.astype(np.float64)
    return np.sqrt(np.sum(x64 * x64, axis=axis, keepdims=keepdims))


def reduce_prod(x: np.ndarray, axis, keepdims: bool) -> np.ndarray:
    acc = np.float64 if np.issubdtype(x.dtype, np.floating) else None
    return np.prod(x, axis=axis, keepdims=keepdims, dtype=acc)


def einsum(equation: str, operands: Sequence[np.ndarray]) -> np.ndarray:
    """np.einsum, accumulated in float64 for floats (int64 for integers)."""
    dtype = operands[0].dtype
    acc = np.float64 if np.issubdtype(dtype, np.floating) else np.int64
    y = np.einsum(equation.replace(" ", ""), *(a.astype(acc) for a in operands))
    return np.asarray(y).astype(dtype)
