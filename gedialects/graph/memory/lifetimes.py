"""Tensors, lifetimes and storage sharing of one scheduled graph function.

Conventions (docs/memory-planning.md):
- The schedule is the op order of the function body. Step i is the i-th op
  that is not a constant (`graph.constant`, `graph.fill`) and not the
  terminator; `func.return` is the virtual step N (= number of steps). A
  `graph.fusion` is one step: its body allocates nothing in the arena.
- A tensor's lifetime is [defining step, last step that reads it]; a graph
  output is read by `func.return`, so it lives to step N.
- Graph inputs, constants/weights and host tensors (`graph.offload` results)
  are not in the arena: GE keeps inputs and weights in buffers of their own.
  Every other tensor result of a step is.
- Storage sharing, decided in schedule order:
  * a view (reshape/flatten/squeeze/unsqueeze/identity) is its operand's
    bytes: it takes no memory;
  * an op that reads an operand only at the index it writes (elementwise
    ops, batch_norm, a loop fusion, conv's residual) writes its result in
    place of that operand when the operand's storage dies at this step and
    has the result's size;
  * a concat along an axis with only unit dims before it is laid out as its
    pieces side by side, so each piece's producer writes straight into the
    concat (no copy) when the piece owns its storage and its position is a
    multiple of the alignment (so every address stays aligned).
  Tensors sharing storage form one *block*: the unit the strategies place,
  live from its first member's definition to its last member's last use.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.traits import ConstantLike

from gedialects.graph import ops as g
from gedialects.graph import shapes
from gedialects.graph.memory_ops import OffloadOp
from gedialects.graph.tensors import numpy_dtype
from gedialects.location import describe_op


_ELEMENTWISE = (g.ElementwiseUnaryOp, g.ElementwiseBinaryOp, g.SumOp, g.BatchNormOp, g.FusionOp)


class MemoryPlanError(Exception):
    """The function cannot be planned (e.g. a dynamic shape); one line for a user."""


@dataclass(frozen=True)
class Block:
    """A piece of storage to place in the arena: `size` bytes (aligned),
    needed at every step of [first, last]."""

    size: int
    first: int
    last: int

    def overlaps_in_time(self, other: Block) -> bool:
        return self.first <= other.last and other.first <= self.last


@dataclass(frozen=True)
class Tensor:
    """A tensor result of a step that lives in the arena."""

    value: SSAValue
    step: int
    """The step that defines it (first step of its lifetime)."""
    last: int
    """The last step that reads it; N for graph outputs."""
    nbytes: int
    block: int
    """Index of the block holding it."""
    offset_in_block: int
    how: str
    """How it got its storage: "own" (its producer writes it; a concat piece
    that lies inside its concat is "own" too), "view" (its operand's bytes)
    or "in-place" (written over a dying operand)."""


@dataclass(frozen=True)
class Liveness:
    """The memory problem of one function: its steps, its arena tensors (in
    schedule order) and the blocks they share."""

    steps: tuple[Operation, ...]
    tensors: tuple[Tensor, ...]
    blocks: tuple[Block, ...]
    alignment: int

    @property
    def end(self) -> int:
        """The step of `func.return`."""
        return len(self.steps)

    def live_bytes(self) -> list[int]:
        """Bytes of blocks live at each step 0..N."""
        delta = [0] * (self.end + 2)
        for b in self.blocks:
            delta[b.first] += b.size
            delta[b.last + 1] -= b.size
        out, acc = [], 0
        for d in delta[: self.end + 1]:
            acc += d
            out.append(acc)
        return out

    def lower_bound(self) -> int:
        """Max over steps of live bytes: no placement can use less."""
        return max(self.live_bytes(), default=0)

    def no_reuse(self) -> int:
        """Bytes if every tensor that holds data (not a view) had its own slot."""
        return sum(
            align(t.nbytes, self.alignment) for t in self.tensors if t.how != "view"
        )

    def tensor_offsets(self, block_offsets: Sequence[int]) -> dict[SSAValue, int]:
        return {t.value: block_offsets[t.block] + t.offset_in_block for t in self.tensors}


def align(n: int, alignment: int) -> int:
    return -(-n // alignment) * alignment


def is_step(op: Operation) -> bool:
    return not op.has_trait(ConstantLike) and not isinstance(op, func.ReturnOp)


def schedule(fn: func.FuncOp) -> list[Operation]:
    """The steps of a function, in order."""
    return [op for op in fn.body.block.ops if is_step(op)]


def tensor_nbytes(value: SSAValue) -> int:
    t = value.type
    assert isinstance(t, TensorType)
    shape = tuple(t.get_shape())
    if not shapes.is_static(shape):
        raise MemoryPlanError(f"{t} has a dynamic shape")
    return math.prod(shape) * numpy_dtype(t.element_type).itemsize


def inplace_operands(op: Operation, result: int) -> tuple[int, ...]:
    """Operand indices whose storage result #`result` may overwrite: the op
    reads them only at the index it writes, and they have the result's type."""
    if isinstance(op, g.ConvOp):
        candidates: Sequence[int] = [len(op.operands) - 1] if op.residual is not None else []
    elif isinstance(op, g.BatchNormOp):
        candidates = [0]
    elif isinstance(op, _ELEMENTWISE):
        candidates = range(len(op.operands))
    else:
        return ()
    rtype = op.results[result].type
    return tuple(i for i in candidates if op.operands[i].type == rtype)


def concat_positions(op: g.ConcatOp) -> list[int] | None:
    """Byte position of each operand inside the concat's result, when the
    pieces lie side by side (only unit dims before the axis); else None."""
    out = g.shape_of(op.output)
    axis = op.int_("axis", 0) % max(len(out), 1)
    if math.prod(out[:axis]) != 1:
        return None
    positions, at = [], 0
    for o in op.operands:
        positions.append(at)
        at += tensor_nbytes(o)
    return positions


def last_uses(fn: func.FuncOp, steps: Sequence[Operation]) -> dict[SSAValue, int]:
    """The last step reading each result of a step: N when `func.return`
    reads it, its own step when nothing does. A use inside an op's region
    counts as a use by that op."""
    index = {op: i for i, op in enumerate(steps)}
    end = len(steps)
    block = fn.body.block
    out: dict[SSAValue, int] = {}
    for s, op in enumerate(steps):
        for res in op.results:
            last = s
            for use in res.uses:
                user = use.operation
                while user.parent_block() is not block:
                    user = user.parent_op()  # type: ignore[assignment]
                last = max(last, end if isinstance(user, func.ReturnOp) else index.get(user, s))
            out[res] = last
    return out


def analyse(fn: func.FuncOp, alignment: int = 512) -> Liveness:
    """Steps, tensors and blocks of `fn` (see the module docstring)."""
    steps = schedule(fn)
    lasts = last_uses(fn, steps)

    # union-find with byte offsets: parent[i] = (j, offset of i inside j)
    infos: list[dict] = []
    of_value: dict[SSAValue, int] = {}
    parent: dict[int, tuple[int, int]] = {}
    first_of: dict[int, int] = {}
    last_of: dict[int, int] = {}

    def top(i: int) -> tuple[int, int]:
        off = 0
        while i in parent:
            i, o = parent[i]
            off += o
        return i, off

    def join(child_root: int, root: int, offset: int) -> None:
        parent[child_root] = (root, offset)
        first_of[root] = min(first_of[root], first_of.pop(child_root))
        last_of[root] = max(last_of[root], last_of.pop(child_root))

    def arena(value: SSAValue) -> int | None:
        return of_value.get(value)

    for s, op in enumerate(steps):
        operand_ids = [arena(o) for o in op.operands]
        new: list[int] = []
        for r, res in enumerate(op.results):
            if not isinstance(res.type, TensorType) or isinstance(op, OffloadOp):
                new.append(-1)
                continue
            try:
                nbytes = tensor_nbytes(res)
            except MemoryPlanError as e:
                raise MemoryPlanError(f"{describe_op(op)}: result #{r} {e}") from None
            if isinstance(op, g.VIEW_OPS) and operand_ids[0] is None:
                new.append(-1)  # a view of a graph input or constant
                continue
            i = len(infos)
            infos.append({"value": res, "step": s, "last": lasts[res], "nbytes": nbytes, "how": "own"})
            of_value[res] = i
            first_of[i], last_of[i] = s, infos[i]["last"]
            new.append(i)

        if isinstance(op, g.VIEW_OPS) and new[0] >= 0:
            root, off = top(operand_ids[0])  # type: ignore[arg-type]
            infos[new[0]]["how"] = "view"
            join(new[0], root, off)
            continue

        if isinstance(op, g.ConcatOp) and new[0] >= 0:
            positions = concat_positions(op)
            out = new[0]
            for x, pos in zip(operand_ids, positions or []):
                if x is None or infos[x]["nbytes"] == 0 or pos % alignment:
                    continue
                root, off = top(x)
                if root == out or off != 0 or infos[root]["nbytes"] != infos[x]["nbytes"]:
                    continue
                join(root, out, pos)

        claimed: set[int] = set()
        for r, i in enumerate(new):
            if i < 0:
                continue
            for k in inplace_operands(op, r):
                x = operand_ids[k]
                if x is None or k in claimed or infos[x]["nbytes"] != infos[i]["nbytes"]:
                    continue
                root, off = top(x)
                if last_of[root] != s:
                    continue  # its storage is still needed after this step
                others = [
                    y for j, y in enumerate(operand_ids)
                    if y is not None and op.operands[j] is not op.operands[k] and top(y)[0] == root
                ]
                if others:
                    continue
                claimed.add(k)
                infos[i]["how"] = "in-place"
                join(i, root, off)
                break

    roots = sorted(first_of)  # every remaining root is a block
    block_of = {root: b for b, root in enumerate(roots)}
    blocks = tuple(
        Block(align(infos[root]["nbytes"], alignment), first_of[root], last_of[root]) for root in roots
    )
    tensors = []
    for i, info in enumerate(infos):
        root, off = top(i)
        tensors.append(
            Tensor(info["value"], info["step"], info["last"], info["nbytes"], block_of[root], off, info["how"])
        )
    return Liveness(tuple(steps), tuple(tensors), blocks, alignment)
