"""How a memory plan is recorded on the IR, and the accessors that read it.

Discardable attributes, printed and parsed like any other:

    func.func @main(...) attributes {ge.memory = {alignment = 512 : i64,
        arena_size = 1605632 : i64, lower_bound = 1605632 : i64,
        no_reuse = 4816896 : i64, strategy = "greedy-by-size"}} {
      %1 = graph.relu %0 {ge.offsets = array<i64: 0>, ge.lifetime = array<i64: 0, 2>} : ...

- `ge.offsets` on every step op: one byte offset into the function's arena
  per result, -1 for a result not in the arena (a host tensor, a view of a
  graph input or constant, a non-tensor result).
- `ge.lifetime` on every step op: [first, last] steps per result, flattened.
- `ge.memory` on the function: `arena_size` (= the planned bytes),
  `lower_bound`, `no_reuse`, `alignment`, `strategy`; under a device-memory
  limit also `device_memory_limit`, `host_bytes`, `recomputed`, `offloaded`.

The lowering reads GM addresses with `tensor_offset(value)` (arena base +
offset) and sizes the arena with `arena_size(func)`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from xdsl.dialects import func
from xdsl.dialects.builtin import (
    DenseArrayBase,
    DictionaryAttr,
    IntegerAttr,
    StringAttr,
    i64,
)
from xdsl.ir import Operation, SSAValue
from xdsl.traits import ConstantLike

OFFSETS = "ge.offsets"
LIFETIME = "ge.lifetime"
MEMORY = "ge.memory"

NOT_IN_ARENA = -1


class NoPlanError(LookupError):
    """The IR carries no memory plan where one was asked for."""


def _ints(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, [int(v) for v in values])


def record_op(op: Operation, offsets: Sequence[int], lifetimes: Sequence[tuple[int, int]]) -> None:
    op.attributes[OFFSETS] = _ints(offsets)
    op.attributes[LIFETIME] = _ints([x for pair in lifetimes for x in pair])


def record_function(fn: func.FuncOp, summary: Mapping[str, int | str]) -> None:
    fn.attributes[MEMORY] = DictionaryAttr(
        {
            k: StringAttr(v) if isinstance(v, str) else IntegerAttr(int(v), 64)
            for k, v in summary.items()
        }
    )


def clear(fn: func.FuncOp) -> None:
    """Remove a previous plan (the pass re-plans from scratch)."""
    fn.attributes.pop(MEMORY, None)
    for op in fn.body.walk():
        op.attributes.pop(OFFSETS, None)
        op.attributes.pop(LIFETIME, None)


def _array(op: Operation, name: str) -> list[int]:
    attr = op.attributes.get(name)
    if not isinstance(attr, DenseArrayBase):
        raise NoPlanError(f"{op.name} has no {name} attribute: run graph-plan-memory first")
    return [int(v) for v in attr.get_values()]


def op_offsets(op: Operation) -> list[int]:
    return _array(op, OFFSETS)


def op_lifetimes(op: Operation) -> list[tuple[int, int]]:
    flat = _array(op, LIFETIME)
    return list(zip(flat[::2], flat[1::2]))


def _result_index(value: SSAValue) -> tuple[Operation, int]:
    op = value.owner
    if not isinstance(op, Operation):
        raise NoPlanError("a block argument (graph input) is not in the arena")
    return op, op.results.index(value)  # type: ignore[arg-type]


def tensor_offset(value: SSAValue) -> int:
    """Byte offset of `value` in its function's arena; -1 when it is not in
    the arena (graph inputs, constants and host tensors have buffers of
    their own)."""
    op, i = _result_index(value)
    if op.has_trait(ConstantLike):
        return NOT_IN_ARENA
    return op_offsets(op)[i]


def tensor_lifetime(value: SSAValue) -> tuple[int, int]:
    """[first, last] step of `value`."""
    op, i = _result_index(value)
    return op_lifetimes(op)[i]


def memory_summary(fn: func.FuncOp) -> dict[str, int | str]:
    """The `ge.memory` dictionary of a planned function."""
    attr = fn.attributes.get(MEMORY)
    if not isinstance(attr, DictionaryAttr):
        raise NoPlanError(f"@{fn.sym_name.data} has no {MEMORY} attribute: run graph-plan-memory first")
    out: dict[str, int | str] = {}
    for k, v in attr.data.items():
        out[k] = v.data if isinstance(v, StringAttr) else v.value.data  # type: ignore[union-attr]
    return out


def arena_size(fn: func.FuncOp) -> int:
    """Bytes of the device arena the function's intermediate tensors need."""
    return int(memory_summary(fn)["arena_size"])


def has_plan(fn: func.FuncOp) -> bool:
    return isinstance(fn.attributes.get(MEMORY), DictionaryAttr)

