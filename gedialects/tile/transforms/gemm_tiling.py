"""Tiles of a CNN gemm kernel (`select_gemm_tiling`): blocks of output
fractals over the cores and the K step, the cheapest by GM traffic over the
cores plus a fixed cost per K step; L0A/L0B halves (double buffering) bound
the step."""

from __future__ import annotations

from gedialects.npu.isa import FRACTAL_BYTES
from gedialects.tile.gemm import GemmOp, GemmTilingAttr
from gedialects.tile.transforms.ub_buffers import TilingError
from target.config import TargetConfig

GEMM_STEP_CYCLES = 40
"""Cost model: fixed cycles of one K step (its loads and mmad issued and synchronised)."""


def select_gemm_tiling(gemm: GemmOp, config: TargetConfig) -> GemmTilingAttr:
    """(output fractals per tile, K fractals per step) of a tile.gemm (raises TilingError if none fits)."""
    K1, N1 = gemm.int_("k_fractals"), gemm.int_("n_fractals")
    cap = config.capacity_bytes
    best = None
    for tile_fractals in [x for x in range(1, N1 + 1) if N1 % x == 0]:
        k_fractals = min(K1, (cap["l0b"] // 2) // (tile_fractals * FRACTAL_BYTES), (cap["l0a"] // 2) // FRACTAL_BYTES)
        if k_fractals < 1:
            continue
        while K1 % k_fractals:
            k_fractals -= 1
        tiles = N1 // tile_fractals
        cores = max(1, min(tiles, config.cube_cores))
        steps = (tiles / cores) * (K1 // k_fractals)
        cost = config.dma_cycles("gm_l1", K1 * N1 * FRACTAL_BYTES // cores, cores) + steps * GEMM_STEP_CYCLES
        if best is None or cost < best[0]:
            best = (cost, tile_fractals, k_fractals, cores)
    if best is None:
        raise TilingError("no block of output fractals fits L0B")
    cost, tile_fractals, k_fractals, cores = best
    return GemmTilingAttr(tile_fractals, k_fractals, cores, round(cost))
