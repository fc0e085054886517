"""Bands of a CNN elementwise kernel (`select_elementwise_tiling`): a tile is
a band of rows of one C1 slice. Each band that divides the map's rows is
expanded on a scratch kernel (expand_elementwise.py), so its UB footprint
(its buffers placed as tile-allocate places them: loads and outputs
double-buffered, the body's temporaries) and its work
per tile (DMA bytes and instructions, vector instructions) are those of the
code it would get; among the bands that fit UB the cost model
(tile_cost.py: the target's formulas, tiles spread over the vector cores,
loads, vector work and stores overlapping across tiles) picks the fastest,
the larger band on a tie.

A tile's work does not depend on where the maps lie in GM, only on the
kernel's shape (rows, widths, which inputs are per-channel), its body and the
band: kernels alike in those (densenet121's batch norms at one map size)
share one measurement per band. The channel count moves only the
per-channel inputs' whole copies to UB (once per core, priced as hoisted
work): their bytes are scaled to each kernel's channels."""

from __future__ import annotations

import dataclasses

from xdsl.ir import Block

from gedialects.npu.isa import BLOCK_BYTES
from gedialects.tile import ops as t
from gedialects.tile.elementwise import ElementwiseOp, ElementwiseTilingAttr
from gedialects.tile.transforms.allocate import place_buffers
from gedialects.tile.transforms.expand_elementwise import build_elementwise, input_runs
from gedialects.tile.transforms.tile_cost import TileWork, hoisted_cycles, hoisted_work, predicted_cycles, tile_work
from gedialects.tile.transforms.ub_buffers import TilingError, elem_bytes
from target.config import TargetConfig

_MEASURED: dict[tuple, tuple[int, TileWork, TileWork, int]] = {}
"""(kernel signature, band rows, target) -> (UB bytes, work per tile, work
once per core, C1) of the first kernel of the signature measured."""
_MEASURED_LIMIT = 4096


def select_elementwise_tiling(op: ElementwiseOp, config: TargetConfig) -> ElementwiseTilingAttr:
    """The cheapest band of a tile.elementwise that fits UB (raises TilingError if none)."""
    H, C1 = op.map_shape()[2], _slices(op)
    capacity = config.capacity_bytes["ub"]
    signature = kernel_signature(op)
    best: tuple[int, int, int] | None = None  # (cycles, -band_rows, cores)
    needed = 0
    for band_rows in (r for r in range(H, 0, -1) if H % r == 0):
        tiles = C1 * (H // band_rows)
        cores = max(1, min(tiles, config.cores_for(uses_cube=False)))
        ub_bytes, work, once = _measure(op, signature, band_rows, config)
        if ub_bytes > capacity:
            needed = ub_bytes
            continue
        key = (predicted_cycles(work, tiles, config) + hoisted_cycles(once, tiles, config), -band_rows, cores)
        if best is None or key < best:
            best = key
    if best is None:
        raise TilingError(f"a band of one row needs {needed} bytes of UB, the target has {capacity}")
    cycles, band_rows, cores = best
    return ElementwiseTilingAttr(-band_rows, cores, cycles)


def _measure(op: ElementwiseOp, signature: tuple, band_rows: int, config: TargetConfig) -> tuple[int, TileWork, TileWork]:
    """(UB bytes, work per tile, work once per core) of `op`'s expansion with
    bands of `band_rows`: measured on a scratch expansion of the first kernel
    of its signature, the per-channel inputs' whole copies (C1 blocks of 32
    bytes each, one DMA) then scaled to `op`'s channels."""
    key = (signature, band_rows, config)
    if key not in _MEASURED:
        if len(_MEASURED) >= _MEASURED_LIMIT:
            _MEASURED.clear()
        scratch = t.KernelOp("elementwise_tiling", 1)
        build_elementwise(scratch, op, band_rows, 1)
        body = scratch.body.block
        _MEASURED[key] = (place_buffers(scratch, config).get("ub", 0), tile_work(body, config),
                          hoisted_work(body, config), _slices(op))
        scratch.erase(safe_erase=False)
    ub_bytes, work, once, slices = _MEASURED[key]
    copies = sum(op.per_channel(k) for k in range(len(op.inputs)))
    extra = (_slices(op) - slices) * BLOCK_BYTES * copies
    return ub_bytes + extra, work, dataclasses.replace(once, bytes_in=once.bytes_in + extra)


def _slices(op: ElementwiseOp) -> int:
    """C1: the C0 blocks of the maps' channels."""
    es = elem_bytes(op.outputs[0].type.element)  # type: ignore[attr-defined]
    return -(-op.map_shape()[1] // (BLOCK_BYTES // es))


def kernel_signature(op: ElementwiseOp) -> tuple:
    """What a tile's code depends on but the channel count: the rows and
    widths of the maps, which inputs are per-channel and which load as one
    run (`input_runs`), the body (its ops,
    operands and constants) and the element type."""
    _, _, H, W = op.map_shape()
    runs = input_runs(op)  # maps of one tensor evenly apart load in one copy
    views = tuple((op.per_channel(k), v.padded_w.data, runs[k][:2]) for k, v in enumerate(op.views()))
    outs = tuple(v.padded_w.data for v in op.out_views())
    return (str(op.outputs[0].type), H, W, views, outs, body_signature(op.body.block))


def body_signature(block: Block) -> tuple:
    index = {a: -1 - k for k, a in enumerate(block.args)}
    ops = []
    for j, inner in enumerate(block.ops):
        ops.append((inner.name, tuple(index[v] for v in inner.operands),
                    tuple(sorted((k, str(v)) for k, v in inner.properties.items())),
                    tuple(str(r.type) for r in inner.results)))
        for r in inner.results:
            index[r] = j
    return tuple(ops)
