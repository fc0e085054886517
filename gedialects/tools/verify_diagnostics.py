"""Source locations of diagnostics, and an MLIR-style `--verify-diagnostics` checker.

Test files state the diagnostics they expect in comments, as in MLIR:

    // expected-error@+1 {{'func.return' op}}      the next line
    %0 = arith.addi ...  // expected-error {{...}}  this line
    // expected-error@-2 {{...}}                    two lines up
    // expected-warning@above {{...}}               nearest line above / below
    // expected-remark@below {{...}}                that is not itself a designator
    // expected-error@unknown {{...}}               a diagnostic without location
    // expected-error-re {{op {{[0-9]+}} results}}  `{{regex}}` inside the text

The text matches when it is a substring of the emitted message. Severities are
error, warning, remark and note. Errors come from exceptions; warnings and
remarks come from `logging` records under the `gedialects` logger that carry
the op they are about (`logger.info("...", extra={"op": op})` is a remark,
`logger.warning(...)` a warning; see `DiagnosticCollector`). Log records
without an `op` are plain log lines. Nothing emits notes yet, so an
`expected-note` always fails.

Limitation: xDSL stops at the first error (it raises), so each input chunk
(`// -----` with `--split-input-file`) yields at most one error. Put one
expected error in each chunk.

Locating errors: `LocatingParser` remembers where every op started (in a side
table, so printed locations round-trip unchanged). `failing_op` finds the op an exception is
about from its traceback (the innermost `Operation.verify`/`emit_error` frame).
A diagnostic is reported at the op's `FileLineColLoc` (also inside a NameLoc or
FusedLoc), else at the line the op was parsed from, else at no location.
To name an op inside a message, use `gedialects.location.describe_op`.
"""

from __future__ import annotations

import logging
import re
from bisect import bisect_right
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import (
    CallSiteLoc,
    FileLineColLoc,
    FusedLoc,
    NameLoc,
    StringAttr,
)
from xdsl.ir import Attribute, Operation
from xdsl.utils.exceptions import DiagnosticException, ParseError

from gedialects.textual import GeParser

class LocatingParser(GeParser):
    """A parser that records the source position of every op it parses.

    Every parsed op's line and column go to `op_positions` (ops keep their
    own `loc(...)`, e.g. `loc("conv1")`), so that diagnostics about them can
    be matched to the test file and name the line.
    Based on GeParser for its dense_resource fix (several chunks, one process).
    """

    def __init__(
        self,
        ctx: Context,
        input: str | bytes,
        name: str,
        line_offset: int = 0,
        positions: dict[Operation, tuple[int, int]] | None = None,
    ):
        super().__init__(ctx, input, name)
        text = self.lexer.input.content
        # bisect over line starts: counting newlines per op would be quadratic
        self._line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self._line_offset = line_offset
        self._filename = StringAttr(name)
        self.op_positions = {} if positions is None else positions

    def parse_operation(self) -> Operation:
        first = self._current_token.span
        try:
            op = super().parse_operation()
        except DiagnosticException as e:
            # Attribute and op constructors verify while parsing; report those
            # at the op like any other parse error instead of without location.
            raise ParseError(first, str(e)) from e
        index = bisect_right(self._line_starts, first.start) - 1
        line = index + 1 + self._line_offset
        col = first.start - self._line_starts[index] + 1
        # Positions stay in this side table: writing them into op.location
        # would change what `--mlir-print-debuginfo` round-trips.
        self.op_positions[op] = (line, col)
        return op


def file_position(loc: Attribute) -> tuple[str, int, int] | None:
    """The first file:line:col inside a location attribute, if any."""
    match loc:
        case FileLineColLoc():
            return loc.filename.data, loc.line.data, loc.column.data
        case NameLoc():
            return file_position(loc.location)
        case CallSiteLoc():
            return file_position(loc.callee)
        case FusedLoc():
            for inner in loc.locations.data:
                if (found := file_position(inner)) is not None:
                    return found
    return None


def location_name(loc: Attribute) -> str | None:
    """The name of the first NameLoc inside a location (the ONNX node name)."""
    match loc:
        case NameLoc():
            return loc.desc.data
        case CallSiteLoc():
            return location_name(loc.callee)
        case FusedLoc():
            for inner in loc.locations.data:
                if (found := location_name(inner)) is not None:
                    return found
    return None


def about_op(op: Operation, message: str) -> str:
    """`'name' op message` as in MLIR, led by the op's node name (`loc("conv1")`),
    each unless the message already says it (graph verifiers name their op)."""
    if op.name not in message:
        message = f"'{op.name}' op {message}"
    name = location_name(op.location)
    if name is not None and f'"{name}"' not in message:
        message = f'loc("{name}"): {message}'
    return message


def failing_op(error: BaseException) -> Operation | None:
    """The op an exception is about, or None.

    xDSL's VerifyException does not carry its op, but `Operation.verify` and
    `Operation.emit_error` are on the traceback with the op as `self`; the
    innermost one is the op being verified (or the one that emitted).
    """
    found = None
    tb = error.__traceback__
    while tb is not None:
        frame = tb.tb_frame
        if frame.f_code.co_name in ("verify", "verify_", "emit_error"):
            owner = frame.f_locals.get("self")
            if isinstance(owner, Operation):
                found = owner
        tb = tb.tb_next
    return found


@dataclass(frozen=True)
class EmittedDiagnostic:
    """One diagnostic the tool produced. `line` is None when unknown."""

    severity: str
    message: str
    file: str | None = None
    line: int | None = None
    col: int | None = None
    excerpt: str = ""
    """Source lines with a caret under the error (parse errors only)."""

    @property
    def where(self) -> str:
        return "ge-opt" if self.line is None else f"{self.file}:{self.line}:{self.col}"

    def format(self) -> str:
        text = f"{self.where}: {self.severity}: {self.message}"
        return text + ("\n" + self.excerpt if self.excerpt else "")


def op_diagnostic(
    severity: str,
    op: Operation | None,
    message: str,
    positions: dict[Operation, tuple[int, int]],
    filename: str,
) -> EmittedDiagnostic:
    """A diagnostic about `op`, naming it and its location name like MLIR does."""
    if op is None:
        return EmittedDiagnostic(severity, message)
    text = about_op(op, message)
    if (pos := file_position(op.location)) is not None:
        return EmittedDiagnostic(severity, text, *pos)
    if (line_col := parsed_position(op, positions)) is not None:
        return EmittedDiagnostic(severity, text, filename, *line_col)
    return EmittedDiagnostic(severity, text)


def parsed_position(
    op: Operation, positions: dict[Operation, tuple[int, int]]
) -> tuple[int, int] | None:
    """Where `op` was parsed; for an op a pass created (it has no entry), where
    the first op with the same name location was parsed: a rewrite gives the
    op it builds the location of the op it replaces (e.g. a fused conv keeps
    `loc("conv1")`)."""
    if op in positions:
        return positions[op]
    name = location_name(op.location)
    if name is None:
        return None
    same_name = [
        (parsed, line_col)
        for parsed, line_col in positions.items()
        if location_name(parsed.location) == name
    ]
    # prefer an op of the same kind (folded weights may share a conv's name)
    for parsed, line_col in same_name:
        if parsed.name == op.name:
            return line_col
    return same_name[0][1] if same_name else None


EXCERPT_WIDTH = 100
"""Characters of the offending source line a parse error shows (a line can
be a megabyte of resource blob)."""


def parse_error_diagnostic(error: ParseError) -> EmittedDiagnostic:
    file, line, col = error.span.get_location()
    content, at = error.span.input.content, error.span.start
    first = content.rfind("\n", 0, at) + 1  # the offending line (of the chunk, with --split-input-file)
    last = content.find("\n", at)
    text = content[first : last if last >= 0 else len(content)]
    offset = at - first
    start = max(0, min(offset - EXCERPT_WIDTH // 2, len(text) - EXCERPT_WIDTH))
    end = start + EXCERPT_WIDTH
    shown = ("..." if start else "") + text[start:end] + ("..." if end < len(text) else "")
    width = max(1, min(error.span.end - at, end - offset))
    caret = " " * (offset - start + (3 if start else 0)) + "^" * width
    return EmittedDiagnostic("error", error.msg.strip().splitlines()[0] if error.msg.strip() else "parse error",
                             file, line, col, f"{shown}\n{caret}")


def exception_diagnostic(
    error: DiagnosticException,
    positions: dict[Operation, tuple[int, int]],
    filename: str,
) -> EmittedDiagnostic:
    return op_diagnostic("error", failing_op(error), str(error), positions, filename)


class DiagnosticCollector(logging.Handler):
    """Turns `gedialects` log records that carry an `op` into diagnostics.

    Severity by level: ERROR and above is an error, WARNING a warning, lower a
    remark. Records without an `op` are ordinary log lines, not diagnostics.
    """

    def __init__(self, positions: dict[Operation, tuple[int, int]], filename: str):
        super().__init__(logging.DEBUG)
        self.positions = positions
        self.filename = filename
        self.diagnostics: list[EmittedDiagnostic] = []

    def emit(self, record: logging.LogRecord) -> None:
        op = getattr(record, "op", None)
        if not isinstance(op, Operation):
            return
        if record.levelno >= logging.ERROR:
            severity = "error"
        elif record.levelno >= logging.WARNING:
            severity = "warning"
        else:
            severity = "remark"
        self.diagnostics.append(
            op_diagnostic(
                severity, op, record.getMessage(), self.positions, self.filename
            )
        )


@dataclass
class ExpectedDiagnostic:
    severity: str
    text: str
    is_regex: bool
    line: int | None
    """The line the diagnostic must be reported at; None for `@unknown`."""
    comment_line: int
    comment_col: int
    matched: bool = False

    def matches(self, message: str) -> bool:
        if not self.is_regex:
            return self.text in message
        # literal text with `{{regex}}` islands, as in MLIR's expected-*-re
        parts = re.split(r"\{\{(.*?)\}\}", self.text)
        pattern = "".join(
            part if i % 2 else re.escape(part) for i, part in enumerate(parts)
        )
        return re.search(pattern, message) is not None


_DESIGNATOR = re.compile(r"expected-(error|warning|remark|note)(-re)?(@\S*)?")
_BODY = re.compile(r"\s*\{\{(.*)\}\}")


def parse_expected(
    text: str, filename: str, first_line: int = 1
) -> tuple[list[ExpectedDiagnostic], list[str]]:
    """Expected diagnostics of a chunk whose first line is `first_line`.

    Returns the expectations and the error messages for malformed ones.
    """
    lines = text.split("\n")
    is_designator = [_DESIGNATOR.search(line) is not None for line in lines]
    expected: list[ExpectedDiagnostic] = []
    errors: list[str] = []
    for index, line in enumerate(lines):
        for m in _DESIGNATOR.finditer(line):
            lineno, col = first_line + index, m.start() + 1
            severity, regex, at = m.group(1), bool(m.group(2)), m.group(3) or ""
            body = _BODY.match(line, m.end())
            if body is None:
                errors.append(
                    f"{filename}:{lineno}:{col}: error: expected '{{{{' after "
                    f"'{m.group(0)}'"
                )
                continue
            try:
                target = _resolve_line(at[1:], index, is_designator)
            except ValueError:
                errors.append(
                    f"{filename}:{lineno}:{col}: error: bad line designator '{at}'"
                )
                continue
            line_no = None if target is None else first_line + target
            expected.append(
                ExpectedDiagnostic(severity, body.group(1), regex, line_no, lineno, col)
            )
    return expected, errors


def _resolve_line(at: str, index: int, is_designator: list[bool]) -> int | None:
    """Chunk line index the designator points to; None means `@unknown`."""
    if at == "":
        return index
    if at == "unknown":
        return None
    if at in ("above", "below"):
        step = -1 if at == "above" else 1
        i = index + step
        while 0 <= i < len(is_designator) and is_designator[i]:
            i += step
        if 0 <= i < len(is_designator):
            return i
    elif re.fullmatch(r"[+-]\d+", at):
        return index + int(at)
    raise ValueError(at)


def check_diagnostics(
    expected: list[ExpectedDiagnostic],
    emitted: list[EmittedDiagnostic],
    filename: str,
) -> list[str]:
    """MLIR-style mismatch messages; an empty list means all is as expected."""
    problems: list[str] = []
    for diag in emitted:
        match = next(
            (
                e
                for e in expected
                if not e.matched
                and e.severity == diag.severity
                and e.line == diag.line
                and e.matches(diag.message)
            ),
            None,
        )
        if match is not None:
            match.matched = True
        else:
            problems.append(
                f"{diag.where}: error: unexpected {diag.severity}: {diag.message}"
            )
    for e in expected:
        if not e.matched:
            problems.append(
                f"{filename}:{e.comment_line}:{e.comment_col}: error: expected "
                f'{e.severity} "{e.text}" was not produced'
            )
    return problems
