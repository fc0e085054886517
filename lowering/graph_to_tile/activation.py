"""Map bodies on a loop-level kernel's UB buffers (the conv and CNN-gemm
epilogues, the CNN map kernels' unary ops): a body (lowering/map_bodies.py,
legalized by tile-legalize-math's patterns) becomes vector ops through the
map-body emitter the structured kernels use, so an activation or a unary op
is defined once for every kernel that runs it."""

from __future__ import annotations

from xdsl.ir import Block, SSAValue

from gedialects.tile.transforms.legalize_math import legalize_body
from gedialects.tile.transforms.map_body import MapBodyEmitter
from gedialects.tile.transforms.ub_buffers import Buffer, BufferPool
from lowering.map_bodies import activation_block

from .builder import TileKernelBuilder


class BufferBody:
    """`apply(src, count, dst)`: dst[:count] = body(src[:count]) (in place
    when dst is src). Temporaries (a mask, a product) are UB buffers of the
    kernel, reused by every application."""

    def __init__(self, kernel: TileKernelBuilder, body: Block):
        self.kernel = kernel
        self.body = body
        legalize_body(body)
        pool = BufferPool(lambda element, n, buffers: kernel.alloc_at_entry("ub", element, n, buffers))
        # a buffer is one contiguous row; a constant a compare or select
        # needs as a vector is a column of one, broadcast through brcb
        self.emitter = MapBodyEmitter(kernel, pool, lambda box: ("column", 1) if box[-1] == 1 else ("row", box[-1]))

    def apply(self, src: SSAValue, count: int, dst: SSAValue | None = None) -> None:
        elem = self.kernel.elem
        buf = Buffer(src, (count,), elem, "row", count)
        if dst is None or dst is src:
            out = self.emitter.run(self.body, [buf], (count,), elem, {buf})
            if out is not buf:
                self.kernel.vec("adds", src, [out.ref], [count], [[1], [1]], 0.0)
                self.emitter.pool.release(out)
            return
        self.emitter.run(self.body, [buf], (count,), elem, into=Buffer(dst, (count,), elem, "row", count))


class EpilogueActivation:
    """`apply(ub, count)`: ub[:count] = activation(ub[:count]), in place (none: nothing)."""

    def __init__(self, kernel: TileKernelBuilder, kind: str, params, scale: float = 1.0):
        """`scale`: the output is stored divided by it (force_fp16)."""
        self.body = BufferBody(kernel, activation_block(kind, params, kernel.elem, scale)) if kind else None

    def apply(self, ub: SSAValue, count: int) -> None:
        if self.body is not None:
            self.body.apply(ub, count)
