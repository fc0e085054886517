"""Pass instrumentation: nested timing and pass statistics, as MLIR's
PassInstrumentation / Pass::Statistic give mlir-opt's `--mlir-timing` and
`--mlir-pass-statistics`.

A pass run is a `PassRecord`; passes that run other passes (the named
pipelines ge-compile, ge-lower, ...) nest their stages under it. A pass
records what it did with `statistic("transdata-inserted", 3, "transdata
ops inserted")`, which adds to the innermost running pass and costs nothing
when no one is recording (no scope open). `recording()` collects the
records of everything run inside it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass
class PassRecord:
    name: str
    seconds: float = 0.0
    statistics: dict[str, tuple[float, str]] = field(default_factory=dict)
    """name -> (value, description), in the order first recorded."""
    children: list[PassRecord] = field(default_factory=list)


_stack: list[PassRecord] = []
_roots: list[list[PassRecord]] = []


@contextmanager
def recording() -> Iterator[list[PassRecord]]:
    """The records of the passes run inside, as a list of top-level runs."""
    runs: list[PassRecord] = []
    _roots.append(runs)
    try:
        yield runs
    finally:
        _roots.pop()


def begin(name: str) -> PassRecord | None:
    """Start recording a pass run (inside the running one, if any); None
    when nothing is being recorded."""
    if not _roots:
        return None
    record = PassRecord(name)
    (_stack[-1].children if _stack else _roots[-1]).append(record)
    record.seconds = -time.perf_counter()
    _stack.append(record)
    return record


def end(record: PassRecord | None) -> None:
    if record is None:
        return
    record.seconds += time.perf_counter()
    while _stack and _stack.pop() is not record:  # a pass that raised left its children open
        pass


@contextmanager
def pass_scope(name: str) -> Iterator[PassRecord | None]:
    record = begin(name)
    try:
        yield record
    finally:
        end(record)


def statistic(name: str, value: float, description: str = "") -> None:
    """Add `value` to the running pass's statistic `name` (no-op when not recording)."""
    if not _stack:
        return
    stats = _stack[-1].statistics
    old, _ = stats.get(name, (0, description))
    stats[name] = (old + value, description)


def timing_report(runs: list[PassRecord]) -> str:
    """mlir-opt's execution time report: wall time per pass, nested passes
    indented under the pass that ran them, and the total."""
    total = sum(r.seconds for r in runs) or 1e-12
    lines = ["===" + "-" * 73 + "===", "... Execution time report ...".center(79), "===" + "-" * 73 + "===",
             f"  Total Execution Time: {total:.4f} seconds", "", "  ----Wall Time----  ----Name----"]

    def walk(records: list[PassRecord], depth: int) -> None:
        for r in records:
            lines.append(f"  {r.seconds:8.4f} ({100 * r.seconds / total:5.1f}%)  {'  ' * depth}{r.name}")
            walk(r.children, depth + 1)

    walk(runs, 0)
    lines.append(f"  {total:8.4f} (100.0%)  Total")
    return "\n".join(lines)


def format_statistics(record: PassRecord, depth: int = 0) -> list[str]:
    """`(S) value name - description` lines of a run and of the passes it ran."""
    pad = "  " * depth
    lines = []
    for name, (value, description) in record.statistics.items():
        shown = int(value) if float(value).is_integer() else f"{value:.4g}"
        lines.append(f"{pad}  (S) {shown} {name}" + (f" - {description}" if description else ""))
    for child in record.children:
        inner = format_statistics(child, depth + 1)
        if inner:
            lines += [f"{pad}  {child.name}", *inner]
    return lines
