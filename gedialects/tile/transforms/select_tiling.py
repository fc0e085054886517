"""tile-select-tiling: choose the tile box of every structured kernel.

Candidates are row-major boxes of the iteration space: whole inner dims, a
divisor of one dim, 1 outside it (and, for kernels without a reduction,
divisors of the last dim); a matmul kernel's are [1.., mt, nt] in whole
16x16 fractals (any divisor of at least 16 along a dim that is not whole
fractals), its K split so the L0 operands fit. A candidate is feasible when the expansion
(tile-expand-structured) can build it and its buffers, loads counted twice
for double buffering, fit in UB: the footprint is measured on the expansion
itself, so a chosen tiling cannot overflow. Among feasible candidates the
cost model picks the fastest. The cost model is the simulator's: the target
config's `dma_cycles` (per DMA instruction, as gedialects/npu/dma.py plans
them from the tile's copies) and `vector_cycles` of the vector instructions one tile
needs (as gedialects/npu/vector_plan.py plans them; tile_cost.py),
tiles spread over the cores that share HBM, loads overlapped with compute
when a core runs more than one tile. The choice is recorded on the kernel as
`tiling = #tile.tiling<tile = [...], grid = [...], ub_bytes = N, cycles = C>`.

A matmul kernel's candidates are also priced with the weights stationary
(`stationary = "weights"`: a core per column block, its row tiles one after
another over that block of the weights, loaded once; up to
MAX_STATIONARY_ROW_TILES row tiles): the BERT-base FFN's first product
takes four row tiles of [32, 96] per core, its GELU overlapping the next
tile's loads.

A conv kernel (`tile.conv`) gets a `#tile.conv_tiling` instead: its band,
channel block, chunk, K parts, core grid and loop order, chosen by the
conv cost model on the same target formulas (conv_tiling.py); a pool
kernel (`tile.pool`) a `#tile.pool_tiling`: its band of output rows and
cores (pool_tiling.py); a CNN gemm (`tile.gemm`) a `#tile.gemm_tiling`:
output fractals per tile and the K step (gemm_tiling.py); a CNN elementwise
kernel (`tile.elementwise`) a `#tile.elementwise_tiling`: its band of rows
and cores (elementwise_tiling.py); a transdata (`tile.transdata`) a
`#tile.transdata_tiling`: its pixel runs, chunk and cores (transdata_tiling.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from gedialects.npu.isa import FRACTAL
from gedialects.tile import ops as t
from gedialects.tile import structured as st
from gedialects.tile.conv import ConvOp
from gedialects.tile.elementwise import ElementwiseOp
from gedialects.tile.gemm import GemmOp
from gedialects.tile.map_kernels import map_kernel_op
from gedialects.tile.pool import PoolOp
from gedialects.tile.transdata import TransdataOp
from gedialects.tile.transforms.conv_tiling import select_conv_tiling
from gedialects.tile.transforms.elementwise_tiling import select_elementwise_tiling
from gedialects.tile.transforms.expand_structured import TilingError, dry_run, elem_bytes
from gedialects.tile.transforms.gemm_tiling import select_gemm_tiling
from gedialects.tile.transforms.tile_cost import (
    TileWork,
    hoisted_cycles,
    hoisted_work,
    predicted_cycles,
    stationary_work,
    tile_work,
)
from gedialects.tile.transforms.pool_tiling import select_pool_tiling
from gedialects.tile.transforms.transdata_tiling import select_transdata_tiling
from gedialects.walk import outermost
from target.config import TargetConfig, load_target


def matmul_tiles(shape: Sequence[int]) -> list[tuple[int, ...]]:
    """Tiles of a matmul kernel: one matrix of the batch, whole 16x16
    fractals; along a dim that is not whole fractals (a vocabulary of 1,000)
    any divisor of at least a fractal, each tile padded to fractals on chip,
    so the dim still spreads over cores."""
    return [(1,) * (len(shape) - 2) + (r, c) for r in _matmul_sizes(shape[-2]) for c in _matmul_sizes(shape[-1])]


def _matmul_sizes(d: int) -> list[int]:
    if d % FRACTAL:
        return [k for k in range(FRACTAL, d + 1) if d % k == 0] or [d]
    return [k for k in range(FRACTAL, d + 1, FRACTAL) if d % k == 0]


def candidate_tiles(shape: Sequence[int], split_last: bool) -> list[tuple[int, ...]]:
    n = len(shape)
    out: list[tuple[int, ...]] = [tuple(shape)]
    for j in range(n - 1 if not split_last else n):
        for size in range(1, shape[j] + 1):
            if shape[j] % size == 0:
                cand = (1,) * j + (size,) + tuple(shape[j + 1 :])
                if cand not in out:
                    out.append(cand)
    return out


def choose_tiling(kernel: t.KernelOp, config: TargetConfig) -> st.TilingAttr:
    """The fastest feasible tiling of a structured kernel (raises TilingError if none)."""
    shape = st.iteration_shape(kernel)
    has_reduction = any(isinstance(op, st.ReductionOp) for op in kernel.body.block.ops)
    capacity = config.capacity_bytes["ub"]
    best: tuple[int, int, st.TilingAttr] | None = None
    reasons: list[tuple[int, str]] = []  # (tile elements, why it failed)
    has_matmul = any(isinstance(op, st.BatchMatmulOp) for op in kernel.body.block.ops)
    candidates = matmul_tiles(shape) if has_matmul else candidate_tiles(shape, split_last=not has_reduction)
    works: dict[tuple[int, ...], TileWork] = {}  # each feasible tile box's work, for the weights-stationary bound
    for tile in candidates:
        tiles = math.prod(d // k for d, k in zip(shape, tile))
        double = tiles > config.vector_cores  # some core runs more than one tile
        try:
            ub_bytes, body, _ = dry_run(kernel, tile, double, dict(config.capacity_bytes))
        except TilingError as e:
            reasons.append((math.prod(tile), str(e)))
            continue
        work, once = tile_work(body, config), hoisted_work(body, config)
        works[tuple(tile)] = work
        body.erase(safe_erase=False)
        if ub_bytes > capacity:
            reasons.append((math.prod(tile), f"tile {list(tile)} needs {ub_bytes} bytes of UB, the target has {capacity}"))
            continue
        cycles = predicted_cycles(work, tiles, config) + hoisted_cycles(once, tiles, config)
        key = (cycles, -math.prod(tile))
        if best is None or key < best[:2]:
            grid = [d // k for d, k in zip(shape, tile)]
            best = (cycles, -math.prod(tile), st.TilingAttr(tile, grid, ub_bytes, cycles))
    for tile in candidates if has_matmul else ():
        if tuple(tile) not in works:
            continue  # a box the row-major expansion cannot build is no better kept stationary
        weights = _weights_stationary(kernel, shape, tile, config, works[tuple(tile)], None if best is None else best[0])
        if weights is not None and (best is None or weights[:2] < best[:2]):
            best = weights
    if best is None:
        # the smallest tile's failure is the blocker (a larger one fails for more reasons)
        why = min(reasons, key=lambda r: r[0])[1] if reasons else "no candidate tile"
        raise TilingError(f"no tiling of {list(shape)} fits: {why}")
    return best[2]


MAX_STATIONARY_ROW_TILES = 8
"""The most row tiles a core runs over one block of stationary weights: the
tiles are unrolled, and past a few the weights' one load is a small share
of each tile's work anyway."""


def _weights_stationary(kernel: t.KernelOp, shape: Sequence[int], tile: Sequence[int], config: TargetConfig,
                        row_major: TileWork, to_beat: int | None) -> tuple[int, int, st.TilingAttr] | None:
    """(cycles, -tile elements, tiling) of a matmul tile box with the
    weights stationary -- a core per column block, its row tiles one after
    another, its block of the weights loaded once -- or None when the
    expansion cannot build it (gedialects/tile/transforms/expand_structured.py),
    it needs more cores or UB than the target has, or it cannot beat
    `to_beat` cycles. Priced as the others: the weights' copy once per core,
    then the row tiles double-buffered. Before expanding it: at best each
    core loads its weights block, then per row tile the longest of its rows
    of the left operand, its cube and its vector work (`row_major`: the
    same box's work in row-major order)."""
    grid = [d // k for d, k in zip(shape, tile)]
    rows, columns = grid[-2], grid[-1]
    if not 2 <= rows <= MAX_STATIONARY_ROW_TILES or columns > config.vector_cores:
        return None
    product = next(op for op in kernel.body.block.ops if isinstance(op, st.BatchMatmulOp))
    k = product.contraction()[2]
    es = elem_bytes(product.a.type.element_type)  # type: ignore[attr-defined]
    at_best = config.dma_cycles("gm_ub", k * tile[-1] * es, columns) + rows * max(
        config.dma_cycles("gm_ub", tile[-2] * k * es, columns), row_major.cube_cycles, row_major.vector_cycles)
    if to_beat is not None and at_best >= to_beat:
        return None
    try:
        ub_bytes, body, start = dry_run(kernel, tile, False, dict(config.capacity_bytes), st.WEIGHTS_STATIONARY)
    except TilingError:
        return None  # the row-major candidates' failures say why a tiling does not fit
    assert start is not None
    once, per_tile = stationary_work(body, start, rows, config)
    body.erase(safe_erase=False)
    if ub_bytes > config.capacity_bytes["ub"]:
        return None
    cycles = hoisted_cycles(once, columns, config) + predicted_cycles(per_tile, rows * columns, config, cores=columns)
    return cycles, -math.prod(tile), st.TilingAttr(tile, grid, ub_bytes, cycles, st.WEIGHTS_STATIONARY)


MAP_KERNEL_TILINGS = {ConvOp: select_conv_tiling, GemmOp: select_gemm_tiling, ElementwiseOp: select_elementwise_tiling,
                      PoolOp: select_pool_tiling, TransdataOp: select_transdata_tiling}
"""The tiling choice of each map-kernel op (gedialects/tile/map_kernels.py)."""


@dataclass(frozen=True)
class TileSelectTilingPass(ModulePass):
    """Choose each structured kernel's tile box (capacities + cost model of `target`)."""

    name = "tile-select-tiling"
    target: str = "davinci-910"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        config = load_target(self.target)
        for kernel in outermost(op, t.KernelOp):
            if st.TILING_ATTR in kernel.attributes:
                continue
            map_op = map_kernel_op(kernel)
            if map_op is None and not st.is_structured(kernel):
                continue
            try:
                kernel.attributes[st.TILING_ATTR] = (
                    choose_tiling(kernel, config) if map_op is None
                    else MAP_KERNEL_TILINGS[type(map_op)](map_op, config))
            except TilingError as e:
                source = kernel.attributes.get("source")
                where = f" ({source.data})" if isinstance(source, StringAttr) else ""
                raise PassFailedException(f"tile.kernel {kernel.sym_name.data}{where}: {e}") from None
