"""GM constants a tile pass adds to a program (the 0/1 matrices a transdata
expansion multiplies by): after every GM tensor, as placement puts the
lowering's constants after the arena (`gm_arena.replan` moves them with
the rest when the arena changes), one per distinct value."""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import IntegerAttr, StringAttr, i64

from gedialects.graph.tensors import attr_array, contiguous, resource_attr, tensor_nbytes, tensor_type
from gedialects.tile import gm_arena
from gedialects.tile import ops as t


def gm_end(prog: t.ProgramOp) -> int:
    """The first GM byte past every tensor of `prog` (host copies live elsewhere)."""
    return max((op.offset.value.data + gm_arena.slot(tensor_nbytes(op.type)) for op in prog.body.block.ops
                if isinstance(op, t.TensorOp) and op.kind.data != "host"), default=0)


def add_constant(prog: t.ProgramOp, base: str, array: np.ndarray) -> str:
    """The name of a constant tile.tensor of `prog` holding `array` (ND):
    an existing one with the same type and bytes, or a new one at the end of GM."""
    array = contiguous(np.asarray(array))
    ttype = tensor_type(array)
    tensors = [op for op in prog.body.block.ops if isinstance(op, t.TensorOp)]
    for op in tensors:
        if (op.kind.data == "constant" and op.type == ttype and op.layout.data == "ND"
                and np.array_equal(attr_array(op.value), array)):  # type: ignore[arg-type]
            return op.tensor_name.data
    names = {op.tensor_name.data for op in tensors}
    name, k = base, 0
    while name in names:
        k += 1
        name = f"{base}_{k}"
    value = resource_attr(f"ge_{prog.sym_name.data}_{name}", array)
    tensor = t.TensorOp(properties={
        "name": StringAttr(name), "kind": StringAttr("constant"), "offset": IntegerAttr(gm_end(prog), i64),
        "type": value.type, "layout": StringAttr("ND"), "value": value})
    block = prog.body.block
    if tensors:  # tensors first, before the kernels
        block.insert_op_after(tensor, tensors[-1])
    elif block.first_op is not None:
        block.insert_op_before(tensor, block.first_op)
    else:
        block.add_op(tensor)
    return name


__all__ = ["add_constant", "gm_end"]
