"""How diagnostics name an op: by its model node name when it has one."""

from __future__ import annotations

from xdsl.dialects.builtin import FileLineColLoc, FusedLoc, NameLoc, NoneAttr, StringAttr
from xdsl.ir import Attribute, Operation


def describe_location(loc: Attribute) -> str:
    """`loc("conv1")`, `file.mlir:12:3`, or '' for an unknown location."""
    if isinstance(loc, NameLoc):
        return f'loc("{loc.desc.data}")'
    if isinstance(loc, FileLineColLoc):
        return f"{loc.filename.data}:{loc.line.data}:{loc.column.data}"
    if isinstance(loc, FusedLoc):
        return ", ".join(filter(None, (describe_location(x) for x in loc.locations.data)))
    return ""


def describe_op(op: Operation) -> str:
    """`graph.conv at loc("conv1")`: the prefix of every diagnostic about an op."""
    where = describe_location(op.location)
    return f"{op.name} at {where}" if where else op.name


def node_name(op: Operation) -> str:
    """The model node an op came from, or its op name."""
    loc = op.location
    if isinstance(loc, NameLoc):
        return loc.desc.data
    if isinstance(loc, FusedLoc):
        return "+".join(node_name_of(x) for x in loc.locations.data)
    return op.name


def node_name_of(loc: Attribute) -> str:
    if isinstance(loc, NameLoc):
        return loc.desc.data
    return describe_location(loc) or "?"


def name_loc(name: str) -> NameLoc:
    """`loc("conv1")`: how a model node's name is attached to its ops."""
    return NameLoc(StringAttr(name), NoneAttr())
