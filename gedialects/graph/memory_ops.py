"""Explicit copies between device and host memory, inserted by
`graph-plan-memory` when a graph must fit under a device-memory limit.

    %h = graph.offload %t : (tensor<1x64x56x56xf32>) -> tensor<1x64x56x56xf32>
    ...
    %t2 = graph.reload %h : (tensor<1x64x56x56xf32>) -> tensor<1x64x56x56xf32>

The value is unchanged (identity shape rule); what changes is where it lives:
the result of `graph.offload` is in host memory, so it takes no room in the
device arena and only `graph.reload` may read it. Memory space is carried by
the defining op, not by the tensor type, so every other op's type rules are
untouched.

These ops are deliberately not `Pure` (unlike the operators of ops.py): the
planner put each copy at a chosen step, and CSE/DCE must neither merge two
reloads of one host tensor nor move them. They also do not subclass
`GraphOp`: ops.py imports this module to list them in the `Graph` dialect,
and a base class from ops.py would make that import circular. Their numpy
kernels are in interpreter.py (identity on values).
"""

from __future__ import annotations

from xdsl.dialects.builtin import TensorType
from xdsl.ir import SSAValue
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    result_def,
)
from xdsl.utils.exceptions import VerifyException

from gedialects.location import describe_op


class _CopyOp(IRDLOperation):
    input = operand_def(TensorType)
    output = result_def(TensorType)

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "operands attr-dict `:` functional-type(operands, results)"

    def __init__(self, input: SSAValue):
        super().__init__(operands=[input], result_types=[input.type])

    def verify_(self) -> None:
        if self.input.type != self.output.type:
            raise VerifyException(
                f"{describe_op(self)}: result type {self.output.type} differs from "
                f"operand type {self.input.type}"
            )


@irdl_op_definition
class OffloadOp(_CopyOp):
    """Copy a device tensor to host memory (device -> host DMA)."""

    name = "graph.offload"

    def verify_(self) -> None:
        super().verify_()
        for use in self.output.uses:
            if not isinstance(use.operation, ReloadOp):
                raise VerifyException(
                    f"{describe_op(self)}: its result is in host memory and can only "
                    f"be read by graph.reload, not by {use.operation.name}"
                )


@irdl_op_definition
class ReloadOp(_CopyOp):
    """Copy a host tensor back into device memory (host -> device DMA)."""

    name = "graph.reload"

    def verify_(self) -> None:
        super().verify_()
        if not isinstance(self.input.owner, OffloadOp):
            raise VerifyException(
                f"{describe_op(self)}: its operand must be a host tensor made by graph.offload"
            )
