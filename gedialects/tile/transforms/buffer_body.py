"""`BufferBody`: a map body run on a loop-level kernel's UB buffers (a conv's
epilogue or staged input, a gemm's epilogue). The body
(legalized by tile-legalize-math's patterns) becomes vector ops through the
map-body emitter the structured kernels use, so an activation or a unary op
is defined once for every kernel that runs it."""

from __future__ import annotations

from xdsl.ir import Block, SSAValue

from gedialects.npu.isa import BLOCK_BYTES
from gedialects.tile.builder import TileKernelBuilder
from gedialects.tile.transforms.legalize_math import legalize_body
from gedialects.tile.transforms.map_body import MapBodyEmitter
from gedialects.tile.transforms.ub_buffers import Buffer, BufferPool, elem_bytes


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

    def apply(self, src: SSAValue, count: int, dst: SSAValue | None = None, channels: list[SSAValue] = (),
              slices: int = 1) -> None:
        """`channels`: the body's further arguments, per-channel vectors:
        the `count` elements are `slices` C1 slices of pixels of C0
        channels, each vector's C0 values per slice broadcast over that
        slice's pixels (one vector op per step over all the slices)."""
        elem = self.kernel.elem
        if channels:
            c0 = BLOCK_BYTES // elem_bytes(elem)
            box: tuple[int, ...] = (slices, count // slices // c0, c0)
            buf = Buffer(src, box, elem, "row", c0)
            args = [buf] + [Buffer(v, (slices, 1, c0), elem, "row", c0) for v in channels]
        else:
            box = (count,)
            buf = Buffer(src, box, elem, "row", count)
            args = [buf]
        if dst is None or dst is src:
            out = self.emitter.run(self.body, args, box, elem, {buf})
            if out is not buf:
                self.kernel.vec("adds", src, [out.ref], [count], [[1], [1]], 0.0)
                self.emitter.pool.release(out)
            return
        self.emitter.run(self.body, args, box, elem, into=Buffer(dst, box, elem, "row", buf.pitch))
