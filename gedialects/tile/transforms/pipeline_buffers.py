"""tile-pipeline-buffers: double-buffer the loads of structured kernels.

When a core runs more than one tile, each load that moves with the tile gets
`buffers = 2`: tile-expand-structured allocates it twice and marks the tile
loop `tile.pipeline`, so convert-tile-to-npu alternates the copies and the
load of tile i+1 overlaps the compute of tile i. A kernel whose doubled
buffers would not fit in UB keeps single buffers (the footprint is measured
on the expansion, as tile-select-tiling does). tile-expand-structured then
doubles the stored map and product results of such a loop as well (the
next tile's epilogue must not wait for this tile's store). A
weights-stationary matmul kernel's tiles are unrolled, not a loop: its
loads stay single."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from gedialects.tile import structured as st
from gedialects.tile.transforms.expand_structured import KernelExpansion, TilingError, dry_run
from target.config import load_target


@dataclass(frozen=True)
class TilePipelineBuffersPass(ModulePass):
    """Mark the loads of multi-tile cores double-buffered where UB allows."""

    name = "tile-pipeline-buffers"
    target: str = "davinci-910"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        config = load_target(self.target)
        for kernel, tiling in st.tiled_kernels(op):
            dist = kernel.attributes.get(st.DISTRIBUTION_ATTR)
            per_core = dist.per_core.data if isinstance(dist, st.DistributionAttr) else tiling.tiles
            if per_core < 2 or tiling.weights_stationary:  # the latter's tiles are unrolled, not a loop
                continue
            try:
                ub_bytes, body, _ = dry_run(kernel, tiling.tile_shape, True, dict(config.capacity_bytes))
            except TilingError as e:
                raise PassFailedException(f"tile.kernel {kernel.sym_name.data}: {e}") from None
            body.erase(safe_erase=False)
            if ub_bytes > config.capacity_bytes["ub"]:
                continue
            probe = KernelExpansion(kernel, tiling.tile_shape, 1, tiling.tiles)
            for load in kernel.body.block.ops:
                if isinstance(load, st.LoadOp) and probe.varies(load.result):
                    load.properties["buffers"] = IntegerAttr(2, i64)
