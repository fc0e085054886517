"""Profiles of a simulated run: per-kernel counters, a text table, and a Chrome
trace-event JSON (one track per core and pipe, and an "AI CPU" and a "Host
link" track per stream; opens in Perfetto or chrome://tracing).

Every schedule entry that runs is one `KernelProfile`: an AI-core launch
(`task_type` "AI_CORE"), an AI-CPU task ("AI_CPU": no AI cores, no pipes;
its GM traffic is the paths `gm_aicpu` (read) and `aicpu_gm` (written), and
`info` holds what the compiler said of it) or a copy between GM and host
memory ("MEMCPY": no AI cores either; the path `gm_host` or `host_gm`), as
CANN's op_summary tells AI Core and AI CPU tasks apart by Task Type."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

# Profile names of the pipes, in the simulator's pipe order (s, v, m, mte1..3).
PIPE_LABELS = ("scalar", "vector", "cube", "mte1", "mte2", "mte3")
AI_CORE, AI_CPU, MEMCPY = "AI_CORE", "AI_CPU", "MEMCPY"  # task types
AICPU_PID = 1 << 20  # the "AI CPU" process of the Chrome trace (after every core)
HOST_LINK_PID = AICPU_PID + 1  # the "Host link" process: copies between GM and host memory
OFF_CORE_TRACKS = {AI_CPU: (AICPU_PID, "AI CPU"), MEMCPY: (HOST_LINK_PID, "Host link")}
"""The tasks that use no AI core: their process in the Chrome trace, a thread per stream."""


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
    # set_flag -> wait_flag pairs when traced: (core, set pipe, set done,
    # wait pipe, wait released, block, label)
    flows: list[tuple] = field(default_factory=list, repr=False)
    task_type: str = AI_CORE  # or AI_CPU, MEMCPY
    # AI-CPU tasks: kind, absorbed, source, reason, work, aicpu_cores;
    # copies: kind, direction, source, tensor
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
            "bound": bound(self),
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
    device_bytes: int = 0  # GM the program occupies (its gm_size): inputs, outputs, weights, the arena
    arena_bytes: int = 0  # of which the intermediates' arena, as planned (0: no plan recorded)
    no_reuse_bytes: int = 0  # what that arena would be without reuse
    host_bytes: int = 0  # host memory the program's copies use (its host_size)
    arena_live_bytes: list[int] = field(default_factory=list)  # of the arena, held at each task (schedule order)
    # stream_record -> stream_wait: (recording stream, recorded at, waiting stream, released at, event)
    stream_flows: list[tuple] = field(default_factory=list)

    @property
    def time_us(self) -> float:
        return self.total_cycles / self.clock_mhz

    @property
    def instructions(self) -> int:
        return sum(k.instructions for k in self.kernels)

    def copies(self) -> list[KernelProfile]:
        return [k for k in self.kernels if k.task_type == MEMCPY]

    @property
    def memcpy_cycles(self) -> int:
        """Cycles the copies between GM and host memory took, summed (they may
        overlap launches on other streams: not all of it adds to the run)."""
        return sum(k.cycles for k in self.copies())

    @property
    def bytes_to_host(self) -> int:
        return sum(k.bytes.get("gm_host", 0) for k in self.copies())

    @property
    def bytes_from_host(self) -> int:
        return sum(k.bytes.get("host_gm", 0) for k in self.copies())

    def to_json(self) -> dict:
        return {
            "target": self.target,
            "clock_mhz": self.clock_mhz,
            "device_bytes": self.device_bytes,
            "arena_bytes": self.arena_bytes,
            "no_reuse_bytes": self.no_reuse_bytes,
            "host_bytes": self.host_bytes,
            "memcpy_cycles": self.memcpy_cycles,
            "bytes_to_host": self.bytes_to_host,
            "bytes_from_host": self.bytes_from_host,
            "arena_live_bytes": self.arena_live_bytes,
            "stream_flows": [list(f) for f in self.stream_flows],
            "total_cycles": self.total_cycles,
            "time_us": self.time_us,
            "kernels": [k.to_json() for k in self.kernels],
            "races": self.races,
            "warnings": self.warnings,
        }


BUSY_ENOUGH = 0.5
"""A pipe busy at least this share of a kernel's time (on every core it
ran on) is what bounds it; below that on every pipe the kernel is bound by
latency (launch, issue, synchronisation)."""

OP_SUMMARY_COLUMNS = (
    "Op Name", "OP Type", "Task Type", "Stream ID", "Block Dim", "Input Shapes", "Input Formats",
    "Output Shapes", "Output Formats", "Task Start Time(us)", "Task Duration(us)", "aic_mac_ratio",
    "aic_vec_ratio", "aic_scalar_ratio", "aic_mte1_ratio", "aic_mte2_ratio", "aic_mte3_ratio",
    "Kernel", "Cycles", "GM Bytes", "Bound", "Share(%)",
)
"""The op summary's columns: msprof's op_summary names where they apply
(mac = the cube), then the simulator's own: the kernel, its cycles, the
bytes it moved to and from GM, what bounds it (`bound`) and its share of
the run's cycles."""


def gm_bytes(k: KernelProfile) -> int:
    return sum(v for p, v in k.bytes.items() if p.startswith("gm_") or p.endswith("_gm"))


def bound(k: KernelProfile) -> str:
    """compute (cube or vector), memory (GM traffic: mte2, mte3), latency
    (no pipe busy BUSY_ENOUGH of the time), aicpu or host (a copy: the host link)."""
    if k.task_type == AI_CPU:
        return "aicpu"
    if k.task_type == MEMCPY:
        return "host"
    compute = max(k.ratio["cube"], k.ratio["vector"])
    memory = max(k.ratio["mte2"], k.ratio["mte3"])
    if max(compute, memory) < BUSY_ENOUGH:
        return "latency"
    return "compute" if compute >= memory else "memory"


def op_name(k: KernelProfile) -> str:
    """The model nodes a kernel runs (what it absorbed, ';'-separated), else
    the node of its graph op (the name in its location), else the kernel."""
    absorbed = k.info.get("absorbed")
    if isinstance(absorbed, list | tuple):
        absorbed = ";".join(absorbed)
    if absorbed:
        return absorbed
    source = k.info.get("source", "")
    located = re.search(r'at loc\("(.*)"\)', source)
    return located.group(1) if located else source or k.name


def op_type(k: KernelProfile) -> str:
    """The graph op a kernel runs (an AI-CPU task: from its source), else its kind."""
    if k.info.get("op_type"):
        return k.info["op_type"]
    named = re.match(r"graph\.(\w+)", k.info.get("source", ""))
    return named.group(1) if named else k.info.get("kind", "")


def short_name(name: str, width: int) -> str:
    """The first node of an op name in `width` characters (its end kept:
    model paths differ at the end), with +N for the other nodes."""
    nodes = name.split(";")
    more = f" +{len(nodes) - 1}" if len(nodes) > 1 else ""
    room = width - len(more)
    first = nodes[0] if len(nodes[0]) <= room else "..." + nodes[0][-(room - 3):]
    return first + more


def op_summary(profile: Profile) -> list[dict]:
    """One row per kernel, AI-CPU task or copy (OP_SUMMARY_COLUMNS), longest first."""
    us = 1.0 / profile.clock_mhz
    total = max(1, profile.total_cycles)
    rows = []
    for k in sorted(profile.kernels, key=lambda k: (-k.cycles, k.launch)):
        core = k.task_type == AI_CORE
        ratios = {f"aic_{label}_ratio": round(k.ratio[pipe], 4) if core else ""
                  for label, pipe in (("mac", "cube"), ("vec", "vector"), ("scalar", "scalar"),
                                      ("mte1", "mte1"), ("mte2", "mte2"), ("mte3", "mte3"))}
        rows.append({
            "Op Name": op_name(k),
            "OP Type": op_type(k),
            "Task Type": k.task_type,
            "Stream ID": k.stream,
            "Block Dim": k.block_dim,
            "Input Shapes": k.info.get("in_shapes", ""),
            "Input Formats": k.info.get("in_formats", ""),
            "Output Shapes": k.info.get("out_shapes", ""),
            "Output Formats": k.info.get("out_formats", ""),
            "Task Start Time(us)": round(k.start * us, 3),
            "Task Duration(us)": round(k.cycles * us, 3),
            **ratios,
            "Kernel": k.name,
            "Cycles": k.cycles,
            "GM Bytes": gm_bytes(k),
            "Bound": bound(k),
            "Share(%)": round(100.0 * k.cycles / total, 2),
        })
    return rows


def write_op_summary(profile: Profile, path: str | Path) -> None:
    """The op summary as CSV (msprof's op_summary_*.csv shape)."""
    import csv

    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=OP_SUMMARY_COLUMNS)
        writer.writeheader()
        writer.writerows(op_summary(profile))


def format_profile(profile: Profile) -> str:
    """The op summary as text, longest kernel first: the model nodes each
    kernel runs, its op type, duration, share, pipe ratios, GM bytes and
    bound; then each kernel's shapes and formats and bytes per path, a
    summary per op type, the copies to and from host memory, and the device
    memory."""
    n_cpu = sum(1 for k in profile.kernels if k.task_type == AI_CPU)
    n_copy = len(profile.copies())
    lines = [
        f"target {profile.target} @ {profile.clock_mhz:g} MHz: "
        f"{profile.total_cycles} cycles = {profile.time_us:.2f} us, "
        f"{len(profile.kernels) - n_cpu - n_copy} launch(es)"
        + (f", {n_cpu} AI-CPU task(s)" if n_cpu else "")
        + (f", {n_copy} host copies" if n_copy else "")
    ]
    head = (f"{'op name':<32} {'op type':<16} {'task':<7} {'blocks':>6} {'us':>9} {'share':>6} "
            + " ".join(f"{p:>6}" for p in ("mac", "vec", "scalar", "mte1", "mte2", "mte3"))
            + f" {'GM bytes':>10} {'bound':<8}")
    lines += [head, "-" * len(head)]
    rows = op_summary(profile)
    for r in rows:
        name = short_name(r["Op Name"], 32)
        ratios = " ".join(f"{r[c]:>6.2f}" if r[c] != "" else f"{'-':>6}" for c in (
            "aic_mac_ratio", "aic_vec_ratio", "aic_scalar_ratio", "aic_mte1_ratio", "aic_mte2_ratio", "aic_mte3_ratio"))
        blocks = r["Block Dim"] if r["Task Type"] == AI_CORE else "-"
        lines.append(f"{name:<32} {r['OP Type'][:16]:<16} {r['Task Type']:<7} {blocks:>6} {r['Task Duration(us)']:>9.3f} "
                     f"{r['Share(%)']:>5.1f}% {ratios} {r['GM Bytes']:>10} {r['Bound']:<8}")
    by_kernel = {k.name: k for k in profile.kernels}
    for r in rows:
        k = by_kernel[r["Kernel"]]
        shapes = ""
        if r["Input Shapes"] or r["Output Shapes"]:
            shapes = (f" in {_shapes(r['Input Shapes'], r['Input Formats'])}"
                      f" -> out {_shapes(r['Output Shapes'], r['Output Formats'])};")
        moved = ", ".join(f"{p} {n}" for p, n in sorted(k.bytes.items()) if n)
        lines.append(f"  {k.name} ({r['Op Name']}):{shapes} bytes {moved or 'none'}")
        if k.task_type == AI_CPU:
            why = ": ".join(x for x in (k.info.get("source"), k.info.get("reason")) if x)
            lines.append(f"  {k.name}: on the AI CPU, work {k.info.get('work', 0)}" + (f" ({why})" if why else ""))
        elif k.task_type == MEMCPY:
            what = ": ".join(x for x in (k.info.get("tensor"), k.info.get("source")) if x)
            lines.append(f"  {k.name}: {k.info.get('direction')} copy on the host link"
                         + (f" ({what})" if what else ""))
    types: dict[str, list[int]] = {}
    for r in rows:
        entry = types.setdefault(f"{r['OP Type'] or '-'} ({r['Task Type']})", [0, 0])
        entry[0] += 1
        entry[1] += r["Cycles"]
    lines.append("by op type: " + ", ".join(
        f"{t} x{n} {100.0 * c / max(1, profile.total_cycles):.1f}%"
        for t, (n, c) in sorted(types.items(), key=lambda kv: -kv[1][1])))
    if n_copy:
        lines.append(f"host offload: {n_copy} host copies, {profile.bytes_to_host} bytes to host and "
                     f"{profile.bytes_from_host} from host, {profile.memcpy_cycles} cycles "
                     f"({profile.memcpy_cycles / profile.clock_mhz:.2f} us) on the host link")
    if profile.device_bytes:
        peak = (f", at most {max(profile.arena_live_bytes)} held at one task (its lower bound)"
                if profile.arena_live_bytes else "")
        arena = (f"; the intermediates' arena {profile.arena_bytes} bytes, {profile.no_reuse_bytes} without reuse{peak}"
                 if profile.arena_bytes else "")
        host = f"; host memory {profile.host_bytes} bytes" if profile.host_bytes else ""
        lines.append(f"device memory: {profile.device_bytes} bytes of GM ({profile.device_bytes / 2**20:.2f} MiB: "
                     f"inputs, outputs, weights and the arena, allocated for the whole run{arena}){host}")
    for w in profile.warnings:
        lines.append(f"warning: {w}")
    for r in profile.races:
        lines.append(f"race: {r}")
    return "\n".join(lines)


def _shapes(shapes: str, formats: str) -> str:
    """'1,3,8,8;16,3,3,3' and 'NC1HWC0;FRACTAL_Z' -> '[1,3,8,8] NC1HWC0, [16,3,3,3] FRACTAL_Z'."""
    if not shapes:
        return "-"
    fs = formats.split(";") if formats else []
    return ", ".join(f"[{s}]" + (f" {fs[i]}" if i < len(fs) else "") for i, s in enumerate(shapes.split(";")))


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
    off_core_streams: dict[int, set[int]] = {}  # pid -> streams
    for k in profile.kernels:
        if k.task_type in OFF_CORE_TRACKS:  # their own track (the AI CPU, the host link), a thread per stream
            pid = OFF_CORE_TRACKS[k.task_type][0]
            off_core_streams.setdefault(pid, set()).add(k.stream)
            events.append(
                {
                    "ph": "X",
                    "name": k.name,
                    "pid": pid,
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
                # what the launch runs (the op summary's names, shapes and formats)
                "args": {"block_dim": k.block_dim, "cycles": k.cycles, "op_name": op_name(k),
                         "bound": bound(k), **k.info},
            }
        )
        for n, (core, sp, done, wp, released, block, label) in enumerate(k.flows):
            flow = f"{k.name}/{n}"  # a flow arrow from the set to the wait it releases
            events.append({"ph": "s", "name": label, "cat": "flag", "id": flow, "pid": core + 1, "tid": sp,
                           "ts": max(done - 1, 0) * us})
            events.append({"ph": "f", "bp": "e", "name": label, "cat": "flag", "id": flow, "pid": core + 1,
                           "tid": wp, "ts": max(released - 1, 0) * us, "args": {"block": block}})
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
    events += _memory_counter(profile, kernel_pid, us)
    for n, (src, recorded, dst, released, ev) in enumerate(profile.stream_flows):
        # from the end of the recording stream's last launch to the waiting stream's next one
        flow = f"stream event {ev}/{n}"
        events.append({"ph": "s", "name": f"event {ev}", "cat": "stream", "id": flow, "pid": kernel_pid,
                       "tid": src, "ts": max(recorded - 1, 0) * us})
        events.append({"ph": "f", "name": f"event {ev}", "cat": "stream", "id": flow, "pid": kernel_pid,
                       "tid": dst, "ts": released * us})
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
    for pid, name in OFF_CORE_TRACKS.values():
        if pid not in off_core_streams:
            continue
        events.append({"ph": "M", "name": "process_name", "pid": pid, "args": {"name": name}})
        events.append({"ph": "M", "name": "process_sort_index", "pid": pid, "args": {"sort_index": pid}})
        for s in sorted(off_core_streams[pid]):
            events.append(
                {"ph": "M", "name": "thread_name", "pid": pid, "tid": s, "args": {"name": f"stream {s}"}}
            )
    return {
        "traceEvents": events,
        "displayTimeUnit": "ns",
        "otherData": profile.to_json(),
    }


def _memory_counter(profile: Profile, pid: int, us: float) -> list[dict]:
    """A counter track of device memory in use: at each task's start, what
    is allocated for the whole run (inputs, outputs, weights) plus the
    arena bytes held then (as planned; none without a recorded plan)."""
    tasks = sorted(profile.kernels, key=lambda k: k.launch)
    if not profile.arena_live_bytes or len(tasks) != len(profile.arena_live_bytes):
        return []
    static = profile.device_bytes - profile.arena_bytes
    events = [{"ph": "C", "name": "device memory", "pid": pid, "ts": k.start * us,
               "args": {"in use (bytes)": static + held}}
              for k, held in zip(tasks, profile.arena_live_bytes)]
    events.append({"ph": "C", "name": "device memory", "pid": pid, "ts": profile.total_cycles * us,
                   "args": {"in use (bytes)": static}})
    return events


def write_chrome_trace(profile: Profile, path: str | Path) -> None:
    """Write the Chrome trace-event JSON. Run the simulation with trace=True to
    get per-instruction events; otherwise only launches appear."""
    Path(path).write_text(json.dumps(chrome_trace(profile)))
