"""Errors of the simulated NPU. Messages are one line and name the instruction
(op name, its index in the kernel and its source location)."""

from __future__ import annotations


class SimulationError(Exception):
    """The program did something the hardware would not survive or would get
    wrong: an out-of-bounds or misaligned access, a data race, a deadlock."""


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
    structure), or an offline-model file is malformed."""
