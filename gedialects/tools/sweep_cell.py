"""One cell of a hardware what-if sweep: compile a model for one target
config and options, simulate it, check it, measure it; always a row.

`run_cell(cell)` runs in a worker (a Ray task or a pool process) and never
raises: a model the compiler refuses, a mismatch with onnxruntime, an
overflow or a crash is a row with its status and a one-line reason, so a
sweep never stops at a bad cell. The inputs are `ge-run`'s (seeded random,
seed 0 unless the spec says otherwise), so a cell's cycles are those of
`ge-run MODEL --target CONFIG ...` on the same config.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

METRICS = ("cycles", "time_us", "gm_bytes", "cube_utilisation", "peak_device_bytes", "aicpu_ops", "kernels")
"""The measured columns of a row (see `run_cell`)."""

STATUSES = ("ok", "refused", "mismatch", "overflow", "error")


@dataclass(frozen=True)
class Cell:
    """A model under one target config (a preset or file, with overrides of
    its fields) and compile options."""

    model: str
    target: str
    overrides: tuple[tuple[str, object], ...] = ()
    options: tuple[tuple[str, object], ...] = ()
    seed: int = 0
    check: bool = True
    config_dir: str = ""
    """Where the overridden target configs are written (one file per cell config)."""

    @property
    def key(self) -> str:
        """The cell's identity in the CSV (what a resumed sweep skips)."""
        return json.dumps([self.model, self.target, list(map(list, self.overrides)), list(map(list, self.options)),
                           self.seed], separators=(",", ":"))

    def option(self, name: str, default):
        return dict(self.options).get(name, default)


def set_field(data: dict, dotted: str, value, where: str) -> None:
    """`capacity_bytes.ub = 131072` in a target config's JSON data; the
    field must exist (a typo is one line naming the fields there)."""
    from target.errors import ConfigError

    node = data
    parts = dotted.split(".")
    for i, part in enumerate(parts):
        if not isinstance(node, dict) or part not in node:
            known = ", ".join(sorted(node)) if isinstance(node, dict) else "none: it is a number"
            raise ConfigError(f"{where}: override '{dotted}': no field '{'.'.join(parts[: i + 1])}' (fields there: {known})")
        if i == len(parts) - 1:
            if isinstance(node[part], dict):
                raise ConfigError(f"{where}: override '{dotted}' names a group of fields; name one of {', '.join(sorted(node[part]))}")
            node[part] = value
        else:
            node = node[part]


def target_with_overrides(target: str, overrides: tuple[tuple[str, object], ...], config_dir: str) -> str:
    """The target to compile for: the preset or file itself without
    overrides, else a config file with them applied (validated by
    `load_target`, named after the overrides)."""
    from target.config import CONFIG_DIR, load_target

    if not overrides:
        return target
    source = Path(target) if Path(target).exists() else CONFIG_DIR / f"{target}.json"
    load_target(target)  # an unknown preset or a broken file: its own one line
    data = json.loads(source.read_text())
    for key, value in overrides:
        set_field(data, key, value, f"target '{target}'")
    suffix = ",".join(f"{k}={v}" for k, v in overrides)
    data["name"] = f"{data.get('name', target)}[{suffix}]"
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in f"{Path(target).stem}-{suffix}")
    path = Path(config_dir) / f"{safe}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1))
    load_target(path)
    return str(path)


@dataclass
class Row:
    cell: Cell
    status: str = "ok"
    reason: str = ""
    metrics: dict = field(default_factory=dict)
    check: str = ""
    max_error: float | None = None
    compile_s: float = 0.0
    simulate_s: float = 0.0


def run_cell(cell: Cell) -> Row:
    """Compile, simulate, check and measure `cell`; never raises."""
    from xdsl.utils.exceptions import DiagnosticException

    from gedialects.frontend.errors import FrontendError
    from gedialects.tools.cli import UserError
    from target.errors import TargetError

    row = Row(cell)
    try:
        _run(cell, row)
    except (DiagnosticException, FrontendError, TargetError, UserError) as e:
        row.status, row.reason = "refused", _one_line(e)
    except Exception as e:  # a bug in the compiler or simulator: the row says so, the sweep goes on
        row.status, row.reason = "error", f"internal error: {type(e).__name__}: {_one_line(e)}"
    return row


def _one_line(e: BaseException) -> str:
    lines = str(e).strip().splitlines()
    return lines[0] if lines else type(e).__name__


def _run(cell: Cell, row: Row) -> None:
    import numpy as np

    from gedialects.graph.interpreter import main_function
    from gedialects.tools.cli import load_module, model_path
    from gedialects.tools.ge_run import make_inputs
    from lowering.graph_to_tile import DEFAULT_PRECISION
    from lowering.pipeline import collector_paused, compile_module
    from target.config import load_target
    from target.profile import AI_CORE, gm_bytes
    from target.simulator import simulate

    target = target_with_overrides(cell.target, cell.overrides, cell.config_dir)
    config = load_target(target)
    precision = cell.option("precision_mode", DEFAULT_PRECISION)
    module = load_module(cell.model, "")
    inputs = make_inputs(main_function(module), None, cell.seed)
    t0 = time.perf_counter()
    with collector_paused():  # compile and assemble as one job, as ge-compile does
        compiled = compile_module(module, precision, target, fuse=cell.option("fuse", True),
                                  aicpu_fallback=cell.option("aicpu_fallback", True),
                                  max_streams=cell.option("max_streams", 0),
                                  device_memory_limit=cell.option("device_memory_limit", 0))
        program = compiled.program()
    row.compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    result = simulate(program, inputs, config, races="off")  # as ge-run: lock-step, no race detector
    row.simulate_s = time.perf_counter() - t0
    profile = result.profile
    cube_busy = sum(k.busy.get("cube", 0) for k in profile.kernels if k.task_type == AI_CORE)
    row.metrics = {
        "cycles": profile.total_cycles,
        "time_us": round(profile.time_us, 3),
        "gm_bytes": sum(gm_bytes(k) for k in profile.kernels),
        "cube_utilisation": round(cube_busy / max(1, profile.total_cycles * config.cube_cores), 5),
        "peak_device_bytes": profile.device_bytes,
        "aicpu_ops": compiled.aicpu,
        "kernels": compiled.kernels,
    }
    overflow = [w for w in profile.warnings if w.startswith("overflow:")]
    if overflow:
        row.status, row.reason = "overflow", overflow[0]
    path = model_path(cell.model)
    if cell.check and path.endswith(".onnx"):
        import onnx

        from gedialects.numerics import CRITERIA
        from gedialects.zoo import onnxruntime_outputs

        expected = onnxruntime_outputs(onnx.load(path), inputs)
        criterion = CRITERIA[precision]
        worst = []
        for name, want in expected.items():
            got = result.outputs[name]
            if got.shape != want.shape:
                worst.append((np.inf, f"output '{name}': shape {got.shape} vs onnxruntime {want.shape}"))
                continue
            outcome = criterion.check(got, want)
            row.max_error = max(row.max_error or 0.0, float(outcome.max_err))
            if not outcome.ok:
                worst.append((outcome.max_err, f"output '{name}': {outcome.describe()}"))
        row.check = "ok" if not worst else "mismatch"
        if worst and row.status == "ok":
            row.status, row.reason = "mismatch", max(worst)[1]
    else:
        row.check = "n/a"
