"""Bands of a pool kernel (`select_pool_tiling`): a tile is a band of output
rows of one C1 slice; among the bands that fit UB twice (the input band and
the output, and an average pool's counts, double-buffered), the one whose
busiest core is fastest by the target's formulas: per tile the band's load,
a vector op per window tap and the store, overlapping across tiles.

A global average pool's tile is whole maps of as many C1 slices as fit UB
twice (fewer tiles, fewer DMAs); its pixels are folded by vector adds whose
repeat count is 8 bits, so a map takes at most MAX_REDUCE_PIXELS (the
legality table sends larger ones to the AI CPU)."""

from __future__ import annotations

from gedialects.npu.isa import BLOCK_BYTES, BLOCKS_PER_REPEAT, MAX_REPEAT
from gedialects.tile.pool import PoolOp, PoolTilingAttr
from gedialects.tile.transforms.ub_buffers import TilingError, elem_bytes
from target.config import TargetConfig

MAX_REDUCE_PIXELS = MAX_REPEAT * BLOCKS_PER_REPEAT
"""Pixels of a global pool's C1 slice (one 32-byte block each): at most 255
repeats of 8 blocks (the vector repeat count is 8 bits)."""


def select_pool_tiling(pool: PoolOp, config: TargetConfig) -> PoolTilingAttr:
    """The cheapest band of a tile.pool that fits UB (raises TilingError if none)."""
    es = elem_bytes(pool.input.type.element)  # type: ignore[attr-defined]
    c0 = BLOCK_BYTES // es
    kh, kw = pool.ints("kernel_size")
    s = pool.ints("strides")
    p = pool.ints("pads")
    _, C, _, W = pool.input_view.dims
    OH, OW = pool.output_view.dims[2:]
    C1 = -(-C // c0)
    padded_in_w = W + p[1] + p[3]
    ub_bytes = config.capacity_bytes["ub"]

    def cores_for(tiles: int) -> int:
        return max(1, min(tiles, config.cube_cores))

    if pool.kind.data == "global_avg":
        return _global_tiling(C1, pool.input_view.dims[2] * W, c0, es, config, cores_for)

    def cycles(band_rows: int) -> float:
        """The busiest core's cycles: per tile the band's load, a vector op
        per tap and the store, the three overlapping across tiles (UB is
        double-buffered)."""
        tiles = C1 * (OH // band_rows)
        cores = cores_for(tiles)
        load = config.dma_cycles("gm_ub", ((band_rows - 1) * s[0] + kh) * W * c0 * es, cores)
        vector = kh * kw * config.vector_cycles("max", -(-band_rows * OW * c0 * es // 256))
        store = config.dma_cycles("ub_gm", band_rows * OW * c0 * es, cores)
        steady = max(load, vector, store)
        return -(-tiles // cores) * steady + load + vector + store - steady

    def fits(band_rows: int) -> bool:
        in_rows = (band_rows - 1) * s[0] + kh
        outputs = 2 if pool.counts is not None else 1  # the result, and an average pool's counts
        return 2 * (in_rows * padded_in_w + outputs * band_rows * OW) * c0 * es <= ub_bytes

    candidates = [r for r in range(OH, 0, -1) if OH % r == 0 and fits(r)]
    if not candidates:
        raise TilingError("a pooling row does not fit UB")
    band_rows = min(candidates, key=cycles)
    return PoolTilingAttr(band_rows, 1, cores_for(C1 * (OH // band_rows)), round(cycles(band_rows)))


def _global_tiling(C1: int, hw: int, c0: int, es: int, config: TargetConfig, cores_for) -> PoolTilingAttr:
    """The most C1 slices per tile that divide C1 and fit UB twice; the
    prediction: per tile the load, the halving adds, the scaling and the
    store, one after another."""
    if hw > MAX_REDUCE_PIXELS:
        raise TilingError(f"a global pool over {hw} pixels (at most {MAX_REDUCE_PIXELS} fold in vector repeats)")
    fitting = [n for n in range(1, C1 + 1) if C1 % n == 0 and 2 * n * hw * c0 * es <= config.capacity_bytes["ub"]]
    if not fitting:
        raise TilingError(f"one C1 slice of a global pool over {hw} pixels does not fit UB twice")
    slices = max(fitting)
    tiles = C1 // slices
    cores = cores_for(tiles)
    load = config.dma_cycles("gm_ub", slices * hw * c0 * es, cores)
    adds, n = 0.0, hw
    while n > 1:
        half = n // 2
        adds += config.vector_cycles("add", -(-slices * half * c0 * es // 256))
        n -= half
    scale = config.vector_cycles("muls", -(-slices * c0 * es // 256))
    store = config.dma_cycles("ub_gm", slices * c0 * es, cores)
    return PoolTilingAttr(1, slices, cores, round(-(-tiles // cores) * (load + adds + scale + store)))
