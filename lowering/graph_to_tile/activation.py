"""A graph op's fused activation as a map body on a loop-level kernel's UB
buffers (the CNN gemm's epilogue): lowering/map_bodies.py builds the body,
gedialects/tile/transforms/buffer_body.py runs it."""

from __future__ import annotations

from xdsl.ir import SSAValue

from gedialects.tile.builder import TileKernelBuilder
from gedialects.tile.transforms.buffer_body import BufferBody
from lowering.map_bodies import activation_block


class EpilogueActivation:
    """`apply(ub, count)`: ub[:count] = activation(ub[:count]), in place (none: nothing)."""

    def __init__(self, kernel: TileKernelBuilder, kind: str, params, scale: float = 1.0):
        """`scale`: the output is stored divided by it (force_fp16)."""
        self.body = BufferBody(kernel, activation_block(kind, params, kernel.elem, scale)) if kind else None

    def apply(self, ub: SSAValue, count: int) -> None:
        if self.body is not None:
            self.body.apply(ub, count)
