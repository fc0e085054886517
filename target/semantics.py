"""Where instructions read and write, and what the cube computes, in NumPy on
byte arrays viewed with a dtype. (What each vector instruction computes is its
row's `semantics` in gedialects/npu/vector_ops.py.)

A core-local memory is one 1-D array (one core, as the plain simulator runs
blocks) or a 2-D array with one contiguous row per core (the lock-step
simulator, target/lockstep.py, running the blocks of a launch together); every
function here indexes the last axis, so one definition serves both. GM is
always 1-D: one memory shared by every core.

Index patterns (which elements a vector operand or an im2col load touches)
depend only on static fields, so they are computed once per pattern and cached;
at run time only the base address is added.
"""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

import numpy as np

from gedialects.npu.isa import BLOCK_BYTES, FRACTAL, FRACTAL_BYTES
from gedialects.npu.vector_ops import strided_span

# by dtype code (target.program.DTYPES: f16, f32, s32, s64)
NP_DTYPES = (np.dtype(np.float16), np.dtype(np.float32), np.dtype("<i4"), np.dtype("<i8"))
ESIZE = tuple(d.itemsize for d in NP_DTYPES)



@lru_cache(maxsize=4096)
def vector_layout(repeat: int, mask: int, blk: int, rep: int, esize: int):
    """How a vector operand's elements sit relative to its base, as
    (kind, repeat, mask, rep_elems, rel, blocks): kind 0 = one contiguous
    run, 1 = rows of `mask` elements every `rep_elems`, 3 = whole 32-byte
    blocks at a stride (`blocks`: blocks per repeat, the stride between
    them in elements, elements per block, and whether no element is
    addressed twice, which a store through the strided view needs), 2 =
    gather with index array `rel` (the general case, and every kind's
    meaning). Element j of repeat r is at r*rep + (j // per_block)*blk + j % per_block."""
    epb = BLOCK_BYTES // esize
    rep_e = rep * epb
    j = np.arange(mask, dtype=np.int64)
    within = (j // epb) * (blk * epb) + j % epb
    rel = (np.arange(repeat, dtype=np.int64) * rep_e)[:, None] + within[None, :]
    rel.setflags(write=False)
    if blk == 1 and (repeat == 1 or rep_e == mask):
        return (0, repeat, mask, rep_e, rel, None)
    if blk == 1 and rep_e > mask:
        return (1, repeat, mask, rep_e, rel, None)
    if mask % epb == 0:
        nblk = mask // epb
        disjoint = (blk >= 1 or nblk == 1) and (repeat == 1 or rep_e >= (nblk - 1) * blk * epb + epb)
        return (3, repeat, mask, rep_e, rel, (nblk, blk * epb, epb, disjoint))
    return (2, repeat, mask, rep_e, rel, None)


@lru_cache(maxsize=1024)
def contiguous_layout(repeat: int, per_repeat: int):
    """The layout (as `vector_layout`'s) of an operand holding `per_repeat`
    contiguous elements per repeat: a reduction's results, vbrcb's source."""
    rel = np.arange(repeat * per_repeat, dtype=np.int64).reshape(repeat, per_repeat)
    rel.setflags(write=False)
    return (0, repeat, per_repeat, per_repeat, rel, None)


def _blocks_view(arr: np.ndarray, base: int, repeat: int, rep_e: int, blocks) -> np.ndarray | None:
    """A kind-3 operand as a [..., repeat, blocks, per_block] view of `arr`,
    or None when it would reach outside `arr` (the gather then says so)."""
    nblk, blk_e, epb, _ = blocks
    last = base + (repeat - 1) * rep_e + (nblk - 1) * blk_e + epb
    if base < 0 or last > arr.shape[-1] or not arr.flags.c_contiguous:
        return None
    size = arr.itemsize
    return np.ndarray(arr.shape[:-1] + (repeat, nblk, epb), arr.dtype, buffer=arr, offset=base * size,
                      strides=arr.strides[:-1] + (rep_e * size, blk_e * size, size))


def vread(arr: np.ndarray, base: int, layout) -> np.ndarray:
    """The operand's elements as a [..., repeat, mask] array (a view when possible)."""
    kind, repeat, mask, rep_e, rel, blocks = layout
    lead = arr.shape[:-1]
    if kind == 0:
        return arr[..., base : base + repeat * mask].reshape(lead + (repeat, mask))
    if kind == 1 and base + repeat * rep_e <= arr.shape[-1]:
        return arr[..., base : base + repeat * rep_e].reshape(lead + (repeat, rep_e))[..., :mask]
    if kind == 3:
        view = _blocks_view(arr, base, repeat, rep_e, blocks)
        if view is not None:
            return view.reshape(lead + (repeat, mask))
    return arr[..., rel + base]


def vwrite(arr: np.ndarray, base: int, layout, value) -> None:
    kind, repeat, mask, rep_e, rel, blocks = layout
    lead = arr.shape[:-1]
    if kind == 0:
        arr[..., base : base + repeat * mask].reshape(lead + (repeat, mask))[...] = value
    elif kind == 1 and base + repeat * rep_e <= arr.shape[-1]:
        arr[..., base : base + repeat * rep_e].reshape(lead + (repeat, rep_e))[..., :mask] = value
    elif kind == 3 and blocks[3] and (view := _blocks_view(arr, base, repeat, rep_e, blocks)) is not None:
        view[...] = np.broadcast_to(value, lead + (repeat, mask)).reshape(view.shape)
    else:
        arr[..., rel + base] = value


def operand_extent(repeat: int, mask: int, blk: int, rep: int, esize: int):
    """(span in bytes from the base, chunk pattern or None) of a vector operand.

    The span and the pattern count whole 32-byte blocks: the unit in which the
    hardware addresses UB."""
    nb = -(-(mask * esize) // BLOCK_BYTES)
    span = strided_span(repeat, mask, blk, rep, esize)
    if repeat == 1:
        dense = blk == 1 or nb == 1
    else:
        dense = blk == 1 and rep == nb
    if dense:
        return span, None
    return span, (repeat, rep * BLOCK_BYTES, nb, blk * BLOCK_BYTES, BLOCK_BYTES)


class Im2col(NamedTuple):
    """Where the ZZ fractals (16 x c0) a load3d writes come from, block by
    block: each row of a fractal is one 32-byte block, the c0 channels of one
    pixel of the feature map [H, W, c0]. `blocks` are the source pixels of
    the destination blocks in order, `pads` the destination blocks that are
    padding (zero; their source is pixel 0), `elements` how many elements the
    load writes."""

    blocks: np.ndarray
    pads: np.ndarray
    elements: int


@lru_cache(maxsize=256)
def im2col_index(
    fm_h, fm_w, kh, kw, sh, sw, pt, pb, pl, pr, dh, dw, m_start, m_len, c0=FRACTAL
) -> Im2col:
    """The gather that builds ZZ fractals (16 x c0) of the im2col matrix, by
    32-byte blocks (a pixel's c0 channels move together)."""
    oh = (fm_h + pt + pb - dh * (kh - 1) - 1) // sh + 1
    ow = (fm_w + pl + pr - dw * (kw - 1) - 1) // sw + 1
    m = m_start + np.arange(m_len, dtype=np.int64)  # output pixel per row
    valid_m = m < oh * ow
    oy, ox = m // ow, m % ow
    ki = np.repeat(np.arange(kh), kw)  # tap per k1 fractal column
    kj = np.tile(np.arange(kw), kh)
    iy = oy[:, None] * sh - pt + ki[None, :] * dh  # [m_len, K1]
    ix = ox[:, None] * sw - pl + kj[None, :] * dw
    ok = valid_m[:, None] & (iy >= 0) & (iy < fm_h) & (ix >= 0) & (ix < fm_w)
    pixel = np.where(ok, iy * fm_w + ix, -1)
    # rows m = m1*16 + m0 -> ZZ order (m1, k1, m0)
    k1 = kh * kw
    pixel = np.ascontiguousarray(pixel.reshape(m_len // FRACTAL, FRACTAL, k1).transpose(0, 2, 1)).ravel()
    pads = np.flatnonzero(pixel < 0)
    pixel[pads] = 0
    pixel = pixel.astype(np.intp)
    pixel.setflags(write=False)
    pads.setflags(write=False)
    return Im2col(pixel, pads, len(pixel) * c0)


_BLOCK = np.dtype((np.void, BLOCK_BYTES))
"""A 32-byte block as one NumPy element (an im2col moves whole blocks)."""

_F16_AS_F32 = np.arange(1 << 16, dtype=np.uint16).view(np.float16).astype(np.float32)
_F16_AS_F32.setflags(write=False)


def _as_f32(x: np.ndarray) -> np.ndarray:
    """x in fp32, as `astype` converts it (a table of every fp16 bit pattern's
    value: the same numbers, about twice as fast)."""
    if x.dtype == np.float16:
        return _F16_AS_F32.take(x.view(np.uint16))
    return x.astype(np.float32)


def _one_row_if_shared(operand: np.ndarray) -> np.ndarray:
    """A row-stacked operand ([rows, n]) as its first row when every row
    holds the same bits (blocks of a launch that read the same pixels or the
    same weights), else as it is: the shared row is converted once and the
    product broadcasts it, the same BLAS call per row."""
    if operand.ndim < 2 or operand.shape[0] < 2:
        return operand
    bits = operand.view(np.uint16 if operand.itemsize == 2 else np.uint32)
    if not np.array_equal(bits[1], bits[0]) or not (bits == bits[0]).all():
        return operand
    return operand[0]


def mmad(l0a, l0b, l0c_f32, a_e, b_e, c_e, m, n, k, k0, accumulate):
    """C (NZ, fp32) (+)= A (ZZ) x B (ZN). Offsets are in elements of each view.

    With one row per core the product is one stacked matmul, which NumPy
    computes as the same BLAS call per core: results are bit-identical. An
    operand every core holds alike is converted once and broadcast."""
    m1, n1, k1 = m // FRACTAL, n // FRACTAL, k // k0
    lead = l0a.shape[:-1]
    a_rows = _one_row_if_shared(l0a[..., a_e : a_e + m * k])
    b_rows = _one_row_if_shared(l0b[..., b_e : b_e + k * n])
    a_lead, b_lead = a_rows.shape[:-1], b_rows.shape[:-1]
    a = a_rows.reshape(a_lead + (m1, k1, FRACTAL, k0)).swapaxes(-3, -2)
    b = b_rows.reshape(b_lead + (k1, n1, FRACTAL, k0))
    b = b.transpose(tuple(range(len(b_lead))) + tuple(len(b_lead) + i for i in (0, 3, 1, 2)))
    res = _as_f32(a).reshape(a_lead + (m, k)) @ _as_f32(b).reshape(b_lead + (k, n))
    if res.shape[:-2] != lead:  # both operands shared: one product for every row
        res = np.broadcast_to(res, lead + (m, n))
    c = l0c_f32[..., c_e : c_e + m * n].reshape(lead + (n1, m1, FRACTAL, FRACTAL))
    nz = res.reshape(lead + (m1, FRACTAL, n1, FRACTAL))
    nz = nz.transpose(tuple(range(len(lead))) + tuple(len(lead) + i for i in (2, 0, 1, 3)))
    if accumulate:
        c += nz
    else:
        c[...] = nz


def bursts(buf: np.ndarray, offset: int, count: int, length: int, pitch: int, dtype=np.uint8) -> np.ndarray:
    """A view of `count` runs of `length` elements of `dtype`, one every
    `pitch` bytes from byte `offset` of a memory (one core's, or one row per
    core: a C-contiguous 2-D array)."""
    dtype = np.dtype(dtype)
    return np.ndarray(buf.shape[:-1] + (count, length), dtype, buffer=buf, offset=offset,
                      strides=buf.strides[:-1] + (pitch, dtype.itemsize))


def dma_copy(src_buf, dst_buf, src, dst, count, length, src_gap, dst_gap, src_extent, dst_extent,
             pad: bool, cast: bool) -> None:
    """A DMA's data: `count` bursts of `length` source bytes; a burst's extent
    is what it covers on each side (whole blocks on chip with pad); a cast
    burst turns fp32 into fp16 (half the bytes)."""
    if pad:
        dv = bursts(dst_buf, dst, count, dst_extent, dst_extent + dst_gap)
        dv[..., :length] = bursts(src_buf, src, count, length, src_extent + src_gap)
        dv[..., length:] = 0  # a load: the rest of the last block (UB -> GM: none, dx == ln)
    elif cast:
        dv = bursts(dst_buf, dst, count, length // 4, length // 2 + dst_gap, np.float16)
        dv[...] = bursts(src_buf, src, count, length // 4, length + src_gap, np.float32)
    elif count == 1 or (src_gap == 0 and dst_gap == 0):
        n = count * length
        dst_buf[..., dst : dst + n] = src_buf[..., src : src + n]
    else:
        dst_view = bursts(dst_buf, dst, count, length, length + dst_gap)
        dst_view[...] = bursts(src_buf, src, count, length, length + src_gap)


def load2d_copy(l1, dst_buf, src, dst, repeat, stride, transpose: bool) -> None:
    """load2d: `repeat` fractals from L1 (one every `stride` fractals) to L0A/L0B,
    each transposed (as 16x16 fp16) on request."""
    source = bursts(l1, src, repeat, FRACTAL_BYTES, stride * FRACTAL_BYTES)
    lead = l1.shape[:-1]
    dest = dst_buf[..., dst : dst + repeat * FRACTAL_BYTES].reshape(lead + (repeat, FRACTAL_BYTES))
    if transpose:
        shape = lead + (repeat, FRACTAL, FRACTAL)
        dest.view(np.float16).reshape(shape)[...] = (
            np.ascontiguousarray(source).view(np.float16).reshape(shape).swapaxes(-1, -2))
    else:
        dest[...] = source


def load3d_copy(l1, l0a, src_e, dst_e, n_src, im2col: Im2col) -> None:
    """load3d: the im2col gather (im2col_index) of the feature map's `n_src`
    elements at `src_e` in L1, into L0A at `dst_e` (element offsets), 32-byte
    block by block (one index per pixel and tap, not per element: 4x faster)."""
    source = l1[..., src_e : src_e + n_src].view(_BLOCK)
    out = l0a[..., dst_e : dst_e + im2col.elements]
    # mode="clip": the indices are in range, and "raise" would buffer the output
    np.take(source, im2col.blocks, axis=-1, out=out.view(_BLOCK), mode="clip")
    out.reshape(out.shape[:-1] + (-1, BLOCK_BYTES // out.itemsize))[..., im2col.pads, :] = 0
