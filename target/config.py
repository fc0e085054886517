"""Target configs: the hardware numbers of a simulated NPU, read from a data file.

The shipped presets live in `target/configs/<name>.json`; a user copies one,
edits it and passes its path wherever a target name is accepted. Every number
the simulator or a cost model uses comes from here (sources in docs/NPU.md).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from gedialects.npu.isa import ALIGNMENT, DMA_PATHS, MemSpace, path_name

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


class ConfigError(ValueError):
    """A config file is missing a key, has an unknown one, or a bad value."""


@dataclass(frozen=True)
class AicpuSpec:
    """The AI CPU (ARM cores beside the AI cores). Cycles are AI-core clock
    cycles, so AI-CPU tasks and AI-core launches share one time axis."""

    cores: int  # cores running AI-CPU tasks (informational: the profile)
    launch_cycles: float  # dispatch latency of one task
    bytes_per_cycle: float  # GM bandwidth the AI CPU gets
    elements_per_cycle: float  # work throughput over all its cores (target/aicpu.py op_work)


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
    path: str = ""

    def cores_for(self, uses_cube: bool) -> int:
        """Cores a kernel can spread over: cube cores if it uses the cube."""
        return self.cube_cores if uses_cube else self.vector_cores

    def gm_bytes_per_cycle(self, path: str, active_cores: int) -> float:
        """Per-core rate of a GM path when `active_cores` cores share HBM."""
        share = self.hbm_bytes_per_cycle / max(1, active_cores)
        return min(self.dma_bytes_per_cycle[path], share)

    def dma_cycles(self, path: str, nbytes: int, active_cores: int = 1) -> int:
        if path.startswith("gm_") or path.endswith("_gm"):
            rate = self.gm_bytes_per_cycle(path, active_cores)
            fixed = self.latency_cycles["dma_gm"]
        else:
            rate = self.dma_bytes_per_cycle[path]
            fixed = self.latency_cycles["dma_local"]
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


def _require(d: Mapping, key: str, where: str):
    if key not in d:
        raise ConfigError(f"{where}: missing key '{key}'")
    return d[key]


def _positive_table(d: Mapping, keys, where: str, *, extra_ok: bool = False) -> dict:
    if not isinstance(d, Mapping):
        raise ConfigError(f"{where}: expected an object")
    out = {}
    for k in keys:
        v = _require(d, k, where)
        if not isinstance(v, (int, float)) or v <= 0:
            raise ConfigError(f"{where}.{k}: expected a positive number, got {v!r}")
        out[k] = v
    unknown = set(d) - set(keys)
    if unknown and not extra_ok:
        raise ConfigError(f"{where}: unknown keys {sorted(unknown)}")
    for k in unknown:
        if not isinstance(d[k], (int, float)) or d[k] <= 0:
            raise ConfigError(f"{where}.{k}: expected a positive number, got {d[k]!r}")
        out[k] = d[k]
    return out


def _core_count(cores: Mapping, key: str, path: str) -> int:
    value = _require(cores, key, f"{path}: cores")
    if not isinstance(value, int) or value <= 0:
        raise ConfigError(
            f"{path}: cores.{key} must be a positive integer, got {value!r}"
        )
    unknown = set(cores) - {"cube", "vector", "coupled"}
    if unknown:
        raise ConfigError(f"{path}: cores: unknown keys {sorted(unknown)}")
    return value


_TOP_KEYS = {
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
}


def config_from_dict(data: Mapping, path: str = "<dict>") -> TargetConfig:
    """Validate a parsed config file and build the TargetConfig."""
    unknown = set(data) - _TOP_KEYS
    if unknown:
        raise ConfigError(f"{path}: unknown keys {sorted(unknown)}")
    cores = _require(data, "cores", path)

    def table(key: str, keys, *, extra_ok: bool = False) -> dict:
        return _positive_table(_require(data, key, path), keys, f"{path}: {key}", extra_ok=extra_ok)

    align = table("alignment_bytes", [s.value for s in MemSpace])
    for space in MemSpace:
        # A target may demand more than the ISA, never less: the verifier
        # already accepted programs aligned to the ISA's numbers.
        if align[space.value] % ALIGNMENT[space]:
            raise ConfigError(
                f"{path}: alignment_bytes.{space.value} must be a multiple of "
                f"{ALIGNMENT[space]} (the ISA's alignment)"
            )
    hbm = _require(data, "hbm_bytes_per_cycle", path)
    clock = _require(data, "clock_mhz", path)
    for key, value in (("hbm_bytes_per_cycle", hbm), ("clock_mhz", clock)):
        if not isinstance(value, (int, float)) or value <= 0:
            raise ConfigError(f"{path}: {key} must be a positive number")
    aicpu = table("aicpu", AICPU_KEYS)
    if not isinstance(aicpu["cores"], int):
        raise ConfigError(f"{path}: aicpu.cores must be a positive integer, got {aicpu['cores']!r}")
    return TargetConfig(
        name=str(_require(data, "name", path)),
        description=str(data.get("description", "")),
        clock_mhz=float(clock),
        cube_cores=_core_count(cores, "cube", path),
        vector_cores=_core_count(cores, "vector", path),
        coupled=bool(cores.get("coupled", True)),
        capacity_bytes=MappingProxyType(table("capacity_bytes", ON_CHIP)),
        alignment_bytes=MappingProxyType(align),
        dma_bytes_per_cycle=MappingProxyType(table("dma_bytes_per_cycle", DMA_KEYS)),
        hbm_bytes_per_cycle=float(hbm),
        latency_cycles=MappingProxyType(table("latency_cycles", LATENCY_KEYS)),
        cube_fractals_per_cycle=MappingProxyType(table("cube_fractals_per_cycle", ["f16", "f32"])),
        vector_cycles_per_repeat=MappingProxyType(
            table("vector_cycles_per_repeat", ["default"], extra_ok=True)
        ),
        aicpu=AicpuSpec(
            cores=aicpu["cores"],
            launch_cycles=float(aicpu["launch_cycles"]),
            bytes_per_cycle=float(aicpu["bytes_per_cycle"]),
            elements_per_cycle=float(aicpu["elements_per_cycle"]),
        ),
        path=path,
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
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise ConfigError(f"{path}: not valid JSON: {e}") from e
    return config_from_dict(data, str(path))
