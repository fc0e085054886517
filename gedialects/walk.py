"""Finding ops without walking what is inside them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypeVar

from xdsl.ir import Operation

OpT = TypeVar("OpT", bound=Operation)


def outermost(root: Operation, cls: type[OpT] | tuple[type[OpT], ...]) -> Iterator[OpT]:
    """The ops of `cls` under `root` (root excluded) that no other op of
    `cls` encloses, in program order, without walking their bodies: a
    pass looking for a program's kernels visits the program's ops, not
    the kernels' instructions (densenet121's 26k npu ops: a whole-module
    walk per pass cost 30 ms)."""
    for region in root.regions:
        for block in region.blocks:
            for op in block.ops:
                if isinstance(op, cls):
                    yield op  # type: ignore[misc]
                else:
                    yield from outermost(op, cls)
