"""Tests of the ge-opt driver: pipeline syntax, exit codes, clean errors,
verify-diagnostics, logging remarks and the frontend hooks.

Most tests run `main([...])` in-process (fast); a few run the installed
`ge-opt` script to check what a user really sees.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import IO, ClassVar

import pytest
from xdsl.context import Context
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import (
    FileLineColLoc,
    IntAttr,
    ModuleOp,
    NameLoc,
    NoneAttr,
    StringAttr,
    UnknownLoc,
    i32,
    i64,
)
from xdsl.ir import Block, Region
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException
from xdsl.utils.frontend import Frontend

from gedialects.tools.ge_opt import GeOptMain, UsageError, main, mlir_pipeline_to_xdsl
from gedialects.tools.verify_diagnostics import (
    EmittedDiagnostic,
    about_op,
    check_diagnostics,
    file_position,
    parse_expected,
)

GE_OPT = Path(sys.executable).parent / "ge-opt"

VALID = """\
func.func @f(%a: i32) -> i32 {
  %x = arith.addi %a, %a : i32
  func.return %x : i32
}
"""

# ---------------------------------------------------------------- test doubles


@dataclass(frozen=True)
class MisbehavingPass(ModulePass):
    """Does to the first arith.addi whatever `how` says."""

    name = "test-misbehave"
    how: str = "emit"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        addi = next(o for o in op.walk() if isinstance(o, arith.AddiOp))
        log = logging.getLogger("gedialects.test")
        match self.how:
            case "emit":
                addi.emit_error("", PassFailedException("addi is not allowed here"))
            case "raise":
                raise PassFailedException("failed somewhere")
            case "crash":
                raise RuntimeError("boom")
            case "remark":
                log.info("looked at this addi", extra={"op": addi})
                log.info("a plain log line")
            case "warn":
                log.warning("suspicious addi", extra={"op": addi})
            case _:
                pass


class FrontendError(Exception):
    """Stands in for gedialects.frontend.errors.FrontendError (matched by name)."""


class BadModelError(FrontendError):
    pass


@dataclass(frozen=True)
class FakeOnnxFrontend(Frontend):
    """Records the input shape it got; `--input-shape bad` makes it fail,
    `--input-shape invalid` returns a function whose return op (named
    `conv1`, like an ONNX node) does not verify."""

    name: ClassVar[str] = "onnx"
    input_shape: str = ""
    seen: ClassVar[list[str]] = []

    def parse(self, ctx: Context, input: IO[bytes], input_name: str) -> ModuleOp:
        FakeOnnxFrontend.seen.append(self.input_shape)
        if self.input_shape == "bad":
            raise BadModelError(f"{input_name}: node 'conv1': bad model")
        block = Block(arg_types=[i32, i64])
        if self.input_shape == "invalid":
            ret = func.ReturnOp(block.args[1])
            ret.location = NameLoc(StringAttr("conv1"), NoneAttr())
        else:
            ret = func.ReturnOp(block.args[0])
        block.add_op(ret)
        return ModuleOp([func.FuncOp("main", ((i32, i64), (i32,)), Region(block))])


class GeOptForTests(GeOptMain):
    def register_all_passes(self):
        super().register_all_passes()
        self.register_pass(MisbehavingPass.name, lambda: MisbehavingPass)

    def register_all_frontends(self):
        super().register_all_frontends()
        self.available_frontends["onnx"] = lambda: FakeOnnxFrontend


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv, tool_class=GeOptForTests)
    out, err = capsys.readouterr()
    assert "Traceback" not in err + out
    return code, out, err


@pytest.fixture
def valid(tmp_path: Path) -> Path:
    path = tmp_path / "valid.mlir"
    path.write_text(VALID)
    return path


# ------------------------------------------------------------ pipeline syntax


@pytest.mark.parametrize(
    "mlir, xdsl",
    [
        ("builtin.module(cse)", "cse"),
        ("builtin.module(cse, canonicalize)", "cse,canonicalize"),
        ("  builtin.module( cse ,dce )  ", "cse,dce"),
        ("cse, dce", "cse,dce"),
        ("builtin.module(p1, p2{opt=v x=2})", "p1,p2{opt=v x=2}"),
        ('p{s="a, b(c)" t=1}, q', 'p{s="a, b(c)" t=1},q'),
        ('p{s="quote \\" ,(" t=1}', 'p{s="quote \\" ,(" t=1}'),
        ("builtin.module()", ""),
        ("", ""),
    ],
)
def test_pipeline_conversion(mlir: str, xdsl: str):
    assert mlir_pipeline_to_xdsl(mlir) == xdsl


@pytest.mark.parametrize(
    "bad, message",
    [
        ("func.func(cse)", "unsupported pass pipeline anchor 'func.func'"),
        ("builtin.module(func.func(cse))", "nested pass pipelines"),
        ("cse, func.func(cse)", "nested pass pipelines"),
        ("builtin.module(cse", "unbalanced parentheses"),
    ],
)
def test_pipeline_conversion_rejects(bad: str, message: str):
    with pytest.raises(UsageError, match=message.replace("(", r"\(")):
        mlir_pipeline_to_xdsl(bad)


def test_pass_pipeline_runs_passes(valid: Path, capsys):
    code, out, err = run(
        [str(valid), "--pass-pipeline=builtin.module(test-misbehave{how=nothing}, cse)"],
        capsys,
    )
    assert (code, err) == (0, "")
    assert "arith.addi" in out


# ------------------------------------------------------- clean user errors


@pytest.mark.parametrize(
    "args, first_line",
    [
        (["-p", "no-such-pass"], "ge-opt: error: unknown pass 'no-such-pass'"),
        (["-p", "cse{bogus=1}"], "ge-opt: error: invalid pass options in 'cse{bogus=1}'"),
        (["-p", "test-misbehave{how=1}"], "ge-opt: error: invalid pass options"),
        (["-p", "cse,,"], "ge-opt: error: invalid pass pipeline: Expected pass name"),
        (["--pass-pipeline", "func.func(cse)"], "ge-opt: error: unsupported pass"),
        (["-p", "cse", "--pass-pipeline", "cse"], "ge-opt: error: use either -p"),
        (["--input-shape", "x:1"], "ge-opt: error: --input-shape applies to ONNX"),
        (["--log", "loud"], "ge-opt: error: argument --log: invalid choice"),
        (["-t", "nope"], "ge-opt: error: argument -t/--target: invalid choice"),
        (["--frobnicate"], "ge-opt: error: unrecognized arguments: --frobnicate"),
    ],
)
def test_command_line_errors(valid: Path, capsys, args: list[str], first_line: str):
    code, out, err = run([str(valid), *args], capsys)
    assert code == 1
    assert out == ""
    assert err.startswith(first_line)


def test_missing_file_and_unknown_extension(tmp_path: Path, capsys):
    code, _, err = run([str(tmp_path / "nope.mlir")], capsys)
    assert code == 1
    assert err == f"ge-opt: error: cannot open input file '{tmp_path}/nope.mlir': No such file or directory\n"

    odd = tmp_path / "model.txt"
    odd.write_text(VALID)
    code, _, err = run([str(odd)], capsys)
    assert code == 1
    assert err.startswith("ge-opt: error: unknown input file extension 'txt'")
    # -f overrides the extension
    code, out, _ = run([str(odd), "-f", "mlir"], capsys)
    assert code == 0 and "func.func @f" in out


def test_parse_error_names_line_and_column(tmp_path: Path, capsys):
    path = tmp_path / "bad.mlir"
    path.write_text("func.func @f(%a: i32) -> i32 {\n  %x = arith.addi %a : i32\n}\n")
    code, out, err = run([str(path)], capsys)
    assert code == 1 and out == ""
    first, *excerpt = err.splitlines()
    assert first.startswith(f"{path}:2:")
    assert ": error: " in first
    assert excerpt and "^" in excerpt[-1]


def test_verifier_error_names_op_and_line(tmp_path: Path, capsys):
    path = tmp_path / "bad.mlir"
    path.write_text(
        "func.func @f(%a: i32, %b: i64) -> i32 {\n  func.return %b : i64\n}\n"
    )
    code, out, err = run([str(path)], capsys)
    assert (code, out) == (1, "")
    assert err.startswith(f"{path}:2:3: error: 'func.return' op Expected arguments")
    assert len(err.splitlines()) == 1


def test_pass_failures(valid: Path, capsys):
    code, out, err = run([str(valid), "-p", "test-misbehave{how=emit}"], capsys)
    assert (code, out) == (1, "")
    assert err == f"{valid}:2:3: error: 'arith.addi' op addi is not allowed here\n"

    code, _, err = run([str(valid), "-p", "test-misbehave{how=raise}"], capsys)
    assert (code, err) == (1, "ge-opt: error: failed somewhere\n")


def test_internal_error_exit_2(valid: Path, capsys, monkeypatch):
    monkeypatch.delenv("GE_OPT_TRACEBACK", raising=False)
    code, _, err = run([str(valid), "-p", "test-misbehave{how=crash}"], capsys)
    assert (code, err) == (2, "ge-opt: internal error: RuntimeError: boom\n")

    monkeypatch.setenv("GE_OPT_TRACEBACK", "1")
    code = main([str(valid), "-p", "test-misbehave{how=crash}"], tool_class=GeOptForTests)
    _, err = capsys.readouterr()
    assert code == 2
    assert "Traceback" in err and err.endswith("ge-opt: internal error: RuntimeError: boom\n")


def test_a_missing_optional_package_is_one_line_not_an_internal_error(valid: Path, capsys, monkeypatch):
    """`ge-opt -t llvm` without llvmlite (an xDSL target's optional package)
    says what to install; a missing module of this project stays a bug."""
    def needs(name: str):
        def run(self):
            raise ModuleNotFoundError(f"No module named '{name}'", name=name)
        return run

    monkeypatch.setattr(GeOptForTests, "run", needs("llvmlite"))
    code, _, err = run([str(valid), "-t", "llvm"], capsys)
    assert (code, err) == (1, "ge-opt: error: this needs the optional package 'llvmlite', which is not "
                              "installed (pip install llvmlite)\n")
    monkeypatch.setattr(GeOptForTests, "run", needs("gedialects.nowhere"))
    code, _, err = run([str(valid)], capsys)
    assert code == 2 and err.startswith("ge-opt: internal error: ModuleNotFoundError")


# ------------------------------------------------------------------ frontends


def test_input_shape_is_forwarded_to_onnx(tmp_path: Path, capsys):
    model = tmp_path / "net.onnx"
    model.write_bytes(b"\x08\x07")
    FakeOnnxFrontend.seen.clear()
    code, out, _ = run([str(model), "--input-shape", "x:1,3,224,224;y:4,8"], capsys)
    assert code == 0 and "func.func @main" in out
    assert FakeOnnxFrontend.seen == ["x:1,3,224,224;y:4,8"]


def test_frontend_error_is_one_line(tmp_path: Path, capsys):
    model = tmp_path / "net.onnx"
    model.write_bytes(b"")
    code, out, err = run([str(model), "--input-shape", "bad"], capsys)
    assert (code, out) == (1, "")
    assert err == f"ge-opt: error: {model}: node 'conv1': bad model\n"


def test_error_on_imported_op_names_the_node(tmp_path: Path, capsys):
    model = tmp_path / "net.onnx"
    model.write_bytes(b"")
    code, _, err = run([str(model), "--input-shape", "invalid"], capsys)
    assert code == 1
    assert err.startswith("ge-opt: error: loc(\"conv1\"): 'func.return' op Expected")


# ---------------------------------------------------------- verify-diagnostics


def test_verify_diagnostics_passes_and_prints_only_good_chunks(tmp_path: Path, capsys):
    path = tmp_path / "t.mlir"
    path.write_text(
        "func.func @bad(%a: i32, %b: i64) -> i32 {\n"
        "  // expected-error@+1 {{'func.return' op}}\n"
        "  func.return %b : i64\n"
        "}\n"
        "// -----\n"
        "func.func @good(%a: i32) -> i32 {\n"
        "  func.return %a : i32\n"
        "}\n"
    )
    code, out, err = run([str(path), "--split-input-file", "--verify-diagnostics"], capsys)
    assert (code, err) == (0, "")
    assert "@good" in out and "@bad" not in out


def test_verify_diagnostics_reports_mismatch(tmp_path: Path, capsys):
    path = tmp_path / "t.mlir"
    path.write_text(
        "func.func @bad(%a: i32, %b: i64) -> i32 {\n"
        "  // expected-error@+1 {{something else}}\n"
        "  func.return %b : i64\n"
        "}\n"
    )
    code, out, err = run([str(path), "--verify-diagnostics"], capsys)
    assert (code, out) == (1, "")
    assert err.splitlines() == [
        f"{path}:3:3: error: unexpected error: 'func.return' op Expected arguments "
        "to have the same types as the function output types: expected [i32], got [i64]",
        f'{path}:2:6: error: expected error "something else" was not produced',
    ]


def test_verify_diagnostics_with_pass_errors(tmp_path: Path, capsys):
    path = tmp_path / "t.mlir"
    same_line = "%a, %a : i32 // expected-error {{not allowed}}"
    path.write_text(VALID.replace("%a, %a : i32", same_line))
    code, _, err = run([str(path), "--verify-diagnostics", "-p", "test-misbehave"], capsys)
    assert (code, err) == (0, "")

    path.write_text("// expected-error@unknown {{failed somewhere}}\n" + VALID)
    code, _, err = run(
        [str(path), "--verify-diagnostics", "-p", "test-misbehave{how=raise}"], capsys
    )
    assert (code, err) == (0, "")


def test_remarks_and_warnings_from_logging(tmp_path: Path, capsys):
    path = tmp_path / "t.mlir"
    path.write_text(
        "func.func @f(%a: i32) -> i32 {\n"
        "  // expected-remark@below {{looked at this addi}}\n"
        "  // expected-note@+2 {{this line is skipped by @below but not by @+2}}\n"
        "  %x = arith.addi %a, %a : i32\n"
        "  func.return %x : i32\n"
        "}\n"
    )
    code, out, err = run([str(path), "--verify-diagnostics", "-p", "test-misbehave{how=remark}"], capsys)
    # the note is not produced (nothing emits notes) and is reported as such
    assert code == 1
    assert err == f'{path}:3:6: error: expected note "this line is skipped by @below but not by @+2" was not produced\n'
    assert "func.func @f" in out  # remarks are not errors: the IR is printed

    code, _, err = run([str(path), "-p", "test-misbehave{how=remark}"], capsys)
    assert (code, err) == (0, "")  # remarks are INFO, below the default --log=warning
    code, _, err = run([str(path), "--log=info", "-p", "test-misbehave{how=remark}"], capsys)
    assert err.splitlines() == [
        f"INFO: {path}:4:3: 'arith.addi' op looked at this addi",
        "INFO: a plain log line",
    ]
    code, _, err = run([str(path), "-p", "test-misbehave{how=warn}"], capsys)
    assert err == f"WARNING: {path}:4:3: 'arith.addi' op suspicious addi\n"
    # the driver leaves the logger as it found it
    assert logging.getLogger("gedialects").handlers == []


def test_parse_expected_designators():
    text = "\n".join(
        [
            "a",  # 10
            "// expected-error@below {{one}}",  # 11
            "// expected-warning@above {{two}}",  # 12
            "b",  # 13
            "c // expected-remark {{three}}",  # 14
            "// expected-note@-3 {{four}}",  # 15
            "// expected-error-re@unknown {{x {{[0-9]+}} y}}",  # 16
        ]
    )
    expected, errors = parse_expected(text, "f.mlir", first_line=10)
    assert errors == []
    assert [(e.severity, e.line, e.text) for e in expected] == [
        ("error", 13, "one"),
        ("warning", 10, "two"),
        ("remark", 14, "three"),
        ("note", 12, "four"),
        ("error", None, "x {{[0-9]+}} y"),
    ]
    assert expected[-1].matches("got x 42 y")
    assert not expected[-1].matches("got x y")


def test_check_diagnostics_matches_severity_line_and_text():
    expected, _ = parse_expected("// expected-warning@+1 {{careful}}\nop", "f.mlir")
    as_error = EmittedDiagnostic("error", "be careful", "f.mlir", 2, 1)
    assert check_diagnostics(expected, [as_error], "f.mlir") == [
        "f.mlir:2:1: error: unexpected error: be careful",
        'f.mlir:1:4: error: expected warning "careful" was not produced',
    ]
    expected, _ = parse_expected("// expected-warning@+1 {{careful}}\nop", "f.mlir")
    as_warning = EmittedDiagnostic("warning", "be careful", "f.mlir", 2, 1)
    assert check_diagnostics(expected, [as_warning], "f.mlir") == []


def test_about_op_names_op_and_node_once():
    op = arith.ConstantOp.from_int_and_width(1, 32)
    assert about_op(op, "is odd") == "'arith.constant' op is odd"
    op.location = NameLoc(StringAttr("conv1"), NoneAttr())
    assert about_op(op, "is odd") == "loc(\"conv1\"): 'arith.constant' op is odd"
    # graph verifiers already name the op and node (gedialects.location.describe_op)
    already = 'arith.constant at loc("conv1"): is odd'
    assert about_op(op, already) == already


def test_file_position_looks_inside_name_locations():
    file_loc = FileLineColLoc(StringAttr("m.mlir"), IntAttr(12), IntAttr(3))
    assert file_position(file_loc) == ("m.mlir", 12, 3)
    assert file_position(NameLoc(StringAttr("conv1"), file_loc)) == ("m.mlir", 12, 3)
    assert file_position(UnknownLoc()) is None


# ----------------------------------------------------- the installed script


def test_script_help_lists_passes_and_new_flags():
    result = subprocess.run(
        [str(GE_OPT), "--help"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0
    for text in ("--pass-pipeline", "--print-ir-after-all", "--verify-diagnostics",
                 "--input-shape", "--log", "cse"):
        assert text in result.stdout


def test_script_exit_codes_and_no_traceback(valid: Path, tmp_path: Path):
    env = {k: v for k, v in os.environ.items() if k != "GE_OPT_TRACEBACK"}
    for args, code in [
        ([str(valid), "-p", "cse"], 0),
        ([str(valid), "-p", "nope"], 1),
        ([str(tmp_path / "missing.mlir")], 1),
    ]:
        result = subprocess.run(
            [str(GE_OPT), *args], capture_output=True, text=True, env=env, check=False
        )
        assert result.returncode == code, result.stderr
        assert "Traceback" not in result.stderr
        if code:
            assert result.stderr.startswith("ge-opt: error: ")
            assert len(result.stderr.splitlines()) == 1
