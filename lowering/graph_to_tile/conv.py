"""Convolution on the cube (`lower_conv`), and the conv kernel other
patterns reuse (`emit_conv`: a channel permutation, LRN).

x (NC1HWC0) * w (OIHW, constant, packed into FRACTAL_Z at compile time)
(+ bias, + residual, a fused activation) -> out (NC1HWC0). A tile is a band
of output rows x a block of output-channel fractals; the cores form a grid
over bands x blocks (conv_tiling.CoreGrid), each keeping one operand in L1
over its tiles: its band while the blocks' weights stream, or its block's
weights while the bands stream. Per tile, per chunk of output pixels and C1
slice of input: im2col -> L0A, weights -> L0B, mmad accumulating in L0C; then
L0C -> UB, the epilogue on the vector unit, UB -> GM. A strided conv whose
kernel is one row (pixel) tall (wide) may copy only every stride-th row
(pixel) of the map into its band.

A channel shuffle right after the conv (reshape -> channel-permuting
transpose -> reshape back) is folded into it: a permutation of its output
channels, i.e. of the weight rows (`shuffle_after`)."""

from __future__ import annotations

import dataclasses
from contextlib import contextmanager

import numpy as np
from xdsl.dialects.builtin import IntegerAttr, StringAttr, f32, i64
from xdsl.ir import Block, Operation, SSAValue
from xdsl.utils.exceptions import PassFailedException

from gedialects.graph import ops as g
from gedialects.location import describe_op
from gedialects.npu.isa import FRACTAL_BYTES
from gedialects.tile import ops as t
from lowering.legality import AI_CORE, channel_permutation, engine_of

from .activation import BufferBody, EpilogueActivation
from .builder import Index
from .context import LoweringContext
from .conv_tiling import ConvShape, band_window, choose_conv_tiling, direct_slice_pixels
from .planning import CUBE_CHANNELS
from .registry import lowers
from .slicing import channel_view, operand_maps, output_pieces, piece_maps, ranges_of
from .storage import TensorView


@lowers(g.ConvOp)
def lower_conv(ctx: LoweringContext, op: g.ConvOp) -> None:
    inputs = operand_maps(ctx, op.input)  # one map, or its channel pieces (slicing.py)
    if any(x.layout != "NC1HWC0" for x in inputs):
        raise PassFailedException(f"{describe_op(op)}: input is not NC1HWC0")
    act = (op.str_("activation", ""), op.floats("activation_params"), ctx.scale_of(op.output))
    w = ctx.constant_value(op.weight)
    if w is None:
        raise PassFailedException(f"{describe_op(op)}: weights must be constant")
    bias = ctx.constant_value(op.bias) if op.bias is not None else None
    residual = operand_maps(ctx, op.residual) if op.residual is not None else []
    scale_in, scale_out = ctx.scale_of(op.input), ctx.scale_of(op.output)
    weight_scale = scale_in / scale_out  # force_fp16 range scaling, folded into the weights as they are packed
    if bias is not None and scale_out != 1.0:
        bias = np.asarray(bias, np.float32) / scale_out
    strides = op.ints("strides", (1, 1))
    dilations = op.ints("dilations", (1, 1))
    pads = op.ints("pads", (0, 0, 0, 0))
    if strides[0] != strides[1] or dilations[0] != dilations[1]:
        raise PassFailedException(f"{describe_op(op)}: anisotropic stride/dilation not lowered")
    group = op.int_("group", 1)
    name = op.output.name_hint or "conv"

    def emit(weights, b, res: TensorView | None, out: TensorView, weight_name: str, groups: int) -> None:
        emit_conv(ctx, op, inputs, weights, b, res, act, strides[0], dilations[0], pads, out, weight_name, groups,
                  weight_scale)

    fold = shuffle_after(ctx, op) if not residual else None
    if fold is not None:
        # the channel shuffle after this conv is a permutation of its output
        # channels: permute the weight rows (groups become one dense,
        # block-diagonal-permuted conv) and write the shuffled map directly
        chan, ops, final = fold
        if group > 1:
            cout, cin_g = w.shape[:2]
            cout_g = cout // group
            dense = np.zeros((cout, cin_g * group) + w.shape[2:], np.float32)
            for gi in range(group):
                dense[gi * cout_g:(gi + 1) * cout_g, gi * cin_g:(gi + 1) * cin_g] = w[gi * cout_g:(gi + 1) * cout_g]
            w, group = dense, 1
        w = np.asarray(w)[chan]
        bias = np.asarray(bias).reshape(-1)[chan] if bias is not None else None
        out = ctx.temp_map(tuple(g.shape_of(op.output)), "conv_shuffled")
        out.storage.halo = list(ctx.plan.halos.get(ops[1].results[0], [0, 0, 0, 0]))
        ctx.values[final] = out
        ctx.folded.update(ops)
        emit(w, bias, None, out, name, group)
        return
    split = output_pieces(ctx, op, inputs, residual)
    ranges = ranges_of(residual) if len(residual) > 1 else split
    if ranges is None:  # one kernel
        out = ctx.storage_for(op.output, "NC1HWC0", "conv")
        res = residual[0] if residual else None
        if res is not None and all(res.storage is not x.storage for x in inputs):
            # the epilogue reads each residual tile where it writes the output
            # tile; a residual that is also the input is read by other tiles' windows
            ctx.overwrites[out.storage.name] = res
        emit(w, bias, res, out, name, group)
        return
    # one kernel per channel piece of the output (or of a sliced residual)
    if split is not None:
        outs = piece_maps(ctx, op.output, ranges, name)
    else:
        whole = ctx.storage_for(op.output, "NC1HWC0", "conv")
        outs = [channel_view(whole, lo, hi, ctx.c0) for lo, hi in ranges]
    for i, ((lo, hi), out) in enumerate(zip(ranges, outs)):
        res = None
        if residual:
            res = residual[i] if len(residual) > 1 else channel_view(residual[0], lo, hi, ctx.c0)
        emit(np.asarray(w)[lo:hi], None if bias is None else np.asarray(bias).reshape(-1)[lo:hi], res, out,
             f"{name}_c{lo}", group)


def shuffle_after(ctx: LoweringContext, op: g.ConvOp):
    """(channel permutation, [reshape, transpose, reshape], shuffled value)
    when op's only use is reshape -> channel-permuting transpose -> reshape
    back to op's shape, none of them a graph output; else None."""

    def only_use(v: SSAValue):
        uses = list(v.uses)
        return uses[0].operation if len(uses) == 1 else None

    r1 = only_use(op.output)
    tr = only_use(r1.results[0]) if isinstance(r1, g.ReshapeOp) else None
    if isinstance(tr, g.TransposeOp) and engine_of(tr) != AI_CORE:  # graph-partition's call
        return None
    r2 = only_use(tr.output) if isinstance(tr, g.TransposeOp) else None
    if not isinstance(r2, g.ReshapeOp):
        return None
    shape = tuple(g.shape_of(op.output))
    if len(shape) != 4 or tuple(g.shape_of(r2.results[0])) != shape or tr.output in ctx.plan.outputs:
        return None
    _, C, H, W = shape
    chan = channel_permutation(tuple(g.shape_of(tr.input)), tr.ints("perm", ()), C, H, W)
    return None if chan is None else (chan, [r1, tr, r2], r2.results[0])


# ------------------------------------------------------------ the conv kernel


def _superblocks(op: Operation, w: np.ndarray, group: int, c0: int, stored_channels: int) -> tuple[int, np.ndarray]:
    """Grouped convolution: the groups gathered into superblocks, the fewest
    groups whose outputs fill whole 16-channel fractals and whose inputs are
    whole C0 slices (depthwise: 16 channels); each superblock is a dense conv
    with block-diagonal weights over its own input slices (no split
    possible: one block-diagonal conv). When the group count is not a
    multiple of that, the last superblock is padded with empty groups if
    the input's storage holds their channels (`stored_channels`: a map's
    channels are stored in whole fractals): depthwise over 136 channels is
    nine superblocks of 16, not one dense conv of 136. Returns (superblocks,
    weights [superblock][block cout][block cin][kh][kw])."""
    cout, cin_g, kh, kw = w.shape
    if cout % group:
        raise PassFailedException(f"{describe_op(op)}: {cout} output channels in {group} groups")
    cout_g = cout // group
    if group == 1:
        return 1, w.reshape(1, cout, cin_g, kh, kw)
    per_block = group
    for n in range(1, group + 1):
        if n * cout_g % CUBE_CHANNELS == 0 and n * cin_g % c0 == 0:
            if group % n == 0 or -(-group // n) * n * cin_g <= stored_channels:
                per_block = n
                break
    superblocks = -(-group // per_block)
    block_cout, block_cin = cout_g * per_block, cin_g * per_block
    blocks = np.zeros((superblocks, block_cout, block_cin, kh, kw), np.float32)
    for gi in range(group):
        b, r = divmod(gi, per_block)
        blocks[b, r * cout_g:(r + 1) * cout_g, r * cin_g:(r + 1) * cin_g] = w[gi * cout_g:(gi + 1) * cout_g]
    return superblocks, blocks


def _pack_fractal_z(blocks: np.ndarray, in_slices: int, out_fractals: int, c0: int, scale: float,
                    dtype: type) -> np.ndarray:
    """Weights x `scale` in the order the cube's L0B wants, per superblock:
    [superblock][C1 in][kh*kw][N1][16][k0], as `dtype`. Scaled in fp32 while
    they are placed, then converted once: no weight-sized temporaries beyond
    the fp32 packing and the result (VGG-19's fc6 alone is 411 MB in fp32)."""
    superblocks, block_cout, block_cin, kh, kw = blocks.shape
    taps = kh * kw
    packed = np.zeros((superblocks, in_slices * c0, taps, out_fractals * CUBE_CHANNELS), np.float32)
    placed = blocks.astype(np.float32, copy=False).reshape(superblocks, block_cout, block_cin, taps).transpose(0, 2, 3, 1)
    np.multiply(placed, np.float32(scale), out=packed[:, :block_cin, :, :block_cout])
    order = packed.reshape(superblocks, in_slices, c0, taps, out_fractals, CUBE_CHANNELS).transpose(0, 1, 3, 4, 5, 2)
    return np.ascontiguousarray(order, dtype=dtype)


def emit_conv(ctx: LoweringContext, op: Operation, x: TensorView | list[TensorView], w: np.ndarray, bias,
              res: TensorView | None,
              act: tuple[str, tuple[float, ...], float] | Block, s: int, d: int, p, out: TensorView,
              weight_name: str = "conv", group: int = 1, weight_scale: float = 1.0, *,
              stage: Block | None = None, residual_mode: str = "add") -> None:
    """One conv kernel: x (NC1HWC0) * w (OIHW, constant) x weight_scale (+bias, +res, activation `act`:
    (kind, params, scale of out), or a map body) -> out, stride s, dilation d, pads p (ONNX order).

    `stage`: a map body applied to the input on its way to L1 (GM -> UB ->
    L1), so the conv reads f(x) that no kernel stores (LRN: x * x).
    `residual_mode`: "add" adds res before the activation (a shortcut),
    "scale" multiplies the activation's result by res (LRN: x * scale).
    x may be a map's channel pieces (slicing.py), each copied to its C1
    slices of L1."""
    inputs = x if isinstance(x, list) else [x]
    x = inputs[0]
    assert len(inputs) == 1 or (group == 1 and stage is None), "channel pieces feed dense, unstaged convs"
    cout = w.shape[0]
    kh, kw = w.shape[2], w.shape[3]
    W = x.shape[3]
    OH, OW = out.shape[2], out.shape[3]
    c0, k0 = ctx.c0, ctx.c0  # k0: the K depth of a fractal, one 32-byte block
    stored_channels = (x.storage.slices - x.first_slice) * c0 if len(inputs) == 1 else 0
    superblocks, blocks = _superblocks(op, w, group, c0, stored_channels)
    block_cin, block_cout = blocks.shape[2], blocks.shape[1]
    in_slices = -(-block_cin // c0)
    out_fractals = -(-block_cout // CUBE_CHANNELS)
    taps = kh * kw
    weights = _pack_fractal_z(blocks, in_slices, out_fractals, c0, weight_scale, np.float16 if ctx.fp16 else np.float32)
    wname = ctx.add_constant(f"{weight_name}_w", weights)
    bname = None
    if bias is not None:
        padded_bias = np.zeros(superblocks * out_fractals * CUBE_CHANNELS, np.float32)
        padded_bias[:cout] = bias
        bname = ctx.add_constant("conv_b", padded_bias)
    H = x.shape[2]
    shape = ConvShape(in_slices, out_fractals, kh, kw, OH, OW, s, d, H, W, p[0], superblocks, res is not None,
                      stage is not None)
    tiling = choose_conv_tiling(ctx, op, shape)
    if s > 1 and stage is None and (kh == 1 and p[0] == p[2] == 0 or kw == 1 and p[1] == p[3] == 0):
        # the band may hold only the rows (and pixels) the kernel reads: less
        # to move, in more DMAs; the cost model decides
        row_step = s if kh == 1 and p[0] == p[2] == 0 else 1
        col_step = s if kw == 1 and p[1] == p[3] == 0 else 1
        steps = {(row_step, 1), (1, col_step), (row_step, col_step)} - {(1, 1)}
        for rs, cs in sorted(steps):
            candidate = dataclasses.replace(shape, in_h=OH if rs > 1 else H, in_w=OW if cs > 1 else W, row_step=rs,
                                            col_step=cs, stored_h=H, stored_w=W, stride=s // rs)
            cost = choose_conv_tiling(ctx, op, candidate)
            if cost.cycles < tiling.cycles:
                shape, tiling = candidate, cost
    H_l1, W_l1 = shape.in_h, shape.in_w
    band_rows, chunk_rows, chunk_m = tiling.band_rows, tiling.chunk_rows, tiling.chunk_m
    tile_fractals, per_row = tiling.tile_fractals, tiling.chunks_per_row
    tile_channels = tile_fractals * CUBE_CHANNELS
    channel_blocks = out_fractals // tile_fractals
    bands = OH // band_rows
    grid = tiling.grid
    window = band_window(shape, band_rows)
    kernel = ctx.new_kernel(op, "conv", grid.cores)
    kernel.op.attributes["tiling"] = StringAttr(
        f"band {band_rows} rows x {tile_channels} channels, chunk {chunk_rows} rows / {chunk_m} m, {per_row} per row; "
        f"cores {grid.core_rows} x {grid.core_cols}, {grid.units_per_core} bands x {grid.blocks_per_core} blocks "
        f"each, {'weights' if grid.weights_outer else 'band'} stationary"
        + (f"; every {shape.row_step} rows, {shape.col_step} pixels" if shape.decimated else "")
        + (f"; {tiling.slices_per_mmad} slices per mmad" if tiling.slices_per_mmad else ""))
    kernel.op.attributes["predicted_cycles"] = IntegerAttr(round(tiling.cycles), i64)  # the cost model's, for benchmarks
    row_elems = W_l1 * c0  # one row of one C1 slice (the map is stored unpadded: load3d pads left and right)
    group = tiling.slices_per_mmad  # a direct 1x1 conv's C1 slices per mmad (0: im2col)
    band_elems = window.l1_rows * row_elems  # one C1 slice of the band in L1
    if group:  # whole fractals per slice, as far as the last chunk reads
        band_elems = direct_slice_pixels(band_rows, chunk_rows, chunk_m, per_row, OW) * c0
    tile_elems = tile_channels * chunk_m  # one chunk of output in L0C / UB
    w_row = tile_channels * k0  # weight elements of one tap of the tile
    l1_in = kernel.alloc("l1", in_slices * band_elems, "NC1HWC0")
    l1_w = kernel.alloc("l1", in_slices * taps * w_row, "FRACTAL_Z")
    k_blocks = group or tiling.part_taps  # blocks of K per mmad
    l0a = kernel.alloc("l0a", chunk_m * k_blocks * k0, "ZZ", buffers=2)
    l0b = kernel.alloc("l0b", k_blocks * w_row, "ZN", buffers=2)
    l0c = kernel.alloc("l0c", tile_elems, "NZ", elem=f32)
    ub_out = kernel.alloc("ub", tile_elems, "NZ")
    ub_res = kernel.alloc("ub", tile_elems, "NZ") if res is not None else None
    ub_bias = kernel.alloc("ub", tile_channels, "ND") if bname else None
    activation = BufferBody(kernel, act) if isinstance(act, Block) else EpilogueActivation(kernel, *act)
    staging = None
    if stage is not None:
        staging = (BufferBody(kernel, stage), kernel.alloc("ub", window.count * row_elems, "NC1HWC0", buffers=2))
    input_gms = [kernel.gm(piece.storage.name) for piece in inputs]
    in_gm, w_gm, out_gm = input_gms[0], kernel.gm(wname), kernel.gm(out.storage.name)
    slices_per_fractal = CUBE_CHANNELS // c0

    def accumulate(c1: Index, first: bool, in_offset: Index, qi: int) -> None:
        """C1 slice c1 of chunk qi of the current rows into L0C, one mmad per K part."""
        for pi, (r0, part_rows) in enumerate(tiling.row_parts):
            chunk_in_rows = (chunk_rows - 1) * shape.stride + d * (part_rows - 1) + 1
            params = [chunk_in_rows, W_l1, part_rows, kw, shape.stride, s // shape.col_step, 0, 0, p[1], p[3], d, d,
                      qi * chunk_m, chunk_m]
            src = kernel.at(l1_in, (window.lead + r0 * d) * row_elems, kernel.add(in_offset, kernel.mul(c1, band_elems)))
            kernel.emit(t.Im2colOp(l0a, src, params))
            w_l1 = kernel.at(l1_w, r0 * kw * w_row, kernel.mul(c1, taps * w_row))
            kernel.emit(t.LoadFractalOp(l0b, w_l1, part_rows * kw * tile_fractals))
            kernel.emit(t.MatmulOp(l0c, l0a, l0b, chunk_m, tile_channels, part_rows * kw * k0, not (first and pi == 0)))

    fractal_elems = FRACTAL_BYTES // ctx.elem_bytes

    def accumulate_direct(g: Index, first: bool, in_offset: Index, qi: int) -> None:
        """Slices [g * group, (g + 1) * group) of chunk qi into L0C: A's
        fractals as they lie in L1 (16 pixels of a slice each; per 16 pixels
        one load of the group's slices, `band_elems` apart, into a row of
        ZZ fractals), the group's weights in one load, one mmad."""
        first_slice = kernel.add(in_offset, kernel.mul(g, group * band_elems))
        for mi in range(chunk_m // 16):
            kernel.emit(t.LoadFractalOp(kernel.at(l0a, mi * group * fractal_elems),
                                        kernel.at(l1_in, (qi * chunk_m + mi * 16) * c0, first_slice), group,
                                        band_elems // fractal_elems))
        kernel.emit(t.LoadFractalOp(l0b, kernel.at(l1_w, 0, kernel.mul(g, group * w_row)), group * tile_fractals))
        kernel.emit(t.MatmulOp(l0c, l0a, l0b, chunk_m, tile_channels, group * k0, not first))

    ub_zeros = None
    if window.top or window.bottom:  # a row of zeros in UB, for the padding rows (MTE3, beside MTE2's copies)
        ub_zeros = kernel.alloc("ub", row_elems, "ND")
        kernel.emit(t.DupOp(ub_zeros, row_elems, 0.0))

    def zero_rows(lower: Index, upper: Index) -> None:
        """Window rows [lower, upper) of every C1 slice in L1 <- 0 (padding)."""
        with kernel.loop(lower, upper) as row:
            kernel.copy(kernel.at(l1_in, window.lead * row_elems, kernel.mul(row, row_elems)),
                        ub_zeros, [in_slices, row_elems], [band_elems, 1], [0, 1])

    def load_band(band: Index, superblock: Index) -> None:
        """The band's window of input rows -> L1: `window.count` stored rows
        from the window's first row clamped into the map, then zeros for the
        window's rows above or below the map (padding; only edge bands have
        any: the loops run no iteration elsewhere)."""
        first = kernel.add(kernel.mul(band, band_rows * shape.stride), -p[0])  # the window's first row, maybe < 0
        src_row = kernel.min(kernel.max(first, 0), H_l1 - window.count)
        dst_row = kernel.add(kernel.add(src_row, kernel.mul(first, -1)), window.lead)  # its row in l1_in
        dst = kernel.mul(dst_row, row_elems)
        if staging is None:
            first_slice = 0
            for piece, piece_gm in zip(inputs, input_gms):  # one copy per map the input is held in
                slices = min(-(-piece.shape[1] // c0), in_slices - first_slice)
                stored_row = piece.storage.padded_w * c0
                src = kernel.add(kernel.mul(src_row, shape.row_step * stored_row),
                                 kernel.mul(superblock, (block_cin // c0) * piece.slice_stride(c0)))
                # a row's pixels: contiguous, or every col_step-th (a burst each)
                pixels = ([row_elems], [1], [1]) if shape.col_step == 1 else ([W_l1, c0], [c0, 1], [shape.col_step * c0, 1])
                kernel.copy(kernel.at(l1_in, first_slice * band_elems, dst),
                            kernel.at(piece_gm, piece.origin(c0), src),
                            [slices, window.count, *pixels[0]], [band_elems, row_elems, *pixels[1]],
                            [piece.slice_stride(c0), shape.row_step * stored_row, *pixels[2]])
                first_slice += slices
        else:  # slice by slice through UB, where the stage's map body runs
            body, ub_stage = staging
            src = kernel.add(kernel.mul(src_row, x.storage.padded_w * c0),
                             kernel.mul(superblock, (block_cin // c0) * x.slice_stride(c0)))
            with kernel.loop(0, in_slices, pipeline=True) as c1:
                kernel.copy(ub_stage, kernel.at(in_gm, x.origin(c0), kernel.add(src, kernel.mul(c1, x.slice_stride(c0)))),
                            [window.count, row_elems], [row_elems, 1], [x.storage.padded_w * c0, 1])
                body.apply(ub_stage, window.count * row_elems)
                kernel.copy(kernel.at(l1_in, 0, kernel.add(dst, kernel.mul(c1, band_elems))), ub_stage,
                            [window.count * row_elems], [1], [1])
        if window.top:
            zero_rows(0, kernel.min(kernel.max(kernel.mul(first, -1), 0), window.rows))
        if window.bottom:
            zero_rows(kernel.min(kernel.max(kernel.add(kernel.mul(first, -1), H_l1), 0), window.rows), window.rows)

    def gm_tile(view: TensorView, block: Index, oy: Index, m0: int):
        """(address, strides) of the chunk's tile of a map: [n1][half][rows][cols][c0]."""
        stride = view.slice_stride(c0)
        strides = [slices_per_fractal * stride, stride, view.storage.padded_w * c0, c0, 1]
        offset = kernel.add(kernel.mul(block, tile_fractals * slices_per_fractal * stride),
                            kernel.mul(oy, view.storage.padded_w * c0))
        return view.origin(c0) + m0 * c0, offset, strides

    def epilogue(block: Index, oy: Index, qi: int) -> None:
        """L0C -> UB (in the storage type), + bias, + residual, activation, UB -> GM."""
        kernel.copy(ub_out, l0c, [tile_elems], [1], [1], cast=ctx.fp16)
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
            kernel.copy(ub_res, kernel.at(kernel.gm(res.storage.name), start, offset), shape, ub_strides, strides)
        if res is not None and residual_mode == "add":
            kernel.vec("add", ub_out, [ub_out, ub_res], [tile_elems], [[1], [1], [1]])
        activation.apply(ub_out, tile_elems)
        if res is not None and residual_mode == "scale":
            kernel.vec("mul", ub_out, [ub_out, ub_res], [tile_elems], [[1], [1], [1]])
        start, offset, strides = gm_tile(out, block, oy, m0)
        kernel.copy(kernel.at(out_gm, start, offset), ub_out, shape, strides, ub_strides)

    core = kernel.block_idx() if grid.cores > 1 else 0

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
    core_row = core if grid.core_cols == 1 else kernel.div(core, grid.core_cols) if grid.core_rows > 1 else 0
    core_col = core if grid.core_rows == 1 else kernel.rem(core, grid.core_cols) if grid.core_cols > 1 else 0

    def units():
        return share(core_row, grid.units_per_core, bands * superblocks)

    def blocks():
        return share(core_col, grid.blocks_per_core, channel_blocks)

    def load_weights(superblock: Index, block_in_sb: Index) -> None:
        w_offset = kernel.add(kernel.mul(superblock, in_slices * taps * out_fractals * CUBE_CHANNELS * k0),
                              kernel.mul(block_in_sb, w_row))
        kernel.copy(l1_w, kernel.at(w_gm, 0, w_offset), [in_slices * taps, w_row], [w_row, 1],
                    [out_fractals * CUBE_CHANNELS * k0, 1])

    def compute(band: Index, block: Index) -> None:
        """One tile, its band and weights in L1: chunk by chunk into L0C, then the epilogue."""
        if ub_bias is not None:
            kernel.copy(ub_bias, kernel.at(kernel.gm(bname), 0, kernel.mul(block, tile_channels)), [tile_channels], [1], [1])
        with kernel.loop(0, band_rows // chunk_rows) as chunk:
            in_offset = kernel.mul(chunk, chunk_rows * shape.stride * row_elems)
            oy = kernel.add(kernel.mul(band, band_rows), kernel.mul(chunk, chunk_rows))
            for qi in range(per_row):
                step, steps = (accumulate_direct, in_slices // group) if group else (accumulate, in_slices)
                step(0, True, in_offset, qi)
                if steps > 1:
                    with kernel.loop(1, steps, 1, pipeline=True) as k:
                        step(k, False, in_offset, qi)
                epilogue(block, oy, qi)

    if grid.weights_outer:  # dense: the block's weights stay in L1 while the bands stream
        with blocks() as block:
            load_weights(0, block)
            with units() as band:
                load_band(band, 0)
                compute(band, block)
    else:  # the band stays in L1 while the blocks' weights stream
        with units() as unit:
            superblock, band = (kernel.div(unit, bands), kernel.rem(unit, bands)) if superblocks > 1 else (0, unit)
            load_band(band, superblock)
            with blocks() as block_in_sb:
                load_weights(superblock, block_in_sb)
                compute(band, kernel.add(kernel.mul(superblock, channel_blocks), block_in_sb))
