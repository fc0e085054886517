"""Optimisation remarks: one type for the whole compiler.

A remark says what a pass did, or did not do and why, at one op:

    applied ConvBatchnormFusionPass at loc("conv1"): absorbed [conv1, bn1]
    missed ConvActivationFusionPass at loc("conv2"): intermediate has other users (...)

Remarks go through `logging` at INFO with the op attached
(`extra={"op": op, "remark": remark}`), so `ge-opt --log=info` prints them and
`--verify-diagnostics` checks them against `// expected-remark` comments.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from xdsl.ir import Operation

from gedialects.location import describe_location

APPLIED = "applied"
MISSED = "missed"


@dataclass(frozen=True)
class Remark:
    """What `rule` (a pass or one of its rules) did at `op`.

    `kind` is "applied" or "missed". A missed remark has a `reason` (a short
    category that reports count, e.g. "intermediate has other users") and
    optionally a `detail` for the reader. An applied remark lists the model
    nodes the result `absorbed`.
    """

    kind: str
    rule: str
    op: Operation
    reason: str = ""
    detail: str = ""
    absorbed: tuple[str, ...] = ()

    @property
    def where(self) -> str:
        """`loc("conv1")`, else the op's name."""
        return describe_location(self.op.location) or self.op.name

    @property
    def message(self) -> str:
        if self.kind == APPLIED:
            return f"applied {self.rule} at {self.where}: absorbed [{', '.join(self.absorbed)}]"
        text = f"{self.kind} {self.rule} at {self.where}: {self.reason}"
        return f"{text} ({self.detail})" if self.detail else text

    def emit(self, logger: logging.Logger) -> None:
        """Log at INFO with the op attached. The text starts with `'<op>' op`
        (MLIR's habit) whatever the message says, so that every remark line
        reads the same."""
        logger.info(f"'{self.op.name}' op {self.message}", extra={"op": self.op, "remark": self})
