"""Shape rules of the graph dialect, on plain tuples.

One module holds every op's shape arithmetic so that the verifiers, the ONNX
importer (which builds result types) and the reference interpreter (which
resolves reshape targets) agree by construction. A dimension of ``DYN``
(xDSL's DYNAMIC_INDEX, printed ``?``) is unknown until an input shape is
fixed; it is distinct from the -1 of ONNX Reshape targets.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence

DYN = -(2**63)

Shape = tuple[int, ...]


class ShapeError(ValueError):
    """A shape rule is violated; the message says how, for a user."""


def is_static(shape: Sequence[int]) -> bool:
    return all(d != DYN for d in shape)


def num_elements(shape: Sequence[int]) -> int:
    return math.prod(shape) if is_static(shape) else DYN


def fmt(shape: Sequence[int]) -> str:
    return "x".join("?" if d == DYN else str(d) for d in shape) or "scalar"


def normalize_axis(axis: int, rank: int, what: str = "axis") -> int:
    if not -rank <= axis < max(rank, 1):
        raise ShapeError(f"{what} {axis} is out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


def normalize_axes(axes: Sequence[int], rank: int, what: str = "axes") -> list[int]:
    out = [normalize_axis(a, rank, what) for a in axes]
    if len(set(out)) != len(out):
        raise ShapeError(f"{what} {list(axes)} repeat an axis")
    return out


def broadcast(*shapes: Sequence[int]) -> Shape:
    """Numpy (multidirectional) broadcasting, with unknown dims."""
    rank = max((len(s) for s in shapes), default=0)
    out: list[int] = []
    for i in range(rank):
        dims = [s[len(s) - rank + i] for s in shapes if len(s) - rank + i >= 0]
        known = {d for d in dims if d not in (1, DYN)}
        if len(known) > 1:
            raise ShapeError(
                "shapes " + ", ".join(fmt(s) for s in shapes) + " do not broadcast"
            )
        if known:
            out.append(known.pop())
        elif DYN in dims:
            out.append(DYN)
        else:
            out.append(1)
    return tuple(out)


def window_output(
    spatial: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    pads: Sequence[int],
    dilations: Sequence[int],
    ceil_mode: bool = False,
    pool: bool = False,
) -> Shape:
    """Output spatial dims of a conv/pool window; pads are [begins..., ends...].

    A conv window must fit the padded input. A pool window may reach past it
    (onnxruntime's PoolAttributes, which ONNX follows): with ceil_mode the
    extent is ceil((size + pads - span) / stride) + 1, less one when the last
    window would start in the end padding; without it the quotient is
    truncated toward zero (C++ division). The windows then only see the cells
    they cover, and an extent below 0 is an error.
    """
    n = len(spatial)
    out = []
    for i in range(n):
        size, total_pad = spatial[i], pads[i] + pads[i + n]
        if size == DYN:
            out.append(DYN)
            continue
        span = dilations[i] * (kernel[i] - 1) + 1
        room = size + total_pad - span
        if ceil_mode:
            o = -(-room // strides[i]) + 1
            # The last window must start inside the input or its left padding.
            if (o - 1) * strides[i] >= size + pads[i]:
                o -= 1
        elif pool:
            o = (room // strides[i] if room >= 0 else -(-room // strides[i])) + 1
        else:
            o = room // strides[i] + 1 if room >= 0 else -1
        if o < 0:
            raise ShapeError(
                f"window of extent {span} does not fit input extent {size} "
                f"with padding {pads[i]}+{pads[i + n]}"
            )
        out.append(o)
    return tuple(out)


def same_pads(
    spatial: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
    upper: bool,
) -> list[int]:
    """Explicit pads for ONNX auto_pad SAME_UPPER / SAME_LOWER."""
    n = len(spatial)
    begins, ends = [0] * n, [0] * n
    for i in range(n):
        out = -(-spatial[i] // strides[i])
        span = dilations[i] * (kernel[i] - 1) + 1
        total = max(0, (out - 1) * strides[i] + span - spatial[i])
        small, big = total // 2, total - total // 2
        begins[i], ends[i] = (small, big) if upper else (big, small)
    return begins + ends


def conv(
    x: Sequence[int],
    w: Sequence[int],
    strides: Sequence[int],
    pads: Sequence[int],
    dilations: Sequence[int],
    group: int,
) -> Shape:
    _check_conv_operands(x, w, strides, pads, dilations)
    if x[1] != DYN and w[1] != DYN and x[1] != w[1] * group:
        raise ShapeError(
            f"input channels {x[1]} do not match weight channels {w[1]} x group {group}"
        )
    if w[0] != DYN and w[0] % group:
        raise ShapeError(f"output channels {w[0]} are not divisible by group {group}")
    return (x[0], w[0]) + window_output(x[2:], w[2:], strides, pads, dilations)


def conv_transpose(
    x: Sequence[int],
    w: Sequence[int],
    strides: Sequence[int],
    pads: Sequence[int],
    dilations: Sequence[int],
    output_padding: Sequence[int],
    group: int,
) -> Shape:
    n = _check_conv_operands(x, w, strides, pads, dilations)
    if x[1] != DYN and w[0] != DYN and x[1] != w[0]:
        raise ShapeError(f"input channels {x[1]} do not match weight dim 0 {w[0]}")
    spatial = []
    for i in range(n):
        if x[2 + i] == DYN:
            spatial.append(DYN)
            continue
        o = (
            strides[i] * (x[2 + i] - 1)
            + output_padding[i]
            + (w[2 + i] - 1) * dilations[i]
            + 1
            - pads[i]
            - pads[i + n]
        )
        if o <= 0:
            raise ShapeError(f"output extent {o} along spatial axis {i} is not positive")
        spatial.append(o)
    cout = DYN if w[1] == DYN else w[1] * group
    return (x[0], cout, *spatial)


def _check_conv_operands(
    x: Sequence[int],
    w: Sequence[int],
    strides: Sequence[int],
    pads: Sequence[int],
    dilations: Sequence[int],
) -> int:
    """Ranks and window attributes of a (transposed) conv; its spatial rank."""
    if len(x) < 3 or len(w) != len(x):
        raise ShapeError(
            f"input {fmt(x)} and weight {fmt(w)} must have the same rank (>= 3)"
        )
    _check_window_attrs(len(x) - 2, strides, pads, dilations)
    return len(x) - 2


def _check_window_attrs(
    n: int, strides: Sequence[int], pads: Sequence[int], dilations: Sequence[int]
) -> None:
    if len(strides) != n or len(dilations) != n or len(pads) != 2 * n:
        raise ShapeError(
            f"expected {n} strides, {n} dilations and {2 * n} pads, got "
            f"{len(strides)}, {len(dilations)} and {len(pads)}"
        )
    if any(s < 1 for s in strides) or any(d < 1 for d in dilations):
        raise ShapeError("strides and dilations must be positive")
    if any(p < 0 for p in pads):
        raise ShapeError("pads must be non-negative")


def pool(
    x: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    pads: Sequence[int],
    dilations: Sequence[int],
    ceil_mode: bool,
) -> Shape:
    n = len(kernel)
    if len(x) != n + 2:
        raise ShapeError(f"input {fmt(x)} needs rank {n + 2} for a {n}-d kernel")
    _check_window_attrs(n, strides, pads, dilations)
    return tuple(x[:2]) + window_output(x[2:], kernel, strides, pads, dilations, ceil_mode, pool=True)


def matmul(a: Sequence[int], b: Sequence[int]) -> Shape:
    if not a or not b:
        raise ShapeError("matmul operands must have rank >= 1")
    a2 = (1, *a) if len(a) == 1 else tuple(a)
    b2 = (*b, 1) if len(b) == 1 else tuple(b)
    k1, k2 = a2[-1], b2[-2]
    if k1 != DYN and k2 != DYN and k1 != k2:
        raise ShapeError(
            f"contraction dims differ: {fmt(a)} x {fmt(b)} ({k1} vs {k2})"
        )
    try:
        batch = broadcast(a2[:-2], b2[:-2])
    except ShapeError:
        raise ShapeError(f"batch dims of {fmt(a)} x {fmt(b)} do not broadcast") from None
    out = (*batch, a2[-2], b2[-1])
    if len(a) == 1:
        out = out[:-2] + out[-1:]
    if len(b) == 1:
        out = out[:-1]
    return out


def gemm(a: Sequence[int], b: Sequence[int], trans_a: bool, trans_b: bool) -> Shape:
    if len(a) != 2 or len(b) != 2:
        raise ShapeError(f"gemm operands must be 2-d, got {fmt(a)} and {fmt(b)}")
    m, k1 = (a[1], a[0]) if trans_a else (a[0], a[1])
    k2, n = (b[1], b[0]) if trans_b else (b[0], b[1])
    if k1 != DYN and k2 != DYN and k1 != k2:
        raise ShapeError(f"contraction dims differ: {k1} vs {k2}")
    return (m, n)


def reduce(x: Sequence[int], axes: Sequence[int], keepdims: bool) -> Shape:
    axes_n = set(normalize_axes(axes, len(x))) if axes else set(range(len(x)))
    if keepdims:
        return tuple(1 if i in axes_n else d for i, d in enumerate(x))
    return tuple(d for i, d in enumerate(x) if i not in axes_n)


def concat(shapes: Sequence[Sequence[int]], axis: int) -> Shape:
    if not shapes:
        raise ShapeError("concat needs at least one operand")
    rank = len(shapes[0])
    ax = normalize_axis(axis, rank)
    out = list(shapes[0])
    for s in shapes[1:]:
        if len(s) != rank:
            raise ShapeError("concat operands must all have the same rank")
        for i in range(rank):
            if i == ax:
                out[i] = DYN if DYN in (out[i], s[i]) else out[i] + s[i]
            elif DYN not in (out[i], s[i]) and out[i] != s[i]:
                raise ShapeError(
                    f"concat operands differ in dim {i} ({out[i]} vs {s[i]})"
                )
            elif out[i] == DYN:
                out[i] = s[i]
    return tuple(out)


def split(x: Sequence[int], axis: int, sizes: Sequence[int]) -> list[Shape]:
    ax = normalize_axis(axis, len(x))
    if x[ax] != DYN and sum(sizes) != x[ax]:
        raise ShapeError(f"split sizes {list(sizes)} do not add up to dim {x[ax]}")
    return [tuple(s if i == ax else d for i, d in enumerate(x)) for s in sizes]


def resolve_reshape(x: Sequence[int], target: Sequence[int], allowzero: bool) -> Shape:
    """ONNX Reshape: 0 copies the input dim (unless allowzero), one -1 is inferred."""
    out = list(target)
    for i, t in enumerate(out):
        if t == 0 and not allowzero:
            if i >= len(x):
                raise ShapeError(f"shape {list(target)} copies dim {i} the input lacks")
            out[i] = x[i]
    if out.count(-1) > 1:
        raise ShapeError(f"shape {list(target)} has more than one -1")
    if any(t < -1 for t in target):  # a copied dim may be DYN
        raise ShapeError(f"shape {list(target)} has a negative dim")
    total = num_elements(x)
    if -1 in out:
        rest = math.prod(t for t in out if t != -1)
        if total == DYN or any(t == DYN for t in out if t != -1):
            return tuple(DYN if t == -1 else t for t in out)
        if rest == 0 or total % rest:
            raise ShapeError(f"cannot reshape {fmt(x)} into {list(target)}")
        out[out.index(-1)] = total // rest
    elif total != DYN and DYN not in out and math.prod(out) != total:
        raise ShapeError(f"cannot reshape {fmt(x)} ({total} elements) into {fmt(out)}")
    return tuple(out)


def flatten(x: Sequence[int], axis: int) -> Shape:
    # axis is in [-rank, rank]; a negative one counts from the end of x.
    if not -len(x) <= axis <= len(x):
        raise ShapeError(f"axis {axis} is out of range for rank {len(x)}")
    ax = axis + len(x) if axis < 0 else axis
    return (num_elements(x[:ax]) if ax else 1, num_elements(x[ax:]))


def transpose(x: Sequence[int], perm: Sequence[int]) -> Shape:
    if sorted(perm) != list(range(len(x))):
        raise ShapeError(f"perm {list(perm)} is not a permutation of rank {len(x)}")
    return tuple(x[p] for p in perm)


def squeeze(x: Sequence[int], axes: Sequence[int]) -> Shape:
    axes_n = set(normalize_axes(axes, len(x)))
    for a in axes_n:
        if x[a] not in (1, DYN):
            raise ShapeError(f"cannot squeeze axis {a} of extent {x[a]}")
    return tuple(d for i, d in enumerate(x) if i not in axes_n)


def unsqueeze(x: Sequence[int], axes: Sequence[int]) -> Shape:
    rank = len(x) + len(axes)
    axes_n = set(normalize_axes(axes, rank))
    it = iter(x)
    return tuple(1 if i in axes_n else next(it) for i in range(rank))


def slice_shape(
    x: Sequence[int],
    starts: Sequence[int],
    ends: Sequence[int],
    axes: Sequence[int],
    steps: Sequence[int],
) -> Shape:
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise ShapeError("starts, ends, axes and steps must have the same length")
    out = list(x)
    for st, en, ax, sp in zip(starts, ends, normalize_axes(axes, len(x)), steps):
        if sp == 0:
            raise ShapeError("slice step must not be 0")
        if x[ax] == DYN:
            out[ax] = DYN
            continue
        out[ax] = len(range(*slice(st, en, sp).indices(x[ax])))
    return tuple(out)


def gather(data: Sequence[int], indices: Sequence[int], axis: int) -> Shape:
    ax = normalize_axis(axis, len(data))
    return (*data[:ax], *indices, *data[ax + 1 :])


# ---- ops-A: comparison, logic, selection


def expand(x: Sequence[int], shape: Sequence[int]) -> Shape:
    """ONNX Expand: `x` and the target `shape` broadcast to each other."""
    if any(d < 0 for d in shape):
        raise ShapeError(f"shape {list(shape)} has a negative dim")
    try:
        return broadcast(x, shape)
    except ShapeError:
        raise ShapeError(f"input {fmt(x)} does not broadcast to shape {list(shape)}") from None


def tile(x: Sequence[int], repeats: Sequence[int]) -> Shape:
    if len(repeats) != len(x):
        raise ShapeError(f"repeats {list(repeats)} must have one entry per dim of {fmt(x)}")
    if any(r < 0 for r in repeats):
        raise ShapeError(f"repeats {list(repeats)} must not be negative")
    return tuple(0 if r == 0 else DYN if d == DYN else d * r for d, r in zip(x, repeats))


def trilu(x: Sequence[int]) -> Shape:
    if len(x) < 2:
        raise ShapeError(f"input {fmt(x)} needs rank >= 2")
    return tuple(x)


def range_(start: Sequence[int], limit: Sequence[int], delta: Sequence[int]) -> Shape:
    """ONNX Range of three scalars: a 1-d result whose length is a value."""
    for what, s in (("start", start), ("limit", limit), ("delta", delta)):
        if len(s) != 0:
            raise ShapeError(f"{what} must be a scalar, got shape {fmt(s)}")
    return (DYN,)


# ---- ops-B: padding, normalisation, resampling, selection


def pad(x: Sequence[int], pads: Sequence[int], mode: str) -> Shape:
    """ONNX Pad: pads = [begins..., ends...] over all dims; a negative pad
    crops (before padding). reflect may add at most extent - 1 cells per
    side, edge and wrap need a non-empty extent (onnxruntime's rules)."""
    rank = len(x)
    if len(pads) != 2 * rank:
        raise ShapeError(f"pads {list(pads)} must have {2 * rank} entries for rank {rank}")
    out = []
    for i, d in enumerate(x):
        begin, end = pads[i], pads[i + rank]
        if d == DYN:
            out.append(DYN)
            continue
        kept = d + min(begin, 0) + min(end, 0)
        if kept < 0:
            raise ShapeError(f"pads {begin}, {end} crop more than extent {d} of dim {i}")
        grow = max(begin, 0), max(end, 0)
        if mode == "reflect" and max(grow) > max(kept - 1, 0):
            raise ShapeError(f"reflect pads {begin}, {end} of dim {i} exceed its extent {kept} minus 1")
        if mode in ("edge", "wrap") and kept == 0 and max(grow) > 0:
            raise ShapeError(f"{mode} pads of dim {i} need a non-empty extent")
        out.append(kept + sum(grow))
    return tuple(out)


def channel_params(x: Sequence[int], what: str, s: Sequence[int]) -> None:
    """A per-channel parameter (scale, bias) of a normalisation of `x`."""
    if len(s) != 1 or (s[0] != x[1] and DYN not in (s[0], x[1])):
        raise ShapeError(f"{what} {fmt(s)} must be 1-d of extent {x[1]} (the channels)")


def group_norm(x: Sequence[int], num_groups: int) -> Shape:
    if len(x) < 3:
        raise ShapeError(f"input {fmt(x)} needs rank >= 3 (N, C, spatial...)")
    if num_groups < 1:
        raise ShapeError(f"num_groups must be positive, got {num_groups}")
    if x[1] != DYN and x[1] % num_groups:
        raise ShapeError(f"channels {x[1]} are not divisible by num_groups {num_groups}")
    return tuple(x)


def _f32(v: float) -> float:
    """`v` rounded to float32 (a product of two float32 values is exact in
    float64, so rounding it once gives the float32 product)."""
    return struct.unpack("f", struct.pack("f", v))[0]


def resize(x: Sequence[int], scales: Sequence[float], sizes: Sequence[int] | None) -> Shape:
    """ONNX Resize: the output is `sizes` when given, else floor(extent *
    scale) per dim (in float32, as onnxruntime computes it)."""
    rank = len(x)
    if len(scales) != rank:
        raise ShapeError(f"scales {list(scales)} must have {rank} entries for rank {rank}")
    if any(not s > 0 for s in scales):
        raise ShapeError(f"scales {list(scales)} must be positive")
    if sizes is not None:
        if len(sizes) != rank:
            raise ShapeError(f"sizes {list(sizes)} must have {rank} entries for rank {rank}")
        if any(s < 1 for s in sizes):
            raise ShapeError(f"sizes {list(sizes)} must be positive")
        return tuple(sizes)
    out = tuple(DYN if d == DYN else math.floor(_f32(_f32(d) * _f32(s))) for d, s in zip(x, scales))
    if any(d == 0 for d in out):
        raise ShapeError(f"scales {list(scales)} make {fmt(x)} empty ({fmt(out)})")
    return out


def _einsum_term(term: str, rank: int, k: int) -> tuple[str, int]:
    """Letters of one operand term and the number of dims its `...` covers."""
    head, dots, tail = term.partition("...")
    letters = head + tail
    if "." in letters:
        raise ShapeError(f"operand term '{term}' has a '.' outside an ellipsis '...'")
    if not all(c.isascii() and c.isalpha() for c in letters):
        raise ShapeError(f"operand term '{term}' has a character that is no letter")
    repeated = sorted({c for c in letters if letters.count(c) > 1})
    if repeated:
        raise ShapeError(
            f"letter '{repeated[0]}' repeats in operand #{k} ('{term}'): diagonals and traces are not supported"
        )
    batch = rank - len(letters)
    if batch < 0 or (batch > 0 and not dots):
        raise ShapeError(f"operand term '{term}' does not match operand #{k} of rank {rank}")
    return head + "." + tail if dots else letters, batch


def einsum(equation: str, operands: Sequence[Sequence[int]]) -> Shape:
    """The result shape of the supported einsum forms: one or two operands,
    each letter at most once per operand, an optional `...` for broadcast
    batch dims; letters absent from the output are summed over. The
    implicit output (no `->`) is `...` then the letters used once, sorted."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise ShapeError(f"equation '{equation}' has {len(terms)} operand terms, the op has {len(operands)} operands")
    if not 1 <= len(terms) <= 2:
        raise ShapeError(f"equation '{equation}' has {len(terms)} operands; only 1 or 2 are supported")
    extents: dict[str, int] = {}
    batches: list[Sequence[int]] = []
    counts: dict[str, int] = {}
    for k, (term, shape) in enumerate(zip(terms, operands)):
        # "." stands for the ellipsis in `spelled`
        spelled, nbatch = _einsum_term(term, len(shape), k)
        head, _, tail = spelled.partition(".")
        dims = list(shape)
        if "." in spelled:
            batches.append(dims[len(head) : len(head) + nbatch])
            dims = dims[: len(head)] + dims[len(head) + nbatch :]
        for c, d in zip(head + tail, dims):
            counts[c] = counts.get(c, 0) + 1
            e = extents.get(c, d)
            if DYN not in (e, d) and e != d:
                raise ShapeError(f"letter '{c}' stands for extents {e} and {d}")
            extents[c] = d if e == DYN else e
    try:
        batch = broadcast(*batches) if batches else ()
    except ShapeError:
        raise ShapeError(f"the '...' dims {', '.join(fmt(b) or 'scalar' for b in batches)} do not broadcast") from None
    if not arrow:
        rhs = ("..." if batches else "") + "".join(sorted(c for c, n in counts.items() if n == 1))
    head, dots, tail = rhs.partition("...")
    out_letters = head + tail
    if "." in out_letters or not all(c.isascii() and c.isalpha() for c in out_letters):
        raise ShapeError(f"output term '{rhs}' has a character that is no letter")
    for c in out_letters:
        if out_letters.count(c) > 1:
            raise ShapeError(f"letter '{c}' repeats in the output term '{rhs}'")
        if c not in extents:
            raise ShapeError(f"output letter '{c}' is in no operand term")
    if batch and not dots:
        raise ShapeError(f"output term '{rhs}' needs '...' for the {len(batch)} broadcast dims")
    return (*(extents[c] for c in head), *(batch if dots else ()), *(extents[c] for c in tail))


def top_k(x: Sequence[int], axis: int, k: int) -> Shape:
    ax = normalize_axis(axis, len(x))
    if k < 0:
        raise ShapeError(f"k must not be negative, got {k}")
    if x[ax] != DYN and k > x[ax]:
        raise ShapeError(f"k {k} exceeds extent {x[ax]} of axis {ax}")
    return tuple(k if i == ax else d for i, d in enumerate(x))


def gather_elements(data: Sequence[int], indices: Sequence[int], axis: int) -> Shape:
    """ONNX GatherElements: the result has the indices' shape; off the axis
    the indices may not reach past the data."""
    ax = normalize_axis(axis, len(data))
    if len(indices) != len(data):
        raise ShapeError(f"indices {fmt(indices)} must have the rank of the input {fmt(data)}")
    for i, (d, n) in enumerate(zip(data, indices)):
        if i != ax and DYN not in (d, n) and n > d:
            raise ShapeError(f"indices {fmt(indices)} exceed the input {fmt(data)} in dim {i}")
    return tuple(indices)


# ---- ops-C: gathering by index tuples


def gather_nd(data: Sequence[int], indices: Sequence[int], batch_dims: int) -> Shape:
    """ONNX GatherND: the first `batch_dims` dims are shared, the last dim of
    the indices (m, static) indexes m further data dims, and the result is
    indices[:-1] + data[batch_dims + m:]."""
    r, q, b = len(data), len(indices), batch_dims
    if q < 1:
        raise ShapeError("indices must have rank at least 1, got a scalar")
    if r < 1:
        raise ShapeError("the input must have rank at least 1, got a scalar")
    if not 0 <= b < min(r, q):
        raise ShapeError(f"batch_dims {b} must be in [0, {min(r, q) - 1}] for input {fmt(data)} and indices {fmt(indices)}")
    m = indices[-1]
    if m == DYN:
        raise ShapeError(f"the last dim of indices {fmt(indices)} must be static")
    if not 1 <= m <= r - b:
        raise ShapeError(f"the last dim {m} of indices {fmt(indices)} must be in [1, {r - b}] (input rank {r} minus batch_dims {b})")
    batch: list[int] = []
    for i, (d, n) in enumerate(zip(data[:b], indices[:b])):
        if DYN not in (d, n) and d != n:
            raise ShapeError(f"batch dim {i} of the input {fmt(data)} and the indices {fmt(indices)} differ")
        batch.append(n if d == DYN else d)
    return (*batch, *indices[b:-1], *data[b + m :])
