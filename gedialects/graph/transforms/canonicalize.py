"""graph-canonicalize: fold constants and shape ops, drop no-op ops (pads of
zero, resizes by 1 too), merge chains of views and of transposes, write max-pool ceil_mode as pads, a spatial mean as
a global average pool, a whole-map average pool with its exact window, a
global pool of rows as a mean, a reduction over one element as a view, a
gather of a constant run of consecutive indices as a slice (+ reshape) and a
view of a cast as a cast of the view (so the cast fuses with what follows),
then CSE and DCE.

Constant folding evaluates an op whose operands are all constants with the
reference kernels; a splat result stays a `graph.fill`, so folding never
inflates the IR with a blob of equal values.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)
from xdsl.transforms.common_subexpression_elimination import cse
from xdsl.transforms.dead_code_elimination import region_dce

from gedialects.graph import ops as g
from gedialects.graph import shapes
from gedialects.graph.constants import constant_value, materialize
from gedialects.graph.interpreter import evaluate
from gedialects.graph.tensors import (
    SMALL_CONSTANT_ELEMENTS,
)
from gedialects.instrumentation import statistic
from gedialects.location import describe_op, node_name

log = logging.getLogger("gedialects.canonicalize")

FOLD_MAX_ELEMENTS = 1 << 24
"""Larger constant results are left unfolded (they would dwarf the IR)."""



class FoldConstantOp(RewritePattern):
    """Evaluate an operator whose operands are all constant."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, g.GraphOp) or not op.operands:
            return
        if not all(shapes.is_static(g.shape_of(r)) for r in op.results):
            return
        if any(shapes.num_elements(g.shape_of(r)) > FOLD_MAX_ELEMENTS for r in op.results):
            return
        args = [constant_value(o) for o in op.operands]
        if any(a is None for a in args):
            return
        results = evaluate(op, args)
        new_ops = [
            materialize(r, f"{node_name(op)}_folded", op.location) for r in results
        ]
        log.info("folded %s into a constant", describe_op(op))
        statistic("constants-folded", 1, "ops of constant operands folded")
        rewriter.replace(op, new_ops, [n.results[0] for n in new_ops])


class FoldShapeOp(RewritePattern):
    """graph.shape of a tensor whose shape is static is a constant."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, g.ShapeOp):
            return
        shape = g.shape_of(op.input)
        if not shapes.is_static(shape):
            return
        new = materialize(np.array(shape, dtype=np.int64), f"{node_name(op)}_shape", op.location)
        log.info("folded %s: the shape is static", describe_op(op))
        rewriter.replace(op, new)


class RemoveNoOp(RewritePattern):
    """Identity (and Dropout), and ops that provably do nothing here."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if isinstance(op, g.IdentityOp):
            pass
        elif isinstance(op, (*g.RESHAPING_OPS, g.CastOp, g.ExpandOp)):
            if op.operands[0].type != op.results[0].type:
                return
        elif isinstance(op, g.TransposeOp):
            if list(op.ints("perm")) != list(range(len(op.ints("perm")))):
                return
        elif isinstance(op, g.ConcatOp | g.SumOp):
            if len(op.operands) != 1 or op.operands[0].type != op.results[0].type:
                return
        elif isinstance(op, g.PadOp):  # HF Swin pads to whole windows: by 0 when they fit
            if any(op.ints("pads")) or op.operands[0].type != op.results[0].type:
                return
        elif isinstance(op, g.ResizeOp):  # SegFormer resizes every stage to the first's size, that one too
            if any(s != 1.0 for s in op.floats("scales")) or op.operands[0].type != op.results[0].type:
                return  # scale 1 maps every coordinate mode's cell i to i
        else:
            return
        log.info("removed %s: it does not change its operand", describe_op(op))
        statistic("no-ops-removed", 1, "ops that do not change their operand")
        rewriter.replace(op, [], [op.operands[0]])


class FoldViewChain(RewritePattern):
    """reshape(reshape(x)) -> reshape(x), for every view op (squeeze, flatten...)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, g.RESHAPING_OPS):
            return
        inner = op.operands[0].owner
        if not isinstance(inner, g.RESHAPING_OPS):
            return
        out = g.shape_of(op.results[0])
        if not shapes.is_static(out):
            return
        new = g.ReshapeOp.build_inferred(
            [inner.operands[0]], {"shape": g.int_array(out)}, location=op.location
        )
        log.info("merged %s into %s", describe_op(inner), describe_op(op))
        statistic("view-chains-merged", 1, "views of views made one reshape")
        rewriter.replace(op, new)


class FoldTransposeChain(RewritePattern):
    """transpose(transpose(x, p), q) -> transpose(x, p[q]): one data movement
    instead of two (torch's split-heads permute followed by k.transpose(-1, -2);
    ONNX exporters merge them, ATen keeps both)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, g.TransposeOp):
            return
        inner = op.operands[0].owner
        if not isinstance(inner, g.TransposeOp):
            return
        inner_perm, outer_perm = inner.ints("perm"), op.ints("perm")
        new = g.TransposeOp.build_inferred(
            [inner.operands[0]], {"perm": g.int_array([inner_perm[i] for i in outer_perm])}, location=op.location
        )
        log.info("merged %s into %s", describe_op(inner), describe_op(op))
        statistic("transpose-chains-merged", 1, "transposes of transposes made one")
        rewriter.replace(op, new)


class CancelTransData(RewritePattern):
    """transdata(transdata(x, A -> B), B -> A) -> x: an inverse pair of
    format changes moves bytes twice for nothing."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, g.TransDataOp):
            return
        inner = op.input.owner
        if not isinstance(inner, g.TransDataOp):
            return
        if not (g.same_format(inner.dst_format.data, op.src_format.data)
                and g.same_format(inner.src_format.data, op.dst_format.data)):
            return
        log.info("cancelled %s against %s: inverse format changes", describe_op(op), describe_op(inner))
        rewriter.replace(op, [], [inner.input])
        if not inner.output.uses:
            rewriter.erase_op(inner)


def _cse_keeping_weights_apart(module: builtin.ModuleOp) -> None:
    """xDSL's CSE, except that two weights are never merged.

    Weights equal in value are still two layers' parameters: merging them
    would make the compiled structure depend on weight values (the light
    models' placeholder weights are all 0.02, real ones are not). A
    temporary unique attribute makes each weight distinct to CSE.
    """
    guarded = [
        c
        for c in module.walk()
        if isinstance(c, g.ConstantOp | g.FillOp)
        and shapes.num_elements(g.shape_of(c.output)) > SMALL_CONSTANT_ELEMENTS
    ]
    for i, c in enumerate(guarded):
        c.attributes[_CSE_GUARD] = builtin.IntegerAttr(i, 64)
    cse(module)
    for c in guarded:
        if c.parent is not None:
            del c.attributes[_CSE_GUARD]


class MaxPoolCeilToPads(RewritePattern):
    """max_pool{ceil_mode = 1} -> max_pool with the extra end pads the ceil
    adds: a max ignores padding, so the two are the same op (when every
    window starts inside the input or its begin pad, as PyTorch's rule
    keeps them); one pooling form less for every backend."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, g.MaxPoolOp) or not op.int_("ceil_mode", 0):
            return
        x, out = g.shape_of(op.input), g.shape_of(op.output)
        if not (shapes.is_static(x) and shapes.is_static(out)):
            return
        n = len(x) - 2
        kernel = op.ints("kernel_shape")
        strides = op.ints("strides") or (1,) * n
        dilations = op.ints("dilations") or (1,) * n
        pads = list(op.ints("pads") or (0,) * (2 * n))
        for d in range(n):
            reach = (out[2 + d] - 1) * strides[d] + dilations[d] * (kernel[d] - 1) + 1
            if (out[2 + d] - 1) * strides[d] >= x[2 + d] + pads[d]:
                return  # a window would start in the end pad (a shape rule that keeps it)
            pads[n + d] += max(0, reach - (x[2 + d] + pads[d] + pads[n + d]))
        new = g.MaxPoolOp.build_inferred(
            [op.input], {**{k: v for k, v in op.properties.items() if k != "ceil_mode"}, "pads": g.int_array(pads)},
            attributes=dict(op.attributes), location=op.location,
        )
        if g.shape_of(new.results[0]) != out:  # pragma: no cover - the pads reproduce the ceil by construction
            new.erase()
            return
        log.info("rewrote %s: ceil_mode as extra end pads %s", describe_op(op), pads)
        rewriter.replace(op, new)


class SpatialMeanToGlobalPool(RewritePattern):
    """reduce_mean over H and W of a batch-1 NCHW map -> global_avg_pool
    (+ a reshape without keepdims): the form the map kernels run at any
    H x W (torchvision's and HF's `x.mean((2, 3))` heads)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, g.ReduceMeanOp):
            return
        x = g.shape_of(op.input)
        if len(x) != 4 or not shapes.is_static(x) or x[0] != 1:
            return
        if sorted(a % 4 for a in op.ints("axes")) != [2, 3]:
            return
        pool = g.GlobalAvgPoolOp.build_inferred([op.input], attributes=dict(op.attributes), location=op.location)
        new = [pool]
        if not op.int_("keepdims", 1):
            new.append(g.ReshapeOp.build_inferred([pool.results[0]], {"shape": g.int_array(g.shape_of(op.output))},
                                                  location=op.location))
        log.info("rewrote %s: a mean over H and W is a global average pool", describe_op(op))
        rewriter.replace(op, new, [new[-1].results[0]])


class GatherRunToSlice(RewritePattern):
    """gather(x, c, axis) with constant indices c that, flattened and wrapped,
    run k, k+1, ..., k+n-1 -> slice [k, k+n) on the axis (+ a reshape to
    x.shape[:axis] + c.shape + x.shape[axis+1:]): one contiguous block
    copied, or only a view when the run is the whole axis, instead of an
    indexed gather (GPT-2's causal-mask rows, BERT's pooler CLS token)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, g.GatherOp) or not g.shape_of(op.input):
            return
        x, out = g.shape_of(op.input), g.shape_of(op.output)
        axis = shapes.normalize_axis(op.int_("axis", 0), len(x))
        dim, n = x[axis], shapes.num_elements(g.shape_of(op.indices))
        if dim == shapes.DYN or not 1 <= n <= dim:
            return
        idx = constant_value(op.indices)
        if idx is None:
            return
        run = np.where(idx < 0, idx + dim, idx).reshape(-1).astype(np.int64)
        k = int(run[0])
        if not (0 <= k and k + n <= dim and np.array_equal(run, np.arange(k, k + n))):
            return
        reshape = out != (*x[:axis], n, *x[axis + 1 :])
        if reshape and not shapes.is_static(out):
            return
        new: list[Operation] = []
        value = op.input
        if (k, n) != (0, dim):
            new.append(g.SliceOp.build_inferred(
                [value], {"starts": g.int_array([k]), "ends": g.int_array([k + n]), "axes": g.int_array([axis])},
                location=op.location,
            ))
            value = new[-1].results[0]
        if reshape:
            new.append(g.ReshapeOp.build_inferred([value], {"shape": g.int_array(out)}, location=op.location))
        if new:
            new[0].attributes.update(op.attributes)
        log.info("rewrote %s: indices %d..%d are a slice of axis %d", describe_op(op), k, k + n - 1, axis)
        rewriter.replace(op, new, [new[-1].results[0] if new else op.input])


_CSE_GUARD = "ge.cse_guard"


class GatherNDToGather(RewritePattern):
    """gather_nd(x, c) with constant index tuples c of length m (no batch
    dims) -> gather(reshape(x, [x0 * ... * x(m-1), x(m)...]), flat c, axis 0):
    each tuple is one row-major offset into the first m dims. A run of
    consecutive offsets then becomes a slice (GatherRunToSlice): torch's
    exporter writes `mask[:, None, None, :]` on a bool mask as a gather_nd."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, g.GatherNDOp) or op.int_("batch_dims", 0) != 0:
            return
        x, ishape = g.shape_of(op.input), g.shape_of(op.indices)
        if not (shapes.is_static(x) and shapes.is_static(ishape)) or not ishape:
            return
        m = ishape[-1]
        idx = constant_value(op.indices)
        if idx is None or not 1 <= m <= len(x):
            return
        dims = np.asarray(x[:m], dtype=np.int64)
        idx = np.where(idx < 0, idx + dims, idx).astype(np.int64)
        if np.any(idx < 0) or np.any(idx >= dims):
            return  # out of range: left to the op's own error
        strides = np.cumprod([1, *x[m - 1 : 0 : -1]], dtype=np.int64)[::-1]  # row-major strides of x[:m]
        flat = (idx * strides).sum(axis=-1)
        rows = g.ReshapeOp.build_inferred([op.input], {"shape": g.int_array([int(dims.prod()), *x[m:]])},
                                          location=op.location)
        indices = materialize(flat.reshape(ishape[:-1]), f"{node_name(op)}_offsets", op.location)
        gather = g.GatherOp.build_inferred([rows.results[0], indices.results[0]], {"axis": builtin.IntegerAttr(0, 64)},
                                           dict(op.attributes), location=op.location)
        log.info("rewrote %s: constant index tuples are offsets into the first %d dims", describe_op(op), m)
        rewriter.replace(op, [rows, indices, gather], [gather.results[0]])


class ViewBeforeCast(RewritePattern):
    """view(cast(x)) -> cast(view(x)) when the view is the cast's only user:
    the cast then meets the elementwise ops after the view and fuses with
    them (an attention mask: cast(int64 -> bool), unsqueeze, and, where)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, g.RESHAPING_OPS):
            return
        cast = op.operands[0].owner
        if not isinstance(cast, g.CastOp) or len(list(cast.output.uses)) != 1:
            return
        out = g.shape_of(op.results[0])
        if not shapes.is_static(out):
            return
        view = g.ReshapeOp.build_inferred([cast.input], {"shape": g.int_array(out)}, location=op.location)
        new_cast = g.CastOp.build_inferred([view.results[0]], dict(cast.properties), dict(cast.attributes),
                                           cast.location, element_type=cast.output.type.element_type)
        log.info("moved %s after %s", describe_op(cast), describe_op(op))
        rewriter.replace(op, [view, new_cast], [new_cast.results[0]])
        rewriter.erase(cast)


@dataclass(frozen=True)
class WholeMapPoolToExactWindow(RewritePattern):
    """avg_pool whose one window is the whole map (no explicit pads, no
    dilation, a 1x1 output, a kernel at least the map; HF EfficientNet's
    `AvgPool2d(1280, ceil_mode=True)` head) -> the same pool with kernel and
    strides the map's size and no ceil_mode: the divisor counts the cells
    inside the input, so both are the map's mean, and the exact window is
    the form ResNet's head already has."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, g.AvgPoolOp):
            return
        x, out = g.shape_of(op.input), g.shape_of(op.output)
        if len(x) != 4 or not (shapes.is_static(x) and shapes.is_static(out)) or tuple(out[2:]) != (1, 1):
            return
        if any(op.ints("pads") or ()) or any(d != 1 for d in op.ints("dilations") or ()):
            return
        kernel, window = tuple(op.ints("kernel_shape")), tuple(x[2:])
        if any(k < s for k, s in zip(kernel, window)):
            return
        if kernel == window and tuple(op.ints("strides") or (1, 1)) == window and not op.int_("ceil_mode", 0):
            return  # already exact
        props = {k: v for k, v in op.properties.items() if k not in ("ceil_mode", "count_include_pad")}
        props.update({"kernel_shape": g.int_array(list(window)), "strides": g.int_array(list(window))})
        pool = g.AvgPoolOp.build_inferred([op.input], props, attributes=dict(op.attributes), location=op.location)
        log.info("rewrote %s: its one window is the whole %dx%d map", describe_op(op), *window)
        rewriter.replace(op, pool)


class GlobalPoolOfRowsToMean(RewritePattern):
    """global_avg_pool of a tensor that is no 4-D map ([N, C, L]: Swin's
    pooler over tokens) -> reduce_mean over the dims after C (keepdims):
    a reduction the vector kernels run along any axis. (The inverse of
    SpatialMeanToGlobalPool, which takes 4-D maps only.)"""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, g.GlobalAvgPoolOp):
            return
        rank = len(g.shape_of(op.input))
        if rank == 4 or rank < 3:
            return
        mean = g.ReduceMeanOp.build_inferred(
            [op.input], {"axes": g.int_array(list(range(2, rank)))},  # keepdims defaults to 1
            attributes=dict(op.attributes), location=op.location,
        )
        log.info("rewrote %s: a global pool of a rank-%d tensor is a mean over its last %d dims",
                 describe_op(op), rank, rank - 2)
        rewriter.replace(op, mean)


class SoftmaxOfOneElement(RewritePattern):
    """softmax along an axis of one element -> exp(x - x): 1, or NaN where x
    is infinite or NaN, as softmax gives (MobileViT's attention over a single
    patch); elementwise ops the vector kernels run, where a reduction over one
    element is not lowered."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, g.SoftmaxOp) or op.shape is not None:
            return
        x = g.shape_of(op.input)
        if not x or x[shapes.normalize_axis(op.int_("axis", -1), len(x))] != 1:
            return
        zero = g.SubOp.build_inferred([op.input, op.input], {}, location=op.location)
        one = g.ExpOp.build_inferred([zero.output], {}, attributes=dict(op.attributes), location=op.location)
        log.info("rewrote %s: a softmax over one element is exp(x - x)", describe_op(op))
        rewriter.replace(op, [zero, one])


class ReductionOfOneElement(RewritePattern):
    """A sum, mean, max, min or product over axes of one element in all ->
    a view of the input in the result's shape (LeViT's mean over its one
    remaining token): each result is its one input element."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, g.ReduceSumOp | g.ReduceMeanOp | g.ReduceMaxOp | g.ReduceMinOp | g.ReduceProdOp):
            return
        x, out = g.shape_of(op.input), g.shape_of(op.output)
        if not shapes.is_static(x) or not shapes.is_static(out) or not x:
            return
        axes = {a % len(x) for a in (op.ints("axes") or range(len(x)))}
        if any(x[a] != 1 for a in axes):
            return
        view = g.ReshapeOp.build_inferred([op.input], {"shape": g.int_array(out)}, attributes=dict(op.attributes),
                                          location=op.location)
        log.info("rewrote %s: a reduction over one element is a view", describe_op(op))
        rewriter.replace(op, [view])


class GraphCanonicalizePass(ModulePass):
    """Fold constants and shape ops, remove Identity/Dropout and no-op view ops
    and pads, merge chains of views and of transposes, write max-pool ceil_mode as pads, spatial means as global
    pools, a whole-map average pool with its exact window, global pools of
    rows as means, a softmax over one element as exp(x - x), a reduction over
    one element as a view, gathers of consecutive constant indices as slices and views of casts as
    casts of views, eliminate common subexpressions and dead ops."""

    name = "graph-canonicalize"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        patterns = GreedyRewritePatternApplier(
            [RemoveNoOp(), FoldShapeOp(), FoldViewChain(), FoldTransposeChain(), CancelTransData(), MaxPoolCeilToPads(),
             SpatialMeanToGlobalPool(), WholeMapPoolToExactWindow(), GlobalPoolOfRowsToMean(), FoldConstantOp(),
             GatherNDToGather(), GatherRunToSlice(), ViewBeforeCast(), SoftmaxOfOneElement(),
             ReductionOfOneElement()]
        )
        PatternRewriteWalker(patterns).rewrite_module(op)
        _cse_keeping_weights_apart(op)
        # CSE merges equal views (BART's two unsqueezes of one cast to bool):
        # what that leaves with one user gets the patterns again
        PatternRewriteWalker(patterns).rewrite_module(op)
        for region in op.regions:
            region_dce(region)
