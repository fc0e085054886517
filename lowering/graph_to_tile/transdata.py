"""graph.transdata on the cube: a product with an identity matrix moves
channels between NCHW rows and NC1HWC0 pixel runs (`lower_transdata`).
Counted in the `transdata` statistics.

* NCHW (an fp32 graph input or AI-CPU result; in force_fp16 an fp16
  row-major kernel's result read by a map kernel) -> NC1HWC0: `transdata_in`.
* NC1HWC0 -> NCHW/ND (a graph output, or the operand of an AI-CPU task):
  `transdata_out`."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import TensorType, f32
from xdsl.ir import Operation
from xdsl.utils.exceptions import PassFailedException

from gedialects.graph import ops as g
from gedialects.location import describe_op
from gedialects.npu.dma import plan_copy
from gedialects.npu.isa import BLOCK_BYTES, FRACTAL_BYTES
from gedialects.tile import ops as t
from gedialects.tile.builder import Index
from gedialects.tile.transforms.ub_buffers import elem_bytes

from .context import LoweringContext
from .elementwise import copy_map
from .planning import CUBE_CHANNELS, FRACTAL_ELEMS
from .registry import lowers
from .storage import GmStorage, TensorView

MAX_IN_CHUNK = 128
"""Largest chunk of pixels transdata_in puts through the cube at once."""
MAX_OUT_CHUNK = 256
"""Largest chunk of pixels transdata_out puts through the cube at once."""


@lowers(g.TransDataOp)
def lower_transdata(ctx: LoweringContext, op: g.TransDataOp) -> None:
    src, dst = op.src_format.data, op.dst_format.data
    x = ctx.values[op.input]
    if src == "NCHW" and dst == "NC1HWC0":
        return transdata_in(ctx, op, x)  # a graph input, an AI-CPU result or a row-major kernel's
    if src in ("NC1HWC0", "FLAT_NC1HWC0") and dst in g.ROW_MAJOR:
        return transdata_out(ctx, op, x.flat_src if x.flat_src is not None else x)
    raise PassFailedException(f"{describe_op(op)}: transdata {src} -> {dst} is not lowered "
                              "(NCHW -> NC1HWC0 and NC1HWC0 -> NCHW are)")


def transdata_in(ctx: LoweringContext, op: Operation, src: TensorView, first: int = 0) -> None:
    """NCHW -> NC1HWC0 on the cube, in the source's stored type (an fp32
    graph input in either mode; an fp16 intermediate in force_fp16, the
    result of a row-major kernel): C = I x B, B = 16 channels x kc pixels of
    one row gathered as ZN fractals (channel-major, k0 pixels a block).
    Pieces of 16 channels by a chunk of pixels (below). `first`: the
    image's element offset in a batch of them (map-unbatch's batch slice)."""
    n, c, h, w = src.shape
    if n != 1 and not isinstance(op, g.SliceOp):  # (a batch slice reads one image of n)
        raise PassFailedException(f"{describe_op(op)}: batch {n}: only batch 1 is lowered")
    c0 = ctx.c0
    elem = ctx.stored_element(src.storage, op.operands[0])
    es = elem_bytes(elem)
    k0 = BLOCK_BYTES // es  # pixels per block of a fractal's row
    cap = ctx.config.capacity_bytes
    dst = ctx.storage_for(op.output, "NC1HWC0", "input_5hd")
    plane = h * w  # a channel's pixels in the source
    blocks = channel_runs(c)
    out_es = ctx.elem_bytes
    fp = "f16" if es == 2 else "f32"

    def boxes(npx: int, cn: int, kc: int) -> tuple[Box, Box, Box]:
        """A piece's copies: its channels' runs GM -> UB (one DMA), UB -> L1
        into ZN fractals (on chip: short latency), the product's rows UB ->
        the map's C0 slices in GM."""
        return (([cn, npx], [kc, 1], [plane, 1]), ([cn, -(-npx // k0), k0], [k0, 16 * k0, 1], [kc, k0, 1]),
                ([-(-cn // c0), npx, c0], [dst.slice_stride(c0), c0, 1], [c0, 16, 1]))

    def cycles(geometry: tuple[int, int, int]) -> int:
        rows, width, kc = geometry
        runs = row_runs(rows, width, kc)
        cores = ctx.cores_for(pieces(runs, blocks))

        def piece(npx: int, cn: int) -> int:
            stage, scatter, store = boxes(npx, cn, kc)
            return (copy_cycles(ctx, "gm", "ub", stage, es, es, cores) + copy_cycles(ctx, "ub", "l1", scatter, es, es)
                    + ctx.config.dma_cycles("l1_l0b", 16 * kc * es) + ctx.config.mmad_cycles(fp, kc, 16, kc)
                    + ctx.config.dma_cycles("l0c_ub", 16 * kc * 4) + copy_cycles(ctx, "ub", "gm", store, out_es, out_es, cores))

        once = ctx.config.dma_cycles("gm_l1", kc * kc * es, cores) + ctx.config.dma_cycles("l1_l0a", kc * kc * es)
        return once + sum(-(-a.count * b.count // cores) * piece(a.size, b.size) for a in runs for b in blocks)

    # the map in rows of w pixels, or (no side halo: its pixel runs are
    # contiguous, as the source's) as one row; chunks of kc pixels, a kc x
    # kc identity in one L0A half. Larger chunks: fewer pieces, but each
    # core loads the larger identity and does fewer pieces in parallel.
    layouts = [(h, w)] + ([(1, h * w)] if dst.storage.padded_w == w and h > 1 else [])
    fits = [kc for kc in range(16, MAX_IN_CHUNK + 1, 16) if kc * kc * es <= cap["l0a"] // 2]
    h, w, kc = min(((rows, width, kc) for rows, width in layouts for kc in fits
                    if kc < width + 16), key=lambda geometry: (cycles(geometry), -geometry[2]))
    ctx.stats.transdata += 1
    pixels = row_runs(h, w, kc)
    block_dim = ctx.cores_for(pieces(pixels, blocks))
    kernel = ctx.new_kernel(op, "transdata", block_dim)
    identity = np.eye(kc, dtype=np.float32).reshape(kc // 16, 16, kc // k0, k0).transpose(0, 2, 1, 3)  # ZZ
    ident = ctx.add_constant("identity", identity)
    ctx.constants[ident] = ctx.constants[ident].astype(np.float32 if elem == f32 else np.float16)
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
    x = kernel.gm(src.storage.name, elem)
    out = kernel.gm(dst.storage.name)

    def piece(at: tuple[Index, Index], npx: int, block: Index, cn: int) -> None:
        row, col = at
        p0 = kernel.add(kernel.mul(row, w), col)
        pix = kernel.add(kernel.mul(row, dst.storage.padded_w), col)
        stage, scatter, store = boxes(npx, cn, kc)
        if cn < 16 and c > 16:  # stale channels of a previous block
            kernel.copy(l1b, zero, [kc * 16], [1], [1])
        # (a run that is not whole blocks is a padded DMA: the rest of its last block in UB is zero)
        kernel.copy(staged, kernel.at(x, first, kernel.add(kernel.mul(block, 16 * plane), p0)), *stage)
        kernel.copy(l1b, staged, *scatter)
        kernel.emit(t.LoadFractalOp(l0b, l1b, kc * 16 * es // FRACTAL_BYTES))
        kernel.emit(t.MatmulOp(l0c, l0a, l0b, kc, 16, kc, False))
        kernel.copy(ub, l0c, [kc * 16], [1], [1], cast=ctx.fp16)
        slices = kernel.mul(block, 16 // c0 * dst.slice_stride(c0))
        kernel.copy(kernel.at(out, dst.origin(c0), kernel.add(slices, kernel.mul(pix, c0))), ub, *store)

    for_pieces(kernel, block_dim, pixels, blocks, piece)


@lowers(g.SpaceToDepthOp)
def space_to_depth_in(ctx: LoweringContext, op: g.SpaceToDepthOp) -> None:
    """NCHW -> the space-to-depth map in NC1HWC0, on the cube in one kernel
    (a transdata_in that folds s x s cells of pixels into channels; the
    input of a conv-space-to-depth stem). Per cell row, chunk of mc cells
    and block of 16 output channels, for each dx: C[mc cells, 16 channels]
    += A_dx x B_dx, where A_dx [mc, s*mc] picks pixel s*j + dx for cell j
    and B_dx holds the s*mc pixels of the cell row's s input rows, channel c
    of row dy in the row of its output channel (op.channel) when that is in
    the block (the other rows stay zero). Summing over dx fills every
    cell's channels; the pad channels come out zero."""
    src = ctx.values[op.input]
    n, c, h, w = src.shape
    s = op.int_("blocksize", 1)
    if n != 1:
        raise PassFailedException(f"{describe_op(op)}: batch {n}: only batch 1 is lowered")
    blocks = -(-s * s * c // CUBE_CHANNELS)  # of output channels
    c0 = ctx.c0
    elem = ctx.stored_element(src.storage, op.input)
    es = elem_bytes(elem)
    k0 = BLOCK_BYTES // es  # pixels per block of a fractal's row
    rows, cols = h // s, w // s  # cells
    cap = ctx.config.capacity_bytes
    # the s picking matrices [mc, s*mc] together in L0A (nothing else is there): wider
    # chunks mean fewer, larger products (mc 64 on a 224-pixel fp32 image: 13,875 cycles
    # against 20,356 at mc 32)
    fits = [mc for mc in range(16, MAX_IN_CHUNK + 1, 16) if s * mc * s * mc * es <= cap["l0a"]]
    # fewest chunks per cell row; then one that divides it, then the widest
    mc = min(fits, key=lambda mc: (-(-cols // mc), cols % mc != 0, -mc))
    kp = s * mc  # pixels of a chunk (the product's K)
    nfull = cols // mc
    dst = ctx.storage_for(op.output, "NC1HWC0", "input_5hd")
    ctx.stats.transdata += 1
    block_dim = ctx.cores_for(rows * max(nfull, 1))
    kernel = ctx.new_kernel(op, "transdata", block_dim)
    zero = kernel.alloc("ub", kp * 16, "ND", elem=elem)
    kernel.emit(t.DupOp(zero, kp * 16, 0.0))
    l0a, l1b = [], {}
    for dx in range(s):
        pick = np.zeros((mc, kp), dtype=np.float32)
        pick[np.arange(mc), s * np.arange(mc) + dx] = 1
        name = ctx.add_constant(f"space_to_depth_pick{dx}", pick.reshape(mc // 16, 16, kp // k0, k0).transpose(0, 2, 1, 3))
        ctx.constants[name] = ctx.constants[name].astype(np.float32 if elem == f32 else np.float16)
        l1a = kernel.alloc("l1", mc * kp, "ZZ", elem=elem)
        l0a.append(kernel.alloc("l0a", mc * kp, "ZZ", elem=elem))
        kernel.copy(l1a, kernel.gm(name, elem), [mc * kp], [1], [1])
        kernel.emit(t.LoadFractalOp(l0a[dx], l1a, mc * kp * es // FRACTAL_BYTES))
        for block in range(blocks):
            l1b[dx, block] = kernel.alloc("l1", kp * 16, "ZN", elem=elem)
            kernel.copy(l1b[dx, block], zero, [kp * 16], [1], [1])  # rows no input row fills stay zero
    l0b = kernel.alloc("l0b", kp * 16, "ZN", elem=elem)
    l0c = kernel.alloc("l0c", mc * 16, "NZ", elem=f32)
    ub = kernel.alloc("ub", mc * 16, "NZ")
    rows_ub = kernel.alloc("ub", s * c * kp, "ND", elem=elem)  # the chunk's s input rows, channel by channel
    x = kernel.gm(src.storage.name, elem)
    out = kernel.gm(dst.storage.name)
    # whole k0-pixel blocks: a short chunk reads up to k0 - 1 pixels past
    # its row (into products only cells past the chunk read)
    src.storage.overread = max(src.storage.overread, (k0 - 1) * es)

    def chunk(row: Index, col: Index, cells: int) -> None:
        cell = kernel.add(kernel.mul(row, dst.storage.padded_w), col)
        pixels = -(-cells * s // k0) * k0
        # the chunk's pixels of each input row dy, every channel: one GM -> UB
        # DMA per row (a burst per channel); the B operands are filled from
        # UB on chip (a DMA's fixed cost there is a tenth of GM's)
        for dy in range(s):
            first = kernel.add(kernel.mul(kernel.add(kernel.mul(row, s), dy), w), kernel.mul(col, s))
            kernel.copy(kernel.at(rows_ub, dy * c * kp), kernel.at(x, 0, first), [c, pixels], [kp, 1], [h * w, 1])
        for block in range(blocks):
            for dx in range(s):
                for dy in range(s):
                    # input channels whose output channel is in this block: a run of one step
                    ins = [i for i in range(c) if op.channel(dy, dx, i, c) // CUBE_CHANNELS == block]
                    if not ins:
                        continue
                    first_row = op.channel(dy, dx, ins[0], c) - block * CUBE_CHANNELS
                    step = op.channel(dy, dx, 1, c) - op.channel(dy, dx, 0, c)  # B rows apart
                    kernel.copy(kernel.at(l1b[dx, block], first_row * k0), kernel.at(rows_ub, (dy * c + ins[0]) * kp),
                                [len(ins), pixels // k0, k0], [step * k0, 16 * k0, 1], [kp, k0, 1])
                kernel.emit(t.LoadFractalOp(l0b, l1b[dx, block], kp * 16 * es // FRACTAL_BYTES))
                kernel.emit(t.MatmulOp(l0c, l0a[dx], l0b, mc, 16, kp, dx > 0))
            kernel.copy(ub, l0c, [mc * 16], [1], [1], cast=ctx.fp16)
            base = kernel.at(out, dst.origin(c0) + block * CUBE_CHANNELS // c0 * dst.slice_stride(c0),
                             kernel.mul(cell, c0))
            kernel.copy(base, ub, [CUBE_CHANNELS // c0, cells, c0], [dst.slice_stride(c0), c0, 1], [c0, 16, 1])

    row_chunks(kernel, rows, cols, mc, block_dim, chunk)


@dataclass(frozen=True)
class Run:
    """`count` pieces of `size` (pixels or channels) along one dim of a
    transdata; `at(kernel, i)`: where the i-th begins (its row and column,
    or its 16-channel block)."""

    count: int
    size: int
    at: Callable


def row_runs(rows: int, width: int, size: int) -> list[Run]:
    """Every row of `width` columns in chunks of `size` ((row, first column)
    each): the whole chunks, then each row's shorter last one."""
    nfull, tail = divmod(width, size)
    runs = [Run(rows * nfull, size, lambda k, i: (k.div(i, nfull), k.mul(k.rem(i, nfull), size)))] if nfull else []
    return runs + ([Run(rows, tail, lambda k, i: (i, nfull * size))] if tail else [])


def channel_runs(channels: int) -> list[Run]:
    """The 16-channel blocks of `channels` (block index each): the whole
    blocks, then the shorter last one."""
    whole, part = divmod(channels, 16)
    return ([Run(whole, 16, lambda k, i: i)] if whole else []) + ([Run(1, part, lambda k, i: whole)] if part else [])


def pieces(outer: list[Run], inner: list[Run]) -> int:
    return sum(a.count for a in outer) * sum(b.count for b in inner)


Box = tuple[list[int], list[int], list[int]]
"""A box copy: shape, destination and source element strides."""


def copy_cycles(ctx: LoweringContext, src: str, dst: str, box: Box, src_es: int, dst_es: int, cores: int = 1) -> int:
    """The target's cycles for one box copy: each of its DMAs pays the
    path's latency (gedialects/npu/dma.py plans them), the bytes move at
    the path's rate (a GM one shared by `cores`)."""
    shape, dst_strides, src_strides = box
    dmas = plan_copy(shape, dst_strides, src_strides, dst_es, src_es, dst, src).instructions
    path = f"{src}_{dst}"
    return ctx.config.dma_cycles(path, math.prod(shape) * src_es, cores) + (dmas - 1) * ctx.config.dma_cycles(path, 0, cores)


def for_pieces(kernel, block_dim: int, outer: list[Run], inner: list[Run], body, pipeline: bool = False) -> None:
    """body(at, size, at, size) for every pair of an outer and an inner piece,
    the pairs spread over the blocks (so a small map's channel blocks go to
    several cores instead of one after another on one); one loop per pair
    of runs, as their sizes are static."""
    for a in outer:
        for b in inner:
            with kernel.tiles(a.count * b.count, block_dim, pipeline) as tile:
                body(a.at(kernel, kernel.div(tile, b.count)), a.size, b.at(kernel, kernel.rem(tile, b.count)), b.size)


def row_chunks(kernel, rows: int, width: int, size: int, block_dim: int, chunk) -> None:
    """chunk(row, first column, columns) over every row of `width` columns
    in chunks of `size`, spread over the blocks."""
    for run in row_runs(rows, width, size):
        with kernel.tiles(run.count, block_dim) as tile:
            chunk(*run.at(kernel, tile), run.size)


def transdata_out(ctx: LoweringContext, op: g.TransDataOp, x: TensorView) -> None:
    """NC1HWC0 -> NCHW on the cube: per 16-channel block,
    C[16 ch, Kn px] = I16 x B, where B's ZN fractals are exactly the
    NC1HWC0 pixel runs; the NZ result rows are channel rows of NCHW.
    A graph output comes out as fp32 (the cube accumulates in fp32);
    an intermediate in the compute precision."""
    if any(x.storage.halo):  # a padded conv/pool reads it too: pixel runs are rows, copy without the halo
        flat = ctx.temp_map(x.shape, "no_halo")
        copy_map(ctx, op, "strip_halo", x, flat)
        x = flat
    _, C, H, W = x.shape
    v = op.output
    c0, es = ctx.c0, ctx.elem_bytes
    P = H * W
    name = ctx.plan.outputs.get(v)
    st = GmStorage(name or ctx.fresh_name("transdata_nd"), kind="output" if name else "internal",
                   layout="ND", elems=C * P, shape=tuple(g.shape_of(v)))
    out_elem = f32 if name else ctx.elem
    if name:
        st.ttype = TensorType(f32, g.shape_of(v))
    ctx.storages.append(st)
    ctx.values[v] = TensorView(st, 0, "ND", tuple(g.shape_of(v)))
    ctx.stats.transdata += 1
    blocks = channel_runs(C)
    out_es = elem_bytes(out_elem)
    slices_per_fractal = 16 // c0

    def boxes(n: int, rows: int) -> list[tuple[str, str, Box]]:
        """A piece's copies: its C0 slices' pixel runs GM -> L1 (whole
        16-pixel fractals: the ZN layout of B), then the product's rows UB ->
        GM, the pixels of whole fractals in one copy and the rest in one
        padded copy (its UB side whole blocks)."""
        npad, whole = -(-n // 16) * 16, n // 16 * 16
        copies = [("gm", "l1", ([slices_per_fractal, npad * c0], [npad * c0, 1], [x.slice_stride(c0), 1]))]
        if whole:
            copies.append(("ub", "gm", ([rows, whole // 16, 16], [P, 16, 1], [16, FRACTAL_ELEMS, 1])))
        if n > whole:
            copies.append(("ub", "gm", ([rows, n - whole], [P, 1], [16, 1])))
        return copies

    def cycles(kn: int) -> int:
        runs = [Run(count, size, None) for count, size in ((P // kn, kn), (1, P % kn)) if count and size]
        cores = ctx.cores_for(pieces(runs, blocks))

        def piece(n: int, rows: int) -> int:
            npad = -(-n // 16) * 16
            return (sum(copy_cycles(ctx, a, b, box, out_es if a == "ub" else es, out_es if b == "gm" else es, cores)
                        for a, b, box in boxes(n, rows))
                    + ctx.config.dma_cycles("l1_l0b", 16 * npad * es) + ctx.config.mmad_cycles(fp, 16, npad, 16)
                    + ctx.config.dma_cycles("l0c_ub", 16 * npad * 4))

        return sum(-(-a.count * b.count // cores) * piece(a.size, b.size) for a in runs for b in blocks)

    fp = "f16" if es == 2 else "f32"
    # chunks of kn pixels: larger ones are fewer pieces, smaller ones more in parallel
    kn = min((kn for kn in range(16, MAX_OUT_CHUNK + 1, 16) if kn < P + 16), key=lambda kn: (cycles(kn), -kn))
    full, tail = divmod(P, kn)
    ident = ctx.add_constant("identity16", np.eye(16, dtype=np.float32).reshape(16, 16 // c0, c0).transpose(1, 0, 2))
    chunks = ([Run(full, kn, lambda k, i: k.mul(i, kn))] if full else []) + ([Run(1, tail, lambda k, i: full * kn)] if tail else [])
    block_dim = ctx.cores_for(pieces(chunks, blocks))
    kernel = ctx.new_kernel(op, "transdata", block_dim)
    l1a = kernel.alloc("l1", FRACTAL_ELEMS, "ZZ")
    l0a = kernel.alloc("l0a", FRACTAL_ELEMS, "ZZ")
    l1b = kernel.alloc("l1", 16 * kn, "ZN", buffers=2)
    l0b = kernel.alloc("l0b", 16 * kn, "ZN", buffers=2)
    l0c = kernel.alloc("l0c", 16 * kn, "NZ", elem=f32)
    ub = kernel.alloc("ub", 16 * kn, "NZ", elem=out_elem, buffers=2)
    kernel.copy(l1a, kernel.gm(ident), [FRACTAL_ELEMS], [1], [1])
    kernel.emit(t.LoadFractalOp(l0a, l1a, FRACTAL_ELEMS * es // FRACTAL_BYTES))
    x_gm, out_gm = kernel.gm(x.storage.name), kernel.gm(st.name, out_elem)

    def piece(p0: Index, n: int, block: Index, rows: int) -> None:
        npad, whole = -(-n // 16) * 16, n // 16 * 16
        # the last slice's run is read up to whole 16-pixel fractals
        x.storage.overread = max(x.storage.overread, (npad - n) * c0 * es)
        load, *stores = boxes(n, rows)
        slices = kernel.mul(block, slices_per_fractal * x.slice_stride(c0))
        kernel.copy(l1b, kernel.at(x_gm, x.origin(c0), kernel.add(slices, kernel.mul(p0, c0))), *load[2])
        kernel.emit(t.LoadFractalOp(l0b, l1b, 16 * npad * es // FRACTAL_BYTES))
        kernel.emit(t.MatmulOp(l0c, l0a, l0b, 16, npad, 16, False))
        kernel.copy(ub, l0c, [16 * npad], [1], [1], cast=out_elem != f32)
        if name and ctx.scale_of(v) != 1.0:  # force_fp16 range scaling undone in fp32
            kernel.vec("muls", ub, [ub], [16 * npad], [[1], [1]], ctx.scale_of(v))
        rows_out = kernel.at(out_gm, 0, kernel.add(kernel.mul(block, 16 * P), p0))
        for (_, _, box), first in zip(stores, (0, whole) if whole else (whole,)):
            kernel.copy(kernel.at(rows_out, first), kernel.at(ub, first // 16 * FRACTAL_ELEMS), *box)

    for_pieces(kernel, block_dim, chunks, blocks, piece, pipeline=True)
