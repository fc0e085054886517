"""ge-sweep: hardware what-if sweeps over models, target configs and options.

    ge-sweep SPEC.toml|SPEC.json [-o results.csv] [--address ray://...|auto]
             [--executor ray|processes|serial] [--jobs N] [--plot DIR] [--retry-failed]

The spec names the grid; every cell (model x target x each override value x
each option value) is independent -- compile, simulate, check -- and runs on
Ray (a local instance unless --address names a cluster; `pip install
'gedialects[sweep]'`), or in a local process pool when Ray is not
installed. Rows are appended to the CSV as cells finish, so an interrupted
sweep, run again, resumes where it stopped (cells already in the CSV are
skipped; --retry-failed runs the failed ones again). A cell that fails
(refused, mismatch, overflow, crash) is a row with its one-line reason.

Spec (TOML shown; JSON has the same keys):

    models = ["squeezenet", "models/", "my.onnx"]   # bundled names, files, directories of .onnx
    targets = ["davinci-910"]                       # presets or config files (default davinci-910)
    seed = 0                                        # of the random inputs, as ge-run --seed
    check = true                                    # compare with onnxruntime (.onnx models)
    [overrides]                                     # any field of the target config, dotted
    "capacity_bytes.ub" = [131072, 262144, 524288]
    hbm_bytes_per_cycle = [600, 1200]
    [options]
    precision_mode = ["force_fp16", "must_keep_origin_dtype"]
    fuse = [true, false]
"""

from __future__ import annotations

import argparse
import csv
import itertools
import json
import os
import sys
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from gedialects.tools.cli import ArgumentParser, UserError, run_cli
from gedialects.tools.progress import progress_bar, wanted
from gedialects.tools.sweep_cell import METRICS, Cell, Row, run_cell

OPTIONS = {
    "precision_mode": str,
    "fuse": bool,
    "aicpu_fallback": bool,
    "max_streams": int,
    "device_memory_limit": int,
}
"""Compile options a spec may sweep, with their value types."""

SPEC_KEYS = ("models", "targets", "overrides", "options", "seed", "check")
EXECUTORS = ("auto", "ray", "processes", "serial")


def build_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog="ge-sweep", description="Run a grid of models x target configs x options on the "
                       "simulated NPU (on Ray, or a local process pool) and write one CSV row per cell.")
    p.add_argument("spec", help="the sweep spec, .toml or .json (see the module docstring or docs/sweeps.md)")
    p.add_argument("-o", "--output", default="", help="results CSV (default: SPEC with .csv); resumed if it exists")
    p.add_argument("--executor", choices=EXECUTORS, default="auto",
                   help="ray (a local Ray instance, or --address), processes (a local pool), serial; "
                   "auto: ray when installed, else processes")
    p.add_argument("--address", default=None, help="Ray cluster to join (e.g. auto, or ray://head:10001)")
    p.add_argument("--jobs", type=int, default=0, help="cells at once on this machine (default: its cores)")
    p.add_argument("--plot", metavar="DIR", help="write PNG plots of each metric against each swept parameter")
    p.add_argument("--retry-failed", action="store_true", help="run again the cells whose row is not ok")
    p.add_argument("--log", default="warning", choices=["debug", "info", "warning", "error"],
                   help="error hides the progress bar (drawn only when stderr is a terminal)")
    return p


# ------------------------------------------------------------------ spec


def load_spec(path: str) -> dict:
    """The spec's data, checked: one line per problem."""
    if not os.path.isfile(path):
        raise UserError(f"{path}: no such sweep spec")
    text = Path(path).read_bytes()
    try:
        if path.endswith(".toml"):
            try:
                import tomllib
            except ImportError:  # Python 3.10
                raise UserError(f"{path}: TOML specs need Python 3.11 or newer; write it as JSON") from None
            spec = tomllib.loads(text.decode())
        elif path.endswith(".json"):
            spec = json.loads(text)
        else:
            raise UserError(f"{path}: a sweep spec is .toml or .json")
    except UserError:
        raise
    except Exception as e:  # TOMLDecodeError, JSONDecodeError, UnicodeDecodeError
        raise UserError(f"{path}: not a valid spec: {e}") from None
    if not isinstance(spec, dict):
        raise UserError(f"{path}: the spec must be a table of {', '.join(SPEC_KEYS)}")
    unknown = sorted(set(spec) - set(SPEC_KEYS))
    if unknown:
        raise UserError(f"{path}: unknown key(s) {', '.join(unknown)} (expected {', '.join(SPEC_KEYS)})")
    if not spec.get("models"):
        raise UserError(f"{path}: 'models' must list at least one model")
    for key in ("overrides", "options"):
        if not isinstance(spec.get(key, {}), dict):
            raise UserError(f"{path}: '{key}' must be a table of name = [values]")
    for name, values in spec.get("options", {}).items():
        if name not in OPTIONS:
            raise UserError(f"{path}: unknown option '{name}' (expected {', '.join(OPTIONS)})")
        for v in _values(values):
            # bool is an int in Python: not a stream count or a byte count
            if not isinstance(v, OPTIONS[name]) or (OPTIONS[name] is int and (isinstance(v, bool) or v < 0)):
                kind = "non-negative int" if OPTIONS[name] is int else OPTIONS[name].__name__
                raise UserError(f"{path}: option '{name}' takes {kind} values, got {v!r}")
    for name, values in spec.get("overrides", {}).items():
        for v in _values(values):
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise UserError(f"{path}: override '{name}' takes numbers, got {v!r}")
    return spec


def _values(v) -> list:
    return list(v) if isinstance(v, list) else [v]


def expand_models(entries: Sequence[str], spec_dir: Path) -> list[str]:
    """Bundled names stay names; files and directories (every .onnx in
    them) are paths, relative to the spec's directory."""
    from gedialects.zoo import LIGHT_MODELS

    models: list[str] = []
    for entry in entries:
        if not isinstance(entry, str):
            raise UserError(f"models: {entry!r} is not a name or a path")
        path = Path(entry) if Path(entry).is_absolute() else spec_dir / entry
        if path.is_dir():
            found = sorted(str(p.resolve()) for p in path.glob("*.onnx"))
            if not found:
                raise UserError(f"models: {entry}: no .onnx model in this directory")
            models += found
        elif path.exists():
            models.append(str(path.resolve()))
        elif entry in LIGHT_MODELS:
            models.append(entry)
        else:
            raise UserError(f"models: {entry}: no such file or directory (nor a bundled model: {', '.join(LIGHT_MODELS)})")
    return list(dict.fromkeys(models))


def cells_of(spec: dict, spec_path: str, config_dir: str) -> list[Cell]:
    spec_dir = Path(spec_path).resolve().parent
    models = expand_models(spec["models"], spec_dir)
    targets = [t if not (spec_dir / t).exists() else str(spec_dir / t) for t in _values(spec.get("targets", ["davinci-910"]))]
    overrides = [[(k, v) for v in _values(vs)] for k, vs in sorted(spec.get("overrides", {}).items())]
    options = [[(k, v) for v in _values(vs)] for k, vs in sorted(spec.get("options", {}).items())]
    cells = []
    for model, target in itertools.product(models, targets):
        for over in itertools.product(*overrides):
            for opts in itertools.product(*options):
                cells.append(Cell(model, target, tuple(over), tuple(opts), int(spec.get("seed", 0)),
                                  bool(spec.get("check", True)), config_dir))
    return cells


# ------------------------------------------------------------------- CSV


def columns(spec: dict) -> list[str]:
    return (["cell", "model", "target", *sorted(spec.get("overrides", {})), *sorted(spec.get("options", {})),
             "status", "reason", *METRICS, "check", "max_error", "compile_s", "simulate_s"])


def row_dict(row: Row) -> dict:
    cell = row.cell
    return {
        "cell": cell.key, "model": Path(cell.model).name if os.sep in cell.model else cell.model,
        "target": cell.target, **dict(cell.overrides), **dict(cell.options),
        "status": row.status, "reason": row.reason,
        **{m: row.metrics.get(m, "") for m in METRICS},
        "check": row.check, "max_error": "" if row.max_error is None else f"{row.max_error:.4g}",
        "compile_s": f"{row.compile_s:.2f}", "simulate_s": f"{row.simulate_s:.2f}",
    }


def read_done(path: str, header: list[str], retry_failed: bool) -> dict[str, dict]:
    """Rows already in the CSV, by cell key (failed ones dropped with
    --retry-failed); the CSV is rewritten without those."""
    if not os.path.exists(path):
        return {}
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        if reader.fieldnames != header:
            raise UserError(f"{path}: its columns are not this spec's; give another --output or remove it")
        rows = {r["cell"]: r for r in reader}
    if retry_failed:
        rows = {k: r for k, r in rows.items() if r["status"] == "ok"}
        with open(path, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=header)
            writer.writeheader()
            writer.writerows(rows.values())
    return rows


def sort_rows(path: str, header: list[str], order: list[str]) -> None:
    """Rows in grid order once the sweep is done (they arrive in completion
    order); written beside and renamed, so the CSV is never half-written."""
    rank = {key: i for i, key in enumerate(order)}
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    rows.sort(key=lambda r: rank.get(r["cell"], len(rank)))
    scratch = f"{path}.sorting"
    with open(scratch, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=header)
        writer.writeheader()
        writer.writerows(rows)
    os.replace(scratch, path)


# -------------------------------------------------------------- executors


def ray_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("ray") is not None


def run_on_ray(cells: list[Cell], address: str | None, jobs: int) -> Iterator[Row]:
    """Every cell as a Ray task; rows in completion order."""
    import ray

    started = not ray.is_initialized()
    if started:
        kwargs = {"address": address} if address else {"num_cpus": jobs}
        ray.init(include_dashboard=False, log_to_driver=False, configure_logging=False, **kwargs)
    try:
        remote = ray.remote(run_cell)
        pending = [remote.remote(c) for c in cells]
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            yield ray.get(done[0])
    finally:
        if started:
            ray.shutdown()


def run_in_processes(cells: list[Cell], jobs: int) -> Iterator[Row]:
    from concurrent.futures import ProcessPoolExecutor, as_completed

    with ProcessPoolExecutor(max_workers=jobs) as pool:
        for future in as_completed([pool.submit(run_cell, c) for c in cells]):
            yield future.result()


def run_serially(cells: list[Cell]) -> Iterator[Row]:
    for cell in cells:
        yield run_cell(cell)


def execute(cells: list[Cell], executor: str, address: str | None, jobs: int) -> Iterable[Row]:
    if executor == "auto":
        executor = "ray" if ray_available() or address else "processes"
    if executor == "ray":
        if not ray_available():
            raise UserError("--executor ray needs Ray: pip install 'gedialects[sweep]' (or use --executor processes)")
        return run_on_ray(cells, address, jobs)
    if address:
        raise UserError("--address joins a Ray cluster: it needs --executor ray (or auto)")
    return run_in_processes(cells, jobs) if executor == "processes" and jobs > 1 else run_serially(cells)


# ------------------------------------------------------------------ main


def sweep(args) -> int:
    spec = load_spec(args.spec)
    output = args.output or str(Path(args.spec).with_suffix(".csv"))
    config_dir = str(Path(output).with_suffix("")) + ".targets"
    cells = cells_of(spec, args.spec, config_dir)
    header = columns(spec)
    done = read_done(output, header, args.retry_failed)
    todo = [c for c in cells if c.key not in done]
    jobs = args.jobs or os.cpu_count() or 1
    print(f"ge-sweep: {len(cells)} cells, {len(cells) - len(todo)} already in {output}, {len(todo)} to run")
    new_file = not os.path.exists(output)
    counts = {"ok": 0}
    with open(output, "a", newline="") as f, progress_bar("sweep", wanted(args.log)) as progress:
        writer = csv.DictWriter(f, fieldnames=header)
        if new_file:
            writer.writeheader()
            f.flush()
        for i, row in enumerate(execute(todo, args.executor, args.address, jobs), 1):
            writer.writerow(row_dict(row))
            f.flush()  # a row on disk per finished cell: what a resumed sweep skips
            counts[row.status] = counts.get(row.status, 0) + 1
            if row.status != "ok":
                settings = ", ".join(f"{k}={v}" for k, v in (*row.cell.overrides, *row.cell.options))
                print(f"ge-sweep: {Path(row.cell.model).name} ({settings or row.cell.target}): {row.status}: {row.reason}",
                      file=sys.stderr)
            if progress is not None:
                progress(i, len(todo), Path(row.cell.model).name)
    sort_rows(output, header, [c.key for c in cells])
    print("ge-sweep: " + ", ".join(f"{n} {s}" for s, n in counts.items()) + f" -> {output}")
    if args.plot:
        from gedialects.tools.sweep_plot import plot_results

        written = plot_results(output, spec, args.plot)
        print(f"ge-sweep: {len(written)} plot(s) in {args.plot}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_cli("ge-sweep", lambda: sweep(build_parser().parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
