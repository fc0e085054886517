"""The tiling of a transdata (`select_transdata_tiling`): how its pixels run
(rows of the map, or one run when the map has no side halo), the chunk of
pixels each product takes and the cores. Among the chunks whose constant
operand fits its L0A share, the cost model picks the fastest: per piece
the target's cycles of each copy (as gedialects/npu/dma.py plans it: a
DMA's latency each, the bytes at the path's rate, a GM path shared by the
cores), the fractal loads and the product, pieces spread evenly over the
cube cores; larger chunks are fewer pieces but fewer to share.

A space-to-depth's chunk of mc cells (up to a whole row of cells, as its
buffers allow) takes mc / 16 products per dx and 16 output channels
against s picking matrices [16, s*16] in L0A (loaded once per core); per
chunk its row loads (one DMA for whole rows), the on-chip fills of B, the
products and the stores, priced the same way; the row loads of the next
chunk overlap this chunk's products and stores (its rows in UB are free
once B is filled)."""

from __future__ import annotations

import math

from gedialects.npu.dma import plan_copy
from gedialects.npu.isa import BLOCK_BYTES
from gedialects.tile.pieces import channel_runs, chunk_runs, pieces, row_runs
from gedialects.tile.transdata import TransdataOp, TransdataTilingAttr
from gedialects.tile.transforms.expand_transdata import (
    SPACE_TO_DEPTH_CELLS,
    Box,
    from_map_boxes,
    rows_boxes,
    rows_ub_elements,
    space_to_depth_fill,
    space_to_depth_geometry,
    space_to_depth_loads,
    to_map_boxes,
)
from gedialects.tile.transforms.ub_buffers import UB_RESERVE_BYTES, TilingError, elem_bytes
from target.config import TargetConfig

MAX_IN_CHUNK = 128
"""Largest chunk of pixels NCHW -> NC1HWC0 puts through the cube at once."""
MAX_OUT_CHUNK = 256
"""Largest chunk of pixels NC1HWC0 -> ND puts through the cube at once."""


def select_transdata_tiling(op: TransdataOp, config: TargetConfig) -> TransdataTilingAttr:
    """The cheapest tiling of a tile.transdata (raises TilingError if none fits)."""
    if op.rows:
        return _rows_tiling(op, config)
    if op.cell > 1:
        return _space_to_depth_tiling(op, config)
    return _to_map_tiling(op, config) if op.to_map else _from_map_tiling(op, config)


def copy_cycles(config: TargetConfig, src: str, dst: str, box: Box, src_es: int, dst_es: int, cores: int = 1) -> int:
    """The target's cycles for one box copy: each of its DMAs pays the
    path's latency (gedialects/npu/dma.py plans them), the bytes move at
    the path's rate (a GM one shared by `cores`)."""
    shape, dst_strides, src_strides = box
    dmas = plan_copy(shape, dst_strides, src_strides, dst_es, src_es, dst, src).instructions
    path = f"{src}_{dst}"
    return config.dma_cycles(path, math.prod(shape) * src_es, cores) + (dmas - 1) * config.dma_cycles(path, 0, cores)


def _cores_for(tiles: int, config: TargetConfig) -> int:
    return max(1, min(tiles, config.cube_cores))


def _element_bytes(op: TransdataOp) -> tuple[int, int]:
    return elem_bytes(op.input.type.element), elem_bytes(op.output.type.element)  # type: ignore[attr-defined]


def _to_map_tiling(op: TransdataOp, config: TargetConfig) -> TransdataTilingAttr:
    es, out_es = _element_bytes(op)
    fp = "f16" if es == 2 else "f32"
    _, c, h, w = op.nchw_shape()
    blocks = channel_runs(c)

    def cycles(rows: int, width: int, kc: int) -> int:
        runs = row_runs(rows, width, kc)
        cores = _cores_for(pieces(runs, blocks), config)

        def piece(npx: int, cn: int) -> int:
            stage, scatter, store = to_map_boxes(op, npx, cn, kc)
            return (copy_cycles(config, "gm", "ub", stage, es, es, cores) + copy_cycles(config, "ub", "l1", scatter, es, es)
                    + config.dma_cycles("l1_l0b", 16 * kc * es) + config.mmad_cycles(fp, kc, 16, kc)
                    + config.dma_cycles("l0c_ub", 16 * kc * 4) + copy_cycles(config, "ub", "gm", store, out_es, out_es, cores))

        once = config.dma_cycles("gm_l1", kc * kc * es, cores) + config.dma_cycles("l1_l0a", kc * kc * es)
        return once + sum(-(-a.count * b.count // cores) * piece(a.size, b.size) for a in runs for b in blocks)

    # the map in rows of w pixels, or (no side halo: its pixel runs are
    # contiguous, as the source's) as one row; chunks of kc pixels, a kc x
    # kc identity in one L0A half
    layouts = [(h, w)] + ([(1, h * w)] if op.map_view.padded_w.data == w and h > 1 else [])
    fits = [kc for kc in range(16, MAX_IN_CHUNK + 1, 16) if kc * kc * es <= config.capacity_bytes["l0a"] // 2]
    candidates = [(cycles(rows, width, kc), -kc, rows, width) for rows, width in layouts for kc in fits if kc < width + 16]
    if not candidates:
        raise TilingError(f"no 16-pixel chunk's identity fits half of L0A ({config.capacity_bytes['l0a']} bytes)")
    best, kc, rows, width = min(candidates)
    cores = _cores_for(pieces(row_runs(rows, width, -kc), blocks), config)
    return TransdataTilingAttr(rows, width, -kc, cores, best)


def _from_map_tiling(op: TransdataOp, config: TargetConfig) -> TransdataTilingAttr:
    es, out_es = _element_bytes(op)
    fp = "f16" if es == 2 else "f32"
    _, C, H, W = op.map_view.dims
    P = H * W
    blocks = channel_runs(C)

    def cycles(kn: int) -> int:
        runs = chunk_runs(P, kn)
        cores = _cores_for(pieces(runs, blocks), config)

        def piece(n: int, rows: int) -> int:
            npad = -(-n // 16) * 16
            return (sum(copy_cycles(config, a, b, box, out_es if a == "ub" else es, out_es if b == "gm" else es, cores)
                        for a, b, box in from_map_boxes(op, n, rows))
                    + config.dma_cycles("l1_l0b", 16 * npad * es) + config.mmad_cycles(fp, 16, npad, 16)
                    + config.dma_cycles("l0c_ub", 16 * npad * 4))

        return sum(-(-a.count * b.count // cores) * piece(a.size, b.size) for a in runs for b in blocks)

    # chunks of kn pixels: larger ones are fewer pieces, smaller ones more in parallel
    best, kn = min((cycles(kn), -kn) for kn in range(16, MAX_OUT_CHUNK + 1, 16) if kn < P + 16)
    cores = _cores_for(pieces(chunk_runs(P, -kn), blocks), config)
    return TransdataTilingAttr(1, P, -kn, cores, best)


def _space_to_depth_tiling(op: TransdataOp, config: TargetConfig) -> TransdataTilingAttr:
    es, out_es = _element_bytes(op)
    fp = "f16" if es == 2 else "f32"
    k0, c0 = BLOCK_BYTES // es, BLOCK_BYTES // out_es
    s = op.cell
    _, c, h, w = op.nchw_shape()
    _, channels, rows, cols = op.map_view.dims
    blocks = -(-channels // 16)
    # the on-chip fills of B per chunk: (channels, B rows apart) of each (block, dx, dy) with channels in the block
    fills = []
    for block in range(blocks):
        for dx in range(s):
            for dy in range(s):
                ins = [i for i in range(c) if op.out_channel(dy, dx, i, c) // 16 == block]
                if ins:
                    fills.append((len(ins), op.out_channel(dy, dx, 1, c) - op.out_channel(dy, dx, 0, c)))
    stride = op.map_view.slice_stride.data

    def cycles(mc: int) -> int:
        products, pitch, kb = space_to_depth_geometry(op, mc)
        kp = s * SPACE_TO_DEPTH_CELLS
        runs = row_runs(rows, cols, mc)
        cores = _cores_for(rows * max(cols // mc, 1), config)

        def chunk(cells: int) -> int:
            pixels = -(-cells * s // k0) * k0
            load = sum(copy_cycles(config, "gm", "ub", box, es, es, cores) for box in space_to_depth_loads(op, cells, pitch))
            fill = sum(copy_cycles(config, "ub", "l1", space_to_depth_fill(op, n, step, pixels, pitch), es, es)
                       for n, step in fills)
            used = -(-cells // SPACE_TO_DEPTH_CELLS)
            products_cycles = s * blocks * (config.dma_cycles("l1_l0b", kb * 16 * es)
                                            + used * config.mmad_cycles(fp, SPACE_TO_DEPTH_CELLS, 16, kp))
            store = blocks * (config.dma_cycles("l0c_ub", used * SPACE_TO_DEPTH_CELLS * 16 * 4) + copy_cycles(
                config, "ub", "gm", ([16 // c0, cells, c0], [stride, c0, 1], [c0, 16, 1]), out_es, out_es, cores))
            # the chunk's rows in UB are free once B is filled from them:
            # the next chunk's loads overlap this one's products and stores
            return fill + max(load, products_cycles + store)

        picks = SPACE_TO_DEPTH_CELLS * kp * es
        once = s * (config.dma_cycles("gm_l1", picks, cores) + config.dma_cycles("l1_l0a", picks))
        return once + sum(-(-run.count // cores) * chunk(run.size) for run in runs)

    def fits(mc: int) -> bool:
        """The chunk's buffers: its rows and B's zeros, C and its cast in UB; the B operands in L1,
        the picking matrices in L1 and L0A; B in L0B, C in L0C."""
        products, pitch, kb = space_to_depth_geometry(op, mc)
        picks = s * SPACE_TO_DEPTH_CELLS * s * SPACE_TO_DEPTH_CELLS * es
        c_elems = products * SPACE_TO_DEPTH_CELLS * 16
        cap = config.capacity_bytes
        return (c * s * pitch * es + kb * 16 * es + c_elems * out_es <= cap["ub"] - UB_RESERVE_BYTES
                and s * blocks * kb * 16 * es + picks <= cap["l1"] and picks <= cap["l0a"]
                and kb * 16 * es <= cap["l0b"] and c_elems * 4 <= cap["l0c"])

    # chunks of whole products, up to a whole row of cells (its input rows then one DMA)
    candidates = sorted({*range(SPACE_TO_DEPTH_CELLS, cols + 1, SPACE_TO_DEPTH_CELLS), cols})
    chunks = [mc for mc in candidates if fits(mc)]
    if not chunks:
        raise TilingError(f"no chunk of {SPACE_TO_DEPTH_CELLS} cells fits the buffers (the B operands of {s} x {blocks} "
                          f"products: {s * blocks * space_to_depth_geometry(op, SPACE_TO_DEPTH_CELLS)[2] * 16 * es} "
                          f"bytes of L1)")
    best, mc = min((cycles(mc), -mc) for mc in chunks)
    return TransdataTilingAttr(rows, cols, -mc, _cores_for(rows * max(cols // -mc, 1), config), best)


def _rows_tiling(op: TransdataOp, config: TargetConfig) -> TransdataTilingAttr:
    """Chunks of pixels between a map and its rows: every chunk whose UB
    buffer fits twice, priced per core as its chunks' copies overlapping
    (the loop is pipelined: one chunk's load beside the previous chunk's
    store)."""
    es = _element_bytes(op)[0]
    _, _, H, W = op.map_view.dims
    # pixels in runs along the map's rows, or (no side halo) along the whole map
    rows, width = (1, H * W) if op.map_view.padded_w.data == W else (H, W)
    budget = (config.capacity_bytes["ub"] - UB_RESERVE_BYTES) // (2 * rows_ub_elements(op, 1) * es)
    if budget < 1:
        raise TilingError(f"one pixel's {op.map_view.dims[1]} channels twice need more than the "
                          f"{config.capacity_bytes['ub'] - UB_RESERVE_BYTES} bytes of UB a kernel may take")

    def cycles(chunk: int) -> int:
        runs = row_runs(rows, width, chunk)
        cores = max(1, min(sum(r.count for r in runs), config.cores_for(uses_cube=False)))
        total = 0
        for run in runs:
            (shape, map_strides, ub_strides), (lines, rows_strides, ub_lines) = rows_boxes(op, run.size)
            if op.to_map:
                load = copy_cycles(config, "gm", "ub", (lines, ub_lines, rows_strides), es, es, cores)
                store = copy_cycles(config, "ub", "gm", (shape, map_strides, ub_strides), es, es, cores)
            else:
                load = copy_cycles(config, "gm", "ub", (shape, ub_strides, map_strides), es, es, cores)
                store = copy_cycles(config, "ub", "gm", (lines, rows_strides, ub_lines), es, es, cores)
            per_core = -(-run.count // cores)
            total += (per_core - 1) * max(load, store) + load + store
        return total

    best, chunk = min((cycles(chunk), -chunk) for chunk in _chunk_candidates(width, min(width, budget)))
    cores = max(1, min(sum(r.count for r in row_runs(rows, width, -chunk)), config.cores_for(uses_cube=False)))
    return TransdataTilingAttr(rows, width, -chunk, cores, best)


def _chunk_candidates(width: int, largest: int) -> list[int]:
    """Chunks of a run of `width` pixels up to `largest`: whole 16-pixel
    blocks, every even split of the run, and the largest."""
    return sorted({largest, *range(16, largest + 1, 16), *(-(-width // k) for k in range(1, width + 1)
                                                             if -(-width // k) <= largest)})


__all__ = ["MAX_IN_CHUNK", "MAX_OUT_CHUNK", "copy_cycles", "select_transdata_tiling"]
