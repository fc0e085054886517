"""Fused activations in the epilogue of a loop-level kernel (conv, the CNN
gemm): the activation's map body (lowering/map_bodies.py, legalized by
tile-legalize-math's patterns) becomes vector ops over the kernel's output
buffer in UB, through the map-body emitter the structured kernels use, so an
activation is defined once for every kernel that fuses it."""

from __future__ import annotations

from xdsl.ir import SSAValue

from gedialects.tile.transforms.legalize_math import legalize_body
from gedialects.tile.transforms.map_body import MapBodyEmitter
from gedialects.tile.transforms.ub_buffers import Buffer, BufferPool
from lowering.map_bodies import activation_block

from .builder import TileKernelBuilder


class EpilogueActivation:
    """`apply(ub, count)`: ub[:count] = activation(ub[:count]), in place.
    Temporaries (a mask, a product) are UB buffers of the kernel, reused by
    every application."""

    def __init__(self, kernel: TileKernelBuilder, kind: str, params, scale: float = 1.0):
        """`scale`: the output is stored divided by it (force_fp16)."""
        self.kernel = kernel
        self.body = activation_block(kind, params, kernel.elem, scale) if kind else None
        if self.body is not None:
            legalize_body(self.body)
        pool = BufferPool(lambda element, n, buffers: kernel.alloc_at_entry("ub", element, n, buffers))
        # the output is one contiguous row; a constant a compare or select
        # needs as a vector is a column of one, broadcast through brcb
        self.emitter = MapBodyEmitter(kernel, pool, lambda box: ("column", 1) if box[-1] == 1 else ("row", box[-1]))

    def apply(self, ub: SSAValue, count: int) -> None:
        if self.body is None:
            return
        elem = self.kernel.elem
        buf = Buffer(ub, (count,), elem, "row", count)
        out = self.emitter.run(self.body, [buf], (count,), elem, {buf})
        if out is not buf:
            self.kernel.vec("adds", ub, [out.ref], [count], [[1], [1]], 0.0)
            self.emitter.pool.release(out)
