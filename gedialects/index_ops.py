"""Index arithmetic ops built without IRDL's argument processing.

The lowering builds tens of thousands of `arith` ops on index values
(densenet121: 16k binary ops and constants through the tile builder and
convert-tile-to-npu); `Operation.create` with the same operands, result
type and properties as the ops' constructors builds each in half the time.
"""

from __future__ import annotations

import functools

from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerAttr
from xdsl.ir import Attribute, Operation, SSAValue

INDEX = IndexType()


@functools.cache
def _default_properties(cls: type[Operation]) -> tuple[tuple[str, Attribute], ...]:
    """The properties an op class's constructor sets when not given (AddiOp's overflow flags)."""
    definition = cls.get_irdl_definition()  # type: ignore[attr-defined]
    return tuple((name, prop.default_value) for name, prop in definition.properties.items()
                 if prop.default_value is not None)


def binary(cls: type[Operation], lhs: SSAValue, rhs: SSAValue) -> Operation:
    """`cls(lhs, rhs)` for an arith binary op class: the result typed as lhs."""
    return cls.create(operands=[lhs, rhs], result_types=[lhs.type], properties=dict(_default_properties(cls)))


@functools.lru_cache(maxsize=1 << 16)
def index_attr(value: int) -> IntegerAttr:
    """`IntegerAttr(value, IndexType())`, built once per value: attributes
    are immutable and a program's offsets and sizes repeat a few numbers."""
    return IntegerAttr(value, INDEX)


def index_constant(value: int) -> arith.ConstantOp:
    """`arith.ConstantOp(IntegerAttr(value, IndexType()))`."""
    return arith.ConstantOp.create(properties={"value": index_attr(value)}, result_types=[INDEX])
