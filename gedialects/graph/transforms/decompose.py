"""graph-decompose: ops the AI core has no kernel for, written as graph ops
it has (GE's operator decomposition; the values are the same, up to fp
rounding of the sums):

* resize (nearest, linear or cubic, of the last two dims) -> products with
  constant interpolation matrices: Y = R_h . X . R_w^T. The reference
  kernel itself, applied to an identity, gives each matrix, so the two
  agree on every coordinate mode and rounding rule. Dense products cost
  H x W MACs per output instead of four: extents up to
  RESIZE_PRODUCT_LIMIT only.
* conv_transpose whose kernel equals its stride (no padding, dilation or
  groups: UNet's 2x2 up-convolutions), whose windows never overlap:
  y[n, o, s*i + a, s*j + b] = sum_c x[n, c, i, j] w[c, o, a, b] + bias[o],
  a product in NHWC order, [N, H, W, C] . [C, O*kh*kw] (its bias each
  channel's, repeated over the taps), then a transpose that interleaves the kernel taps with the
  rows and columns (its innermost dim stays innermost).
* any other 2-D conv_transpose with a constant weight (overlapping windows:
  DCGAN's 4x4 of stride 2, a 3x3 of stride 2 with output padding) -> a conv
  of stride 1 over the input with s - 1 zeros inserted between its pixels,
  as XLA writes it (a conv with lhs dilation) and as GE runs
  Conv2DBackpropInput on the cube:
      y = conv(z, w', pads P), w'[o, c, a, b] = w[c, o, kh-1-a, kw-1-b] (per group),
      z[n, c, s*i, s*j] = x[n, c, i, j] and 0 elsewhere, P = d*(k-1) - pad (+ output padding at the end).
  z is two products with constant 0/1 matrices (E_h . x . E_w, exact: each
  output is one input or 0), which also crop where P < 0; the conv pads the
  rest on the fly. Extents up to RESIZE_PRODUCT_LIMIT only.
* a 1-D conv or conv_transpose (Whisper's and wav2vec2's audio stems, TCNs)
  -> the 2-D op on a map of height 1: the input and weight viewed as
  [N, C, 1, L] and [., ., 1, k], the stride and dilation the same along H
  (one row and a kernel of one row give one row whatever they are), no pads
  along H, the result viewed back as [N, O, L'].
* instance_norm and group_norm (wav2vec2's feature extractor, diffusion
  UNets) -> layer_norm over the last axis of x viewed as [N, G, C/G * S]
  (the statistics of each sample's group), viewed back, then the
  per-channel scale and bias as a mul and an add (left out when they are
  constant ones and zeros).

Each rewrite logs one line; what is left stays for the partition to place.
"""

from __future__ import annotations

import logging
import math

import numpy as np
from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.dialects.builtin import IntegerAttr, i64
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import GreedyRewritePatternApplier, PatternRewriter, PatternRewriteWalker, RewritePattern

from gedialects.graph import batch_norm
from gedialects.graph import ops as g
from gedialects.graph import reference as ref
from gedialects.graph import shapes
from gedialects.graph.constants import constant_2d_window, constant_value, materialize
from gedialects.graph.tensors import is_float
from gedialects.location import describe_op, node_name

log = logging.getLogger("gedialects.decompose")

RESIZE_PRODUCT_LIMIT = 512
"""Longest input or output extent a resize runs as dense interpolation products."""


def interpolation_matrix(op: g.ResizeOp, axis: int, in_len: int, out_len: int) -> np.ndarray:
    """[out_len, in_len]: row o holds the weights of the input cells that
    output cell o of `axis` reads (the reference kernel on an identity)."""
    eye = np.eye(in_len, dtype=np.float32)
    resized = ref.resize(eye, (in_len, out_len), (1.0, op.floats("scales")[axis]), **op.interpolation())
    return np.ascontiguousarray(resized.T)


class ResizeToProducts(RewritePattern):
    """resize of the last two dims -> x . R_w^T (when W changes), then
    R_h . (...) (when H changes): products with constant matrices."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, g.ResizeOp):
            return
        x, out = g.shape_of(op.input), g.shape_of(op.output)
        if len(x) < 2 or not (shapes.is_static(x) and shapes.is_static(out)) or not is_float(op.input.type.element_type):  # type: ignore[attr-defined]
            return
        if tuple(x[:-2]) != tuple(out[:-2]) or max(*x[-2:], *out[-2:]) > RESIZE_PRODUCT_LIMIT:
            return  # only the last two dims resize, at extents a dense product affords
        new: list[Operation] = []
        value: SSAValue = op.input
        name = node_name(op)
        rank = len(x)
        if x[-1] != out[-1]:
            rw_t = interpolation_matrix(op, rank - 1, x[-1], out[-1]).T
            matrix = materialize(np.ascontiguousarray(rw_t), f"{name}_interp_w", op.location)
            product = g.MatMulOp.build_inferred([value, matrix.results[0], []], {}, location=op.location)
            new += [matrix, product]
            value = product.results[0]
        if x[-2] != out[-2]:
            rh = interpolation_matrix(op, rank - 2, x[-2], out[-2])
            matrix = materialize(rh, f"{name}_interp_h", op.location)
            product = g.MatMulOp.build_inferred([matrix.results[0], value, []], {}, location=op.location)
            new += [matrix, product]
            value = product.results[0]
        if not new:
            return
        new[-1].attributes.update(op.attributes)
        log.info("rewrote %s: %s interpolation as products with constant matrices (%s)", describe_op(op),
                 op.str_("mode", "nearest"), " x ".join(str(d) for d in out[-2:]))
        rewriter.replace(op, new, [value])


class StridedConvTransposeToProduct(RewritePattern):
    """conv_transpose with kernel == stride (no pads, dilation, groups or
    output padding), 2-D: transpose x to NHWC, a product with the weight
    as [C, O*kh*kw] (+ the bias repeated over the taps), a reshape to
    [N, H, W, O, kh, kw] and a transpose to [N, O, H, kh, W, kw], which
    is the output [N, O, H*kh, W*kw] in row-major order."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, g.ConvTransposeOp):
            return
        window = constant_2d_window(op)
        if window is None:
            return
        if not _is_tap_product(op, window):
            return
        (n, c, h, w), out, weight, strides, pads, dilations = window
        _, o, kh, kw = weight.shape
        bias = constant_value(op.bias) if op.bias is not None else None
        if op.bias is not None and bias is None:
            return
        name, loc = node_name(op), op.location
        nhwc = g.TransposeOp.build_inferred([op.input], {"perm": g.int_array([0, 2, 3, 1])}, location=loc)
        wmat = materialize(np.ascontiguousarray(weight.reshape(c, o * kh * kw)), f"{name}_taps", loc)
        new: list[Operation] = [nhwc, wmat]
        per_tap: list[SSAValue] = []
        if bias is not None:  # the product's bias: each output channel's over its kh * kw taps
            bias_op = materialize(np.repeat(np.asarray(bias, np.float32), kh * kw), f"{name}_bias_taps", loc)
            new.append(bias_op)
            per_tap = [bias_op.results[0]]
        product = g.MatMulOp.build_inferred([nhwc.results[0], wmat.results[0], per_tap], {}, location=loc)
        new.append(product)
        taps = g.ReshapeOp.build_inferred([product.results[0]], {"shape": g.int_array([n, h, w, o, kh, kw])},
                                          location=loc)
        interleave = g.TransposeOp.build_inferred([taps.results[0]], {"perm": g.int_array([0, 3, 1, 4, 2, 5])},
                                                  location=loc)
        result = g.ReshapeOp.build_inferred([interleave.results[0]], {"shape": g.int_array(list(out))},
                                            dict(op.attributes), location=loc)
        new += [taps, interleave, result]
        log.info("rewrote %s: a %dx%d up-convolution of stride %dx%d as a product and a tap interleave",
                 describe_op(op), kh, kw, kh, kw)
        rewriter.replace(op, new, [result.results[0]])


def _reshaped(value: SSAValue, shape: list[int], location) -> g.ReshapeOp:
    return g.ReshapeOp.build_inferred([value], {"shape": g.int_array(shape)}, location=location)


def _view(value: SSAValue, shape: list[int], location, new: list[Operation]) -> SSAValue:
    """value viewed as `shape` (a reshape appended to `new` unless it has that shape already)."""
    if tuple(g.shape_of(value)) == tuple(shape):
        return value
    view = _reshaped(value, shape, location)
    new.append(view)
    return view.output


class ConvOneDimAsTwo(RewritePattern):
    """conv / conv_transpose over one spatial dim -> the same op over a map of
    height 1 (views around it: no data moves)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, g.ConvOp | g.ConvTransposeOp) or not is_float(op.input.type.element_type):  # type: ignore[attr-defined]
            return
        x, w, out = g.shape_of(op.input), g.shape_of(op.weight), g.shape_of(op.output)
        if len(x) != 3 or len(w) != 3 or not all(shapes.is_static(s) for s in (x, w, out)):
            return
        if isinstance(op, g.ConvOp) and (op.residual is not None or op.str_("activation", "")):
            return  # graph-decompose runs before graph-fuse: never the case in the pipeline
        loc = op.location
        strides, pads, dilations = op.window(3)
        props = {k: v for k, v in op.properties.items()
                 if k not in ("strides", "pads", "dilations", "output_padding", "operandSegmentSizes")}
        # along H (one row, a kernel of one row) any stride or dilation gives
        # one output row: the same as along L, as the conv kernels want them
        props["strides"] = g.int_array([strides[0], strides[0]])
        props["pads"] = g.int_array([0, pads[0], 0, pads[1]])
        props["dilations"] = g.int_array([dilations[0], dilations[0]])
        if isinstance(op, g.ConvTransposeOp):
            props["output_padding"] = g.int_array([0, *op.ints("output_padding", (0,))])
        x4 = _reshaped(op.input, [x[0], x[1], 1, x[2]], loc)
        weight = constant_value(op.weight)  # a constant stays one (the conv kernels pack it at compile time)
        w4 = (_reshaped(op.weight, [w[0], w[1], 1, w[2]], loc) if weight is None else
              materialize(np.ascontiguousarray(weight.reshape(w[0], w[1], 1, w[2])), f"{node_name(op)}_2d", loc))
        bias = [op.bias] if op.bias is not None else []
        if isinstance(op, g.ConvOp):
            conv = g.ConvOp.build_inferred([x4.results[0], w4.results[0], bias, []], props, location=loc)
        else:
            conv = g.ConvTransposeOp.build_inferred([x4.results[0], w4.results[0], bias], props, location=loc)
        y = _reshaped(conv.results[0], list(out), loc)
        y.attributes.update(op.attributes)
        if g.shape_of(y.output) != tuple(out):
            return
        log.info("rewrote %s: a 1-d %s as a 2-d one on a map of height 1", describe_op(op), op.name.split(".")[-1])
        rewriter.replace(op, [x4, w4, conv, y], [y.output])


class ChannelNormAsLayerNorm(RewritePattern):
    """instance_norm / group_norm -> layer_norm of the groups as rows, then
    the per-channel affine."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, g.InstanceNormOp | g.GroupNormOp):
            return
        x = g.shape_of(op.input)
        if not shapes.is_static(x) or not is_float(op.input.type.element_type):  # type: ignore[attr-defined]
            return
        n, c, spatial = x[0], x[1], math.prod(x[2:])
        groups = c if isinstance(op, g.InstanceNormOp) else op.int_("num_groups", 1)
        loc, name = op.location, node_name(op)
        new: list[Operation] = []
        rows = _view(op.input, [n, groups, c // groups * spatial], loc, new)
        ones = materialize(np.ones(c // groups * spatial, np.float32), f"{name}_unit_scale", loc)
        props = {"axis": IntegerAttr(-1, i64)}
        if op.epsilon is not None:
            props["epsilon"] = op.epsilon
        norm = g.LayerNormOp.build_inferred([rows, ones.results[0], [], []], props, location=loc)
        new += [ones, norm]
        value = _view(norm.output, list(x), loc, new)
        per_channel = [c] + [1] * (len(x) - 2)
        for operand, unit, cls in ((op.scale, 1.0, g.MulOp), (op.bias, 0.0, g.AddOp)):
            known = constant_value(operand)
            if known is not None and np.all(known == unit):
                continue
            shaped = (_reshaped(operand, per_channel, loc) if known is None else
                      materialize(np.ascontiguousarray(np.asarray(known, np.float32).reshape(per_channel)),
                                  f"{name}_{'scale' if unit else 'bias'}", loc))
            step = cls.build_inferred([value, shaped.results[0]], {}, location=loc)
            new += [shaped, step]
            value = step.output
        new[-1].attributes.update(op.attributes)
        log.info("rewrote %s: %d group(s) of %d values per sample as a layer_norm", describe_op(op), groups,
                 c // groups * spatial)
        rewriter.replace(op, new, [value])


class BatchNormAsAffine(RewritePattern):
    """batch_norm of a tensor that is not a 4-D map (BatchNorm1d after a
    linear layer: LeViT) with constant statistics -> x * s + t, with
    s = scale / sqrt(var + eps) and t = bias - mean * s per channel (dim 1),
    broadcast over the dims after it (gedialects/graph/batch_norm.py): an
    elementwise map (and graph-fuse's to fuse). A 4-D map's batch_norm is
    graph-fuse's: folded into the conv before it, or the chain after it."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, g.BatchNormOp) or not is_float(op.input.type.element_type):  # type: ignore[attr-defined]
            return
        x = g.shape_of(op.input)
        if len(x) == 4 or not shapes.is_static(x):
            return
        params = batch_norm.affine(op)
        if params is None:
            return
        new = batch_norm.affine_ops(op, *params)
        log.info("rewrote %s: a batch_norm of a %s tensor as a per-channel scale and shift", describe_op(op),
                 shapes.fmt(x))
        rewriter.replace(op, new, [new[-1].results[0]])


class ReduceL2AsSumOfSquares(RewritePattern):
    """reduce_l2 -> sqrt(reduce_sum(x * x)) over the same axes (ConvNeXt V2's
    global response normalisation)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, g.ReduceL2Op) or not is_float(op.input.type.element_type):  # type: ignore[attr-defined]
            return
        loc = op.location
        square = g.MulOp.build_inferred([op.input, op.input], {}, location=loc)
        props = {k: v for k, v in op.properties.items() if k in ("axes", "keepdims")}
        total = g.ReduceSumOp.build_inferred([square.output], props, location=loc)
        root = g.SqrtOp.build_inferred([total.output], {}, location=loc)
        root.attributes.update(op.attributes)
        log.info("rewrote %s: reduce_l2 as the square root of a sum of squares", describe_op(op))
        rewriter.replace(op, [square, total, root], [root.output])


TRAILING_REDUCTIONS = (g.ReduceSumOp, g.ReduceMeanOp, g.ReduceMaxOp)
"""The reductions the AI core runs along trailing axes (lowering/legality/vector.py's rule)."""


class ReduceOverTrailingAxes(RewritePattern):
    """A sum, mean or max over axes that are not the trailing ones -> a
    transpose that moves them last, the reduction over the trailing axes,
    and a view of the result in the op's shape (ConvNeXt V2's norm over the
    pixels of an NHWC map)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, TRAILING_REDUCTIONS) or not is_float(op.input.type.element_type):  # type: ignore[attr-defined]
            return
        x = g.shape_of(op.input)
        if not shapes.is_static(x) or not math.prod(x):
            return  # an empty reduction is a constant for the canonicaliser
        axes = sorted({a % len(x) for a in (op.ints("axes") or range(len(x)))})
        if axes == list(range(axes[0], len(x))):
            return
        loc = op.location
        kept = [a for a in range(len(x)) if a not in axes]
        moved = g.TransposeOp.build_inferred([op.input], {"perm": g.int_array(kept + axes)}, location=loc)
        trailing = list(range(len(kept), len(x)))
        reduced = type(op).build_inferred([moved.output], {"axes": g.int_array(trailing), "keepdims": IntegerAttr(0, i64)},
                                          location=loc)
        new: list[Operation] = [moved, reduced]
        result = _view(reduced.output, list(g.shape_of(op.output)), loc, new)
        new[-1].attributes.update(op.attributes)
        log.info("rewrote %s: a reduction over axes %s of %s as a transpose and a reduction over the trailing axes",
                 describe_op(op), tuple(axes), shapes.fmt(x))
        rewriter.replace(op, new, [result])


SELECTION_LIMIT = 1 << 20
"""Most elements of the one-hot selection a gather_elements becomes."""


class GatherElementsAsSelection(RewritePattern):
    """gather_elements along the last axis by constant indices (DeBERTa's
    relative positions) -> each row of x times a constant one-hot matrix:
    out[r, k] = sum_v x[r, v] M[r, v, k], M[r, v, k] = (idx[r, k] == v), a
    batched product on the cube, exact for finite values (every product is
    by 1 or 0), for selections of up to SELECTION_LIMIT elements."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, g.GatherElementsOp) or not is_float(op.input.type.element_type):  # type: ignore[attr-defined]
            return
        x, out = g.shape_of(op.input), g.shape_of(op.output)
        index = constant_value(op.indices)
        if index is None or not shapes.is_static(x) or op.int_("axis", 0) % len(x) != len(x) - 1:
            return
        if tuple(out[:-1]) != tuple(x[:-1]) or not math.prod(out):
            return
        rows, width, taken = math.prod(x[:-1]), x[-1], out[-1]
        if rows * width * taken > SELECTION_LIMIT:
            return
        picks = np.asarray(index, np.int64).reshape(rows, taken) % width
        select = np.zeros((rows, width, taken), np.float32)
        select[np.arange(rows)[:, None], picks, np.arange(taken)[None, :]] = 1.0
        loc = op.location
        new: list[Operation] = []
        lhs = _view(op.input, [rows, 1, width], loc, new)
        matrix = materialize(select, f"{node_name(op)}_selection", loc)
        product = g.MatMulOp.build_inferred([lhs, matrix.results[0], []], {}, location=loc)
        new += [matrix, product]
        result = _view(product.results[0], list(out), loc, new)
        new[-1].attributes.update(op.attributes)
        log.info("rewrote %s: a gather_elements by constant indices as rows times one-hot matrices (%d x %d -> %d)",
                 describe_op(op), rows, width, taken)
        rewriter.replace(op, new, [result])


def group_swap_steps(perm: list[int]) -> tuple[list[int], list[int]] | None:
    """A permutation that moves the innermost dim and is not a swap of two
    dim groups (those the cube runs as identity products) as two that are
    lowered: (first, then) with first a group swap that brings the new
    innermost dim last and `then` keeping the innermost dim (a strided copy
    on the vector unit); None when perm is one of those already."""
    n = len(perm)
    last = perm[-1]
    if last == n - 1:
        return None
    p = next(i for i in range(n) if perm[i] != i)
    q = perm[p]
    if perm[p:] == list(range(q, n)) + list(range(p, q)):
        return None
    first = [d for d in range(n) if d != last] + [last]
    where = {d: i for i, d in enumerate(first)}
    return first, [where[d] for d in perm]


class TransposeAsGroupSwapAndRows(RewritePattern):
    """A transpose that moves the innermost dim and is not a swap of two dim
    groups (MobileViT's (0, 3, 2, 1) of its patches) -> a group swap that
    brings the new innermost dim last, then a transpose of whole rows."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, g.TransposeOp) or not is_float(op.input.type.element_type):  # type: ignore[attr-defined]
            return  # the cube's identity product moves floats
        x = g.shape_of(op.input)
        if not shapes.is_static(x) or len(x) < 3 or not math.prod(x):
            return
        perm = [p % len(x) for p in op.ints("perm", ())] or list(range(len(x)))[::-1]
        steps = group_swap_steps(perm)
        if steps is None:
            return
        first, then = steps
        loc = op.location
        swap = g.TransposeOp.build_inferred([op.input], {"perm": g.int_array(first)}, location=loc)
        rows = g.TransposeOp.build_inferred([swap.output], {"perm": g.int_array(then)}, location=loc)
        rows.attributes.update(op.attributes)
        log.info("rewrote %s: transpose %s as %s then %s", describe_op(op), tuple(perm), tuple(first), tuple(then))
        rewriter.replace(op, [swap, rows], [rows.output])


def zero_insertion_matrix(length: int, stride: int, before: int, after: int) -> tuple[np.ndarray, int, int]:
    """(E, conv pad before, conv pad after) for one spatial dim: E [length, z]
    puts input i at z position s*i + min(before, 0) (stride - 1 zeros between
    inputs; a negative pad crops), and the conv pads what is left, P >= 0."""
    dilated = (length - 1) * stride + 1
    crop_before, crop_after = max(0, -before), max(0, -after)
    z = dilated - crop_before - crop_after
    e = np.zeros((length, max(z, 0)), np.float32)
    for i in range(length):
        at = stride * i - crop_before
        if 0 <= at < z:
            e[i, at] = 1.0
    return e, max(0, before), max(0, after)


class ConvTransposeToConv(RewritePattern):
    """Any 2-D conv_transpose with a constant weight that the product rewrite
    does not take (overlapping windows, pads, output padding, dilation,
    groups): the input with its zeros inserted (products with constant 0/1
    matrices along W, then H, where the stride or a crop needs them), then a
    conv of stride 1 with the weight flipped and its channel axes swapped."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, g.ConvTransposeOp) or not is_float(op.input.type.element_type):  # type: ignore[attr-defined]
            return
        window = constant_2d_window(op)
        if window is None or _is_tap_product(op, window):
            return
        (n, c, h, w), out, weight, strides, pads, dilations = window
        group = op.int_("group", 1)
        _, og, kh, kw = weight.shape
        bias = constant_value(op.bias) if op.bias is not None else None
        if (op.bias is not None and bias is None) or c % group:
            return
        extra = op.ints("output_padding", (0, 0))
        (sh, sw), (dh, dw) = strides, dilations
        e_h, top, bottom = zero_insertion_matrix(h, sh, dh * (kh - 1) - pads[0], dh * (kh - 1) - pads[2] + extra[0])
        e_w, left, right = zero_insertion_matrix(w, sw, dw * (kw - 1) - pads[1], dw * (kw - 1) - pads[3] + extra[1])
        if max(h, w, *e_h.shape, *e_w.shape) > RESIZE_PRODUCT_LIMIT or 0 in e_h.shape or 0 in e_w.shape:
            return
        name, loc = node_name(op), op.location
        new: list[Operation] = []
        value: SSAValue = op.input
        if not _is_identity(e_w):  # stride 1 and nothing cropped: no zeros to insert along W
            matrix = materialize(e_w, f"{name}_zero_insert_w", loc)
            product = g.MatMulOp.build_inferred([value, matrix.results[0], []], {}, location=loc)
            new += [matrix, product]
            value = product.results[0]
        if not _is_identity(e_h):
            matrix = materialize(np.ascontiguousarray(e_h.T), f"{name}_zero_insert_h", loc)
            product = g.MatMulOp.build_inferred([matrix.results[0], value, []], {}, location=loc)
            new += [matrix, product]
            value = product.results[0]
        cg = c // group  # w [C, O/g, kh, kw] -> w' [O, C/g, kh, kw], flipped
        flipped = weight[:, :, ::-1, ::-1].reshape(group, cg, og, kh, kw).transpose(0, 2, 1, 3, 4)
        new_weight = materialize(np.ascontiguousarray(flipped.reshape(group * og, cg, kh, kw)), f"{name}_flipped", loc)
        properties = {"pads": g.int_array([top, left, bottom, right])}
        if (dh, dw) != (1, 1):
            properties["dilations"] = g.int_array([dh, dw])
        if group != 1:
            properties["group"] = op.properties["group"]
        conv = g.ConvOp.build_inferred([value, new_weight.results[0], [op.bias] if op.bias is not None else [], []],
                                       properties, dict(op.attributes), location=loc)
        if g.shape_of(conv.output) != tuple(out):
            return  # not the shape ONNX gives: leave it to the AI CPU's reference kernel
        new += [new_weight, conv]
        log.info("rewrote %s: a %dx%d up-convolution of stride %dx%d as a zero insertion and a %dx%d conv",
                 describe_op(op), kh, kw, sh, sw, kh, kw)
        rewriter.replace(op, new, [conv.output])


def _is_identity(e: np.ndarray) -> bool:
    return e.shape[0] == e.shape[1] and np.array_equal(e, np.eye(e.shape[0], dtype=e.dtype))


def _is_tap_product(op: g.ConvTransposeOp, window) -> bool:
    """What StridedConvTransposeToProduct rewrites (kernel == stride, no pads, ...)."""
    _, _, weight, strides, pads, dilations = window
    return (tuple(strides) == tuple(weight.shape[2:]) and not any(pads) and all(d == 1 for d in dilations)
            and op.int_("group", 1) == 1 and not any(op.ints("output_padding", (0, 0))))


class GraphDecomposePass(ModulePass):
    """Resizes, up-convolutions, 1-d convs, norms, reductions, transposes, gathers as AI-core ops."""

    name = "graph-decompose"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier([ConvOneDimAsTwo(), ChannelNormAsLayerNorm(), ResizeToProducts(), StridedConvTransposeToProduct(),
                                         ConvTransposeToConv(), BatchNormAsAffine(), ReduceL2AsSumOfSquares(),
                                         ReduceOverTrailingAxes(), TransposeAsGroupSwapAndRows(),
                                         GatherElementsAsSelection()])
        ).rewrite_module(op)
