"""Bands of a pool kernel (`select_pool_tiling`): a tile is a band of output
rows of one C1 slice; among the bands that fit UB twice (the input band and
the output, and an average pool's counts, double-buffered), the one whose
busiest core is fastest by the target's formulas: per tile the band's load,
a vector op per window tap and the store, overlapping across tiles."""

from __future__ import annotations

from gedialects.npu.isa import BLOCK_BYTES
from gedialects.tile.pool import PoolOp, PoolTilingAttr
from gedialects.tile.transforms.ub_buffers import TilingError, elem_bytes
from target.config import TargetConfig


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
    return PoolTilingAttr(band_rows, cores_for(C1 * (OH // band_rows)), round(cycles(band_rows)))
