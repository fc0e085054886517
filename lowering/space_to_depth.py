"""conv-space-to-depth: a strided conv whose input has few channels (an image
stem: 3 channels, stride 2) reads its input space-to-depth.

The cube multiplies K in whole blocks of c0 channels (16 in fp16, 8 in fp32)
and the conv's input map is stored with its channels padded to c0: a
3-channel image costs 16/3 of its bytes in the map and 16/3 of its MACs in
the cube (ResNet-50's 7x7 stride-2 stem: 784 products per output where 147
are real, its input map 1.69 MB for 0.3 MB of pixels). Folding each s x s
cell of pixels into channels (TPU's and MLPerf's space-to-depth stem;
Ascend's small-channel "C04" stem answers the same problem) gives s*s*C
channels at 1/s of the resolution and a stride-1 conv with a kernel of
ceil(k/s) cells:

    x' = space_to_depth(x) [N, s*s*C, H/s, W/s]: x'[(dy, dx, c), i, j] = x[c, s*i + dy, s*j + dx]
    y[o, i, j] = sum over (dy, dx, c), u, v of w'[o, (dy, dx, c), u, v] x'[(dy, dx, c), i - P + u, j - P + v]

with the original kernel shifted into the cells by z = s*P - pad zero taps
(P = ceil(pad / s) cells of padding; a bottom/right padding that makes the
output size the original's). The weight is rearranged at compile time; the
values are the same sums, in another order. ResNet-50's stem: 4x4 taps of
16 channels (12 real), 256 products per output, its input map 0.42 MB.

A conv is rewritten when its K in whole blocks shrinks: 2-D, one group,
no dilation, equal strides above 1, H and W multiples of the stride, a
constant weight, no fused residual, the rearranged conv's output the same
size with no negative padding, an input of at least MIN_PIXELS, and a
space_to_depth the AI core lowers (the legality table's
space_to_depth_refusal: batch 1, cells of at most 16 pixels).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.dialects.builtin import IntegerAttr, i64
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern

from gedialects.graph import ops as g
from gedialects.graph.constants import constant_2d_window, materialize
from gedialects.instrumentation import statistic
from gedialects.location import describe_op, node_name
from gedialects.npu.isa import BLOCK_BYTES
from lowering.graph_to_tile.precision import DEFAULT_PRECISION, check_precision_mode
from lowering.legality import space_to_depth_refusal

log = logging.getLogger("gedialects.space_to_depth")

MIN_PIXELS = 128 * 128
"""Smallest input (H x W) rewritten. Measured on davinci-910 (session 11,
the rewrite applied to every model): the 224x224
stems of the light models run 2-18% fewer cycles in all; the 32x32 and
64x64 images of the zoo's CNNs 0.2-5% more (ViT's 4x4 patches: the
space-to-depth kernel 7,861 cycles against the plain transdata's 762), as
the kernel's cost per block (its s picking products, s x s loads per
chunk) outweighs a small conv's saved products."""


def block_k(channels: int, taps: int, c0: int) -> int:
    """A conv's K as the cube multiplies it: taps x channels in whole blocks of c0."""
    return taps * math.ceil(channels / c0) * c0


def cells(pad_begin: int, kernel: int, stride: int, extent: int, out: int) -> tuple[int, int, int, int] | None:
    """Along one dim: (leading zero taps z, kernel cells, padding cells
    before and after) of the space-to-depth conv, or None if its output
    would differ."""
    before = math.ceil(pad_begin / stride)
    zeros = stride * before - pad_begin
    kernel_cells = math.ceil((zeros + kernel) / stride)
    after = out - 1 + kernel_cells - extent // stride - before
    return (zeros, kernel_cells, before, after) if after >= 0 else None


class ConvSpaceToDepth(RewritePattern):
    def __init__(self, c0: int):
        super().__init__()
        self.c0 = c0

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, g.ConvOp) or op.residual is not None or op.int_("group", 1) != 1:
            return
        window = constant_2d_window(op)
        if window is None:
            return
        (n, c, h, w), out, weight, strides, pads, dilations = window
        o, _, kh, kw = weight.shape
        s = strides[0]
        if s < 2 or strides[1] != s or any(d != 1 for d in dilations) or h % s or w % s or h * w < MIN_PIXELS:
            return
        rows = cells(pads[0], kh, s, h, out[2])
        cols = cells(pads[1], kw, s, w, out[3])
        if rows is None or cols is None or space_to_depth_refusal(op.input, s) is not None:
            return
        (zh, kh_cells, top, bottom), (zw, kw_cells, left, right) = rows, cols
        before, after = block_k(c, kh * kw, self.c0), block_k(s * s * c, kh_cells * kw_cells, self.c0)
        if after >= before:
            return
        name, loc = node_name(op), op.location
        folded = g.SpaceToDepthOp.build_inferred([op.input], {"blocksize": IntegerAttr(s, i64)}, location=loc)
        # the kernel in pixels, shifted by the zero taps, cut into s x s cells
        # in the order the space_to_depth numbers its channels
        shifted = np.zeros((o, c, kh_cells * s, kw_cells * s), dtype=weight.dtype)
        shifted[:, :, zh : zh + kh, zw : zw + kw] = weight
        cell_weight = shifted.reshape(o, c, kh_cells, s, kw_cells, s).transpose(folded.cell_order())
        new_weight = materialize(np.ascontiguousarray(cell_weight.reshape(o, s * s * c, kh_cells, kw_cells)),
                                 f"{name}_space_to_depth", loc)
        properties = {k: v for k, v in op.properties.items() if k not in ("strides", "pads", "dilations")}
        properties["pads"] = g.int_array([top, left, bottom, right])
        bias = [op.bias] if op.bias is not None else []
        conv = g.ConvOp.build_inferred([folded.results[0], new_weight.results[0], bias, []], properties,
                                       dict(op.attributes), location=loc)
        assert g.shape_of(conv.output) == out, (g.shape_of(conv.output), out)
        statistic("convs-space-to-depth", 1, "strided convs on few channels that read their input space-to-depth")
        log.info("%s reads its input space-to-depth: %d channels at stride %d -> %d at stride 1, "
                 "%dx%d -> %dx%d taps, K %d -> %d in blocks of %d",
                 describe_op(op), c, s, s * s * c, kh, kw, kh_cells, kw_cells, before, after, self.c0)
        old_weight = op.weight.owner
        rewriter.replace(op, [new_weight, folded, conv], [conv.output])
        if isinstance(old_weight, Operation) and not old_weight.results[0].uses:
            rewriter.erase(old_weight)


@dataclass(frozen=True)
class ConvSpaceToDepthPass(ModulePass):
    """Strided convs on few channels (image stems) read their input
    space-to-depth, when that shrinks their K in whole cube blocks."""

    name = "conv-space-to-depth"
    precision_mode: str = DEFAULT_PRECISION

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        check_precision_mode(self.precision_mode)
        element_bytes = 2 if self.precision_mode == "force_fp16" else 4  # fp16 storage, else the model's fp32
        c0 = BLOCK_BYTES // element_bytes
        PatternRewriteWalker(ConvSpaceToDepth(c0), apply_recursively=False).rewrite_module(op)
