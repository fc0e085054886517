"""Textual IR in and out: a context with every registered dialect, and
printing that keeps locations and the dialect_resources section."""

from __future__ import annotations

import io
import math
import re

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.universe import Universe
from xdsl.utils.mlir_lexer import MLIRLexer


# xDSL 0.75's string-literal pattern nests a `+` inside a `*`: on a literal
# with no closing quote (a truncated file, a cut resource blob) the regex
# engine backtracks exponentially and the parse never ends. The same
# language with one character per repetition fails in linear time.
MLIRLexer._unescaped_characters_regex = re.compile(r'"(?:[^"\\\n\v\f]|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*"')


def make_context() -> Context:
    """A context that knows every dialect of the xdsl.universe (ours included)."""
    ctx = Context()
    for name, factory in Universe.get_multiverse().all_dialects.items():
        ctx.register_dialect(name, factory)
    return ctx


class GeParser(Parser):
    """xDSL's parser, with resource keys renamed consistently.

    The builtin dialect keeps one blob store per process. When a key is
    already taken (a second module parsed in the same process), xDSL 0.75
    renames it at its first use but forgets the renaming, so the blob in
    the dialect_resources section lands under yet another key. Remember it.
    """

    def _parse_dialect_resource_handle(self, dialect_name: str, interface) -> str:
        key = self.parse_identifier(context_msg=" for resource handle")
        renames: dict[tuple[str, str], str] = self.__dict__.setdefault("_ge_renames", {})
        if (dialect_name, key) not in renames:
            renames[(dialect_name, key)] = interface.declare_resource(key)
            self.dialect_resources.add((dialect_name, renames[(dialect_name, key)]))
        return renames[(dialect_name, key)]


def parse_module(text: str | bytes, name: str = "<input>", ctx: Context | None = None) -> ModuleOp:
    if isinstance(text, bytes):
        text = text.decode()
    return GeParser(ctx or make_context(), text, name).parse_module()


ELIDED = "__elided__"


class ElidingPrinter(Printer):
    """mlir-opt's elision for reading large IR: an elements attribute of more
    than `elide_elements` elements prints as `dense_resource<__elided__>`
    (`--mlir-elide-elementsattrs-if-larger`; its blob is then not printed
    either), and a resource blob longer than `elide_resources` characters is
    left out of the dialect_resources section
    (`--mlir-elide-resource-strings-if-larger`). Elided IR is for reading:
    it does not parse back to the same module."""

    def __init__(self, *args, elide_elements: int | None = None, elide_resources: int | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.elide_elements = elide_elements
        self.elide_resources = elide_resources

    def print_attribute(self, attribute) -> None:
        from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, DenseResourceAttr

        limit = self.elide_elements
        if limit is not None and isinstance(attribute, DenseIntOrFPElementsAttr | DenseResourceAttr):
            if math.prod(attribute.type.get_shape()) > limit:
                self.print_string(f"dense_resource<{ELIDED}> : ")
                self.print_attribute(attribute.type)
                return
        super().print_attribute(attribute)

    def print_metadata(self, dialects) -> None:
        limit = self.elide_resources
        if limit is not None:
            from xdsl.dialect_interfaces.op_asm import OpAsmDialectInterface

            interfaces = {d.name: d.get_interface(OpAsmDialectInterface) for d in dialects
                          if d.has_interface(OpAsmDialectInterface)}
            for dialect, keys in list(self._dialect_resources.items()):
                interface = interfaces.get(dialect)
                if interface is None:
                    continue
                blobs = interface.build_resources(keys)
                keys -= {k for k, text in blobs.items() if len(text) > limit}
                if not keys:
                    del self._dialect_resources[dialect]
        super().print_metadata(dialects)


def print_module(module: ModuleOp, ctx: Context | None = None, debuginfo: bool = True,
                 elide_elements: int | None = None, elide_resources: int | None = None) -> str:
    out = io.StringIO()
    printer = ElidingPrinter(stream=out, print_debuginfo=debuginfo, elide_elements=elide_elements,
                             elide_resources=elide_resources)
    printer.print_op(module)
    printer.print_metadata((ctx or make_context()).loaded_dialects or _builtin_only())
    out.write("\n")
    return out.getvalue()


def _builtin_only():
    from xdsl.dialects.builtin import Builtin

    return [Builtin]
