"""assign-layouts: a storage format for every tensor of the graph function,
and an explicit `graph.transdata` wherever two formats meet.

The formats (docs/LOWERING.md, "Layouts"):

* NCHW / ND -- the logical row-major order (graph inputs and outputs, gemm
  and softmax operands);
* NC1HWC0 -- 4-D feature maps around the cube and vector kernels;
* FLAT_NC1HWC0 -- a reshape/flatten of an NC1HWC0 map, read in the map's
  byte order (a gemm absorbs the order into its weight rows at compile time);
* FRACTAL_Z -- constant cube weights (conv, gemm), packed at compile time.

How (in the style of XLA's layout assignment): the heavy ops anchor the
formats -- each op states which formats it can read each operand in and
which format it writes (`accepted`, `produced`; exactly what
convert-graph-to-tile lowers). Views take their operand's format, or a
flattened reading of it. Walking the function in order, an operand held in
a format its consumer cannot read gets one transdata (shared by every
consumer that wants the same format, placed after the producer); graph
results go back to their logical order unless the bytes already are in it
(an NC1HWC0 map with H = W = 1: the transdata is folded away). Inverse pairs -- from transdata ops already in the input -- cancel
(graph-canonicalize's CancelTransData). Every op result is annotated with
`ge.format`; convert-graph-to-tile lowers each transdata to a kernel and
checks that what it builds agrees with the annotations.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriteWalker

from gedialects.graph import ops as g
from gedialects.graph.interpreter import input_names
from gedialects.graph.transforms.canonicalize import CancelTransData
from gedialects.instrumentation import statistic
from gedialects.location import describe_op, name_loc, node_name
from lowering.legality import (AI_CORE, AI_CPU, MAP_ELEMENTWISE, MAP_OPS, STRUCTURED_FAMILIES, VECTOR_KERNEL,
                               batch_slice, engine_of, kernel_of, map_transpose)

log = logging.getLogger("gedialects.layouts")

FORMAT_ATTR = "ge.format"

CUBE_WEIGHT = {g.ConvOp: 1, g.GemmOp: 1, g.MatMulOp: 1}
"""Operand index of the constant weight the cube reads in FRACTAL_Z."""


def origin(v: SSAValue) -> str:
    """The logical (row-major) format of a value."""
    return "NCHW" if len(g.shape_of(v)) == 4 else "ND"


def is_constant(v: SSAValue) -> bool:
    return isinstance(v.owner, g.ConstantOp | g.FillOp)


def format_of(op: Operation) -> str | None:
    """The `ge.format` assign-layouts gave op's results (None: not annotated)."""
    attr = op.attributes.get(FORMAT_ATTR)
    return attr.data if isinstance(attr, StringAttr) else None


def is_annotated(fn: func.FuncOp) -> bool:
    return any(FORMAT_ATTR in op.attributes for op in fn.body.block.ops)


def _channel_concat(op: Operation) -> bool:
    return isinstance(op, g.ConcatOp) and len(g.shape_of(op.output)) == 4 and op.int_("axis", 0) % 4 == 1


def _spatial_one(v: SSAValue) -> bool:
    s = g.shape_of(v)
    return len(s) == 4 and s[2] * s[3] == 1


@dataclass
class LayoutReport:
    inserted: list[str] = field(default_factory=list)
    folded: list[str] = field(default_factory=list)
    flattened: list[str] = field(default_factory=list)
    cancelled: int = 0


class LayoutAssigner:
    def __init__(self, fn: func.FuncOp):
        self.fn = fn
        self.block: Block = fn.body.block
        self.fmt: dict[SSAValue, str] = {}
        self.flat_map: dict[SSAValue, tuple[int, ...]] = {}
        """FLAT_NC1HWC0 value -> shape of the NC1HWC0 map whose bytes it reads."""
        self.converted: dict[tuple[SSAValue, str], SSAValue] = {}
        self.report = LayoutReport()

    # -- what each op reads and writes ---------------------------------------
    def accepted(self, op: Operation, i: int, v: SSAValue) -> tuple[str, ...] | None:
        """The formats op can read operand i in, preferred first (None: any)."""
        if engine_of(op) == AI_CPU or kernel_of(op) in STRUCTURED_FAMILIES:  # both read the logical order
            if is_constant(v):
                return None
            if kernel_of(op) == VECTOR_KERNEL and _spatial_one(v):
                return (origin(v), "NC1HWC0")  # [1, C, 1, 1] in NC1HWC0 is C contiguous values
            return (origin(v),)
        if is_constant(v) or isinstance(op, g.VIEW_OPS):
            return None
        if isinstance(op, g.TransDataOp):
            return (op.src_format.data,)
        if isinstance(op, g.SpaceToDepthOp):
            return ("NCHW",)  # the input transdata's job, folding cells into channels on the way
        if batch_slice(op) is not None:
            return (origin(v),)  # one image of a batch, read in its logical order by its input transdata
        if isinstance(op, MAP_OPS) or _channel_concat(op) or isinstance(op, g.SliceOp | g.SplitOp):
            return ("NC1HWC0",)  # (a slice or split here is a channel view: structured ones returned above)
        if isinstance(op, MAP_ELEMENTWISE):
            out = op.results[0]
            if len(g.shape_of(out)) == 4:
                # per-channel and scalar operands are broadcast by the kernel;
                # a computed [1, C, 1, 1] gate is read one C0 block per slice
                gate = tuple(g.shape_of(v)) == (1, g.shape_of(out)[1], 1, 1)
                return ("NC1HWC0",) if g.shape_of(v) == g.shape_of(out) or gate else None
            return (origin(v),)
        if isinstance(op, g.GemmOp | g.MatMulOp) and i == 0:
            return ("ND", "FLAT_NC1HWC0")
        if isinstance(op, g.TransposeOp):
            if (mt := map_transpose(op)) is not None and mt.kind == "to_rows":
                return ("NC1HWC0", "FLAT_NC1HWC0")  # the map, or its [1, C, H*W] view
            return (origin(v), "FLAT_NC1HWC0")  # rows to a map, or a channel shuffle of a map's view
        return (origin(v),)

    def produced(self, op: Operation, res: SSAValue) -> str:
        if engine_of(op) == AI_CPU or kernel_of(op) in STRUCTURED_FAMILIES:
            return origin(res)
        if isinstance(op, g.TransDataOp):
            return op.dst_format.data
        if isinstance(op, g.SpaceToDepthOp):
            return "NC1HWC0"
        if isinstance(op, MAP_OPS) or _channel_concat(op) or isinstance(op, g.SliceOp | g.SplitOp):
            return "NC1HWC0"
        if isinstance(op, MAP_ELEMENTWISE) and len(g.shape_of(res)) == 4:
            return "NC1HWC0"
        if (mt := map_transpose(op)) is not None:
            if mt.kind == "to_rows":
                return origin(res)
            if len(g.shape_of(res)) == 4:
                return "NC1HWC0"
            self.flat_map[res] = mt.map_shape  # [1, C, H*W]: its views read the map
            return "FLAT_NC1HWC0"
        if isinstance(op, g.TransposeOp) and self.fmt.get(op.input) == "FLAT_NC1HWC0":
            self.flat_map[res] = self.flat_map[op.input]
            return "FLAT_NC1HWC0"
        if isinstance(op, g.VIEW_OPS):
            return self.view_format(op.operands[0], res)
        return origin(res)

    def view_format(self, src: SSAValue, res: SSAValue) -> str:
        """A view moves no bytes: it reads its operand's storage, as a map
        again, as a flat row-major vector, or as a flattened map."""
        f = self.fmt[src]
        shape = tuple(g.shape_of(res))
        if f == "NC1HWC0":
            if shape == tuple(g.shape_of(src)):
                return "NC1HWC0"
            if _spatial_one(src):
                return origin(res)  # C contiguous values: byte-identical to ND
            self.flat_map[res] = tuple(g.shape_of(src))
            return "FLAT_NC1HWC0"
        if f == "FLAT_NC1HWC0":
            if shape == self.flat_map[src]:
                return "NC1HWC0"
            self.flat_map[res] = self.flat_map[src]
            return "FLAT_NC1HWC0"
        return origin(res)

    # -- rewriting -------------------------------------------------------------
    def convert(self, v: SSAValue, dst: str, why: Operation, i: int) -> SSAValue:
        """v in format dst: one transdata per (value, format), after v's producer."""
        key = (v, dst)
        if key in self.converted:
            return self.converted[key]
        src = self.fmt[v]
        producer = v.owner
        base = node_name(producer) if isinstance(producer, Operation) else input_names(self.fn)[v.index]
        td = g.TransDataOp.build(
            operands=[v], result_types=[v.type],
            properties={"src_format": StringAttr(src), "dst_format": StringAttr(dst)},
        )
        td.location = name_loc(f"{base}_transdata_{dst.lower()}")
        td.attributes[FORMAT_ATTR] = StringAttr(dst)
        if isinstance(producer, Operation):
            self.block.insert_op_after(td, producer)
        else:
            self.block.insert_op_before(td, self.block.first_op)
        self.fmt[td.output] = dst
        self.converted[key] = td.output
        self.report.inserted.append(f"{src} -> {dst} before {describe_op(why)}")
        log.info(f"'{why.name}' op assign-layouts: operand #{i} {src} -> {dst} (graph.transdata)", extra={"op": why})
        return td.output

    def byte_identical_output(self, v: SSAValue) -> bool:
        """An NC1HWC0 map that already is its NCHW bytes: H = W = 1 (its C
        values are contiguous, the padding lanes follow them), and no
        consumer that gives it a halo or shares its storage (padded
        conv/pool, concat)."""
        if not _spatial_one(v) or g.shape_of(v)[0] != 1:
            return False
        for use in v.uses:
            user = use.operation
            if _channel_concat(user):
                return False
            if isinstance(user, g.ConvOp | g.MaxPoolOp | g.AvgPoolOp) and any(user.ints("pads", ())):
                return False
        return True

    def run(self) -> LayoutReport:
        for arg in self.fn.args:
            self.fmt[arg] = origin(arg)
        for op in list(self.block.ops):
            if isinstance(op, func.ReturnOp):
                self.outputs(op)
                continue
            for i, v in enumerate(op.operands):
                want = self.accepted(op, i, v)
                if want is not None and not any(g.same_format(self.fmt[v], f) for f in want):
                    op.operands[i] = self.convert(v, want[0], op, i)
            for res in op.results:
                self.fmt[res] = self.produced(op, res)
            if op.results and not isinstance(op, g.ConstantOp | g.FillOp):
                op.attributes[FORMAT_ATTR] = StringAttr(self.fmt[op.results[0]])
            if isinstance(op, g.VIEW_OPS) and self.fmt[op.results[0]] == "FLAT_NC1HWC0":
                self.report.flattened.append(describe_op(op))
                log.info(f"'{op.name}' op assign-layouts: reads the NC1HWC0 map in place (FLAT_NC1HWC0), "
                         "no transdata", extra={"op": op})
        self.weights()
        return self.report

    def outputs(self, ret: func.ReturnOp) -> None:
        for i, v in enumerate(ret.operands):
            f, want = self.fmt[v], origin(v)
            if g.same_format(f, want):
                continue
            if f == "NC1HWC0" and self.byte_identical_output(v):
                text = f"{describe_op(v.owner)}: NC1HWC0 of {list(g.shape_of(v))} is byte-identical to NCHW"
                self.report.folded.append(text)
                log.info(f"'{v.owner.name}' op assign-layouts: output transdata folded (byte-identical to NCHW)",
                         extra={"op": v.owner})
                continue
            ret.operands[i] = self.convert(v, want, ret, i)

    def weights(self) -> None:
        """Constants that only the cube reads, as weights, are FRACTAL_Z."""
        for op in self.block.ops:
            if not isinstance(op, g.ConstantOp | g.FillOp):
                continue
            uses = list(op.output.uses)
            cube = uses and all(
                CUBE_WEIGHT.get(type(u.operation)) == u.index and engine_of(u.operation) == AI_CORE for u in uses
            )
            op.attributes[FORMAT_ATTR] = StringAttr("FRACTAL_Z" if cube else origin(op.output))


def assign_layouts(fn: func.FuncOp) -> LayoutReport:
    """Annotate fn's values with storage formats and insert transdata ops."""
    report = LayoutAssigner(fn).run()
    count = lambda: sum(isinstance(op, g.TransDataOp) for op in fn.body.block.ops)  # noqa: E731
    before = count()
    PatternRewriteWalker(CancelTransData()).rewrite_region(fn.body)
    report.cancelled = before - count()
    statistic("transdata-inserted", len(report.inserted), "graph.transdata inserted where formats meet")
    statistic("transdata-cancelled", report.cancelled, "inverse transdata pairs cancelled")
    statistic("output-transdata-folded", len(report.folded), "output transdata byte-identical to NCHW")
    statistic("views-read-in-place", len(report.flattened), "flattened NC1HWC0 maps read in place")
    log.info(
        "assign-layouts: %d transdata inserted, %d cancelled, %d output transdata folded, "
        "%d flattened views read in place",
        len(report.inserted), report.cancelled, len(report.folded), len(report.flattened),
    )
    return report


@dataclass(frozen=True)
class AssignLayoutsPass(ModulePass):
    """Give every tensor a storage format (NCHW/ND, NC1HWC0, FLAT_NC1HWC0,
    FRACTAL_Z) anchored at the ops that need one, insert graph.transdata where
    formats meet, fold byte-identical ones and cancel inverse pairs."""

    name = "assign-layouts"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in op.body.block.ops:
            if isinstance(fn, func.FuncOp) and not fn.is_declaration:
                assign_layouts(fn)
