"""Tile sizes of a conv kernel (`choose_conv_tiling`): they fit the buffers
by construction (L0A/L0B halves, for double buffering; L1; L0C and UB for a
chunk's result), and among those that fit the cheapest is taken: the larger
of the GM -> L1 traffic and the cube's cycles (the target's own formulas),
plus instruction issue."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import Operation
from xdsl.utils.exceptions import PassFailedException

from gedialects.location import describe_op
from gedialects.npu.isa import BLOCK_BYTES, FRACTAL_BYTES

from .context import UB_RESERVE_BYTES, LoweringContext
from .planning import CUBE_CHANNELS

F32_BYTES = 4
"""L0C accumulates in fp32; the epilogue's UB tiles are sized for it."""

CONV_INSTRS_PER_SLICE = 3
"""Cost model: im2col, load of the weights and mmad per C1 slice of a chunk."""
CONV_INSTRS_PER_FRACTAL = 8
"""Cost model: instructions estimated per output-channel fractal of a chunk (epilogue, store)."""
ISSUE_CYCLES = 2
"""Cost model: scalar-unit cycles to issue one instruction."""
STAGED_EPILOGUE_TILES = 4
"""UB a staged conv's epilogue may take, in fp32 tiles: result, residual, two temporaries."""


@dataclass(frozen=True)
class ConvShape:
    """What the tiling of one conv kernel depends on."""

    in_slices: int  # C1 slices of input per superblock
    out_fractals: int  # 16-channel fractals of output per superblock (N1)
    kh: int
    kw: int
    out_h: int
    out_w: int
    stride: int
    dilation: int
    in_h: int  # input rows (H) and columns (W): the map is stored without the padding
    in_w: int
    pad_top: int
    superblocks: int
    residual: bool
    staged: bool = False  # the input band passes through UB on its way to L1, a C1 slice at a time


@dataclass(frozen=True)
class BandWindow:
    """Where a band's input rows sit in L1. The kernel pads on the fly: each
    band copies `count` rows of the stored map, starting at the band's first
    window row clamped into the map, so they land `lead` rows before to
    `trail` rows after the window when the window hangs over an edge; the
    window's rows outside the map are zeroed in L1."""

    rows: int  # input rows the window of a band spans (padding included)
    count: int  # rows copied per band
    lead: int
    trail: int
    top: bool  # some band's window starts above the map
    bottom: bool  # some band's window ends below it

    @property
    def l1_rows(self) -> int:
        return self.lead + self.rows + self.trail


def band_window(conv: ConvShape, band_rows: int) -> BandWindow:
    rows = (band_rows - 1) * conv.stride + conv.dilation * (conv.kh - 1) + 1
    count = min(rows, conv.in_h)
    starts = [b * band_rows * conv.stride - conv.pad_top for b in range(conv.out_h // band_rows)]
    shifts = [min(max(r, 0), conv.in_h - count) - r for r in starts]  # copied rows' first window row
    return BandWindow(rows, count, max(0, -min(shifts)), max(0, max(shifts) + count - rows),
                      min(starts) < 0, max(starts) + rows > conv.in_h)


@dataclass(frozen=True)
class ConvTiling:
    row_parts: list[tuple[int, int]]
    """K split over kernel rows: (first row, rows) of each part, accumulated in L0C"""
    part_taps: int  # taps of the largest part (rows x kw)
    tile_fractals: int  # output-channel fractals per tile (a divisor of N1)
    chunk_rows: int  # output rows per im2col chunk
    chunk_m: int  # matrix rows M of a chunk (its pixels, rounded up to 16)
    chunks_per_row: int  # > 1 when one output row does not fit a chunk
    band_rows: int  # output rows per tile


def choose_conv_tiling(ctx: LoweringContext, op: Operation, conv: ConvShape) -> ConvTiling:
    """Tile sizes that fit the buffers by construction (L0A/L0B halves for
    double buffering), picked by cost: the larger of the GM -> L1 traffic and
    the cube's cycles (the target's own formulas), plus instruction issue."""
    cap = ctx.config.capacity_bytes
    c0, es = ctx.c0, ctx.elem_bytes
    kh, kw, s, d = conv.kh, conv.kw, conv.stride, conv.dilation
    taps = kh * kw
    # K split over kernel rows when the whole im2col of one C1 slice does
    # not fit L0A/L0B (11x11): parts of rows_per_part rows, accumulated in L0C
    rows_per_part = min(kh, (cap["l0a"] // 2) // (CUBE_CHANNELS * kw * BLOCK_BYTES),
                        (cap["l0b"] // 2) // (kw * FRACTAL_BYTES))
    if rows_per_part < 1:
        raise PassFailedException(f"{describe_op(op)}: one kernel row of {kw} taps does not fit L0A/L0B")
    nparts = -(-kh // rows_per_part)
    rows_per_part = -(-kh // nparts)
    row_parts = [(r0, min(rows_per_part, kh - r0)) for r0 in range(0, kh, rows_per_part)]
    part_taps = rows_per_part * kw
    max_m = (cap["l0a"] // 2) // (part_taps * BLOCK_BYTES) // 16 * 16
    max_tile_fractals = max(1, (cap["l0b"] // 2) // (part_taps * FRACTAL_BYTES))
    n1, oh, ow, in_w = conv.out_fractals, conv.out_h, conv.out_w, conv.in_w
    best = None
    for tile_fractals in [x for x in range(1, n1 + 1) if n1 % x == 0 and x <= max_tile_fractals]:
        ub_rows = (cap["ub"] - UB_RESERVE_BYTES) // ((2 if conv.residual else 1) * tile_fractals * CUBE_CHANNELS * F32_BYTES)
        l0c_rows = cap["l0c"] // (tile_fractals * CUBE_CHANNELS * F32_BYTES)
        m_cap = min(max_m, ub_rows, l0c_rows) // 16 * 16
        if m_cap < 16:
            continue
        if ow <= m_cap:  # whole output rows per chunk
            chunkings = [(r, -(-r * ow // 16) * 16, 1) for r in range(1, oh + 1) if oh % r == 0 and r * ow <= m_cap]
        else:  # a row in several chunks
            chunkings = [(1, m_cap, -(-ow // m_cap))]
        for chunk_rows, chunk_m, per_row in chunkings:
            for band_rows in [m * chunk_rows for m in range(1, oh // chunk_rows + 1) if (oh // chunk_rows) % m == 0]:
                window = band_window(conv, band_rows)
                l1 = (conv.in_slices * window.l1_rows * in_w * c0 * es
                      + conv.in_slices * taps * tile_fractals * FRACTAL_BYTES)
                if l1 > cap["l1"]:  # the band's input and the block's weights, per tile
                    continue
                # UB: the epilogue's fp32 tiles (result, residual; staged: also a map body's
                # temporaries), the row of zeros padding rows are copied from, a staged band's two slices
                epilogue_tiles = STAGED_EPILOGUE_TILES if conv.staged else (2 if conv.residual else 1)
                ub = epilogue_tiles * tile_fractals * CUBE_CHANNELS * chunk_m * F32_BYTES
                ub += in_w * c0 * es if window.top or window.bottom else 0
                ub += 2 * window.count * in_w * c0 * es if conv.staged else 0
                if ub > cap["ub"] - UB_RESERVE_BYTES:
                    continue
                tiles = oh // band_rows * (n1 // tile_fractals) * conv.superblocks
                cores = ctx.cores_for(tiles)
                moved = conv.in_slices * window.count * in_w * c0 * es + conv.in_slices * taps * tile_fractals * FRACTAL_BYTES
                gm_bytes = moved * tiles
                mte2 = ctx.config.dma_cycles("gm_l1", gm_bytes // max(1, cores), cores)
                chunks = (tiles / cores) * (band_rows // chunk_rows) * per_row
                cube = chunks * conv.in_slices * nparts * ctx.config.mmad_cycles(
                    "f16" if ctx.fp16 else "f32", chunk_m, tile_fractals * CUBE_CHANNELS, part_taps * c0)
                instrs = tiles / cores * (band_rows // chunk_rows) * per_row * (
                    conv.in_slices * CONV_INSTRS_PER_SLICE + CONV_INSTRS_PER_FRACTAL * tile_fractals)
                if conv.staged:  # whole tiles per core; the band's slices pass GM -> UB -> vector -> L1
                    rounds = -(-tiles // cores)
                    slice_bytes = window.count * in_w * c0 * es
                    mte2 = ctx.config.dma_cycles("gm_ub", rounds * moved, cores)
                    stage = rounds * conv.in_slices * (ctx.config.vector_cycles("mul", -(-slice_bytes // 256))
                                                       + ctx.config.dma_cycles("ub_l1", slice_bytes))
                    mte2 = max(mte2, stage)
                cost = max(mte2, cube) + instrs * ISSUE_CYCLES
                if best is None or cost < best[0]:
                    best = (cost, tile_fractals, chunk_rows, chunk_m, per_row, band_rows)
    if best is None:
        raise PassFailedException(
            f"{describe_op(op)}: no tiling fits the target's buffers (C1i={conv.in_slices} N1={n1} T={taps} "
            f"OH={oh} OW={ow} s={s} mc_max={max_m} tn_max={max_tile_fractals} fm_w={in_w})")
    _, tile_fractals, chunk_rows, chunk_m, per_row, band_rows = best
    return ConvTiling(row_parts, part_taps, tile_fractals, chunk_rows, chunk_m, per_row, band_rows)
