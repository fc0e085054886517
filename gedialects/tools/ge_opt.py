"""`ge-opt`: the gedialects optimizer driver, `xdsl-opt` with MLIR's habits.

On top of xDSLOptMain it adds:
- `--pass-pipeline='builtin.module(a, b{opt=v})'` (MLIR syntax) next to `-p a,b{opt=v}`;
- `--print-ir-after-all` (to stderr, with MLIR's `// -----// IR Dump After` header);
- `--verify-diagnostics` with MLIR's `expected-error@+1 {{...}}` comments
  (see `gedialects.tools.verify_diagnostics`);
- `--input-shape` forwarded to the ONNX frontend; `--log=LEVEL` for the
  `gedialects` loggers; `--mlir-print-debuginfo` as an alias of `--print-debuginfo`;
- `--fusion-switch-file` / `--fusion-report` forwarded to every graph-fuse pass;
- `--memory-report=FILE.json` / `--memory-plot=FILE.png`: the arena numbers and
  picture of every function planned by graph-plan-memory, read from the IR;
- clean failures: one `ge-opt: error: ...` or `file:line:col: error: ...` line
  and exit 1 for user errors, `ge-opt: internal error: ...` and exit 2 for bugs
  (set GE_OPT_TRACEBACK=1 for the traceback).

Ops parsed from text get `FileLineColLoc`s (as in mlir-opt), so errors name the
source line; errors on ops imported from ONNX name the node, `loc("conv1")`.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import logging
import os
import re
import sys
import traceback
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from io import BytesIO, StringIO
from typing import IO, NoReturn, cast

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from gedialects import instrumentation
from gedialects.instrumentation import PassRecord, format_statistics
from gedialects.textual import ElidingPrinter
from xdsl.utils.arg_spec import parse_pipeline, parse_spec
from xdsl.utils.exceptions import (
    ArgSpecParseError,
    DiagnosticException,
    ParseError,
    ShrinkException,
)
from xdsl.utils.frontend import Frontend
from xdsl.xdsl_opt_main import xDSLOptMain

from gedialects.tools.verify_diagnostics import (
    DiagnosticCollector,
    EmittedDiagnostic,
    LocatingParser,
    about_op,
    check_diagnostics,
    exception_diagnostic,
    file_position,
    parse_error_diagnostic,
    parse_expected,
    parsed_position,
)

LOGGER_NAME = "gedialects"
_SPLIT_MARKER = re.compile(rb"^[ \t]*// -----[ \t]*\r?$", re.MULTILINE)


class UsageError(Exception):
    """A mistake in the command line or the input: one line, exit code 1."""


def mlir_pipeline_to_xdsl(pipeline: str) -> str:
    """Turn an MLIR `--pass-pipeline` string into an xDSL `-p` string.

    `builtin.module(a, b{x=1 y=2})` and the bare `a, b{x=1 y=2}` both give
    `a,b{x=1 y=2}`. Other anchors (`func.func(...)`) and nested pipelines are
    rejected: every gedialects pass is a ModulePass.
    """
    text = pipeline.strip()
    name, paren, rest = text.partition("(")
    name = name.strip()
    if paren and name.replace(".", "").replace("_", "").replace("-", "").isalnum():
        if name != "builtin.module":
            raise UsageError(
                f"unsupported pass pipeline anchor '{name}': ge-opt runs passes "
                "on the top-level module only, write 'builtin.module(...)'"
            )
        if not rest.rstrip().endswith(")"):
            raise UsageError(f"unbalanced parentheses in pass pipeline '{pipeline}'")
        text = rest.rstrip()[:-1]

    # xDSL's pipeline lexer rejects the spaces MLIR allows after commas, so
    # split at top-level commas ourselves (option values may contain any).
    pieces, current, depth, in_string, escaped = [], [], 0, False, False
    for ch in text:
        if in_string:
            in_string = escaped or ch != '"'
            escaped = not escaped and ch == "\\"
        elif ch == '"':
            in_string = True
        elif ch in "{}":
            depth += 1 if ch == "{" else -1
        elif depth == 0 and ch in "()":
            raise UsageError(
                f"nested pass pipelines are not supported in '{pipeline}': "
                "list the passes directly inside 'builtin.module(...)'"
            )
        elif depth == 0 and ch == ",":
            pieces.append("".join(current).strip())
            current = []
            continue
        current.append(ch)
    pieces.append("".join(current).strip())
    return ",".join(pieces) if any(pieces) else ""


def _usage_error(message: str) -> NoReturn:
    # argparse would print the whole usage text and exit 2
    raise UsageError(message)


class _LogFormatter(logging.Formatter):
    """`LEVEL: message`, naming the op and its location for records about an op."""

    def __init__(self, fmt: str, driver: GeOptMain):
        super().__init__(fmt)
        self.driver = driver

    def formatMessage(self, record: logging.LogRecord) -> str:
        op = getattr(record, "op", None)
        if isinstance(op, Operation):
            text = about_op(op, record.message)
            if (pos := file_position(op.location)) is not None:
                text = "{}:{}:{}: ".format(*pos) + text
            elif (line_col := parsed_position(op, self.driver._positions)) is not None:
                line, col = line_col
                text = f"{self.driver.get_input_name()}:{line}:{col}: " + text
            record.message = text
        return super().formatMessage(record)


def ge_pass_names() -> list[str]:
    from gedialects.universe import GE_UNIVERSE

    return list(GE_UNIVERSE.all_passes)


class GeOptMain(xDSLOptMain):
    """The `ge-opt` driver: xDSLOptMain plus MLIR-compatible flags and diagnostics."""

    version_format = "ge-opt (gedialects) built on xdsl version {xdsl_version}"

    def __init__(self, args: Sequence[str] | None = None):
        self._positions: dict[Operation, tuple[int, int]] = {}
        self._planned: list[ModuleOp] = []
        self._statistics: list[tuple[PassRecord, Counter, Counter]] = []  # (run, op counts before, after)
        self._runs: list[PassRecord] = []  # every top-level pass run (nested stages inside)
        self._timing = False
        super().__init__(
            description="gedialects optimizer driver: parses graph/npu IR (MLIR "
            "text or ONNX), runs a pass pipeline and prints the result, like mlir-opt.",
            args=args,
        )
        # Passes may create dense_resource blobs; the printer writes them only
        # for dialects the context has loaded, and builtin may not be yet.
        self.ctx.get_optional_dialect("builtin")

    def statistics_report(self) -> str:
        """mlir-opt's --mlir-pass-statistics, in op counts: per pass run, the
        ops before and after and the kinds whose count changed."""
        lines = ["===" + "-" * 20 + " Pass statistics report " + "-" * 20 + "==="]
        for run, before, after in self._statistics:
            lines.append(run.name)
            lines.append(f"  (S) {sum(after.values())} ops (was {sum(before.values())})")
            changed = sorted(set(before) | set(after), key=lambda k: (-abs(after[k] - before[k]), k))
            deltas = [f"{k} {after[k] - before[k]:+d}" for k in changed if after[k] != before[k]]
            if deltas:
                lines.append("  (S) " + ", ".join(deltas))
            lines += format_statistics(run)  # what the pass itself counted (and its nested passes)
        return "\n".join(lines)

    def pass_listing(self) -> str:
        """gedialects' passes, one line each (the first line of the pass's
        docstring), then the names of xDSL's."""
        from gedialects.universe import GE_UNIVERSE

        lines = ["gedialects passes:"]
        width = max(len(n) for n in GE_UNIVERSE.all_passes)
        for name, load in GE_UNIVERSE.all_passes.items():
            paragraph = " ".join((load().__doc__ or "").strip().split("\n\n")[0].split())
            sentence = paragraph.split(". ")[0].rstrip(".") + "."
            lines.append(f"  {name:<{width}}  {sentence if len(sentence) <= 110 else sentence[:107] + '...'}")
        others = sorted(n for n in self.available_passes if n not in GE_UNIVERSE.all_passes)
        lines.append(f"xDSL passes ({len(others)}): " + ", ".join(others))
        return "\n".join(lines)

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser):
        arg_parser.prog = "ge-opt"
        arg_parser.error = _usage_error
        super().register_all_arguments(arg_parser)
        # xDSL's flag keeps its name but gets MLIR's meaning (see run)
        arg_parser._option_string_actions["--verify-diagnostics"].help = (
            "check the diagnostics against `// expected-error@+1 {{text}}` "
            "comments in the input (MLIR semantics); exit 1 on any mismatch"
        )
        arg_parser.add_argument(
            "--pass-pipeline",
            metavar="PIPELINE",
            help="MLIR pass pipeline, e.g. 'builtin.module(cse, canonicalize)' "
            "(alternative to -p)",
        )
        arg_parser.add_argument(
            "--print-ir-after-all",
            action="store_true",
            help="print the IR to stderr after every pass",
        )
        arg_parser.add_argument(
            "--mlir-print-ir-after",
            dest="print_ir_after",
            metavar="PASS[,PASS]",
            help="print the IR to stderr after the named passes (as --print-ir-after-all does after every pass)",
        )
        timing = arg_parser._option_string_actions["--time-passes"]
        arg_parser._option_string_actions["--mlir-timing"] = timing  # mlir-opt's name for it
        timing.option_strings.append("--mlir-timing")
        arg_parser.add_argument(
            "--mlir-pass-statistics",
            dest="pass_statistics",
            action="store_true",
            help="after the pipeline, print to stderr what each pass changed: its op count before and "
            "after and the op kinds it added or removed",
        )
        arg_parser.add_argument(
            "--mlir-elide-elementsattrs-if-larger",
            dest="elide_elements",
            type=int,
            metavar="N",
            help="print elements attributes (dense<...>, dense_resource<...>) of more than N elements as "
            "dense_resource<__elided__> (output and IR dumps; for reading, it does not parse back)",
        )
        arg_parser.add_argument(
            "--mlir-elide-resource-strings-if-larger",
            dest="elide_resources",
            type=int,
            metavar="N",
            help="leave resource blobs longer than N characters out of the dialect_resources section",
        )
        arg_parser.add_argument(
            "--list-passes",
            action="store_true",
            help="list gedialects' passes with what each does, then xDSL's, and exit",
        )
        passes = arg_parser._option_string_actions["-p"]
        passes.help = (f"delimited list of passes; gedialects' own: {', '.join(ge_pass_names())} "
                       "(`--list-passes` describes them and lists xDSL's)")
        arg_parser.add_argument(
            "--mlir-print-debuginfo",
            dest="print_debuginfo",
            action="store_true",
            help="alias of --print-debuginfo (print op locations)",
        )
        arg_parser.add_argument(
            "--input-shape",
            default="",
            metavar="SHAPES",
            help="ONNX input shapes, ATC syntax: 'x:1,3,224,224;y:4,8'",
        )
        arg_parser.add_argument(
            "--memory-report",
            metavar="FILE.json",
            help="after the pipeline, write each planned function's no_reuse, "
            "lower_bound, planned (bytes) and planned/lower_bound as JSON "
            "(needs graph-plan-memory in the pipeline)",
        )
        arg_parser.add_argument(
            "--memory-plot",
            metavar="FILE.png",
            help="after the pipeline, draw the arena of each planned function "
            "(tensors as rectangles over steps x addresses; needs matplotlib)",
        )
        arg_parser.add_argument(
            "--log",
            default="warning",
            choices=["debug", "info", "warning", "error"],
            help="level of the gedialects log messages on stderr (default: warning)",
        )
        arg_parser.add_argument(
            "--fusion-switch-file",
            default="",
            metavar="FILE",
            help="ATC fusion switch file for graph-fuse: JSON "
            '{"Switch":{"GraphFusion":{"ALL":"on","ConvBatchnormFusionPass":"off"}}} '
            "or 'Name:off' lines",
        )
        arg_parser.add_argument(
            "--fusion-report",
            default="",
            metavar="FILE.json",
            help="write graph-fuse's match/effect counts per rule (like ATC's "
            "fusion_result.json); with --split-input-file, of the last chunk",
        )

    def setup_pipeline(self):
        if self.args.pass_pipeline is not None:
            if self.args.passes:
                raise UsageError("use either -p or --pass-pipeline, not both")
            self.args.passes = mlir_pipeline_to_xdsl(self.args.pass_pipeline)
        try:
            specs = list(parse_pipeline(self.args.passes))
        except ArgSpecParseError as e:
            # str(e) is a header, the location, the source, and the caret + message
            lines = str(e).splitlines()
            raise UsageError(
                "\n".join([f"invalid pass pipeline: {lines[-1].strip()}", *lines[2:-1]])
            ) from None
        for spec in specs:
            if spec.name not in self.available_passes:
                close = difflib.get_close_matches(spec.name, list(self.available_passes), n=1)
                hint = f"; did you mean '{close[0]}'?" if close else ""
                raise UsageError(
                    f"unknown pass '{spec.name}'{hint} (`ge-opt --list-passes` lists the passes)"
                )
        after = set(filter(None, (self.args.print_ir_after or "").split(",")))
        if unknown := sorted(after - {spec.name for spec in specs}):
            raise UsageError(f"--mlir-print-ir-after: '{unknown[0]}' is not in the pass pipeline")
        # --mlir-timing: our nested report at the end, not xDSL's line per pass
        self._timing, self.args.time_passes = self.args.time_passes, False
        try:
            super().setup_pipeline()
        except Exception as e:
            message = f"invalid pass options in '{self.args.passes}': {e}"
            raise UsageError(message) from e
        self._forward_fusion_options()

        verify_and_time = self.pipeline.callback
        assert verify_and_time is not None

        counts: list[Counter] = []  # op counts before the pass that runs next
        running: list[PassRecord | None] = []  # the pass run being recorded

        def callback(
            previous: ModulePass | None, module: ModuleOp, next: ModulePass | None
        ) -> None:
            record = running.pop() if previous is not None and running else None
            instrumentation.end(record)  # the pass's time stops before verification
            # dump before verifying: the dump is most useful when the IR is broken
            if previous is not None and (self.args.print_ir_after_all or previous.name in after):
                self._dump_ir(previous, module)
            verify_and_time(previous, module, next)
            if self.args.pass_statistics:
                now = Counter(op.name for op in module.walk())
                if record is not None and counts:
                    self._statistics.append((record, counts[-1], now))
                counts[:] = [now]
            if next is not None:
                running.append(instrumentation.begin(next.name))

        self.pipeline = dataclasses.replace(self.pipeline, callback=callback)

    def apply_passes(self, prog: ModuleOp) -> None:
        with instrumentation.recording() as runs:
            try:
                super().apply_passes(prog)
            finally:
                self._runs += runs

    def _forward_fusion_options(self) -> None:
        """`--fusion-switch-file` / `--fusion-report` become options of every
        graph-fuse pass in the pipeline (whichever syntax named it)."""
        options = {
            "switch_file": self.args.fusion_switch_file,
            "report": self.args.fusion_report,
        }
        options = {k: v for k, v in options.items() if v}
        if not options:
            return
        passes = self.pipeline.passes
        if not any(p.name == "graph-fuse" for p in passes):
            raise UsageError(
                "--fusion-switch-file/--fusion-report need graph-fuse in the pass pipeline"
            )
        self.pipeline = dataclasses.replace(
            self.pipeline,
            passes=tuple(
                dataclasses.replace(p, **options) if p.name == "graph-fuse" else p  # type: ignore[type-var]
                for p in passes
            ),
        )

    def _printer(self, stream) -> ElidingPrinter:
        return ElidingPrinter(
            stream=stream,
            print_generic_format=self.args.print_op_generic,
            print_properties_as_attributes=self.args.print_no_properties,
            print_debuginfo=self.args.print_debuginfo,
            elide_elements=self.args.elide_elements,
            elide_resources=self.args.elide_resources,
        )

    def _dump_ir(self, after: ModulePass, module: ModuleOp) -> None:
        sys.stderr.write(f"// -----// IR Dump After {after.name} //----- //\n")
        self._printer(sys.stderr).print_op(module)
        sys.stderr.write("\n\n")

    def output_resulting_program(self, prog: ModuleOp) -> str:
        """The mlir target prints with the elision options; others as xDSL does."""
        elide = self.args.elide_elements is not None or self.args.elide_resources is not None
        if parse_spec(self.args.target).name != "mlir" or not elide:
            return super().output_resulting_program(prog)
        output = StringIO()
        printer = self._printer(output)
        printer.print_op(prog)
        printer.print_metadata(self.ctx.loaded_dialects)
        output.write("\n\n")
        return output.getvalue()

    def get_input_stream(self) -> tuple[IO[bytes], str]:
        try:
            stream, extension = super().get_input_stream()
        except OSError as e:
            raise UsageError(f"cannot open input file '{e.filename}': {e.strerror}")
        if self.args.frontend:
            # -f decides, whatever the file is called
            return stream, parse_spec(self.args.frontend).name
        if extension not in self.available_frontends:
            stream.close()
            raise UsageError(
                f"unknown input file extension '{extension or '(none)'}'; pick a "
                f"frontend with -f ({', '.join(self.available_frontends)})"
            )
        return stream, extension

    def prepare_input(self) -> tuple[list[tuple[IO[bytes], int]], str]:
        stream, extension = self.get_input_stream()
        if not self.args.split_input_file:
            return [(stream, 0)], extension
        with stream:
            data = stream.read()
        # Only a line that is just `// -----` splits, as in mlir-opt; xDSL also
        # splits at the marker quoted inside a comment or a CHECK line.
        chunks: list[tuple[IO[bytes], int]] = []
        start = offset = 0
        for marker in _SPLIT_MARKER.finditer(data):
            chunks.append((BytesIO(data[start : marker.start()]), offset))
            offset += data.count(b"\n", start, marker.end())
            start = marker.end()
        chunks.append((BytesIO(data[start:]), offset))
        return chunks, extension

    def parse_chunk(
        self, chunk: IO[bytes], file_extension: str, start_offset: int = 0
    ) -> ModuleOp | None:
        spec = parse_spec(self.args.frontend or file_extension)
        if spec.name == "mlir":
            parser = LocatingParser(
                self.ctx,
                chunk.read(),
                self.get_input_name(),
                start_offset,
                self._positions,
            )
            return parser.parse_module(not self.args.no_implicit_module)
        if self.args.input_shape:
            entry = self.available_frontends[spec.name]
            frontend = cast(Callable[[], type[Frontend]], entry)().from_spec(spec)
            # only the ONNX frontend (checked in run) has this field
            frontend = dataclasses.replace(
                frontend,
                input_shape=self.args.input_shape,  # pyright: ignore[reportCallIssue]
            )
            return frontend.parse(self.ctx, chunk, self.get_input_name())
        return super().parse_chunk(chunk, file_extension, start_offset)

    def run(self) -> int:
        """Process every chunk; return the exit code."""
        if self.args.list_passes:
            print(self.pass_listing())
            return 0
        with self._logging():
            chunks, extension = self.prepare_input()
            if self.args.input_shape and extension != "onnx":
                for chunk, _ in chunks:
                    chunk.close()
                raise UsageError(
                    f"--input-shape applies to ONNX input only (input is '{extension}')"
                )
            output = self.prepare_output()
            status = 0
            try:
                for i, (chunk, offset) in enumerate(chunks):
                    if i > 0:
                        output.write("// -----\n")
                    with chunk:
                        data = chunk.read()
                    if not self._process_chunk(data, extension, offset, output):
                        status = 1
                    output.flush()
            except ShrinkException:
                print("Success, can shrink")
                return 0
            finally:
                if output is not sys.stdout:
                    output.close()
            if self.args.pass_statistics:
                print(self.statistics_report(), file=sys.stderr)
            if self._timing:
                print(instrumentation.timing_report(self._runs), file=sys.stderr)
            if self.args.shrink:
                print("Failure, can't shrink")
                return 1
            if status == 0:
                self._write_memory_outputs()
            return status

    def _write_memory_outputs(self) -> None:
        """`--memory-report` / `--memory-plot`, from the plans on the IR."""
        if not (self.args.memory_report or self.args.memory_plot):
            return
        from gedialects.graph.memory.report import memory_report, planned_functions

        if not any(planned_functions(m) for m in self._planned):
            raise UsageError(
                "--memory-report/--memory-plot: no function has a memory plan "
                "(add graph-plan-memory to the pipeline)"
            )
        if self.args.memory_report:
            import json

            report: dict[str, dict[str, int | float]] = {}
            for module in self._planned:
                report.update(memory_report(module))
            try:
                with open(self.args.memory_report, "w") as f:
                    json.dump(report, f, indent=2)
                    f.write("\n")
            except OSError as e:
                raise UsageError(f"cannot write '{self.args.memory_report}': {e.strerror}")
        if self.args.memory_plot:
            from gedialects.graph.memory.plot import PlotError, plot_arena

            functions = [fn for m in self._planned for fn in planned_functions(m)]
            try:
                plot_arena(functions, self.args.memory_plot)
            except PlotError as e:
                raise UsageError(str(e))

    def _did_you_mean_op(self, message: str) -> str:
        """'Operation graph.reul is not registered' names the closest
        registered op (of the dialects the universe knows)."""
        unknown = re.match(r"Operation (\S+) is not registered", message)
        if unknown is None:
            return message
        name = unknown.group(1)
        known = [op_name for dialect in (name.split(".")[0],) if dialect in self.ctx.registered_dialect_names
                 for op_name in (op.name for op in self.ctx.get_dialect(dialect).operations)]
        close = difflib.get_close_matches(name, known, n=1)
        return f"{message}; did you mean '{close[0]}'?" if close else message

    def _process_chunk(
        self, data: bytes, extension: str, offset: int, output: IO[str]
    ) -> bool:
        """Parse, transform and print one chunk; False if it failed."""
        name = self.get_input_name()
        self._positions = {}
        collector = DiagnosticCollector(self._positions, name)
        logger = logging.getLogger(LOGGER_NAME)
        if self.args.verify_diagnostics:
            logger.addHandler(collector)
        module: ModuleOp | None = None
        errors: list[EmittedDiagnostic] = []
        try:
            module = self.parse_chunk(BytesIO(data), extension, offset)
            if module is not None:
                self.apply_passes(module)
                if self.args.memory_report or self.args.memory_plot:
                    self._planned.append(module)
        except ParseError as e:
            e.span = dataclasses.replace(e.span, line_offset=offset)
            if self.args.parsing_diagnostics:  # xDSL's flag: print and carry on
                print(e)
                return True
            diagnostic = parse_error_diagnostic(e)
            errors.append(dataclasses.replace(diagnostic, message=self._did_you_mean_op(diagnostic.message)))
        except DiagnosticException as e:
            errors.append(exception_diagnostic(e, self._positions, name))
        finally:
            logger.removeHandler(collector)

        ok = True
        if self.args.verify_diagnostics:
            text = data.decode("utf-8", "replace")
            expected, problems = parse_expected(text, name, first_line=offset + 1)
            problems += check_diagnostics(
                expected, collector.diagnostics + errors, name
            )
            for problem in problems:
                print(problem, file=sys.stderr)
            ok = not problems
            errors += [d for d in collector.diagnostics if d.severity == "error"]
        else:
            for error in errors:
                print(error.format(), file=sys.stderr)
            ok = not errors
        # like mlir-opt: print the IR only of chunks that had no error
        if module is not None and not errors:
            output.write(self.output_resulting_program(module))
        return ok

    @contextmanager
    def _logging(self) -> Iterator[None]:
        logger = logging.getLogger(LOGGER_NAME)
        level = getattr(logging, self.args.log.upper())
        handler = logging.StreamHandler(sys.stderr)
        handler.setLevel(level)
        handler.setFormatter(_LogFormatter("%(levelname)s: %(message)s", self))
        if self.args.verify_diagnostics:
            # records about an op are checked as remarks/warnings, not printed
            handler.addFilter(_not_about_an_op)
            level = min(level, logging.INFO)
        saved = logger.level, logger.propagate
        logger.setLevel(level)
        logger.propagate = False
        logger.addHandler(handler)
        try:
            yield
        finally:
            logger.removeHandler(handler)
            logger.setLevel(saved[0])
            logger.propagate = saved[1]


def _not_about_an_op(record: logging.LogRecord) -> bool:
    return not isinstance(getattr(record, "op", None), Operation)


OWN_PACKAGES = ("gedialects", "lowering", "target")
"""Top-level packages of this project: a missing module among them is a bug, not a missing extra."""


def _is_frontend_error(error: BaseException) -> bool:
    # by name, so that ge-opt need not import the ONNX frontend to start
    return any(cls.__name__ == "FrontendError" for cls in type(error).__mro__)


def main(
    argv: Sequence[str] | None = None, *, tool_class: type[GeOptMain] = GeOptMain
) -> int:
    """Entry point of `ge-opt`; returns 0 (ok), 1 (user error) or 2 (internal error).

    `tool_class` lets tests and embedders run a GeOptMain subclass.
    """
    try:
        return tool_class(args=argv).run()
    except BrokenPipeError:  # the reader went away (`ge-opt ... | head`): nothing left to say
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so the interpreter's final flush stays quiet
        return 0
    except SystemExit as e:  # --help, --version
        return e.code if isinstance(e.code, int) else int(e.code is not None)
    except UsageError as e:
        print(f"ge-opt: error: {e}", file=sys.stderr)
    except ParseError as e:
        print(parse_error_diagnostic(e).format(), file=sys.stderr)
    except DiagnosticException as e:
        print(f"ge-opt: error: {e}", file=sys.stderr)
    except ModuleNotFoundError as e:
        if (e.name or "").split(".")[0] in OWN_PACKAGES:  # our own import is broken: a bug
            print(f"ge-opt: internal error: {type(e).__name__}: {e}", file=sys.stderr)
            return 2
        # an xDSL target or pass whose optional package is missing (-t llvm: llvmlite)
        print(f"ge-opt: error: this needs the optional package '{e.name}', which is not installed "
              f"(pip install {e.name})", file=sys.stderr)
    except Exception as e:
        if _is_frontend_error(e):
            print(f"ge-opt: error: {e}", file=sys.stderr)
            return 1
        if os.environ.get("GE_OPT_TRACEBACK") == "1":
            traceback.print_exc()
        print(f"ge-opt: internal error: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    return 1


if __name__ == "__main__":
    sys.exit(main())
