"""Tiles of a CNN gemm kernel (`select_gemm_tiling`): blocks of output
fractals over the cores and the K step, the cheapest by `gemm_cycles` (the
target's formulas on the expansion's copies, loads and mmads); L0A/L0B
halves (double buffering) bound the step."""

from __future__ import annotations

from gedialects.npu.isa import BLOCK_BYTES, FRACTAL, FRACTAL_BYTES
from gedialects.tile.gemm import GemmOp, GemmTilingAttr
from gedialects.tile.transforms.ub_buffers import TilingError, elem_bytes
from target.config import TargetConfig

def gemm_cycles(config: TargetConfig, es: int, m: int, k1: int, n1: int, tile_fractals: int,
                k_fractals: int, bias: bool) -> float:
    """The busiest core's cycles for tiles of `tile_fractals` output
    fractals in K steps of `k_fractals` (the target's formulas, the
    expansion's instructions): per tile, each step copies its block of A
    (one 32-byte block per fractal) and of B GM -> L1 on MTE2, beside the
    previous step's L1 -> L0 loads and mmad (L1 and L0 ping-pong), then the
    bias; the core's tiles one after another on MTE2, and after the last
    the tail: its last step's loads and mmad, L0C -> UB, the epilogue's
    vector work and the store."""
    tiles = n1 // tile_fractals
    cores = max(1, min(tiles, config.cube_cores))
    per_core = -(-tiles // cores)
    steps = k1 // k_fractals
    channels = tile_fractals * FRACTAL
    copies = (config.dma_cycles("gm_l1", k_fractals * BLOCK_BYTES, cores)
              + config.dma_cycles("gm_l1", k_fractals * tile_fractals * FRACTAL_BYTES, cores))
    loads = (config.dma_cycles("l1_l0a", k_fractals * FRACTAL_BYTES)
             + config.dma_cycles("l1_l0b", k_fractals * tile_fractals * FRACTAL_BYTES))
    product = max(loads, config.mmad_cycles("f16" if es == 2 else "f32", FRACTAL, channels,
                                            k_fractals * BLOCK_BYTES // es))
    bias_copy = config.dma_cycles("gm_ub", channels * es, cores) if bias else 0
    result = channels * FRACTAL
    tail = (loads + product + config.dma_cycles("l0c_ub", result * 4)
            + (config.vector_cycles("add", -(-result * es // 256)) if bias else 0)
            + config.dma_cycles("ub_gm", m * channels * es, cores))
    return per_core * max(steps * copies + bias_copy, steps * product) + tail


def select_gemm_tiling(gemm: GemmOp, config: TargetConfig) -> GemmTilingAttr:
    """(output fractals per tile, K fractals per step) of a tile.gemm (raises TilingError if none fits)."""
    K1, N1 = gemm.int_("k_fractals"), gemm.int_("n_fractals")
    es = elem_bytes(gemm.output.type.element)  # type: ignore[attr-defined]
    cap = config.capacity_bytes
    best = None
    for tile_fractals in [x for x in range(1, N1 + 1) if N1 % x == 0]:
        k_fractals = min(K1, (cap["l0b"] // 2) // (tile_fractals * FRACTAL_BYTES), (cap["l0a"] // 2) // FRACTAL_BYTES)
        if k_fractals < 1:
            continue
        while K1 % k_fractals:
            k_fractals -= 1
        cost = gemm_cycles(config, es, gemm.int_("m"), K1, N1, tile_fractals, k_fractals, gemm.bias is not None)
        if best is None or cost < best[0]:
            best = (cost, tile_fractals, k_fractals, max(1, min(N1 // tile_fractals, config.cube_cores)))
    if best is None:
        raise TilingError("no block of output fractals fits L0B")
    cost, tile_fractals, k_fractals, cores = best
    return GemmTilingAttr(tile_fractals, k_fractals, cores, round(cost))
