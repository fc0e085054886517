"""UB buffers of an expanded kernel: one tile's box of a value, and the pool
that hands them out and takes them back once the value is dead.

* a *row* value (last dim whole) is stored with its rows padded to a common
  pitch, a multiple of 32 bytes, so every row starts on a vector block;
* a *column* value (last dim 1 while the iteration's is wider: a reduction's
  result, a [.., 1] operand) is stored compactly, one element per row;
* a *replicated* column has each element over one 32-byte block (brcb), so a
  row op reads it with block stride 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from xdsl.ir import Attribute, SSAValue

from gedialects.npu.isa import BLOCK_BYTES
from gedialects.tile import ops as t


UB_RESERVE_BYTES = 4096
"""UB that tile sizing leaves free for a kernel's small buffers (bias,
per-channel constants) and the alignment of every buffer."""
STAGE_UB_SHARE = 8
"""Each of the two UB chunk buffers of a staged load (a matmul operand's
rows on their way to L1 fractals, a conv's staged input slices) takes at
most this fraction of UB (the rest is the kernel's own buffers)."""


class TilingError(Exception):
    """The kernel cannot be expanded with this tile box (the reason says why)."""


def elem_bytes(element: Attribute) -> int:
    es = t.element_bytes(element)
    if es is None:
        raise TilingError(f"element type {element} is not handled by the vector unit (f16/f32 only)")
    return es


def per_block(element: Attribute) -> int:
    """Elements in one 32-byte block."""
    return BLOCK_BYTES // elem_bytes(element)


def round_up(n: int, unit: int) -> int:
    return -(-n // unit) * unit


@dataclass(eq=False)
class Buffer:
    """One tile's box of a value in UB."""

    ref: SSAValue
    box: tuple[int, ...]
    element: Attribute
    kind: str  # row | column | replicated
    pitch: int  # row: padded row length; column: 1; replicated: elements per block
    replicated: Buffer | None = None  # the brcb copy of a column, made on first use by a row op

    @property
    def rows(self) -> int:
        return math.prod(self.box[:-1])

    def strides(self) -> list[int]:
        """Element strides per dim (the last: 1, or 0 for a replicated column)."""
        n = len(self.box)
        out = [0] * n
        step = self.pitch
        for k in range(n - 2, -1, -1):
            out[k] = step
            step *= self.box[k]
        out[-1] = 0 if self.kind == "replicated" else 1
        return out

    def count(self) -> int:
        """Elements a contiguous op over the whole buffer covers."""
        return self.rows if self.kind == "column" else self.rows * self.pitch

    def elements(self) -> int:
        """Elements the buffer holds (what brcb reads or writes of it included)."""
        return buffer_elements(self.kind, self.rows, self.pitch, self.element)


BRCB_VALUES = 8
"""Values one brcb repeat broadcasts (one per block of a 256-byte repeat)."""


def buffer_elements(kind: str, rows: int, pitch: int, element: Attribute) -> int:
    if kind == "column":  # brcb reads whole repeats of it
        return round_up(rows, max(per_block(element), BRCB_VALUES))
    if kind == "replicated":  # brcb writes whole repeats
        return round_up(rows, BRCB_VALUES) * pitch
    return rows * pitch


Allocate = Callable[[Attribute, int, int], SSAValue]
"""(element type, elements, buffers) -> a new UB buffer."""


@dataclass
class BufferPool:
    """UB buffers of one kernel, reused by (elements, element type)."""

    allocate: Allocate
    free: dict[tuple, list[SSAValue]] = field(default_factory=dict)
    allocated: int = 0  # bytes

    def take(self, kind: str, rows: int, pitch: int, element: Attribute, buffers: int = 1) -> SSAValue:
        n = buffer_elements(kind, rows, pitch, element)
        key = (n, str(element))
        if buffers == 1 and self.free.get(key):
            return self.free[key].pop()
        self.allocated += round_up(n * elem_bytes(element), BLOCK_BYTES) * buffers
        return self.allocate(element, n, buffers)

    def new(self, kind: str, box: tuple[int, ...], pitch: int, element: Attribute, buffers: int = 1) -> Buffer:
        return Buffer(self.take(kind, math.prod(box[:-1]), pitch, element, buffers), box, element, kind, pitch)

    def release(self, buf: Buffer, double: bool = False) -> None:
        """Give buf back (and its brcb copy); `double`: a ping-pong load's
        buffer stays with its load."""
        if buf.replicated is not None:
            self.release(buf.replicated)
            buf.replicated = None
        if not double:
            self.free.setdefault((buf.elements(), str(buf.element)), []).append(buf.ref)
