"""tile-expand-structured: structured kernels -> loops of buffers, DMA and vector ops.

For a kernel with a `#tile.tiling` (tile-select-tiling) and optionally a
`#tile.distribution` (tile-distribute), the body becomes

    loads that do not depend on the tile position (hoisted, e.g. gamma)
    for tile in this core's tiles  {tile.pipeline when a load is double-buffered}:
        coordinates of the tile, GM offsets of every operand's box
        tile.copy GM -> UB of each load's box
        the maps, reductions and casts as tile.vec / tile.reduce / tile.cast
        tile.copy UB -> GM of each stored box

Every value of the kernel gets a UB buffer for one tile's box of it:
* a *row* value (last dim whole) is stored with its rows padded to a common
  pitch, a multiple of 32 bytes, so every row starts on a vector block;
* a *column* value (last dim 1 while the iteration's is wider: a reduction's
  result, a [.., 1] operand) is stored compactly, one element per row; a row
  op reading it first replicates each element over one 32-byte block (brcb),
  then reads that block with block stride 0.
Buffers are reused once their value is dead (in-place for elementwise ops).
The footprint of a tiling is what this expansion allocates (`dry_run`):
tile-select-tiling measures candidates with it, so a chosen tiling fits by
construction.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import Float16Type, Float32Type, IntegerAttr, ModuleOp, TensorType, f32, i64
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from gedialects.npu.isa import BLOCK_BYTES, FRACTAL, MAX_STRIDE
from gedialects.tile import ops as t
from gedialects.tile import structured as st
from gedialects.tile.builder import Index, TileBuilder


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


def _round_up(n: int, unit: int) -> int:
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


BRCB_VALUES = 8
"""Values one brcb repeat broadcasts (one per block of a 256-byte repeat)."""


def _buffer_elements(kind: str, rows: int, pitch: int, element: Attribute) -> int:
    if kind == "column":  # brcb reads whole repeats of it
        return _round_up(rows, max(per_block(element), BRCB_VALUES))
    if kind == "replicated":  # brcb writes whole repeats
        return _round_up(rows, BRCB_VALUES) * pitch
    return rows * pitch


@dataclass
class _Pool:
    """UB buffers of one kernel, reused by (kind, elements, element type)."""

    builder: TileBuilder
    free: dict[tuple, list[SSAValue]] = field(default_factory=dict)
    allocated: int = 0  # bytes

    def take(self, kind: str, rows: int, pitch: int, element: Attribute, buffers: int = 1) -> SSAValue:
        n = _buffer_elements(kind, rows, pitch, element)
        key = (n, str(element))
        if buffers == 1 and self.free.get(key):
            return self.free[key].pop()
        self.allocated += _round_up(n * elem_bytes(element), BLOCK_BYTES) * buffers
        return self.builder.alloc("ub", element, n, buffers)

    def release(self, buf: Buffer, double: bool) -> None:
        if double:
            return  # ping-pong copies belong to their load
        n = _buffer_elements(buf.kind, buf.rows, buf.pitch, buf.element)
        self.free.setdefault((n, str(buf.element)), []).append(buf.ref)


# ----------------------------------------------------------------- vector ops of map bodies

BINARY = {
    arith.AddfOp: "add", arith.SubfOp: "sub", arith.MulfOp: "mul", arith.DivfOp: "div",
    arith.MaximumfOp: "max", arith.MinimumfOp: "min", arith.MaxnumfOp: "max", arith.MinnumfOp: "min",
}
UNARY = {mathd.ExpOp: "exp", mathd.LogOp: "ln", mathd.SqrtOp: "sqrt", mathd.RsqrtOp: "rsqrt", mathd.AbsFOp: "abs"}
SCALAR_FORM = {"add": "adds", "mul": "muls", "max": "maxs", "min": "mins"}
"""Binary ops with a constant operand, as one instruction with an immediate."""
COMPARE = {"olt": "cmp_lt", "ult": "cmp_lt", "ole": "cmp_le", "ule": "cmp_le", "ogt": "cmp_gt", "ugt": "cmp_gt",
           "oge": "cmp_ge", "uge": "cmp_ge", "oeq": "cmp_eq", "ueq": "cmp_eq", "one": "cmp_ne", "une": "cmp_ne"}
CMPF_PREDICATES = ("false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord", "ueq", "ugt", "uge", "ult", "ule",
                   "une", "uno", "true")


def body_op_supported(op: Operation) -> str | None:
    """None when the vector unit runs this map-body op (after tile-legalize-math), else why not."""
    if isinstance(op, (*BINARY, *UNARY, arith.NegfOp, arith.ExtFOp, arith.TruncFOp, arith.ConstantOp,
                       arith.SelectOp, st.YieldOp)):
        return None
    if isinstance(op, arith.CmpfOp):
        pred = CMPF_PREDICATES[op.predicate.value.data]
        return None if pred in COMPARE else f"arith.cmpf {pred} has no vector compare"
    return f"{op.name} has no vector instruction"


SCALAR_FOLDS = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "max": np.maximum, "min": np.minimum,
    "exp": np.exp, "ln": np.log, "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x), "abs": np.abs,
    "cmp_lt": np.less, "cmp_le": np.less_equal, "cmp_gt": np.greater, "cmp_ge": np.greater_equal,
    "cmp_eq": np.equal, "cmp_ne": np.not_equal,
}


def fold_scalar(op: Operation, values: list[float]) -> float:
    """A map-body op whose operands are all constants, evaluated here in fp32
    (e.g. a where on a constant condition): its result is an immediate."""
    x = [np.float32(v) for v in values]
    with np.errstate(all="ignore"):
        if isinstance(op, arith.SelectOp):
            return float(x[1] if x[0] != 0 else x[2])
        if isinstance(op, arith.NegfOp):
            return float(-x[0])
        if isinstance(op, arith.ExtFOp | arith.TruncFOp):
            return float(x[0])
        if isinstance(op, arith.CmpfOp):
            kind = COMPARE[CMPF_PREDICATES[op.predicate.value.data]]
        else:
            kind = BINARY.get(type(op)) or UNARY.get(type(op))  # type: ignore[arg-type]
        if kind is None:
            raise TilingError(f"{op.name} has no vector instruction")
        return float(SCALAR_FOLDS[kind](*x))


# ----------------------------------------------------------------- the expansion


class KernelExpansion:
    """Expands one structured kernel with a given tile box."""

    def __init__(self, kernel: t.KernelOp, tile: Sequence[int], cores: int, per_core: int,
                 double_loads: bool | None = None, capacities: dict[str, int] | None = None):
        """`double_loads`: double-buffer every load that moves with the tile
        (None: as each tile.load's `buffers` says). `capacities`: bytes per
        on-chip space, to split a matmul's K so its L0 operands fit."""
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
        self.cube_operands = {v for op in self.ops if isinstance(op, st.BatchMatmulOp) for v in op.operands}
        self.cube_bytes: dict[str, int] = {}
        elements = [v.type.element_type for op in self.ops for v in (*op.operands, *op.results)
                    if isinstance(v.type, TensorType)]
        for op in self.ops:
            if isinstance(op, st.MapOp):
                elements += [v.type for b in op.body.blocks for o in b.ops for v in o.results
                             if isinstance(v.type, Float16Type | Float32Type)]
        self.pitch_unit = max(per_block(e) for e in elements)
        self.columns = self.shape[-1] > 1
        if any(isinstance(op, st.ReductionOp) for op in self.ops) and self.tile[-1] != self.shape[-1]:
            raise TilingError("a reduction needs the last dim whole in every tile")

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
        self.pool = _Pool(self.b)
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
        pipeline = bool(double) and self.per_core > 1
        with self.b.core_tiles(self.tiles, self.cores, self.per_core, pipeline) as tile_index:
            coords = self._coordinates(tile_index)
            for i, op in enumerate(self.ops):
                if op in invariant:
                    continue
                if isinstance(op, st.LoadOp):
                    if op.result not in self.cube_operands:  # the cube reads its operands itself
                        self.load(op, coords)
                elif isinstance(op, st.BatchMatmulOp):
                    self.matmul(op, coords)
                elif isinstance(op, st.StoreOp):
                    self.store(op, coords)
                elif isinstance(op, st.MapOp):
                    self.map(op, i)
                elif isinstance(op, st.ReductionOp):
                    self.reduction(op, i)
                self._release_dead(op, i)
        return self.pool.allocated

    def _last_uses(self) -> dict[SSAValue, int]:
        last: dict[SSAValue, int] = {}
        for i, op in enumerate(self.ops):
            for v in op.operands:
                last[v] = i
        return last

    def _release_dead(self, op: Operation, i: int) -> None:
        for v in set(op.operands):
            if self.last_use.get(v) == i and v in self.values and self.varies(v):
                buf = self.values.pop(v)
                self.pool.release(buf, v in self.double)
                if buf.replicated is not None:
                    self.pool.release(buf.replicated, False)

    def _coordinates(self, tile_index: SSAValue) -> list[Index]:
        coords: list[Index] = []
        inner = 1
        for g in reversed(self.grid):
            coords.append(self.b.rem(self.b.div(tile_index, inner), g) if g > 1 else 0)
            inner *= g
        return coords[::-1]

    def gm_offset(self, v: SSAValue, coords: list[Index] | None, load: bool) -> Index:
        if coords is None:
            return 0
        s = self.aligned(st.shape_of(v))
        strides = self.gm_strides(v, load)
        offset: Index = 0
        for k in range(len(s)):
            if s[k] != 1 and self.grid[k] > 1:
                offset = self.b.add(offset, self.b.mul(coords[k], self.tile[k] * strides[k]))
        return offset

    def gm_strides(self, v: SSAValue, load: bool) -> list[int]:
        """GM element strides of v's dims, aligned to the iteration's rank:
        row-major where v is stored, a transposing load's permuted strides
        where it is read."""
        if load and isinstance(v.owner, st.LoadOp):
            own = list(v.owner.gm_strides())
        else:
            own, step = [], 1
            for d in reversed(st.shape_of(v)):
                own.append(step)
                step *= d
            own = own[::-1]
        return [0] * (len(self.shape) - len(own)) + own

    def new_buffer(self, box: tuple[int, ...], element: Attribute, buffers: int = 1) -> Buffer:
        if self.is_column(box):
            kind, pitch = "column", 1
        else:
            kind, pitch = "row", _round_up(box[-1], self.pitch_unit)
        ref = self.pool.take(kind, math.prod(box[:-1]), pitch, element, buffers)
        return Buffer(ref, box, element, kind, pitch)

    # -- GM <-> UB ---------------------------------------------------------------
    def load(self, op: st.LoadOp, coords) -> None:
        v = op.result
        box, element = self.box_of(v), v.type.element_type  # type: ignore[attr-defined]
        buf = self.new_buffer(box, element, 2 if v in self.double else 1)
        src = self.b.at(self.b.gm(op.tensor.data, element), self.gm_offset(v, coords, load=True))
        self._dma(buf, src, v, load=True)
        self.values[v] = buf

    def store(self, op: st.StoreOp, coords) -> None:
        v = op.value
        buf = self.values[v]
        dst = self.b.at(self.b.gm(op.tensor.data, buf.element), self.gm_offset(v, coords, load=False))
        self._dma(buf, dst, v, load=False)

    def _dma(self, buf: Buffer, gm: SSAValue, v: SSAValue, load: bool) -> None:
        es = elem_bytes(buf.element)
        gstrides = self.gm_strides(v, load)
        if buf.kind == "column":
            # one element per row: the rows must be one contiguous GM run
            if not self._contiguous_rows(v, buf.box):
                raise TilingError(f"a column tile {list(buf.box)} is not contiguous in GM")
            n = buf.rows
            if (n * es) % BLOCK_BYTES:
                raise TilingError(f"a column tile of {n} elements is not a whole number of 32-byte blocks")
            shape, ub_strides, g_strides = [n], [1], [1]
        else:
            if (buf.box[-1] * es) % BLOCK_BYTES:
                raise TilingError(
                    f"rows of {buf.box[-1]} x {es} bytes are not a whole number of 32-byte blocks"
                )
            shape, ub_strides = list(buf.box), buf.strides()
            g_strides = [g if b > 1 else 0 for g, b in zip(gstrides, buf.box)]
            g_strides[-1] = 1
        if load:
            self.b.copy(buf.ref, gm, shape, ub_strides, g_strides)
        else:
            self.b.copy(gm, buf.ref, shape, g_strides, ub_strides)

    def _contiguous_rows(self, v: SSAValue, box: Sequence[int]) -> bool:
        if isinstance(v.owner, st.LoadOp) and v.owner.perm is not None:
            return False
        s = self.aligned(st.shape_of(v))[:-1]
        b = box[:-1]
        # contiguous iff, after the first partial dim (from the inside), all outer box dims are 1
        k = len(s) - 1
        while k >= 0 and b[k] == s[k]:
            k -= 1
        return k < 0 or all(x == 1 for x in b[:k])  # k < 0: the whole tensor (b[:-1] is not "none")

    # -- the cube ------------------------------------------------------------------
    def cube_alloc(self, space: str, element: Attribute, count: int) -> SSAValue:
        self.cube_bytes[space] = self.cube_bytes.get(space, 0) + _round_up(count * elem_bytes(element), 512)
        return self.b.alloc(space, element, count)

    def operand_offset(self, v: SSAValue, coords, tiled_dim: int, along: int) -> Index:
        """GM element offset of cube operand v for this tile: its batch
        (broadcast dims read batch 0) plus `along` elements' worth of its
        tiled dim (A: rows, b^T: rows, b: columns) at this tile's index along
        the iteration's dim `tiled_dim`. Strides are the load's (a
        transposing load reads rows with gaps)."""
        shape = st.shape_of(v)
        strides = v.owner.gm_strides()  # type: ignore[union-attr]
        n = len(self.shape)
        offset: Index = 0
        for k in range(len(shape) - 2):
            kk = k + (n - len(shape))
            if shape[k] != 1 and self.grid[kk] > 1:
                offset = self.b.add(offset, self.b.mul(coords[kk], strides[k]))
        if self.grid[tiled_dim] > 1:
            offset = self.b.add(offset, self.b.mul(coords[tiled_dim], along))
        return offset

    def k_chunk(self, m: int, n: int, k: int, k0: int, es: int) -> int:
        """The longest run of K (a divisor, whole k0 blocks) whose A and B
        panels fit L0A and L0B."""
        cap_a, cap_b = self.capacities.get("l0a"), self.capacities.get("l0b")
        best = k0
        for kt in range(k0, k + 1, k0):
            if k % kt:
                continue
            if (cap_a is None or m * kt * es <= cap_a) and (cap_b is None or kt * n * es <= cap_b):
                best = kt
        return best

    def matmul(self, op: st.BatchMatmulOp, coords) -> None:
        """One output tile [mt, nt] on the cube: GM -> L1 (fractal order),
        L1 -> L0A / L0B, mmad over K (accumulating), L0C -> UB rows."""
        n = len(self.shape)
        if any(self.tile[k] != 1 for k in range(n - 2)):
            raise TilingError("a matmul tile covers one matrix of the batch")
        mt, nt = self.tile[-2], self.tile[-1]
        if mt % FRACTAL or nt % FRACTAL:
            raise TilingError(f"matmul tile {mt}x{nt} is not whole 16x16 fractals")
        m, _, k = op.contraction()
        a, b = op.a, op.b
        element = a.type.element_type  # type: ignore[attr-defined]
        es = elem_bytes(element)
        k0 = BLOCK_BYTES // es
        if k % k0:
            raise TilingError(f"contraction length {k} is not whole {k0}-element blocks")
        transpose_b = op.transpose_b is not None
        if not transpose_b and es != 2:
            raise TilingError("a row-major right operand needs fp16 (load_2d transposes 16x16 fp16 fractals)")
        kt = self.k_chunk(mt, nt, k, k0, es)
        m1, n1, k1 = mt // FRACTAL, nt // FRACTAL, kt // k0
        l1a, l1b = self.cube_alloc("l1", element, mt * kt), self.cube_alloc("l1", element, kt * nt)
        l0a, l0b = self.cube_alloc("l0a", element, mt * kt), self.cube_alloc("l0b", element, kt * nt)
        l0c = self.cube_alloc("l0c", f32, mt * nt)
        for space in ("l1", "l0a", "l0b", "l0c"):
            cap = self.capacities.get(space)
            if cap is not None and self.cube_bytes[space] > cap:
                raise TilingError(f"matmul tile {mt}x{nt} needs {self.cube_bytes[space]} bytes of {space}, the target has {cap}")
        a_gm = self.b.gm(a.owner.tensor.data, element)  # type: ignore[union-attr]
        b_gm = self.b.gm(b.owner.tensor.data, element)  # type: ignore[union-attr]
        lda = a.owner.gm_strides()[-2]  # type: ignore[union-attr]  # row strides in GM
        ldb = b.owner.gm_strides()[-2]  # type: ignore[union-attr]
        a_base = self.operand_offset(a, coords, n - 2, mt * lda)
        b_base = self.operand_offset(b, coords, n - 1, nt * ldb if transpose_b else nt)
        for kc in range(0, k, kt):
            # A rows -> ZZ fractals (m1, k1): 16 rows of k0 elements each
            self.b.copy(l1a, self.b.at(a_gm, a_base, kc), [m1, k1, FRACTAL, k0],
                        [k1 * FRACTAL * k0, FRACTAL * k0, k0, 1], [FRACTAL * lda, k0, lda, 1])
            if transpose_b:  # rows of b^T -> ZN fractals (k1, n1): 16 columns of k0 elements
                self.b.copy(l1b, self.b.at(b_gm, b_base, kc), [k1, n1, FRACTAL, k0],
                            [n1 * FRACTAL * k0, FRACTAL * k0, k0, 1], [k0, FRACTAL * ldb, ldb, 1])
            else:  # rows of b -> 16x16 fractals (k1, n1), transposed on the way to L0B
                self.b.copy(l1b, self.b.at(b_gm, b_base, kc * ldb), [k1, n1, FRACTAL, FRACTAL],
                            [n1 * FRACTAL * FRACTAL, FRACTAL * FRACTAL, FRACTAL, 1], [FRACTAL * ldb, FRACTAL, ldb, 1])
            self.b.emit(t.LoadFractalOp(l0a, l1a, m1 * k1))
            self.b.emit(t.LoadFractalOp(l0b, l1b, k1 * n1, transpose=not transpose_b))
            self.b.emit(t.MatmulOp(l0c, l0a, l0b, mt, nt, kt, accumulate=kc > 0))
        out = self.new_buffer(self.box_of(op.result), f32)
        # L0C holds NZ fractals (n1, m, 16): one burst of 16 accumulators per row
        self.b.copy(out.ref, l0c, [n1, mt, FRACTAL], [FRACTAL, out.pitch, 1], [mt * FRACTAL, FRACTAL, 1])
        self.values[op.result] = out

    # -- compute -------------------------------------------------------------------
    def reduction(self, op: st.ReductionOp, i: int) -> None:
        src = self.values[op.input]
        if src.kind != "row":
            raise TilingError("a reduction reads a row value")
        if src.rows > 1 and src.pitch > self._reduce_pitch_limit(src.element):
            src_ref = self._fold_long_rows(op.kind.data, src)
        elif self.last_use.get(op.input, -1) > i or op.input in self.double or not self.varies(op.input):
            copy = self.new_buffer(src.box, src.element)
            self.b.vec("adds", copy.ref, [src.ref], [src.count()], [[1], [1]], 0.0)
            src_ref = copy
        else:
            src_ref = src
        dst = self.new_buffer(self.box_of(op.result), op.result.type.element_type)  # type: ignore[attr-defined]
        self.b.emit(t.ReduceOp(op.kind.data, dst.ref, src_ref.ref, src.rows, src_ref.box[-1], src_ref.pitch))
        if src_ref is not src:
            self.pool.release(src_ref, False)
        self.values[op.result] = dst

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
        width = _round_up(-(-cols // -(-cols // limit)), self.pitch_unit)  # <= limit
        folded = self.new_buffer(src.box[:-1] + (width,), src.element)
        lead = list(src.box[:-1])
        self.b.vec("adds", folded.ref, [src.ref], lead + [width], [folded.strides(), src.strides()], 0.0)
        for start in range(width, cols, width):
            n = min(width, cols - start)
            self.b.vec("add" if kind == "sum" else "max", folded.ref, [folded.ref, self.b.at(src.ref, offset=start)],
                       lead + [n], [folded.strides(), folded.strides(), src.strides()])
        return folded

    def map(self, op: st.MapOp, i: int) -> None:
        body = op.body.block
        env: dict[SSAValue, Buffer | float] = {}
        for arg, x in zip(body.args, op.inputs):
            env[arg] = self.values[x]
        uses_left = {v: len(list(v.uses)) for o in body.ops for v in o.results}
        owned: set[Buffer] = set()  # temporaries of this body (freed when dead)
        result_box = self.box_of(op.result)

        def operand_done(v: SSAValue) -> None:
            if v in uses_left:
                uses_left[v] -= 1
                if uses_left[v] == 0 and isinstance(env.get(v), Buffer) and env[v] in owned:
                    buf = env[v]
                    self.pool.release(buf, False)  # type: ignore[arg-type]
                    if buf.replicated is not None:  # type: ignore[union-attr]
                        self.pool.release(buf.replicated, False)  # type: ignore[union-attr]

        for inner in body.ops:
            if isinstance(inner, st.YieldOp):
                out = env[inner.values[0]]
                if not isinstance(out, Buffer):
                    buf = self.new_buffer(result_box, op.result.type.element_type)  # type: ignore[attr-defined]
                    self._dup(buf, out)
                    out = buf
                elif out not in owned or out.box != result_box:
                    buf = self.new_buffer(result_box, out.element)
                    self.vector("adds", buf, [out], 0.0)
                    out = buf
                else:
                    owned.discard(out)
                self.values[op.result] = out
                break
            if isinstance(inner, arith.ConstantOp):
                env[inner.result] = float(inner.value.value.data)  # type: ignore[union-attr]
                continue
            why = body_op_supported(inner)
            if why is not None:
                raise TilingError(f"{why} (in a tile.map body)")
            operands = [env[v] for v in inner.operands]
            result = self.body_op(inner, operands)
            env[inner.results[0]] = result
            if isinstance(result, Buffer):
                owned.add(result)
            for v in inner.operands:
                operand_done(v)

    def body_op(self, op: Operation, operands: list) -> Buffer | float:
        if all(not isinstance(x, Buffer) for x in operands):
            return fold_scalar(op, operands)
        element = op.results[0].type
        if not isinstance(element, Float16Type | Float32Type):  # a comparison's i1: a 0/1 mask
            element = next(x.element for x in operands if isinstance(x, Buffer))
        bufs = [x for x in operands if isinstance(x, Buffer)]
        box = tuple(max(d) for d in zip(*(b.box for b in bufs)))
        if isinstance(op, arith.ExtFOp | arith.TruncFOp):
            src = bufs[0]
            dst = self.new_buffer(src.box, element)
            self.b.emit(t.CastOp(dst.ref, src.ref, min(dst.count(), src.count())))
            return dst
        dst = self.new_buffer(box, element)
        if type(op) in UNARY:
            self.vector(UNARY[type(op)], dst, bufs)
        elif isinstance(op, arith.NegfOp):
            self.vector("muls", dst, bufs, -1.0)
        elif type(op) in BINARY:
            kind = BINARY[type(op)]
            a, b = operands
            if isinstance(a, Buffer) and isinstance(b, Buffer):
                self.vector(kind, dst, [a, b])
            elif isinstance(b, float):
                if kind == "sub":
                    self.vector("adds", dst, [a], -b)
                elif kind == "div":
                    self.vector("muls", dst, [a], 1.0 / b)
                else:
                    self.vector(SCALAR_FORM[kind], dst, [a], b)
            else:  # constant first
                if kind == "sub":  # c - x
                    self.vector("muls", dst, [b], -1.0)
                    self.vector("adds", dst, [dst], a)
                elif kind == "div":  # c / x
                    self.vector("rec", dst, [b])
                    if a != 1.0:
                        self.vector("muls", dst, [dst], a)
                else:
                    self.vector(SCALAR_FORM[kind], dst, [b], a)
        elif isinstance(op, arith.CmpfOp):
            kind = COMPARE[CMPF_PREDICATES[op.predicate.value.data]]
            self.vector(kind, dst, [self._materialise(x, box, bufs[0].element) for x in operands])
        elif isinstance(op, arith.SelectOp):
            srcs = [self._materialise(x, box, element) for x in operands]
            self.vector("sel", dst, srcs)
        else:  # pragma: no cover - body_op_supported filtered the rest
            raise TilingError(f"{op.name} has no vector instruction")
        return dst

    def _materialise(self, x, box, element) -> Buffer:
        if isinstance(x, Buffer):
            return x
        buf = self.new_buffer(tuple(1 for _ in box), element)
        self._dup(buf, x)
        return buf

    def _dup(self, buf: Buffer, value: float) -> None:
        self.b.emit(t.DupOp(buf.ref, _buffer_elements(buf.kind, buf.rows, buf.pitch, buf.element), value))

    def replicated(self, buf: Buffer) -> Buffer:
        """A column with each element over one 32-byte block (brcb)."""
        if buf.replicated is None:
            epb = per_block(buf.element)
            ref = self.pool.take("replicated", buf.rows, epb, buf.element)
            self.b.vec("brcb", ref, [buf.ref], [buf.rows], [[epb], [1]])
            buf.replicated = Buffer(ref, buf.box, buf.element, "replicated", epb)
        return buf.replicated

    def vector(self, kind: str, dst: Buffer, srcs: list[Buffer], scalar: float | None = None) -> None:
        """dst = kind(srcs) over dst's box, broadcasting srcs along their unit dims."""
        if all(s.box == dst.box and s.kind == dst.kind for s in srcs):
            # the same box everywhere: one contiguous run (padded rows included)
            self.b.vec(kind, dst.ref, [s.ref for s in srcs], [dst.count()], [[1]] * (1 + len(srcs)), scalar)
            return
        n = len(dst.box)
        dims = n if dst.kind == "row" else n - 1  # a compact column: its leading dims only
        shape = list(dst.box[:dims]) or [1]

        def broadcast_strides(s: Buffer) -> list[int]:
            ss = s.strides()
            return [0 if s.box[k] == 1 and dst.box[k] > 1 else ss[k] for k in range(dims)] or [0]

        operands, strides = [], [dst.strides()[:dims] or [1]]
        for s in srcs:
            if s.kind == "row" and s.box[-1] == 1 and dst.box[-1] > 1:
                raise TilingError("a row operand of width 1 cannot broadcast along a row")
            if dst.kind == "row" and s.kind == "column":
                s = self.replicated(s)  # read each element's block with block stride 0
            elif dst.kind == "column" and broadcast_strides(s)[-1] == 0 and shape[-1] > 1:
                s = self.replicated(s)
            operands.append(s.ref)
            strides.append(broadcast_strides(s))
        self.b.vec(kind, dst.ref, operands, shape, strides, scalar)


def expand_kernel(kernel: t.KernelOp, tiling: st.TilingAttr, capacities: dict[str, int] | None = None) -> int:
    """Rewrite a tiled structured kernel in place; returns its UB bytes."""
    dist = kernel.attributes.get(st.DISTRIBUTION_ATTR)
    if isinstance(dist, st.DistributionAttr):
        cores, per_core = dist.cores.data, dist.per_core.data
    else:
        cores, per_core = 1, tiling.tiles
    expansion = KernelExpansion(kernel, tiling.tile_shape, cores, per_core, capacities=capacities)
    block = Block()
    used = expansion.run(block)
    old = kernel.body.block
    kernel.body.detach_block(old)
    kernel.body.add_block(block)
    old.erase(safe_erase=False)
    kernel.properties["block_dim"] = IntegerAttr(cores, i64)
    return used


def dry_run(kernel: t.KernelOp, tile: Sequence[int], double_loads: bool,
            capacities: dict[str, int] | None = None) -> tuple[int, Block]:
    """Expand `kernel` with tile box `tile` into a detached block (one core
    running every tile): (UB bytes, the block). Raises TilingError when it
    cannot be expanded so (or its cube buffers exceed `capacities`). The
    caller erases the block."""
    tiles = math.prod(d // k for d, k in zip(st.iteration_shape(kernel), tile))
    expansion = KernelExpansion(kernel, tile, 1, tiles, double_loads, capacities)
    scratch = Block()
    return expansion.run(scratch), scratch


@dataclass(frozen=True)
class TileExpandStructuredPass(ModulePass):
    """Expand every tiled structured kernel into loops of buffers, DMA, cube and vector ops."""

    name = "tile-expand-structured"
    target: str = "davinci-910"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from target.config import load_target

        capacities = dict(load_target(self.target).capacity_bytes)
        for kernel, tiling in list(st.tiled_kernels(op)):
            try:
                expand_kernel(kernel, tiling, capacities)
            except TilingError as e:
                raise PassFailedException(f"tile.kernel {kernel.sym_name.data}: {e}") from None
