"""graph.attention as one flash-attention kernel (`lower_attention`).

One structured tile.kernel: tile.loads of q, k (keys as rows), v and the
masks, one tile.attention (gedialects/tile/structured.py; the tile passes
choose the query rows per tile and tile-expand-structured builds the loop
over key blocks with an online softmax, so the scores never reach GM), and
the epilogue map that takes the fp32 result to the stored type and scale.

Operands are read as the products of cube.py read theirs: a transpose that
only cube kernels read (attention's head split) is a load through permuted
strides; in force_fp16 an fp32 graph input gets a cast kernel first. In
fp32 the values are read as v^T (fp32 fractals are not transposed on the
way to L0B), written by an identity-product kernel that runs first.

force_fp16 scales: the scores are computed from stored q and k, so the
kernel's scale is the op's times both operands' scales; a mask is added
times its own scale; the result is in units of the stored values, times
v's scale, divided by the result's on the way out.
"""

from __future__ import annotations

from xdsl.dialects.builtin import TensorType

from gedialects.graph import ops as g
from gedialects.tile import structured as st
from lowering.legality import CUBE_KERNEL

from .cube import fp16_copy, product_operand, transposed_copy
from .registry import lowers
from .vector import VectorKernel


@lowers(g.AttentionOp, family=CUBE_KERNEL)
def lower_attention(ctx, op: g.AttentionOp) -> None:
    q, k, v = op.q, op.k, op.v
    sources = {x: ctx.transposed_views.get(x, (x, None))[0] for x in (q, k, v)}
    casts = {s: fp16_copy(ctx, op, s) for s in sources.values()}  # cast kernels run first
    v_t = None if ctx.fp16 else transposed_copy(ctx, op, v)
    kernel = VectorKernel(ctx, op, "attention")
    lq, _ = product_operand(ctx, kernel, q, casts, as_b=False)
    lk, _ = product_operand(ctx, kernel, k, casts, as_b=False)
    if v_t is not None:
        sv = g.shape_of(v)
        lv = kernel.emit(st.LoadOp(v_t, TensorType(ctx.elem, [*sv[:-2], sv[-1], sv[-2]])))
    else:
        lv, _ = product_operand(ctx, kernel, v, casts, as_b=False)
    masks = [kernel.load(m, g.shape_of(m)) for m in op.masks]
    mask_scales = [1.0 if ctx.constant_value(m) is not None else ctx.scale_of(m) for m in op.masks]
    scale = op.float_("scale", 1.0) * ctx.scale_of(sources[q]) * ctx.scale_of(sources[k])
    result = kernel.emit(st.AttentionOp(lq, lk, lv, masks, scale, mask_scales, transpose_v=v_t is not None,
                                        zero_empty_rows=op.zero_empty_rows is not None))
    v_scale = ctx.scale_of(sources[v])
    out = op.output

    def epilogue(sb, o):
        return kernel.narrow(sb, o if v_scale == 1.0 else sb.mul(o, sb.const(v_scale)), out)

    kernel.store(kernel.map([result], list(st.shape_of(result)), kernel.stored_as(out), epilogue), out)
