"""tile-expand-structured for tile.attention: one tile of query rows as a
flash-attention loop over blocks of keys.

For the tile's mt query rows (Q moved GM -> L1 -> L0A once), and for each
block of kt keys:

    S = Q . K_blk^T              cube: K rows -> L1 (ZN) -> L0B, mmad into L0C, L0C -> UB (fp32)
    S = S * scale + masks_blk    vector (a mask block is read GM -> UB, broadcast over the rows it lacks)
    m' = max(m, rowmax(S)); alpha = exp(m - m')
    P = exp(S - m')              vector (rows minus their max, broadcast from a column)
    l = l * alpha + rowsum(P)
    O = O * alpha + P . V_blk    P -> the cube's element type -> L1 (ZZ) -> L0A; V -> L1 -> L0B; mmad; L0C -> UB
    m = m'

(a row max is floored at the lowest finite fp32, so a row whose keys in
a block are all masked with -inf gives exp(-inf) = 0, not NaN), and O / l
is the tile's result (fp32, in UB; with `zero_empty_rows` l is first
raised to at least 1, which only changes a row whose every score is -inf:
0 instead of 0 / 0) for the kernel's epilogue
maps and store. The scores exist only one [mt, kt] block at a time, in L0C
and UB: they never reach GM. The first block initialises m, l and O.

The key block is the longest run of keys (a divisor of Sk in whole 16-key
fractals, at most KEY_BLOCK_LIMIT) whose cube buffers fit L0A/L0B/L0C/L1
beside the query tile's; UB is measured by the expansion itself, so
tile-select-tiling's candidates fit by construction. Keys that are not
whole fractals (Sk = 197) are one block: the padding keys' rows of K are
zero in L1 (their scores are 0, finite), the padding values are zero in
L1 (V's missing rows), and P is clamped to [0, 1] (exp(S - max) <= 1
anyway), so padding columns contribute exactly 0.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.dialects.builtin import f32
from xdsl.ir import SSAValue

from gedialects.npu.isa import BLOCK_BYTES, FRACTAL
from gedialects.tile import ops as t
from gedialects.tile import structured as st
from gedialects.tile.builder import Index
from gedialects.tile.transforms.ub_buffers import Buffer, TilingError, elem_bytes, round_up

if TYPE_CHECKING:
    from gedialects.tile.transforms.expand_structured import KernelExpansion

LOWEST_F32 = -3.4028234663852886e38
"""The most negative finite fp32: the floor of a block's row max."""
KEY_BLOCK_LIMIT = 512
"""Longest block of keys one step of the loop scores (its [mt, kt] fp32
scores, their copy for the row max and a mask block live in UB)."""


def key_block(Sk: int, mp: int, dp: int, dvp: int, es: int, capacities: dict[str, int]) -> int:
    """The number of keys one step scores: the largest divisor of Sk in whole
    16-key fractals (Sk itself when it is not whole fractals), at most
    KEY_BLOCK_LIMIT, whose cube buffers fit beside the query tile's."""
    if Sk % FRACTAL:
        options = [Sk]
    else:
        options = [kt for kt in range(FRACTAL, min(Sk, KEY_BLOCK_LIMIT) + 1, FRACTAL) if Sk % kt == 0]
    k0 = BLOCK_BYTES // es
    for kt in sorted(options, reverse=True):
        ktp, kpp = round_up(kt, FRACTAL), round_up(kt, k0)
        need = {
            "l0a": (mp * dp + mp * kpp) * es,  # Q, P
            "l0b": (ktp * dp + ktp * dvp) * es,  # K block, V block
            "l0c": (mp * ktp + mp * dvp) * 4,  # S, P . V
            "l1": (mp * dp + ktp * dp + mp * kpp + ktp * dvp) * es,
        }
        if all(capacities.get(space) is None or n <= capacities[space] for space, n in need.items()):
            return kt
    raise TilingError(f"attention with {mp} query rows, head size {dp} and values of {dvp} does not fit the cube's buffers")


def expand_attention(x: KernelExpansion, op: st.AttentionOp, coords: list[Index]) -> Buffer:
    """The tile's [.., mt, dv] block of op's result (fp32, in UB)."""
    n = len(x.shape)
    if any(x.tile[k] != 1 for k in range(n - 2)):
        raise TilingError("an attention tile covers query rows of one head")
    mt, dv_tile = x.tile[-2], x.tile[-1]
    Sq, Sk, d, dv = op.sizes()
    if dv_tile != dv:
        raise TilingError("an attention tile covers whole rows of values")
    if mt % FRACTAL and mt != Sq:
        raise TilingError(f"{mt} query rows are neither whole 16-row fractals nor every query")
    element = op.q.type.element_type  # type: ignore[attr-defined]
    es = elem_bytes(element)
    k0 = BLOCK_BYTES // es
    transpose_v = op.transpose_v is not None
    if not transpose_v and es != 2:
        raise TilingError("row-major values need fp16 (load_2d transposes 16x16 fp16 fractals)")
    mp, dp, dvp = round_up(mt, FRACTAL), round_up(d, k0), round_up(dv, FRACTAL)
    kt = key_block(Sk, mp, dp, dvp, es, x.capacities)
    ktp, kpp = round_up(kt, FRACTAL), round_up(kt, k0)
    m1, kq1, n1s, kp1, n1o = mp // FRACTAL, dp // k0, ktp // FRACTAL, kpp // k0, dvp // FRACTAL
    b = x.b

    l1q, l0q = x.cube_alloc("l1", element, mp * dp), x.cube_alloc("l0a", element, mp * dp)
    l1k, l0k = x.cube_alloc("l1", element, ktp * dp), x.cube_alloc("l0b", element, ktp * dp)
    l1p, l0p = x.cube_alloc("l1", element, mp * kpp), x.cube_alloc("l0a", element, mp * kpp)
    l1v, l0v = x.cube_alloc("l1", element, kpp * dvp), x.cube_alloc("l0b", element, kpp * dvp)
    l0s, l0o = x.cube_alloc("l0c", f32, mp * ktp), x.cube_alloc("l0c", f32, mp * dvp)
    x.check_cube_capacity(f"attention tile of {mt} rows")

    def gm(v: SSAValue) -> SSAValue:
        return b.gm(v.owner.tensor.data, v.type.element_type)  # type: ignore[union-attr]

    def row_stride(v: SSAValue) -> int:
        return v.owner.gm_strides()[-2]  # type: ignore[union-attr]

    ldq, ldk, ldv = row_stride(op.q), row_stride(op.k), row_stride(op.v)
    q_base = x.operand_offset(op.q, coords, n - 2, mt * ldq)
    k_base = x.operand_offset(op.k, coords, n - 2, 0)
    v_base = x.operand_offset(op.v, coords, n - 2, 0)
    if kt % FRACTAL:  # the padding keys of the one block: zero rows of K in L1, written once
        _zero_key_rows(x, l1k, kt, kq1, n1s, k0, element)

    # the query tile: rows -> L1 in column blocks -> L0A (ZZ), for every key block
    x._box_to_fractals(l1q, b.at(gm(op.q), q_base), mt, d, k0, ldq, mp * k0, FRACTAL * k0)
    x.load_left_operand(l0q, l1q, m1, kq1, k0)

    lead = (1,) * (n - 2)
    scores_box, column_box, out_box = lead + (mt, kt), lead + (mt, 1), lead + (mt, dv)
    masks = [(mv, factor) for mv, factor in zip(op.masks, op.mask_factors())]
    m = l = o = alpha = None
    for start in range(0, Sk, kt):
        first = start == 0
        # S = Q . K_blk^T: rows of keys -> ZN fractals (kq1, n1s)
        x._box_to_fractals(l1k, b.at(gm(op.k), k_base, start * ldk), kt, d, k0, ldk, n1s * FRACTAL * k0, FRACTAL * k0)
        b.emit(t.LoadFractalOp(l0k, l1k, kq1 * n1s))
        b.emit(t.MatmulOp(l0s, l0q, l0k, mp, ktp, dp, accumulate=False))
        s = x.new_buffer(scores_box, f32)
        b.copy(s.ref, l0s, [n1s, mt, FRACTAL], [FRACTAL, s.pitch, 1], [mp * FRACTAL, FRACTAL, 1])
        if op.scale.value.data != 1.0:
            x.body.vector("muls", s, [s], op.scale.value.data)
        for mask, factor in masks:
            _add_mask_block(x, s, mask, factor, coords, mt, kt, start)
        # the values' copy is issued now, behind the mask blocks' loads, so it runs while P is computed
        _values_to_l1(x, op, l1v, gm(op.v), v_base, ldv, start, kt, dv, k0, element)
        block_max = x.row_reduce("max", s, keep=True)
        if masks:  # a row whose keys in this block are all masked (-inf): its max stays finite, so S - max is not NaN
            x.body.vector("maxs", block_max, [block_max], LOWEST_F32)
        if first:
            m = block_max
        else:
            new_max = x.new_buffer(column_box, f32)
            x.body.vector("max", new_max, [m, block_max])
            alpha = x.new_buffer(column_box, f32)
            x.body.vector("sub", alpha, [m, new_max])
            x.body.vector("exp", alpha, [alpha])
            x.pool.release(m)
            x.pool.release(block_max)
            m = new_max
        x.body.vector("sub", s, [s, m])
        x.body.vector("exp", s, [s])
        if kt % FRACTAL:  # padding columns (garbage minus the max) stay finite: exp(S - max) <= 1 for the rest
            x.body.vector("mins", s, [s], 1.0)
        if es == 4:
            p = s
        else:
            p = x.new_buffer(scores_box, element)
            b.emit(t.CastOp(p.ref, s.ref, min(p.count(), s.count())))
        _rows_to_fractals(x, l1p, p, mt, kp1, k0)
        block_sum = x.row_reduce("sum", s, keep=False)  # after the copy of P to L1 (npu-insert-sync orders them)
        if p is not s:
            x.pool.release(p)
        x.pool.release(s)
        l = block_sum if first else _rescale_add(x, l, alpha, block_sum)
        # P . V_blk
        x.load_left_operand(l0p, l1p, m1, kp1, k0)
        _values_to_l0b(x, op, l1v, l0v, kt, dv, k0)
        b.emit(t.MatmulOp(l0o, l0p, l0v, mp, dvp, kpp, accumulate=False))
        pv = x.new_buffer(out_box, f32)
        b.copy(pv.ref, l0o, [n1o, mt, FRACTAL], [FRACTAL, pv.pitch, 1], [mp * FRACTAL, FRACTAL, 1])
        if first:
            o = pv
        else:
            o = _rescale_add(x, o, alpha, pv)
            x.pool.release(alpha)
    if op.zero_empty_rows is not None:
        # a row with a finite score has l >= 1 (its max's exp(0) = 1 plus terms >= 0,
        # rescaled by alpha <= 1 only before a larger max adds its own 1): max(l, 1)
        # leaves it exact; a row whose every score is -inf has O = 0 and l = 0, now O / 1 = 0
        x.body.vector("maxs", l, [l], 1.0)
    x.body.vector("div", o, [o, l])
    x.pool.release(l)
    x.pool.release(m)
    return o


def _rescale_add(x: KernelExpansion, acc: Buffer, alpha: Buffer, block: Buffer) -> Buffer:
    """acc * alpha + block (alpha a column: each row's rescale), in acc;
    block is released."""
    x.body.vector("mul", acc, [acc, alpha])
    x.body.vector("add", acc, [acc, block])
    x.pool.release(block)
    return acc


def _zero_key_rows(x: KernelExpansion, l1k: SSAValue, kt: int, kq1: int, n1s: int, k0: int, element) -> None:
    """Rows kt.. of the last 16-key fractal column of K^T's ZN fractals in
    L1 (every contraction block): zeros from UB."""
    rest = FRACTAL - kt % FRACTAL
    zeros = x.pool.new("row", (1, k0), k0, element)
    x.b.emit(t.DupOp(zeros.ref, k0, 0.0))
    first = (n1s - 1) * FRACTAL * k0 + (kt % FRACTAL) * k0
    x.b.copy(x.b.at(l1k, offset=first), zeros.ref, [kq1, rest, k0], [n1s * FRACTAL * k0, k0, 1], [0, 0, 1])
    x.pool.release(zeros)


def _add_mask_block(x: KernelExpansion, s: Buffer, mask: SSAValue, factor: float, coords, mt: int, kt: int,
                    start: int) -> None:
    """s += factor * mask[.., rows of the tile, keys start..start+kt] (a mask
    without a query dim is one row, broadcast)."""
    n = len(x.shape)
    shape = x.aligned(st.shape_of(mask))
    rows = mt if shape[-2] != 1 else 1
    ld = mask.owner.gm_strides()[-2]  # type: ignore[union-attr]
    base = x.operand_offset(mask, coords, n - 2, mt * ld if rows > 1 else 0)
    element = mask.type.element_type  # type: ignore[attr-defined]
    box = (1,) * (n - 2) + (rows, kt)
    block = x.new_buffer(box, element)
    src = x.b.at(x.b.gm(mask.owner.tensor.data, element), base, start)  # type: ignore[union-attr]
    x.b.copy(block.ref, src, [rows, kt], [block.pitch, 1], [ld, 1])
    if elem_bytes(element) != 4:
        wide = x.new_buffer(box, f32)
        x.b.emit(t.CastOp(wide.ref, block.ref, min(wide.count(), block.count())))
        x.pool.release(block)
        block = wide
    if factor != 1.0:
        x.body.vector("muls", block, [block], factor)
    x.body.vector("add", s, [s, block])
    x.pool.release(block)


def _rows_to_fractals(x: KernelExpansion, l1: SSAValue, p: Buffer, rows: int, k1: int, k0: int) -> None:
    """UB rows of p -> L1 in column blocks of the padded rows (NZ, the
    layout load_left_operand reads): row i of column block j at
    (j * mp + i) * k0; the padding rows are never written."""
    mp = round_up(rows, FRACTAL)
    x.b.copy(l1, p.ref, [k1, rows, k0], [mp * k0, k0, 1], [k0, p.pitch, 1])


def _values_to_l1(x: KernelExpansion, op: st.AttentionOp, l1v: SSAValue, v_gm: SSAValue, v_base: Index,
                  ldv: int, start: int, kt: int, dv: int, k0: int, element) -> None:
    """The block of values [kt, dv] -> L1 as the cube's right operand:
    row-major values (fp16) as 16x16 fractals (transposed on their way to
    L0B), their missing rows zero; v^T (fp32) as rows of b^T in ZN fractals."""
    n1 = round_up(dv, FRACTAL) // FRACTAL
    if op.transpose_v is None:
        # straight from GM: staged, the scatter would queue on MTE3 behind P's copy to L1, on the
        # P.V critical path (`roofline.py bert_base_layer`'s attention block: 5,271 cycles with
        # stage=True, 5,001 without)
        x.row_major_right_to_l1(l1v, x.b.at(v_gm, v_base, start * ldv), kt, dv, ldv, round_up(kt, FRACTAL), element,
                                stage=False)
    else:
        x._box_to_fractals(l1v, x.b.at(v_gm, v_base, start), dv, kt, k0, ldv, n1 * FRACTAL * k0, FRACTAL * k0)


def _values_to_l0b(x: KernelExpansion, op: st.AttentionOp, l1v: SSAValue, l0v: SSAValue, kt: int, dv: int,
                   k0: int) -> None:
    """The block of values in L1 (`_values_to_l1`) -> L0B: row-major ones
    transposed by load_2d, v^T's as they are."""
    n1 = round_up(dv, FRACTAL) // FRACTAL
    if op.transpose_v is None:
        ktp = round_up(kt, FRACTAL)
        x.load_right_operand_transposed(l0v, l1v, 0, ktp, n1, ktp)
    else:
        x.b.emit(t.LoadFractalOp(l0v, l1v, (round_up(kt, k0) // k0) * n1))
