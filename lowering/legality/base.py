"""What every rule of the legality table shares: where the partition placed
an op (`ge.engine`, `ge.kernel`), the `Context` a rule may read, the kernel
family names, element-type and rank helpers, and the box copies a slice,
split or concat is (`copy_boxes`, read by the CNN and the vector rules and
by the copy pattern)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.dialects.builtin import Float32Type, IntegerType, TensorType
from xdsl.ir import Block, Operation, SSAValue

from gedialects.graph import ops as g

AI_CORE = "AI_CORE"
AI_CPU = "AI_CPU"
ENGINE_ATTR = "ge.engine"
REASON_ATTR = "ge.reason"

KERNEL_ATTR = "ge.kernel"
VECTOR_KERNEL = "vector"
CUBE_KERNEL = "cube"
STRUCTURED_FAMILIES = (VECTOR_KERNEL, CUBE_KERNEL)
"""Kernel families built as structured tile kernels: they read and write row-major (logical) tensors."""


def engine_of(op: Operation) -> str:
    """Where the partition placed op (AI_CORE unless annotated otherwise)."""
    attr = op.attributes.get(ENGINE_ATTR)
    return getattr(attr, "data", AI_CORE)


def is_constant(v: SSAValue) -> bool:
    return isinstance(v.owner, g.ConstantOp | g.FillOp)


def rank(v: SSAValue) -> int:
    return len(g.shape_of(v))


def is_f32(v: SSAValue) -> bool:
    return isinstance(v.type, TensorType) and isinstance(v.type.element_type, Float32Type)


def is_int(v: SSAValue) -> bool:
    """An i32 or i64 tensor (the integers the AI core reads)."""
    element = getattr(v.type, "element_type", None)
    return isinstance(element, IntegerType) and element.width.data in (32, 64)


def _nonnegative_activation(op: Operation) -> bool:
    act, params = op.str_("activation", ""), op.floats("activation_params")  # type: ignore[attr-defined]
    return act in ("relu", "sigmoid") or act == "clip" and params[0] >= 0


def nonnegative_values(block: Block) -> set[SSAValue]:
    """Values known to be >= 0 (a zero halo is exact for max-pooling them)."""
    nonneg: set[SSAValue] = set()
    for op in block.ops:
        if isinstance(op, g.ConvOp) and _nonnegative_activation(op) or isinstance(op, g.ReluOp | g.SigmoidOp):
            nonneg.add(op.results[0])
        elif isinstance(op, g.FusionOp):
            y = op.body.block.last_op
            if y is not None and y.operands and isinstance(y.operands[0].owner, g.ReluOp):
                nonneg.add(op.results[0])
        elif isinstance(op, g.MaxPoolOp | g.AvgPoolOp | g.GlobalAvgPoolOp | g.LrnOp) and op.operands[0] in nonneg:
            nonneg.add(op.results[0])
        elif isinstance(op, g.ConcatOp) and all(x in nonneg for x in op.inputs):
            nonneg.add(op.results[0])
        elif isinstance(op, g.VIEW_OPS + (g.TransposeOp, g.TransDataOp)) and op.operands[0] in nonneg:
            nonneg.add(op.results[0])
    return nonneg


class Context:
    """What a rule may need beyond the op: the precision mode and facts about
    the function (non-negative values)."""

    def __init__(self, fn: func.FuncOp, precision: str):
        self.precision = precision
        self.fp16 = precision == "force_fp16"
        self.nonneg = nonnegative_values(fn.body.block)
        # force_fp16 stores activations in fp16 but graph inputs stay fp32:
        # only 4-D maps get a conversion kernel (the input transdata)
        self.fp32_inputs = {a for a in fn.args if self.fp16 and rank(a) != 4 and is_f32(a)}
        # ... and only where they are read as maps (NC1HWC0): a gemm, softmax
        # or transpose reads a 4-D input (or a view of one) in its logical
        # order, with no transdata, and would take its fp32 bytes for fp16
        self.fp32_maps = {a for a in fn.args if self.fp16 and rank(a) == 4 and is_f32(a)}
        for op in fn.body.block.ops:  # views alias the input's bytes
            if isinstance(op, g.VIEW_OPS) and op.operands and op.operands[0] in self.fp32_maps | self.fp32_inputs:
                # a 4-D view of any fp32 input is a map the input transdata converts
                # (Whisper's [1, 80, 3000] features as a conv's [1, 80, 1, 3000])
                for r in op.results:
                    (self.fp32_maps if rank(r) == 4 else self.fp32_inputs).add(r)


Rule = Callable[[Operation, Context], "str | None"]


def rule_registry(table: dict[type[Operation], Rule]) -> Callable[..., Callable[[Rule], Rule]]:
    """The decorator `@name(OpType, ...)` that registers a rule in `table`."""

    def rule(*op_types: type[Operation]) -> Callable[[Rule], Rule]:
        def register(fn: Rule) -> Rule:
            for op_type in op_types:
                table[op_type] = fn
            return fn

        return register

    return rule


def kernel_of(op: Operation) -> str | None:
    """The kernel family the partition chose for an AI-core op (None: the CNN patterns)."""
    attr = op.attributes.get(KERNEL_ATTR)
    return getattr(attr, "data", None)


def compute_bytes(fp16: bool) -> int:
    """Bytes of an element the AI core computes on in a precision mode."""
    return 2 if fp16 else 4


def written_as_rows(v: SSAValue) -> bool:
    """v (or what it views) is the result of a structured kernel: row-major."""
    while isinstance(v.owner, g.VIEW_OPS):
        v = v.owner.operands[0]
    return isinstance(v.owner, Operation) and kernel_of(v.owner) in STRUCTURED_FAMILIES


@dataclass(frozen=True)
class CopyBox:
    """One box copy of a data-movement op: src[src_offsets : + shape] ->
    dst[dst_offsets : + shape] (offsets None: the whole tensor); `src_steps`:
    every k-th source element along a dim (a strided slice; None: all 1)."""

    src: SSAValue
    src_offsets: tuple[int, ...] | None
    dst: SSAValue
    dst_offsets: tuple[int, ...] | None
    shape: tuple[int, ...]
    src_steps: tuple[int, ...] | None = None


def copy_boxes(op: Operation) -> list[CopyBox] | str:
    """The box copies a slice, split or concat is (one kernel each), or why
    it is not one: the one definition the legality rule and the pattern
    (graph_to_tile/copy.py) share."""
    if isinstance(op, g.SliceOp):
        x = g.shape_of(op.input)
        starts, ends = op.ints("starts"), op.ints("ends")
        axes = op.ints("axes") or tuple(range(len(starts)))
        steps = op.ints("steps") or (1,) * len(starts)
        offsets, strides = [0] * len(x), [1] * len(x)
        for st, en, ax, sp in zip(starts, ends, axes, steps):
            if sp < 1:
                return f"a slice with step {sp} (DMA moves forwards)"
            if sp != 1 and ax % len(x) == len(x) - 1:
                return f"a slice with step {sp} along the innermost dim (DMA moves contiguous rows)"
            offsets[ax % len(x)] = slice(st, en, sp).indices(x[ax % len(x)])[0]
            strides[ax % len(x)] = sp
        steps_or_none = tuple(strides) if any(sp != 1 for sp in strides) else None
        return [CopyBox(op.input, tuple(offsets), op.output, None, tuple(g.shape_of(op.output)), steps_or_none)]
    if isinstance(op, g.SplitOp):
        axis, boxes, at = op.int_("axis", 0) % len(g.shape_of(op.input)), [], 0
        for out in op.outputs:
            offsets = [0] * len(g.shape_of(op.input))
            offsets[axis] = at
            boxes.append(CopyBox(op.input, tuple(offsets), out, None, tuple(g.shape_of(out))))
            at += g.shape_of(out)[axis]
        return boxes
    if isinstance(op, g.ConcatOp):
        rank = len(g.shape_of(op.output))
        axis = op.int_("axis", 0) % rank
        if rank == 4 and axis == 1 and not all(written_as_rows(x) for x in op.inputs):
            return "a channel concat of maps is written in place by its producers (the CNN patterns)"
        boxes, at = [], 0
        for x in op.inputs:
            offsets = [0] * rank
            offsets[axis] = at
            boxes.append(CopyBox(x, None, op.output, tuple(offsets), tuple(g.shape_of(x))))
            at += g.shape_of(x)[axis]
        return boxes
    return f"no AI-core kernel for {op.name}"
