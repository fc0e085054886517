"""Expansion of a tiled `tile.transdata` (gedialects/tile/transdata.py) into
its loop on the cube: tile-expand-structured runs it on every transdata
kernel with a `#tile.transdata_tiling`. The 0/1 matrices it multiplies by
become GM constants of the program (program_constants.py, one per value).

* NCHW to NC1HWC0 (`build_to_map`): a kc x kc identity in L0A, loaded
  once; per piece (a chunk of kc pixels of a row x 16 channels) the
  channels' pixel runs GM -> UB in one DMA, UB -> L1 into ZN fractals, the
  product, its rows UB -> the map's C0 slices.
* space-to-depth (`build_space_to_depth`): per cell row and chunk of mc
  cells, the chunk's s input rows GM -> UB (a burst per channel; whole rows
  in one DMA), then per 16 output channels and dx the B operand filled on
  chip from those rows and, per 16 cells, C += A_dx x B; the s picking
  matrices [16, s*16] stay in L0A.
* NHWC rows to or from NC1HWC0 (`build_rows`): per chunk of pixels (one
  run of the map's rows, or of the whole map when it has no side halo), the
  chunk's run of every C1 slice and its rows through one UB buffer of
  [pixel][C1 x C0], each side one DMA (the map side a burst per slice); the
  loop pipelined (UB double-buffered).
* NC1HWC0 to ND (`build_from_map`): the 16 x 16 identity in L0A; per piece
  (a chunk of kn pixels x 16 channels) the C0 slices' pixel runs GM -> L1
  (whole 16-pixel fractals: B's ZN layout), the product, its NZ rows (NCHW
  channel rows) UB -> GM; the loop pipelined (L1, L0B and UB double-buffered).

The copies of a piece (`*_boxes`) are what the tiling's cost model prices."""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import f32
from xdsl.ir import Block

from gedialects.graph.tensors import numpy_dtype
from gedialects.npu.isa import BLOCK_BYTES, FRACTAL_BYTES, FRACTAL_ELEMS
from gedialects.tile import ops as t
from gedialects.tile.builder import Index, TileKernelBuilder
from gedialects.tile.pieces import channel_runs, chunk_runs, for_pieces, row_chunks, row_runs
from gedialects.tile.program_constants import add_constant
from gedialects.tile.transdata import TransdataOp, TransdataTilingAttr
from gedialects.tile.transforms.ub_buffers import elem_bytes

Box = tuple[list[int], list[int], list[int]]
"""A box copy: shape, destination and source element strides."""


def expand_transdata(kernel_op: t.KernelOp, op: TransdataOp, tiling: TransdataTilingAttr) -> None:
    """Rewrite the body of `kernel_op` (which computes `op`) into its loop."""
    old = kernel_op.body.block  # the new body is built in a fresh block; the old one (the op) goes after
    kernel_op.body.detach_block(old)
    kernel_op.body.add_block(Block())
    build = (build_rows if op.rows else build_space_to_depth if op.cell > 1 else build_to_map if op.to_map
             else build_from_map)
    build(kernel_op, op, tiling)
    old.erase(safe_erase=False)


def _program(kernel_op: t.KernelOp) -> t.ProgramOp:
    prog = kernel_op.parent_op()
    assert isinstance(prog, t.ProgramOp), "a tile.kernel lives in a tile.program"
    return prog


def _elements(op: TransdataOp):
    """(input element, output element) types."""
    return op.input.type.element, op.output.type.element  # type: ignore[attr-defined]


def to_map_boxes(op: TransdataOp, npx: int, cn: int, kc: int) -> tuple[Box, Box, Box]:
    """A piece's copies NCHW -> NC1HWC0: its channels' runs GM -> UB (one
    DMA), UB -> L1 into ZN fractals (on chip: short latency), the product's
    rows UB -> the map's C0 slices in GM."""
    _, _, h, w = op.nchw_shape()
    in_elem, out_elem = _elements(op)
    k0, c0 = BLOCK_BYTES // elem_bytes(in_elem), BLOCK_BYTES // elem_bytes(out_elem)
    return (([cn, npx], [kc, 1], [h * w, 1]), ([cn, -(-npx // k0), k0], [k0, 16 * k0, 1], [kc, k0, 1]),
            ([-(-cn // c0), npx, c0], [op.map_view.slice_stride.data, c0, 1], [c0, 16, 1]))


def build_to_map(kernel_op: t.KernelOp, op: TransdataOp, tiling: TransdataTilingAttr) -> None:
    """NCHW -> NC1HWC0: C = I x B, B = 16 channels x kc pixels of one row
    gathered as ZN fractals (channel-major, k0 pixels a block)."""
    elem, map_elem = _elements(op)
    es = elem_bytes(elem)
    k0, c0 = BLOCK_BYTES // es, BLOCK_BYTES // elem_bytes(map_elem)
    _, c, h, w = op.nchw_shape()
    plane = h * w
    view = op.map_view
    rows, width, kc = tiling.value("rows"), tiling.value("width"), tiling.value("chunk")
    block_dim = tiling.block_dim
    kernel = TileKernelBuilder(kernel_op, map_elem)
    identity = np.eye(kc, dtype=numpy_dtype(elem)).reshape(kc // 16, 16, kc // k0, k0).transpose(0, 2, 1, 3)  # ZZ
    ident = add_constant(_program(kernel_op), "identity", identity)
    l1a = kernel.alloc("l1", kc * kc, "ZZ", elem=elem)
    l0a = kernel.alloc("l0a", kc * kc, "ZZ", elem=elem)
    l1b = kernel.alloc("l1", kc * 16, "ZN", elem=elem)
    l0b = kernel.alloc("l0b", kc * 16, "ZN", elem=elem)
    l0c = kernel.alloc("l0c", kc * 16, "NZ", elem=f32)
    ub = kernel.alloc("ub", kc * 16, "NZ")
    staged = kernel.alloc("ub", kc * 16, "ND", elem=elem)
    zero = kernel.alloc("ub", kc * 16, "ND", elem=elem)
    kernel.copy(l1a, kernel.gm(ident, elem), [kc * kc], [1], [1])
    kernel.emit(t.LoadFractalOp(l0a, l1a, kc * kc * es // FRACTAL_BYTES))
    kernel.emit(t.DupOp(zero, kc * 16, 0.0))
    kernel.copy(l1b, zero, [kc * 16], [1], [1])
    x = kernel.gm(t.gm_tensor_of(op.input), elem)  # type: ignore[arg-type]
    out = kernel.gm(t.gm_tensor_of(op.output))  # type: ignore[arg-type]

    def piece(at: tuple[Index, Index], npx: int, block: Index, cn: int) -> None:
        row, col = at
        p0 = kernel.add(kernel.mul(row, width), col)
        pix = kernel.add(kernel.mul(row, view.padded_w.data), col)
        stage, scatter, store = to_map_boxes(op, npx, cn, kc)
        if cn < 16 and c > 16:  # stale channels of a previous block
            kernel.copy(l1b, zero, [kc * 16], [1], [1])
        # (a run that is not whole blocks is a padded DMA: the rest of its last block in UB is zero)
        kernel.copy(staged, kernel.at(x, op.element_offset, kernel.add(kernel.mul(block, 16 * plane), p0)), *stage)
        kernel.copy(l1b, staged, *scatter)
        kernel.emit(t.LoadFractalOp(l0b, l1b, kc * 16 * es // FRACTAL_BYTES))
        kernel.emit(t.MatmulOp(l0c, l0a, l0b, kc, 16, kc, False))
        kernel.copy(ub, l0c, [kc * 16], [1], [1], cast=map_elem != f32)
        slices = kernel.mul(block, 16 // c0 * view.slice_stride.data)
        kernel.copy(kernel.at(out, view.origin.data, kernel.add(slices, kernel.mul(pix, c0))), ub, *store)

    for_pieces(kernel, block_dim, row_runs(rows, width, kc), channel_runs(c), piece)


SPACE_TO_DEPTH_CELLS = 16
"""Cells per space-to-depth product: the rows of its picking matrices (one
fractal of M). A chunk of mc cells is mc / 16 products against the same
matrices, so the matrices (and L0A) do not grow with the chunk: a chunk may
be a whole row of cells, its input rows one DMA."""


def space_to_depth_picks(op: TransdataOp) -> list[np.ndarray]:
    """The s picking matrices A_dx [16, s*16] (A_dx picks pixel s*j + dx for
    cell j), packed as ZZ fractals in the input's element type."""
    s, mc = op.cell, SPACE_TO_DEPTH_CELLS
    elem = _elements(op)[0]
    k0, kp = BLOCK_BYTES // elem_bytes(elem), s * mc
    picks = []
    for dx in range(s):
        pick = np.zeros((mc, kp), dtype=numpy_dtype(elem))
        pick[np.arange(mc), s * np.arange(mc) + dx] = 1
        picks.append(pick.reshape(mc // 16, 16, kp // k0, k0).transpose(0, 2, 1, 3))
    return picks


def space_to_depth_geometry(op: TransdataOp, mc: int) -> tuple[int, int, int]:
    """(products per chunk of mc cells, UB pixels per input row of a chunk,
    B rows): a chunk's rows hold its pixels rounded up to whole blocks; B
    holds every product's s*16 pixels."""
    s = op.cell
    k0 = BLOCK_BYTES // elem_bytes(_elements(op)[0])
    products = -(-mc // SPACE_TO_DEPTH_CELLS)
    return products, -(-s * mc // k0) * k0, products * s * SPACE_TO_DEPTH_CELLS


def space_to_depth_loads(op: TransdataOp, cells: int, pitch: int) -> list[Box]:
    """A chunk's copies of its s input rows GM -> UB, [channel][dy][pixel] in
    UB rows `pitch` apart: one copy (a burst per channel) when the chunk is
    whole rows that lie as UB holds them, else one per row dy."""
    s = op.cell
    _, c, h, w = op.nchw_shape()
    k0 = BLOCK_BYTES // elem_bytes(_elements(op)[0])
    pixels = -(-cells * s // k0) * k0
    if pixels == w == pitch:
        return [([c, s * w], [s * pitch, 1], [h * w, 1])]
    return [([c, pixels], [s * pitch, 1], [h * w, 1]) for _ in range(s)]


def space_to_depth_fill(op: TransdataOp, channels: int, step: int, pixels: int, pitch: int) -> Box:
    """A B operand's fill from a chunk's rows in UB: `channels` input
    channels (`step` B rows apart), `pixels` pixels each, in ZN fractals of
    k0 pixels."""
    k0 = BLOCK_BYTES // elem_bytes(_elements(op)[0])
    return [channels, pixels // k0, k0], [step * k0, 16 * k0, 1], [op.cell * pitch, k0, 1]


def build_space_to_depth(kernel_op: t.KernelOp, op: TransdataOp, tiling: TransdataTilingAttr) -> None:
    """NCHW -> the space-to-depth map in NC1HWC0: per cell row, chunk of mc
    cells and block of 16 output channels, for each dx and 16 cells j:
    C[16 cells, 16 channels] += A_dx x B_dx[rows of cells j], B_dx holding
    the s*mc pixels of the cell row's s input rows, channel c of row dy in
    the row of its output channel when that is in the block (the other rows
    stay zero). Summing over dx fills every cell's channels; the pad
    channels come out zero."""
    elem, map_elem = _elements(op)
    es = elem_bytes(elem)
    k0, c0 = BLOCK_BYTES // es, BLOCK_BYTES // elem_bytes(map_elem)
    s = op.cell
    _, c, h, w = op.nchw_shape()
    view = op.map_view
    blocks = -(-view.dims[1] // 16)  # of output channels
    rows, cols, mc = tiling.value("rows"), tiling.value("width"), tiling.value("chunk")
    products, pitch, kb = space_to_depth_geometry(op, mc)
    kp = s * SPACE_TO_DEPTH_CELLS  # a product's pixels (its K)
    prog = _program(kernel_op)
    kernel = TileKernelBuilder(kernel_op, map_elem)
    zero = kernel.alloc("ub", kb * 16, "ND", elem=elem)
    kernel.emit(t.DupOp(zero, kb * 16, 0.0))
    l0a, l1b = [], {}
    for dx, pick in enumerate(space_to_depth_picks(op)):
        name = add_constant(prog, f"space_to_depth_pick{dx}", pick)
        l1a = kernel.alloc("l1", SPACE_TO_DEPTH_CELLS * kp, "ZZ", elem=elem)
        l0a.append(kernel.alloc("l0a", SPACE_TO_DEPTH_CELLS * kp, "ZZ", elem=elem))
        kernel.copy(l1a, kernel.gm(name, elem), [SPACE_TO_DEPTH_CELLS * kp], [1], [1])
        kernel.emit(t.LoadFractalOp(l0a[dx], l1a, SPACE_TO_DEPTH_CELLS * kp * es // FRACTAL_BYTES))
        for block in range(blocks):
            l1b[dx, block] = kernel.alloc("l1", kb * 16, "ZN", elem=elem)
            kernel.copy(l1b[dx, block], zero, [kb * 16], [1], [1])  # rows no input row fills stay zero
    l0b = kernel.alloc("l0b", kb * 16, "ZN", elem=elem)
    l0c = kernel.alloc("l0c", products * SPACE_TO_DEPTH_CELLS * 16, "NZ", elem=f32)
    ub = kernel.alloc("ub", products * SPACE_TO_DEPTH_CELLS * 16, "NZ")
    rows_ub = kernel.alloc("ub", c * s * pitch, "ND", elem=elem)  # the chunk's s input rows, [channel][dy][pixel]
    x = kernel.gm(t.gm_tensor_of(op.input), elem)  # type: ignore[arg-type]
    out = kernel.gm(t.gm_tensor_of(op.output))  # type: ignore[arg-type]

    def chunk(row: Index, col: Index, cells: int) -> None:
        cell = kernel.add(kernel.mul(row, view.padded_w.data), col)
        pixels = -(-cells * s // k0) * k0
        # the chunk's pixels of its input rows, every channel (a burst each); the B operands are
        # filled from UB on chip (a DMA's fixed cost there is a tenth of GM's)
        first_row = kernel.mul(kernel.mul(row, s), w)
        for dy, (shape, dst, src) in enumerate(space_to_depth_loads(op, cells, pitch)):
            first = kernel.add(kernel.add(first_row, dy * w), kernel.mul(col, s))
            kernel.copy(kernel.at(rows_ub, dy * pitch), kernel.at(x, op.element_offset, first), shape, dst, src)
        for block in range(blocks):
            for dx in range(s):
                for dy in range(s):
                    # input channels whose output channel is in this block: a run of one step
                    ins = [i for i in range(c) if op.out_channel(dy, dx, i, c) // 16 == block]
                    if not ins:
                        continue
                    first_b = op.out_channel(dy, dx, ins[0], c) - block * 16
                    step = op.out_channel(dy, dx, 1, c) - op.out_channel(dy, dx, 0, c)  # B rows apart
                    kernel.copy(kernel.at(l1b[dx, block], first_b * k0), kernel.at(rows_ub, (ins[0] * s + dy) * pitch),
                                *space_to_depth_fill(op, len(ins), step, pixels, pitch))
                kernel.emit(t.LoadFractalOp(l0b, l1b[dx, block], kb * 16 * es // FRACTAL_BYTES))
                for j in range(-(-cells // SPACE_TO_DEPTH_CELLS)):  # 16 cells: C's fractal j, B's rows s*16*j on
                    kernel.emit(t.MatmulOp(kernel.at(l0c, j * SPACE_TO_DEPTH_CELLS * 16), l0a[dx],
                                           kernel.at(l0b, j * kp * 16), SPACE_TO_DEPTH_CELLS, 16, kp, dx > 0))
            kernel.copy(ub, l0c, [-(-cells // SPACE_TO_DEPTH_CELLS) * SPACE_TO_DEPTH_CELLS * 16], [1], [1],
                        cast=map_elem != f32)
            base = kernel.at(out, view.origin.data + block * 16 // c0 * view.slice_stride.data, kernel.mul(cell, c0))
            kernel.copy(base, ub, [16 // c0, cells, c0], [view.slice_stride.data, c0, 1], [c0, 16, 1])

    row_chunks(kernel, rows, cols, mc, tiling.block_dim, chunk)


def from_map_boxes(op: TransdataOp, n: int, rows: int) -> list[tuple[str, str, Box]]:
    """A piece's copies NC1HWC0 -> ND: its C0 slices' pixel runs GM -> L1
    (whole 16-pixel fractals: the ZN layout of B), then the product's rows
    UB -> GM, the pixels of whole fractals in one copy and the rest in one
    padded copy (its UB side whole blocks)."""
    _, _, H, W = op.map_view.dims
    P = H * W
    c0 = BLOCK_BYTES // elem_bytes(_elements(op)[0])
    npad, whole = -(-n // 16) * 16, n // 16 * 16
    copies = [("gm", "l1", ([16 // c0, npad * c0], [npad * c0, 1], [op.map_view.slice_stride.data, 1]))]
    if whole:
        copies.append(("ub", "gm", ([rows, whole // 16, 16], [P, 16, 1], [16, FRACTAL_ELEMS, 1])))
    if n > whole:
        copies.append(("ub", "gm", ([rows, n - whole], [P, 1], [16, 1])))
    return copies


def build_from_map(kernel_op: t.KernelOp, op: TransdataOp, tiling: TransdataTilingAttr) -> None:
    """NC1HWC0 -> NCHW: per 16-channel block C[16 ch, kn px] = I16 x B, B's
    ZN fractals the map's pixel runs; a graph output comes out as fp32 (the
    cube accumulates in fp32), an intermediate in the map's type."""
    map_elem, out_elem = _elements(op)
    es = elem_bytes(map_elem)
    c0 = BLOCK_BYTES // es
    view = op.map_view
    _, C, H, W = view.dims
    P = H * W
    kn = tiling.value("chunk")
    kernel = TileKernelBuilder(kernel_op, map_elem)
    identity = np.eye(16, dtype=numpy_dtype(map_elem)).reshape(16, 16 // c0, c0).transpose(1, 0, 2)
    ident = add_constant(_program(kernel_op), "identity16", identity)
    l1a = kernel.alloc("l1", FRACTAL_ELEMS, "ZZ")
    l0a = kernel.alloc("l0a", FRACTAL_ELEMS, "ZZ")
    l1b = kernel.alloc("l1", 16 * kn, "ZN", buffers=2)
    l0b = kernel.alloc("l0b", 16 * kn, "ZN", buffers=2)
    l0c = kernel.alloc("l0c", 16 * kn, "NZ", elem=f32)
    ub = kernel.alloc("ub", 16 * kn, "NZ", elem=out_elem, buffers=2)
    kernel.copy(l1a, kernel.gm(ident), [FRACTAL_ELEMS], [1], [1])
    kernel.emit(t.LoadFractalOp(l0a, l1a, FRACTAL_ELEMS * es // FRACTAL_BYTES))
    x_gm = kernel.gm(t.gm_tensor_of(op.input))  # type: ignore[arg-type]
    out_gm = kernel.gm(t.gm_tensor_of(op.output), out_elem)  # type: ignore[arg-type]
    scale = op.scale_factor

    def piece(p0: Index, n: int, block: Index, rows: int) -> None:
        npad = -(-n // 16) * 16
        whole = n // 16 * 16
        load, *stores = from_map_boxes(op, n, rows)
        slices = kernel.mul(block, 16 // c0 * view.slice_stride.data)
        kernel.copy(l1b, kernel.at(x_gm, view.origin.data, kernel.add(slices, kernel.mul(p0, c0))), *load[2])
        kernel.emit(t.LoadFractalOp(l0b, l1b, 16 * npad * es // FRACTAL_BYTES))
        kernel.emit(t.MatmulOp(l0c, l0a, l0b, 16, npad, 16, False))
        kernel.copy(ub, l0c, [16 * npad], [1], [1], cast=out_elem != f32)
        if scale != 1.0:  # force_fp16 range scaling undone in fp32
            kernel.vec("muls", ub, [ub], [16 * npad], [[1], [1]], scale)
        rows_out = kernel.at(out_gm, 0, kernel.add(kernel.mul(block, 16 * P), p0))
        for (_, _, box), first in zip(stores, (0, whole) if whole else (whole,)):
            kernel.copy(kernel.at(rows_out, first), kernel.at(ub, first // 16 * FRACTAL_ELEMS), *box)

    for_pieces(kernel, tiling.block_dim, chunk_runs(P, kn), channel_runs(C), piece, pipeline=True)


def rows_boxes(op: TransdataOp, n: int) -> tuple[Box, Box]:
    """A chunk of n pixels' copies between the map and its rows, each as
    (shape, that side's strides, UB's strides): the map side (a run of each
    C1 slice) and the rows side."""
    c0 = BLOCK_BYTES // elem_bytes(_elements(op)[0])
    C = op.map_view.dims[1]
    c1 = -(-C // c0)
    line = c1 * c0  # a pixel's channels in UB: whole slices
    return ([c1, n, c0], [op.map_view.slice_stride.data, c0, 1], [c0, line, 1]), ([n, C], [op.pitch, 1], [line, 1])


def rows_ub_elements(op: TransdataOp, chunk: int) -> int:
    """Elements of the UB buffer (one of its two) a chunk of pixels takes."""
    c0 = BLOCK_BYTES // elem_bytes(_elements(op)[0])
    return chunk * -(-op.map_view.dims[1] // c0) * c0


def build_rows(kernel_op: t.KernelOp, op: TransdataOp, tiling: TransdataTilingAttr) -> None:
    """NHWC rows <-> NC1HWC0 as strided copies through UB."""
    elem = _elements(op)[0]
    c0 = BLOCK_BYTES // elem_bytes(elem)
    view = op.map_view
    width, chunk = tiling.value("width"), tiling.value("chunk")
    kernel = TileKernelBuilder(kernel_op, elem)
    ub = kernel.alloc("ub", rows_ub_elements(op, chunk), "ND", buffers=2)
    map_gm = kernel.gm(t.gm_tensor_of(op.output if op.to_map else op.input))  # type: ignore[arg-type]
    rows_gm = kernel.gm(t.gm_tensor_of(op.input if op.to_map else op.output))  # type: ignore[arg-type]
    pw = view.padded_w.data
    for piece in row_runs(tiling.value("rows"), width, chunk):
        with kernel.tiles(piece.count, tiling.block_dim, pipeline=True) as i:
            r, col = piece.at(kernel, i)
            at_map = kernel.at(map_gm, view.origin.data, kernel.mul(kernel.add(kernel.mul(r, pw), col), c0))
            at_rows = kernel.at(rows_gm, op.element_offset, kernel.mul(kernel.add(kernel.mul(r, width), col), op.pitch))
            (shape, map_strides, ub_strides), (lines, rows_strides, ub_lines) = rows_boxes(op, piece.size)
            if op.to_map:
                kernel.copy(ub, at_rows, lines, ub_lines, rows_strides)
                kernel.copy(at_map, ub, shape, map_strides, ub_strides)
            else:
                kernel.copy(ub, at_map, shape, ub_strides, map_strides)
                kernel.copy(at_rows, ub, lines, rows_strides, ub_lines)


__all__ = ["build_from_map", "build_rows", "build_space_to_depth", "build_to_map", "expand_transdata",
           "from_map_boxes", "rows_boxes", "rows_ub_elements", "space_to_depth_fill", "space_to_depth_geometry", "space_to_depth_loads",
           "space_to_depth_picks", "to_map_boxes", "SPACE_TO_DEPTH_CELLS"]
