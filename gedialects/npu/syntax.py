"""The keyword syntax shared by all npu instructions.

An instruction prints as

    npu.vadd f16 %dst, %a, %b repeat 4 mask 64 : !npu.ptr<ub>, !npu.ptr<ub>, !npu.ptr<ub>

i.e. head values (a dtype or a pipe) by position, the pointer operands, then
`name value` pairs for its integer/float fields and bare words for its flags.
Fields equal to their default are not printed; the parser fills them in, so
every property is always present on the op (the generic form shows them all).

A compiler builds these ops through their typed `__init__`s; this module only
gives the text form one definition instead of one per op.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from functools import lru_cache
from dataclasses import dataclass
from typing import ClassVar

from xdsl.dialects.builtin import (
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    Signedness,
    FloatAttr,
    IntegerAttr,
    UnitAttr,
    i64,
)
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import IRDLOperation
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from gedialects.npu.isa import Pipe

FieldValue = int | float | bool


@dataclass(frozen=True)
class Field:
    """One keyword field of an instruction: `kind` is "int", "float" or "flag".

    `default` None means the field must be written (flags default to absent)."""

    name: str
    kind: str = "int"
    default: int | float | None = None


def dtype_name(t: Attribute) -> str:
    if isinstance(t, Float16Type):
        return "f16"
    if isinstance(t, Float32Type):
        return "f32"
    if isinstance(t, IntegerType) and t.signedness.data == Signedness.SIGNLESS and t.width.data in (32, 64):
        return f"s{t.width.data}"
    return str(t)


_DTYPE_ATTRS: dict[str, Attribute] = {
    "f16": Float16Type(), "f32": Float32Type(), "s32": IntegerType(32), "s64": IntegerType(64),
}
"""Built once: attributes are immutable, and every instruction names a dtype."""


def dtype_attr(name: str | Attribute) -> Attribute:
    if isinstance(name, Attribute):
        return name
    if name in _DTYPE_ATTRS:
        return _DTYPE_ATTRS[name]
    raise ValueError(f"unsupported npu dtype {name!r} (use f16, f32, s32 or s64)")


def _print_float(printer: Printer, value: float) -> None:
    if math.isnan(value):
        printer.print_string("nan")
    elif math.isinf(value):
        printer.print_string("inf" if value > 0 else "-inf")
    else:
        printer.print_string(repr(float(value)))


def _parse_float(parser: Parser) -> float:
    negative = parser.parse_optional_punctuation("-") is not None
    word = parser.parse_optional_keyword_in(("inf", "nan"))
    if word is not None:
        value = math.inf if word == "inf" else math.nan
    else:
        value = float(parser.parse_number())
    return -value if negative else value


@lru_cache(maxsize=1 << 16)
def i64_attr(value: int) -> IntegerAttr:
    """`IntegerAttr(value, i64)`, built once per value: attributes are
    immutable, and a program has ~10^5 instructions with few distinct numbers
    (constructing one costs as much as the rest of an op's properties)."""
    return IntegerAttr(value, i64)


class KeywordSyntaxOp(IRDLOperation):
    """Base of every npu instruction: head values, pointer operands, fields."""

    # (property name, "dtype" | "pipe") printed before the operands.
    HEAD: ClassVar[tuple[tuple[str, str], ...]] = ()
    FIELDS: ClassVar[tuple[Field, ...]] = ()

    # -- defaults and property conversion -----------------------------------

    @classmethod
    def field_defaults(cls, head: Mapping[str, Attribute]) -> dict[str, FieldValue]:
        """Defaults of the fields, given the head properties (some defaults,
        like the vector mask, depend on the dtype)."""
        return {f.name: f.default for f in cls.FIELDS if f.default is not None}

    @classmethod
    def build_properties(
        cls, head: Mapping[str, Attribute], fields: Mapping[str, FieldValue | None]
    ) -> dict[str, Attribute]:
        """Properties from head attributes and Python field values; missing or
        None fields take their default."""
        unknown = set(fields) - {f.name for f in cls.FIELDS}
        if unknown:
            raise ValueError(f"{cls.name}: unknown fields {sorted(unknown)}")
        defaults = cls.field_defaults(head)
        props: dict[str, Attribute] = dict(head)
        for f in cls.FIELDS:
            value = fields.get(f.name)
            if f.kind == "flag":
                if value:
                    props[f.name] = UnitAttr()
                continue
            if value is None:
                value = defaults.get(f.name)
            if value is None:
                raise ValueError(f"{cls.name}: field '{f.name}' is required")
            if f.kind == "int":
                props[f.name] = i64_attr(int(value))
            else:
                props[f.name] = FloatAttr(float(value), Float64Type())
        return props

    # -- accessors -----------------------------------------------------------

    def int_field(self, name: str) -> int:
        attr = self.properties[name]
        assert isinstance(attr, IntegerAttr)
        return attr.value.data

    def float_field(self, name: str) -> float:
        attr = self.properties[name]
        assert isinstance(attr, FloatAttr)
        return float(attr.value.data)

    def flag(self, name: str) -> bool:
        return name in self.properties

    def fields(self) -> dict[str, FieldValue]:
        """All fields as Python values (flags as bools)."""
        out: dict[str, FieldValue] = {}
        for f in self.FIELDS:
            if f.kind == "flag":
                out[f.name] = self.flag(f.name)
            elif f.kind == "int":
                out[f.name] = self.int_field(f.name)
            else:
                out[f.name] = self.float_field(f.name)
        return out

    def check_range(self, name: str, lo: int, hi: int | None, hint: str = "") -> int:
        """Raise a VerifyException unless lo <= field <= hi."""
        value = self.int_field(name)
        if value < lo or (hi is not None and value > hi):
            bound = f"[{lo}, {hi}]" if hi is not None else f">= {lo}"
            extra = f" ({hint})" if hint else ""
            raise VerifyException(
                f"{self.name}: {name} must be {bound}, got {value}{extra}"
            )
        return value

    # -- text form ------------------------------------------------------------

    def print(self, printer: Printer) -> None:
        for prop, kind in self.HEAD:
            attr = self.properties[prop]
            printer.print_string(" ")
            if kind == "dtype":
                printer.print_attribute(attr)
            else:
                printer.print_string(attr.data.value)  # type: ignore[attr-defined]
        if self.operands:
            printer.print_string(" ")
            printer.print_list(self.operands, printer.print_operand)
        head = {p: self.properties[p] for p, _ in self.HEAD}
        defaults = self.field_defaults(head)
        for f in self.FIELDS:
            if f.kind == "flag":
                if self.flag(f.name):
                    printer.print_string(f" {f.name}")
                continue
            if f.name not in self.properties:
                continue
            value = (
                self.int_field(f.name) if f.kind == "int" else self.float_field(f.name)
            )
            if f.name in defaults and defaults[f.name] == value:
                continue
            printer.print_string(f" {f.name} ")
            if f.kind == "int":
                printer.print_string(str(value))
            else:
                _print_float(printer, float(value))
        printer.print_op_attributes(self.attributes)
        if self.operands:
            printer.print_string(" : ")
            printer.print_list([o.type for o in self.operands], printer.print_attribute)

    @classmethod
    def parse(cls, parser: Parser):
        head: dict[str, Attribute] = {}
        for prop, kind in cls.HEAD:
            if kind == "dtype":
                head[prop] = parser.parse_type()
            else:
                from gedialects.npu.ops import PipeAttr

                head[prop] = PipeAttr(parser.parse_str_enum(Pipe))
        operands = []
        if cls.get_irdl_definition().operands:  # else a `%x` ahead is the next op's
            operands = parser.parse_comma_separated_list(
                parser.Delimiter.NONE, parser.parse_unresolved_operand
            )
        by_name = {f.name: f for f in cls.FIELDS}
        values: dict[str, FieldValue] = {}
        while (word := parser.parse_optional_keyword_in(by_name)) is not None:
            if word in values:
                parser.raise_error(f"field '{word}' given twice")
            f = by_name[word]
            if f.kind == "flag":
                values[word] = True
            elif f.kind == "int":
                values[word] = parser.parse_integer(allow_negative=True)
            else:
                values[word] = _parse_float(parser)
        attrs = parser.parse_optional_attr_dict()
        resolved: list[SSAValue] = []
        if operands:
            parser.parse_punctuation(":")
            types = parser.parse_comma_separated_list(
                parser.Delimiter.NONE, parser.parse_type
            )
            if len(types) != len(operands):
                parser.raise_error(
                    f"expected {len(operands)} operand types, got {len(types)}"
                )
            resolved = [parser.resolve_operand(o, t) for o, t in zip(operands, types)]
        try:
            props = cls.build_properties(head, values)
        except ValueError as e:
            parser.raise_error(str(e))
        return cls.create(operands=resolved, properties=props, attributes=attrs)


def operand_names(op: IRDLOperation) -> Sequence[str]:
    """Names of an op's operands in definition order (for messages)."""
    return [name for name, _ in op.get_irdl_definition().operands]
