"""convert-graph-to-tile: one tile.kernel per (fused) graph op.

The storage format of every value comes from assign-layouts (`ge.format`;
run here first on IR that has none) and is checked against what the
kernels build. Decisions made here (docs/LOWERING.md): storage details, GM
placement, force_fp16 range scaling (fp16_scaling.py), tile sizes (from
the target's buffer capacities and its cost formulas), loop structure,
which buffers are double-buffered, which unit does what.

Storage:
* NC1HWC0 maps (C0 = 32 bytes of channels: 8 fp32 / 16 fp16) carry a zero
  halo as wide as the largest padding any consumer needs, so every tile of
  a convolution or pooling window is uniform.
* conv weights are packed at compile time into FRACTAL_Z in the order the
  cube's L0B wants ([C1][kh*kw][N1][16][C0]); gemm weights into [K1][N1][16][k0].
* Reshape/flatten are views: NC1HWC0 with H=W=1 is byte-identical to ND; a
  FLAT_NC1HWC0 flatten of a larger map is read by gemm with its weight rows
  permuted at compile time.
* concat along channels is a view: producers write their slice of the
  result in place when every operand starts at a multiple of C0; otherwise
  two copy kernels (gather into a pixel-major GM scratch, scatter back as
  NC1HWC0 slices) shift the lanes in GM (`concat_copy`).
* graph.transdata becomes a cube kernel (identity x B) — counted in the
  `transdata` statistics.
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
from xdsl.builder import Builder, InsertPoint
from xdsl.context import Context
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import (
    AnyFloat,
    ArrayAttr,
    IndexType,
    IntegerAttr,
    ModuleOp,
    NameLoc,
    StringAttr,
    TensorType,
    f16,
    f32,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from gedialects.graph import ops as g
from gedialects.graph.interpreter import input_names, output_names
from gedialects.graph.shapes import fmt, is_static
from gedialects.graph.tensors import attr_array, contiguous, element_type, numpy_dtype, resource_attr, tensor_nbytes
from gedialects.location import describe_op
from gedialects.tile import ops as t
from lowering.assign_layouts import FORMAT_ATTR, assign_layouts, format_of, is_annotated
from lowering.fp16_scaling import calibrate, plan_scales
from lowering.legality import AI_CORE, AI_CPU, ENGINE_ATTR, REASON_ATTR, channel_permutation, engine_of, nonnegative_values

CUBE_CHANNELS = 16
"""Output channels the cube writes per fractal column (N0)."""

PRECISION_MODES = ("force_fp16", "must_keep_origin_dtype")
DEFAULT_PRECISION = "force_fp16"
"""ATC's default on inference parts: the cube reads fp16 and accumulates fp32."""
Index = int | SSAValue


# ----------------------------------------------------------------- builder


class TB:
    """Builds one tile.kernel."""

    def __init__(self, kernel: t.KernelOp, elem: Attribute):
        self.kernel = kernel
        self.elem = elem
        self.entry = kernel.body.block
        self.b = Builder(InsertPoint.at_end(self.entry))
        self._consts: dict[int, SSAValue] = {}

    def emit(self, op: Operation) -> Operation:
        self.b.insert(op)
        return op

    def const(self, v: int) -> SSAValue:
        if v not in self._consts:
            op = arith.ConstantOp(IntegerAttr(v, IndexType()))
            first = self.entry.first_op
            if first is None:
                self.entry.add_op(op)
            else:
                self.entry.insert_op_before(op, first)
            self._consts[v] = op.result
        return self._consts[v]

    def v(self, x: Index) -> SSAValue:
        return self.const(x) if isinstance(x, int) else x

    def _bin(self, cls, fold, a: Index, b: Index) -> Index:
        if isinstance(a, int) and isinstance(b, int):
            return fold(a, b)
        return self.emit(cls(self.v(a), self.v(b))).results[0]

    def add(self, a, b):
        if isinstance(b, int) and b == 0:
            return a
        if isinstance(a, int) and a == 0:
            return b
        return self._bin(arith.AddiOp, lambda x, y: x + y, a, b)

    def mul(self, a, b):
        if b == 1:
            return a
        return self._bin(arith.MuliOp, lambda x, y: x * y, a, b)

    def div(self, a, b):
        if b == 1:
            return a
        return self._bin(arith.FloorDivSIOp, lambda x, y: x // y, a, b)

    def rem(self, a, b):
        return self._bin(arith.RemSIOp, lambda x, y: x % y, a, b)

    def min(self, a, b):
        return self._bin(arith.MinSIOp, min, a, b)

    def block_idx(self) -> SSAValue:
        return self.emit(t.BlockIdxOp()).results[0]

    @contextmanager
    def loop(self, lb: Index, ub: Index, step: int = 1, pipeline: bool = False):
        body = Block(arg_types=[IndexType()])
        op = scf.ForOp(self.v(lb), self.v(ub), self.v(step), [], body)
        if pipeline:
            op.attributes["tile.pipeline"] = StringAttr("ping-pong")
        self.emit(op)
        outer = self.b
        self.b = Builder(InsertPoint.at_end(body))
        try:
            yield body.args[0]
        finally:
            body.add_op(scf.YieldOp())
            self.b = outer

    @contextmanager
    def tiles(self, count: int, block_dim: int, pipeline: bool = False):
        """Loop over this core's share of `count` tiles."""
        per = -(-count // block_dim)
        if block_dim == 1:
            lo, hi = 0, count
        else:
            lo = self.mul(self.block_idx(), per)
            hi = self.min(self.add(lo, per), count)
        with self.loop(lo, hi, 1, pipeline) as tile:
            yield tile

    def alloc(self, space: str, n: int, layout: str = "ND", buffers: int = 1, elem=None) -> SSAValue:
        return self.emit(t.AllocOp(space, elem or self.elem, [n], layout, buffers)).results[0]

    def gm(self, name: str, elem=None) -> SSAValue:
        return self.emit(t.GmOp(name, elem or self.elem)).results[0]

    def at(self, ref: SSAValue, off: int = 0, dyn: Index = 0) -> SSAValue:
        if isinstance(dyn, int):
            off, dyn = off + dyn, None
        if off == 0 and dyn is None:
            return ref
        return self.emit(t.AtOp(ref, off, dyn)).results[0]

    def copy(self, dst, src, shape, dst_strides, src_strides, cast=False):
        self.emit(t.CopyOp(dst, src, shape, dst_strides, src_strides, cast))

    def vec(self, op, dst, srcs, shape, strides, scalar=None):
        self.emit(t.VecOp(op, dst, srcs, shape, strides, scalar))


# ----------------------------------------------------------------- values


@dataclass
class Storage:
    name: str
    kind: str = "internal"
    layout: str = "NC1HWC0"
    halo: list[int] = field(default_factory=lambda: [0, 0, 0, 0])  # top bottom left right
    c1: int = 0  # slices (5HD)
    h: int = 0
    w: int = 0
    elems: int = 0  # ND
    shape: tuple = ()
    ttype: TensorType | None = None
    offset: int = -1
    overread: int = 0  # bytes past the stored tensor a kernel reads (whole fractals), reserved in GM

    @property
    def hp(self) -> int:
        return self.h + self.halo[0] + self.halo[1]

    @property
    def wp(self) -> int:
        return self.w + self.halo[2] + self.halo[3]


@dataclass
class TV:
    """Where a graph value lives: storage, element offset of its first slice,
    format, logical shape."""

    st: Storage
    c1_off: int
    layout: str  # NC1HWC0 | ND | FLAT_NC1HWC0
    shape: tuple

    def c1stride(self, c0: int) -> int:
        return self.st.hp * self.st.wp * c0

    def origin(self, c0: int) -> int:
        """Element offset of (c1=0, y=0, x=0, c0=0)."""
        st = self.st
        return self.c1_off * st.hp * st.wp * c0 + (st.halo[0] * st.wp + st.halo[2]) * c0


@dataclass
class Stats:
    kernels: int = 0
    transdata: int = 0
    ops: dict = field(default_factory=dict)




def _readers_through_views(v: SSAValue) -> list[Operation]:
    """The ops that read v's bytes: its users, looking through the views the
    AI core makes without a kernel (they alias v's storage)."""
    readers: list[Operation] = []
    for use in v.uses:
        user = use.operation
        if isinstance(user, g.VIEW_OPS) and engine_of(user) == AI_CORE:
            readers += _readers_through_views(user.results[0])
        else:
            readers.append(user)
    return readers


def check_precision_mode(precision: str) -> None:
    if precision not in PRECISION_MODES:
        raise PassFailedException(f"unknown precision mode '{precision}' (expected {', '.join(PRECISION_MODES)})")


class GraphToTile:
    def __init__(self, fn: func.FuncOp, precision: str, config, name: str = "main", calibration=None):
        check_precision_mode(precision)
        self.fn = fn
        self.config = config
        self.fp16 = precision == "force_fp16"
        self.es = 2 if self.fp16 else 4
        self.elem = f16 if self.fp16 else f32
        self.c0 = 32 // self.es
        self.prog = t.ProgramOp(name)
        self.tensors: list[t.TensorOp] = []
        self.storages: list[Storage] = []
        self.values: dict[SSAValue, TV] = {}
        self.consts: dict[str, np.ndarray] = {}
        self.stats = Stats()
        self.nonneg: set[SSAValue] = set()
        self.folded: set[Operation] = set()  # ops lowered as part of another (shuffle folded into a conv)
        self.scales: dict[SSAValue, float] = {}  # force_fp16: stored value = value / scale (fp16_scaling.py)
        self.calibration = calibration
        self._names: set[str] = set()

    # -- helpers ---------------------------------------------------------
    def fresh(self, base: str) -> str:
        base = "".join(c if c.isalnum() or c in "_." else "_" for c in base) or "t"
        name, i = base, 1
        while name in self._names:
            name, i = f"{base}_{i}", i + 1
        self._names.add(name)
        return name

    def kernel(self, op: Operation, kind: str, block_dim: int) -> TB:
        name = self.fresh(f"k{self.stats.kernels}_{kind}")
        k = t.KernelOp(name, max(1, block_dim))
        k.attributes["kind"] = StringAttr(kind)
        absorbed = op.attributes.get("absorbed") or op.properties.get("absorbed") if op is not None else None
        where = describe_op(op) if op is not None else kind
        k.attributes["source"] = StringAttr(where)
        if isinstance(absorbed, ArrayAttr):
            k.attributes["absorbed"] = absorbed
        if op is not None and op.results and self.sc(op.results[0]) != 1.0:
            k.attributes["scale_exp"] = IntegerAttr(int(math.log2(self.sc(op.results[0]))), i64)
        self.prog.body.block.add_op(k)
        self.stats.kernels += 1
        self.stats.ops[kind] = self.stats.ops.get(kind, 0) + 1
        return TB(k, self.elem)

    def constant(self, base: str, array: np.ndarray, layout: str, keep_dtype: bool = False) -> str:
        """A GM constant; floats in the precision mode's type (unless
        keep_dtype), others as they are."""
        name = self.fresh(base)
        array = np.asarray(array)
        dt = (np.float16 if self.fp16 else np.float32) if array.dtype.kind == "f" and not keep_dtype else array.dtype
        self.consts[name] = contiguous(array.astype(dt, copy=False))
        return name

    def sc(self, v: SSAValue) -> float:
        """The power of two v is stored divided by (1 outside force_fp16)."""
        return self.scales.get(v, 1.0)

    def cores(self, count: int) -> int:
        return max(1, min(count, self.config.cube_cores))

    def value_array(self, v: SSAValue) -> np.ndarray | None:
        op = v.owner
        if isinstance(op, g.ConstantOp):
            return np.asarray(attr_array(op.value))
        if isinstance(op, g.FillOp):
            return np.full(g.shape_of(op.output), op.value.value.data, dtype=np.float32)
        return None

    # -- planning: aliases, halos, storage ----------------------------------
    def plan(self) -> None:
        ops = list(self.fn.body.block.ops)
        # view/concat aliasing: value -> (root value, c1 offset)
        self.alias: dict[SSAValue, tuple[SSAValue, int]] = {}
        # concat operands that are not written in place: (operand, channel offset),
        # copied by a concat kernel (concat_copy) when the concat is reached
        self.concat_copies: dict[Operation, list[tuple[SSAValue, int]]] = {}
        for op in reversed(ops):
            if engine_of(op) == AI_CPU:
                continue
            if isinstance(op, g.ConcatOp) and op.int_("axis", 0) % 4 == 1 and len(g.shape_of(op.output)) == 4:
                off = 0
                root, base = self.alias.get(op.output, (op.output, 0))
                offs, in_place = [], True
                for i, x in enumerate(op.inputs):
                    if isinstance(x.owner, (g.ConstantOp, g.FillOp)):
                        raise PassFailedException(f"{describe_op(op)}: concat of a constant operand is not lowered")
                    # A cube producer stores whole 16-channel fractal columns:
                    # an operand that ends inside one would spill into the next
                    # operand's channels, so only the last may be ragged.
                    ragged = g.shape_of(x)[1] % CUBE_CHANNELS != 0 and i < len(op.inputs) - 1
                    in_place &= off % self.c0 == 0 and not ragged and not (
                        x in self.alias or x.owner is None or isinstance(x.owner, Block)
                        or not isinstance(x.owner, Operation) or isinstance(x.owner, g.VIEW_OPS)
                        or any(x is y for y, _ in offs)
                    )
                    offs.append((x, off))
                    off += g.shape_of(x)[1]
                if in_place:
                    for x, o in offs:
                        self.alias[x] = (root, base + o // self.c0)
                else:  # all operands in their own storage, copied by concat kernels
                    self.concat_copies[op] = offs
        for op in ops:
            if isinstance(op, g.VIEW_OPS) and engine_of(op) == AI_CORE:
                src = op.operands[0]
                self.alias[op.results[0]] = self.alias.get(src, (src, 0))
        # halos per root
        self.halos: dict[SSAValue, list[int]] = {}
        for op in ops:
            pads = None
            if isinstance(op, g.ConvOp | g.MaxPoolOp | g.AvgPoolOp) and engine_of(op) == AI_CORE:
                p = op.ints("pads", (0, 0, 0, 0))
                pads = [p[0], p[2], p[1], p[3]]
            if pads and any(pads):
                x = op.operands[0]
                root = self.alias.get(x, (x, 0))[0]
                h = self.halos.setdefault(root, [0, 0, 0, 0])
                for i in range(4):
                    h[i] = max(h[i], pads[i])
        self.nonneg = nonnegative_values(self.fn.body.block)
        self.outputs = {}
        ret = self.fn.body.block.last_op
        assert isinstance(ret, func.ReturnOp)
        for name, v in zip(output_names(self.fn), ret.operands):
            self.outputs.setdefault(self.alias.get(v, (v, 0))[0], name)

    def storage_for(self, v: SSAValue, layout: str, name: str) -> TV:
        """The TV of a value about to be produced (allocating its root's storage)."""
        if v in self.values:
            return self.values[v]
        root, c1off = self.alias.get(v, (v, 0))
        if root not in self.values:
            shape = g.shape_of(root)
            st = Storage(self.outputs.get(root) or self.fresh(name), shape=shape)
            if root in self.outputs:
                st.kind = "output"
            if layout == "NC1HWC0" and len(shape) == 4:
                n, c, h, w = shape
                if n != 1:
                    raise PassFailedException(f"{name}: batch {n}: only batch 1 is lowered")
                st.layout = "NC1HWC0"
                st.c1 = -(-c // 16) * 16 // self.c0  # room for whole 16-channel fractals
                st.h, st.w = h, w
                st.halo = self.halos.get(root, [0, 0, 0, 0])
                if st.kind == "output" and (h * w != 1 or any(st.halo) or c % self.c0 or self.fp16):
                    st.kind = "internal"  # finish_outputs adds an NC1HWC0 -> NCHW transdata
                    st.name = self.fresh(name)
            else:
                st.layout = "ND"
                st.elems = math.prod(shape)
                if st.kind == "output" and self.fp16:
                    st.kind = "internal"  # finish_outputs adds an fp16 -> fp32 cast kernel
                    st.name = self.fresh(name)
            self.storages.append(st)
            self.values[root] = TV(st, 0, layout if layout != "FLAT_NC1HWC0" else "NC1HWC0", shape)
        rtv = self.values[root]
        tv = TV(rtv.st, c1off, rtv.layout, g.shape_of(v))
        self.values[v] = tv
        return tv

    def view(self, op: Operation) -> None:
        x = self.values[op.operands[0]]
        out = op.results[0]
        shape = g.shape_of(out)
        if x.layout == "NC1HWC0":
            n, c, h, w = x.shape
            if len(shape) == 4 and shape[2:] == x.shape[2:] and shape[:2] == x.shape[:2]:
                layout = "NC1HWC0"
            elif h * w == 1 and not any(x.st.halo):
                layout = "ND"
            else:
                layout = "FLAT_NC1HWC0"
        elif x.layout == "FLAT_NC1HWC0":
            src = x.flat_src  # type: ignore[attr-defined]
            if tuple(shape) == tuple(src.shape):  # back to the map (channel shuffle)
                self.values[out] = src
                return
            layout, x = "FLAT_NC1HWC0", src
        else:
            layout = x.layout
        self.values[out] = TV(x.st, x.c1_off, layout, shape)
        if layout == "FLAT_NC1HWC0":
            self.values[out].flat_src = x  # type: ignore[attr-defined]

    # -- program -----------------------------------------------------------
    def run(self) -> t.ProgramOp:
        if not is_annotated(self.fn):
            assign_layouts(self.fn)
        self.plan()
        if self.fp16:
            self.scales = plan_scales(self.fn, calibrate(self.fn, self.calibration))
        for name, arg in zip(input_names(self.fn), self.fn.args):
            shape = g.shape_of(arg)
            st = Storage(name, kind="input", layout="ND", elems=math.prod(shape), shape=shape)
            st.ttype = arg.type
            self.storages.append(st)
            if len(shape) != 4 and self.fp16 and any(engine_of(u.operation) == AI_CORE and not isinstance(u.operation, func.ReturnOp) for u in arg.uses):
                raise PassFailedException(f"force_fp16: input '{name}' read by an AI-core op needs a cast kernel "
                                          "(not implemented; graph-partition places its readers on the AI CPU)")
            self.values[arg] = TV(st, 0, "NCHW" if len(shape) == 4 else "ND", shape)
        for op in self.fn.body.block.ops:
            self.lower(op)
            self.check_format(op)
        self.finish_outputs()
        self.place()
        return self.prog

    def lower(self, op: Operation) -> None:
        if isinstance(op, g.ConstantOp | g.FillOp | func.ReturnOp) or op in self.folded:
            return
        if engine_of(op) == AI_CPU:
            return self.aicpu(op)
        if isinstance(op, g.VIEW_OPS):
            return self.view(op)
        if isinstance(op, g.TransDataOp):
            return self.transdata(op)
        if isinstance(op, g.ConcatOp):
            for x in op.inputs:
                if x not in self.values:
                    raise PassFailedException(f"{describe_op(op)}: operand not lowered")
            self.storage_for(op.output, "NC1HWC0", "concat")
            if self.concat_copies.get(op):
                self.concat_copy(op, self.concat_copies[op])
            return
        fn = {
            g.ConvOp: self.conv,
            g.MaxPoolOp: self.pool,
            g.AvgPoolOp: self.pool,
            g.GlobalAvgPoolOp: self.global_pool,
            g.GemmOp: self.gemm,
            g.MatMulOp: self.gemm,
            g.SoftmaxOp: self.softmax,
            g.LrnOp: self.lrn,
            g.TransposeOp: self.transpose,
            g.FusionOp: self.elementwise,
            g.BatchNormOp: self.elementwise,
            g.ReluOp: self.elementwise,
            g.AddOp: self.elementwise,
            g.MulOp: self.elementwise,
            g.SubOp: self.elementwise,
            g.SumOp: self.elementwise,
        }.get(type(op))
        if fn is None:
            raise PassFailedException(f"{describe_op(op)}: no lowering to the tile dialect for {op.name}")
        fn(op)

    def check_format(self, op: Operation) -> None:
        """What the kernels built must agree with what assign-layouts chose."""
        want = format_of(op)
        if want is None or not op.results or op.results[0] not in self.values:
            return
        got = self.values[op.results[0]].layout
        if not g.same_format(got, want):
            raise PassFailedException(f"{describe_op(op)}: assign-layouts chose {want}, the lowering produced {got}")

    def finish_outputs(self) -> None:
        """Graph outputs are fp32 in their logical order. Written in place by
        their kernel (fp32), or cast from fp16 here. assign-layouts has put a
        transdata before every output not already in its logical order."""
        ret = self.fn.body.block.last_op
        for name, v in zip(output_names(self.fn), ret.operands):
            if v not in self.values and isinstance(v.owner, g.ConstantOp | g.FillOp):
                self.constant_out(name, v)
                continue
            tv = self.values[v]
            if tv.st.name == name and tv.st.kind == "output":
                # the slot has the output's shape: v may be a view (unsqueeze,
                # reshape, ...) of the result that owns the storage, whose
                # ttype (an AI-CPU result's) has the source's shape
                tv.st.ttype = v.type if tv.st.ttype is None else TensorType(tv.st.ttype.element_type, g.shape_of(v))
                continue
            # row-major (ND, or NCHW: a view of a graph input or of an AI-CPU result)
            flat = tv.layout in g.ROW_MAJOR or tv.layout == "NC1HWC0" and tv.shape[2] * tv.shape[3] == 1
            if flat and (tv.st.layout == "ND" or not any(tv.st.halo)):
                self.copy_out(name, v, tv)
                continue
            raise PassFailedException(
                f"output '{name}' is held in {tv.layout}, not its logical order (assign-layouts puts a transdata here)")

    def copy_out(self, name: str, v: SSAValue, x: TV) -> None:
        """A contiguous value -> graph output: GM -> UB, vconv from fp16,
        UB -> GM in chunks (16-element padding stays in the tensors' slack).
        From a source in the output's type, a plain copy: for a [1,C,1,1] map
        whose kernel writes whole 16-channel fractals, more than the output's
        C values. An empty output gets its (0-byte) slot and no kernel."""
        n = math.prod(x.shape)
        st = Storage(name, kind="output", layout="ND", elems=n, shape=x.shape)
        st.ttype = v.type
        self.storages.append(st)
        if n == 0:
            return  # an empty output: nothing to copy
        # cast from fp16 only when the source is stored in fp16 (force_fp16);
        # a source in the output's own type (a graph input, another graph
        # output, integers, bools, a constant) is copied byte for byte, as
        # 32-bit words
        src = self.stored_element(x.st, v)
        cast = src == f16 and v.type.element_type == f32
        if not cast and src != v.type.element_type:
            raise PassFailedException(f"output '{name}' is stored as {src}, not its type {v.type.element_type} "
                                      "(no conversion kernel)")
        words = n if cast else -(-tensor_nbytes(v.type) // 4)
        npad = -(-words // 16) * 16
        chunk = min(npad, 8192)
        k = self.kernel(None, "cast" if cast else "copy", 1)
        k.kernel.attributes["source"] = StringAttr(f"output '{name}'" + (" f16 -> f32" if cast else ""))
        u16 = k.alloc("ub", chunk, "ND", buffers=2) if cast else None
        u32 = k.alloc("ub", chunk, "ND", buffers=2, elem=f32)
        xg, og = k.gm(x.st.name, None if cast else f32), k.gm(name, f32)
        x0 = x.origin(self.c0) if x.st.layout == "NC1HWC0" else 0
        for c in range(0, npad, chunk):
            m = min(chunk, npad - c)
            if u16 is None:
                k.copy(u32, k.at(xg, x0 + c), [m], [1], [1])
            else:
                k.copy(u16, k.at(xg, x0 + c), [m], [1], [1])
                k.emit(t.CastOp(u32, u16, m))
                if self.sc(v) != 1.0:  # force_fp16 range scaling undone in fp32
                    k.vec("muls", u32, [u32], [m], [[1], [1]], self.sc(v))
            k.copy(k.at(og, c), u32, [m], [1], [1])

    def constant_out(self, name: str, v: SSAValue) -> None:
        """A graph output that is a constant (the graph folded at import):
        a GM constant in the output's type, copied out by a copy kernel."""
        op = v.owner
        shape = g.shape_of(v)
        if isinstance(op, g.FillOp):
            array = np.full(shape, op.value.value.data, dtype=numpy_dtype(v.type.element_type))
        else:
            array = np.asarray(attr_array(op.value))
        cname = self.constant(f"{name}_value", array, "ND", keep_dtype=True) if array.size else name
        st = Storage(cname, kind="constant", layout="ND", elems=array.size, shape=shape, ttype=v.type)
        self.copy_out(name, v, TV(st, 0, "ND", shape))

    def place(self) -> None:
        """GM offsets. When the function carries a memory plan
        (graph-plan-memory ran): the internal tensors share one arena at GM 0,
        planned by the planner's strategies on their stored sizes and kernel
        lifetimes (lowering/gm_plan.py), then constants, inputs, outputs.
        Without a plan: one bump allocator, no reuse."""
        from gedialects.graph.memory import attributes as mem
        from lowering import gm_plan

        off = 0
        arena: dict[str, int] = {}
        if mem.has_plan(self.fn):
            def stored(st: Storage) -> int:
                if st.layout == "NC1HWC0":
                    return st.c1 * st.hp * st.wp * self.c0 * self.es + st.overread
                if st.ttype is not None:
                    return tensor_nbytes(st.ttype) + st.overread
                return st.elems * self.es + st.overread

            def needs_zero(st: Storage) -> bool:  # zero halo, or padded channels a kernel may not write
                return st.layout == "NC1HWC0" and (any(st.halo) or len(st.shape) != 4 or st.shape[1] % 16 != 0)

            def geometry(st: Storage) -> tuple | None:  # halo only (padded channels: no turn-taking)
                if st.layout != "NC1HWC0" or len(st.shape) != 4 or st.shape[1] % 16:
                    return None
                return (st.c1, st.hp, st.wp, tuple(st.halo))

            reqs = [gm_plan.Request(st.name, stored(st), needs_zero(st), geometry(st))
                    for st in self.storages if st.kind == "internal"]
            align = int(mem.memory_summary(self.fn).get("alignment", 512))
            arena, summary = gm_plan.plan_arena(self.prog, reqs, align)
            summary["graph_arena_size"] = mem.arena_size(self.fn)
            mem.record_function(self.prog, summary)  # type: ignore[arg-type]
            off = int(summary["arena_size"])

        def take(nbytes: int) -> int:
            nonlocal off
            o = off
            off += -(-nbytes // 64) * 64 + 64
            return o

        block = self.prog.body.block
        first = block.first_op
        for name, arr in self.consts.items():
            o = take(arr.nbytes)
            attr = resource_attr(f"ge_{name}", arr)
            op = t.TensorOp(properties={
                "name": StringAttr(name), "kind": StringAttr("constant"), "offset": IntegerAttr(o, i64),
                "type": attr.type, "layout": StringAttr("ND"), "value": attr})
            block.insert_op_before(op, first) if first else block.add_op(op)
        for st in self.storages:
            # an NC1HWC0 graph output with H*W = 1 (finish_outputs) holds exactly
            # its NCHW bytes: the slot has the logical type; the channels padded
            # up to a whole fractal land in the tensor's slack
            logical = st.kind == "output" and st.ttype is not None
            if st.layout == "NC1HWC0" and not logical:
                shape = [1, st.c1, st.hp, st.wp, self.c0]
                ttype = TensorType(self.elem, shape)
            else:
                ttype = st.ttype or TensorType(self.elem, [st.elems])
            n = tensor_nbytes(ttype) + st.overread
            st.offset = arena[st.name] if st.name in arena else take(n)
            op = t.TensorOp(properties={
                "name": StringAttr(st.name), "kind": StringAttr(st.kind), "offset": IntegerAttr(st.offset, i64),
                "type": ttype, "layout": StringAttr("ND" if logical else st.layout if st.kind == "internal" or st.layout == "NC1HWC0" else "ND")})
            block.insert_op_before(op, first) if first else block.add_op(op)

    # ================================================================ kernels

    def aicpu(self, op: Operation) -> None:
        """An AI-CPU task (graph-partition placed op there): op itself, on
        logical types, reads its operands' GM tensors in their logical order
        (assign-layouts put transdata before it) and writes its results in
        theirs; constants it reads are cloned into the task."""
        body = Block()
        mapping: dict[SSAValue, SSAValue] = {}
        ins: list[tuple[str, TensorType, float]] = []
        for v in dict.fromkeys(op.operands):
            if isinstance(v.owner, g.FillOp):  # a splat costs nothing in the task
                const = v.owner.clone()
                const.attributes.pop(FORMAT_ATTR, None)
                body.add_op(const)
                mapping[v] = const.results[0]
                continue
            if isinstance(v.owner, g.ConstantOp):  # weights are read from GM, in their own type:
                value = self.value_array(v)   # the AI CPU computes in it (a mask's -3.4e38 stays finite)
                name = self.constant(f"{op.name.split('.')[-1]}_const", value, "ND", keep_dtype=True)
                stored = self.consts[name]
                ins.append((name, TensorType(element_type(stored.dtype), stored.shape), 1.0))
                mapping[v] = body.insert_arg(v.type, len(body.args))
                continue
            x = self.values.get(v)
            if x is None:
                raise PassFailedException(f"{describe_op(op)}: operand not lowered")
            if x.layout not in g.ROW_MAJOR:
                raise PassFailedException(f"{describe_op(op)}: an AI-CPU operand is held in {x.layout} "
                                          "(assign-layouts puts a transdata here)")
            # a view of an NC1HWC0 map with H*W = 1 and no halo is its C values
            # in a row (assign-layouts: ND, no transdata); a task reads whole
            # tensors, so a row that does not start its tensor (a slice of a
            # channel concat written in place) is copied out first
            if x.st.layout == "NC1HWC0" and x.origin(self.c0) != 0:
                x = self.row_copy(op, v, x)
            ins.append((x.st.name, TensorType(self.stored_element(x.st, v), g.shape_of(v)), self.sc(v)))
            mapping[v] = body.insert_arg(v.type, len(body.args))
        task = op.clone(value_mapper=mapping)
        for attr in (ENGINE_ATTR, REASON_ATTR, FORMAT_ATTR):
            task.attributes.pop(attr, None)
        body.add_op(task)
        body.add_op(t.AicpuReturnOp(list(task.results)))
        outs = []
        for r in op.results:
            shape = g.shape_of(r)
            if not is_static(shape):  # its GM slot needs a size at compile time
                raise PassFailedException(f"{describe_op(op)}: result has the data-dependent shape {fmt(shape)}; "
                                          "the npu program holds static shapes only")
            readers = _readers_through_views(r)
            # force_fp16: a graph output is written in fp32, but AI-core kernels
            # (other than transdata) read fp16: such a result is stored in fp16
            # and finish_outputs casts it to the output (copy_out)
            fp16_readers = self.fp16 and isinstance(r.type.element_type, AnyFloat) and any(
                engine_of(u) == AI_CORE and not isinstance(u, g.TransDataOp | func.ReturnOp) for u in readers)
            is_output = r in self.outputs and not fp16_readers
            st = Storage((self.outputs[r] if is_output else None) or self.fresh(f"{op.name.split('.')[-1]}_aicpu"),
                         layout="ND", elems=math.prod(shape), shape=shape)
            st.kind = "output" if is_output else "internal"
            # a graph output is written in its own type, unscaled
            scale = 1.0 if st.kind == "output" else self.sc(r)
            elem = r.type.element_type if st.kind == "output" else self.stored_element(None, r)
            if any(isinstance(u, g.TransDataOp) for u in readers):
                elem = r.type.element_type  # transdata_in reads fp32 maps, as of graph inputs
                if self.fp16 and any(engine_of(u) == AI_CORE and not isinstance(u, g.TransDataOp | func.ReturnOp)
                                     for u in readers):
                    raise PassFailedException(f"{describe_op(op)}: force_fp16: an AI-CPU result read both by a "
                                              "transdata and by another AI-core kernel is not lowered")
            st.ttype = TensorType(elem, shape)
            self.storages.append(st)
            self.values[r] = TV(st, 0, "NCHW" if len(shape) == 4 else "ND", shape)
            outs.append((st.name, st.ttype, scale))
        name = self.fresh(f"k{self.stats.kernels}_aicpu_{op.name.split('.')[-1]}")
        task_op = t.AicpuOp(name, ins, outs, Region(body))
        task_op.attributes["kind"] = StringAttr("aicpu")
        task_op.attributes["source"] = StringAttr(describe_op(op))
        task_op.attributes["reason"] = op.attributes.get(REASON_ATTR, StringAttr("placed on the AI CPU"))
        absorbed = op.attributes.get("absorbed") or op.properties.get("absorbed")
        if isinstance(absorbed, ArrayAttr):
            task_op.attributes["absorbed"] = absorbed
        elif isinstance(op.location, NameLoc):
            task_op.attributes["absorbed"] = ArrayAttr([op.location.desc])
        self.prog.body.block.add_op(task_op)
        self.stats.kernels += 1
        self.stats.ops["aicpu"] = self.stats.ops.get("aicpu", 0) + 1

    def row_copy(self, op: Operation, v: SSAValue, x: TV) -> TV:
        """The contiguous row x (a view inside an NC1HWC0 tensor) copied to a
        tensor of its own: GM -> UB -> GM in 32-byte blocks (the padding
        lands in the tensors' 64-byte slack)."""
        n = math.prod(x.shape)
        st = Storage(self.fresh("row"), layout="ND", elems=n, shape=x.shape)
        self.storages.append(st)
        epb = 32 // self.es
        npad = -(-n // epb) * epb
        chunk = min(npad, 8192)
        k = self.kernel(op, "copy", 1)
        k.kernel.attributes["source"] = StringAttr(f"{describe_op(op)}: operand row")
        u = k.alloc("ub", chunk, "ND", buffers=2)
        xg, og = k.gm(x.st.name), k.gm(st.name)
        for c in range(0, npad, chunk):
            m = min(chunk, npad - c)
            k.copy(u, k.at(xg, x.origin(self.c0) + c), [m], [1], [1])
            k.copy(k.at(og, c), u, [m], [1], [1])
        return TV(st, 0, "ND", x.shape)

    def stored_element(self, st: Storage | None, v: SSAValue) -> Attribute:
        """The element type v is stored in GM with: its own for integers and
        bools, the precision mode's for floats (graph inputs stay fp32)."""
        if st is not None and st.ttype is not None:
            return st.ttype.element_type
        elem = v.type.element_type  # type: ignore[attr-defined]
        return self.elem if isinstance(elem, AnyFloat) else elem

    def transdata(self, op: g.TransDataOp) -> None:
        src, dst = op.src_format.data, op.dst_format.data
        x = self.values[op.input]
        if src == "NCHW" and dst == "NC1HWC0" and self.stored_element(x.st, op.input) == f32:
            return self.transdata_in(op, x)  # a graph input, or an AI-CPU result
        if src in ("NC1HWC0", "FLAT_NC1HWC0") and dst in g.ROW_MAJOR:
            return self.transdata_out(op, getattr(x, "flat_src", x))
        raise PassFailedException(f"{describe_op(op)}: transdata {src} -> {dst} is not lowered "
                                  "(NCHW graph inputs -> NC1HWC0 and NC1HWC0 -> NCHW are)")

    def transdata_in(self, op: g.TransDataOp, src: TV) -> None:
        """NCHW fp32 input -> NC1HWC0 on the cube: C = I x B, B = 16 channels
        x kc pixels of one row gathered as ZN fractals (channel-major). Rows
        are cut into chunks of kc pixels (a divisor of the width when there
        is one; else the last chunk of each row is shorter); more than 16
        channels go in blocks of 16."""
        n, c, h, w = src.shape
        if n != 1:
            raise PassFailedException(f"{describe_op(op)}: batch {n}: only batch 1 is lowered")
        cap = self.config.capacity_bytes
        fits = [kc for kc in range(16, 129, 16) if kc * kc * 4 <= cap["l0a"] // 2]
        divisors = [kc for kc in fits if w % kc == 0]
        kc = max(divisors) if divisors else min(max(fits), -(-w // 16) * 16)
        nfull, tail = divmod(w, kc)
        dst = self.storage_for(op.output, "NC1HWC0", "input_5hd")
        self.stats.transdata += 1
        bd = self.cores(h * max(nfull, 1))
        k = self.kernel(op, "transdata", bd)
        f32e = f32
        ident = self.constant("identity", np.eye(kc, dtype=np.float32).reshape(kc // 16, 16, kc // 8, 8).transpose(0, 2, 1, 3), "ZZ")
        self.consts[ident] = self.consts[ident].astype(np.float32)
        k8 = 8
        l1a = k.alloc("l1", kc * kc, "ZZ", elem=f32e)
        l0a = k.alloc("l0a", kc * kc, "ZZ", elem=f32e)
        l1b = k.alloc("l1", kc * 16, "ZN", elem=f32e)
        l0b = k.alloc("l0b", kc * 16, "ZN", elem=f32e)
        l0c = k.alloc("l0c", kc * 16, "NZ", elem=f32e)
        ub = k.alloc("ub", kc * 16, "NZ")
        zero = k.alloc("ub", kc * 16, "ND", elem=f32e)
        k.copy(l1a, k.gm(ident, f32e), [kc * kc], [1], [1])
        k.emit(t.LoadFractalOp(l0a, l1a, kc * kc * 4 // 512))
        k.emit(t.DupOp(zero, kc * 16, 0.0))
        k.copy(l1b, zero, [kc * 16], [1], [1])
        x = k.gm(src.st.name, f32e)
        out = k.gm(dst.st.name)
        blocks = [(b, min(16, c - b)) for b in range(0, c, 16)]

        def chunk(row: Index, col: Index, npx: int) -> None:
            p0 = k.add(k.mul(row, w), col)
            pix = k.add(k.mul(row, dst.st.wp), col)
            for c_start, cn in blocks:
                if cn < 16 and len(blocks) > 1:  # stale channels of the previous block
                    k.copy(l1b, zero, [kc * 16], [1], [1])
                # whole 8-pixel columns: a short chunk reads up to 7 pixels
                # past its row (never written back; the last row's land in
                # the tensor's slack)
                k.copy(l1b, k.at(x, c_start * h * w, p0), [cn, -(-npx // k8), k8], [k8, 16 * k8, 1], [h * w, k8, 1])
                k.emit(t.LoadFractalOp(l0b, l1b, kc * 16 * 4 // 512))
                k.emit(t.MatmulOp(l0c, l0a, l0b, kc, 16, kc, False))
                k.copy(ub, l0c, [kc * 16], [1], [1], cast=self.fp16)
                base = k.at(out, dst.origin(self.c0) + c_start // self.c0 * dst.c1stride(self.c0), k.mul(pix, self.c0))
                k.copy(base, ub, [-(-cn // self.c0), npx, self.c0], [dst.c1stride(self.c0), self.c0, 1], [self.c0, 16, 1])

        if nfull:
            with k.tiles(h * nfull, bd) as tile:
                chunk(k.div(tile, nfull), k.mul(k.rem(tile, nfull), kc), kc)
        if tail:
            with k.tiles(h, bd) as row:
                chunk(row, nfull * kc, tail)

    def transdata_out(self, op: g.TransDataOp, x: TV) -> None:
        """NC1HWC0 -> NCHW on the cube: per 16-channel block,
        C[16 ch, Kn px] = I16 x B, where B's ZN fractals are exactly the
        NC1HWC0 pixel runs; the NZ result rows are channel rows of NCHW.
        A graph output comes out as fp32 (the cube accumulates in fp32);
        an intermediate in the compute precision."""
        if any(x.st.halo):  # a padded conv/pool reads it too: pixel runs are rows, copy without the halo
            flat = self.temp_map(x.shape, "no_halo")
            self.map_kernel(op, "strip_halo", [x], flat, lambda k, a, dst, n, _: k.vec("adds", dst, [a[0]], [n], [[1], [1]], 0.0))
            x = flat
        _, C, H, W = x.shape
        v = op.output
        c0 = self.c0
        P = H * W
        name = self.outputs.get(v)
        st = Storage(name or self.fresh("transdata_nd"), kind="output" if name else "internal",
                     layout="ND", elems=C * P, shape=tuple(g.shape_of(v)))
        out_elem = f32 if name else self.elem
        if name:
            st.ttype = TensorType(f32, g.shape_of(v))
        self.storages.append(st)
        self.values[v] = TV(st, 0, "ND", tuple(g.shape_of(v)))
        self.stats.transdata += 1
        divs = [d for d in range(16, 257, 16) if P % d == 0]
        if divs:
            kn = max(divs)
            full, tail = P // kn, 0
        else:
            kn = min(128, -(-P // 16) * 16)
            full, tail = divmod(P, kn)
        ident = self.constant("identity16", np.eye(16, dtype=np.float32).reshape(16, 16 // c0, c0).transpose(1, 0, 2), "ZZ")
        cb_n = -(-C // 16)
        bd = 1 if tail else self.cores(full)
        k = self.kernel(op, "transdata", bd)
        l1a = k.alloc("l1", 256, "ZZ")
        l0a = k.alloc("l0a", 256, "ZZ")
        l1b = k.alloc("l1", 16 * kn, "ZN", buffers=2)
        l0b = k.alloc("l0b", 16 * kn, "ZN", buffers=2)
        l0c = k.alloc("l0c", 16 * kn, "NZ", elem=f32)
        ub = k.alloc("ub", 16 * kn, "NZ", elem=out_elem, buffers=2)
        k.copy(l1a, k.gm(ident), [256], [1], [1])
        k.emit(t.LoadFractalOp(l0a, l1a, 256 * self.es // 512))
        xg, og = k.gm(x.st.name), k.gm(st.name, out_elem)

        def chunk(p0: Index, n: int) -> None:
            npad = -(-n // 16) * 16
            # the last slice's run is read up to whole 16-pixel fractals
            x.st.overread = max(x.st.overread, (npad - n) * c0 * self.es)
            for cb in range(cb_n):
                rows = min(16, C - cb * 16)
                k.copy(l1b, k.at(xg, x.origin(c0) + cb * (16 // c0) * x.c1stride(c0), k.mul(p0, c0)),
                       [16 // c0, npad * c0], [npad * c0, 1], [x.c1stride(c0), 1])
                k.emit(t.LoadFractalOp(l0b, l1b, 16 * npad * self.es // 512))
                k.emit(t.MatmulOp(l0c, l0a, l0b, 16, npad, 16, False))
                k.copy(ub, l0c, [16 * npad], [1], [1], cast=out_elem != f32)
                if name and self.sc(v) != 1.0:  # force_fp16 range scaling undone in fp32
                    k.vec("muls", ub, [ub], [16 * npad], [[1], [1]], self.sc(v))
                if n == npad:
                    k.copy(k.at(og, cb * 16 * P, p0), ub, [rows, npad // 16, 16], [P, 16, 1], [16, 256, 1])
                else:  # a partial chunk (run first, so later full chunks overwrite its overhang)
                    for r in range(rows):
                        k.copy(k.at(og, cb * 16 * P + r * P, p0), k.at(ub, r * 16), [npad // 16, 16], [16, 1], [256, 1])

        if tail:
            chunk(full * kn, tail)
        if full:
            with k.tiles(full, bd, pipeline=True) as tile:
                chunk(k.mul(tile, kn), kn)

    # -- convolution ---------------------------------------------------------
    def conv(self, op: g.ConvOp) -> None:
        x = self.values[op.input]
        if x.layout != "NC1HWC0":
            raise PassFailedException(f"{describe_op(op)}: input is not NC1HWC0")
        act = op.str_("activation", "")
        if act not in ("", "relu"):
            raise PassFailedException(f"{describe_op(op)}: activation '{act}' not lowered")
        w = self.value_array(op.weight)
        if w is None:
            raise PassFailedException(f"{describe_op(op)}: weights must be constant")
        bias = self.value_array(op.bias) if op.bias is not None else None
        res = self.values[op.residual] if op.residual is not None else None
        s_in, s_out = self.sc(op.input), self.sc(op.output)
        if s_in != s_out:  # force_fp16 range scaling, folded into the weights
            w = np.asarray(w, np.float32) * (s_in / s_out)
        if bias is not None and s_out != 1.0:
            bias = np.asarray(bias, np.float32) / s_out
        s = op.ints("strides", (1, 1))
        d = op.ints("dilations", (1, 1))
        p = op.ints("pads", (0, 0, 0, 0))
        if s[0] != s[1] or d[0] != d[1]:
            raise PassFailedException(f"{describe_op(op)}: anisotropic stride/dilation not lowered")
        group = op.int_("group", 1)
        fold = self.shuffle_after(op) if res is None else None
        if fold is not None:
            # the channel shuffle after this conv is a permutation of its output
            # channels: permute the weight rows (groups become one dense,
            # block-diagonal-permuted conv) and write the shuffled map directly
            chan, ops, final = fold
            if group > 1:
                cout, cin_g = w.shape[:2]
                cout_g = cout // group
                wd = np.zeros((cout, cin_g * group) + w.shape[2:], np.float32)
                for gi in range(group):
                    wd[gi * cout_g:(gi + 1) * cout_g, gi * cin_g:(gi + 1) * cin_g] = w[gi * cout_g:(gi + 1) * cout_g]
                w, group = wd, 1
            w = np.asarray(w)[chan]
            bias = np.asarray(bias).reshape(-1)[chan] if bias is not None else None
            out = self.temp_map(tuple(g.shape_of(op.output)), "conv_shuffled")
            out.st.halo = list(self.halos.get(ops[1].results[0], [0, 0, 0, 0]))
            self.values[final] = out
            self.folded.update(ops)
        else:
            out = self.storage_for(op.output, "NC1HWC0", "conv")
        self.conv_core(op, x, w, bias, res, act, s[0], d[0], p, out, op.output.name_hint or "conv", group)

    def shuffle_after(self, op: g.ConvOp):
        """(channel permutation, [reshape, transpose, reshape], shuffled value)
        when op's only use is reshape -> channel-permuting transpose -> reshape
        back to op's shape, none of them a graph output; else None."""
        def only_use(v):
            uses = list(v.uses)
            return uses[0].operation if len(uses) == 1 else None

        r1 = only_use(op.output)
        tr = only_use(r1.results[0]) if isinstance(r1, g.ReshapeOp) else None
        if isinstance(tr, g.TransposeOp) and engine_of(tr) != AI_CORE:  # graph-partition's call
            return None
        r2 = only_use(tr.output) if isinstance(tr, g.TransposeOp) else None
        if not isinstance(r2, g.ReshapeOp):
            return None
        shape = tuple(g.shape_of(op.output))
        if len(shape) != 4 or tuple(g.shape_of(r2.results[0])) != shape or tr.output in self.outputs:
            return None
        _, C, H, W = shape
        chan = channel_permutation(tuple(g.shape_of(tr.input)), tr.ints("perm", ()), C, H, W)
        return None if chan is None else (chan, [r1, tr, r2], r2.results[0])

    def conv_core(self, op: Operation, x: TV, w: np.ndarray, bias, res: TV | None, act: str, s: int, d: int,
                  p, out: TV, wbase: str = "conv", group: int = 1) -> None:
        """One conv kernel: x (NC1HWC0) * w (OIHW, constant) (+bias, +res, relu) -> out.

        Grouped convolution: the groups are gathered into `nsb` superblocks,
        the fewest groups whose outputs fill whole 16-channel fractals and
        whose inputs are whole C0 slices (depthwise: 16 channels); each
        superblock is a dense conv with block-diagonal weights over its own
        input slices (no superblock split possible: one block-diagonal conv)."""
        cout, cin_g, kh, kw = w.shape
        _, _, H, W = x.shape
        OH, OW = out.shape[2], out.shape[3]
        c0, k0, es = self.c0, self.c0, self.es
        if cout % group:
            raise PassFailedException(f"{describe_op(op)}: {cout} output channels in {group} groups")
        cout_g = cout // group
        nsb = 1
        if group > 1:
            for gb in range(1, group + 1):
                if group % gb == 0 and gb * cout_g % 16 == 0 and gb * cin_g % c0 == 0:
                    nsb = group // gb
                    break
        gpb = group // nsb
        cout_b, cin_b = cout // nsb, cin_g * gpb
        if group > 1:
            wd = np.zeros((nsb, cout_b, cin_b, kh, kw), np.float32)
            for gi in range(group):
                b, r = divmod(gi, gpb)
                wd[b, r * cout_g:(r + 1) * cout_g, r * cin_g:(r + 1) * cin_g] = w[gi * cout_g:(gi + 1) * cout_g]
        else:
            wd = w.reshape(1, cout, cin_g, kh, kw)
        C1i = -(-cin_b // c0)
        N1 = -(-cout_b // 16)
        T = kh * kw
        # packed weights FRACTAL_Z per superblock: [nsb][C1i][T][N1][16][k0]
        wp = np.zeros((nsb, C1i * c0, T, N1 * 16), np.float32)
        wp[:, :cin_b, :, :cout_b] = wd.reshape(nsb, cout_b, cin_b, T).transpose(0, 2, 3, 1)
        wp = wp.reshape(nsb, C1i, c0, T, N1, 16).transpose(0, 1, 3, 4, 5, 2)
        wname = self.constant(f"{wbase}_w", wp, "FRACTAL_Z")
        bname = None
        if bias is not None:
            bp = np.zeros(nsb * N1 * 16, np.float32)
            bp[:cout] = bias
            bname = self.constant("conv_b", bp, "ND")
        cap = self.config.capacity_bytes
        fm_w = W + p[1] + p[3]
        # -- tile sizes: fit buffers by construction, pick by cost
        # K split over kernel rows when the whole im2col of one C1 slice does
        # not fit L0A/L0B (11x11): parts of khp rows, accumulated in L0C
        khp = min(kh, (cap["l0a"] // 2) // (16 * kw * 32), (cap["l0b"] // 2) // (kw * 512))
        if khp < 1:
            raise PassFailedException(f"{describe_op(op)}: one kernel row of {kw} taps does not fit L0A/L0B")
        nparts = -(-kh // khp)
        khp = -(-kh // nparts)
        parts = [(r0, min(khp, kh - r0)) for r0 in range(0, kh, khp)]
        Tp = khp * kw
        mc_max = (cap["l0a"] // 2) // (Tp * 32) // 16 * 16
        tn_max = max(1, (cap["l0b"] // 2) // (Tp * 512))
        best = None
        for tn1 in [x for x in range(1, N1 + 1) if N1 % x == 0 and x <= tn_max]:
            ub_rows = (cap["ub"] - 4096) // ((2 if res else 1) * tn1 * 16 * 4)
            l0c_rows = cap["l0c"] // (tn1 * 16 * 4)
            mc_cap = min(mc_max, ub_rows, l0c_rows) // 16 * 16
            if mc_cap < 16:
                continue
            if OW <= mc_cap:
                chunkings = [(r, -(-r * OW // 16) * 16, 1) for r in range(1, OH + 1) if OH % r == 0 and r * OW <= mc_cap]
            else:
                chunkings = [(1, mc_cap, -(-OW // mc_cap))]
            for rr, mc, q in chunkings:
                for toh in [m * rr for m in range(1, OH // rr + 1) if (OH // rr) % m == 0]:
                    span = (toh - 1) * s + d * (kh - 1) + 1
                    l1 = C1i * span * fm_w * c0 * es + C1i * T * tn1 * 512
                    if l1 > cap["l1"]:
                        continue
                    nb, nn = OH // toh, N1 // tn1
                    tiles = nb * nn * nsb
                    cores = self.cores(tiles)
                    gm_bytes = (C1i * span * fm_w * c0 * es + C1i * T * tn1 * 512) * tiles
                    mte2 = self.config.dma_cycles("gm_l1", gm_bytes // max(1, cores), cores)
                    cube = (tiles / cores) * (toh // rr) * q * C1i * nparts * self.config.mmad_cycles("f16" if self.fp16 else "f32", mc, tn1 * 16, Tp * k0)
                    instr = tiles / cores * (toh // rr) * q * (C1i * 3 + 8 * tn1)
                    cost = max(mte2, cube) + instr * 2
                    if best is None or cost < best[0]:
                        best = (cost, tn1, rr, mc, q, toh)
        if best is None:
            raise PassFailedException(f"{describe_op(op)}: no tiling fits the target's buffers (C1i={C1i} N1={N1} T={T} OH={OH} OW={OW} s={s} mc_max={mc_max} tn_max={tn_max} fm_w={fm_w})")
        _, tn1, rr, mc, q, toh = best
        nb, nn = OH // toh, N1 // tn1
        tiles = nb * nn * nsb
        bd = self.cores(tiles)
        span = (toh - 1) * s + d * (kh - 1) + 1
        k = self.kernel(op, "conv", bd)
        k.kernel.attributes["tiling"] = StringAttr(f"band {toh} rows x {tn1 * 16} channels, chunk {rr} rows / {mc} m, {q} per row")
        band_e = span * fm_w * c0
        l1x = k.alloc("l1", C1i * band_e, "NC1HWC0")
        l1w = k.alloc("l1", C1i * T * tn1 * 16 * k0, "FRACTAL_Z")
        l0a = k.alloc("l0a", mc * Tp * k0, "ZZ", buffers=2)
        l0b = k.alloc("l0b", Tp * tn1 * 16 * k0, "ZN", buffers=2)
        l0c = k.alloc("l0c", tn1 * 16 * mc, "NZ", elem=f32)
        ubc = k.alloc("ub", tn1 * 16 * mc, "NZ")
        ubr = k.alloc("ub", tn1 * 16 * mc, "NZ") if res is not None else None
        ubb = k.alloc("ub", tn1 * 16, "ND") if bname else None
        xg, wg, og = k.gm(x.st.name), k.gm(wname), k.gm(out.st.name)
        x_origin = x.origin(c0) - (p[0] * x.st.wp + p[1]) * c0
        halves = 16 // c0
        with k.tiles(tiles, bd) as tile:
            band = k.div(tile, nn * nsb)
            j = k.rem(tile, nn * nsb)  # block of tn1 output fractals (over all superblocks)
            sbi, jl = (k.div(j, nn), k.rem(j, nn)) if nsb > 1 else (0, j)
            woff = k.add(k.mul(sbi, C1i * T * N1 * 16 * k0), k.mul(jl, tn1 * 16 * k0))
            k.copy(l1w, k.at(wg, 0, woff), [C1i * T, tn1 * 16 * k0], [tn1 * 16 * k0, 1], [N1 * 16 * k0, 1])
            xoff = k.add(k.mul(band, toh * s * x.st.wp * c0), k.mul(sbi, (cin_b // c0) * x.c1stride(c0)))
            k.copy(
                l1x, k.at(xg, x_origin, xoff),
                [C1i, span, fm_w * c0], [band_e, fm_w * c0, 1], [x.c1stride(c0), x.st.wp * c0, 1],
            )
            if ubb is not None:
                k.copy(ubb, k.at(k.gm(bname), 0, k.mul(j, tn1 * 16)), [tn1 * 16], [1], [1])
            with k.loop(0, toh // rr) as ch:
                in_off = k.mul(ch, rr * s * fm_w * c0)
                oy = k.add(k.mul(band, toh), k.mul(ch, rr))
                for qi in range(q):

                    def step(c1: Index, first: bool, qi: int = qi) -> None:
                        for pi, (r0, kp) in enumerate(parts):
                            cspan = (rr - 1) * s + d * (kp - 1) + 1
                            params = [cspan, fm_w, kp, kw, s, s, 0, 0, 0, 0, d, d, qi * mc, mc]
                            xin = k.at(l1x, r0 * d * fm_w * c0, k.add(in_off, k.mul(c1, band_e)))
                            k.emit(t.Im2colOp(l0a, xin, params))
                            wl1 = k.at(l1w, r0 * kw * tn1 * 16 * k0, k.mul(c1, T * tn1 * 16 * k0))
                            k.emit(t.LoadFractalOp(l0b, wl1, kp * kw * tn1))
                            k.emit(t.MatmulOp(l0c, l0a, l0b, mc, tn1 * 16, kp * kw * k0, not (first and pi == 0)))

                    step(0, True)
                    if C1i > 1:
                        with k.loop(1, C1i, 1, pipeline=True) as c1:
                            step(c1, False)
                    k.copy(ubc, l0c, [tn1 * 16 * mc], [1], [1], cast=self.fp16)
                    if ubb is not None:
                        k.vec("add", ubc, [ubc, ubb], [tn1, mc, 16], [[mc * 16, 16, 1], [mc * 16, 16, 1], [16, 0, 1]])
                    rows, m0 = (rr, 0) if q == 1 else (1, qi * mc)
                    cols = OW if q == 1 else min(mc, OW - m0)
                    # the tile of out/residual: [n1][half][rows][cols][c0] <-> ub [n1][m][16]
                    shape = [tn1, halves, rows, cols, c0]
                    ub_st = [mc * 16, c0, OW * 16, 16, 1]
                    if res is not None:
                        gst = [halves * res.c1stride(c0), res.c1stride(c0), res.st.wp * c0, c0, 1]
                        roff = k.add(k.mul(j, tn1 * halves * res.c1stride(c0)), k.mul(oy, res.st.wp * c0))
                        k.copy(ubr, k.at(k.gm(res.st.name), res.origin(c0) + m0 * c0, roff), shape, ub_st, gst)
                        k.vec("add", ubc, [ubc, ubr], [tn1 * 16 * mc], [[1], [1], [1]])
                    if act == "relu":
                        k.vec("relu", ubc, [ubc], [tn1 * 16 * mc], [[1], [1]])
                    gst = [halves * out.c1stride(c0), out.c1stride(c0), out.st.wp * c0, c0, 1]
                    ooff = k.add(k.mul(j, tn1 * halves * out.c1stride(c0)), k.mul(oy, out.st.wp * c0))
                    k.copy(k.at(og, out.origin(c0) + m0 * c0, ooff), ubc, shape, gst, ub_st)

    # -- helpers for multi-kernel lowerings ---------------------------------------
    def temp_map(self, shape: tuple, name: str) -> TV:
        """An internal NC1HWC0 map (no halo) that no graph value names."""
        _, c, h, w = shape
        st = Storage(self.fresh(name), shape=tuple(shape), c1=-(-c // 16) * 16 // self.c0, h=h, w=w)
        self.storages.append(st)
        return TV(st, 0, "NC1HWC0", tuple(shape))

    def map_kernel(self, op: Operation, kind: str, ins: list[TV], out: TV, body, extra_bufs: int = 0) -> None:
        """A vector kernel over NC1HWC0 maps of one shape: per tile (C1 slice,
        band of rows) load every input, `body(k, srcs, dst, n)` computes the
        band into dst (n elements, dense), store."""
        _, C, H, W = out.shape
        c0, es = self.c0, self.es
        C1 = -(-C // c0)
        cap = self.config.capacity_bytes["ub"] - 4096
        nbuf = len(ins) + 1 + extra_bufs
        rows = [r for r in range(1, H + 1) if H % r == 0 and 2 * nbuf * r * W * c0 * es <= cap]
        if not rows:
            raise PassFailedException(f"{describe_op(op)}: a row does not fit UB")
        toh = max(rows)
        nb = H // toh
        tiles = C1 * nb
        bd = self.cores(tiles)
        k = self.kernel(op, kind, bd)
        n = toh * W * c0
        bufs = [k.alloc("ub", n, "NC1HWC0", buffers=2) for _ in ins]
        dst = k.alloc("ub", n, "NC1HWC0", buffers=2)
        scratch = [k.alloc("ub", n, "NC1HWC0", buffers=2) for _ in range(extra_bufs)]
        with k.tiles(tiles, bd, pipeline=True) as tile:
            c1 = k.div(tile, nb)
            band = k.rem(tile, nb)
            for tv, u in zip(ins, bufs):
                src = k.add(k.mul(c1, tv.c1stride(c0)), k.mul(band, toh * tv.st.wp * c0))
                k.copy(u, k.at(k.gm(tv.st.name), tv.origin(c0), src), [toh, W * c0], [W * c0, 1], [tv.st.wp * c0, 1])
            body(k, bufs, dst, n, scratch)
            dsto = k.add(k.mul(c1, out.c1stride(c0)), k.mul(band, toh * out.st.wp * c0))
            k.copy(k.at(k.gm(out.st.name), out.origin(c0), dsto), dst, [toh, W * c0], [out.st.wp * c0, 1], [W * c0, 1])

    # -- concat of operands not written in place ------------------------------------
    def concat_copy(self, op: g.ConcatOp, copies: list[tuple[SSAValue, int]]) -> None:
        """A channel concat whose operands cannot all be written in place (an
        offset that is not a multiple of C0, a graph input, a view, a value
        placed in another concat): every operand keeps its own map and two
        copy kernels build the result. A channel offset inside a C0 slice is a
        lane shift, and the DMA moves whole 32-byte blocks on the UB side but
        is byte addressed on the GM side, so the shift happens in GM:
        `concat_gather` writes every operand slice, pixel by pixel, into a
        pixel-major scratch S[h*w][Cs] at its channel offset (32-byte bursts
        with a GM gap; a block spilling past an operand's last channel is
        overwritten by the next operand's first block, written later on the
        same pipe; one zero block after the last channel clears the
        spill into the result's padded lanes); `concat_scatter` reads each
        result slice back as one 32-byte burst per pixel at channel j*C0
        (any byte offset in GM) and stores it as an NC1HWC0 slice (with the
        result's halo). Two kernels because a kernel never reads GM it writes
        (sync.py does not order GM inside a kernel). Cost: the concat's bytes
        move twice through UB; in-place concat stays the path for aligned
        operands."""
        out = self.values[op.output]
        _, Ct, H, W = out.shape
        c0, es = self.c0, self.es
        srcs = []
        for x, off in copies:
            tv = self.values.get(x)
            if tv is None or tv.layout != "NC1HWC0" or len(tv.shape) != 4 or tuple(tv.shape[2:]) != (H, W):
                raise PassFailedException(f"{describe_op(op)}: concat operand is not a map in NC1HWC0 (not lowered)")
            srcs.append((tv, off))
        n_out = -(-Ct // c0)  # result slices that hold channels
        cs = (n_out + 1) * c0  # scratch pixel stride (elements): room for a spilled block
        scratch = Storage(self.fresh("concat_scratch"), layout="ND", elems=H * W * cs, shape=(H * W * cs,))
        self.storages.append(scratch)
        cap = self.config.capacity_bytes["ub"] - 4096
        rows = [r for r in range(1, H + 1) if H % r == 0 and 3 * r * W * c0 * es <= cap]
        if not rows:
            raise PassFailedException(f"{describe_op(op)}: a row does not fit UB")
        want = min(H, self.config.cube_cores)  # enough bands for the cores, as large as UB allows
        toh = max([r for r in rows if H // r >= want] or [min(rows)])
        nb = H // toh
        bd = self.cores(nb)
        n = toh * W * c0
        # gather: operand slices -> S at their channel offsets
        k = self.kernel(op, "concat_gather", bd)
        bufs = [k.alloc("ub", n, "NC1HWC0") for _ in range(2)]
        sg = k.gm(scratch.name)
        zero = None
        if Ct % c0:
            zero = k.alloc("ub", n, "NC1HWC0")
            k.emit(t.DupOp(zero, n, 0.0))
        i = 0
        with k.tiles(nb, bd) as band:
            for tv, off in srcs:
                for sl in range(-(-tv.shape[1] // c0)):
                    u = bufs[i % 2]
                    i += 1
                    src = k.at(k.gm(tv.st.name), tv.origin(c0) + sl * tv.c1stride(c0), k.mul(band, toh * tv.st.wp * c0))
                    k.copy(u, src, [toh, W * c0], [W * c0, 1], [tv.st.wp * c0, 1])
                    dst = k.at(sg, off + sl * c0, k.mul(band, toh * W * cs))
                    k.copy(dst, u, [toh * W, c0], [cs, 1], [c0, 1])
            if zero is not None:
                k.copy(k.at(sg, Ct, k.mul(band, toh * W * cs)), zero, [toh * W, c0], [cs, 1], [c0, 1])
        # scatter: S -> result slices
        k = self.kernel(op, "concat_scatter", bd)
        bufs = [k.alloc("ub", n, "NC1HWC0") for _ in range(2)]
        sg = k.gm(scratch.name)
        og = k.gm(out.st.name)
        with k.tiles(nb, bd) as band:
            for j in range(n_out):
                u = bufs[j % 2]
                k.copy(u, k.at(sg, j * c0, k.mul(band, toh * W * cs)), [toh * W, c0], [c0, 1], [cs, 1])
                dst = k.at(og, out.origin(c0) + j * out.c1stride(c0), k.mul(band, toh * out.st.wp * c0))
                k.copy(dst, u, [toh, W * c0], [out.st.wp * c0, 1], [W * c0, 1])

    # -- transpose -----------------------------------------------------------------
    def transpose(self, op: g.TransposeOp) -> None:
        """A transpose of a view of a 4-D map that permutes channels only
        (shufflenet's reshape -> transpose -> reshape channel shuffle): a 1x1
        convolution with a 0/1 permutation matrix on the cube (exact: one
        product by 1.0 and sums of zeros per output). The result is a map
        (with the halo its consumers need) seen through the transposed view."""
        x = self.values[op.input]
        perm = op.ints("perm", ())
        src = getattr(x, "flat_src", None)
        if x.layout != "FLAT_NC1HWC0" or src is None or len(src.shape) != 4:
            raise PassFailedException(f"{describe_op(op)}: transpose is only lowered as a channel permutation of a 4-D map")
        _, C, H, W = src.shape
        ish, osh = tuple(x.shape), tuple(g.shape_of(op.output))
        # the input view must split channels only: (1, C-dims..., H, W)
        chan = channel_permutation(ish, perm, C, H, W)
        if chan is None:
            raise PassFailedException(f"{describe_op(op)}: transpose moves spatial dims (not lowered)")
        wperm = np.zeros((C, C, 1, 1), np.float32)
        wperm[np.arange(C), chan, 0, 0] = 1.0
        out4 = self.temp_map((1, C, H, W), "shuffle")
        out4.st.halo = list(self.halos.get(op.output, [0, 0, 0, 0]))
        self.conv_core(op, src, wperm, None, None, "", 1, 1, (0, 0, 0, 0), out4, "shuffle")
        tv = TV(out4.st, 0, "FLAT_NC1HWC0", osh)
        tv.flat_src = out4  # type: ignore[attr-defined]
        self.values[op.output] = tv

    # -- local response normalisation ---------------------------------------------
    def lrn(self, op: g.LrnOp) -> None:
        """y = x / (bias + alpha/size * sum of x^2 over a channel window)^beta.
        The window crosses C0 slices, so the window sum is a 1x1 convolution of
        x^2 with a banded C x C weight on the cube; squaring and the power run
        on the vector unit: x*x -> conv -> x * exp(-beta * ln(bias + s))."""
        x = self.values[op.input]
        if x.layout != "NC1HWC0" or len(x.shape) != 4:
            raise PassFailedException(f"{describe_op(op)}: LRN of a non-4-D map")
        assert self.sc(op.input) == 1.0, "fp16_scaling pins LRN inputs"
        size = op.int_("size", 1)
        alpha, beta, kb = op.float_("alpha", 1e-4), op.float_("beta", 0.75), op.float_("bias", 1.0)
        C = x.shape[1]
        lo, hi = (size - 1) // 2, -(-(size - 1) // 2)
        band = np.zeros((C, C, 1, 1), np.float32)
        for co in range(C):
            band[co, max(0, co - lo): min(C, co + hi + 1), 0, 0] = alpha / size
        sq = self.temp_map(x.shape, "lrn_sq")
        self.map_kernel(op, "lrn_square", [x], sq, lambda k, a, dst, n, _: k.vec("mul", dst, [a[0], a[0]], [n], [[1], [1], [1]]))
        sm = self.temp_map(x.shape, "lrn_sum")
        self.conv_core(op, sq, band, None, None, "", 1, 1, (0, 0, 0, 0), sm, "lrn_band")
        out = self.storage_for(op.output, "NC1HWC0", "lrn")

        def power(k, a, dst, n, _):
            # + bias here, not as the conv's bias: the padded channels of the
            # last slice then stay finite (ln(0) * 0 would be nan)
            k.vec("adds", dst, [a[1]], [n], [[1], [1]], kb)
            k.vec("ln", dst, [dst], [n], [[1], [1]])
            k.vec("muls", dst, [dst], [n], [[1], [1]], -beta)
            k.vec("exp", dst, [dst], [n], [[1], [1]])
            k.vec("mul", dst, [dst, a[0]], [n], [[1], [1], [1]])

        self.map_kernel(op, "lrn_scale", [x, sm], out, power)

    # -- pooling ---------------------------------------------------------------
    def pool(self, op: g.PoolOp) -> None:
        x = self.values[op.input]
        kh, kw = op.ints("kernel_shape")
        s = op.ints("strides", (1, 1))
        p = op.ints("pads", (0, 0, 0, 0))
        if op.int_("ceil_mode", 0) or op.ints("dilations", (1, 1)) != (1, 1):
            raise PassFailedException(f"{describe_op(op)}: ceil_mode/dilation pooling not lowered")
        is_max = isinstance(op, g.MaxPoolOp)
        if is_max and any(p) and op.input not in self.nonneg:
            raise PassFailedException(f"{describe_op(op)}: padded max pool of a possibly negative input (zero halo)")
        _, C, H, W = x.shape
        OH, OW = g.shape_of(op.output)[2:]
        c0, es = self.c0, self.es
        C1 = -(-C // c0)
        fm_w = W + p[1] + p[3]
        out = self.storage_for(op.output, "NC1HWC0", "pool")
        cap = self.config.capacity_bytes["ub"]
        counts = None
        if not is_max and any(p) and not op.int_("count_include_pad", 0):
            ones = np.pad(np.ones((H, W)), ((p[0], p[2]), (p[1], p[3])))
            from numpy.lib.stride_tricks import sliding_window_view

            cnt = sliding_window_view(ones, (kh, kw))[:: s[0], :: s[1]].sum(axis=(2, 3))[:OH, :OW]
            counts = np.repeat((1.0 / cnt)[:, :, None], c0, axis=2)
        toh = None
        for cand in [r for r in range(OH, 0, -1) if OH % r == 0]:
            span = (cand - 1) * s[0] + kh
            need = 2 * (span * fm_w + (2 if counts is not None else 1) * cand * OW) * c0 * es
            if need <= cap:
                toh = cand
                break
        if toh is None:
            raise PassFailedException(f"{describe_op(op)}: a pooling row does not fit UB")
        span = (toh - 1) * s[0] + kh
        nb = OH // toh
        tiles = C1 * nb
        bd = self.cores(tiles)
        k = self.kernel(op, "max_pool" if is_max else "avg_pool", bd)
        uin = k.alloc("ub", span * fm_w * c0, "NC1HWC0", buffers=2)
        uout = k.alloc("ub", toh * OW * c0, "NC1HWC0", buffers=2)
        ucnt = k.alloc("ub", toh * OW * c0, "NC1HWC0", buffers=2) if counts is not None else None
        cname = self.constant("pool_scale", counts, "ND") if counts is not None else None
        xg, og = k.gm(x.st.name), k.gm(out.st.name)
        x_origin = x.origin(c0) - (p[0] * x.st.wp + p[1]) * c0
        with k.tiles(tiles, bd, pipeline=True) as tile:
            c1 = k.div(tile, nb)
            band = k.rem(tile, nb)
            src = k.add(k.mul(c1, x.c1stride(c0)), k.mul(band, toh * s[0] * x.st.wp * c0))
            k.copy(uin, k.at(xg, x_origin, src), [span, fm_w * c0], [fm_w * c0, 1], [x.st.wp * c0, 1])
            taps = [(i, j) for i in range(kh) for j in range(kw)]
            shape = [toh, OW, c0]
            dst_st = [OW * c0, c0, 1]
            src_st = [s[0] * fm_w * c0, s[1] * c0, 1]
            binop = "max" if is_max else "add"
            if len(taps) == 1:
                k.vec("adds", uout, [uin], shape, [dst_st, src_st], 0.0)
            else:
                (a0, b0), (a1, b1) = taps[0], taps[1]
                k.vec(binop, uout, [k.at(uin, (a0 * fm_w + b0) * c0), k.at(uin, (a1 * fm_w + b1) * c0)], shape, [dst_st, src_st, src_st])
                for a, b in taps[2:]:
                    k.vec(binop, uout, [uout, k.at(uin, (a * fm_w + b) * c0)], shape, [dst_st, dst_st, src_st])
            if not is_max:
                if counts is not None:
                    k.copy(ucnt, k.at(k.gm(cname), 0, k.mul(band, toh * OW * c0)), [toh * OW * c0], [1], [1])
                    k.vec("mul", uout, [uout, ucnt], [toh * OW * c0], [[1], [1], [1]])
                else:
                    k.vec("muls", uout, [uout], [toh * OW * c0], [[1], [1]], 1.0 / (kh * kw))
            dst = k.add(k.mul(c1, out.c1stride(c0)), k.mul(band, toh * out.st.wp * c0))
            k.copy(k.at(og, out.origin(c0), dst), uout, [toh, OW * c0], [out.st.wp * c0, 1], [OW * c0, 1])

    def global_pool(self, op: g.GlobalAvgPoolOp) -> None:
        x = self.values[op.input]
        _, C, H, W = x.shape
        c0, es = self.c0, self.es
        C1 = -(-C // c0)
        hw = H * W
        out = self.storage_for(op.output, "NC1HWC0", "gap")
        cap = self.config.capacity_bytes["ub"]
        gs = max(gg for gg in range(1, C1 + 1) if C1 % gg == 0 and 2 * gg * hw * c0 * es <= cap and hw * c0 // c0 <= 255 * 8)
        tiles = C1 // gs
        bd = self.cores(tiles)
        k = self.kernel(op, "global_avg_pool", bd)
        ub = k.alloc("ub", gs * hw * c0, "NC1HWC0", buffers=2)
        xg, og = k.gm(x.st.name), k.gm(out.st.name)
        with k.tiles(tiles, bd, pipeline=True) as tile:
            c1 = k.mul(tile, gs)
            k.copy(ub, k.at(xg, x.origin(c0), k.mul(c1, x.c1stride(c0))), [gs, H, W * c0], [hw * c0, W * c0, 1], [x.c1stride(c0), x.st.wp * c0, 1])
            n = hw
            while n > 1:
                h = n // 2
                k.vec("add", ub, [ub, k.at(ub, (n - h) * c0)], [gs, h * c0], [[hw * c0, 1]] * 3)
                n -= h
            k.vec("muls", ub, [ub], [gs, c0], [[hw * c0, 1], [hw * c0, 1]], 1.0 / hw)
            k.copy(k.at(og, out.origin(c0), k.mul(c1, out.c1stride(c0))), ub, [gs, c0], [out.c1stride(c0), 1], [hw * c0, 1])

    # -- gemm --------------------------------------------------------------
    def gemm(self, op: Operation) -> None:
        a = self.values[op.operands[0]]
        wv = op.operands[1]
        bmat = self.value_array(wv)
        if bmat is None:
            raise PassFailedException(f"{describe_op(op)}: the right operand must be constant")
        alpha, beta = 1.0, 1.0
        if isinstance(op, g.GemmOp):
            if op.int_("trans_a", 0):
                raise PassFailedException(f"{describe_op(op)}: trans_a not lowered")
            if op.int_("trans_b", 0):
                bmat = bmat.T
            alpha, beta = op.float_("alpha", 1.0), op.float_("beta", 1.0)
        act = op.str_("activation", "")
        if act not in ("", "relu"):
            raise PassFailedException(f"{describe_op(op)}: activation '{act}' not lowered")
        bias = self.value_array(op.bias) if op.bias is not None else None
        if op.bias is not None and bias is None:
            raise PassFailedException(f"{describe_op(op)}: bias must be constant")
        M = math.prod(a.shape[:-1]) if a.layout == "ND" else a.shape[0]
        if M > 16 or len(a.shape) > 1 and a.shape[0] != 1:  # a 1-D left operand is one row
            raise PassFailedException(f"{describe_op(op)}: only M <= 16 (batch 1) is lowered")
        K, N = bmat.shape
        c0, k0, es = self.c0, self.c0, self.es
        s_in, s_out = self.sc(op.operands[0]), self.sc(op.results[0])
        B = bmat.astype(np.float32) * (alpha * s_in / s_out)
        beta /= s_out
        if a.layout == "FLAT_NC1HWC0":
            src = a.flat_src  # type: ignore[attr-defined]
            _, C, H, W = src.shape
            C1 = -(-C // c0)
            idx = np.arange(C1 * H * W * c0)
            c1, rest = np.divmod(idx, H * W * c0)
            pix, cc = np.divmod(rest, c0)
            ch = c1 * c0 + cc
            valid = ch < C
            Bp = np.zeros((idx.size, N), np.float32)
            Bp[valid] = B[(ch * H * W + pix)[valid]]
            B = Bp
            K = idx.size
        K1 = -(-K // k0)
        N1 = -(-N // 16)
        bp = np.zeros((K1 * k0, N1 * 16), np.float32)
        bp[:K, :N] = B
        bp = bp.reshape(K1, k0, N1, 16).transpose(0, 2, 3, 1)
        wname = self.constant("gemm_w", bp, "FRACTAL_Z")
        bname = None
        if bias is not None:
            bb = np.zeros(N1 * 16, np.float32)
            bb[:N] = np.broadcast_to(bias.astype(np.float32) * beta, (N,)) if bias.size in (1, N) else bias.reshape(-1)[:N] * beta
            bname = self.constant("gemm_b", bb, "ND")
        out = self.storage_for(op.results[0], "ND", "gemm")
        cap = self.config.capacity_bytes
        best = None
        for tn1 in [x for x in range(1, N1 + 1) if N1 % x == 0]:
            tk1 = min(K1, (cap["l0b"] // 2) // (tn1 * 512), (cap["l0a"] // 2) // 512)
            if tk1 < 1:
                continue
            while K1 % tk1:
                tk1 -= 1
            tiles = N1 // tn1
            cores = self.cores(tiles)
            steps = (tiles / cores) * (K1 // tk1)
            cost = self.config.dma_cycles("gm_l1", K1 * N1 * 512 // cores, cores) + steps * 40
            if best is None or cost < best[0]:
                best = (cost, tn1, tk1)
        _, tn1, tk1 = best
        tiles = N1 // tn1
        bd = self.cores(tiles)
        k = self.kernel(op, "gemm", bd)
        l1a = k.alloc("l1", tk1 * 16 * k0, "ZZ", buffers=2)
        l1b = k.alloc("l1", tk1 * tn1 * 16 * k0, "ZN", buffers=2)
        l0a = k.alloc("l0a", tk1 * 16 * k0, "ZZ", buffers=2)
        l0b = k.alloc("l0b", tk1 * tn1 * 16 * k0, "ZN", buffers=2)
        l0c = k.alloc("l0c", tn1 * 256, "NZ", elem=f32)
        ubc = k.alloc("ub", tn1 * 256, "NZ")
        ubb = k.alloc("ub", tn1 * 16, "ND") if bname else None
        ag, wg, og = k.gm(a.st.name), k.gm(wname), k.gm(out.st.name)
        a0 = a.origin(c0) if a.st.layout == "NC1HWC0" else 0

        def kstep(kk: Index, j: Index, first: bool) -> None:
            k.copy(l1a, k.at(ag, a0, k.mul(kk, tk1 * k0)), [tk1, k0], [16 * k0, 1], [k0, 1])
            k.copy(l1b, k.at(wg, 0, k.add(k.mul(kk, tk1 * N1 * 16 * k0), k.mul(j, tn1 * 16 * k0))),
                   [tk1, tn1 * 16 * k0], [tn1 * 16 * k0, 1], [N1 * 16 * k0, 1])
            k.emit(t.LoadFractalOp(l0a, l1a, tk1))
            k.emit(t.LoadFractalOp(l0b, l1b, tk1 * tn1))
            k.emit(t.MatmulOp(l0c, l0a, l0b, 16, tn1 * 16, tk1 * k0, not first))

        with k.tiles(tiles, bd) as j:
            kstep(0, j, True)
            if K1 // tk1 > 1:
                with k.loop(1, K1 // tk1, 1, pipeline=True) as kk:
                    kstep(kk, j, False)
            k.copy(ubc, l0c, [tn1 * 256], [1], [1], cast=self.fp16)
            if ubb is not None:
                k.copy(ubb, k.at(k.gm(bname), 0, k.mul(j, tn1 * 16)), [tn1 * 16], [1], [1])
                k.vec("add", ubc, [ubc, ubb], [tn1, 16], [[256, 1], [256, 1], [16, 1]])
            if act == "relu":
                k.vec("relu", ubc, [ubc], [tn1 * 256], [[1], [1]])
            if M == 1:
                k.copy(k.at(og, 0, k.mul(j, tn1 * 16)), ubc, [tn1, 16], [16, 1], [256, 1])
            else:
                if N % (32 // es):
                    raise PassFailedException(f"{describe_op(op)}: M > 1 needs N a multiple of {32 // es}")
                k.copy(k.at(og, 0, k.mul(j, tn1 * 16)), ubc, [tn1, M, 16], [16, N, 1], [256, 16, 1])

    # -- softmax -------------------------------------------------------------
    def softmax(self, op: g.SoftmaxOp) -> None:
        x = self.values[op.input]
        shape = x.shape
        axis = op.int_("axis", -1) % len(shape)
        if any(d != 1 for d in shape[axis + 1 :]) or math.prod(shape[:axis]) != 1:
            raise PassFailedException(f"{describe_op(op)}: softmax over one row along the last non-unit axis only")
        if x.layout == "NC1HWC0" and (any(x.st.halo) or shape[2] * shape[3] != 1):
            raise PassFailedException(f"{describe_op(op)}: softmax of a spatial NC1HWC0 map")
        n = shape[axis]
        es = self.es
        epb, epr = 32 // es, 256 // es
        npad = -(-n // epb) * epb
        out = self.storage_for(op.output, "ND", "softmax")
        k = self.kernel(op, "softmax", 1)
        ux = k.alloc("ub", npad)
        uw = k.alloc("ub", max(npad, epr))
        ur = k.alloc("ub", epr)
        ub = k.alloc("ub", epb)
        x0 = x.origin(self.c0) if x.st.layout == "NC1HWC0" else 0
        k.copy(ux, k.at(k.gm(x.st.name), x0), [npad], [1], [1])

        def reduce_bcast(kind: str) -> None:
            k.vec("adds", uw, [ux], [npad], [[1], [1]], 0.0)
            k.emit(t.ReduceOp(kind, ur, uw, 1, n, 0))
            k.emit(t.ReduceOp("max", ub, ur, epb, 1, 0))

        reduce_bcast("max")
        k.vec("sub", ux, [ux, ub], [npad // epb, epb], [[epb, 1], [epb, 1], [0, 1]])
        # force_fp16 range scaling: back to true differences before exp, in
        # factors fp16 can hold (what overflows is -inf, and exp(-inf) = 0)
        rest = self.sc(op.input)
        while rest > 1.0:
            f = min(rest, 2.0**15)
            k.vec("muls", ux, [ux], [npad], [[1], [1]], f)
            rest /= f
        k.vec("exp", ux, [ux], [npad], [[1], [1]])
        reduce_bcast("sum")
        k.vec("div", ux, [ux, ub], [npad // epb, epb], [[epb, 1], [epb, 1], [0, 1]])
        k.copy(k.gm(out.st.name), ux, [npad], [1], [1])

    # -- elementwise -------------------------------------------------------------
    def elementwise(self, op: Operation) -> None:
        """Loop fusion on NC1HWC0 maps: per tile (C1 slice, band of rows) load
        each map operand, apply the body (per-channel constants broadcast
        along pixels; scalar constants as immediates), store."""
        out_v = op.results[0]
        shape = g.shape_of(out_v)
        if len(shape) != 4:
            raise PassFailedException(f"{describe_op(op)}: elementwise ops on non-4-D tensors are not lowered yet")
        _, C, H, W = shape
        c0, es = self.c0, self.es
        C1 = -(-C // c0)
        # the body as a list of (kind, result, operands) over "values"
        if isinstance(op, g.FusionOp):
            args = list(op.inputs)
            env = dict(zip(op.body.block.args, args))
            body = [o for o in op.body.block.ops if not isinstance(o, g.YieldOp | g.ConstantOp | g.FillOp)]
            results = list(zip(op.results, op.body.block.last_op.operands))
        elif isinstance(op, g.BatchNormOp):
            scale, bias_, mean, var = (self.value_array(v) for v in op.operands[1:])
            if any(v is None for v in (scale, bias_, mean, var)):
                raise PassFailedException(f"{describe_op(op)}: batch-norm parameters must be constant")
            inv = scale / np.sqrt(var.astype(np.float64) + op.float_("epsilon", 1e-5))
            env = {}
            body = [("mulc", inv.astype(np.float32)), ("addc", ((bias_ - mean * inv) / self.sc(out_v)).astype(np.float32))]
            results = [(out_v, None)]
            args = [op.operands[0]]
        else:
            args = list(op.operands)
            env = {}
            body = [op]
            results = [(out_v, out_v)]
        maps = [a for a in dict.fromkeys(args) if a in self.values and g.shape_of(a) == shape]
        outs = [self.storage_for(r, "NC1HWC0", op.name.split(".")[-1]) for r, _ in results]
        cap = self.config.capacity_bytes["ub"]
        nbuf = len(maps) + len(body) + 1
        toh = max(r for r in range(1, H + 1) if H % r == 0 and 2 * nbuf * r * W * c0 * es <= cap - 4096) if 2 * nbuf * W * c0 * es <= cap - 4096 else 0
        if not toh:
            raise PassFailedException(f"{describe_op(op)}: a row does not fit UB")
        nb = H // toh
        tiles = C1 * nb
        bd = self.cores(tiles)
        k = self.kernel(op, "elementwise", bd)
        n = toh * W * c0
        bufs = {a: k.alloc("ub", n, "NC1HWC0", buffers=2) for a in maps}
        cblk: dict[bytes, tuple[str, SSAValue]] = {}

        def channel_const(arr: np.ndarray) -> SSAValue:
            key = np.ascontiguousarray(arr, np.float32).tobytes()
            if key not in cblk:
                pc = np.zeros(C1 * c0, np.float32)
                pc[:C] = np.broadcast_to(arr.reshape(-1), (C,)) if arr.size in (1, C) else arr.reshape(-1)
                name = self.constant("chan", pc, "ND")
                cblk[key] = (name, k.alloc("ub", c0, "ND", buffers=2))
            return cblk[key][1]

        with k.tiles(tiles, bd, pipeline=True) as tile:
            c1 = k.div(tile, nb)
            band = k.rem(tile, nb)
            for a in maps:
                tv = self.values[a]
                src = k.add(k.mul(c1, tv.c1stride(c0)), k.mul(band, toh * tv.st.wp * c0))
                k.copy(bufs[a], k.at(k.gm(tv.st.name), tv.origin(c0), src), [toh, W * c0], [W * c0, 1], [tv.st.wp * c0, 1])
            dense = [[1], [1], [1]]
            bc = [[c0, 1], [c0, 1], [0, 1]]

            def load_const(arr) -> SSAValue:
                u = channel_const(arr)
                name = cblk[np.ascontiguousarray(arr, np.float32).tobytes()][0]
                k.copy(u, k.at(k.gm(name), 0, k.mul(c1, c0)), [c0], [1], [1])
                return u

            def operand(v):
                if v in env:
                    v = env[v]
                if isinstance(v, tuple):
                    return v
                if v in vals:
                    return ("buf", vals[v])
                arr = self.value_array(v)
                if arr is None:
                    raise PassFailedException(f"{describe_op(op)}: operand is neither a map nor a constant")
                if arr.size == 1:
                    return ("scalar", float(arr.reshape(-1)[0]))
                if arr.size == C:
                    return ("chan", arr)
                raise PassFailedException(f"{describe_op(op)}: broadcast of shape {arr.shape} not lowered")

            vals: dict = {a: bufs[a] for a in maps}
            cur = None
            for item in body:
                if isinstance(item, tuple):  # batch norm
                    kind, arr = item
                    src = cur if cur is not None else bufs[args[0]]
                    dst = k.alloc("ub", n, "NC1HWC0", buffers=2)
                    u = load_const(arr)
                    k.vec("mul" if kind == "mulc" else "add", dst, [src, u], [toh * W, c0], bc)
                    cur = dst
                    continue
                o = item
                dst = k.alloc("ub", n, "NC1HWC0", buffers=2)
                ins = [operand(v) for v in o.operands]
                name = o.name.split(".")[-1]
                if name == "relu":
                    k.vec("relu", dst, [ins[0][1]], [n], [[1], [1]])
                elif name == "identity":
                    k.vec("adds", dst, [ins[0][1]], [n], [[1], [1]], 0.0)
                elif name in ("add", "sub", "mul", "div", "max", "min", "sum"):
                    if name == "sum":
                        name = "add"
                    acc = ins[0]
                    for other in ins[1:]:
                        a_, b_ = acc, other
                        if a_[0] != "buf" and b_[0] == "buf" and name in ("add", "mul", "max", "min"):
                            a_, b_ = b_, a_
                        if a_[0] != "buf":
                            raise PassFailedException(f"{describe_op(op)}: constant-first {name} not lowered")
                        # force_fp16 range scaling: a constant added to (or
                        # compared with) a scaled map is scaled with it
                        cs = self.sc(out_v) if name in ("add", "sub", "max", "min") else 1.0
                        if b_[0] == "buf":
                            k.vec(name, dst, [a_[1], b_[1]], [n], dense)
                        elif b_[0] == "chan":
                            k.vec(name, dst, [a_[1], load_const(np.asarray(b_[1], np.float32) / cs)], [toh * W, c0], bc)
                        else:
                            sv = b_[1] / cs
                            if name == "add":
                                k.vec("adds", dst, [a_[1]], [n], [[1], [1]], sv)
                            elif name == "sub":
                                k.vec("adds", dst, [a_[1]], [n], [[1], [1]], -sv)
                            elif name == "mul":
                                k.vec("muls", dst, [a_[1]], [n], [[1], [1]], sv)
                            elif name == "div":
                                k.vec("muls", dst, [a_[1]], [n], [[1], [1]], 1.0 / sv)
                            elif name == "max":
                                k.vec("maxs", dst, [a_[1]], [n], [[1], [1]], sv)
                            else:
                                k.vec("muls", dst, [a_[1]], [n], [[1], [1]], -1.0)
                                k.vec("maxs", dst, [dst], [n], [[1], [1]], -sv)
                                k.vec("muls", dst, [dst], [n], [[1], [1]], -1.0)
                        acc = ("buf", dst)
                else:
                    raise PassFailedException(f"{describe_op(op)}: {o.name} is not lowered in elementwise kernels")
                vals[o.results[0]] = dst
                cur = dst
            for out, (_, yielded) in zip(outs, results):  # a loop fusion may yield several values
                if yielded is None:
                    final = cur
                elif yielded in env and env[yielded] in bufs:
                    final = bufs[env[yielded]]
                else:
                    final = vals[yielded]
                dsto = k.add(k.mul(c1, out.c1stride(c0)), k.mul(band, toh * out.st.wp * c0))
                k.copy(k.at(k.gm(out.st.name), out.origin(c0), dsto), final, [toh, W * c0], [out.st.wp * c0, 1], [W * c0, 1])


def convert(module: ModuleOp, precision: str = DEFAULT_PRECISION, target="davinci-910",
            calibration=None) -> Stats:
    """Replace `@main` by a tile.program (in place); returns statistics.
    `calibration`: named inputs for force_fp16 range scaling (default: seeded
    standard normal; lowering/fp16_scaling.py)."""
    from target.config import load_target

    config = load_target(target)
    fns = [op for op in module.body.block.ops if isinstance(op, func.FuncOp)]
    if len(fns) != 1:
        raise PassFailedException("convert-graph-to-tile: expected one func.func")
    fn = fns[0]
    low = GraphToTile(fn, precision, config, fn.sym_name.data, calibration)
    prog = low.run()
    prog.attributes["ge.precision_mode"] = StringAttr(precision)
    prog.attributes["ge.transdata"] = IntegerAttr(low.stats.transdata, i64)
    module.body.block.insert_op_before(prog, fn)
    fn.detach()
    fn.erase(safe_erase=False)
    return low.stats


from dataclasses import dataclass as _dc  # noqa: E402


@_dc(frozen=True)
class ConvertGraphToTilePass(ModulePass):
    """Lower the graph function to one tile.kernel per (fused) op."""

    name = "convert-graph-to-tile"
    precision_mode: str = DEFAULT_PRECISION
    target: str = "davinci-910"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        convert(op, self.precision_mode, self.target)
