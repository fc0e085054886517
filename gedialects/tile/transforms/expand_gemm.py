"""Expansion of a tiled `tile.gemm` (gedialects/tile/gemm.py) into its loops:
tile-expand-structured runs it on every gemm kernel with a
`#tile.gemm_tiling`.

Per tile (a block of output fractals; contiguous runs per core): K in steps
of `k_fractals` fractals -- A's and B's fractals GM -> L1 -> L0A/L0B, an mmad
accumulating in L0C, the step loop pipelined (L1 and L0 ping-pong) -- then
L0C -> UB (cast to the storage type), + bias, the epilogue, UB -> GM as M
rows."""

from __future__ import annotations

from xdsl.dialects.builtin import f32
from xdsl.ir import Block

from gedialects.npu.isa import BLOCK_BYTES, FRACTAL, FRACTAL_ELEMS
from gedialects.tile import ops as t
from gedialects.tile.builder import Index, TileKernelBuilder
from gedialects.tile.gemm import GemmOp, GemmTilingAttr
from gedialects.tile.transforms.buffer_body import BufferBody
from gedialects.tile.transforms.ub_buffers import elem_bytes


def expand_gemm(kernel_op: t.KernelOp, gemm: GemmOp, tiling: GemmTilingAttr) -> None:
    """Rewrite the body of `kernel_op` (which computes `gemm`) into its loops."""
    elem = gemm.output.type.element  # type: ignore[attr-defined]
    es = elem_bytes(elem)
    k0 = BLOCK_BYTES // es  # the K depth of a fractal, one 32-byte block
    M, N = gemm.int_("m"), gemm.int_("n")
    K1, N1 = gemm.int_("k_fractals"), gemm.int_("n_fractals")
    tile_fractals, k_fractals, block_dim = tiling.tile_fractals.data, tiling.k_fractals.data, tiling.cores.data
    tiles = N1 // tile_fractals
    tile_channels = tile_fractals * FRACTAL

    old = kernel_op.body.block  # the new body is built in a fresh block; the old one (the tile.gemm) goes after
    kernel_op.body.detach_block(old)
    kernel_op.body.add_block(Block())
    kernel = TileKernelBuilder(kernel_op, elem)

    l1a = kernel.alloc("l1", k_fractals * 16 * k0, "ZZ", buffers=2)
    l1b = kernel.alloc("l1", k_fractals * tile_channels * k0, "ZN", buffers=2)
    l0a = kernel.alloc("l0a", k_fractals * 16 * k0, "ZZ", buffers=2)
    l0b = kernel.alloc("l0b", k_fractals * tile_channels * k0, "ZN", buffers=2)
    l0c = kernel.alloc("l0c", tile_fractals * FRACTAL_ELEMS, "NZ", elem=f32)
    ub_out = kernel.alloc("ub", tile_fractals * FRACTAL_ELEMS, "NZ")
    ub_bias = kernel.alloc("ub", tile_channels, "ND") if gemm.bias is not None else None
    activation = BufferBody(kernel, gemm.epilogue.block) if gemm.epilogue.blocks else None
    a_gm, w_gm = kernel.gm(t.gm_tensor_of(gemm.a)), kernel.gm(t.gm_tensor_of(gemm.weights))
    out_gm = kernel.gm(t.gm_tensor_of(gemm.output))
    a_origin = gemm.int_("a_origin")

    def k_step(kk: Index, j: Index, first: bool) -> None:
        """K step kk of output block j: k_fractals fractals of A and of B -> L0, mmad into L0C."""
        kernel.copy(l1a, kernel.at(a_gm, a_origin, kernel.mul(kk, k_fractals * k0)), [k_fractals, k0], [16 * k0, 1],
                    [k0, 1])
        w_offset = kernel.add(kernel.mul(kk, k_fractals * N1 * FRACTAL * k0), kernel.mul(j, tile_channels * k0))
        kernel.copy(l1b, kernel.at(w_gm, 0, w_offset), [k_fractals, tile_channels * k0], [tile_channels * k0, 1],
                    [N1 * FRACTAL * k0, 1])
        kernel.emit(t.LoadFractalOp(l0a, l1a, k_fractals))
        kernel.emit(t.LoadFractalOp(l0b, l1b, k_fractals * tile_fractals))
        kernel.emit(t.MatmulOp(l0c, l0a, l0b, 16, tile_channels, k_fractals * k0, not first))

    with kernel.tiles(tiles, block_dim) as j:
        k_step(0, j, True)
        if K1 // k_fractals > 1:
            with kernel.loop(1, K1 // k_fractals, 1, pipeline=True, after_first=True) as kk:
                k_step(kk, j, False)
        kernel.copy(ub_out, l0c, [tile_fractals * FRACTAL_ELEMS], [1], [1], cast=es == 2)
        if ub_bias is not None:
            bias_gm = kernel.gm(t.gm_tensor_of(gemm.bias))
            kernel.copy(ub_bias, kernel.at(bias_gm, 0, kernel.mul(j, tile_channels)), [tile_channels], [1], [1])
            kernel.vec("add", ub_out, [ub_out, ub_bias], [tile_fractals, 16],
                       [[FRACTAL_ELEMS, 1], [FRACTAL_ELEMS, 1], [16, 1]])
        if activation is not None:
            activation.apply(ub_out, tile_fractals * FRACTAL_ELEMS)
        if M == 1:
            kernel.copy(kernel.at(out_gm, 0, kernel.mul(j, tile_channels)), ub_out, [tile_fractals, 16], [16, 1],
                        [FRACTAL_ELEMS, 1])
        else:
            kernel.copy(kernel.at(out_gm, 0, kernel.mul(j, tile_channels)), ub_out, [tile_fractals, M, 16], [16, N, 1],
                        [FRACTAL_ELEMS, 16, 1])
    old.erase(safe_erase=False)
