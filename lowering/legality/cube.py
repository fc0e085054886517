"""The cube family's rules: graph.matmul / graph.gemm of row-major tensors
the CNN gemm refuses (lowering/graph_to_tile/cube.py): any M, N and K
(padded to fractals and blocks on chip), batch dims broadcast, either
operand from GM; fused attention (attention.py); transposes folded into the
products that read them, or run as products with an identity."""

from __future__ import annotations

import math

from xdsl.ir import Operation, SSAValue

from gedialects.graph import ops as g
from gedialects.graph import shapes
from gedialects.npu.isa import FRACTAL

from .base import AI_CPU, CUBE_KERNEL, VECTOR_KERNEL, Context, engine_of, is_constant, is_f32, kernel_of

IDENTITY_PRODUCT_LIMIT = 512
"""Longest block of a row an identity-product transpose contracts over (bs x bs MACs per block of a row)."""


def identity_block(b: int) -> int | None:
    """The block length bs an identity-product transpose of rows of b
    elements works in: b itself up to IDENTITY_PRODUCT_LIMIT, else the
    largest divisor of b up to it (the rows are read in b / bs blocks), or
    None when that is shorter than a fractal (16)."""
    if b <= IDENTITY_PRODUCT_LIMIT:
        return b
    bs = max(d for d in range(1, IDENTITY_PRODUCT_LIMIT + 1) if b % d == 0)
    return bs if bs >= 16 else None


ATTENTION_WIDTH_LIMIT = 512
"""Widest head (q/k and v rows) the attention kernel takes: a 16-row query
tile and a 16-key block of it fit L0A/L0B on every target."""


def attention_refusal(op: g.AttentionOp, ctx: Context) -> str | None:
    """None when the cube family runs op as one flash-attention kernel
    (graph_to_tile/attention.py), else why not."""
    for v in (*op.operands, *op.results):
        if not is_f32(v):
            return f"element type {v.type.element_type} is not lowered on the AI core (f32 only)"  # type: ignore[attr-defined]
        if not shapes.is_static(g.shape_of(v)):
            return "dynamic shape"
    sq, sk, sv = (g.shape_of(x) for x in (op.q, op.k, op.v))
    d, keys, dv = sq[-1], sk[-2], sv[-1]
    if max(d, dv) > ATTENTION_WIDTH_LIMIT:
        return f"heads of {d} (values {dv}) are wider than {ATTENTION_WIDTH_LIMIT}"
    if keys % FRACTAL and keys > ATTENTION_WIDTH_LIMIT:
        return f"{keys} keys are not whole 16-key blocks and more than {ATTENTION_WIDTH_LIMIT} (one block)"
    for m in op.masks:
        if not g.shape_of(m) or g.shape_of(m)[-1] != keys:
            return f"mask {shapes.fmt(g.shape_of(m))} broadcasts over the keys"
    if not ctx.fp16:  # fp32 values are read as v^T, written by an identity product first
        if folded_transpose(op.v) is not None:
            return "fp32 values read through a transpose (load_2d transposes fp16 fractals only)"
        if identity_block(dv) is None:
            return (f"fp32 values with rows of {dv} elements, which have no divisor from 16 to "
                    f"{IDENTITY_PRODUCT_LIMIT} (the blocks of their identity-product transpose)")
    return None


def cube_refusal(op: Operation, ctx: Context) -> str | None:
    """None when the cube family lowers op, else why not."""
    if isinstance(op, g.AttentionOp):
        return attention_refusal(op, ctx)
    if not isinstance(op, g.MatMulOp | g.GemmOp):
        return f"no AI-core kernel for {op.name}"
    for v in (*op.operands, *op.results):
        if not is_f32(v):
            return f"element type {v.type.element_type} is not lowered on the AI core (f32 only)"  # type: ignore[attr-defined]
        if not shapes.is_static(g.shape_of(v)):
            return "dynamic shape"
    a, b = op.operands[0], op.operands[1]
    sa, sb = g.shape_of(a), g.shape_of(b)
    if len(sa) < 2 or len(sb) < 2:
        return "a 1-D matmul operand is not lowered on the cube"
    gemm = isinstance(op, g.GemmOp)
    if gemm and op.int_("trans_a", 0):
        return "trans_a not lowered"
    trans_b = gemm and bool(op.int_("trans_b", 0))
    n = sb[-2] if trans_b else sb[-1]
    perm = folded_transpose(b)
    if perm is not None and perm[-1] != len(perm) - 1:
        trans_b = True  # the product reads the transpose's source as b^T
    if not is_constant(b) and not trans_b and not ctx.fp16:
        # fp32 is not transposed on the way to L0B: an identity product
        # writes b^T first (graph_to_tile/cube.py), from a tensor of its own
        if perm is not None:
            return "an fp32 row-major right operand read through a transpose (load_2d transposes fp16 fractals only)"
        if identity_block(n) is None:
            return (f"an fp32 row-major right operand with rows of {n} elements, which have no divisor from 16 "
                    f"to {IDENTITY_PRODUCT_LIMIT} (the blocks of its identity-product transpose)")
    bias = op.operands[2] if len(op.operands) > 2 else None
    if bias is not None:
        sbias = g.shape_of(bias)
        if len(sbias) > len(g.shape_of(op.results[0])) or (sbias and sbias[-1] not in (1, n)) or (sbias and sbias[-1] == 1 and n > 1):
            return f"bias {shapes.fmt(sbias)} is not a row of {n}"
    return None


def folded_transpose(v: SSAValue) -> tuple[int, ...] | None:
    """foldable_transpose(v), unless the partition placed that transpose
    as a kernel of its own (vector family or AI CPU): then its readers read
    its result, not its source."""
    perm = foldable_transpose(v)
    if perm is not None and (kernel_of(v.owner) == VECTOR_KERNEL or engine_of(v.owner) == AI_CPU):  # type: ignore[arg-type]
        return None
    return perm


def foldable_transpose(v: SSAValue) -> tuple[int, ...] | None:
    """The perm of v when v is a transpose only products (matmuls, attention)
    read and the cube can read its source through permuted strides instead
    (attention's head split and keys), else None: as the left operand the innermost dim must stay
    innermost; as the right operand it may also swap with the one before
    (the source is then read as b^T)."""
    op = v.owner
    if not isinstance(op, g.TransposeOp) or is_constant(op.input):
        return None
    n = len(g.shape_of(op.input))
    perm = tuple(p % n for p in op.ints("perm", ())) or tuple(range(n))[::-1]
    users = [u.operation for u in v.uses]
    if n < 2 or not users:
        return None
    for u in users:
        if isinstance(u, g.AttentionOp):  # q, keys and values are read as rows
            if perm[-1] != n - 1 or v in u.masks or sum(x is v for x in u.operands) > 1:
                return None
            continue
        if not isinstance(u, g.MatMulOp) or u.operands[0] is u.operands[1]:
            return None
        as_b = u.operands[1] is v
        if not (perm[-1] == n - 1 or as_b and perm[-2] == n - 1):
            return None
    return perm


def group_swap(op: g.TransposeOp) -> tuple[int, int, int] | None:
    """(batch, a, b) when op's perm keeps a prefix of dims and swaps the two
    groups after it -- x viewed as [batch, a, b] becomes [batch, b, a]
    ((0, 2, 1), NCHW <-> NHWC, a window's (0, 2, 3, 1)) -- else None."""
    shape = g.shape_of(op.input)
    n = len(shape)
    perm = [p % n for p in op.ints("perm", ())] or list(range(n))[::-1]
    p = 0
    while p < n and perm[p] == p:
        p += 1
    if p >= n - 1:
        return None
    q = perm[p]
    if perm[p:] != list(range(q, n)) + list(range(p, q)):
        return None
    return math.prod(shape[:p]), math.prod(shape[p:q]), math.prod(shape[q:])


def cube_transpose_refusal(op: g.TransposeOp, ctx: Context) -> str | None:
    """None when the cube runs this transpose as a product with an identity:
    y[.., j, i] = sum_k I[j, k] x[.., i, k] (exact for finite values: every
    product is by 1 or 0; an inf or NaN in a row of x makes that row of
    outputs NaN)."""
    if not is_f32(op.input) or not shapes.is_static(g.shape_of(op.input)):
        return "a transpose on the cube takes static f32 tensors"
    swap = group_swap(op)
    if swap is None:
        return f"perm {op.ints('perm', ())} is not a swap of two dim groups"
    _, _, b = swap
    if identity_block(b) is None:
        return (f"rows of {b} elements have no divisor from 16 to {IDENTITY_PRODUCT_LIMIT} "
                "(the blocks of an identity-product transpose)")
    return None


def folded_into_products(op: Operation) -> bool:
    """A transpose the partition placed on the cube that lowers to no kernel:
    every reader is a product placed on the cube, which reads its source
    through permuted strides (lowering/graph_to_tile/cube.py)."""
    return (isinstance(op, g.TransposeOp) and kernel_of(op) == CUBE_KERNEL
            and foldable_transpose(op.output) is not None
            and all(kernel_of(u.operation) == CUBE_KERNEL for u in op.output.uses))


def _reads_heads(op: Operation) -> bool:
    if not isinstance(op, g.TransposeOp):
        return False
    n = len(g.shape_of(op.input))
    perm = [p % n for p in op.ints("perm", ())]
    return bool(perm) and perm[-1] == n - 1 and (folded_into_products(op) or kernel_of(op) == VECTOR_KERNEL)


def head_windows(op: Operation) -> tuple[int | None, ...]:
    """Per result of a split of a row-major tensor's last axis: the head
    width d when the cube reads that result only as attention heads through
    a window of the split's input, else None. Heads: every reader is a
    reshape of the last dim into [h, d] (d dividing the result's offset and
    the input's last dim, so the window is a box of the input viewed as
    [.., last / d, d]) whose readers are transposes that keep d innermost,
    folded into the products that read them (`folded_into_products`) or
    placed as vector kernels (a load through permuted strides: fp32 heads,
    which load_2d cannot transpose); HorizontalMatMulFusionPass makes such
    splits, of a merged query/key/value product. Asked once the partition
    placed every op; a result read otherwise is copied out (the vector
    family's box copies)."""
    if not isinstance(op, g.SplitOp) or engine_of(op) == AI_CPU:
        return ()
    shape = g.shape_of(op.input)
    n = len(shape)
    if n < 2 or op.int_("axis", 0) % n != n - 1:
        return ()
    offsets = [0]
    for size in op.ints("split"):
        offsets.append(offsets[-1] + size)
    found: list[int | None] = []
    for r, offset in zip(op.results, offsets):
        widths = set()
        for use in r.uses:
            reshape = use.operation
            heads = g.shape_of(reshape.results[0]) if isinstance(reshape, g.ReshapeOp) else ()
            if (len(heads) != n + 1 or tuple(heads[:-2]) != tuple(shape[:-1]) or engine_of(reshape) == AI_CPU
                    or not reshape.results[0].uses
                    or not all(_reads_heads(t.operation) for t in reshape.results[0].uses)):
                widths.add(None)
                continue
            widths.add(heads[-1])
        d = widths.pop() if len(widths) == 1 else None
        found.append(d if d and offset % d == 0 and shape[-1] % d == 0 else None)
    return tuple(found)
