"""Expansion of a tiled `tile.conv` (gedialects/tile/conv.py) into loops of
buffers, DMA, cube and vector ops: tile-expand-structured runs it on every
conv kernel with a `#tile.conv_tiling`.

A tile is a band of output rows x a block of output-channel fractals; the
cores form the tiling's grid over bands x blocks, each keeping one operand
in L1 over its tiles: its band while the blocks' weights stream, or its
block's weights while the bands stream. Per tile, per chunk of output
pixels and C1 slice of input: im2col -> L0A, weights -> L0B, mmad
accumulating in L0C (a direct 1x1 conv: A's fractals as they lie in L1,
several slices per mmad); then L0C -> UB, the epilogue on the vector unit
(bias, residual, the epilogue region), UB -> GM. With `panels` > 1 the
operands copied next to a tile's products go to L1 in panels of C1 slices,
and the tile's first chunk runs panel by panel (each panel's loop bounded
to its slices with `within`, so npu-insert-sync lets it start once its own
panel is in, beside the copies of the later ones). A strided conv whose kernel
is one row (pixel) tall (wide) may copy only every stride-th row (pixel) of
the map into its band (the tiling's `steps`)."""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass

from xdsl.dialects.builtin import f32
from xdsl.ir import Block, SSAValue

from gedialects.npu.isa import BLOCK_BYTES, FRACTAL_BYTES
from gedialects.tile import ops as t
from gedialects.tile.builder import Index, TileKernelBuilder
from gedialects.tile.conv import ConvOp, ConvTilingAttr, MapViewAttr
from gedialects.tile.transforms.buffer_body import BufferBody
from gedialects.tile.transforms.conv_tiling import CUBE_CHANNELS, band_window, conv_shape, decimated, direct_slice_pixels
from gedialects.tile.transforms.ub_buffers import elem_bytes


@dataclass(frozen=True)
class _Map:
    """A map operand: its GM tensor and the view of it the conv reads or writes."""

    name: str
    shape: tuple[int, ...]
    origin: int
    slice_stride: int
    padded_w: int


def _map(ref: SSAValue, view: MapViewAttr) -> _Map:
    return _Map(t.gm_tensor_of(ref), view.dims, view.origin.data, view.slice_stride.data,  # type: ignore[arg-type]
                view.padded_w.data)


def expand_conv(kernel_op: t.KernelOp, conv: ConvOp, tiling: ConvTilingAttr) -> None:
    """Rewrite the body of `kernel_op` (which computes `conv`) into its loops."""
    elem = conv.output.type.element  # type: ignore[attr-defined]
    inputs = [_map(ref, view) for ref, view in zip(conv.inputs, conv.views())]
    x, out = inputs[0], _map(conv.output, conv.output_view)
    res = _map(conv.residual, conv.residual_view) if conv.residual is not None else None  # type: ignore[arg-type]
    wname = t.gm_tensor_of(conv.weights)
    bname = t.gm_tensor_of(conv.bias) if conv.bias is not None else None
    residual_mode = conv.mode()
    es = elem_bytes(elem)
    fp16 = es == 2
    c0 = k0 = BLOCK_BYTES // es  # k0: the K depth of a fractal, one 32-byte block
    kh, kw = conv.ints("kernel_size")
    p = conv.ints("pads")
    s, d = conv.int_("stride"), conv.int_("dilation")
    in_slices, out_fractals = conv.int_("in_slices"), conv.int_("out_fractals")
    superblocks, block_cin = conv.int_("superblocks"), conv.int_("block_in_channels")
    taps = kh * kw
    OH, OW = out.shape[2], out.shape[3]
    shape = decimated(conv_shape(conv), *tiling.value("steps"))
    k_rows = tiling.value("k_rows")
    row_parts = [(r0, min(k_rows, kh - r0)) for r0 in range(0, kh, k_rows)]
    core_rows, core_cols = tiling.value("cores")
    units_per_core, blocks_per_core = tiling.value("per_core")
    weights_outer = tiling.value("stationary") == "weights"
    block_dim = core_rows * core_cols

    old = kernel_op.body.block  # the new body is built in a fresh block; the old one (the tile.conv) goes after
    kernel_op.body.detach_block(old)
    kernel_op.body.add_block(Block())
    kernel = TileKernelBuilder(kernel_op, elem)

    H_l1, W_l1 = shape.in_h, shape.in_w
    band_rows, chunk_rows, chunk_m = tiling.value("band_rows"), tiling.value("chunk_rows"), tiling.value("chunk_m")
    tile_fractals, per_row = tiling.value("tile_fractals"), tiling.value("chunks_per_row")
    tile_channels = tile_fractals * CUBE_CHANNELS
    channel_blocks = out_fractals // tile_fractals
    bands = OH // band_rows
    window = band_window(shape, band_rows)
    row_elems = W_l1 * c0  # one row of one C1 slice (the map is stored unpadded: load3d pads left and right)
    group = tiling.value("slices_per_mmad")  # a direct 1x1 conv's C1 slices per mmad (0: im2col)
    panels = tiling.value("panels")
    band_elems = window.l1_rows * row_elems  # one C1 slice of the band in L1
    if group:  # whole fractals per slice, as far as the last chunk reads
        band_elems = direct_slice_pixels(band_rows, chunk_rows, chunk_m, per_row, OW) * c0
    tile_elems = tile_channels * chunk_m  # one chunk of output in L0C / UB
    w_row = tile_channels * k0  # weight elements of one tap of the tile
    l1_in = kernel.alloc("l1", in_slices * band_elems, "NC1HWC0")
    l1_w = kernel.alloc("l1", in_slices * taps * w_row, "FRACTAL_Z")
    k_blocks = group or k_rows * kw  # blocks of K per mmad
    l0a = kernel.alloc("l0a", chunk_m * k_blocks * k0, "ZZ", buffers=2)
    l0b = kernel.alloc("l0b", k_blocks * w_row, "ZN", buffers=2)
    l0c = kernel.alloc("l0c", tile_elems, "NZ", elem=f32)
    ub_out = kernel.alloc("ub", tile_elems, "NZ")
    ub_res = kernel.alloc("ub", tile_elems, "NZ") if res is not None else None
    ub_bias = kernel.alloc("ub", tile_channels, "ND") if bname is not None else None
    activation = BufferBody(kernel, conv.epilogue.block) if conv.epilogue.blocks else None
    staging = None
    if conv.stage.blocks:
        per_chunk = tiling.value("stage_slices")  # C1 slices per copy through UB
        staging = (BufferBody(kernel, conv.stage.block),
                   kernel.alloc("ub", per_chunk * window.count * row_elems, "NC1HWC0", buffers=2), per_chunk)
    # the stage's per-channel vectors go to UB whole, once (a few hundred bytes); slice c1 reads its C0 values
    stage_vectors = []
    for ref, view in zip(conv.stage_inputs, conv.stage_input_views()):
        whole = kernel.alloc("ub", in_slices * c0, "ND")
        kernel.copy(whole, kernel.at(kernel.gm(t.gm_tensor_of(ref)), view.origin.data), [in_slices, c0], [c0, 1],
                    [view.slice_stride.data, 1])
        stage_vectors.append(whole)
    input_gms = [kernel.gm(piece.name) for piece in inputs]
    in_gm, w_gm, out_gm = input_gms[0], kernel.gm(wname), kernel.gm(out.name)
    slices_per_fractal = CUBE_CHANNELS // c0

    def bounded(end: int | None, per_slice: int, offset: int) -> int | None:
        """`within` for a reference `offset` elements into a buffer of
        `per_slice` elements per C1 slice, read only below slice `end`."""
        return None if end is None else end * per_slice - offset

    def accumulate(c1: Index, first: bool, in_offset: Index, qi: int, end: int | None = None) -> None:
        """C1 slice c1 of chunk qi of the current rows into L0C, one mmad
        per K part; `end`: c1 stays below it (a panel's loop)."""
        for pi, (r0, part_rows) in enumerate(row_parts):
            chunk_in_rows = (chunk_rows - 1) * shape.stride + d * (part_rows - 1) + 1
            params = [chunk_in_rows, W_l1, part_rows, kw, shape.stride, s // shape.col_step, 0, 0, p[1], p[3], d, d,
                      qi * chunk_m, chunk_m]
            lead = (window.lead + r0 * d) * row_elems
            src = kernel.at(l1_in, lead, kernel.add(in_offset, kernel.mul(c1, band_elems)),
                            bounded(end, band_elems, lead))
            kernel.emit(t.Im2colOp(l0a, src, params))
            part = r0 * kw * w_row
            w_l1 = kernel.at(l1_w, part, kernel.mul(c1, taps * w_row), bounded(end, taps * w_row, part))
            kernel.emit(t.LoadFractalOp(l0b, w_l1, part_rows * kw * tile_fractals))
            kernel.emit(t.MatmulOp(l0c, l0a, l0b, chunk_m, tile_channels, part_rows * kw * k0, not (first and pi == 0)))

    fractal_elems = FRACTAL_BYTES // es

    def accumulate_direct(g: Index, first: bool, in_offset: Index, qi: int, end: int | None = None) -> None:
        """Slices [g * group, (g + 1) * group) of chunk qi into L0C: A's
        fractals as they lie in L1 (16 pixels of a slice each; per 16 pixels
        one load of the group's slices, `band_elems` apart, into a row of
        ZZ fractals), the group's weights in one load, one mmad; `end`: g
        stays below it (a panel's loop)."""
        first_slice = kernel.add(in_offset, kernel.mul(g, group * band_elems))
        slice_end = None if end is None else end * group
        for mi in range(chunk_m // 16):
            at = (qi * chunk_m + mi * 16) * c0
            kernel.emit(t.LoadFractalOp(kernel.at(l0a, mi * group * fractal_elems),
                                        kernel.at(l1_in, at, first_slice, bounded(slice_end, band_elems, at)), group,
                                        band_elems // fractal_elems))
        kernel.emit(t.LoadFractalOp(l0b, kernel.at(l1_w, 0, kernel.mul(g, group * w_row), bounded(slice_end, w_row, 0)),
                                    group * tile_fractals))
        kernel.emit(t.MatmulOp(l0c, l0a, l0b, chunk_m, tile_channels, group * k0, not first))

    ub_zeros = None
    if window.top or window.bottom:  # a row of zeros in UB, for the padding rows (MTE3, beside MTE2's copies)
        ub_zeros = kernel.alloc("ub", row_elems, "ND")
        kernel.emit(t.DupOp(ub_zeros, row_elems, 0.0))

    def zero_rows(lower: Index, upper: Index, lo: int, hi: int) -> None:
        """Window rows [lower, upper) of C1 slices [lo, hi) in L1 <- 0 (padding)."""
        with kernel.loop(lower, upper) as row:
            at = lo * band_elems + window.lead * row_elems
            kernel.copy(kernel.at(l1_in, at, kernel.mul(row, row_elems), within_panel(lo, hi, at)),
                        ub_zeros, [hi - lo, row_elems], [band_elems, 1], [0, 1])

    def within_panel(lo: int, hi: int, at: int) -> int | None:
        """`within` for a copy into C1 slices [lo, hi) of the band from
        element `at` on: a panel's (none when the band is copied whole)."""
        return None if (lo, hi) == (0, in_slices) else bounded(hi, band_elems, at)

    def load_band(band: Index, superblock: Index, lo: int = 0, hi: int = in_slices) -> None:
        """C1 slices [lo, hi) of the band's window of input rows -> L1:
        `window.count` stored rows from the window's first row clamped into
        the map, then zeros for the window's rows above or below the map
        (padding; only edge bands have any: the loops run no iteration
        elsewhere)."""
        first = kernel.add(kernel.mul(band, band_rows * shape.stride), -p[0])  # the window's first row, maybe < 0
        src_row = kernel.min(kernel.max(first, 0), H_l1 - window.count)
        dst_row = kernel.add(kernel.add(src_row, kernel.mul(first, -1)), window.lead)  # its row in l1_in
        dst = kernel.mul(dst_row, row_elems)
        if staging is None:
            first_slice = 0
            for piece, piece_gm in zip(inputs, input_gms):  # one copy per map the input is held in
                slices = min(-(-piece.shape[1] // c0), in_slices - first_slice)
                start, stop = max(lo, first_slice), min(hi, first_slice + slices)  # its slices in [lo, hi)
                first_slice += slices
                if start >= stop:
                    continue
                stored_row = piece.padded_w * c0
                src = kernel.add(kernel.mul(src_row, shape.row_step * stored_row),
                                 kernel.mul(superblock, (block_cin // c0) * piece.slice_stride))
                src = kernel.add(src, (start - (first_slice - slices)) * piece.slice_stride)
                # a row's pixels: contiguous, or every col_step-th (a burst each)
                pixels = ([row_elems], [1], [1]) if shape.col_step == 1 else ([W_l1, c0], [c0, 1], [shape.col_step * c0, 1])
                kernel.copy(kernel.at(l1_in, start * band_elems, dst, within_panel(lo, hi, start * band_elems)),
                            kernel.at(piece_gm, piece.origin, src),
                            [stop - start, window.count, *pixels[0]], [band_elems, row_elems, *pixels[1]],
                            [piece.slice_stride, shape.row_step * stored_row, *pixels[2]])
        else:  # chunks of slices through UB, where the stage's map body runs
            body, ub_stage, per_chunk = staging
            n = window.count * row_elems  # one slice's band rows
            src = kernel.add(kernel.mul(src_row, x.padded_w * c0),
                             kernel.mul(superblock, (block_cin // c0) * x.slice_stride))
            with kernel.loop(0, in_slices // per_chunk, pipeline=True) as chunk:
                c1 = kernel.mul(chunk, per_chunk)
                kernel.copy(ub_stage, kernel.at(in_gm, x.origin, kernel.add(src, kernel.mul(c1, x.slice_stride))),
                            [per_chunk, window.count, row_elems], [n, row_elems, 1],
                            [x.slice_stride, x.padded_w * c0, 1])
                # the chunk's slices each read their channels' C0 values of the stage's vectors
                body.apply(ub_stage, per_chunk * n, channels=[kernel.at(v, 0, kernel.mul(c1, c0)) for v in stage_vectors],
                           slices=per_chunk)
                kernel.copy(kernel.at(l1_in, 0, kernel.add(dst, kernel.mul(c1, band_elems))), ub_stage,
                            [per_chunk, n], [band_elems, 1], [n, 1])
        if window.top:
            zero_rows(0, kernel.min(kernel.max(kernel.mul(first, -1), 0), window.rows), lo, hi)
        if window.bottom:
            zero_rows(kernel.min(kernel.max(kernel.add(kernel.mul(first, -1), H_l1), 0), window.rows), window.rows,
                      lo, hi)

    def gm_tile(view: _Map, block: Index, oy: Index, m0: int):
        """(address, strides) of the chunk's tile of a map: [n1][half][rows][cols][c0]."""
        stride = view.slice_stride
        strides = [slices_per_fractal * stride, stride, view.padded_w * c0, c0, 1]
        offset = kernel.add(kernel.mul(block, tile_fractals * slices_per_fractal * stride),
                            kernel.mul(oy, view.padded_w * c0))
        return view.origin + m0 * c0, offset, strides

    def epilogue(block: Index, oy: Index, qi: int) -> None:
        """L0C -> UB (in the storage type), + bias, + residual, activation, UB -> GM."""
        kernel.copy(ub_out, l0c, [tile_elems], [1], [1], cast=fp16)
        if ub_bias is not None:
            kernel.vec("add", ub_out, [ub_out, ub_bias], [tile_fractals, chunk_m, 16],
                       [[chunk_m * 16, 16, 1], [chunk_m * 16, 16, 1], [16, 0, 1]])
        rows, m0 = (chunk_rows, 0) if per_row == 1 else (1, qi * chunk_m)
        cols = OW if per_row == 1 else min(chunk_m, OW - m0)
        # the tile of out/residual: [n1][half][rows][cols][c0] <-> ub [n1][m][16]
        shape = [tile_fractals, slices_per_fractal, rows, cols, c0]
        ub_strides = [chunk_m * 16, c0, OW * 16, 16, 1]
        if res is not None:
            start, offset, strides = gm_tile(res, block, oy, m0)
            kernel.copy(ub_res, kernel.at(kernel.gm(res.name), start, offset), shape, ub_strides, strides)
        if res is not None and residual_mode == "add":
            kernel.vec("add", ub_out, [ub_out, ub_res], [tile_elems], [[1], [1], [1]])
        if activation is not None:
            activation.apply(ub_out, tile_elems)
        if res is not None and residual_mode == "scale":
            kernel.vec("mul", ub_out, [ub_out, ub_res], [tile_elems], [[1], [1], [1]])
        start, offset, strides = gm_tile(out, block, oy, m0)
        kernel.copy(kernel.at(out_gm, start, offset), ub_out, shape, strides, ub_strides)

    core = kernel.block_idx() if block_dim > 1 else 0

    @contextmanager
    def share(index: Index, per_core: int, total: int):
        """This core's indices among `total`, `per_core` each; `index` is
        the core's row (units) or column (blocks) in the grid."""
        if per_core == 1:
            yield index
            return
        first = kernel.mul(index, per_core)
        end = kernel.add(first, per_core) if total % per_core == 0 else kernel.min(kernel.add(first, per_core), total)
        with kernel.loop(first, end) as i:
            yield i

    # the core's row (units) and column (blocks) in the grid
    core_row = core if core_cols == 1 else kernel.div(core, core_cols) if core_rows > 1 else 0
    core_col = core if core_rows == 1 else kernel.rem(core, core_cols) if core_cols > 1 else 0

    def units():
        return share(core_row, units_per_core, bands * superblocks)

    def blocks():
        return share(core_col, blocks_per_core, channel_blocks)

    def load_weights(superblock: Index, block_in_sb: Index, lo: int = 0, hi: int = in_slices) -> None:
        """C1 slices [lo, hi) of the block's weights -> L1."""
        w_offset = kernel.add(kernel.mul(superblock, in_slices * taps * out_fractals * CUBE_CHANNELS * k0),
                              kernel.mul(block_in_sb, w_row))
        w_offset = kernel.add(w_offset, lo * taps * out_fractals * CUBE_CHANNELS * k0)
        kernel.copy(kernel.at(l1_w, lo * taps * w_row), kernel.at(w_gm, 0, w_offset), [(hi - lo) * taps, w_row],
                    [w_row, 1], [out_fractals * CUBE_CHANNELS * k0, 1])

    step, steps = (accumulate_direct, in_slices // group) if group else (accumulate, in_slices)
    per_panel = steps // panels

    def chunk_products(in_offset: Index, qi: int, panelled: bool) -> None:
        """The chunk's mmads into L0C: step 0 starts the accumulation, the
        rest in a ping-pong loop (a loop from step lo starts on copy lo % 2,
        so the copies alternate across loops); `panelled`: a loop per panel,
        each reading only its panel's slices."""
        step(0, True, in_offset, qi)
        for lo, hi in [(p * per_panel, (p + 1) * per_panel) for p in range(panels)] if panelled else [(0, steps)]:
            lo = max(lo, 1)
            if lo < hi:
                with kernel.loop(lo, hi, 1, pipeline=True, after_first=lo % 2 == 1) as k:
                    step(k, False, in_offset, qi, hi if panelled else None)

    def compute(band: Index, block: Index) -> None:
        """One tile, its band and weights in L1 (with panels: arriving panel
        by panel, the first chunk taking them in turn): chunk by chunk into
        L0C, then the epilogue."""
        if ub_bias is not None:
            kernel.copy(ub_bias, kernel.at(kernel.gm(bname), 0, kernel.mul(block, tile_channels)), [tile_channels], [1], [1])

        def chunk_work(chunk: Index, panelled: bool) -> None:
            in_offset = kernel.mul(chunk, chunk_rows * shape.stride * row_elems)
            oy = kernel.add(kernel.mul(band, band_rows), kernel.mul(chunk, chunk_rows))
            for qi in range(per_row):
                chunk_products(in_offset, qi, panelled and qi == 0)
                epilogue(block, oy, qi)

        chunks, first = band_rows // chunk_rows, 0
        if panels > 1:
            chunk_work(0, True)
            first = 1
        if first < chunks:
            with kernel.loop(first, chunks) as chunk:
                chunk_work(chunk, False)

    def load(band: Index | None, superblock: Index, block_in_sb: Index | None, panelled: bool = True) -> None:
        """The band's and/or the block's weights (None: not here) -> L1,
        panel by panel when the tiling has panels and they are copied next
        to the tile's products (`panelled`)."""
        count = panels if panelled else 1
        for p in range(count):
            lo, hi = p * in_slices // count, (p + 1) * in_slices // count
            if band is not None:
                load_band(band, superblock, lo, hi)
            if block_in_sb is not None:
                load_weights(superblock, block_in_sb, lo, hi)

    if weights_outer:  # dense: the block's weights stay in L1 while the bands stream
        with blocks() as block:
            if units_per_core > 1:  # the weights before the bands' loop; with one band, copied beside it
                load(None, 0, block, panelled=False)
            with units() as band:
                load(band, 0, block if units_per_core == 1 else None)
                compute(band, block)
    else:  # the band stays in L1 while the blocks' weights stream
        with units() as unit:
            superblock, band = (kernel.div(unit, bands), kernel.rem(unit, bands)) if superblocks > 1 else (0, unit)
            if blocks_per_core > 1:
                load(band, superblock, None, panelled=False)
            with blocks() as block_in_sb:
                load(band if blocks_per_core == 1 else None, superblock, block_in_sb)
                compute(band, kernel.add(kernel.mul(superblock, channel_blocks), block_in_sb))

    old.erase(safe_erase=False)
