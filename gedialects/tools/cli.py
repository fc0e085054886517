"""What every gedialects command line shares: exit codes and how errors end
a run (one line for the user, a traceback only on request)."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

EXIT_OK, EXIT_USER, EXIT_INTERNAL = 0, 1, 2


class UserError(Exception):
    """A one-line problem with the command line or the inputs."""


def run_cli(prog: str, body: Callable[[], int], user_errors: tuple[type[BaseException], ...] = ()) -> int:
    """Run `body`; user errors (and xDSL diagnostics) print `prog: error: ...`
    and exit 1, anything else is a bug: one line and exit 2, or the traceback
    with GE_OPT_TRACEBACK=1."""
    from xdsl.utils.exceptions import DiagnosticException

    from gedialects.frontend.errors import FrontendError

    try:
        return body()
    except SystemExit as e:  # argparse: --help, usage errors
        return int(e.code or 0) if not isinstance(e.code, str) else EXIT_USER
    except (UserError, FrontendError, DiagnosticException, *user_errors) as e:
        lines = str(e).strip().splitlines() or [type(e).__name__]
        print(f"{prog}: error: {lines[0]}", file=sys.stderr)
        if isinstance(e, DiagnosticException) and len(lines) > 1:
            # a parse error's source excerpt and caret
            print("\n".join(lines[1:4]), file=sys.stderr)
    except KeyboardInterrupt:
        return 130
    except Exception as e:
        if os.environ.get("GE_OPT_TRACEBACK"):
            raise
        print(f"{prog}: internal error: {type(e).__name__}: {e}", file=sys.stderr)
        return EXIT_INTERNAL
    return EXIT_USER


LOG_LEVELS = ["debug", "info", "warning", "error"]


def add_log_flag(parser) -> None:
    parser.add_argument(
        "--log", default="warning", choices=LOG_LEVELS,
        help="level of the gedialects log messages on stderr; info shows every remark "
        "(fusions applied or missed, AI-CPU fallbacks, layouts) (default: warning)",
    )


@contextmanager
def log_to_stderr(prog: str, level: str) -> Iterator[None]:
    """gedialects' log messages (remarks at INFO) on stderr while the body runs."""
    logger = logging.getLogger("gedialects")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(f"{prog}: %(levelname)s: %(message)s"))
    logger.addHandler(handler)
    saved = logger.level
    logger.setLevel(getattr(logging, level.upper()))
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(saved)


def model_path(path: str) -> str:
    """A file path, or the path of the bundled light model of that name."""
    if os.path.exists(path):
        return path
    from gedialects.zoo import LIGHT_MODELS, light_model_path

    if path not in LIGHT_MODELS:
        raise UserError(f"{path}: no such file (nor a bundled model: {', '.join(LIGHT_MODELS)})")
    return str(light_model_path(path))


def load_module(path: str, input_shape: str):
    """The graph-dialect module of a .onnx or .mlir file."""
    path = model_path(path)
    ext = os.path.splitext(path)[1]
    if ext == ".onnx":
        from gedialects.frontend.onnx_import import (
            import_model,
            load_model,
            parse_input_shapes,
        )

        return import_model(load_model(path), parse_input_shapes(input_shape), source=path)
    if ext == ".mlir":
        if input_shape:
            raise UserError("--input-shape applies to .onnx models only")
        from gedialects.textual import parse_module

        with open(path) as f:
            module = parse_module(f.read(), path)
        module.verify()
        return module
    raise UserError(f"{path}: unknown model format '{ext}' (expected .onnx or .mlir)")


def read_npz(path: str | None, what: str) -> dict | None:
    """Named arrays from an npz file (None without a path)."""
    if not path:
        return None
    import numpy as np

    try:
        with np.load(path) as data:
            return {k: data[k] for k in data.files}
    except (OSError, ValueError) as e:
        raise UserError(f"{path}: cannot read {what} ({e})") from None
