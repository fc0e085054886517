"""Tile sizes of a conv kernel and how the cores share its tiles
(`choose_conv_tiling`): they fit the buffers by construction (L0A/L0B
halves, for double buffering; L1; L0C and UB for a chunk's result), and
among those that fit, with every core grid and loop order
(`choose_core_grid`), the cheapest is taken: the busiest core's GM -> L1
loads (bytes and each DMA's fixed latency, the DMAs counted by npu/dma.py's
own plan) plus its tiles' work (MTE1's loads beside the mmads, the
epilogue and its store; the target's own formulas), plus instruction
issue. Loads and tile work add up: the band and weight buffers are
single, so a load waits for the work on what it replaces."""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass

from xdsl.dialects import arith
from xdsl.ir import Block

from gedialects.npu.dma import plan_copy
from gedialects.npu.isa import BLOCK_BYTES, FRACTAL, FRACTAL_BYTES
from gedialects.tile.conv import ConvOp, ConvTilingAttr
from gedialects.tile.structured import YieldOp
from gedialects.tile.ops import RefType
from gedialects.tile.transforms.ub_buffers import STAGE_UB_SHARE, UB_RESERVE_BYTES, TilingError, elem_bytes
from target.config import TargetConfig

CUBE_CHANNELS = FRACTAL
"""Output channels the cube writes per fractal column (N0)."""

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
EPILOGUE_VECTOR_OPS = 2
"""Cost model: vector ops of a chunk's epilogue (bias or residual, activation)."""
MAX_CONV_PANELS = 8
"""Most C1 panels a tile's first chunk takes its operands' copies in (each panel's copies are DMAs of their own)."""


@dataclass(frozen=True)
class ConvTarget:
    """What a conv's tiling depends on besides its shape: the target and
    the storage element's bytes (2: force_fp16, 4: fp32)."""

    config: TargetConfig
    elem_bytes: int

    @property
    def c0(self) -> int:
        """Channels of a C1 slice (one 32-byte block), also a fractal's K depth."""
        return BLOCK_BYTES // self.elem_bytes

    @property
    def fp16(self) -> bool:
        return self.elem_bytes == 2

    def cores_for(self, tiles: int) -> int:
        """Cores to split `tiles` over."""
        return max(1, min(tiles, self.config.cube_cores))


@dataclass(frozen=True)
class ConvShape:
    """What the tiling of one conv kernel depends on."""

    in_slices: int  # C1 slices of input per superblock
    out_fractals: int  # 16-channel fractals of output per superblock (N1)
    kh: int
    kw: int
    out_h: int
    out_w: int
    stride: int  # vertical, over the band's rows (a decimated band's: stride / row_step)
    dilation: int
    in_h: int  # input rows (H) and columns (W): the map is stored without the padding
    in_w: int
    pad_top: int
    superblocks: int
    residual: bool
    staged: bool = False  # the input band passes through UB on its way to L1, in chunks of C1 slices
    stage_ops: int = 0  # the stage's vector ops per element pass
    stage_vectors: int = 0  # its per-channel operands (in UB whole)
    # a conv whose kernel is one row (column) tall (wide) and unpadded that
    # way reads every stride-th row (pixel) of the stored map: its band can
    # hold only those (`row_step`, `col_step` stored rows / pixels per band
    # row / pixel), the stride over them 1; in_h and in_w are the band's
    # map, stored_h and stored_w the map in GM
    row_step: int = 1
    col_step: int = 1
    stored_h: int = 0
    stored_w: int = 0

    @property
    def decimated(self) -> bool:
        return self.row_step > 1 or self.col_step > 1

    @property
    def direct(self) -> bool:
        """A 1x1 conv at stride 1 over its band, unpadded: output pixel i
        reads band pixel i, so A's fractals (16 pixels of one C1 slice) lie
        whole in L1 and load as they are, several slices per mmad."""
        return self.kh == self.kw == 1 and self.stride == 1 and (self.in_h, self.in_w) == (self.out_h, self.out_w)


def band_dmas(conv: ConvShape, count: int, elem_bytes: int, c0: int, slice_pixels: int = 0) -> int:
    """DMA instructions that copy `count` rows of every C1 slice of the
    band from GM to L1, the slices `slice_pixels` apart there (default: the
    rows'), as npu/dma.py plans the copy."""
    return band_dmas_of(conv, count, elem_bytes, c0, slice_pixels, conv.in_slices)


@functools.lru_cache(maxsize=4096)
def band_dmas_of(conv: ConvShape, count: int, elem_bytes: int, c0: int, slice_pixels: int, slices: int) -> int:
    """`band_dmas` for `slices` C1 slices of the band (one panel's); cached:
    the grids and panel counts of a candidate ask for the same few plans."""
    row = conv.in_w * c0
    stored_w, stored_h = conv.stored_w or conv.in_w, conv.stored_h or conv.in_h
    plan = plan_copy([slices, count, conv.in_w, c0], [(slice_pixels * c0) or count * row, row, c0, 1],
                     [stored_h * stored_w * c0, conv.row_step * stored_w * c0, conv.col_step * c0, 1],
                     elem_bytes, elem_bytes, "l1", "gm")
    return plan.instructions


@functools.lru_cache(maxsize=4096)
def store_dmas(conv: ConvShape, chunk_rows: int, chunk_m: int, per_row: int, tile_fractals: int, elem_bytes: int,
               c0: int) -> int:
    """DMA instructions of one chunk's output store, UB -> GM, as the
    epilogue copies it (expand_conv: [n1][half][rows][cols][c0] from UB's
    [n1][m][16]) and npu/dma.py plans it: a fractal is one slice's rows in
    fp16, two slices' 32-byte halves of every pixel in fp32."""
    halves = CUBE_CHANNELS // c0
    rows, cols = (chunk_rows, conv.out_w) if per_row == 1 else (1, min(chunk_m, conv.out_w))
    plan = plan_copy([tile_fractals, halves, rows, cols, c0],
                     [halves * conv.out_h * conv.out_w * c0, conv.out_h * conv.out_w * c0, conv.out_w * c0, c0, 1],
                     [chunk_m * CUBE_CHANNELS, c0, conv.out_w * CUBE_CHANNELS, CUBE_CHANNELS, 1],
                     elem_bytes, elem_bytes, "gm", "ub")
    return plan.instructions


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
class CoreGrid:
    """How the cores share a conv's tiles. A tile is one band of output rows
    (of one superblock: a `unit`) x one block of output-channel fractals
    (of that superblock). The cores form a grid over units x blocks; each
    loops over its rectangle with one operand stationary in L1: the band
    (`weights_outer` False: the band is loaded once per unit, the weights
    once per tile) or the weights (True: loaded once per block, the band
    once per tile; dense convs only, where the weights do not depend on
    the unit)."""

    units_per_core: int
    blocks_per_core: int
    weights_outer: bool
    core_rows: int  # cores along the units
    core_cols: int  # cores along the blocks

    @property
    def cores(self) -> int:
        return self.core_rows * self.core_cols


@functools.lru_cache(maxsize=4096)
def choose_core_grid(units: int, blocks: int, cores: int, dense: bool) -> tuple[CoreGrid, ...]:
    """The grids worth costing: per distinct share of units per core, as many
    core columns as the cores left allow; both loop orders where legal
    (memoised: the conv search asks once per tile size and chunking)."""
    grids = []
    shares = sorted({-(-units // rows) for rows in range(1, min(units, cores) + 1)})
    for per_core in shares:
        rows = -(-units // per_core)
        cols_max = max(1, cores // rows)
        blocks_per_core = -(-blocks // cols_max)
        cols = -(-blocks // blocks_per_core)
        for weights_outer in ((False, True) if dense else (False,)):
            grids.append(CoreGrid(per_core, blocks_per_core, weights_outer, rows, cols))
    return tuple(grids)


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
    grid: CoreGrid
    cycles: float  # the cost model's prediction for the busiest core
    slices_per_mmad: int = 0  # a direct 1x1 conv's C1 slices per mmad (its A fractals loaded as they lie); 0: im2col
    panels: int = 1  # C1 panels a tile's first chunk takes its operands' copies in (`conv_panels`)
    stage_slices: int = 1  # a staged conv's C1 slices per copy through UB (`stage_chunk`)


# convs alike in shape (a DenseNet block's 3x3s, a ResNet stage's blocks) share one search;
# a TargetConfig hashes by identity, so an edited config is a new key
@functools.lru_cache(maxsize=1024)
def choose_conv_tiling(target: ConvTarget, conv: ConvShape) -> ConvTiling:
    """Tile sizes that fit the buffers by construction (L0A/L0B halves for
    double buffering), the cores' grid and loop order, and for a direct 1x1
    conv the path, picked by the busiest core's cycles (the target's own
    formulas): its GM -> L1 loads (the stationary operand once per outer
    step, the other once per tile; each DMA's fixed cost) plus its tiles'
    work (`_tile_cycles`), plus instruction issue."""
    tiling = _search(target, conv, math.inf)
    assert tiling is not None  # an unbounded search finds one or raises
    _learn(target, conv, tiling.cycles, math.nextafter(tiling.cycles, -math.inf))
    return tiling


_KNOWN_BOUNDS_MAX = 4096
_known_bounds: dict[tuple[ConvTarget, ConvShape], tuple[float, float]] = {}
"""What the searches so far showed of a conv: the cheapest tiling found
(the cheapest there is after a full search) and the highest bound known to
have none. Whether a tiling is within a bound is monotone in the bound, so
split-K's and the stage decision's questions about convs alike (the same
shape asked with several bounds) are mostly answered from these."""


def _learn(target: ConvTarget, conv: ConvShape, cheapest: float, none_upto: float) -> None:
    if len(_known_bounds) >= _KNOWN_BOUNDS_MAX:
        _known_bounds.clear()
    known_cheapest, known_none = _known_bounds.get((target, conv), (math.inf, -math.inf))
    _known_bounds[target, conv] = (min(cheapest, known_cheapest), max(none_upto, known_none))


def conv_tiling_within(target: ConvTarget, conv: ConvShape, bound: float) -> bool:
    """Whether some tiling of `conv` is predicted at most `bound` cycles.
    The search stops at the first it finds and skips every candidate whose
    tiles' work alone exceeds the bound: cheap when the answer is no (the
    lowering's choice between two forms of a conv, when the other wins)."""
    cheapest, none_upto = _known_bounds.get((target, conv), (math.inf, -math.inf))
    if cheapest <= bound:
        return True
    if bound <= none_upto:
        return False
    found = _search(target, conv, math.nextafter(bound, math.inf))
    if found is None:
        _learn(target, conv, math.inf, bound)
    else:
        _learn(target, conv, found.cycles, -math.inf)
    return found is not None


def _search(target: ConvTarget, conv: ConvShape, bound: float) -> ConvTiling | None:
    """`choose_conv_tiling`'s search (bound infinite: raises TilingError when
    no tiling fits), or the first tiling under `bound` (None if none is)."""
    cap = target.config.capacity_bytes
    c0, es = target.c0, target.elem_bytes
    kh, kw, s = conv.kh, conv.kw, conv.stride
    taps = kh * kw
    # K split over kernel rows when the whole im2col of one C1 slice does
    # not fit L0A/L0B (11x11): parts of rows_per_part rows, accumulated in L0C
    rows_per_part = min(kh, (cap["l0a"] // 2) // (CUBE_CHANNELS * kw * BLOCK_BYTES),
                        (cap["l0b"] // 2) // (kw * FRACTAL_BYTES))
    if rows_per_part < 1:
        raise TilingError(f"one kernel row of {kw} taps does not fit L0A/L0B")
    nparts = -(-kh // rows_per_part)
    rows_per_part = -(-kh // nparts)
    row_parts = [(r0, min(rows_per_part, kh - r0)) for r0 in range(0, kh, rows_per_part)]
    part_taps = rows_per_part * kw
    max_m = (cap["l0a"] // 2) // (part_taps * BLOCK_BYTES) // 16 * 16
    max_tile_fractals = max(1, (cap["l0b"] // 2) // (part_taps * FRACTAL_BYTES))
    n1, oh, ow, in_w = conv.out_fractals, conv.out_h, conv.out_w, conv.in_w
    cores = target.config.cube_cores

    best, best_cost = None, bound
    windows: dict[int, BandWindow] = {}
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
        blocks = n1 // tile_fractals
        weight_bytes = conv.in_slices * taps * tile_fractals * FRACTAL_BYTES  # one block's, per tile
        for chunk_rows, chunk_m, per_row in chunkings:
            for band_rows in [m * chunk_rows for m in range(1, oh // chunk_rows + 1) if (oh // chunk_rows) % m == 0]:
                window = windows.get(band_rows)
                if window is None:  # the same band heights come back for every tile width
                    window = windows[band_rows] = band_window(conv, band_rows)
                band_bytes = conv.in_slices * window.count * in_w * c0 * es
                if band_bytes + weight_bytes > cap["l1"]:  # the band's input and the block's weights
                    continue
                # UB: the epilogue's fp32 tiles (result, residual; staged: also a map body's
                # temporaries), the row of zeros padding rows are copied from, a staged band's two slices
                epilogue_tiles = STAGED_EPILOGUE_TILES if conv.staged else (2 if conv.residual else 1)
                ub = epilogue_tiles * tile_fractals * CUBE_CHANNELS * chunk_m * F32_BYTES
                ub += in_w * c0 * es if window.top or window.bottom else 0
                if conv.staged:  # two chunks of the band's slices, and the stage's per-channel vectors whole
                    slice_bytes = window.count * in_w * c0 * es
                    ub += 2 * stage_chunk(conv.in_slices, slice_bytes, cap["ub"]) * slice_bytes
                    ub += conv.stage_vectors * conv.in_slices * c0 * es
                if ub > cap["ub"] - UB_RESERVE_BYTES:
                    continue
                chunks = (band_rows // chunk_rows) * per_row  # per tile
                units = oh // band_rows * conv.superblocks
                instrs_tile = chunks * (conv.in_slices * CONV_INSTRS_PER_SLICE + CONV_INSTRS_PER_FRACTAL * tile_fractals)
                # the im2col path, and a direct 1x1 conv's: its slices whole fractals apart in L1
                paths = [(0, window.l1_rows * in_w)]
                if conv.direct:
                    paths.append((direct_group(target, conv.in_slices, chunk_m, tile_fractals),
                                  direct_slice_pixels(band_rows, chunk_rows, chunk_m, per_row, ow)))
                for group, slice_pixels in paths:
                    if conv.in_slices * slice_pixels * c0 * es + weight_bytes > cap["l1"]:
                        continue
                    tile_work = _tile_cycles(target, conv, chunks, chunk_m, tile_fractals, part_taps, nparts,
                                               units * blocks, group,
                                               store_dmas(conv, chunk_rows, chunk_m, per_row, tile_fractals, es, c0))
                    # no grid beats the whole work spread evenly, with no traffic
                    if units * blocks / cores * (tile_work.cycles + instrs_tile * ISSUE_CYCLES) >= best_cost:
                        continue
                    dmas = band_dmas(conv, window.count, es, c0, slice_pixels)
                    # the band's DMAs per panel count (a divisor of the steps)
                    panel_dmas = {p: band_dmas_of(conv, window.count, es, c0, slice_pixels, conv.in_slices // p)
                                  for p in range(2, min(tile_work.steps, MAX_CONV_PANELS) + 1) if tile_work.steps % p == 0}
                    grid_cost = GridCost(target, conv, band_bytes, weight_bytes, window.count, dmas, tile_work,
                                         instrs_tile, panel_dmas, window.top or window.bottom)
                    for grid in choose_core_grid(units, blocks, cores, conv.superblocks == 1):
                        cost, panels = grid_cost.of(grid)
                        if cost < best_cost:
                            best_cost = cost
                            best = (cost, tile_fractals, chunk_rows, chunk_m, per_row, band_rows, grid, group, panels)
                            if bound < math.inf:  # one under the bound is the answer
                                return _tiling(target, conv, row_parts, part_taps, best)
    if best is None and bound < math.inf:
        return None
    if best is None:
        raise TilingError(
            f"no conv tiling fits the target's buffers (C1i={conv.in_slices} N1={n1} T={taps} "
            f"OH={oh} OW={ow} s={s} mc_max={max_m} tn_max={max_tile_fractals} fm_w={in_w})")
    return _tiling(target, conv, row_parts, part_taps, best)


def _tiling(target: ConvTarget, conv: ConvShape, row_parts: list[tuple[int, int]], part_taps: int,
            best: tuple) -> ConvTiling:
    cost, tile_fractals, chunk_rows, chunk_m, per_row, band_rows, grid, group, panels = best
    slice_bytes = band_window(conv, band_rows).count * conv.in_w * target.c0 * target.elem_bytes
    staged = stage_chunk(conv.in_slices, slice_bytes, target.config.capacity_bytes["ub"]) if conv.staged else 1
    return ConvTiling(row_parts, part_taps, tile_fractals, chunk_rows, chunk_m, per_row, band_rows, grid, cost,
                      group, panels, staged)


@dataclass(frozen=True)
class ConvTileWork:
    """One tile's cycles once its band and weights are in L1 (`cycles`:
    per chunk the longer of its mmads and the previous chunk's store, then
    its epilogue), the L1 -> L0A and L1 -> L0B loads its first mmad waits
    for (`first_a`, `first_b`: later ones go beside the previous mmad; of
    the first, those of the operand copied to L1 first go beside the other's
    copy), and what of the last chunk's store no next chunk hides
    (`last_store`: the store `cycles` counted in place of the first chunk's
    mmads, when shorter)."""

    cycles: float
    first_a: float
    first_b: float
    last_store: float
    cube: float  # one chunk's mmads (with the loads beside them)
    vector: float  # one chunk's epilogue after its mmads (L0C -> UB, its vector work, the residual's exposed load)
    residual: float  # one chunk's residual load (MTE2; 0 without a residual)
    store: float  # one chunk's store (MTE3)
    steps: int  # mmads per chunk and K part: C1 slices, or groups of slices (direct)


def _tile_cycles(target: ConvTarget, conv: ConvShape, chunks: int, chunk_m: int, tile_fractals: int,
                 part_taps: int, nparts: int, tiles: int, group: int, chunk_dmas: int) -> ConvTileWork:
    """Cycles of one tile once its band and weights are in L1, chunk by
    chunk: the MTE1 loads into L0A and L0B beside the previous mmad
    (L0A/L0B are double-buffered) -- per C1 slice and K part an im2col and
    the weights, or for a direct 1x1 conv (`group` > 0) per group of slices
    a fractal load per 16 pixels and one of the weights; then the epilogue:
    L0C -> UB and the vector ops, the residual's load and the store to GM.
    The result buffers are single: a chunk's mmads overlap the previous
    chunk's store, not its move out of L0C."""
    config, es = target.config, target.elem_bytes
    dtype = "f16" if target.fp16 else "f32"
    channels = tile_fractals * CUBE_CHANNELS
    if group:
        load_a = chunk_m // 16 * config.dma_cycles("l1_l0a", group * FRACTAL_BYTES)
        load_b = config.dma_cycles("l1_l0b", group * tile_fractals * FRACTAL_BYTES)
        cube = conv.in_slices // group * max(config.mmad_cycles(dtype, chunk_m, channels, group * target.c0),
                                             load_a + load_b)
    else:
        load_a = config.dma_cycles("l1_l0a", chunk_m * part_taps * BLOCK_BYTES)
        load_b = config.dma_cycles("l1_l0b", part_taps * tile_fractals * FRACTAL_BYTES)
        cube = conv.in_slices * nparts * max(config.mmad_cycles(dtype, chunk_m, channels, part_taps * target.c0),
                                             load_a + load_b)
    result = chunk_m * channels
    cores = target.cores_for(tiles)
    out_of_l0c = config.dma_cycles("l0c_ub", result * F32_BYTES)
    vector = out_of_l0c + EPILOGUE_VECTOR_OPS * config.vector_cycles("add", -(-result * es // 256))
    # each DMA past the first of the chunk's store (and of its residual's load, laid out alike) pays the
    # GM latency: an fp32 fractal is two 8-channel slices, a 32-byte burst per pixel (`store_dmas`)
    latency = (chunk_dmas - 1) * config.latency_cycles["dma_gm"]
    residual = config.dma_cycles("gm_ub", result * es, cores) + latency if conv.residual else 0
    vector += max(0.0, residual - cube - out_of_l0c)  # the residual's load (MTE2) goes beside the mmads, L0C -> UB
    store = config.dma_cycles("ub_gm", result * es, cores) + latency
    steps = conv.in_slices // group if group else conv.in_slices
    return ConvTileWork(chunks * (max(cube, store) + vector), load_a, load_b, min(cube, store), cube, vector, residual,
                        store, steps)


@functools.lru_cache(maxsize=4096)
def stage_chunk(in_slices: int, slice_bytes: int, ub_bytes: int) -> int:
    """C1 slices of a staged conv's band moved through UB per copy: the
    most that divide the slices and fit 1/STAGE_UB_SHARE of UB (one at
    least). A slice of a band a few rows tall is a few kilobytes or less,
    and each copy pays the GM latency (LRN's window sums: inception_v1
    208,734 -> 206,463 cycles with chunks)."""
    budget = ub_bytes // STAGE_UB_SHARE
    return max(k for k in range(1, in_slices + 1) if in_slices % k == 0 and (k == 1 or k * slice_bytes <= budget))


def direct_group(target: ConvTarget, in_slices: int, chunk_m: int, tile_fractals: int) -> int:
    """C1 slices per mmad of a direct 1x1 conv: the most that divide the
    slices and fit half of L0A (chunk_m pixels each) and of L0B."""
    cap = target.config.capacity_bytes
    most = min(cap["l0a"] // 2 // (chunk_m * BLOCK_BYTES), cap["l0b"] // 2 // (tile_fractals * FRACTAL_BYTES))
    return max(g for g in range(1, max(1, min(most, in_slices)) + 1) if in_slices % g == 0)


def direct_slice_pixels(band_rows: int, chunk_rows: int, chunk_m: int, per_row: int, out_w: int) -> int:
    """Pixels between a direct conv's C1 slices in L1: the band's, or as
    far as its last chunk's whole fractals read, in whole fractals. The
    last chunk's fractals may read past the band's pixels, whatever L1
    holds there, into rows of A whose results are never stored."""
    last_end = (band_rows - chunk_rows) * out_w + per_row * chunk_m  # the last chunk's (per_row > 1: chunk_rows 1)
    return -(-max(band_rows * out_w, last_end) // 16) * 16


def conv_panels(loads: float, cube: float, extra_dmas: dict[int, int], dma_latency: int) -> tuple[int, float]:
    """C1 panels for a tile's first chunk and the cycles they save: its
    operands' copies (`loads` cycles) go to L1 in P panels of whole steps
    (C1 slices, or a direct conv's groups of them), and the chunk's
    products (`cube`) on a panel start once that panel is in. Panel by
    panel, the products of all but the last go beside the later copies:
    (P - 1) / P of the shorter of the two; each panel after the first
    costs its DMAs' fixed cost (`extra_dmas[P]`: the DMAs P panels add,
    for each P that divides the steps, at most MAX_CONV_PANELS)."""
    best = (1, 0.0)
    for panels, extra in extra_dmas.items():
        saved = (panels - 1) / panels * min(loads, cube) - extra * dma_latency
        if saved > best[1]:
            best = (panels, saved)
    return best


class GridCost:
    """The busiest core's cycles of one tile candidate (its band, its
    weights block and a tile's work) on each core grid (`of`), and the C1
    panels of its tiles' first chunks; what does not depend on the grid is
    worked out once (a model's conv search costs ~10^5 grids)."""

    def __init__(self, target: ConvTarget, conv: ConvShape, band_bytes: int, weight_bytes: int, band_count: int,
                 band_dmas: int, tile: ConvTileWork, instrs_tile: int, panel_dmas: dict[int, int], padded: bool):
        config = target.config
        self.config, self.tile, self.padded = config, tile, padded
        self.band_bytes, self.weight_bytes, self.band_dmas = band_bytes, weight_bytes, band_dmas
        self.latency = config.latency_cycles["dma_gm"]
        issue = instrs_tile * ISSUE_CYCLES
        self.work_a = tile.cycles + tile.first_a + issue  # a tile's work, its first loads those of L0A
        self.work_b = tile.cycles + tile.first_b + issue
        self.staged = conv.staged
        if conv.staged:  # the band's slices pass GM -> UB -> vector -> L1 in chunks, the three pipes overlapping
            slice_bytes = band_count * conv.in_w * target.c0 * target.elem_bytes
            chunk = stage_chunk(conv.in_slices, slice_bytes, config.capacity_bytes["ub"])
            self.stage_bytes, self.stage_chunks = chunk * slice_bytes, conv.in_slices // chunk
            self.stage_local = max(chunk * conv.stage_ops * config.vector_cycles("mul", -(-slice_bytes // 256)),
                                   config.dma_cycles("ub_l1", chunk * slice_bytes))
        # the DMAs P panels add, per (band copied per tile, weights copied per tile)
        self.extra = {(band, weights): {p: (p * per_panel - band_dmas if band else 0) + (p - 1 if weights else 0)
                                        for p, per_panel in panel_dmas.items()}
                      for band in (False, True) for weights in (False, True)}

    def of(self, grid: CoreGrid) -> tuple[float, int]:
        """Cycles of the busiest core of `grid` and the C1 panels of its
        tiles' first chunks: its loads (the stationary operand once per
        outer step, the other per tile), its tiles' work (each tile's first
        L1 -> L0 loads of the operand copied last wait for its copy), and
        the last tile's last store, less what panels save (`conv_panels`):
        the operand copied per tile, and the stationary one too when it is
        copied right before (one tile per step of it), and less each next
        tile's copies beside this tile's last epilogue and store (`padded`:
        the band has rows of zeros, copied from UB on MTE3, so each tile's
        first products wait for the previous tile's last store)."""
        units, blocks, cores = grid.units_per_core, grid.blocks_per_core, grid.core_rows * grid.core_cols
        tiles = units * blocks
        if grid.weights_outer:
            band_loads, weight_loads = tiles, blocks
        else:
            band_loads, weight_loads = units, tiles
        config, latency, tile = self.config, self.latency, self.tile
        fixed, rate = config.dma_terms("gm_l1", cores)  # GM -> L1 copies: fixed + ceil(bytes / rate) cycles
        weights = fixed + math.ceil(weight_loads * self.weight_bytes / rate) + (weight_loads - 1) * latency
        if self.staged:
            per_chunk = max(config.dma_cycles("gm_ub", self.stage_bytes, cores), self.stage_local)
            mte2 = weights + band_loads * self.stage_chunks * per_chunk
        else:
            mte2 = weights + (fixed + math.ceil(band_loads * self.band_bytes / rate)) - latency
            mte2 += band_loads * self.band_dmas * latency
        # the band and weight buffers are single: a load waits for the cube
        # work on what it replaces, so loads and cube work add up; the
        # operand copied to L1 last: the band when only it streams, else the weights (copied after the band)
        work = self.work_a if grid.weights_outer and units > 1 else self.work_b
        cycles = mte2 + tiles * work + tile.last_store
        if self.staged:
            return cycles, 1
        # the copies beside a tile's products: per tile the streamed operand, and the stationary one when
        # each of its steps has one tile (then the two are copied together, panel by panel)
        if grid.weights_outer:
            band_per_tile, weights_per_tile = True, units == 1
        else:
            band_per_tile, weights_per_tile = blocks == 1, True
        loads = 0.0
        if band_per_tile:
            loads += fixed + math.ceil(self.band_bytes / rate) + (self.band_dmas - 1) * latency
        if weights_per_tile:
            loads += fixed + math.ceil(self.weight_bytes / rate)
        panels, saved = conv_panels(loads, tile.cube, self.extra[band_per_tile, weights_per_tile], latency)
        # the next tile's copies need only this tile's products done: they go beside its last epilogue and
        # its last store (which the next tile's first chunk counts), after its residual's load (on MTE2 too).
        # A padded band's zero rows come from UB on MTE3, so the next tile's first L1 -> L0 loads also wait
        # for this tile's last store, queued before them on MTE3: the copies start after the last L1 -> L0
        # load (beside the last step's products), and the next tile's first products go after that store,
        # not beside it (vgg19's first conv in 1-row bands: 1,906 cycles a tile, not 1,590)
        if self.padded:
            hidden = min(loads, tile.cube / tile.steps + tile.vector + tile.store)
            overlap = (tiles - 1) * (max(0.0, hidden - tile.residual) - min(tile.cube, tile.store))
        else:
            overlap = (tiles - 1) * max(0.0, min(tile.vector + tile.store, loads) - tile.residual)
        return cycles - tiles * saved - overlap, panels


def conv_target(conv: ConvOp, config: TargetConfig) -> ConvTarget:
    """The target of a tile.conv, its element size that of its output."""
    ref = conv.output.type
    assert isinstance(ref, RefType)
    return ConvTarget(config, elem_bytes(ref.element))


def stage_body_ops(block: Block) -> int:
    """Vector ops a stage's map body costs per element pass: its ops but constants (immediates) and the yield."""
    return sum(1 for op in block.ops if not isinstance(op, arith.ConstantOp | YieldOp))


def conv_shape(conv: ConvOp) -> ConvShape:
    """The shape a tile.conv's tiling depends on, reading its maps whole."""
    _, _, in_h, in_w = conv.views()[0].dims
    _, _, out_h, out_w = conv.output_view.dims
    kh, kw = conv.ints("kernel_size")
    stage_ops = stage_body_ops(conv.stage.block) if conv.stage.blocks else 0
    return ConvShape(conv.int_("in_slices"), conv.int_("out_fractals"), kh, kw, out_h, out_w, conv.int_("stride"),
                     conv.int_("dilation"), in_h, in_w, conv.ints("pads")[0], conv.int_("superblocks"),
                     conv.residual is not None, bool(conv.stage.blocks), stage_ops, len(conv.stage_inputs))


def decimated(shape: ConvShape, row_step: int, col_step: int) -> ConvShape:
    """`shape` with a band of every row_step-th row and col_step-th pixel of the stored map."""
    if (row_step, col_step) == (1, 1):
        return shape
    return dataclasses.replace(shape, in_h=shape.out_h if row_step > 1 else shape.in_h,
                               in_w=shape.out_w if col_step > 1 else shape.in_w, row_step=row_step, col_step=col_step,
                               stored_h=shape.in_h, stored_w=shape.in_w, stride=shape.stride // row_step)


def band_steps(shape: ConvShape, pads: tuple[int, ...]) -> list[tuple[int, int]]:
    """The (row, pixel) steps a conv's band may take: (1, 1) and, for a
    strided conv one row tall (pixel wide) and unpadded that way (`pads` in
    ONNX order), bands that hold only the rows (pixels) it reads: less to
    move, in more DMAs."""
    p, s = pads, shape.stride
    if s == 1 or shape.staged or not (shape.kh == 1 and p[0] == p[2] == 0 or shape.kw == 1 and p[1] == p[3] == 0):
        return [(1, 1)]
    row_step = s if shape.kh == 1 and p[0] == p[2] == 0 else 1
    col_step = s if shape.kw == 1 and p[1] == p[3] == 0 else 1
    return [(1, 1), *sorted({(row_step, 1), (1, col_step), (row_step, col_step)} - {(1, 1)})]


def conv_within(target: ConvTarget, shape: ConvShape, pads: tuple[int, ...], bound: float) -> bool:
    """Whether some tiling of a conv of `shape`, with any of its band steps,
    is predicted at most `bound` cycles (`conv_tiling_within`: cheap when not)."""
    return any(conv_tiling_within(target, decimated(shape, *steps), bound) for steps in band_steps(shape, pads))


def select_conv_tiling(conv: ConvOp, config: TargetConfig) -> ConvTilingAttr:
    """The cheapest tiling of a tile.conv (raises TilingError if none fits):
    `choose_conv_tiling` on its shape with each of its band steps; the cost
    model decides."""
    return conv_tiling_attr(conv_target(conv, config), conv_shape(conv), conv.ints("pads"))


def conv_tiling_attr(target: ConvTarget, shape: ConvShape, pads: tuple[int, ...]) -> ConvTilingAttr:
    """`select_conv_tiling` of a conv of `shape` with `pads` (ONNX order):
    what a conv's tiling would be before the conv is built (split-K's candidates)."""
    steps, tiling = (1, 1), choose_conv_tiling(target, shape)
    for candidate in band_steps(shape, pads)[1:]:
        cost = choose_conv_tiling(target, decimated(shape, *candidate))
        if cost.cycles < tiling.cycles:
            steps, tiling = candidate, cost
    grid = tiling.grid
    return ConvTilingAttr(tiling.band_rows, tiling.tile_fractals, tiling.chunk_rows, tiling.chunk_m,
                          tiling.chunks_per_row, tiling.row_parts[0][1], (grid.core_rows, grid.core_cols),
                          (grid.units_per_core, grid.blocks_per_core), "weights" if grid.weights_outer else "band",
                          steps, tiling.slices_per_mmad, tiling.panels, tiling.stage_slices, round(tiling.cycles))
