"""`TileKernelBuilder`: appends the body of one loop-level tile.kernel of the
CNN patterns (gedialects/tile/builder.py's TileBuilder, plus a default
element type; buffers are declared where they are first used).

Index arithmetic on Python ints folds at compile time; only values that
depend on a loop variable or the core index become arith ops. Index
constants are hoisted to the top of the kernel, one per value."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from xdsl.ir import Attribute, SSAValue

from gedialects.tile import ops as t
from gedialects.tile.builder import PIPELINE_ATTR, Index, TileBuilder

__all__ = ["PIPELINE_ATTR", "Index", "TileKernelBuilder"]


class TileKernelBuilder(TileBuilder):
    """Builds one tile.kernel; `elem` is the default element type of its buffers."""

    def __init__(self, kernel: t.KernelOp, elem: Attribute):
        super().__init__(kernel.body.block)
        self.op = kernel
        self.elem = elem
        self.entry = kernel.body.block

    @contextmanager
    def tiles(self, count: int, block_dim: int, pipeline: bool = False) -> Iterator[SSAValue]:
        """Loop over this core's share of `count` tiles."""
        with self.core_tiles(count, block_dim, -(-count // block_dim), pipeline) as tile:
            yield tile

    def alloc(self, space: str, n: int, layout: str = "ND", buffers: int = 1, elem=None) -> SSAValue:  # type: ignore[override]
        """An on-chip buffer of n elements (`buffers=2`: double-buffered), declared here."""
        return self.emit(t.AllocOp(space, elem or self.elem, [n], layout, buffers)).results[0]

    def gm(self, name: str, elem=None) -> SSAValue:  # type: ignore[override]
        """A reference to the GM tensor `name`."""
        return super().gm(name, elem or self.elem)

    def at(self, ref: SSAValue, offset: int = 0, dynamic: Index = 0) -> SSAValue:  # type: ignore[override]
        """ref advanced by `offset` + `dynamic` elements."""
        return super().at(ref, dynamic, offset)
