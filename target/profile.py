"""Profiles of a simulated run: per-kernel counters, a text table, and a Chrome
trace-event JSON (one track per core and pipe, and an "AI CPU" track per
stream; opens in Perfetto or chrome://tracing).

Every schedule entry that runs is one `KernelProfile`: an AI-core launch
(`task_type` "AI_CORE") or an AI-CPU task ("AI_CPU": no AI cores, no pipes;
its GM traffic is the paths `gm_aicpu` (read) and `aicpu_gm` (written), and
`info` holds what the compiler said of it), as CANN's op_summary tells AI Core
and AI CPU tasks apart by Task Type."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

# Profile names of the pipes, in the simulator's pipe order (s, v, m, mte1..3).
PIPE_LABELS = ("scalar", "vector", "cube", "mte1", "mte2", "mte3")
AI_CORE, AI_CPU = "AI_CORE", "AI_CPU"  # task types
AICPU_PID = 1 << 20  # the "AI CPU" process of the Chrome trace (after every core)


@dataclass
class KernelProfile:
    name: str
    launch: int  # index of the launch in the schedule
    stream: int
    block_dim: int
    cores: int  # cores the blocks were spread over
    start: int  # cycle the launch started (on its stream)
    cycles: int  # duration of the launch
    busy: dict[str, int]  # pipe label -> busy cycles, summed over blocks
    ratio: dict[str, float]  # busy / (cycles * cores)
    bytes: dict[str, int]  # data path (e.g. gm_ub) -> bytes moved
    instructions: int  # instructions executed (scalar ops and loop control included)
    # (core, pipe index, start cycle, duration, op name, block) when traced
    events: list[tuple] = field(default_factory=list, repr=False)
    task_type: str = AI_CORE  # or AI_CPU
    # AI-CPU tasks: kind, absorbed, source, reason, work, aicpu_cores
    info: dict = field(default_factory=dict)

    @property
    def memory_bound(self) -> float | None:
        """mte2 ratio / max(cube ratio, vector ratio); > 1 means the kernel
        spends more time loading from GM than computing."""
        compute = max(self.ratio["cube"], self.ratio["vector"])
        return self.ratio["mte2"] / compute if compute > 0 else None

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "launch": self.launch,
            "stream": self.stream,
            "block_dim": self.block_dim,
            "cores": self.cores,
            "start": self.start,
            "cycles": self.cycles,
            "busy": self.busy,
            "ratio": self.ratio,
            "bytes": self.bytes,
            "instructions": self.instructions,
            "memory_bound": self.memory_bound,
            "task_type": self.task_type,
            **({"info": self.info} if self.info else {}),
        }


@dataclass
class Profile:
    target: str
    clock_mhz: float
    total_cycles: int = 0
    kernels: list[KernelProfile] = field(default_factory=list)
    races: list[str] = field(default_factory=list)  # when races="warn"
    warnings: list[str] = field(default_factory=list)

    @property
    def time_us(self) -> float:
        return self.total_cycles / self.clock_mhz

    @property
    def instructions(self) -> int:
        return sum(k.instructions for k in self.kernels)

    def to_json(self) -> dict:
        return {
            "target": self.target,
            "clock_mhz": self.clock_mhz,
            "total_cycles": self.total_cycles,
            "time_us": self.time_us,
            "kernels": [k.to_json() for k in self.kernels],
            "races": self.races,
            "warnings": self.warnings,
        }


def format_profile(profile: Profile) -> str:
    """A per-kernel table: cycles, pipe ratios, bytes moved, memory_bound."""
    head = (
        f"{'kernel':<20} {'type':<7} {'blocks':>6} {'cores':>5} {'cycles':>10} "
        + " ".join(f"{p:>6}" for p in PIPE_LABELS)
        + f" {'GM bytes':>10} {'mem_bound':>9}"
    )
    n_cpu = sum(1 for k in profile.kernels if k.task_type == AI_CPU)
    title = (
        f"target {profile.target} @ {profile.clock_mhz:g} MHz: "
        f"{profile.total_cycles} cycles = {profile.time_us:.2f} us, "
        f"{len(profile.kernels) - n_cpu} launch(es)"
        + (f", {n_cpu} AI-CPU task(s)" if n_cpu else "")
    )
    lines = [
        title,
        head,
        "-" * len(head),
    ]
    for k in profile.kernels:
        gm = sum(
            v for p, v in k.bytes.items() if p.startswith("gm_") or p.endswith("_gm")
        )
        mb = k.memory_bound
        if k.task_type == AI_CPU:  # no AI cores, no pipes
            lines.append(
                f"{k.name[:20]:<20} {k.task_type:<7} {'-':>6} {'-':>5} {k.cycles:>10} "
                + " ".join(f"{'-':>6}" for _ in PIPE_LABELS)
                + f" {gm:>10} {'-':>9}"
            )
            continue
        lines.append(
            f"{k.name[:20]:<20} {k.task_type:<7} {k.block_dim:>6} {k.cores:>5} {k.cycles:>10} "
            + " ".join(f"{k.ratio[p]:>6.2f}" for p in PIPE_LABELS)
            + f" {gm:>10} {f'{mb:.2f}' if mb is not None else '-':>9}"
        )
    for k in profile.kernels:
        moved = ", ".join(f"{p} {n}" for p, n in sorted(k.bytes.items()) if n)
        lines.append(f"  {k.name}: bytes {moved or 'none'}")
        if k.task_type == AI_CPU:
            why = ": ".join(x for x in (k.info.get("source"), k.info.get("reason")) if x)
            lines.append(f"  {k.name}: on the AI CPU, work {k.info.get('work', 0)}" + (f" ({why})" if why else ""))
    for w in profile.warnings:
        lines.append(f"warning: {w}")
    for r in profile.races:
        lines.append(f"race: {r}")
    return "\n".join(lines)


def chrome_trace(profile: Profile) -> dict:
    """The trace as a dict in Chrome's trace-event format (times in us)."""
    us = 1.0 / profile.clock_mhz
    events: list[dict] = []
    cores_seen: set[int] = set()
    kernel_pid = 0
    events.append(
        {
            "ph": "M",
            "name": "process_name",
            "pid": kernel_pid,
            "args": {"name": "launches"},
        }
    )
    cpu_streams: set[int] = set()
    for k in profile.kernels:
        if k.task_type == AI_CPU:  # their own track: the AI CPU, a thread per stream
            cpu_streams.add(k.stream)
            events.append(
                {
                    "ph": "X",
                    "name": k.name,
                    "pid": AICPU_PID,
                    "tid": k.stream,
                    "ts": k.start * us,
                    "dur": max(k.cycles, 1) * us,
                    "args": {"task_type": k.task_type, "cycles": k.cycles, "bytes": k.bytes, **k.info},
                }
            )
            continue
        events.append(
            {
                "ph": "X",
                "name": k.name,
                "pid": kernel_pid,
                "tid": k.stream,
                "ts": k.start * us,
                "dur": max(k.cycles, 1) * us,
                "args": {"block_dim": k.block_dim, "cycles": k.cycles},
            }
        )
        for core, pipe, start, dur, name, block in k.events:
            cores_seen.add(core)
            events.append(
                {
                    "ph": "X",
                    "name": name,
                    "pid": core + 1,
                    "tid": pipe,
                    "ts": start * us,
                    "dur": max(dur, 1) * us,
                    "args": {"kernel": k.name, "block": block},
                }
            )
    for core in sorted(cores_seen):
        events.append(
            {
                "ph": "M",
                "name": "process_name",
                "pid": core + 1,
                "args": {"name": f"core {core}"},
            }
        )
        events.append(
            {
                "ph": "M",
                "name": "process_sort_index",
                "pid": core + 1,
                "args": {"sort_index": core + 1},
            }
        )
        for i, label in enumerate(PIPE_LABELS):
            events.append(
                {
                    "ph": "M",
                    "name": "thread_name",
                    "pid": core + 1,
                    "tid": i,
                    "args": {"name": label},
                }
            )
            events.append(
                {
                    "ph": "M",
                    "name": "thread_sort_index",
                    "pid": core + 1,
                    "tid": i,
                    "args": {"sort_index": i},
                }
            )
    if cpu_streams:
        events.append({"ph": "M", "name": "process_name", "pid": AICPU_PID, "args": {"name": "AI CPU"}})
        events.append(
            {"ph": "M", "name": "process_sort_index", "pid": AICPU_PID, "args": {"sort_index": AICPU_PID}}
        )
        for s in sorted(cpu_streams):
            events.append(
                {"ph": "M", "name": "thread_name", "pid": AICPU_PID, "tid": s, "args": {"name": f"stream {s}"}}
            )
    return {
        "traceEvents": events,
        "displayTimeUnit": "ns",
        "otherData": profile.to_json(),
    }


def write_chrome_trace(profile: Profile, path: str | Path) -> None:
    """Write the Chrome trace-event JSON. Run the simulation with trace=True to
    get per-instruction events; otherwise only launches appear."""
    Path(path).write_text(json.dumps(chrome_trace(profile)))
