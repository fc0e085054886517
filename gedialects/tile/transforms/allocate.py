"""tile-allocate: on-chip addresses for every tile.alloc of every kernel.

Bump allocation per space in program order, each buffer aligned as the
target demands (at least one 32-byte block); a `buffers = 2` alloc takes two
consecutive copies. The address is recorded on the alloc (`offset`, bytes),
which convert-tile-to-npu reads. Structured kernels reuse buffers already
(tile-expand-structured) and were sized to fit (tile-select-tiling); a kernel
that still does not fit is a diagnostic with the sizes."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from gedialects.npu.isa import BLOCK_BYTES
from gedialects.tile import ops as t
from gedialects.walk import outermost
from target.config import TargetConfig, load_target


def buffer_bytes(op: t.AllocOp, config: TargetConfig) -> int:
    """Bytes of one copy of the buffer, rounded to its space's alignment."""
    align = max(config.alignment_bytes[t.space_of(op.result)], BLOCK_BYTES)
    es = t.element_bytes(op.result.type.element)  # type: ignore[attr-defined]
    if es is None:
        raise PassFailedException(f"tile.alloc: {op.result.type.element} is not an on-chip element type (f16/f32)")  # type: ignore[attr-defined]
    return -(-op.num_elements() * es // align) * align


def allocate_kernel(kernel: t.KernelOp, config: TargetConfig) -> dict[str, int]:
    """Set `offset` on every alloc of `kernel`; returns the bytes used per
    space (more than a space holds is a PassFailedException)."""
    top = place_buffers(kernel, config)
    for space, used in top.items():
        if used > config.capacity_bytes[space]:
            raise PassFailedException(
                f"tile.kernel @{kernel.sym_name.data}: on-chip buffers need {used} bytes of "
                f"{space}, the target has {config.capacity_bytes[space]} (choose smaller tiles)"
            )
    return top


def place_buffers(kernel: t.KernelOp, config: TargetConfig) -> dict[str, int]:
    """Set `offset` on every alloc of `kernel` (bump allocation, aligned);
    returns the bytes used per space, whether they fit or not."""
    top: dict[str, int] = {}
    for op in kernel.walk():
        if not isinstance(op, t.AllocOp):
            continue
        space = t.space_of(op.result)
        align = max(config.alignment_bytes[space], BLOCK_BYTES)
        base = -(-top.get(space, 0) // align) * align
        top[space] = base + buffer_bytes(op, config) * op.buffers.value.data
        op.properties["offset"] = IntegerAttr(base, i64)
    return top


@dataclass(frozen=True)
class TileAllocatePass(ModulePass):
    """Give every on-chip buffer its address (bump allocation, aligned; overflow is a diagnostic)."""

    name = "tile-allocate"
    target: str = "davinci-910"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        config = load_target(self.target)
        for kernel in outermost(op, t.KernelOp):
            allocate_kernel(kernel, config)
