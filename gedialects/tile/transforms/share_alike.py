"""tile-share-alike-kernels: kernels that differ only in the GM tensors they
access share one expansion, one translation and one npu body.

A network repeats its layers: densenet121's dense blocks run the same 3x3
conv and the same split-K sum kernel a dozen times each, writing into one
concat buffer at different channels; ResNet-50's stages repeat their
bottlenecks. Such kernels expand (tile-expand-structured) and translate
(convert-tile-to-npu) into the same code but for the GM addresses: half of
densenet121's and ResNet-50's npu ops. This pass, run after the tilings are
chosen and before the expansion, finds them: each tiled kernel gets a
signature -- its ops, their properties and attributes, its own attributes
but the informational ones, and the type and kind of each GM tensor it
accesses, with the tensors named by order of first use and each tensor's
map-view origins counted from its first one. A kernel whose signature an
earlier kernel had is marked `alike = "<that kernel>"` with
`alike_tensors = {its tensor: [this kernel's tensor, origin shift in
elements]}`, and keeps its structured body (what tile-assign-streams reads
its GM accesses from). tile-expand-structured leaves it so, and
convert-tile-to-npu makes it `npu.kernel @k alike @first moves {tensor =
bytes}`: the earlier kernel's code, every GM pointer (which names its
tensor) moved by its tensor's difference of base address and origin
(lowering/tile_to_npu.py); the assembler builds its code so. That is the
code a lowering of its own would have built, since a kernel's code depends
on a tensor's address and origin only through their sum
(tests/unit/test_share_alike.py compares the two programs)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, IntegerAttr, ModuleOp, StringAttr, i64
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.passes import ModulePass

from gedialects.instrumentation import statistic
from gedialects.tile import ops as t
from gedialects.tile import structured as st
from gedialects.tile.conv import ConvOp, MapViewAttr
from gedialects.tile.elementwise import ElementwiseOp
from gedialects.tile.map_kernels import map_kernel_op
from gedialects.walk import outermost

ALIKE_ATTR = "alike"
"""On a kernel whose code is an earlier kernel's but for its GM tensors: that kernel's name."""
ALIKE_TENSORS_ATTR = "alike_tensors"
"""{the earlier kernel's tensor: [this kernel's tensor, the origin shift in elements]}."""
INFORMATIONAL = frozenset(("source", "absorbed", "op_type", "in_shapes", "in_formats", "out_shapes", "out_formats",
                           "scale_exp"))
"""Kernel attributes that say what a kernel computes for the profile (and force_fp16's scale it was
built with, already in its constants): not part of its code."""


VIEW_PROPERTIES = frozenset(("input_views", "output_view", "residual_view", "stage_views", "output_views"))
"""The properties `view_operands` reads the views of a conv or map elementwise op from."""


def view_operands(op: Operation) -> list[tuple[SSAValue, MapViewAttr]]:
    """The GM operands `op` reads or writes through a map view (each view's
    origin is where the operand's map starts), for the ops whose code
    depends on an origin only through the view's start address."""
    if isinstance(op, ConvOp):
        pairs = list(zip(op.inputs, op.views())) + [(op.output, op.output_view)]
        if op.residual is not None and op.residual_view is not None:
            pairs.append((op.residual, op.residual_view))
        return pairs + list(zip(op.stage_inputs, op.stage_input_views()))  # type: ignore[arg-type]
    if isinstance(op, ElementwiseOp):
        return list(zip(op.inputs, op.views())) + list(zip(op.outputs, op.out_views()))
    return []


class _Signature:
    """A kernel's signature (`key`), its GM tensors' positions by first use
    (`position`) and the origin of each view-only tensor's first view
    (`first_origin`)."""

    def __init__(self, kernel: t.KernelOp, tensor_ops: dict[str, t.TensorOp]):
        self.tensor_ops = tensor_ops
        self.position: dict[str, int] = {}
        self.first_origin: dict[str, int] = {}
        self.values: dict[SSAValue, int] = {}
        self.parts: list = [tuple(sorted((name, value) for name, value in kernel.attributes.items()
                                          if name not in INFORMATIONAL)),
                            tuple(sorted((name, value) for name, value in kernel.properties.items()
                                         if name != "sym_name"))]
        self.view_only = self._view_only(kernel)
        self.block(kernel.body.block)

    @staticmethod
    def _view_only(kernel: t.KernelOp) -> set[str]:
        """GM tensors every use of which goes through a map view (their origins may shift):
        each of their tile.gm references is an operand only where it has a view."""
        view_uses: dict[SSAValue, int] = {}
        for op in kernel.walk():
            for v, _ in view_operands(op):
                view_uses[v] = view_uses.get(v, 0) + 1
        names: dict[str, bool] = {}
        for op in kernel.walk():
            if isinstance(op, t.GmOp):
                name = op.tensor.data
                names[name] = names.get(name, True) and view_uses.get(op.result, 0) == sum(1 for _ in op.result.uses)
            elif isinstance(op, st.LoadOp | st.GatherOp | st.StoreOp):
                names[op.tensor.data] = False
        return {name for name, only in names.items() if only}

    @property
    def key(self) -> tuple:
        return tuple(self.parts)

    def tensor(self, name: str) -> tuple:
        """A GM tensor as the signature knows it: its position, type and kind."""
        if name not in self.position:
            self.position[name] = len(self.position)
            tensor = self.tensor_ops.get(name)
            self.parts.append(("tensor", None if tensor is None else (tensor.type, tensor.kind, tensor.layout)))
        return ("tensor", self.position[name])

    def value(self, v: SSAValue) -> int:
        return self.values.setdefault(v, len(self.values))

    def block(self, block: Block) -> None:
        self.parts.append(("block", tuple((self.value(a), a.type) for a in block.args)))
        for op in block.ops:
            self.op(op)

    def op(self, op: Operation) -> None:
        pairs = view_operands(op)
        skipped = VIEW_PROPERTIES if pairs else frozenset()
        props = tuple(sorted((name, self.attribute(name, value)) for name, value in op.properties.items()
                             if name not in skipped))
        attrs = tuple(sorted((name, self.attribute(name, value)) for name, value in op.attributes.items()))
        views = tuple(self.view(v, view) for v, view in pairs)  # by operand, in view_operands' order
        self.parts.append((op.name, props, attrs, views, tuple(self.value(v) for v in op.operands),
                           tuple(r.type for r in op.results), len(op.regions)))
        for r in op.results:
            self.value(r)
        for region in op.regions:
            for block in region.blocks:
                self.block(block)

    def attribute(self, name: str, value: Attribute):
        if name == "tensor" and isinstance(value, StringAttr):
            return self.tensor(value.data)
        return value

    def view(self, operand: SSAValue, view: MapViewAttr):
        """A view of a tensor whose every use goes through a view: its origin
        from the tensor's first view's (any other view as it is)."""
        gm = t.gm_tensor_of(operand)
        if gm is None or gm not in self.view_only:
            return view
        origin = view.origin.data - self.first_origin.setdefault(gm, view.origin.data)
        return ("view", self.tensor(gm), view.dims, origin, view.slice_stride.data, view.padded_w.data)


def signature(kernel: t.KernelOp, tensor_ops: dict[str, t.TensorOp]) -> tuple[tuple, list[str], dict[str, int]]:
    """(the kernel's signature, its GM tensors in order of first use, the origin of each one's first view)."""
    sig = _Signature(kernel, tensor_ops)
    return sig.key, list(sig.position), sig.first_origin


def _expanded_here(kernel: t.KernelOp) -> bool:
    """A kernel tile-expand-structured expands: a map kernel or a tiled structured one."""
    if map_kernel_op(kernel) is not None:
        return True
    return st.is_structured(kernel) and isinstance(kernel.attributes.get(st.TILING_ATTR), st.TilingAttr)


def share_alike_kernels(prog: t.ProgramOp) -> int:
    """Mark the kernels of `prog` whose code an earlier kernel's is but for their GM tensors; returns how many."""
    tensor_ops = {op.tensor_name.data: op for op in prog.body.block.ops if isinstance(op, t.TensorOp)}
    first: dict[tuple, tuple[str, list[str], dict[str, int]]] = {}
    marked = 0
    for kernel in prog.body.block.ops:
        if not isinstance(kernel, t.KernelOp) or ALIKE_ATTR in kernel.attributes or not _expanded_here(kernel):
            continue
        key, tensors, origins = signature(kernel, tensor_ops)
        earlier = first.get(key)
        if earlier is None:
            first[key] = (kernel.sym_name.data, tensors, origins)
            continue
        name, earlier_tensors, earlier_origins = earlier
        kernel.attributes[ALIKE_ATTR] = StringAttr(name)
        kernel.attributes[ALIKE_TENSORS_ATTR] = DictionaryAttr({
            theirs: ArrayAttr([StringAttr(ours),
                               IntegerAttr(origins.get(ours, 0) - earlier_origins.get(theirs, 0), i64)])
            for theirs, ours in zip(earlier_tensors, tensors)})
        marked += 1
    return marked


@dataclass(frozen=True)
class TileShareAlikeKernelsPass(ModulePass):
    """Mark kernels that differ from an earlier one only in their GM tensors (`alike`): they share its expansion and translation."""

    name = "tile-share-alike-kernels"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for prog in outermost(op, t.ProgramOp):
            statistic("kernels-alike", share_alike_kernels(prog), "kernels that take an earlier kernel's code")
