"""`BufferBody`: a map body run on a loop-level kernel's UB buffers (a conv's
epilogue or staged input, a gemm's epilogue). The body
(legalized by tile-legalize-math's patterns) becomes vector ops through the
map-body emitter the structured kernels use, so an activation or a unary op
is defined once for every kernel that runs it."""

from __future__ import annotations

from xdsl.ir import Block, SSAValue

from gedialects.tile.builder import TileKernelBuilder
from gedialects.tile.transforms.legalize_math import legalize_body
from gedialects.tile.transforms.map_body import MapBodyEmitter
from gedialects.tile.transforms.ub_buffers import Buffer, BufferPool


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
