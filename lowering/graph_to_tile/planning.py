"""Before any kernel: which values share a storage, the halo each map needs,
and which storages are graph outputs (`plan_storage`).

* A channel concat is a view when its operands can write their slices of
  the result in place: each operand is then an alias of the concat's root
  storage at its first C1 slice. Otherwise its operands keep their own maps
  and the concat pattern copies them (`StoragePlan.concat_copies`).
* A reshape-like view (g.VIEW_OPS) on the AI core aliases its operand; a
  channel slice/split of a map in whole C0 slices aliases its slices.
* A map read by a padded pooling gets a zero halo as wide as the largest
  such padding, so every window tile is uniform. Convolutions pad on the
  fly (their band in L1, `conv_tiling.band_window`): no halo.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.ir import Block, Operation, SSAValue
from xdsl.utils.exceptions import PassFailedException

from gedialects.graph import ops as g
from gedialects.graph.interpreter import output_names
from gedialects.location import describe_op
from gedialects.tile.transforms.conv_tiling import CUBE_CHANNELS
from lowering.legality import AI_CORE, AI_CPU, batch_slice, channel_view_refusal, copy_boxes, engine_of, kernel_of


@dataclass
class StoragePlan:
    aliases: dict[SSAValue, tuple[SSAValue, int]]
    """value -> (root value that owns the storage, first C1 slice in it)"""
    concat_copies: dict[Operation, list[tuple[SSAValue, int]]]
    """channel concat not written in place -> its (operand, channel offset)s"""
    halos: dict[SSAValue, list[int]]
    """root value -> zero halo (top, bottom, left, right)"""
    outputs: dict[SSAValue, str]
    """root value -> the graph output name it is stored as"""


def plan_storage(fn: func.FuncOp, c0: int) -> StoragePlan:
    ops = list(fn.body.block.ops)
    aliases, concat_copies = _plan_concats(ops, c0)
    for op in ops:
        if isinstance(op, g.VIEW_OPS) and engine_of(op) == AI_CORE:
            src = op.operands[0]
            aliases[op.results[0]] = aliases.get(src, (src, 0))
        elif _channel_view(op, c0):
            boxes = copy_boxes(op)  # a channel view (legality._channel_view): its C0 slices of the source
            assert not isinstance(boxes, str)
            root, base = aliases.get(op.operands[0], (op.operands[0], 0))
            for box in boxes:
                aliases[box.dst] = (root, base + box.src_offsets[1] // c0)  # type: ignore[index]
    halos = _plan_halos(ops, aliases)
    outputs: dict[SSAValue, str] = {}
    ret = fn.body.block.last_op
    assert isinstance(ret, func.ReturnOp)
    for name, v in zip(output_names(fn), ret.operands):
        outputs.setdefault(aliases.get(v, (v, 0))[0], name)
    return StoragePlan(aliases, concat_copies, halos, outputs)


def _channel_view(op: Operation, c0: int) -> bool:
    """A slice or split the CNN patterns take as a view of C0 slices of its
    source (not a batch slice, nor channels a selection conv copies)."""
    return (isinstance(op, g.SliceOp | g.SplitOp) and engine_of(op) == AI_CORE and kernel_of(op) is None
            and batch_slice(op) is None and channel_view_refusal(op, c0 == 16) is None)


def _plan_concats(ops: list[Operation], c0: int):
    """Channel concats, last first (a concat written into another one's
    result aliases that result's root)."""
    aliases: dict[SSAValue, tuple[SSAValue, int]] = {}
    concat_copies: dict[Operation, list[tuple[SSAValue, int]]] = {}
    for op in reversed(ops):
        if engine_of(op) == AI_CPU or kernel_of(op) is not None:  # the AI CPU's, or a structured copy of rows
            continue
        if not (isinstance(op, g.ConcatOp) and op.int_("axis", 0) % 4 == 1 and len(g.shape_of(op.output)) == 4):
            continue
        channel = 0
        root, base = aliases.get(op.output, (op.output, 0))
        offsets, in_place = [], True
        for i, x in enumerate(op.inputs):
            if isinstance(x.owner, (g.ConstantOp, g.FillOp)):
                raise PassFailedException(f"{describe_op(op)}: concat of a constant operand is not lowered")
            # A cube producer stores whole 16-channel fractal columns:
            # an operand that ends inside one would spill into the next
            # operand's channels, so only the last may be ragged.
            ragged = g.shape_of(x)[1] % CUBE_CHANNELS != 0 and i < len(op.inputs) - 1
            in_place &= channel % c0 == 0 and not ragged and not (
                x in aliases or x.owner is None or isinstance(x.owner, Block)
                or not isinstance(x.owner, Operation) or isinstance(x.owner, g.VIEW_OPS) or _channel_view(x.owner, c0)
                or any(x is y for y, _ in offsets)
            )
            offsets.append((x, channel))
            channel += g.shape_of(x)[1]
        if in_place:
            for x, offset in offsets:
                aliases[x] = (root, base + offset // c0)
        else:  # all operands in their own storage, copied by concat kernels
            concat_copies[op] = offsets
    return aliases, concat_copies


def _plan_halos(ops: list[Operation], aliases) -> dict[SSAValue, list[int]]:
    halos: dict[SSAValue, list[int]] = {}
    for op in ops:
        pads = None
        if isinstance(op, g.MaxPoolOp | g.AvgPoolOp) and engine_of(op) == AI_CORE:
            p = op.ints("pads", (0, 0, 0, 0))  # ONNX: top, left, bottom, right
            pads = [p[0], p[2], p[1], p[3]]
        if pads and any(pads):
            x = op.operands[0]
            root = aliases.get(x, (x, 0))[0]
            halo = halos.setdefault(root, [0, 0, 0, 0])
            for i in range(4):
                halo[i] = max(halo[i], pads[i])
    return halos
