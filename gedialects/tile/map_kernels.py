"""The CNN patterns' kernels that hold one op each before tiling (`tile.conv`,
`tile.pool`, `tile.gemm`, `tile.elementwise`, `tile.transdata`): what the tile passes need to
find them, their tilings and the GM tensors they write."""

from __future__ import annotations

from collections.abc import Iterator

from xdsl.ir import Operation, SSAValue
from xdsl.utils.exceptions import PassFailedException

from gedialects.tile.conv import ConvOp, ConvTilingAttr
from gedialects.tile.elementwise import ElementwiseOp, ElementwiseTilingAttr
from gedialects.tile.gemm import GemmOp, GemmTilingAttr
from gedialects.tile.ops import KernelOp
from gedialects.tile.pool import PoolOp, PoolTilingAttr
from gedialects.tile.transdata import TransdataOp, TransdataTilingAttr
from gedialects.tile.structured import TILING_ATTR  # a map kernel keeps its tiling under the same key
from gedialects.walk import outermost

MapKernelOp = ConvOp | PoolOp | GemmOp | ElementwiseOp | TransdataOp
MapKernelTiling = ConvTilingAttr | PoolTilingAttr | GemmTilingAttr | ElementwiseTilingAttr | TransdataTilingAttr
TILING_TYPES: dict[type, type] = {ConvOp: ConvTilingAttr, PoolOp: PoolTilingAttr, GemmOp: GemmTilingAttr,
                                  ElementwiseOp: ElementwiseTilingAttr, TransdataOp: TransdataTilingAttr}


def map_kernel_op(kernel: KernelOp) -> MapKernelOp | None:
    """The tile.conv, tile.pool, tile.gemm, tile.elementwise or tile.transdata `kernel` computes, if it is not expanded yet."""
    for op in kernel.body.block.ops:
        if isinstance(op, MapKernelOp):
            return op
    return None


def map_kernels(module: Operation) -> Iterator[tuple[KernelOp, MapKernelOp]]:
    """(kernel, its map kernel op) for every such kernel under `module` not yet expanded."""
    for kernel in outermost(module, KernelOp):
        if (op := map_kernel_op(kernel)) is not None:
            yield kernel, op


def written_by(op: MapKernelOp) -> list[SSAValue]:
    """The operands `op` writes (every other operand it reads)."""
    return list(op.outputs) if isinstance(op, ElementwiseOp) else [op.output]


def tiling_of(kernel: KernelOp, op: MapKernelOp) -> MapKernelTiling:
    """The kernel's tiling; none is a PassFailedException naming the pass to run first."""
    tiling = kernel.attributes.get(TILING_ATTR)
    kind = TILING_TYPES[type(op)]
    if not isinstance(tiling, kind):
        raise PassFailedException(f"tile.kernel {kernel.sym_name.data}: no #{kind.name} (run tile-select-tiling first)")
    return tiling
