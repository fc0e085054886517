"""Target configs: the hardware numbers of a simulated NPU, read from a data file.

The shipped presets live in `target/configs/<name>.json`; a user copies one,
edits it and passes its path wherever a target name is accepted. Every number
the simulator or a cost model uses comes from here (sources in docs/NPU.md).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from gedialects.npu.isa import ALIGNMENT, DMA_PATHS, MemSpace, path_name
from gedialects.npu.vector_ops import SPECS
from target.errors import ConfigError  # also re-exported: target.config.ConfigError

CONFIG_DIR = Path(__file__).parent / "configs"

ON_CHIP = ("l1", "l0a", "l0b", "l0c", "ub")
LATENCY_KEYS = (
    "issue",
    "scalar",
    "flag",
    "barrier",
    "dma_gm",
    "dma_local",
    "cube",
    "vector",
)
DMA_KEYS = tuple(path_name(s, d) for s, d in DMA_PATHS)
AICPU_KEYS = ("cores", "launch_cycles", "bytes_per_cycle", "elements_per_cycle")
HOST_LINK_KEYS = ("bytes_per_cycle", "latency_cycles")


@dataclass(frozen=True)
class AicpuSpec:
    """The AI CPU (ARM cores beside the AI cores). Cycles are AI-core clock
    cycles, so AI-CPU tasks and AI-core launches share one time axis."""

    cores: int  # cores running AI-CPU tasks (informational: the profile)
    launch_cycles: float  # dispatch latency of one task
    bytes_per_cycle: float  # GM bandwidth the AI CPU gets
    elements_per_cycle: float  # work throughput over all its cores (target/aicpu.py op_work)


@dataclass(frozen=True)
class HostLinkSpec:
    """The link between host memory and GM (PCIe) that `npu.memcpy` uses, in
    AI-core clock cycles like everything else."""

    bytes_per_cycle: float  # effective bandwidth of one copy
    latency_cycles: int  # fixed cost of one copy task (dispatch and round trip)


@dataclass(frozen=True, eq=False)
class TargetConfig:
    name: str
    description: str
    clock_mhz: float
    cube_cores: int
    vector_cores: int
    coupled: bool
    capacity_bytes: Mapping[str, int]
    alignment_bytes: Mapping[str, int]
    dma_bytes_per_cycle: Mapping[str, float]
    hbm_bytes_per_cycle: float
    latency_cycles: Mapping[str, int]
    cube_fractals_per_cycle: Mapping[str, float]
    vector_cycles_per_repeat: Mapping[str, float]
    aicpu: AicpuSpec
    streams: int = 1
    """Streams the scheduler may use (tile-assign-streams; ge-compile --max-streams overrides)."""
    host_link: HostLinkSpec | None = None
    """The host link, None when the config has no `host_link` (then no program may copy)."""
    path: str = ""
    _dma_terms: dict = field(default_factory=dict, init=False, repr=False)
    """(fixed cycles, bytes per cycle) per (path, active cores): the cost models price ~10^5 copies per compile."""

    def cores_for(self, uses_cube: bool) -> int:
        """Cores a kernel can spread over: cube cores if it uses the cube."""
        return self.cube_cores if uses_cube else self.vector_cores

    def gm_bytes_per_cycle(self, path: str, active_cores: int) -> float:
        """Per-core rate of a GM path when `active_cores` cores share HBM."""
        share = self.hbm_bytes_per_cycle / max(1, active_cores)
        return min(self.dma_bytes_per_cycle[path], share)

    def dma_terms(self, path: str, active_cores: int = 1) -> tuple[int, float]:
        """(fixed cycles, bytes per cycle) of one copy on `path`: `dma_cycles`
        is fixed + ceil(bytes / rate) (a cost model pricing many copies on
        one path may take the terms once)."""
        terms = self._dma_terms.get((path, active_cores))
        if terms is None:
            if path.startswith("gm_") or path.endswith("_gm"):
                terms = self.latency_cycles["dma_gm"], self.gm_bytes_per_cycle(path, active_cores)
            else:
                terms = self.latency_cycles["dma_local"], self.dma_bytes_per_cycle[path]
            self._dma_terms[(path, active_cores)] = terms
        return terms

    def dma_cycles(self, path: str, nbytes: int, active_cores: int = 1) -> int:
        fixed, rate = self.dma_terms(path, active_cores)
        return fixed + math.ceil(nbytes / rate)

    def mmad_cycles(self, dtype: str, m: int, n: int, k: int) -> int:
        k0 = 32 // (2 if dtype == "f16" else 4)
        fractals = (m // 16) * (n // 16) * (k // k0)
        return self.latency_cycles["cube"] + math.ceil(
            fractals / self.cube_fractals_per_cycle[dtype]
        )

    def vector_cycles(self, op: str, repeat: int) -> int:
        per = self.vector_cycles_per_repeat.get(
            op, self.vector_cycles_per_repeat["default"]
        )
        return self.latency_cycles["vector"] + math.ceil(repeat * per)

    def aicpu_cycles(self, nbytes: int, work: int) -> int:
        """One AI-CPU task: dispatch, then the longer of moving its GM bytes
        (read and written) and doing its work (target/aicpu.py `op_work`)."""
        a = self.aicpu
        return math.ceil(
            a.launch_cycles + max(nbytes / a.bytes_per_cycle, work / a.elements_per_cycle)
        )

    def memcpy_cycles(self, nbytes: int) -> int:
        """One copy of `nbytes` between GM and host memory: latency, then the
        bytes at the link's rate. ConfigError if the config has no host_link."""
        link = self.host_link
        if link is None:
            raise ConfigError(self.no_host_link())
        return link.latency_cycles + math.ceil(nbytes / link.bytes_per_cycle)

    def no_host_link(self) -> str:
        """Why a copy between GM and host memory cannot be priced on this target."""
        return (
            f"target config '{self.path or self.name}' lacks host_link (bytes_per_cycle, latency_cycles), "
            "which copies between GM and host memory (npu.memcpy) need"
        )


# --- validation -------------------------------------------------------------
# Every key has a type and a range; a value outside it is a one-line
# ConfigError naming the file, the key (dotted: `capacity_bytes.ub`) and the
# range. Capacities and alignments are whole bytes, core counts and latencies
# whole numbers; rates are finite positive numbers (they divide).

MAX_CAPACITY = 1 << 31  # bytes of one on-chip buffer (the simulator allocates it)
MAX_ALIGNMENT = 1 << 16
MAX_CORES = 65535  # also the largest block_dim
MAX_LATENCY = 10**9  # cycles
MAX_RATE = 1e9  # bytes / fractals / elements per cycle, cycles per repeat
MAX_CLOCK_MHZ = 1e6
VECTOR_OP_NAMES = tuple(SPECS)  # what the simulator prices: the vector instructions' mnemonics


def _require(d: Mapping, key: str, where: str):
    if key not in d:
        raise ConfigError(f"{where}: missing key '{key}'")
    return d[key]


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _integer(v, label: str, lo: int, hi: int) -> int:
    """`label` names the file and the key: `x.json: capacity_bytes.ub`."""
    if not isinstance(v, int) or isinstance(v, bool) or not lo <= v <= hi:
        kind = "a positive integer" if lo >= 1 else "an integer"
        raise ConfigError(f"{label} must be {kind} in [{lo}, {hi}], got {v!r}")
    return v


def _positive(v, label: str, hi: float = MAX_RATE) -> float:
    if not _is_number(v) or not 0 < v <= hi:
        raise ConfigError(f"{label} must be a positive number in (0, {hi:g}], got {v!r}")
    return v


def _object(d, where: str) -> Mapping:
    if not isinstance(d, Mapping):
        raise ConfigError(f"{where}: expected an object, got {type(d).__name__}")
    return d


def _keys(d: Mapping, allowed, where: str) -> None:
    unknown = set(d) - set(allowed)
    if unknown:
        raise ConfigError(
            f"{where}: unknown keys {sorted(unknown)} (allowed keys: {', '.join(allowed)})"
        )


def _table(d, keys, where: str, check, *, optional=()) -> dict:
    """An object with exactly `keys` (and any of `optional`), each value
    passing `check(value, label)`."""
    d = _object(d, where)
    _keys(d, (*keys, *optional), where)
    out = {k: check(_require(d, k, where), f"{where}.{k}") for k in keys}
    out.update({k: check(d[k], f"{where}.{k}") for k in optional if k in d})
    return out


_TOP_KEYS = (
    "name",
    "description",
    "clock_mhz",
    "cores",
    "capacity_bytes",
    "alignment_bytes",
    "dma_bytes_per_cycle",
    "hbm_bytes_per_cycle",
    "latency_cycles",
    "cube_fractals_per_cycle",
    "vector_cycles_per_repeat",
    "aicpu",
    "streams",
    "host_link",
)
MAX_STREAMS = 64


def config_from_dict(data: Mapping, path: str = "<dict>") -> TargetConfig:
    """Validate a parsed config file and build the TargetConfig."""
    data = _object(data, path)
    _keys(data, _TOP_KEYS, path)

    def section(key: str) -> str:
        return f"{path}: {key}"

    name = _require(data, "name", path)
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{path}: name must be a non-empty string, got {name!r}")
    description = data.get("description", "")
    if not isinstance(description, str):
        raise ConfigError(f"{path}: description must be a string, got {description!r}")
    cores = _object(_require(data, "cores", path), section("cores"))
    _keys(cores, ("cube", "vector", "coupled"), section("cores"))
    cube = _integer(_require(cores, "cube", section("cores")), f"{path}: cores.cube", 1, MAX_CORES)
    vector = _integer(_require(cores, "vector", section("cores")), f"{path}: cores.vector", 1, MAX_CORES)
    coupled = cores.get("coupled", True)
    if not isinstance(coupled, bool):
        raise ConfigError(f"{path}: cores.coupled must be true or false, got {coupled!r}")

    def integers(lo: int, hi: int):
        return lambda v, label: _integer(v, label, lo, hi)

    align = _table(
        _require(data, "alignment_bytes", path), [s.value for s in MemSpace],
        section("alignment_bytes"), integers(1, MAX_ALIGNMENT),
    )
    for space in MemSpace:
        # A target may demand more than the ISA, never less: the verifier
        # already accepted programs aligned to the ISA's numbers.
        if align[space.value] % ALIGNMENT[space]:
            raise ConfigError(
                f"{path}: alignment_bytes.{space.value} must be a multiple of "
                f"{ALIGNMENT[space]} (the ISA's alignment), got {align[space.value]}"
            )
    capacity = _table(
        _require(data, "capacity_bytes", path), ON_CHIP, section("capacity_bytes"),
        integers(1, MAX_CAPACITY),
    )
    for space, cap in capacity.items():
        if cap % align[space]:
            raise ConfigError(
                f"{path}: capacity_bytes.{space} must be a multiple of alignment_bytes.{space} "
                f"({align[space]}), got {cap}"
            )
    clock = _positive(_require(data, "clock_mhz", path), f"{path}: clock_mhz", MAX_CLOCK_MHZ)
    hbm = _positive(_require(data, "hbm_bytes_per_cycle", path), f"{path}: hbm_bytes_per_cycle")
    dma = _table(_require(data, "dma_bytes_per_cycle", path), DMA_KEYS, section("dma_bytes_per_cycle"), _positive)
    latency = _table(
        _require(data, "latency_cycles", path), LATENCY_KEYS, section("latency_cycles"),
        integers(0, MAX_LATENCY),
    )
    cube_rate = _table(
        _require(data, "cube_fractals_per_cycle", path), ("f16", "f32"),
        section("cube_fractals_per_cycle"), _positive,
    )
    vector_cost = _table(
        _require(data, "vector_cycles_per_repeat", path), ("default",),
        section("vector_cycles_per_repeat"), _positive, optional=VECTOR_OP_NAMES,
    )
    aicpu_where = section("aicpu")
    aicpu = _object(_require(data, "aicpu", path), aicpu_where)
    _keys(aicpu, AICPU_KEYS, aicpu_where)
    for k in AICPU_KEYS:
        _require(aicpu, k, aicpu_where)
    aicpu_cores = _integer(aicpu["cores"], f"{path}: aicpu.cores", 1, MAX_CORES)
    launch = aicpu["launch_cycles"]
    if not _is_number(launch) or not 0 <= launch <= MAX_LATENCY:
        raise ConfigError(
            f"{path}: aicpu.launch_cycles must be a number in [0, {MAX_LATENCY}], got {launch!r}"
        )
    return TargetConfig(
        name=name,
        description=description,
        clock_mhz=float(clock),
        cube_cores=cube,
        vector_cores=vector,
        coupled=coupled,
        capacity_bytes=MappingProxyType(capacity),
        alignment_bytes=MappingProxyType(align),
        dma_bytes_per_cycle=MappingProxyType(dma),
        hbm_bytes_per_cycle=float(hbm),
        latency_cycles=MappingProxyType(latency),
        cube_fractals_per_cycle=MappingProxyType(cube_rate),
        vector_cycles_per_repeat=MappingProxyType(vector_cost),
        aicpu=AicpuSpec(
            cores=aicpu_cores,
            launch_cycles=float(launch),
            bytes_per_cycle=float(_positive(aicpu["bytes_per_cycle"], f"{path}: aicpu.bytes_per_cycle")),
            elements_per_cycle=float(_positive(aicpu["elements_per_cycle"], f"{path}: aicpu.elements_per_cycle")),
        ),
        streams=_integer(data.get("streams", 1), f"{path}: streams", 1, MAX_STREAMS),
        host_link=_host_link(data["host_link"], path) if "host_link" in data else None,
        path=path,
    )


def _host_link(d, path: str) -> HostLinkSpec:
    """The optional `host_link` section (configs written before it load without one)."""
    where = f"{path}: host_link"
    d = _object(d, where)
    _keys(d, HOST_LINK_KEYS, where)
    return HostLinkSpec(
        bytes_per_cycle=float(_positive(_require(d, "bytes_per_cycle", where), f"{where}.bytes_per_cycle")),
        latency_cycles=_integer(_require(d, "latency_cycles", where), f"{where}.latency_cycles", 0, MAX_LATENCY),
    )


def available_targets() -> list[str]:
    return sorted(p.stem for p in CONFIG_DIR.glob("*.json"))


def load_target(name_or_path: str | Path | TargetConfig) -> TargetConfig:
    """A preset by name (`davinci-910`) or a config file by path."""
    if isinstance(name_or_path, TargetConfig):
        return name_or_path
    path = Path(name_or_path)
    if not path.exists():
        preset = CONFIG_DIR / f"{name_or_path}.json"
        if not preset.exists():
            raise ConfigError(
                f"unknown target '{name_or_path}': not a file, and not one of "
                f"{', '.join(available_targets())}"
            )
        path = preset
    if path.is_dir():
        raise ConfigError(f"{path}: is a directory, not a target config file")
    try:
        data = json.loads(path.read_text(), parse_constant=_no_constant)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: not valid JSON: {e}") from None
    except RecursionError:
        raise ConfigError(f"{path}: not valid JSON: nested too deeply") from None
    except OSError as e:
        raise ConfigError(f"{path}: cannot read target config: {e.strerror or e}") from None
    return config_from_dict(data, str(path))


def _no_constant(name: str):
    raise json.JSONDecodeError(f"{name} is not a JSON number", name, 0)

