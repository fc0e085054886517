"""The simulator's fast paths for where operands lie equal the plain gathers
they stand for: a vector operand of whole 32-byte blocks at a stride read and
written through a strided view (`vector_layout` kind 3) against indexing
with its element indices `rel`; load3d's im2col moved 32-byte block by block
against the im2col matrix built element by element. One core's memory (1-D)
and one row per core (2-D, as lock-step runs the blocks of a launch)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as hs

from fuzz_settings import fuzz_settings
from target.semantics import im2col_index, load3d_copy, vector_layout, vread, vwrite

MEMORY_ELEMENTS = 4096


@hs.composite
def operands(draw):
    esize = draw(hs.sampled_from([2, 4]))
    epb = 32 // esize
    repeat = draw(hs.integers(1, 8))
    whole_blocks = draw(hs.booleans())
    mask = epb * draw(hs.integers(1, 8)) if whole_blocks else draw(hs.integers(1, 8 * epb))
    blk, rep = draw(hs.integers(0, 4)), draw(hs.integers(0, 12))
    base = epb * draw(hs.integers(0, 16))
    rows = draw(hs.sampled_from([(), (3,)]))
    return esize, repeat, mask, blk, rep, base, rows


@fuzz_settings(300)
@given(operands())
def test_vector_operand_views_equal_the_gather(operand):
    esize, repeat, mask, blk, rep, base, rows = operand
    layout = vector_layout(repeat, mask, blk, rep, esize)
    rel = layout[4] + base
    dtype = np.float16 if esize == 2 else np.float32
    rng = np.random.default_rng(repeat * 1000 + mask)
    memory = rng.standard_normal(rows + (MEMORY_ELEMENTS,)).astype(dtype)
    np.testing.assert_array_equal(vread(memory, base, layout), memory[..., rel])
    value = rng.standard_normal(rows + (repeat, mask)).astype(dtype)
    written, expected = memory.copy(), memory.copy()
    vwrite(written, base, layout, value)
    expected[..., rel] = value
    # a layout that addresses an element twice stores through the gather, as the expectation does
    np.testing.assert_array_equal(written, expected)
    if layout[0] == 3 and layout[5][3]:  # and a broadcast value (a vdup's scalar, a reduction's column)
        column = value[..., :1]
        vwrite(written, base, layout, column)
        expected[..., rel] = column
        np.testing.assert_array_equal(written, expected)


def test_block_strided_operands_take_the_view():
    """The layouts the kernels use most (an epilogue's per-channel row read
    with repeat stride 0, block-strided rows) are views, not gathers; an
    operand whose elements repeat is stored through the gather."""
    broadcast_row = vector_layout(8, 128, 1, 0, 2)
    assert broadcast_row[0] == 3 and not broadcast_row[5][3]
    memory = np.arange(1024, dtype=np.float16)
    assert np.shares_memory(vread(memory, 16, broadcast_row), memory)
    strided = vector_layout(4, 64, 2, 16, 2)
    assert strided[0] == 3 and strided[5][3]
    assert vector_layout(2, 40, 2, 16, 2)[0] == 2  # a partial block: the gather


def im2col_elements(fm, kh, kw, stride, pad, dilation, m_start, m_len):
    """The ZZ fractals (m1, k1, m0, c0) of rows m_start .. m_start + m_len of
    the im2col matrix of `fm` [H, W, c0], element by element (zero past the
    output's pixels and in the padding)."""
    H, W, C0 = fm.shape
    pt, pb, pl, pr = pad
    oh = (H + pt + pb - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (W + pl + pr - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((m_len, kh * kw, C0), fm.dtype)
    for row in range(m_len):
        m = m_start + row
        if m >= oh * ow:
            continue
        oy, ox = divmod(m, ow)
        for tap in range(kh * kw):
            i, j = divmod(tap, kw)
            y, x = oy * stride[0] - pt + i * dilation[0], ox * stride[1] - pl + j * dilation[1]
            if 0 <= y < H and 0 <= x < W:
                out[row, tap] = fm[y, x]
    return out.reshape(m_len // 16, 16, kh * kw, C0).transpose(0, 2, 1, 3).ravel()


@pytest.mark.parametrize("dtype,c0", [(np.float16, 16), (np.float32, 8)])
@pytest.mark.parametrize("rows", [(), (3,)])
@pytest.mark.parametrize(
    "H,W,kh,kw,stride,pad,dilation,m_start,m_len",
    [
        (7, 6, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 0, 48),
        (7, 6, 2, 3, (2, 1), (0, 1, 1, 0), (1, 2), 16, 32),
        (5, 9, 1, 1, (2, 2), (0, 0, 0, 0), (1, 1), 0, 16),
    ],
)
def test_im2col_by_blocks_equals_the_element_gather(dtype, c0, rows, H, W, kh, kw, stride, pad, dilation,
                                                    m_start, m_len):
    rng = np.random.default_rng(H * W + kh)
    src, dst = 64, 32  # element offsets in L1 and L0A
    n_src = H * W * c0
    l1 = rng.standard_normal(rows + (src + n_src + 64,)).astype(dtype)
    l0a = np.full(rows + (dst + m_len * kh * kw * c0 + 64,), 7, dtype)
    im2col = im2col_index(H, W, kh, kw, *stride, *pad, *dilation, m_start, m_len, c0)
    load3d_copy(l1, l0a, src, dst, n_src, im2col)
    for r in np.ndindex(*rows):
        fm = l1[r][src : src + n_src].reshape(H, W, c0)
        expected = im2col_elements(fm, kh, kw, stride, pad, dilation, m_start, m_len)
        np.testing.assert_array_equal(l0a[r][dst : dst + im2col.elements], expected)
        assert (l0a[r][:dst] == 7).all() and (l0a[r][dst + im2col.elements :] == 7).all()


@pytest.mark.parametrize("dtype,k0", [(np.float16, 16), (np.float32, 8)])
@pytest.mark.parametrize("shared", ["neither", "a", "b", "both", "a_but_the_last_row"])
def test_mmad_of_stacked_rows_equals_each_row_alone(dtype, k0, shared):
    """The cube's product on one row per core (lock-step) equals it on each
    core's memory alone, bit for bit, whether the cores' operands differ or
    some are alike (then converted once and broadcast)."""
    from target.semantics import mmad

    rng = np.random.default_rng(11)
    rows, m, n, k = 4, 32, 48, 2 * k0
    l0a = rng.standard_normal((rows, m * k + 64)).astype(dtype)
    l0b = rng.standard_normal((rows, k * n + 64)).astype(dtype)
    if shared in ("a", "both", "a_but_the_last_row"):
        l0a[1:] = l0a[0]
    if shared == "a_but_the_last_row":
        l0a[-1, 40] += 1
    if shared in ("b", "both"):
        l0b[1:] = l0b[0]
    l0c = rng.standard_normal((rows, m * n + 32)).astype(np.float32)
    for accumulate in (False, True):
        stacked = l0c.copy()
        mmad(l0a, l0b, stacked, 16, 32, 16, m, n, k, k0, accumulate)
        for r in range(rows):
            alone = l0c[r].copy()
            mmad(l0a[r], l0b[r], alone, 16, 32, 16, m, n, k, k0, accumulate)
            np.testing.assert_array_equal(stacked[r].view(np.uint32), alone.view(np.uint32))
