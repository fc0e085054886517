"""tile-expand-structured: structured kernels -> loops of buffers, DMA and vector ops
(and conv, pool and CNN gemm kernels, by expand_conv.py, expand_pool.py and expand_gemm.py).

For a kernel with a `#tile.tiling` (tile-select-tiling) and optionally a
`#tile.distribution` (tile-distribute), the body becomes

    loads that do not depend on the tile position (hoisted, e.g. gamma)
    for tile in this core's tiles  {tile.pipeline when a load is double-buffered,
                                    and then the stored map / product results too}:
        coordinates of the tile, GM offsets of every operand's box
        tile.copy GM -> UB of each load's box
        the maps, reductions and casts as tile.vec / tile.reduce / tile.cast
        tile.copy UB -> GM of each stored box

A matmul kernel whose tiling keeps the weights stationary
(`stationary = "weights"`: tile-distribute gives each core every row tile of
one column block) loads that column block of its FRACTAL_NZ right operand
into L1 once, then runs its tiles one after another, unrolled: each tile's
store comes after the next tile's product (the stores share MTE3 with the
left operand's UB -> L1 scatter, so a store waiting for its epilogue would
hold the next tile's operands back), and the left operand's UB staging
buffers stay reserved and alternate, so the next tile's loads never wait
for this tile's epilogue.

Every value of the kernel gets a UB buffer for one tile's box of it (row,
column or replicated: ub_buffers.py); map bodies become vector ops as
map_body.py defines. Buffers are reused once their value is dead, and an
elementwise result goes in place into an operand that dies with it.
The footprint of a tiling is what this expansion allocates (`dry_run`):
tile-select-tiling measures candidates with it, so a chosen tiling fits by
construction.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import Float16Type, Float32Type, IntegerAttr, ModuleOp, TensorType, f32, i64
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from gedialects.npu.isa import BLOCK_BYTES, FRACTAL, MAX_STRIDE
from gedialects.tile import ops as t
from gedialects.tile import structured as st
from gedialects.tile.builder import Index, TileBuilder
from gedialects.tile.conv import ConvOp
from gedialects.tile.elementwise import ElementwiseOp
from gedialects.tile.gemm import GemmOp
from gedialects.tile.map_kernels import map_kernels, tiling_of
from gedialects.tile.pool import PoolOp
from gedialects.tile.transdata import TransdataOp
from gedialects.tile.transforms.expand_attention import expand_attention
from gedialects.tile.transforms.expand_conv import expand_conv
from gedialects.tile.transforms.expand_elementwise import expand_elementwise
from gedialects.tile.transforms.expand_gemm import expand_gemm
from gedialects.tile.transforms.expand_pool import expand_pool
from gedialects.tile.transforms.expand_transdata import expand_transdata
from gedialects.tile.transforms.map_body import MapBodyEmitter
from gedialects.tile.transforms.share_alike import ALIKE_ATTR
from gedialects.tile.transforms.ub_buffers import (
    STAGE_UB_SHARE,
    Buffer,
    BufferPool,
    TilingError,
    elem_bytes,
    per_block,
    round_up,
)

__all__ = ["KernelExpansion", "TileExpandStructuredPass", "TilingError", "dry_run", "elem_bytes", "expand_kernel"]


# ----------------------------------------------------------------- the expansion


STAGE_MIN_DMAS = 3
"""A GM box that would need at least this many DMAs to land in L1 as
fractals (one per row or per column block) is staged through UB."""
K_PANELS = 8
"""At most this many L1 panels of K per matmul tile when they are
double-buffered: more panels overlap more of the loads with the mmads, each
panel's copies pay the GM latency again (`python benchmarks/roofline.py
bert_base_layer` with this set to 2, 4, 8, 16: 89,389, 85,700, 83,932,
84,326 cycles)."""
STATIONARY_K_PANELS = 2
"""At most this many L1 panels of K per tile with the weights stationary:
there the next tile's copies overlap this tile's products already (the
panels take the two buffers in turn across tiles), so more panels only add
GM latencies on MTE2, which bounds these kernels (the BERT-base layer's
query/key/value and intermediate products: 62,684 cycles for the layer with
up to K_PANELS, 60,961 with 2). One panel is allowed when K is one: with 1
as the cap the first tile's whole copy waits before its products, and the
cost model under-predicts the smaller tiles that then win (intermediate
dense [16, 96]: 13,704 predicted, 15,444 simulated)."""


@contextmanager
def _single() -> Iterator[int]:
    """A loop of one iteration, not built: its index is 0."""
    yield 0



class KernelExpansion:
    """Expands one structured kernel with a given tile box."""

    def __init__(self, kernel: t.KernelOp, tile: Sequence[int], cores: int, per_core: int,
                 double_loads: bool | None = None, capacities: dict[str, int] | None = None,
                 stationary: str = ""):
        """`double_loads`: double-buffer every load that moves with the tile
        (None: as each tile.load's `buffers` says). `capacities`: bytes per
        on-chip space, to split a matmul's K so its L0 operands fit.
        `stationary`: the tiling's (st.WEIGHTS_STATIONARY or none)."""
        self.kernel = kernel
        self.double_loads = double_loads
        self.capacities = capacities or {}
        self.shape = st.iteration_shape(kernel)
        self.tile = tuple(tile)
        if len(self.tile) != len(self.shape):
            raise TilingError(f"tile {list(self.tile)} has not the rank of the iteration space {list(self.shape)}")
        for k, (d, tk) in enumerate(zip(self.shape, self.tile)):
            if tk < 1 or d % tk:
                raise TilingError(f"tile size {tk} does not divide dim {k} ({d})")
        self.grid = tuple(d // tk for d, tk in zip(self.shape, self.tile))
        self.tiles = math.prod(self.grid)
        self.cores = cores
        self.per_core = per_core
        ops = list(kernel.body.block.ops)
        self.ops = [op for op in ops if isinstance(op, st.STRUCTURED_OPS)]
        self.cube_operands = {v for op in self.ops if isinstance(op, st.CUBE_OPS) for v in op.operands}
        self.cube_bytes: dict[str, int] = {}
        elements = [v.type.element_type for op in self.ops for v in (*op.operands, *op.results)
                    if isinstance(v.type, TensorType)]
        for op in self.ops:
            if isinstance(op, st.MapOp):
                elements += [v.type for b in op.body.blocks for o in b.ops for v in o.results
                             if isinstance(v.type, Float16Type | Float32Type)]
        self.pitch_unit = max(per_block(e) for e in elements)
        if self.cube_operands:  # a product's rows leave L0C in whole 16-column fractals
            self.pitch_unit = max(self.pitch_unit, FRACTAL)
        self.columns = self.shape[-1] > 1
        if any(isinstance(op, st.ReductionOp) for op in self.ops) and self.tile[-1] != self.shape[-1]:
            raise TilingError("a reduction needs the last dim whole in every tile")
        self.weights_stationary = stationary == st.WEIGHTS_STATIONARY
        if self.weights_stationary:
            self._check_weights_stationary()
        self.cube_buffers: dict[Operation, tuple] = {}  # a product's L1 / L0 buffers, shared by its tiles
        self.resident: dict[Operation, SSAValue] = {}  # a product's right operand kept in L1
        self.staging: dict[tuple, list[Buffer]] = {}  # reserved UB staging buffers (weights stationary)
        self.staged = 0  # staged chunks so far: the reserved buffers alternate
        self.cube_steps = (0, 0)  # L1 panels and L0 chunks of the unrolled tiles so far (weights stationary)
        self.tiles_start: Operation | None = None  # the last op before the first tile (weights stationary)
        self.stored_ping_pong: set[SSAValue] = set()  # map results stored from a pipelined loop (`run`)

    def _check_weights_stationary(self) -> None:
        """A weights-stationary expansion: one product of a constant
        FRACTAL_NZ b^T (one matrix, loaded for it alone), tiles of one
        matrix, each core's tiles one column block, and every stored value
        stored last (its buffer lives until the deferred store)."""
        products = [op for op in self.ops if isinstance(op, st.BatchMatmulOp)]
        if len(products) != 1 or any(isinstance(op, st.AttentionOp | st.GatherOp) for op in self.ops):
            raise TilingError("a weights-stationary tiling needs a kernel of one product")
        b = products[0].b
        load = b.owner
        if (not isinstance(load, st.LoadOp) or not load.fractal_nz() or products[0].transpose_b is None
                or len(st.shape_of(b)) != 2 or len(list(b.uses)) != 1):
            raise TilingError("a weights-stationary tiling needs FRACTAL_NZ weights")
        if any(g != 1 for g in self.grid[:-2]) or self.per_core != self.grid[-2]:
            raise TilingError("a weights-stationary tiling gives each core the row tiles of one column block")
        last_use = self._last_uses()
        for i, op in enumerate(self.ops):
            if isinstance(op, st.StoreOp) and last_use[op.value] != i:
                raise TilingError("a weights-stationary tiling stores values nothing reads after")

    # -- boxes -------------------------------------------------------------
    def aligned(self, shape: Sequence[int]) -> tuple[int, ...]:
        return (1,) * (len(self.shape) - len(shape)) + tuple(shape)

    def box_of(self, v: SSAValue) -> tuple[int, ...]:
        s = self.aligned(st.shape_of(v))
        return tuple(tk if d != 1 else 1 for d, tk in zip(s, self.tile))

    def is_column(self, box: Sequence[int]) -> bool:
        return self.columns and box[-1] == 1

    def varies(self, v: SSAValue) -> bool:
        """v's box moves with the tile (else it is loop-invariant)."""
        s = self.aligned(st.shape_of(v))
        return any(d != 1 and g > 1 for d, g in zip(s, self.grid))

    # -- run -----------------------------------------------------------------
    def run(self, block: Block) -> int:
        """Fill `block` with the expansion; returns the UB bytes allocated."""
        self.b = TileBuilder(block)
        self.pool = BufferPool(lambda element, n, buffers: self.b.alloc("ub", element, n, buffers))
        self.body = MapBodyEmitter(self.b, self.pool, self.layout)
        self.values: dict[SSAValue, Buffer] = {}
        self.last_use = self._last_uses()
        double = {
            op.result for op in self.ops if isinstance(op, st.LoadOp) and op.result not in self.cube_operands and (
                op.buffer_count() == 2 if self.double_loads is None else self.double_loads and self.varies(op.result)
            )
        }
        self.double = double
        invariant = [op for op in self.ops if isinstance(op, st.LoadOp) and not self.varies(op.result)
                     and op.result not in self.cube_operands]
        for op in invariant:
            self.load(op, None)
        if self.weights_stationary:
            self._weights_stationary_tiles(invariant)
            return self.pool.allocated
        pipeline = bool(double) and self.per_core > 1
        # a pipelined loop's stored map and product results alternate too: the
        # next tile's must not wait for this tile's store (MTE3) to read its buffer
        self.stored_ping_pong = {op.value for op in self.ops if isinstance(op, st.StoreOp)} if pipeline else set()
        with self.b.core_tiles(self.tiles, self.cores, self.per_core, pipeline) as tile_index:
            self._tile(self._coordinates(tile_index), invariant)
        return self.pool.allocated

    def _tile(self, coords: list[Index], invariant: list, deferred: list | None = None) -> None:
        """One tile's ops at `coords`. `deferred` (weights stationary): its
        stores are kept there and emitted after the next product."""
        for i, op in enumerate(self.ops):
            if op in invariant:
                continue
            if isinstance(op, st.LoadOp):
                if op.result not in self.cube_operands:  # the cube reads its operands itself
                    self.load(op, coords)
            elif isinstance(op, st.GatherOp):
                self.gather(op, coords)
            elif isinstance(op, st.BatchMatmulOp):
                self.matmul(op, coords)
                if deferred is not None:
                    self._store_deferred(deferred)
            elif isinstance(op, st.AttentionOp):
                self.values[op.result] = expand_attention(self, op, coords)
            elif isinstance(op, st.StoreOp) and deferred is not None:
                deferred.append((op, coords, self.values.pop(op.value)))
                continue  # its buffer is released once stored
            elif isinstance(op, st.StoreOp):
                self.store(op, coords)
            elif isinstance(op, st.MapOp):
                self.map(op, i)
            elif isinstance(op, st.ReductionOp):
                self.reduction(op, i)
            self._release_dead(op, i)

    def _weights_stationary_tiles(self, invariant: list) -> None:
        """This core's tiles, unrolled, after its column block of the weights
        went to L1; each tile's stores after the next tile's product."""
        first: Index = 0 if self.cores == 1 else self.b.mul(self.b.block_idx(), self.per_core)
        product = next(op for op in self.ops if isinstance(op, st.BatchMatmulOp))
        self.resident[product] = self.resident_right_operand(product, self._coordinates(first))
        self.tiles_start = self.b.builder.insertion_point.block.last_op
        deferred: list[tuple[st.StoreOp, list[Index], Buffer]] = []
        for j in range(self.per_core):
            self._tile(self._coordinates(self.b.add(first, j) if j else first), invariant, deferred)
        self._store_deferred(deferred)

    def _store_deferred(self, deferred: list) -> None:
        for op, coords, buf in deferred:
            self.store(op, coords, buf)
            self.pool.release(buf)
        deferred.clear()

    def resident_right_operand(self, op: st.BatchMatmulOp, coords) -> SSAValue:
        """This core's column block of a FRACTAL_NZ b^T, all of K, in L1 in
        the layout matmul's per-panel copies give it (k blocks of nt * k0):
        one copy."""
        element = op.b.type.element_type  # type: ignore[attr-defined]
        k0 = BLOCK_BYTES // elem_bytes(element)
        np_ = round_up(self.tile[-1], FRACTAL)
        kp = round_up(op.contraction()[2], k0)
        l1b = self.cube_alloc("l1", element, kp * np_)
        b_gm = self.b.gm(op.b.owner.tensor.data, element)  # type: ignore[union-attr]
        b_rows = round_up(st.shape_of(op.b)[-2], FRACTAL)
        base = self.packed_offset(op.b, coords, len(self.shape) - 1, self.tile[-1] * k0)
        self.b.copy(l1b, self.b.at(b_gm, base), [kp // k0, np_ * k0], [np_ * k0, 1], [b_rows * k0, 1])
        return l1b

    def _last_uses(self) -> dict[SSAValue, int]:
        last: dict[SSAValue, int] = {}
        for i, op in enumerate(self.ops):
            for v in op.operands:
                last[v] = i
        return last

    def _release_dead(self, op: Operation, i: int) -> None:
        for v in dict.fromkeys(op.operands):  # in operand order: a set's would vary run to run (ids)
            if self.last_use.get(v) == i and v in self.values and self.varies(v):
                buf = self.values.pop(v)
                self.pool.release(buf, v in self.double)

    def _coordinates(self, tile_index: Index) -> list[Index]:
        """The tile's index along each dim: row-major over the grid, or, with
        the weights stationary, the rows (dim -2) fastest."""
        order = list(range(len(self.grid)))
        if self.weights_stationary:
            order[-2], order[-1] = order[-1], order[-2]
        coords: list[Index] = [0] * len(self.grid)
        inner = 1
        for k in reversed(order):
            coords[k] = self.b.rem(self.b.div(tile_index, inner), self.grid[k]) if self.grid[k] > 1 else 0
            inner *= self.grid[k]
        return coords

    def gm_offset(self, end: st.LoadOp | st.StoreOp, coords: list[Index] | None) -> Index:
        """GM element offset of this tile's box of a load's or store's value,
        from the start of the value's own box (`gm_base`)."""
        v = end.result if isinstance(end, st.LoadOp) else end.value
        offset: Index = 0
        if coords is None:
            return offset
        s = self.aligned(st.shape_of(v))
        strides = self.gm_strides(end)
        for k in range(len(s)):
            if s[k] != 1 and self.grid[k] > 1:
                offset = self.b.add(offset, self.b.mul(coords[k], self.tile[k] * strides[k]))
        return offset

    def gm_strides(self, end: st.LoadOp | st.StoreOp) -> list[int]:
        """GM element strides of the dims of a load's or store's value,
        aligned to the iteration's rank: row-major, a transposing load's
        permuted strides, or those of the tensor a box lies in."""
        own = list(end.gm_strides())
        return [0] * (len(self.shape) - len(own)) + own

    def layout(self, box: tuple[int, ...]) -> tuple[str, int]:
        """(kind, pitch) of a buffer of this box."""
        return ("column", 1) if self.is_column(box) else ("row", round_up(box[-1], self.pitch_unit))

    def new_buffer(self, box: tuple[int, ...], element: Attribute, buffers: int = 1) -> Buffer:
        return self.body.new_buffer(box, element, buffers)

    # -- GM <-> UB ---------------------------------------------------------------
    def load(self, op: st.LoadOp, coords) -> None:
        v = op.result
        box, element = self.box_of(v), v.type.element_type  # type: ignore[attr-defined]
        buf = self.new_buffer(box, element, 2 if v in self.double else 1)
        src = self.b.at(self.b.gm(op.tensor.data, element), self.gm_offset(op, coords), op.gm_base())
        self._dma(buf, src, op)
        self.values[v] = buf

    def store(self, op: st.StoreOp, coords, buf: Buffer | None = None) -> None:
        """`buf`: the stored value's buffer when it is no longer in `values` (a deferred store)."""
        v = op.value
        buf = self.values[v] if buf is None else buf
        dst = self.b.at(self.b.gm(op.tensor.data, buf.element), self.gm_offset(op, coords), op.gm_base())
        self._dma(buf, dst, op)

    def _dma(self, buf: Buffer, gm: SSAValue, end: st.LoadOp | st.StoreOp) -> None:
        """GM <-> UB for one tile's box (a run that is not whole 32-byte
        blocks moves by a padded DMA: convert-tile-to-npu's business)."""
        gstrides = self.gm_strides(end)
        load = isinstance(end, st.LoadOp)
        if buf.kind == "column":
            # one element per row: the rows must be one contiguous GM run
            if not self._contiguous_rows(end, buf.box):
                raise TilingError(f"a column tile {list(buf.box)} is not contiguous in GM")
            shape, ub_strides, g_strides = [buf.rows], [1], [1]
        else:
            shape, ub_strides = list(buf.box), buf.strides()
            g_strides = [g if b > 1 else 0 for g, b in zip(gstrides, buf.box)]
            g_strides[-1] = 1
        if load:
            self.b.copy(buf.ref, gm, shape, ub_strides, g_strides)
        else:
            self.b.copy(gm, buf.ref, shape, g_strides, ub_strides)

    def _contiguous_rows(self, end: st.LoadOp | st.StoreOp, box: Sequence[int]) -> bool:
        if isinstance(end, st.LoadOp) and (end.perm is not None or end.source is not None):
            return False
        if isinstance(end, st.StoreOp) and end.dest is not None:
            return False
        v = end.result if isinstance(end, st.LoadOp) else end.value
        s = self.aligned(st.shape_of(v))[:-1]
        b = box[:-1]
        # contiguous iff, after the first partial dim (from the inside), all outer box dims are 1
        k = len(s) - 1
        while k >= 0 and b[k] == s[k]:
            k -= 1
        return k < 0 or all(x == 1 for x in b[:k])  # k < 0: the whole tensor (b[:-1] is not "none")

    def gather(self, op: st.GatherOp, coords) -> None:
        """This tile's rows of a gather: for each of its indices (read from
        the indices' UB column by the scalar unit) one DMA of the row's
        columns in the tile, GM -> the rows of a UB buffer."""
        idx = self.values[op.indices]
        index_step = 1 if idx.kind == "column" else idx.pitch  # rows of one element: one index per padded row
        a_dim, rows, b_dim = op.table_shape()
        box = self.box_of(op.result)
        at, nt, bt = box[-3:]
        element = op.result.type.element_type  # type: ignore[attr-defined]
        out = self.new_buffer(box, element)
        strides = out.strides()[-3:]
        origin: Index = 0
        if coords is not None:
            for k, extent in ((-3, at * rows * b_dim), (-1, bt)):
                if self.grid[k] > 1:
                    origin = self.b.add(origin, self.b.mul(coords[k], extent))
        table = self.b.gm(op.tensor.data, element)
        with self.b.loop(0, at) if at > 1 else _single() as a:
            with self.b.loop(0, nt) as r:
                row = self.b.emit(t.LoadIndexOp(self.b.at(idx.ref, self.b.mul(r, index_step)), rows)).results[0]
                start = self.b.add(self.b.add(origin, self.b.mul(a, rows * b_dim)), self.b.mul(row, b_dim))
                dst = self.b.at(out.ref, self.b.add(self.b.mul(a, strides[0]), self.b.mul(r, strides[1])))
                self.b.copy(dst, self.b.at(table, start), [bt], [1], [1])
        self.values[op.result] = out

    # -- the cube ------------------------------------------------------------------
    def cube_alloc(self, space: str, element: Attribute, count: int) -> SSAValue:
        self.cube_bytes[space] = self.cube_bytes.get(space, 0) + round_up(count * elem_bytes(element), 512)
        return self.b.alloc(space, element, count)

    def check_cube_capacity(self, what: str) -> None:
        """The cube buffers allocated so far fit the target's L1/L0 (else a TilingError naming `what`)."""
        for space in ("l1", "l0a", "l0b", "l0c"):
            cap = self.capacities.get(space)
            if cap is not None and self.cube_bytes.get(space, 0) > cap:
                raise TilingError(f"{what} needs {self.cube_bytes[space]} bytes of {space}, the target has {cap}")

    def operand_offset(self, v: SSAValue, coords, tiled_dim: int, along: int) -> Index:
        """GM element offset of cube operand v for this tile: its batch
        (broadcast dims read batch 0) plus `along` elements' worth of its
        tiled dim (A: rows, b^T: rows, b: columns) at this tile's index along
        the iteration's dim `tiled_dim`. Strides are the load's (a
        transposing load reads rows with gaps)."""
        strides = v.owner.gm_strides()  # type: ignore[union-attr]
        return self._tile_offset(st.shape_of(v), strides, v.owner.gm_base(), coords, tiled_dim, along)  # type: ignore[union-attr]

    def packed_offset(self, v: SSAValue, coords, tiled_dim: int, along: int) -> Index:
        """GM element offset of a FRACTAL_NZ cube operand for this tile: its
        matrix of the batch plus `along` elements per tile along the
        iteration's dim `tiled_dim` (a row tile starts `rows * c0` in)."""
        shape = st.shape_of(v)
        element = v.type.element_type  # type: ignore[attr-defined]
        c0 = BLOCK_BYTES // elem_bytes(element)
        matrix = -(-shape[-1] // c0) * round_up(shape[-2], FRACTAL) * c0
        strides = [s_ * matrix for s_ in st.row_major_strides(shape[:-2])]
        return self._tile_offset(shape, strides, 0, coords, tiled_dim, along)

    def _tile_offset(self, shape: Sequence[int], batch_strides: Sequence[int], base: int, coords, tiled_dim: int,
                     along: int) -> Index:
        """base + the batch dims of `shape` (aligned to the iteration's rank,
        broadcast ones read matrix 0) at this tile's coordinates, + `along`
        per tile along `tiled_dim`."""
        n = len(self.shape)
        offset: Index = base
        for k in range(len(shape) - 2):
            kk = k + (n - len(shape))
            if shape[k] != 1 and self.grid[kk] > 1:
                offset = self.b.add(offset, self.b.mul(coords[kk], batch_strides[k]))
        if self.grid[tiled_dim] > 1:
            offset = self.b.add(offset, self.b.mul(coords[tiled_dim], along))
        return offset

    def l1_panel(self, m: int, n: int, k: int, kt: int, es: int) -> tuple[int, int]:
        """(K per L1 panel, panel buffers): the shortest panel (a multiple of
        the L0 chunk kt dividing k) that keeps at most K_PANELS panels
        (STATIONARY_K_PANELS with the weights stationary), two of them
        fitting what L1 has left so the next panel's copies overlap this
        one's products; failing that, the longest single panel that fits.
        Every panel's copies pay the GM latency again, so the count is capped."""
        cap = self.capacities.get("l1")
        free = None if cap is None else cap - self.cube_bytes.get("l1", 0)

        def fits(kl: int, buffers: int) -> bool:
            return free is None or buffers * (m + n) * kl * es <= free

        runs = [kl for kl in range(kt, k + 1, kt) if k % kl == 0]
        # with the weights stationary one panel also overlaps: the tile before's products
        least, most = (1, STATIONARY_K_PANELS) if self.weights_stationary else (2, K_PANELS)
        for kl in runs:
            if least <= k // kl <= most and fits(kl, 2):
                return kl, 2
        return max((kl for kl in runs if fits(kl, 1)), default=kt), 1

    def k_chunk(self, m: int, n: int, k: int, k0: int, es: int) -> tuple[int, int]:
        """(K per L0 chunk, chunk buffers): the longest run of K (a divisor,
        whole k0 blocks) whose A and B chunks fit L0A and L0B twice, so the
        next chunk's loads overlap this chunk's mmad; once if none fits twice
        or one chunk is the whole K (nothing to overlap)."""
        cap_a, cap_b = self.capacities.get("l0a"), self.capacities.get("l0b")
        for buffers in (2, 1):
            best = 0
            for kt in range(k0, k + 1, k0):
                if k % kt:
                    continue
                if (cap_a is None or buffers * m * kt * es <= cap_a) and (cap_b is None or buffers * kt * n * es <= cap_b):
                    best = kt
            if best and (buffers == 1 or best < k):
                return best, buffers
        return k0, 1

    def matmul(self, op: st.BatchMatmulOp, coords) -> None:
        """One output tile [mt, nt] on the cube: GM -> L1 (fractal order),
        L1 -> L0A / L0B, mmad over K (accumulating), L0C -> UB rows. A tile
        that is not whole fractals (a whole dim of 65 rows) is padded to them
        on chip: the padding rows of A (columns of B) are never loaded and
        their results never leave L0C. A contraction that is not whole
        k0-element blocks is padded with zeros in L1, on both sides: a padded
        burst zero-fills its last block (rows of A and of b^T), and a row-major
        b's missing rows are zeroed from UB (0 x garbage could be NaN)."""
        n = len(self.shape)
        if any(self.tile[k] != 1 for k in range(n - 2)):
            raise TilingError("a matmul tile covers one matrix of the batch")
        mt, nt = self.tile[-2], self.tile[-1]
        for size, dim in ((mt, self.shape[-2]), (nt, self.shape[-1])):
            if size % FRACTAL and dim % FRACTAL == 0:
                raise TilingError(f"matmul tile {mt}x{nt} splits whole 16x16 fractals")
        mp, np_ = round_up(mt, FRACTAL), round_up(nt, FRACTAL)
        m, _, k = op.contraction()
        a, b = op.a, op.b
        element = a.type.element_type  # type: ignore[attr-defined]
        es = elem_bytes(element)
        k0 = BLOCK_BYTES // es
        transpose_b = op.transpose_b is not None
        if not transpose_b and es != 2:
            raise TilingError("a row-major right operand needs fp16 (load_2d transposes 16x16 fp16 fractals)")
        kp = round_up(k, k0)
        kt, chunk_buffers = self.k_chunk(mp, np_, kp, k0, es)
        kl, panel_buffers = self.l1_panel(mp, np_, kp, kt, es)
        m1, n1, k1 = mp // FRACTAL, np_ // FRACTAL, kt // k0
        resident = self.resident.get(op)
        if op not in self.cube_buffers:
            self.cube_buffers[op] = (
                [self.cube_alloc("l1", element, mp * kl) for _ in range(panel_buffers)],
                [] if resident is not None else [self.cube_alloc("l1", element, kl * np_) for _ in range(panel_buffers)],
                [self.cube_alloc("l0a", element, mp * kt) for _ in range(chunk_buffers)],
                [self.cube_alloc("l0b", element, kt * np_) for _ in range(chunk_buffers)],
                self.cube_alloc("l0c", f32, mp * np_))
            self.check_cube_capacity(f"matmul tile {mt}x{nt}")
        l1a, l1b, l0a, l0b, l0c = self.cube_buffers[op]
        a_gm = self.b.gm(a.owner.tensor.data, element)  # type: ignore[union-attr]
        lda = a.owner.gm_strides()[-2]  # type: ignore[union-attr]  # row strides in GM
        ldb = b.owner.gm_strides()[-2]  # type: ignore[union-attr]
        a_base = self.operand_offset(a, coords, n - 2, mt * lda)
        packed = b.owner.fractal_nz()  # type: ignore[union-attr]
        if packed and not transpose_b:
            raise TilingError(f"a {st.FRACTAL_NZ} right operand holds b^T")
        if resident is None:  # b's box for this tile, copied panel by panel below
            b_gm = self.b.gm(b.owner.tensor.data, element)  # type: ignore[union-attr]
            if packed:
                b_base = self.packed_offset(b, coords, n - 1, nt * k0)
                b_rows = round_up(st.shape_of(b)[-2], FRACTAL)
            else:
                b_base = self.operand_offset(b, coords, n - 1, nt * ldb if transpose_b else nt)
        # with the weights stationary the tiles are unrolled: their panels and chunks take the buffers
        # in turn across tiles, so a tile's first copies overlap the products of the tile before
        first_panel, chunk = self.cube_steps if self.weights_stationary else (0, 0)
        for panel, ks in enumerate(range(0, kp, kl), first_panel):  # a panel of K in L1: one copy of each operand
            a1 = l1a[panel % panel_buffers]
            b1 = resident if resident is not None else l1b[panel % panel_buffers]
            kv = min(kl, k - ks)  # this panel's K elements in the tensors (the rest is padding)
            # A rows -> L1 in column blocks (NZ): each GM row's k0-element
            # blocks, and each column block's rows, one DMA burst apart
            self._box_to_fractals(a1, self.b.at(a_gm, a_base, ks), mt, kv, k0, lda, mp * k0, FRACTAL * k0)
            if resident is not None:
                pass  # in L1 already, all of K
            elif packed:  # column block j of the tile's rows is one contiguous run in GM
                self.b.copy(b1, self.b.at(b_gm, b_base, (ks // k0) * b_rows * k0), [kl // k0, np_ * k0],
                            [np_ * k0, 1], [b_rows * k0, 1])
            elif transpose_b:  # rows of b^T -> ZN fractals (k blocks, n1): 16 columns of k0 elements
                self._box_to_fractals(b1, self.b.at(b_gm, b_base, ks), nt, kv, k0, ldb, n1 * FRACTAL * k0,
                                      FRACTAL * k0)
            else:  # rows of b -> 16x16 fractals in column blocks, transposed on the way to L0B
                self.row_major_right_to_l1(b1, self.b.at(b_gm, b_base, ks * ldb), kv, nt, ldb, kl, element)
            for kc in range(ks, min(ks + kl, kp), kt):  # K chunks that fit L0A / L0B
                a0, b0 = l0a[chunk % chunk_buffers], l0b[chunk % chunk_buffers]
                chunk += 1
                offset = kc - ks  # a chunk's K blocks are contiguous in each column block
                self.load_left_operand(a0, self.b.at(a1, offset=offset * mp), m1, k1, k0)
                if transpose_b:  # a resident b^T holds all of K: the chunk's blocks from its start
                    self.b.emit(t.LoadFractalOp(b0, self.b.at(b1, offset=(kc if resident is not None else offset) * np_),
                                                k1 * n1))
                else:
                    self.load_right_operand_transposed(b0, b1, offset, kt, n1, kl)
                self.b.emit(t.MatmulOp(l0c, a0, b0, mp, np_, kt, accumulate=kc > 0))
        if self.weights_stationary:
            self.cube_steps = (panel + 1, chunk)
        out = self.new_buffer(self.box_of(op.result), f32, self._copies(op.result))
        # L0C holds NZ fractals (n1, mp, 16): one burst of 16 accumulators per row
        self.b.copy(out.ref, l0c, [n1, mt, FRACTAL], [FRACTAL, out.pitch, 1], [mp * FRACTAL, FRACTAL, 1])
        self.values[op.result] = out

    def load_left_operand(self, l0a: SSAValue, l1: SSAValue, m1: int, k1: int, k0: int) -> None:
        """L1 holding the left operand in column blocks (NZ: fractal (r, j)
        at j * m1 + r) -> L0A in ZZ order (fractal (r, j) at r * k1 + j):
        one load_fractal per row block, reading every m1-th fractal."""
        fractal = FRACTAL * k0
        for r in range(m1):
            self.b.emit(t.LoadFractalOp(self.b.at(l0a, offset=r * k1 * fractal), self.b.at(l1, offset=r * fractal), k1,
                                        src_stride=m1))

    def row_major_right_to_l1(self, l1: SSAValue, src: SSAValue, rows: int, cols: int, ld: int, panel: int,
                              element: Attribute, stage: bool = True) -> None:
        """`rows` x `cols` of a row-major fp16 right operand (K x N) -> L1
        as 16x16 fractals in column blocks: fractal (k block r, column block
        j) at j * panel * 16 + r * 256, so a column block's rows are one
        DMA's bursts; the rows from `rows` to the next 16 are zeros (0 x
        the garbage of unwritten L1 could be NaN). `stage`: as
        `_box_to_fractals`."""
        fractal = FRACTAL * FRACTAL
        self._box_to_fractals(l1, src, rows, cols, FRACTAL, ld, panel * FRACTAL, fractal, stage=stage)
        if rows % FRACTAL:
            self._zero_fractal_rows(l1, (rows // FRACTAL) * fractal, rows % FRACTAL, -(-cols // FRACTAL), element,
                                    panel * FRACTAL)

    def load_right_operand_transposed(self, l0b: SSAValue, l1: SSAValue, first_row: int, rows: int, n1: int,
                                      panel: int) -> None:
        """Rows first_row.. (`rows`, whole 16-row blocks) of a right operand
        in L1 as row_major_right_to_l1 lays it out -> L0B, each 16x16
        fractal transposed (load_2d), in the (k block, column block) order
        the cube reads: one load_fractal per k block, every panel/16-th
        fractal."""
        fractal = FRACTAL * FRACTAL
        for r in range(rows // FRACTAL):
            self.b.emit(t.LoadFractalOp(self.b.at(l0b, offset=r * n1 * fractal),
                                        self.b.at(l1, offset=first_row * FRACTAL + r * fractal), n1,
                                        src_stride=panel // FRACTAL, transpose=True))

    def _box_to_fractals(self, l1: SSAValue, src: SSAValue, rows: int, cols: int, c0: int, ld: int,
                         col_step: int, row_block_step: int, stage: bool = True) -> None:
        """A GM box of `rows` x `cols` (row stride `ld`) -> L1 fractals of 16
        rows x c0: fractal (row block r, column block j) at r * row_block_step
        + j * col_step, its rows c0 apart. A last partial row block copies only
        its rows; a last partial column block moves by padded bursts, which
        zero-fill the rest of each row's block in L1. Whole column blocks of
        a box that would take several GM DMAs are staged through UB
        (`_staged_fractals`) unless `stage` is False (a caller whose MTE3
        queue is on its critical path)."""
        whole, tail = divmod(cols, c0)
        direct = [(whole, 1, tail)]  # (first column block, blocks, width) copied straight from GM
        if stage and min(rows, whole) >= STAGE_MIN_DMAS and "ub" in self.capacities and t.space_of(src) == "gm":
            self._staged_fractals(l1, src, rows, whole * c0, c0, ld, col_step, row_block_step)
        else:
            direct.insert(0, (0, whole, c0))
        for first, blocks, width in direct:
            if blocks and width:
                self._fractal_rows(self.b.at(l1, offset=first * col_step), self.b.at(src, offset=first * c0),
                                   rows, blocks, width, c0, ld, col_step, row_block_step)

    def _staged_fractals(self, l1: SSAValue, src: SSAValue, rows: int, cols: int, c0: int, ld: int,
                         col_step: int, row_block_step: int) -> None:
        """`_box_to_fractals` of whole column blocks through UB: the box in
        chunks of whole 16-row blocks and column blocks, each one GM -> UB
        DMA of row-major rows (MTE2) and then UB -> L1 into fractals (MTE3,
        on-chip, a tenth of a GM DMA's fixed cost), two chunk buffers in
        turn so the next chunk's load overlaps this one's scatter. Straight
        from GM, the scatter costs one GM DMA per row or per column block
        (each burst is one row's 32-byte block)."""
        element = src.type.element  # type: ignore[attr-defined]
        es = elem_bytes(element)
        budget = self.capacities["ub"] // STAGE_UB_SHARE
        row_unit = min(rows, FRACTAL)
        chunk_cols = max(c0, min(cols, budget // (row_unit * es) // c0 * c0))
        chunk_cols = round_up(-(-cols // -(-cols // chunk_cols)), c0)  # balanced column chunks
        chunk_rows = rows if rows * chunk_cols * es <= budget else max(
            FRACTAL, budget // (chunk_cols * es) // FRACTAL * FRACTAL)
        chunks = [(r, c) for r in range(0, rows, chunk_rows) for c in range(0, cols, chunk_cols)]
        if self.weights_stationary:  # two reserved buffers, alternating over every staged chunk of the kernel
            key = (chunk_rows, chunk_cols, element)
            if key not in self.staging:
                self.staging[key] = [self.pool.new("row", (chunk_rows, chunk_cols), chunk_cols, element)
                                     for _ in range(2)]
            staging = self.staging[key]
        else:
            staging = [self.pool.new("row", (chunk_rows, chunk_cols), chunk_cols, element)
                       for _ in range(min(2, len(chunks)))]
        for i, (r, c) in enumerate(chunks):
            ub = staging[(self.staged + i) % len(staging)].ref
            nr, nc = min(chunk_rows, rows - r), min(chunk_cols, cols - c)
            self.b.copy(ub, self.b.at(src, offset=r * ld + c), [nr, nc], [chunk_cols, 1], [ld, 1])
            self._fractal_rows(self.b.at(l1, offset=(r // FRACTAL) * row_block_step + (c // c0) * col_step), ub,
                               nr, nc // c0, c0, c0, chunk_cols, col_step, row_block_step)
        self.staged += len(chunks)
        if not self.weights_stationary:
            for buf in staging:
                self.pool.release(buf)

    def _fractal_rows(self, l1: SSAValue, src: SSAValue, rows: int, blocks: int, width: int, c0: int, ld: int,
                      col_step: int, row_block_step: int) -> None:
        """`rows` GM rows of `blocks` column blocks, `width` elements each,
        into fractals (the copy walks the larger step outermost)."""
        whole, rest = divmod(rows, FRACTAL)
        if whole:
            dims = [(whole, row_block_step, FRACTAL * ld), (blocks, col_step, c0)]
            if col_step > row_block_step:
                dims.reverse()
            (n0, d0, s0), (n1, d1, s1) = dims
            self.b.copy(l1, src, [n0, n1, FRACTAL, width], [d0, d1, c0, 1], [s0, s1, ld, 1])
        if rest:
            self.b.copy(self.b.at(l1, offset=whole * row_block_step), self.b.at(src, offset=whole * FRACTAL * ld),
                        [blocks, rest, width], [col_step, c0, 1], [c0, ld, 1])

    def _zero_fractal_rows(self, l1: SSAValue, at: int, first: int, count: int, element: Attribute,
                           stride: int = FRACTAL * FRACTAL) -> None:
        """Rows `first`.. of `count` 16x16 fractals `stride` elements apart
        from L1 offset `at`: zeros, copied from UB."""
        run = (FRACTAL - first) * FRACTAL
        zeros = self.pool.new("row", (1, run), run, element)
        self.b.emit(t.DupOp(zeros.ref, run, 0.0))
        self.b.copy(self.b.at(l1, offset=at + first * FRACTAL), zeros.ref, [count, run], [stride, 1], [0, 1])
        self.pool.release(zeros)

    # -- compute -------------------------------------------------------------------
    def reduction(self, op: st.ReductionOp, i: int) -> None:
        src = self.values[op.input]
        keep = self.last_use.get(op.input, -1) > i or op.input in self.double or not self.varies(op.input)
        self.values[op.result] = self.row_reduce(op.kind.data, src, keep)

    def row_reduce(self, kind: str, src: Buffer, keep: bool) -> Buffer:
        """A column buffer of src's row sums or maxima; `keep`: src is read
        later (a reduce folds its source in place, so it folds a copy)."""
        if src.kind != "row":
            raise TilingError("a reduction reads a row value")
        if src.rows > 1 and src.pitch > self._reduce_pitch_limit(src.element):
            src_ref = self._fold_long_rows(kind, src)
        elif keep:
            src_ref = self.new_buffer(src.box, src.element)
            self.b.vec("adds", src_ref.ref, [src.ref], [src.count()], [[1], [1]], 0.0)
        else:
            src_ref = src
        dst = self.new_buffer(src.box[:-1] + (1,), src.element)
        self.b.emit(t.ReduceOp(kind, dst.ref, src_ref.ref, src.rows, src_ref.box[-1], src_ref.pitch))
        if src_ref is not src:
            self.pool.release(src_ref)
        return dst

    def _reduce_pitch_limit(self, element: Attribute) -> int:
        """The longest row pitch (elements, a multiple of the pitch unit) a
        tile.reduce of several rows takes: one repeat per row, rows at most
        MAX_STRIDE blocks apart (beyond it the npu lowering reduces row by row
        and writes each row's result at an unaligned UB address)."""
        limit = MAX_STRIDE * per_block(element)
        return limit - limit % self.pitch_unit

    def _fold_long_rows(self, kind: str, src: Buffer) -> Buffer:
        """Rows wider than the reduce pitch limit: add (or max) each row's
        chunks onto its first into a buffer of narrower rows; src is kept."""
        cols, limit = src.box[-1], self._reduce_pitch_limit(src.element)
        width = round_up(-(-cols // -(-cols // limit)), self.pitch_unit)  # <= limit
        folded = self.new_buffer(src.box[:-1] + (width,), src.element)
        lead = list(src.box[:-1])
        self.b.vec("adds", folded.ref, [src.ref], lead + [width], [folded.strides(), src.strides()], 0.0)
        for start in range(width, cols, width):
            n = min(width, cols - start)
            self.b.vec("add" if kind == "sum" else "max", folded.ref, [folded.ref, self.b.at(src.ref, offset=start)],
                       lead + [n], [folded.strides(), folded.strides(), src.strides()])
        return folded

    def map(self, op: st.MapOp, i: int) -> None:
        args = [self.values[x] for x in op.inputs]
        consumable = {self.values[x] for x in op.inputs if self._dies_here(x, i)}
        into = None
        if op.result in self.stored_ping_pong:  # written straight into its two copies
            into = self.new_buffer(self.box_of(op.result), op.result.type.element_type,  # type: ignore[attr-defined]
                                   self._copies(op.result))
        result = self.body.run(op.body.block, args, self.box_of(op.result),
                               op.result.type.element_type, consumable, into)  # type: ignore[attr-defined]
        for x in op.inputs:  # an input whose buffer now holds the result is no longer its owner
            if self.values.get(x) is result:
                del self.values[x]
        self.values[op.result] = result

    def _copies(self, v: SSAValue) -> int:
        """Buffers of a result: two (ping-pong, kept like a double-buffered
        load's) when a pipelined loop stores it, else one."""
        if v not in self.stored_ping_pong:
            return 1
        self.double.add(v)
        return 2

    def _dies_here(self, v: SSAValue, i: int) -> bool:
        """v's buffer is free to overwrite at op i: its last use, moving with
        the tile, not a ping-pong load."""
        return self.last_use.get(v) == i and self.varies(v) and v not in self.double and v in self.values


def expand_kernel(kernel: t.KernelOp, tiling: st.TilingAttr, capacities: dict[str, int] | None = None) -> int:
    """Rewrite a tiled structured kernel in place; returns its UB bytes."""
    dist = kernel.attributes.get(st.DISTRIBUTION_ATTR)
    if isinstance(dist, st.DistributionAttr):
        cores, per_core = dist.cores.data, dist.per_core.data
    else:
        cores, per_core = 1, tiling.tiles
    expansion = KernelExpansion(kernel, tiling.tile_shape, cores, per_core, capacities=capacities,
                                stationary=tiling.stationary.data)
    block = Block()
    used = expansion.run(block)
    old = kernel.body.block
    kernel.body.detach_block(old)
    kernel.body.add_block(block)
    old.erase(safe_erase=False)
    kernel.properties["block_dim"] = IntegerAttr(cores, i64)
    return used


def dry_run(kernel: t.KernelOp, tile: Sequence[int], double_loads: bool,
            capacities: dict[str, int] | None = None, stationary: str = "") -> tuple[int, Block, Operation | None]:
    """Expand `kernel` with tile box `tile` into a detached block (one core
    running every tile; with the weights stationary, one core's tiles: the
    row tiles of one column block): (UB bytes, the block, the last op before
    the first tile when the weights are stationary). Raises TilingError when
    it cannot be expanded so (or its cube buffers exceed `capacities`). The
    caller erases the block."""
    grid = [d // k for d, k in zip(st.iteration_shape(kernel), tile)]
    per_core = grid[-2] if stationary == st.WEIGHTS_STATIONARY else math.prod(grid)
    expansion = KernelExpansion(kernel, tile, 1, per_core, double_loads, capacities, stationary)
    scratch = Block()
    return expansion.run(scratch), scratch, expansion.tiles_start


MAP_KERNEL_EXPANSIONS = {ConvOp: expand_conv, GemmOp: expand_gemm, ElementwiseOp: expand_elementwise,
                         PoolOp: expand_pool, TransdataOp: expand_transdata}
"""The expansion of each map-kernel op (gedialects/tile/map_kernels.py) given its tiling."""


@dataclass(frozen=True)
class TileExpandStructuredPass(ModulePass):
    """Expand every tiled structured, conv, pool, gemm and elementwise kernel into loops of buffers, DMA, cube and vector ops."""

    name = "tile-expand-structured"
    target: str = "davinci-910"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from target.config import load_target

        capacities = dict(load_target(self.target).capacity_bytes)
        for kernel, map_op in list(map_kernels(op)):
            if ALIKE_ATTR not in kernel.attributes:  # it takes an earlier kernel's code (tile-share-alike-kernels)
                MAP_KERNEL_EXPANSIONS[type(map_op)](kernel, map_op, tiling_of(kernel, map_op))
        for kernel, tiling in list(st.tiled_kernels(op)):
            if ALIKE_ATTR in kernel.attributes:
                continue
            try:
                expand_kernel(kernel, tiling, capacities)
            except TilingError as e:
                raise PassFailedException(f"tile.kernel {kernel.sym_name.data}: {e}") from None
