"""GM offsets of every tensor of the program (`place`), once all kernels exist.

With a memory plan on the function (graph-plan-memory ran) the internal
tensors share one arena at GM 0, planned by the planner's strategies on
their stored sizes and kernel lifetimes (gedialects/tile/gm_arena.py); constants,
inputs and outputs follow it. Without a plan: one bump allocator, no reuse.
Every tensor takes `gm_arena.slot` bytes (64-byte rounding plus slack)."""

from __future__ import annotations

import dataclasses

from xdsl.dialects.builtin import IntegerAttr, StringAttr, TensorType, i64

from gedialects.graph.memory import attributes as mem
from gedialects.graph.tensors import resource_attr, tensor_nbytes
from gedialects.instrumentation import statistic
from gedialects.tile import gm_arena, memset
from gedialects.tile import ops as t

from .context import LoweringContext
from .planning import CUBE_CHANNELS
from .storage import GmStorage

DEFAULT_ARENA_ALIGNMENT = 512
"""Bytes, when the memory plan's summary names no alignment."""


def place(ctx: LoweringContext) -> None:
    offset = 0
    arena: dict[str, int] = {}
    request_of: dict[str, gm_arena.Request] = {}
    if mem.has_plan(ctx.fn):
        requests = [gm_arena.Request(st.name, stored_bytes(ctx, st), _needs_zero(st), geometry=_geometry(st),
                                     reuses=_overwritten(ctx, st))
                    for st in ctx.storages if st.kind == "internal"]
        alignment = int(mem.memory_summary(ctx.fn).get("alignment", DEFAULT_ARENA_ALIGNMENT))
        arena, summary, to_clear = gm_arena.plan_arena(ctx.program, requests, alignment, clear=True)
        request_of = {r.name: r for r in requests}
        _insert_memsets(ctx, to_clear)
        for name in to_clear:
            request_of[name] = dataclasses.replace(request_of[name], cleared=True)
        summary["graph_arena_size"] = mem.arena_size(ctx.fn)
        if ctx.device_memory_limit:
            summary["sliced"] = len(ctx.pieces)  # maps written in channel pieces (slicing.py)
        summary.pop("live_bytes")
        # per task, memsets included, for the profile's device-memory track (not part of ge.memory's figures)
        ctx.program.attributes["ge.arena_live_bytes"] = StringAttr(
            gm_arena.live_bytes_of(ctx.program, list(request_of.values()), alignment, clear=True))
        mem.record_function(ctx.program, summary)  # type: ignore[arg-type]
        statistic("gm-arena-bytes", int(summary["arena_size"]), "GM arena of the stored intermediates")
        offset = int(summary["arena_size"])

    def take(nbytes: int) -> int:
        nonlocal offset
        start = offset
        offset += gm_arena.slot(nbytes)
        return start

    block = ctx.program.body.block
    first = block.first_op

    def declare(op: t.TensorOp) -> None:  # tensors first, in order, before the kernels
        block.insert_op_before(op, first) if first else block.add_op(op)

    for name, array in ctx.constants.items():
        start = take(array.nbytes)
        attr = resource_attr(f"ge_{name}", array)
        declare(t.TensorOp(properties={
            "name": StringAttr(name), "kind": StringAttr("constant"), "offset": IntegerAttr(start, i64),
            "type": attr.type, "layout": StringAttr(ctx.constant_layouts.get(name, "ND")), "value": attr}))
    for st in ctx.storages:
        logical = st.kind == "output" and st.ttype is not None
        ttype = _stored_type(ctx, st)
        nbytes = tensor_nbytes(ttype) + st.overread
        st.offset = arena[st.name] if st.name in arena else take(nbytes)
        layout = "ND" if logical else st.layout if st.kind == "internal" or st.layout == "NC1HWC0" else "ND"
        tensor = t.TensorOp(properties={
            "name": StringAttr(st.name), "kind": StringAttr(st.kind), "offset": IntegerAttr(st.offset, i64),
            "type": ttype, "layout": StringAttr(layout)})
        if st.name in arena:  # what tile-assign-streams needs to plan the arena again
            gm_arena.annotate(tensor, request_of[st.name])
        declare(tensor)


def _stored_type(ctx: LoweringContext, st: GmStorage) -> TensorType:
    # an NC1HWC0 graph output with H*W = 1 (finish_outputs) holds exactly
    # its NCHW bytes: the slot has the logical type; the channels padded
    # up to a whole fractal land in the tensor's slack
    if st.layout == "NC1HWC0" and not (st.kind == "output" and st.ttype is not None):
        return TensorType(ctx.elem, [1, st.slices, st.padded_h, st.padded_w, ctx.c0])
    return st.ttype or TensorType(ctx.elem, [st.elems])


def _insert_memsets(ctx: LoweringContext, names: list[str]) -> None:
    """A memset kernel right before the first task that names each tensor."""
    if not names:
        return
    storage = {st.name: st for st in ctx.storages}

    def kernel_name() -> str:
        name = ctx.fresh_name(f"k{ctx.stats.kernels}_memset")
        ctx.stats.count(memset.KIND)
        return name

    memset.insert_memsets(ctx.program, names, lambda name: _stored_type(ctx, storage[name]), kernel_name)
    statistic("memset-kernels", len(names), "memset kernels (zero-halo tensors in reused storage)")


def stored_bytes(ctx: LoweringContext, st: GmStorage) -> int:
    if st.layout == "NC1HWC0":
        return st.map_elements(ctx.c0) * ctx.elem_bytes + st.overread
    if st.ttype is not None:
        return tensor_nbytes(st.ttype) + st.overread
    return st.elems * ctx.elem_bytes + st.overread


def _whole_fractals(st: GmStorage) -> bool:
    """A 4-D map whose channels fill whole 16-channel fractals."""
    return len(st.shape) == 4 and st.shape[1] % CUBE_CHANNELS == 0


def _needs_zero(st: GmStorage) -> bool:
    """Zero halo, or padded channels a kernel may not write."""
    return st.layout == "NC1HWC0" and (any(st.halo) or not _whole_fractals(st))


def _overwritten(ctx: LoweringContext, st: GmStorage) -> str | None:
    """The storage `st`'s kernel may write over (`ctx.overwrites`): an
    internal map of the very same geometry, read whole, with no zeros to keep."""
    view = ctx.overwrites.get(st.name)
    if view is None:
        return None
    other = view.storage
    same = (other.kind == "internal" and other is not st and other.layout == st.layout == "NC1HWC0"
            and view.first_slice == 0 and view.layout == "NC1HWC0"
            and (other.slices, other.h, other.w, other.halo, other.overread) == (st.slices, st.h, st.w, st.halo, st.overread))
    return other.name if same and not _needs_zero(st) and not _needs_zero(other) else None


def _geometry(st: GmStorage) -> tuple[int, ...] | None:
    """Maps of one geometry find each other's halo zero (padded channels
    are not: a kernel may write them)."""
    if st.layout != "NC1HWC0" or not _whole_fractals(st):
        return None
    return (st.slices, st.padded_h, st.padded_w, *st.halo)
