"""tile-distribute: spread a tiled structured kernel's tiles over the AI cores.

Core b runs a contiguous run of `per_core` tiles; the core count is the
smallest that keeps `per_core` (so no core idles at the end), at most the
target's vector cores; a weights-stationary matmul tiling's a core per
column block of the output, running its row tiles. Recorded as
`distribution = #tile.distribution<...>`
and the kernel's block_dim. A conv kernel's cores are its
`#tile.conv_tiling`'s grid (the conv cost model chose the grid with the
tiles), a pool kernel's the cores of its `#tile.pool_tiling`: they become
its block_dim."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64
from xdsl.passes import ModulePass

from gedialects.tile import structured as st
from gedialects.tile.map_kernels import map_kernels, tiling_of
from target.config import load_target


def distribute(tiles: int, max_cores: int) -> st.DistributionAttr:
    per_core = -(-tiles // max(1, min(tiles, max_cores)))
    return st.DistributionAttr(-(-tiles // per_core), per_core)


@dataclass(frozen=True)
class TileDistributePass(ModulePass):
    """Assign each tiled structured kernel's tiles to cores (block_dim)."""

    name = "tile-distribute"
    target: str = "davinci-910"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        config = load_target(self.target)
        for kernel, tiling in st.tiled_kernels(op):
            if tiling.weights_stationary:  # a core per column block, running its row tiles
                rows = tiling.grid_shape[-2]
                dist = st.DistributionAttr(tiling.tiles // rows, rows)
            else:
                dist = distribute(tiling.tiles, config.vector_cores)
            kernel.attributes[st.DISTRIBUTION_ATTR] = dist
            kernel.properties["block_dim"] = IntegerAttr(dist.cores.data, i64)
        for kernel, map_op in map_kernels(op):
            kernel.properties["block_dim"] = IntegerAttr(tiling_of(kernel, map_op).block_dim, i64)
