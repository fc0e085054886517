"""What every gedialects command line shares: exit codes and how errors end
a run (one line for the user, a traceback only on request)."""

from __future__ import annotations

import argparse
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
    from target.errors import TargetError  # ConfigError, AssemblyError, SimulationError

    try:
        return body()
    except SystemExit as e:  # argparse: --help, usage errors
        return int(e.code or 0) if not isinstance(e.code, str) else EXIT_USER
    except (UserError, FrontendError, DiagnosticException, TargetError, *user_errors) as e:
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


class ArgumentParser(argparse.ArgumentParser):
    """argparse with the commands' error convention: a bad flag is one line
    and exit 1 (argparse prints its usage and exits 2, which here means a bug)."""

    def error(self, message: str):  # type: ignore[override]
        raise UserError(f"{message} (see {self.prog} --help)")


LOG_LEVELS = ["debug", "info", "warning", "error"]


def add_log_flag(parser) -> None:
    parser.add_argument(
        "--log", default="warning", choices=LOG_LEVELS,
        help="level of the gedialects log messages on stderr; info shows every remark "
        "(fusions applied or missed, AI-CPU fallbacks, layouts) (default: warning)",
    )


def add_max_streams_flag(parser) -> None:
    parser.add_argument(
        "--max-streams", dest="max_streams", type=int, default=0, metavar="N",
        help="streams tile-assign-streams may launch independent kernels on (1: one stream; "
        "default: the target config's `streams`)",
    )


def check_max_streams(value: int) -> int:
    """--max-streams as given, or one line naming the allowed range."""
    from target.config import MAX_STREAMS

    if not 0 <= value <= MAX_STREAMS:
        raise UserError(f"--max-streams must be in [1, {MAX_STREAMS}] (0: the target's), got {value}")
    return value


def add_device_memory_limit_flag(parser) -> None:
    parser.add_argument(
        "--device-memory-limit", "--device_memory_limit", dest="device_memory_limit", type=int, default=0,
        metavar="BYTES",
        help="bytes the GM arena of intermediates may take: a conv whose own operands exceed it writes its "
        "output in channel pieces, and tile-fit-device-memory offloads activations to host memory and "
        "recomputes cheap ones until it fits (default 0: no limit)",
    )


def check_device_memory_limit(value: int) -> int:
    """--device-memory-limit as given, or one line saying what it must be."""
    if value < 0:
        raise UserError(f"--device-memory-limit must be >= 0 bytes (0: no limit), got {value}")
    return value


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


def load_module(path: str, input_shape: str, out_nodes: str = ""):
    """The graph-dialect module of a .onnx, .pt2 (torch.export.save) or .mlir file (`out_nodes`:
    ATC's 'node:index;...' choice of the graph's outputs)."""
    path = model_path(path)
    ext = os.path.splitext(path)[1]
    if ext == ".onnx":
        from gedialects.frontend.onnx_import import (
            import_model,
            load_model,
            parse_input_shapes,
            select_outputs,
        )

        model = load_model(path)
        if out_nodes:
            model = select_outputs(model, out_nodes, path)
        return import_model(model, parse_input_shapes(input_shape), source=path)
    if ext == ".pt2":
        if input_shape or out_nodes:
            raise UserError("--input-shape and --out_nodes apply to .onnx models only (a .pt2 program has static shapes)")
        from gedialects.frontend.torch_import import import_exported_program, load_pt2

        return import_exported_program(load_pt2(path), source=path)
    if ext == ".mlir":
        if input_shape or out_nodes:
            raise UserError("--input-shape and --out_nodes apply to .onnx models only")
        from gedialects.textual import parse_module

        with open(path) as f:
            module = parse_module(f.read(), path)
        module.verify()
        return module
    raise UserError(f"{path}: unknown model format '{ext}' (expected .onnx, .pt2 or .mlir)")


def read_npz(path: str | None, what: str) -> dict | None:
    """Named arrays from an npz file (None without a path); never unpickles.
    A missing, unreadable, truncated or non-npz file is one UserError line."""
    if not path:
        return None
    import numpy as np

    if not os.path.isfile(path):
        raise UserError(f"{path}: cannot read {what} (no such file)")
    try:
        data = np.load(path, allow_pickle=False)
    except Exception as e:  # OSError, BadZipFile, ValueError (pickled), EOFError, ...
        raise UserError(f"{path}: cannot read {what} ({_one_line(e)})") from None
    if not isinstance(data, np.lib.npyio.NpzFile):
        raise UserError(f"{path}: cannot read {what} (a single .npy array, not an npz keyed by name)")
    try:
        with data:
            return {k: data[k] for k in data.files}
    except Exception as e:  # a corrupted member: bad CRC, deflate stream, .npy header, object arrays
        raise UserError(f"{path}: cannot read {what} ({type(e).__name__}: {_one_line(e)})") from None


def _one_line(e: BaseException) -> str:
    lines = str(e).strip().splitlines()
    return lines[0] if lines else type(e).__name__


def check_writable(path: str, flag: str = "") -> None:
    """Refuse, before any work, an output path that cannot be written: its
    directory missing or not writable, the path a directory or a read-only
    file. `flag` (e.g. "--output") prefixes the message."""
    lead = f"{flag}: " if flag else ""
    directory = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise UserError(f"{lead}cannot write '{path}': it is a directory")
    if not os.path.isdir(directory):
        what = "not a directory" if os.path.exists(directory) else "no such directory"
        raise UserError(f"{lead}cannot write '{path}': {what} '{directory}'")
    if os.path.exists(path):
        if not os.access(path, os.W_OK):
            raise UserError(f"{lead}cannot write '{path}': the file is not writable")
    elif not os.access(directory, os.W_OK | os.X_OK):
        raise UserError(f"{lead}cannot write '{path}': directory '{directory}' is not writable")


def npz_path(path: str) -> str:
    """The file np.savez writes for `path` (it appends .npz)."""
    return path if path.endswith(".npz") else path + ".npz"


# --- inputs against the model ------------------------------------------------
#
# An npz input must match the model's input: dtype kind compatible, values
# representable, shape equal (dims marked None are free). Allowed conversions:
# float -> float of another width, rounded to nearest (a finite value that
# overflows the target type is refused); integer -> integer, bool -> bool, and
# integer -> float when every value is exact in the target type. Refused:
# complex, datetime/timedelta, object, strings, void, and any other mix
# (float -> int, bool <-> number).


def check_input(name: str, value, dtype, shape) -> object:
    """`value` converted to `dtype`, or a UserError naming the input, what it
    got and what the model wants. `shape` holds ints and None for free dims."""
    import numpy as np

    value = np.asarray(value)
    want = np.dtype(dtype)
    got = value.dtype
    wants = f"the model wants {want.name}[{', '.join('?' if d is None else str(d) for d in shape)}]"
    gots = f"input '{name}' is {got.name if got.kind not in 'USV' else got.str}{list(value.shape)}"
    if got.kind in "cmMOUSV":
        kinds = {"c": "complex", "m": "timedelta", "M": "datetime", "O": "object", "U": "string",
                 "S": "bytes", "V": "structured"}
        raise UserError(f"{gots}: {kinds[got.kind]} values are not accepted; {wants}")
    if len(value.shape) != len(shape) or any(d is not None and d != v for d, v in zip(shape, value.shape)):
        raise UserError(f"{gots}: wrong shape; {wants}")
    if got == want:
        return value
    if want.kind == "b" or got.kind == "b":
        raise UserError(f"{gots}: cannot convert {got.name} to {want.name}; {wants}")
    if want.kind == "f":
        if got.kind == "f":
            with np.errstate(over="ignore", invalid="ignore"):
                out = value.astype(want)
            overflow = np.isfinite(value) & ~np.isfinite(out)
            if overflow.any():
                bad = value[overflow].flat[0]
                raise UserError(f"{gots}: value {float(bad):g} overflows {want.name}; {wants}")
            return out
        with np.errstate(all="ignore"):  # integers: only if every value is exact
            out = value.astype(want)
            finite = np.isfinite(out)
            exact = finite & (np.where(finite, out, 0).astype(got) == value)
        if not exact.all():
            bad = value[~exact].flat[0]
            raise UserError(f"{gots}: value {bad} is not exact in {want.name}; {wants}")
        return out
    if want.kind in "iu":
        if got.kind not in "iu":
            raise UserError(f"{gots}: cannot convert {got.name} to {want.name} (not an integer type); {wants}")
        info = np.iinfo(want)
        if value.size:
            lo, hi = int(value.min()), int(value.max())
            if lo < info.min or hi > info.max:
                bad = lo if lo < info.min else hi
                raise UserError(f"{gots}: value {bad} is outside {want.name}'s range [{info.min}, {info.max}]; {wants}")
        return value.astype(want)
    raise UserError(f"{gots}: cannot convert {got.name} to {want.name}; {wants}")


def check_inputs(given: dict, wanted: dict[str, tuple], flag: str = "--inputs") -> dict:
    """Every npz input named, converted and checked (check_input); `wanted`
    maps input names to (dtype, shape) in the model's order."""
    unknown = [k for k in given if k not in wanted]
    if unknown:
        raise UserError(
            f"{flag}: unknown input '{unknown[0]}' (the model takes {', '.join(wanted) or 'no inputs'})"
        )
    missing = [k for k in wanted if k not in given]
    if missing:
        raise UserError(
            f"{flag} lacks input '{missing[0]}' (it has {', '.join(given) or 'nothing'})"
        )
    return {k: check_input(k, given[k], *wanted[k]) for k in wanted}
