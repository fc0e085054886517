"""`LoweringContext`: what the patterns of one function share.

The program being built, where every graph value lives (`values`), the GM
storages and constants, the storage plan (planning.py), force_fp16 scales,
fresh names and statistics. Patterns read and extend it; the driver
(`__init__.py`) places the storages in GM at the end (placement.py)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import AnyFloat, ArrayAttr, IntegerAttr, StringAttr, TensorType, f16, f32, i64
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.utils.exceptions import PassFailedException

from gedialects.graph import ops as g
from gedialects.graph.tensors import attr_array, contiguous
from gedialects.location import describe_op
from gedialects.npu.isa import BLOCK_BYTES
from gedialects.tile import ops as t
from gedialects.tile.builder import TileKernelBuilder
from lowering.assign_layouts import format_of
from lowering.fp16_scaling import holds_mask_sentinel, saturate_to_fp16
from lowering.legality import STRUCTURED_FAMILIES, kernel_of

from .planning import CUBE_CHANNELS, StoragePlan
from .precision import check_precision_mode
from .storage import GmStorage, TensorView


def operator_summary(op: Operation) -> dict[str, Attribute]:
    """The graph op a kernel runs, as msprof's op summary names it: `op_type`
    (the op's name without the dialect), `in_shapes`, `in_formats`,
    `out_shapes`, `out_formats` (msprof's ';'-separated lists; formats as
    assign-layouts gave them, weights included)."""

    def shape(v: SSAValue) -> str:
        return ",".join(str(d) for d in g.shape_of(v))

    structured = kernel_of(op) in STRUCTURED_FAMILIES  # they read and write the logical (row-major) order

    def storage_format(v: SSAValue) -> str:
        owner = v.owner
        if not structured and isinstance(owner, Operation) and (f := format_of(owner)) is not None:
            return f
        return "NCHW" if len(g.shape_of(v)) == 4 else "ND"  # a graph input: its logical order

    ins = [v for v in op.operands if isinstance(v.type, TensorType)]
    outs = [v for v in op.results if isinstance(v.type, TensorType)]
    return {
        "op_type": StringAttr(op.name.split(".", 1)[-1]),
        "in_shapes": StringAttr(";".join(shape(v) for v in ins)),
        "in_formats": StringAttr(";".join(storage_format(v) for v in ins)),
        "out_shapes": StringAttr(";".join(shape(v) for v in outs)),
        "out_formats": StringAttr(";".join(storage_format(v) for v in outs)),
    }


@dataclass
class LoweringStats:
    kernels: int = 0
    transdata: int = 0
    ops: dict = field(default_factory=dict)
    """kernels per kind"""

    def count(self, kind: str) -> None:
        self.kernels += 1
        self.ops[kind] = self.ops.get(kind, 0) + 1


def slices_for(channels: int, c0: int) -> int:
    """C1 slices of a map of `channels`, with room for whole 16-channel
    fractals (a cube kernel writes whole fractal columns)."""
    return -(-channels // CUBE_CHANNELS) * CUBE_CHANNELS // c0


class LoweringContext:
    def __init__(self, fn: func.FuncOp, precision: str, config, name: str = "main"):
        check_precision_mode(precision)
        self.fn = fn
        self.config = config
        self.fp16 = precision == "force_fp16"
        self.elem_bytes = 2 if self.fp16 else 4
        self.elem = f16 if self.fp16 else f32
        self.c0 = BLOCK_BYTES // self.elem_bytes
        """channels per C1 slice: one 32-byte block"""
        self.program = t.ProgramOp(name)
        self.storages: list[GmStorage] = []
        self.values: dict[SSAValue, TensorView] = {}
        self.constants: dict[str, np.ndarray] = {}
        self.constant_layouts: dict[str, str] = {}
        """Constants stored in a layout other than ND (by name)."""
        self._identities: dict[int, str] = {}
        self.stats = LoweringStats()
        self.plan = StoragePlan({}, {}, {}, {})
        self.nonnegative: set[SSAValue] = set()
        self.folded: set[Operation] = set()
        """ops lowered as part of another (a channel shuffle folded into a conv)"""
        self.staged: dict[SSAValue, Operation] = {}
        """An elementwise op's result -> the op, computed by the conv reading it as its stage (elementwise.stage_conv)."""
        self.transposed_views: dict[SSAValue, tuple[SSAValue, tuple[int, ...]]] = {}
        """A folded transpose's result -> (its source, perm): products read the source through permuted strides."""
        self.fp16_copies: dict[SSAValue, str] = {}
        """force_fp16: the GM tensor an fp32 graph input the cube reads is cast into, one for all its readers."""
        self.scales: dict[SSAValue, float] = {}
        """force_fp16: stored value = value / scale (fp16_scaling.py)"""
        self.overwrites: dict[str, TensorView] = {}
        """Storage name -> the operand its kernel reads tile by tile, at the places it writes (a conv's
        residual): it may take that operand's storage if that read is its last (placement.py)."""
        self.pieces: dict[SSAValue, list[TensorView]] = {}
        """A map written as channel pieces, each its own GM tensor (slicing.py): value -> the pieces."""
        self.device_memory_limit = 0
        """Bytes the device arena may take (0: no limit): convs whose own operands exceed it are sliced."""
        self.slice_in_place_convs = False
        """Under a limit, count a conv's output even where it may write over its residual (slicing.py)."""
        self._names: set[str] = set()

    # -- names, constants, scales --------------------------------------------
    def fresh_name(self, base: str) -> str:
        base = "".join(c if c.isalnum() or c in "_." else "_" for c in base) or "t"
        name, i = base, 1
        while name in self._names:
            name, i = f"{base}_{i}", i + 1
        self._names.add(name)
        return name

    def add_constant(self, base: str, array: np.ndarray, keep_dtype: bool = False, layout: str = "ND") -> str:
        """A GM constant; floats in the precision mode's type (unless
        keep_dtype), others as they are; `layout` as its tile.tensor
        declares it (FRACTAL_NZ: a packed cube operand). Returns its name."""
        name = self.fresh_name(base)
        array = np.asarray(array)
        if array.dtype.kind == "f" and not keep_dtype:
            array = saturate_to_fp16(array) if self.fp16 else array.astype(np.float32, copy=False)
        self.constants[name] = contiguous(array)
        if layout != "ND":
            self.constant_layouts[name] = layout
        return name

    def identity(self, n: int) -> str:
        """The GM constant of the n x n identity (identity-product
        transposes), one per size in the program."""
        if n not in self._identities:
            self._identities[n] = self.add_constant("identity", np.eye(n, dtype=np.float32))
        return self._identities[n]

    def writes_output_in_its_type(self, v: SSAValue) -> bool:
        """force_fp16: whether a kernel computing the fp32 graph output v
        writes it as fp32, in its true range, into the output's tensor (the
        output's cast kernel folded into it): a structured kernel's result
        (its maps compute in fp32) that owns its storage and that nothing
        but the return reads (directly or through views)."""
        if not self.fp16 or v.type.element_type != f32 or v not in self.plan.outputs:  # type: ignore[attr-defined]
            return False
        if not isinstance(v.owner, Operation) or kernel_of(v.owner) not in STRUCTURED_FAMILIES:
            return False
        if self.plan.aliases.get(v, (v, 0))[0] is not v:
            return False

        def only_returned(value: SSAValue) -> bool:
            return all(isinstance(u.operation, func.ReturnOp)
                       or isinstance(u.operation, g.VIEW_OPS) and only_returned(u.operation.results[0])
                       for u in value.uses)

        return only_returned(v)

    def is_mask_sentinel(self, v: SSAValue) -> bool:
        """v is a float constant holding a mask sentinel (finfo(f32).min):
        a kernel computing with it saturates its fp16 result."""
        value = self.constant_value(v)
        return value is not None and value.dtype.kind == "f" and holds_mask_sentinel(value)

    def scale_of(self, v: SSAValue) -> float:
        """The power of two v is stored divided by (1 outside force_fp16)."""
        return self.scales.get(v, 1.0)

    def constant_value(self, v: SSAValue) -> np.ndarray | None:
        """v's value when a graph constant or fill defines it, else None."""
        op = v.owner
        if isinstance(op, g.ConstantOp):
            return np.asarray(attr_array(op.value))
        if isinstance(op, g.FillOp):  # a read-only zero-stride view: a fill of VGG-19's fc6 shape is 411 MB whole
            return np.broadcast_to(np.float32(op.value.value.data), g.shape_of(op.output))
        return None

    def stored_element(self, storage: GmStorage | None, v: SSAValue) -> Attribute:
        """The element type v is stored in GM with: its own for integers and
        bools, the precision mode's for floats (graph inputs stay fp32)."""
        if storage is not None and storage.ttype is not None:
            return storage.ttype.element_type
        elem = v.type.element_type  # type: ignore[attr-defined]
        return self.elem if isinstance(elem, AnyFloat) else elem

    # -- kernels -------------------------------------------------------------
    def cores_for(self, tiles: int) -> int:
        """Cores to split `tiles` over."""
        return max(1, min(tiles, self.config.cube_cores))

    def new_kernel(self, op: Operation | None, kind: str, block_dim: int) -> TileKernelBuilder:
        """A tile.kernel appended to the program, named after the graph op it lowers."""
        name = self.fresh_name(f"k{self.stats.kernels}_{kind}")
        kernel = t.KernelOp(name, max(1, block_dim))
        kernel.attributes["kind"] = StringAttr(kind)
        absorbed = op.attributes.get("absorbed") or op.properties.get("absorbed") if op is not None else None
        where = describe_op(op) if op is not None else kind
        kernel.attributes["source"] = StringAttr(where)
        if isinstance(absorbed, ArrayAttr):
            kernel.attributes["absorbed"] = absorbed
        if op is not None and op.results and self.scale_of(op.results[0]) != 1.0:
            kernel.attributes["scale_exp"] = IntegerAttr(int(math.log2(self.scale_of(op.results[0]))), i64)
        if op is not None:  # what the profile's op summary shows (msprof's OP Type and shapes)
            kernel.attributes.update(operator_summary(op))
        self.program.body.block.add_op(kernel)
        self.stats.count(kind)
        return TileKernelBuilder(kernel, self.elem)

    # -- storage -------------------------------------------------------------
    def storage_for(self, v: SSAValue, layout: str, name: str) -> TensorView:
        """The view of a value about to be produced (allocating its root's storage)."""
        if v in self.values:
            return self.values[v]
        plan = self.plan
        root, first_slice = plan.aliases.get(v, (v, 0))
        if root not in self.values:
            shape = g.shape_of(root)
            st = GmStorage(plan.outputs.get(root) or self.fresh_name(name), shape=shape)
            if root in plan.outputs:
                st.kind = "output"
            if layout == "NC1HWC0" and len(shape) == 4:
                n, c, h, w = shape
                if n != 1:
                    raise PassFailedException(f"{name}: batch {n}: only batch 1 is lowered")
                st.layout = "NC1HWC0"
                st.slices = slices_for(c, self.c0)
                st.h, st.w = h, w
                st.halo = plan.halos.get(root, [0, 0, 0, 0])
                if st.kind == "output" and (h * w != 1 or any(st.halo) or c % self.c0 or self.fp16):
                    st.kind = "internal"  # finish_outputs adds an NC1HWC0 -> NCHW transdata
                    st.name = self.fresh_name(name)
            else:
                st.layout = "ND"
                st.elems = math.prod(shape)
                if st.kind == "output" and self.fp16 and self.writes_output_in_its_type(root):
                    st.ttype = root.type
                elif st.kind == "output" and self.fp16:
                    st.kind = "internal"  # finish_outputs adds an fp16 -> fp32 cast kernel
                    st.name = self.fresh_name(name)
            self.storages.append(st)
            self.values[root] = TensorView(st, 0, layout if layout != "FLAT_NC1HWC0" else "NC1HWC0", shape)
        root_view = self.values[root]
        view = TensorView(root_view.storage, first_slice, root_view.layout, g.shape_of(v))
        self.values[v] = view
        return view

    def temp_rows(self, shape: tuple, name: str) -> GmStorage:
        """An internal row-major (ND) tensor that no graph value names."""
        st = GmStorage(self.fresh_name(name), layout="ND", elems=math.prod(shape), shape=tuple(shape))
        self.storages.append(st)
        return st

    def temp_map(self, shape: tuple, name: str) -> TensorView:
        """An internal NC1HWC0 map (no halo) that no graph value names."""
        _, c, h, w = shape
        st = GmStorage(self.fresh_name(name), shape=tuple(shape), slices=slices_for(c, self.c0), h=h, w=w)
        self.storages.append(st)
        return TensorView(st, 0, "NC1HWC0", tuple(shape))
