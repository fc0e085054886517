"""Op slicing under a device memory limit (GE's operator slicing).

`tile-fit-device-memory` keeps the device arena within a limit by copying
tensors a task does not touch to host memory; it cannot help a task whose
own operands exceed the limit. A convolution is such a task when its input,
residual and output together do (ResNet-50 at 70% of its arena: res3a's
first 1x1 conv reads a 1,606 KB map and writes an 803 KB one). Such a conv
writes its output as **channel pieces**, each its own GM tensor written by
its own kernel (the conv restricted to the piece's output channels), so a
piece already written can leave the device while the next is computed:
`output_pieces` picks the fewest pieces (whole 16-channel fractals) that
bring the kernel within the limit. Readers see the pieces as one map: a
conv reading a split input copies each piece into its C1 slices of L1
(`emit_conv`); a conv reading a split residual, and a pool reading a split
input, run as one kernel per piece, each reading its piece where it writes
the matching output channels. A map is split only when every reader is
such a conv or pool (a piece has the zero halo a padded pool needs).

A conv with a residual of its output's shape that it reads last may write
over it (placement's `reuses`), so its output is first not counted;
compile_module lowers the graph again counting it
(`slice_in_place_convs`) when the arena plan cannot meet the limit
otherwise (ResNet-50 at 70%: the residual convs' maps stay live across the
other branch and offloading them does not lower the plan)."""

from __future__ import annotations

from xdsl.ir import SSAValue

from gedialects.graph import ops as g
from lowering.legality import AI_CORE, engine_of, kernel_of

from .placement import stored_bytes
from .context import LoweringContext, slices_for
from .planning import CUBE_CHANNELS
from .storage import TensorView

ChannelRanges = list[tuple[int, int]]


def readers_take_pieces(ctx: LoweringContext, v: SSAValue) -> bool:
    """Every reader of v is a dense AI-core conv reading it as its input or
    its residual (not both) or an AI-core max/avg pool, and v is an internal
    map of its own storage."""
    if v in ctx.plan.outputs or v in ctx.plan.aliases or any(root is v for root, _ in ctx.plan.aliases.values()):
        return False
    if not v.uses:
        return False
    for use in v.uses:
        op = use.operation
        if engine_of(op) != AI_CORE or kernel_of(op) is not None:
            return False
        if isinstance(op, g.MaxPoolOp | g.AvgPoolOp):
            continue
        if not isinstance(op, g.ConvOp) or op.int_("group", 1) != 1 or op.weight is v or (
                op.input is v and op.residual is v):
            return False
    return True


def map_bytes(ctx: LoweringContext, views: list[TensorView]) -> int:
    """Arena bytes of the storages behind views (each counted once)."""
    storages = {id(v.storage): v.storage for v in views}
    return sum(stored_bytes(ctx, st) for st in storages.values())


def output_pieces(ctx: LoweringContext, op: g.ConvOp, inputs: list[TensorView], residual: list[TensorView]) -> ChannelRanges | None:
    """The channel ranges op's output is written in as separate tensors, or
    None (one map). Only under a device memory limit, when the kernel's own
    operands exceed it and its readers take pieces."""
    limit = ctx.device_memory_limit
    v = op.output
    if not limit or op.int_("group", 1) != 1 or not readers_take_pieces(ctx, v):
        return None
    _, C, H, W = g.shape_of(v)
    fractals = -(-C // CUBE_CHANNELS)
    top, bottom, left, right = ctx.plan.halos.get(v, [0, 0, 0, 0])
    whole = slices_for(C, ctx.c0) * (H + top + bottom) * (W + left + right) * ctx.c0 * ctx.elem_bytes
    operands = map_bytes(ctx, inputs + residual)
    in_place = not ctx.slice_in_place_convs and _writes_over_residual(op, residual)
    if operands + (0 if in_place else whole) <= limit:
        return None
    counts = [n for n in range(2, fractals + 1) if fractals % n == 0]
    if not counts:
        return None
    # the fewest pieces that fit, else the most (the limit fails anyway, and
    # tile-fit-device-memory then names the smallest limit slicing allows)
    count = next((n for n in counts if operands + -(-whole // n) <= limit), counts[-1])
    step = fractals // count * CUBE_CHANNELS
    return [(lo, min(C, lo + step)) for lo in range(0, C, step)]


def _writes_over_residual(op: g.ConvOp, residual: list[TensorView]) -> bool:
    """The conv may write its output over its residual (placement's
    `reuses`: one map of the same shape that this conv reads last)."""
    if len(residual) != 1 or tuple(residual[0].shape) != tuple(g.shape_of(op.output)):
        return False
    return all(u.operation is op or u.operation.is_before_in_block(op) for u in op.residual.uses)


def piece_maps(ctx: LoweringContext, v: SSAValue, ranges: ChannelRanges, name: str) -> list[TensorView]:
    """Separate internal maps for v's channel ranges (ctx.pieces[v])."""
    _, _, H, W = g.shape_of(v)
    views = [ctx.temp_map((1, hi - lo, H, W), f"{name}_c{lo}") for lo, hi in ranges]
    for view in views:  # the zero halo a padded pool reading v needs
        view.storage.halo = list(ctx.plan.halos.get(v, [0, 0, 0, 0]))
    ctx.pieces[v] = views
    return views


def channel_view(view: TensorView, lo: int, hi: int, c0: int) -> TensorView:
    """Channels [lo, hi) of a map (lo a multiple of C0): a view of its storage."""
    n, _, H, W = view.shape
    return TensorView(view.storage, view.first_slice + lo // c0, view.layout, (n, hi - lo, H, W))


def ranges_of(pieces: list[TensorView]) -> ChannelRanges:
    ranges, lo = [], 0
    for piece in pieces:
        ranges.append((lo, lo + piece.shape[1]))
        lo += piece.shape[1]
    return ranges


def operand_maps(ctx: LoweringContext, v: SSAValue) -> list[TensorView]:
    """v as the maps that hold it: its pieces, or its one view."""
    return ctx.pieces.get(v) or [ctx.values[v]]
