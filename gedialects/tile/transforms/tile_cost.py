"""The cost of an expanded kernel by the target's formulas (the simulator's
own: `dma_cycles`, `vector_cycles`, `mmad_cycles` of the target config),
read off the expansion itself: what one iteration of its tile loop moves
and computes (`tile_work`), what it does once before the loop
(`hoisted_work`), a weights-stationary expansion's both (`stationary_work`),
and the busiest core's cycles when the tiles are spread over the cores and
double-buffered (`predicted_cycles`). Tiling choices
(tile-select-tiling's structured kernels, the CNN elementwise kernels)
compare candidates with it."""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.dialects import arith, scf
from xdsl.ir import Block, Operation
from xdsl.utils.exceptions import PassFailedException

from gedialects.npu.dma import plan_copy
from gedialects.npu.isa import REPEAT_BYTES
from gedialects.npu.vector_ops import TILE_SPECS, Family
from gedialects.npu.vector_plan import reduce_plan, run_plan, vector_plan
from gedialects.tile import ops as t
from gedialects.tile.transforms.ub_buffers import elem_bytes
from target.config import TargetConfig


@dataclass(frozen=True)
class TileWork:
    """What one tile costs: bytes in and out of GM and the DMA instructions
    that move them (each pays the GM latency), vector and cube cycles,
    instructions."""

    bytes_in: int
    bytes_out: int
    vector_cycles: int
    cube_cycles: int
    instructions: int
    dmas_in: int = 1
    dmas_out: int = 1


def tile_work(body: Block, config: TargetConfig) -> TileWork:
    """The work of one iteration of the expansion's tile loop."""
    loop = next((op for op in body.ops if isinstance(op, scf.ForOp)), None)
    return _work(_weighted((loop.body.block if loop is not None else body).ops, 1), config)


def hoisted_work(body: Block, config: TargetConfig) -> TileWork:
    """The work the expansion does once, outside its tile loop: the loads
    that do not move with the tile (all of them when there is one tile)."""
    return _work([(op, 1) for op in body.ops if not isinstance(op, scf.ForOp)], config)


def stationary_work(body: Block, tiles_start: Operation, tiles: int, config: TargetConfig) -> tuple[TileWork, TileWork]:
    """(once, per tile) of a weights-stationary expansion of one core's
    `tiles` (unrolled after `tiles_start`, the last op before them): the
    weights' copy to L1, and the tiles' work shared out evenly."""
    ops = list(body.ops)
    split = ops.index(tiles_start) + 1
    once = _work([(op, 1) for op in ops[:split]], config)
    total = _work(_weighted(ops[split:], 1), config)
    return once, TileWork(*(-(-getattr(total, f) // tiles) for f in TileWork.__dataclass_fields__))


def _work(ops: list[tuple[Operation, int]], config: TargetConfig) -> TileWork:
    bytes_in = bytes_out = vec = cube = instrs = dmas_in = dmas_out = 0
    for op, times in ops:
        if isinstance(op, t.MatmulOp):
            dtype = "f16" if elem_bytes(op.a.type.element) == 2 else "f32"  # type: ignore[attr-defined]
            cube += times * config.mmad_cycles(dtype, op.m.value.data, op.n.value.data, op.k.value.data)
            instrs += times
        elif isinstance(op, t.CopyOp) and t.space_of(op.src) != "gm" and t.space_of(op.dst) != "gm":
            instrs += times  # on-chip moves (L0C -> UB) ride on other pipes
        elif isinstance(op, t.CopyOp):
            src_es, dst_es = (elem_bytes(v.type.element) for v in (op.src, op.dst))  # type: ignore[attr-defined]
            n = times * math.prod(t.ints(op.shape)) * src_es
            dmas = times * plan_copy(t.ints(op.shape), t.ints(op.dst_strides), t.ints(op.src_strides), dst_es, src_es,
                                     t.space_of(op.dst), t.space_of(op.src)).instructions
            if t.space_of(op.src) == "gm":
                bytes_in, dmas_in = bytes_in + n, dmas_in + dmas
            else:
                bytes_out, dmas_out = bytes_out + n, dmas_out + dmas
            instrs += times
        elif isinstance(op, t.LoadIndexOp):
            instrs += times
        elif isinstance(op, t.ReduceOp):  # the instructions convert-tile-to-npu will emit
            fold, name = ("vadd" if op.op.data == "sum" else "vmax"), f"vreduce_{op.op.data}"
            plan = reduce_plan(op.rows.value.data, op.cols.value.data, op.row_stride.value.data,
                               elem_bytes(op.src.type.element))  # type: ignore[attr-defined]
            vec += times * sum(config.vector_cycles(name if step.reduce else fold, step.repeat) for step in plan)
            instrs += times * len(plan)
        elif isinstance(op, t.VecOp | t.CastOp | t.DupOp):
            name, repeats = _vector_repeats(op, config)
            vec += times * sum(config.vector_cycles(name, repeat) for repeat in repeats)
            instrs += times * len(repeats)
    return TileWork(bytes_in, bytes_out, vec, cube, instrs, dmas_in, dmas_out)


def _vector_repeats(op: t.VecOp | t.CastOp | t.DupOp, config: TargetConfig) -> tuple[str, list[int]]:
    """The instruction `op` becomes and the repeat count of each one
    convert-tile-to-npu emits: a conversion's or a duplicate's run as
    `run_plan` splits it; a vec's strides mapped onto blocks and repeats as
    npu/vector_plan.py maps them (a per-channel operand read with block
    stride 0 can cost a repeat per row), or for a broadcast (brcb) or a box
    the plan refuses, one instruction of its elements' repeats."""
    es = elem_bytes(op.operands[0].type.element)  # type: ignore[attr-defined]
    if isinstance(op, t.CastOp):
        sizes = tuple(elem_bytes(v.type.element) for v in (op.dst, op.src))  # type: ignore[attr-defined]
        return "vconv", [run.repeat for run in run_plan(op.count.value.data, sizes, config)]
    if isinstance(op, t.DupOp):
        return "vdup", [run.repeat for run in run_plan(op.count.value.data, (es,), config)]
    name = "v" + op.op.data
    if TILE_SPECS[op.op.data].family != Family.BROADCAST:
        try:
            return name, [repeat for _, repeat, _, _, _ in vector_plan(list(t.ints(op.shape)), op.operand_strides(), es, config)]
        except PassFailedException:
            pass
    return name, [-(-math.prod(t.ints(op.shape)) // (REPEAT_BYTES // es))]


def _weighted(ops, times: int) -> list[tuple[Operation, int]]:
    """`ops` and the ops of the loops among them, each with how often it
    runs per execution of `ops` (a loop's trip count when its bounds are
    constants, else once)."""
    out: list[tuple[Operation, int]] = []
    for op in ops:
        if isinstance(op, scf.ForOp):
            bounds = [b.owner.value.value.data if isinstance(b.owner, arith.ConstantOp) else None
                      for b in (op.lb, op.ub, op.step)]
            trips = 1 if None in bounds else max(0, -(-(bounds[1] - bounds[0]) // bounds[2]))
            out += _weighted(op.body.block.ops, times * trips)
        else:
            out.append((op, times))
    return out


def predicted_cycles(work: TileWork, tiles: int, config: TargetConfig, cores: int | None = None) -> int:
    """The busiest core's cycles for `tiles` tiles of `work` over `cores`
    cores (default: as many as there are tiles, at most the target's)."""
    cores = min(tiles, config.vector_cores) if cores is None else cores
    per_core = -(-tiles // cores)
    latency = config.latency_cycles["dma_gm"]
    load = config.dma_cycles("gm_ub", work.bytes_in, cores) + (work.dmas_in - 1) * latency if work.bytes_in else 0
    store = config.dma_cycles("ub_gm", work.bytes_out, cores) + (work.dmas_out - 1) * latency if work.bytes_out else 0
    # the scalar unit issues ahead of the pipes (an instruction starts once issued and its pipe is free):
    # issuing is one more pipe beside the others
    issue = work.instructions * config.latency_cycles["issue"]
    if per_core == 1:
        return max(load + work.cube_cycles + work.vector_cycles + store, issue)
    # double-buffered: the pipes overlap across tiles, the busiest sets the pace; before the first
    # tile reaches it and after the last leaves it, the other stages of one tile run alone
    stages = (load, work.cube_cycles, work.vector_cycles, store)
    return per_core * max(*stages, issue) + sum(stages) - max(stages)


def hoisted_cycles(once: TileWork, tiles: int, config: TargetConfig) -> int:
    """Each core loads the hoisted operands once, before its tiles."""
    if not once.bytes_in:
        return 0
    cores = min(tiles, config.vector_cores)
    return config.dma_cycles("gm_ub", once.bytes_in, cores) + (once.dmas_in - 1) * config.latency_cycles["dma_gm"]
