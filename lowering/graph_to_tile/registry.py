"""The conversion patterns of convert-graph-to-tile, by graph op type.

A family module registers one function per op type it lowers:

    @lowers(g.MaxPoolOp, g.AvgPoolOp)
    def lower_pool(ctx: LoweringContext, op: g.PoolOp) -> None: ...

The driver (`__init__.py`) looks an op's exact type up in `PATTERNS`, after
the ops that need no kernel and the AI-CPU placement (lowering/legality/)
have been dealt with, in the table of the kernel family the partition chose
(`ge.kernel`: the CNN patterns unless it says `vector`). A pattern emits its kernels into `ctx.program` and
records where its results live in `ctx.values`. A type registered twice is a
programming error, caught at import.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from xdsl.ir import Operation

if TYPE_CHECKING:
    from .context import LoweringContext

Pattern = Callable[["LoweringContext", Operation], None]

CNN_FAMILY = "cnn"
"""The patterns of 4-D feature maps in NC1HWC0 (and the gemm/softmax of classifiers)."""

PATTERNS: dict[str, dict[type[Operation], Pattern]] = {}
"""Kernel family (legality's `ge.kernel`) -> graph op type -> the pattern that lowers it."""


def lowers(*op_types: type[Operation], family: str = CNN_FAMILY) -> Callable[[Pattern], Pattern]:
    """Register the decorated function as `family`'s pattern for `op_types`."""

    def register(pattern: Pattern) -> Pattern:
        table = PATTERNS.setdefault(family, {})
        for op_type in op_types:
            if op_type in table:
                raise AssertionError(f"{op_type.__name__} is lowered by both "
                                     f"{table[op_type].__qualname__} and {pattern.__qualname__} ({family})")
            table[op_type] = pattern
        return pattern

    return register
