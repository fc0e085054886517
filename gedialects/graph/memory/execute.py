"""The reference interpreter, running out of one arena buffer per function.

`run_planned(module, inputs)` executes a planned `@main` like
`interpreter.run`, except that every tensor with an arena offset lives only
in its slot of one `np.uint8` buffer of `arena_size` bytes: each step reads
its operands from their slots and writes its results into theirs. So the
outputs match `run` only if no step overwrote bytes that a later step still
reads: a plan that overlaps live tensors gives wrong numbers here (views,
in-place results and concat pieces share bytes exactly as the plan says).

Graph inputs, constants and host tensors (`graph.offload` results) are kept
apart, as on the device. The plan is not verified first, on purpose: this is
the independent, numerical check of the verifier's claims.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import SSAValue
from xdsl.utils.exceptions import InterpretationError

from gedialects.graph.interpreter import (
    evaluate,
    input_names,
    main_function,
    output_names,
)
from gedialects.graph.memory.attributes import arena_size, op_offsets
from gedialects.graph.memory.lifetimes import is_step
from gedialects.graph.ops import shape_of
from gedialects.graph.tensors import numpy_dtype
from gedialects.location import describe_op


def _slot(arena: np.ndarray, value: SSAValue, offset: int) -> np.ndarray:
    assert isinstance(value.type, TensorType)
    dtype = numpy_dtype(value.type.element_type)
    shape = shape_of(value)
    n = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if offset < 0 or offset + n > arena.size:
        raise InterpretationError(f"bytes [{offset}, {offset + n}) are outside the arena of {arena.size} bytes")
    return arena[offset : offset + n].view(dtype).reshape(shape)


def run_function(fn: func.FuncOp, args: list[np.ndarray]) -> tuple[list[np.ndarray], np.ndarray]:
    """The outputs of `fn` and its arena at the end."""
    arena = np.zeros(arena_size(fn), dtype=np.uint8)
    # values outside the arena: inputs, constants, host tensors, non-tensors
    env: dict[SSAValue, np.ndarray] = dict(zip(fn.args, args))
    where: dict[SSAValue, int] = {}

    def read(value: SSAValue) -> np.ndarray:
        if value in where:
            return _slot(arena, value, where[value])
        return env[value]

    for op in fn.body.block.ops:
        if isinstance(op, func.ReturnOp):
            return [np.array(read(v)) for v in op.operands], arena
        results = evaluate(op, [read(o) for o in op.operands])
        offsets = op_offsets(op) if is_step(op) else [-1] * len(op.results)
        for res, value, off in zip(op.results, results, offsets, strict=True):
            if off < 0:
                env[res] = np.array(value)
            else:
                try:
                    slot = _slot(arena, res, off)
                except InterpretationError as e:
                    raise InterpretationError(f"{describe_op(op)}: {e}") from None
                slot[...] = value  # numpy copies through a temporary if they overlap
                where[res] = off
    raise InterpretationError(f"@{fn.sym_name.data} has no func.return")


def run_planned(module: ModuleOp, inputs: Mapping[str, np.ndarray], entry: str = "main") -> dict[str, np.ndarray]:
    """Execute planned `@main` out of its arena; outputs by name."""
    fn = main_function(module, entry)
    args = []
    for name, arg in zip(input_names(fn), fn.args):
        if name not in inputs:
            raise InterpretationError(f"missing input: {name}")
        args.append(np.asarray(inputs[name]).astype(numpy_dtype(arg.type.element_type), copy=False))  # type: ignore[attr-defined]
    outputs, _ = run_function(fn, args)
    return dict(zip(output_names(fn), outputs))
