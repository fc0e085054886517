"""Errors of the simulated NPU. Messages are one line and name the instruction
(op name, its index in the kernel and its source location), the offline-model
file and field, or the target-config key.

Every error here is a *user* error: a problem with a program, an offline
model, a target config or the inputs given to a run. Command lines report
them as one `error:` line and exit 1 (`gedialects.tools.cli.run_cli` catches
`TargetError`); anything else escaping is a bug."""

from __future__ import annotations


class TargetError(Exception):
    """Base of every user-facing error of `target/` (config, offline model,
    assembly, simulation)."""


class ConfigError(TargetError, ValueError):
    """A target config file is missing a key, has an unknown one, or a value
    outside its range (also: an unknown target name)."""


class SimulationError(TargetError):
    """The program did something the hardware would not survive or would get
    wrong: an out-of-bounds or misaligned access, a data race, a deadlock, more
    instructions than its budget."""


class RaceError(SimulationError):
    """Two pipes (or two blocks) touch overlapping bytes, at least one writing,
    and no flag or barrier orders them."""


class FlagBalanceError(RaceError):
    """A block ends with a flag set more often than it was waited for. Flags
    outlive a kernel on a core, so the next kernel there would pass a wait
    before its data is ready: a race waiting to happen."""


class DeadlockError(SimulationError):
    """A wait can never be satisfied."""


class AssemblyError(SimulationError):
    """The npu module cannot be turned into a program (unsupported op, bad
    structure), or an offline-model file is malformed, corrupted or invalid."""
