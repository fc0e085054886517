"""The legality table: which graph ops convert-graph-to-tile lowers to
AI-core kernels, for which shapes, element types and attributes, and with
which kernel family.

One definition, read by the partition (`graph-partition`, which places every
other op on the AI CPU with the reason) and by convert-graph-to-tile (which
lowers an op only where this table says it can). Each entry states the
preconditions of one lowering pattern, by family: the CNN patterns of
NC1HWC0 maps (cnn.py, `ai_core_refusal`), the structured vector kernels
(vector.py, `vector_refusal`) and the cube's (cube.py, `cube_refusal`);
`choose_kernel` asks them in that order and returns the family, or the
reasons, e.g. `no AI-core kernel for graph.where` or `softmax along axis 1
of 2x16x32 is not along the last non-unit dim`. base.py holds what they
share.
"""

from __future__ import annotations

from xdsl.ir import Operation

from gedialects.graph import ops as g

from .base import (AI_CORE, AI_CPU, CUBE_KERNEL, ENGINE_ATTR, KERNEL_ATTR, REASON_ATTR, STRUCTURED_FAMILIES,
                   VECTOR_KERNEL, Context, CopyBox, Rule, copy_boxes, engine_of, is_constant, kernel_of,
                   nonnegative_values)
from .cnn import (CUBE_ACTIVATIONS, FUSION_BODY_OPS, MAP_ELEMENTWISE, MAP_OPS, MAP_UNARY_OPS, RULES,
                  SCALE_EQUIVARIANT_BINARY, MapTranspose, ai_core_refusal, batch_slice, channel_boxes_refusal,
                  channel_permutation, channel_view_refusal, map_transpose, rule, space_to_depth_refusal)
from .cube import (ATTENTION_WIDTH_LIMIT, IDENTITY_PRODUCT_LIMIT, attention_refusal, cube_refusal,
                   cube_transpose_refusal, foldable_transpose, folded_transpose, folded_into_products, group_swap,
                   head_windows, identity_block)
from .vector import VECTOR_RULES, gather_view, vector_refusal, vector_rule

__all__ = [
    "AI_CORE", "AI_CPU", "ATTENTION_WIDTH_LIMIT", "CUBE_ACTIVATIONS", "CUBE_KERNEL", "ENGINE_ATTR",
    "FUSION_BODY_OPS", "IDENTITY_PRODUCT_LIMIT", "KERNEL_ATTR", "MAP_ELEMENTWISE", "MAP_OPS", "MAP_UNARY_OPS",
    "REASON_ATTR", "RULES", "SCALE_EQUIVARIANT_BINARY", "STRUCTURED_FAMILIES", "VECTOR_KERNEL", "VECTOR_RULES",
    "Context", "CopyBox", "MapTranspose", "Rule", "ai_core_refusal", "attention_refusal", "batch_slice",
    "channel_boxes_refusal", "channel_permutation", "channel_view_refusal", "choose_kernel", "copy_boxes",
    "cube_refusal", "cube_transpose_refusal", "engine_of", "foldable_transpose", "folded_into_products",
    "folded_transpose", "gather_view", "group_swap", "head_windows", "identity_block", "is_constant", "kernel_of",
    "map_transpose",
    "nonnegative_values", "rule", "space_to_depth_refusal", "vector_refusal", "vector_rule",
]


def choose_kernel(op: Operation, ctx: Context) -> tuple[str | None, str | None]:
    """(family, None) for the patterns that lower op, or (None, reason)."""
    why = ai_core_refusal(op, ctx)
    if why is None:
        return "cnn", None
    if isinstance(op, g.GemmOp | g.MatMulOp | g.AttentionOp):
        cube_why = cube_refusal(op, ctx)
        return (CUBE_KERNEL, None) if cube_why is None else (None, f"{why}; on the cube: {cube_why}")
    if isinstance(op, g.TransposeOp) and foldable_transpose(op.output) is not None:
        users = [u.operation for u in op.output.uses]
        refusals = [r for r in (cube_refusal(u, ctx) for u in users) if r is not None]
        if not refusals:
            return CUBE_KERNEL, None  # folded into the products that read it
        why = f"{why}; read by a product that the cube refuses: {refusals[0]}"
    if isinstance(op, g.VIEW_OPS + (g.TransDataOp, g.SpaceToDepthOp, g.ConvOp, g.MaxPoolOp, g.AvgPoolOp)):
        return None, why
    vector_why = vector_refusal(op, ctx)
    if vector_why is None:
        return VECTOR_KERNEL, None
    if isinstance(op, g.TransposeOp):
        cube_why = cube_transpose_refusal(op, ctx)
        if cube_why is None:
            return CUBE_KERNEL, None
        vector_why = f"{vector_why}; on the cube: {cube_why}"
    if why.startswith("no AI-core kernel"):
        return None, vector_why
    return None, f"{why}; as a vector kernel: {vector_why}"
