"""Split-K for convs (tile-split-reduction's conv half): a conv over many
input channels at a small map (ResNet-50's 2,048 -> 512 1x1 at 7x7) gives
each core its tile's whole K -- every input channel of its band and of its
weights -- to read, so the cores' own GM paths bound it. With K in R runs
of whole C1 slices the kernel becomes two:

    partials  the conv as a grouped conv of R groups (superblocks): group r
              is the conv over the r-th run of input slices, so a core
              reads only its run's channels and weights. The packed weights
              need no change: FRACTAL_Z [1][C1][taps][N1][16][c0] is
              [R][C1 / R][taps][N1][16][c0] byte for byte. Its R results,
              C_out channels each, go to an internal NC1HWC0 workspace of
              R x C_out channels in the maps' type (the conv's L0C -> UB
              path casts as it always does), no bias, residual or epilogue;
    sum       a tile.elementwise adding the R partials in slice order in
              fp32 (on fp16 maps: one rounding per partial, then fp32
              adds), then the bias and the residual, cast to the maps'
              type, then the conv's epilogue body, into the conv's output.

The result does not depend on which core finished first (no atomic adds:
CANN's deterministic split-K). force_fp16 has headroom for the partials:
a scaled map's calibrated values lie under 2^8, fp16 holds 2^16
(lowering/fp16_scaling.py). Whether to split and in how many runs is the
cost models' (tile-select-tiling's: the conv's and the elementwise
kernel's), and the two kernels keep the tilings that were costed.
"""

from __future__ import annotations

import dataclasses
import logging

from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerAttr, StringAttr, TensorType, f32, i64
from xdsl.ir import Block, Region, SSAValue

from gedialects.npu.isa import BLOCK_BYTES
from gedialects.npu.ops import SPLIT_K_SUM_KIND
from gedialects.tile import ops as t
from gedialects.tile import structured as st
from gedialects.tile.conv import ConvOp, ConvTilingAttr, MapViewAttr
from gedialects.tile.elementwise import ElementwiseOp, ElementwiseTilingAttr
from gedialects.tile.map_kernels import map_kernel_op
from gedialects.tile.structured import YieldOp
from gedialects.tile.transforms.conv_tiling import (
    CUBE_CHANNELS,
    conv_shape,
    conv_target,
    conv_tiling_attr,
    conv_within,
    select_conv_tiling,
)
from gedialects.tile.transforms.elementwise_tiling import body_signature, select_elementwise_tiling
from gedialects.tile.transforms.ub_buffers import TilingError, elem_bytes
from target.config import TargetConfig

log = logging.getLogger("gedialects.lowering")

MAX_SLICES = 8
"""The most K runs tried: the sum kernel reads every run's partials."""
MIN_GAIN = 0.15
"""A split is taken when its two kernels are predicted at least this much
faster than the conv whole: the conv cost model over-predicts some 1x1
convs at 13-14x14 by 15-25% (squeezenet's fire squeezes, GoogLeNet's
reductions in fp32), which makes their splits look better than they run.
On the light models' convs in both modes, single stream: at 10% 8 of 268
splits ran slower (squeezenet fp32 92 cycles slower overall), at 15% 2 of
223 (42 cycles), for 382k of the 460k cycles the 10% splits saved."""
IDLE_CORES_WITH_PEER = 0.75
"""A conv with a peer on another stream (`plan_conv_split`'s has_peer) stays
whole when its tiling takes fewer than this share of the cube cores: the
peer runs on the rest (ResNet-50's projections and the convs beside them
take 28 or 32 of 32, GoogLeNet's small branch convs far fewer)."""


@dataclasses.dataclass(frozen=True)
class Split:
    """A split of one kernel (a product's or a conv's, split_reduction.py):
    the two kernels (tilings chosen), its workspace and the cycles the cost
    models predict for the two."""

    partials: t.KernelOp
    total: t.KernelOp
    workspace: t.TensorOp
    cycles: int


def slice_counts(in_slices: int) -> list[int]:
    """K run counts to try: divisors of the input's C1 slices."""
    return [r for r in range(2, MAX_SLICES + 1) if in_slices % r == 0]


def splittable(kernel: t.KernelOp) -> ConvOp | None:
    """The kernel's tile.conv if split-K can rewrite it: one dense conv
    (one superblock) of one input map whose channels fill whole C1 slices
    (a run of slices is a run of channels), no stage, a residual (if any) added."""
    conv = map_kernel_op(kernel)
    if not isinstance(conv, ConvOp):
        return None
    if conv.int_("superblocks") != 1 or len(conv.inputs) != 1 or conv.stage.blocks or conv.mode() != "add":
        return None
    c0 = BLOCK_BYTES // elem_bytes(_element(conv))
    if conv.int_("block_in_channels") != conv.int_("in_slices") * c0:
        return None
    if any(not isinstance(op, ConvOp | t.GmOp) for op in kernel.body.block.ops):
        return None
    return conv


def _gm(kernel: t.KernelOp, ref: SSAValue) -> SSAValue:
    """A reference in `kernel` to the GM tensor `ref` (of another kernel) names."""
    name = t.gm_tensor_of(ref)
    assert name is not None, "tile.conv operands are tile.gm references"
    return _add(kernel, t.GmOp(name, ref.type.element))  # type: ignore[attr-defined]


def _add(kernel: t.KernelOp, op: t.GmOp) -> SSAValue:
    kernel.body.block.add_op(op)
    return op.result


def _element(conv: ConvOp):
    return conv.output.type.element  # type: ignore[attr-defined]


def _workspace_views(conv: ConvOp, slices: int) -> tuple[MapViewAttr, list[MapViewAttr]]:
    """The workspace as the partials' output ([N, R x C_out, H, W], no halo;
    each group's channels in whole 16-channel fractals, as the grouped conv
    writes them: SqueezeNet's 1,000 classes take 1,008) and as the R maps
    the sum reads (run r's channels)."""
    n, cout, h, w = conv.output_view.dims
    group = conv.int_("out_fractals") * CUBE_CHANNELS
    c0 = BLOCK_BYTES // elem_bytes(_element(conv))
    slice_stride = h * w * c0
    whole = MapViewAttr((n, slices * group, h, w), 0, slice_stride, w)
    return whole, [MapViewAttr((n, cout, h, w), r * (group // c0) * slice_stride, slice_stride, w) for r in range(slices)]


def _partials_kernel(kernel: t.KernelOp, conv: ConvOp, slices: int, workspace: str) -> t.KernelOp:
    """The kernel with its conv as R groups over runs of its input slices, into the workspace."""
    out = t.KernelOp(kernel.sym_name.data, 1)
    out.attributes.update(kernel.attributes)
    whole, _ = _workspace_views(conv, slices)
    x = _gm(out, conv.inputs[0])
    weights = _gm(out, conv.weights)
    ws = _add(out, t.GmOp(workspace, _element(conv)))
    in_slices = conv.int_("in_slices") // slices
    out.body.block.add_op(ConvOp(
        [(x, conv.views()[0])], weights, (ws, whole), kernel_size=conv.ints("kernel_size"), stride=conv.int_("stride"),
        dilation=conv.int_("dilation"), pads=conv.ints("pads"), in_slices=in_slices,
        out_fractals=conv.int_("out_fractals"), superblocks=slices,
        block_in_channels=conv.int_("block_in_channels") // slices))
    return out


def _sum_kernel(kernel: t.KernelOp, conv: ConvOp, slices: int, workspace: str) -> t.KernelOp:
    """The R partials added in slice order (fp32), the bias and the residual,
    then the conv's epilogue, into the conv's output."""
    out = t.KernelOp(f"{kernel.sym_name.data}_sum", 1)
    out.attributes.update(kernel.attributes)
    out.attributes["kind"] = StringAttr(SPLIT_K_SUM_KIND)
    element = _element(conv)
    _, runs = _workspace_views(conv, slices)
    ws = _add(out, t.GmOp(workspace, element))
    inputs: list[tuple[SSAValue, MapViewAttr]] = [(ws, view) for view in runs]
    if conv.bias is not None:  # C values broadcast over the pixels
        inputs.append((_gm(out, conv.bias), MapViewAttr((1, conv.output_view.dims[1], 1, 1), 0, BLOCK_BYTES // elem_bytes(element), 1)))
    if conv.residual is not None:
        inputs.append((_gm(out, conv.residual), conv.residual_view))  # type: ignore[arg-type]
    body = Block(arg_types=[element] * len(inputs))
    wide = element != f32

    def widened(v: SSAValue) -> SSAValue:
        return _scalar(body, arith.ExtFOp(v, f32)) if wide else v

    total = widened(body.args[0])
    for arg in body.args[1:]:  # slice order, then bias, then residual: the same sum on every run
        total = _scalar(body, arith.AddfOp(total, widened(arg)))
    result = _scalar(body, arith.TruncFOp(total, element)) if wide else total
    if conv.epilogue.blocks:  # the conv's activation, on the value its epilogue would have seen
        epilogue = conv.epilogue.clone().block
        yielded = epilogue.last_op
        assert isinstance(yielded, YieldOp)
        epilogue.args[0].replace_all_uses_with(result)
        for op in list(epilogue.ops)[:-1]:
            op.detach()
            body.add_op(op)
        result = yielded.operands[0]
    body.add_op(YieldOp([result]))
    output = _gm(out, conv.output)
    out.body.block.add_op(ElementwiseOp(inputs, [(output, conv.output_view)], Region(body)))
    return out


def _sum_key(conv: ConvOp) -> tuple:
    """What a sum kernel's code depends on besides its run count: the
    output's and the residual's views, the bias, the epilogue and the maps' type."""
    def geometry(view: MapViewAttr | None) -> tuple:  # not where it lies: a tile's work does not depend on it
        return () if view is None else (view.dims, view.slice_stride.data, view.padded_w.data)

    epilogue = body_signature(conv.epilogue.block) if conv.epilogue.blocks else ()
    return (geometry(conv.output_view), geometry(conv.residual_view), conv.bias is not None, epilogue,  # type: ignore[arg-type]
            str(_element(conv)))


def _sum_floor(conv: ConvOp, slices: int, config: TargetConfig) -> int:
    """Fewer cycles than the cost model can predict for the sum kernel: the
    maps it reads (the partials, the residual) spread over the vector cores,
    at the GM -> UB path's rate, in one copy each."""
    n, cout, h, w = conv.output_view.dims
    maps = slices + (conv.residual is not None)
    cores = config.cores_for(uses_cube=False)
    return config.dma_cycles("gm_ub", maps * n * cout * h * w * elem_bytes(_element(conv)) // cores, cores)


def _scalar(block: Block, op) -> SSAValue:
    block.add_op(op)
    return op.result


def plan_conv_split(kernel: t.KernelOp, config: TargetConfig, taken: set[str], sum_tilings: dict,
                    has_peer: bool) -> Split | None:
    """The cheapest split of a conv kernel's K, if it beats the kernel whole
    by MIN_GAIN, else None. `sum_tilings`: the sum kernels' tilings priced so far in the
    program, by `_sum_key` (convs alike share them). `has_peer`: another
    kernel may run beside this one on a stream; then a conv whose tiling
    leaves cores idle (IDLE_CORES_WITH_PEER) stays whole: the cost models
    price a kernel on cores of its own, but the partials would take the
    peer's cores and the sum kernel waits for them (an Inception block's
    small branch convs ran slower split)."""
    conv = splittable(kernel)
    name = f"{kernel.sym_name.data}_partials"
    if conv is None or name in taken:
        return None
    counts = slice_counts(conv.int_("in_slices"))
    if not counts:
        return None
    try:
        whole_tiling = select_conv_tiling(conv, config)
    except TilingError:
        return None  # tile-select-tiling reports it
    if has_peer and whole_tiling.block_dim < IDLE_CORES_WITH_PEER * config.cube_cores:
        return None
    whole = whole_tiling.cycles.data
    best: tuple[int, int, ConvTilingAttr, ElementwiseTilingAttr] | None = None  # cycles, runs, the two tilings
    costs = [f"whole {whole}"]
    target, shape, pads = conv_target(conv, config), conv_shape(conv), conv.ints("pads")
    for slices in counts:
        limit = best[0] if best is not None else whole * (1 - MIN_GAIN)
        # cheapest questions first: the sum kernel's floor, then whether the partials fit what
        # that leaves (conv_within: cheap when not), then the sum kernel's prediction and the
        # partials within what it leaves; the partials' tiling is searched in full for those left,
        # and the two kernels are built for the winner only
        grouped = dataclasses.replace(shape, in_slices=shape.in_slices // slices, superblocks=slices, residual=False)
        floor = _sum_floor(conv, slices, config)
        if floor >= limit or not conv_within(target, grouped, pads, limit - floor):
            costs.append(f"{slices} runs over {round(limit) - floor} + over {floor}")
            continue
        key = (slices, *_sum_key(conv))
        sum_tiling = sum_tilings.get(key)
        if sum_tiling is None:
            try:
                sum_tiling = select_elementwise_tiling(map_kernel_op(_sum_kernel(kernel, conv, slices, name)),  # type: ignore[arg-type]
                                                       config)
            except TilingError:
                continue
            sum_tilings[key] = sum_tiling
        if not conv_within(target, grouped, pads, limit - sum_tiling.cycles.data):
            costs.append(f"{slices} runs over {round(limit) - sum_tiling.cycles.data} + {sum_tiling.cycles.data}")
            continue
        conv_tiling = conv_tiling_attr(target, grouped, pads)
        cycles = conv_tiling.cycles.data + sum_tiling.cycles.data
        costs.append(f"{slices} runs {conv_tiling.cycles.data} + {sum_tiling.cycles.data}")
        if cycles < limit:
            best = (cycles, slices, conv_tiling, sum_tiling)
    log.debug("tile-split-reduction: @%s (conv, %d input slices) predicted cycles: %s", kernel.sym_name.data,
              conv.int_("in_slices"), ", ".join(costs))
    if best is None:
        return None
    cycles, slices, conv_tiling, sum_tiling = best
    partials, total = _partials_kernel(kernel, conv, slices, name), _sum_kernel(kernel, conv, slices, name)
    partials.attributes[st.TILING_ATTR] = conv_tiling
    total.attributes[st.TILING_ATTR] = sum_tiling
    whole_view, _ = _workspace_views(conv, slices)
    n, channels, h, w = whole_view.dims
    c0 = BLOCK_BYTES // elem_bytes(_element(conv))
    workspace = t.TensorOp(properties={
        "name": StringAttr(name), "kind": StringAttr("internal"), "offset": IntegerAttr(0, i64),
        "type": TensorType(_element(conv), [n, channels // c0, h, w, c0]), "layout": StringAttr("NC1HWC0")})
    return Split(partials, total, workspace, cycles)
