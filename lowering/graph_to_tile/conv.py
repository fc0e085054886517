"""Convolution on the cube (`lower_conv`), and the conv kernel other
patterns reuse (`emit_conv`: a channel permutation, LRN).

x (NC1HWC0) * w (OIHW, constant, packed into FRACTAL_Z at compile time)
(+ bias, + residual, a fused activation) -> out (NC1HWC0): one kernel holding
a `tile.conv` (gedialects/tile/conv.py). How it is tiled, spread over the
cores and expanded into loops is the tile level's: tile-select-tiling
(gedialects/tile/transforms/conv_tiling.py), tile-distribute,
tile-expand-structured (expand_conv.py).

A channel shuffle right after the conv (reshape -> channel-permuting
transpose -> reshape back) is folded into it: a permutation of its output
channels, i.e. of the weight rows (`shuffle_after`)."""

from __future__ import annotations

import dataclasses

import numpy as np
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import PassFailedException

from gedialects.graph import ops as g
from gedialects.graph.fusion.helpers import absorbed_attr
from gedialects.location import describe_op
from gedialects.tile.conv import ConvOp
from gedialects.tile.transforms.conv_tiling import ConvShape, ConvTarget, choose_conv_tiling, conv_tiling_within
from gedialects.tile.transforms.ub_buffers import TilingError
from lowering.fp16_scaling import to_fp16
from lowering.legality import AI_CORE, channel_permutation, engine_of
from lowering.map_bodies import activation_block

from .context import LoweringContext
from .elementwise import ElementwiseBody, build_body, emit_elementwise, stage_map, stage_size
from .planning import CUBE_CHANNELS
from .registry import lowers
from .slicing import channel_view, operand_maps, output_pieces, piece_maps, ranges_of
from .storage import TensorView, map_view


@lowers(g.ConvOp)
def lower_conv(ctx: LoweringContext, op: g.ConvOp) -> None:
    # an elementwise op only this conv reads is its stage, when the cost model says so: the conv reads that
    # op's map (elementwise.stage_conv); otherwise that op is a kernel of its own, lowered here, before the conv
    stage = ctx.staged.pop(op.input, None)
    if stage is not None and not stage_pays(ctx, op, stage):
        emit_elementwise(ctx, stage)
        stage = None
    inputs = operand_maps(ctx, stage_map(ctx, stage) if stage is not None else op.input)  # one map, or its pieces
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
                  weight_scale, stage=stage)

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
    return to_fp16(order) if dtype == np.float16 else np.ascontiguousarray(order, dtype=dtype)


def stage_pays(ctx: LoweringContext, op: g.ConvOp, stage: Operation) -> bool:
    """Whether conv `op` computing elementwise op `stage` on its input's way to L1 costs fewer cycles than
    `stage` as a kernel of its own: the conv cost model's busiest core, staged against plain, against that
    kernel's GM traffic (its map in and out, spread over the cores; its vector work goes beside). Staging
    repeats the work wherever the conv loads a band again (several channel blocks per band, a grid's
    columns): DenseNet's 1x1 convs after a concat gain, its transitions' convs (a band per 8 cores) lose."""
    (x,) = operand_maps(ctx, stage_map(ctx, stage))
    _, cin, in_h, in_w = x.shape
    _, cout, out_h, out_w = g.shape_of(op.output)
    w = ctx.constant_value(op.weight)
    if w is None:  # not lowered (lower_conv says why)
        return False
    es = 2 if ctx.fp16 else 4
    target = ConvTarget(ctx.config, es)
    plain = ConvShape(-(-cin // ctx.c0), -(-cout // CUBE_CHANNELS), w.shape[2], w.shape[3], out_h, out_w,
                      op.ints("strides", (1, 1))[0], op.ints("dilations", (1, 1))[0], in_h, in_w,
                      op.ints("pads", (0, 0, 0, 0))[0], 1, op.residual is not None)
    ops, vectors = stage_size(ctx, stage)  # as select-tiling will see them: one search, cached, for both
    staged = dataclasses.replace(plain, staged=True, stage_ops=ops, stage_vectors=vectors)
    try:
        staged_cycles = choose_conv_tiling(target, staged).cycles
    except TilingError:
        return False
    cores = ctx.config.cube_cores
    map_bytes = x.storage.slices * in_h * in_w * ctx.c0 * es // cores
    kernel_cycles = ctx.config.dma_cycles("gm_ub", map_bytes, cores) + ctx.config.dma_cycles("ub_gm", map_bytes, cores)
    # staging pays unless the plain conv costs at most the staged one less the kernel; when it pays, the
    # plain conv's full search (which select-tiling will not ask for) is not run
    return not conv_tiling_within(target, plain, staged_cycles - kernel_cycles)


def emit_conv(ctx: LoweringContext, op: Operation, x: TensorView | list[TensorView], w: np.ndarray, bias,
              res: TensorView | None,
              act: tuple[str, tuple[float, ...], float] | Block, s: int, d: int, p, out: TensorView,
              weight_name: str = "conv", group: int = 1, weight_scale: float = 1.0, *,
              stage: Block | Operation | None = None, residual_mode: str = "add") -> None:
    """One conv kernel: x (NC1HWC0) * w (OIHW, constant) x weight_scale (+bias, +res, activation `act`:
    (kind, params, scale of out), or a map body) -> out, stride s, dilation d, pads p (ONNX order).

    `stage`: a map body applied to the input on its way to L1 (GM -> UB ->
    L1), so the conv reads f(x) that no kernel stores (LRN: x * x), or the
    elementwise op whose map x is (elementwise.stage_conv), its body built
    here with its per-channel constants as the stage's operands.
    `residual_mode`: "add" adds res before the activation (a shortcut),
    "scale" multiplies the activation's result by res (LRN: x * scale).
    x may be a map's channel pieces (slicing.py), each copied to its C1
    slices of L1."""
    inputs = x if isinstance(x, list) else [x]
    x = inputs[0]
    assert len(inputs) == 1 or (group == 1 and stage is None), "channel pieces feed dense, unstaged convs"
    cout = w.shape[0]
    kh, kw = w.shape[2], w.shape[3]
    c0 = ctx.c0
    stored_channels = (x.storage.slices - x.first_slice) * c0 if len(inputs) == 1 else 0
    superblocks, blocks = _superblocks(op, w, group, c0, stored_channels)
    block_cin, block_cout = blocks.shape[2], blocks.shape[1]
    in_slices = -(-block_cin // c0)
    out_fractals = -(-block_cout // CUBE_CHANNELS)
    weights = _pack_fractal_z(blocks, in_slices, out_fractals, c0, weight_scale, np.float16 if ctx.fp16 else np.float32)
    wname = ctx.add_constant(f"{weight_name}_w", weights)
    bname = None
    if bias is not None:
        padded_bias = np.zeros(superblocks * out_fractals * CUBE_CHANNELS, np.float32)
        padded_bias[:cout] = bias
        bname = ctx.add_constant("conv_b", padded_bias)
    kernel = ctx.new_kernel(op, "conv", 1)  # tile-distribute sets its cores from the tiling
    stage_inputs: list = []
    if isinstance(stage, Operation):
        kernel.op.attributes["absorbed"] = absorbed_attr([stage, op])  # the profile names both ops' model nodes
        body = ElementwiseBody(ctx, kernel, tuple(g.shape_of(stage.results[0])))
        body.own_input(stage_map(ctx, stage))  # the stage's first argument: the conv's input element
        stage = body.finish(build_body(ctx, stage, body)).detach_block(0)
        stage_inputs = body.inputs
    epilogue = act if isinstance(act, Block) else activation_block(act[0], act[1], ctx.elem, act[2]) if act[0] else None
    conv = ConvOp(
        [(kernel.gm(piece.storage.name), map_view(piece, c0)) for piece in inputs], kernel.gm(wname),
        (kernel.gm(out.storage.name), map_view(out, c0)), kernel_size=(kh, kw), stride=s, dilation=d, pads=p,
        in_slices=in_slices, out_fractals=out_fractals, superblocks=superblocks, block_in_channels=block_cin,
        bias=kernel.gm(bname) if bname is not None else None,
        residual=(kernel.gm(res.storage.name), map_view(res, c0)) if res is not None else None,
        residual_mode=residual_mode, epilogue=Region(epilogue) if epilogue is not None else None,
        stage=Region(stage) if stage is not None else None, stage_inputs=stage_inputs)
    kernel.emit(conv)
