"""The npu dialect: instructions of a DaVinci-like AI core, and programs of kernels.

Two levels of ops live here.

* Program structure (`npu.program`, `npu.input`, `npu.output`, `npu.constant`,
  `npu.kernel`, `npu.launch`, `npu.stream_record`, `npu.stream_wait`,
  `npu.aicpu`, `npu.memcpy`): one flat GM arena per program (and optionally a
  host-memory buffer), named tensors and constant blobs at GM offsets, kernels,
  and the ordered list of launches, AI-CPU tasks and host copies on streams.
* Kernel bodies: pointers (`npu.ptr`, a byte address in one memory space, the
  space being part of its type `!npu.ptr<ub>`), the block index, and
  instructions. Scalar math and loops reuse `arith` (on `index`) and `scf.for`,
  so standard folding works and a compiler needs no new loop op.

Every instruction declares the pipe it runs on (`pipe()`, from a class
attribute or, for `npu.dma` and the flags, from its properties) and puts its
written operand first, so sync analysis needs no table of op names.
"""

from __future__ import annotations

import abc
import math
from collections.abc import Mapping, Sequence
from functools import lru_cache
from itertools import pairwise
from typing import ClassVar

from xdsl.dialects.builtin import (
    I64,
    AnyFloat,
    IntegerType,
    ArrayAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    DictionaryAttr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    Signedness,
    StringAttr,
    SymbolNameConstraint,
    SymbolRefAttr,
    TensorType,
    UnitAttr,
    f64,
    i64,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import (
    Attribute,
    Dialect,
    Operation,
    ParametrizedAttribute,
    Region,
    SpacedOpaqueSyntaxAttribute,
    SSAValue,
    TypeAttribute,
)
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import (
    HasAncestor,
    HasParent,
    IsolatedFromAbove,
    IsTerminator,
    NoTerminator,
    Pure,
    SymbolOpInterface,
    SymbolTable,
)
from xdsl.utils.exceptions import VerifyException

from gedialects.npu.isa import (
    ALIGNMENT,
    BLOCK_BYTES,
    DMA_PATHS,
    DTYPE_BYTES,
    ELEM_BYTES,
    FRACTAL,
    INT_BYTES,
    MAX_NBURST,
    MAX_REPEAT,
    MAX_STRIDE,
    NUM_EVENTS,
    PAD_PATHS,
    REPEAT_BYTES,
    MemSpace,
    Pipe,
    padded_burst,
)
from gedialects.npu.syntax import (
    Field,
    FieldValue,
    KeywordSyntaxOp,
    dtype_attr,
    dtype_name,
    i64_attr,
    operand_names,
)
from gedialects.npu.vector_ops import (
    FAMILIES,
    VECTOR_SPECS,
    Family,
    FamilySpec,
    VectorSpec,
    contiguous_span,
    strided_span,
)

# ---------------------------------------------------------------------------
# Attributes and types
# ---------------------------------------------------------------------------


@irdl_attr_definition
class PipeAttr(EnumAttribute[Pipe], SpacedOpaqueSyntaxAttribute):
    """A pipe of the AI core: s, v, m, mte1, mte2, mte3 (or all)."""

    name = "npu.pipe"


@irdl_attr_definition
class MemSpaceAttr(EnumAttribute[MemSpace], SpacedOpaqueSyntaxAttribute):
    """A memory space: gm, l1, l0a, l0b, l0c, ub."""

    name = "npu.space"


@irdl_attr_definition
class PtrType(ParametrizedAttribute, TypeAttribute):
    """A byte address in one memory space, e.g. `!npu.ptr<ub>`."""

    name = "npu.ptr"

    space: MemSpaceAttr

    def __init__(self, space: MemSpace | MemSpaceAttr | str):
        if not isinstance(space, MemSpaceAttr):
            space = MemSpaceAttr(MemSpace(space))
        super().__init__(space)

    @property
    def mem_space(self) -> MemSpace:
        return self.space.data

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string(self.space.data.value)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> tuple[MemSpaceAttr]:
        with parser.in_angle_brackets():
            return (MemSpaceAttr(parser.parse_str_enum(MemSpace)),)


def _space_of(value: SSAValue) -> MemSpace | None:
    return value.type.mem_space if isinstance(value.type, PtrType) else None


# ---------------------------------------------------------------------------
# Instructions: common base
# ---------------------------------------------------------------------------


class NpuInstruction(KeywordSyntaxOp, abc.ABC):
    """An instruction the scalar unit issues into one pipe's queue.

    Subclasses set `PIPE` (or override `pipe()`), and `SPACES`: for each
    pointer operand in order, the memory spaces it may point into. Operand 0 is
    the one written (if any)."""

    PIPE: ClassVar[Pipe]
    SPACES: ClassVar[tuple[frozenset[MemSpace], ...]] = ()

    def __init__(self, *, operands: Sequence[SSAValue | Operation] = (), properties: Mapping[str, Attribute]):
        # IRDL's constructor minus its argument processing: an instruction has
        # single pointer operands, properties and nothing else, and a program
        # ~10^5 of them (the verifier still checks every one)
        Operation.__init__(self, operands=[o.results[0] if isinstance(o, Operation) else o for o in operands],
                           properties=properties)

    def pipe(self) -> Pipe:
        return self.PIPE

    def verify_(self) -> None:
        names = operand_names(self)
        for name, value, allowed in zip(names, self.operands, self.SPACES):
            space = _space_of(value)
            if space is None:
                raise VerifyException(
                    f"{self.name}: operand '{name}' must be an !npu.ptr, got {value.type}"
                )
            if space not in allowed:
                expected = " or ".join(sorted(s.value for s in allowed))
                raise VerifyException(
                    f"{self.name}: operand '{name}' must point into {expected}, "
                    f"got {space.value}"
                )
        self.verify_fields()

    def verify_fields(self) -> None:
        """Range checks of the fields; overridden per instruction family."""


def _ub() -> frozenset[MemSpace]:
    return frozenset({MemSpace.UB})


# ---------------------------------------------------------------------------
# Data movement
# ---------------------------------------------------------------------------


@irdl_op_definition
class DmaOp(NpuInstruction):
    """Copy `nburst` bursts of `len` bytes from `src` to `dst`.

    After each burst the source skips `src_gap` bytes and the destination
    `dst_gap` bytes, so one instruction can gather a column panel or scatter a
    tile into a larger matrix (ND <-> fractal layouts on the fly). The pipe is
    written explicitly and must be the one the hardware uses for this path
    (GM->L1/UB: mte2, L1->L0A/L0B/UB: mte1, UB->GM/L1: mte3, L0C->UB and UB->UB:
    v). With `cast_f16` (L0C->UB only) fp32 accumulators are converted to fp16
    on the way: `len` and `src_gap` count source bytes, `dst_gap` destination
    bytes. With `pad` (GM<->UB, Ascend C's DataCopyPad, and GM->L1, the nd2nz
    load) `len` need not be whole 32-byte blocks: on the on-chip side each
    burst takes whole blocks (a load zero-fills the rest of its last block)
    and the gap counts from there; GM sees exactly `len` bytes per burst."""

    name = "npu.dma"
    HEAD: ClassVar = (("pipe", "pipe"),)
    FIELDS: ClassVar = (
        Field("nburst", default=1),
        Field("len"),
        Field("src_gap", default=0),
        Field("dst_gap", default=0),
        Field("cast_f16", "flag"),
        Field("pad", "flag"),
    )
    SPACES: ClassVar = (frozenset(MemSpace), frozenset(MemSpace))

    dst = operand_def(PtrType)
    src = operand_def(PtrType)
    pipe_ = prop_def(PipeAttr, prop_name="pipe")
    nburst = prop_def(IntegerAttr[I64])
    len = prop_def(IntegerAttr[I64])
    src_gap = prop_def(IntegerAttr[I64])
    dst_gap = prop_def(IntegerAttr[I64])
    cast_f16 = opt_prop_def(UnitAttr)
    pad = opt_prop_def(UnitAttr)

    def __init__(
        self,
        pipe: Pipe | str,
        dst: SSAValue | Operation,
        src: SSAValue | Operation,
        *,
        len: int,
        nburst: int = 1,
        src_gap: int = 0,
        dst_gap: int = 0,
        cast_f16: bool = False,
        pad: bool = False,
    ):
        head = {"pipe": PipeAttr(Pipe(pipe))}
        fields = {
            "nburst": nburst,
            "len": len,
            "src_gap": src_gap,
            "dst_gap": dst_gap,
            "cast_f16": cast_f16,
            "pad": pad,
        }
        super().__init__(
            operands=[dst, src], properties=self.build_properties(head, fields)
        )

    def pipe(self) -> Pipe:
        return self.pipe_.data

    @property
    def src_space(self) -> MemSpace:
        return self.src.type.mem_space  # type: ignore[attr-defined]

    @property
    def dst_space(self) -> MemSpace:
        return self.dst.type.mem_space  # type: ignore[attr-defined]

    def verify_fields(self) -> None:
        src, dst, pipe = self.src_space, self.dst_space, self.pipe()
        expected = DMA_PATHS.get((src, dst))
        if expected is None:
            paths = ", ".join(f"{s.value}->{d.value}" for s, d in DMA_PATHS)
            raise VerifyException(
                f"npu.dma: no DMA path moves {src.value} -> {dst.value} "
                f"(paths: {paths})"
            )
        if pipe != expected:
            raise VerifyException(
                f"npu.dma: {src.value} -> {dst.value} moves on {expected.value}, "
                f"not {pipe.value}"
            )
        self.check_range("nburst", 1, MAX_NBURST)
        length = self.check_range("len", 1, None)
        self.check_range("src_gap", 0, None)
        self.check_range("dst_gap", 0, None)
        cast = self.flag("cast_f16")
        if cast and (src, dst) != (MemSpace.L0C, MemSpace.UB):
            raise VerifyException("npu.dma: cast_f16 is only valid for l0c -> ub")
        pad = self.flag("pad")
        if pad and (src, dst) not in PAD_PATHS:
            raise VerifyException(f"npu.dma: pad is only valid for gm <-> ub and gm -> l1, not {src.value} -> {dst.value}")
        dst_len = length // 2 if cast else length
        for side, space, n, gap in (
            ("source", src, length, "src_gap"),
            ("destination", dst, dst_len, "dst_gap"),
        ):
            unit = max(ALIGNMENT[space], BLOCK_BYTES) if space != MemSpace.GM else 1
            if pad and space != MemSpace.GM:
                n = padded_burst(n)
            if n % unit or self.int_field(gap) % unit:
                raise VerifyException(
                    f"npu.dma: burst length and {gap} must be multiples of {unit} "
                    f"bytes on the {side} side ({space.value}), got len={n}, "
                    f"{gap}={self.int_field(gap)}"
                )


@irdl_op_definition
class Load2dOp(NpuInstruction):
    """Load `repeat` 512-byte fractals from L1 into L0A/L0B (MTE1).

    Fractal i is read at `src + i * src_stride * 512` and written contiguously;
    `transpose` transposes each 16x16 fp16 fractal (row-major <-> column-major),
    which turns an L1 panel of B into the ZN order L0B wants."""

    name = "npu.load_2d"
    PIPE: ClassVar = Pipe.MTE1
    FIELDS: ClassVar = (
        Field("repeat"),
        Field("src_stride", default=1),
        Field("transpose", "flag"),
    )
    SPACES: ClassVar = (
        frozenset({MemSpace.L0A, MemSpace.L0B}),
        frozenset({MemSpace.L1}),
    )

    dst = operand_def(PtrType)
    src = operand_def(PtrType)
    repeat = prop_def(IntegerAttr[I64])
    src_stride = prop_def(IntegerAttr[I64])
    transpose = opt_prop_def(UnitAttr)

    def __init__(
        self,
        dst: SSAValue | Operation,
        src: SSAValue | Operation,
        *,
        repeat: int,
        src_stride: int = 1,
        transpose: bool = False,
    ):
        fields = {"repeat": repeat, "src_stride": src_stride, "transpose": transpose}
        super().__init__(
            operands=[dst, src], properties=self.build_properties({}, fields)
        )

    def verify_fields(self) -> None:
        self.check_range("repeat", 1, MAX_REPEAT, "split into several loads")
        self.check_range("src_stride", 0, 65535)


@irdl_op_definition
class Load3dOp(NpuInstruction):
    """im2col: build rows of the convolution's A matrix in L0A from one C1 slice
    of a feature map in L1 (MTE1).

    The source holds an fp16 map [fm_h, fm_w, 16] (NC1HWC0 with one C1 slice),
    or with `f32` an fp32 map [fm_h, fm_w, 8] (C0 = 8, as load3dv2 reads b32
    maps). The result is rows `m_start .. m_start+m_len` of the matrix
    [OH*OW, kh*kw*C0] (row = output pixel, column = (ki, kj, c0)) in L0A's ZZ
    fractal order (fractals 16 x C0); rows past OH*OW and padded taps read
    zeros."""

    name = "npu.load_3d"
    PIPE: ClassVar = Pipe.MTE1
    FIELDS: ClassVar = (
        Field("fm_h"),
        Field("fm_w"),
        Field("kh"),
        Field("kw"),
        Field("stride_h", default=1),
        Field("stride_w", default=1),
        Field("pad_top", default=0),
        Field("pad_bottom", default=0),
        Field("pad_left", default=0),
        Field("pad_right", default=0),
        Field("dilation_h", default=1),
        Field("dilation_w", default=1),
        Field("m_start", default=0),
        Field("m_len"),
        Field("f32", "flag"),
    )
    SPACES: ClassVar = (frozenset({MemSpace.L0A}), frozenset({MemSpace.L1}))

    dst = operand_def(PtrType)
    src = operand_def(PtrType)
    fm_h = prop_def(IntegerAttr[I64])
    fm_w = prop_def(IntegerAttr[I64])
    kh = prop_def(IntegerAttr[I64])
    kw = prop_def(IntegerAttr[I64])
    stride_h = prop_def(IntegerAttr[I64])
    stride_w = prop_def(IntegerAttr[I64])
    pad_top = prop_def(IntegerAttr[I64])
    pad_bottom = prop_def(IntegerAttr[I64])
    pad_left = prop_def(IntegerAttr[I64])
    pad_right = prop_def(IntegerAttr[I64])
    dilation_h = prop_def(IntegerAttr[I64])
    dilation_w = prop_def(IntegerAttr[I64])
    m_start = prop_def(IntegerAttr[I64])
    m_len = prop_def(IntegerAttr[I64])
    f32 = opt_prop_def(UnitAttr)

    def __init__(
        self,
        dst: SSAValue | Operation,
        src: SSAValue | Operation,
        *,
        fm_h: int,
        fm_w: int,
        kh: int,
        kw: int,
        m_len: int,
        m_start: int = 0,
        stride: tuple[int, int] = (1, 1),
        pad: tuple[int, int, int, int] = (0, 0, 0, 0),
        dilation: tuple[int, int] = (1, 1),
        f32: bool = False,
    ):
        fields = {
            "f32": f32,
            "fm_h": fm_h,
            "fm_w": fm_w,
            "kh": kh,
            "kw": kw,
            "stride_h": stride[0],
            "stride_w": stride[1],
            "pad_top": pad[0],
            "pad_bottom": pad[1],
            "pad_left": pad[2],
            "pad_right": pad[3],
            "dilation_h": dilation[0],
            "dilation_w": dilation[1],
            "m_start": m_start,
            "m_len": m_len,
        }
        super().__init__(
            operands=[dst, src], properties=self.build_properties({}, fields)
        )

    def output_hw(self) -> tuple[int, int]:
        f = self.fields()
        oh = (
            f["fm_h"]
            + f["pad_top"]
            + f["pad_bottom"]
            - f["dilation_h"] * (f["kh"] - 1)
            - 1
        ) // f["stride_h"] + 1
        ow = (
            f["fm_w"]
            + f["pad_left"]
            + f["pad_right"]
            - f["dilation_w"] * (f["kw"] - 1)
            - 1
        ) // f["stride_w"] + 1
        return int(oh), int(ow)

    def verify_fields(self) -> None:
        for name in ("fm_h", "fm_w"):
            self.check_range(name, 1, 65535)
        for name in ("kh", "kw", "dilation_h", "dilation_w"):
            self.check_range(name, 1, 255)
        for name in ("stride_h", "stride_w"):
            self.check_range(name, 1, 63)
        for name in ("pad_top", "pad_bottom", "pad_left", "pad_right"):
            self.check_range(name, 0, 255)
        m_len = self.check_range("m_len", 1, None)
        if m_len % FRACTAL:
            raise VerifyException(
                f"npu.load_3d: m_len must be a multiple of {FRACTAL}, got {m_len}"
            )
        oh, ow = self.output_hw()
        if oh < 1 or ow < 1:
            raise VerifyException(
                f"npu.load_3d: the kernel does not fit the padded feature map "
                f"(output would be {oh}x{ow})"
            )
        self.check_range("m_start", 0, oh * ow - 1, f"the output has {oh * ow} rows")


# ---------------------------------------------------------------------------
# Cube
# ---------------------------------------------------------------------------


@irdl_op_definition
class MmadOp(NpuInstruction):
    """C[m, n] (+)= A[m, k] x B[k, n] on the cube (pipe m).

    A is in L0A in ZZ order (fractals row-major over (m1, k1), each 16 x k0
    row-major), B in L0B in ZN order (fractals row-major over (k1, n1), each
    stored n0-major), C in L0C in NZ order (fractals column-major over
    (n1, m1), each 16x16 row-major) as fp32. `dtype` is the input type: f16
    (k0 = 16, accumulate in fp32) or f32 (k0 = 8). Without `accumulate` C is
    overwritten."""

    name = "npu.mmad"
    PIPE: ClassVar = Pipe.M
    HEAD: ClassVar = (("dtype", "dtype"),)
    FIELDS: ClassVar = (Field("m"), Field("n"), Field("k"), Field("accumulate", "flag"))
    SPACES: ClassVar = (
        frozenset({MemSpace.L0C}),
        frozenset({MemSpace.L0A}),
        frozenset({MemSpace.L0B}),
    )

    c = operand_def(PtrType)
    a = operand_def(PtrType)
    b = operand_def(PtrType)
    dtype = prop_def(AnyFloat)
    m = prop_def(IntegerAttr[I64])
    n = prop_def(IntegerAttr[I64])
    k = prop_def(IntegerAttr[I64])
    accumulate = opt_prop_def(UnitAttr)

    def __init__(
        self,
        dtype: str | Attribute,
        c: SSAValue | Operation,
        a: SSAValue | Operation,
        b: SSAValue | Operation,
        *,
        m: int,
        n: int,
        k: int,
        accumulate: bool = False,
    ):
        head = {"dtype": dtype_attr(dtype)}
        fields = {"m": m, "n": n, "k": k, "accumulate": accumulate}
        super().__init__(
            operands=[c, a, b], properties=self.build_properties(head, fields)
        )

    def verify_fields(self) -> None:
        dt = dtype_name(self.dtype)
        if dt not in ELEM_BYTES:
            raise VerifyException(f"npu.mmad: dtype must be f16 or f32, got {dt}")
        k0 = BLOCK_BYTES // ELEM_BYTES[dt]
        for name, unit in (("m", FRACTAL), ("n", FRACTAL), ("k", k0)):
            value = self.check_range(name, 1, 4095)
            if value % unit:
                raise VerifyException(
                    f"npu.mmad: {name} must be a multiple of {unit} for {dt}, got {value}"
                )


# ---------------------------------------------------------------------------
# Vector unit (all operands in UB)
# ---------------------------------------------------------------------------
#
# The instructions are the rows of gedialects/npu/vector_ops.py. Here each
# family has an abstract base op declaring its operands and properties once
# (their names are the family's roles and fields); `_instruction_class` makes
# the concrete op of every row on top of it.


def _vector_fields(family: FamilySpec) -> tuple[Field, ...]:
    head = (Field("scalar", "float"),) if family.scalar else ()
    mask = (Field("mask"),) if family.mask else ()
    roles = family.strided_roles
    blk = tuple(Field(f"{r}_blk", default=1) for r in roles)
    rep = tuple(Field(f"{r}_rep") for r in roles)  # default depends on dtype
    return head + (Field("repeat"),) + mask + blk + rep


_DTYPE_SYNTAX = {"s32": "i32", "s64": "i64"}
"""How the integer dtypes are written in the IR (messages use the syntax)."""


class VectorOp(NpuInstruction, abc.ABC):
    """A vector instruction: `repeat` iterations, each over 256 bytes of the
    widest operand (8 blocks of 32 bytes). Per strided operand, `<role>_blk`
    is the distance between the blocks of one repeat and `<role>_rep` the
    distance between repeats, both in 32-byte blocks (defaults: contiguous).
    `mask` is the number of leading elements of each repeat that are
    processed. Subclasses set `FAMILY`; the concrete ops also carry `SPEC`,
    their row of the table."""

    PIPE: ClassVar = Pipe.V
    HEAD: ClassVar = (("dtype", "dtype"),)
    FAMILY: ClassVar[Family]
    SPEC: ClassVar[VectorSpec]
    ROLES: ClassVar[tuple[str, ...]]  # the roles with stride fields

    @classmethod
    def family(cls) -> FamilySpec:
        return FAMILIES[cls.FAMILY]

    def role_dtype(self, role: str) -> str:
        return dtype_name(self.properties["dtype"])

    @classmethod
    def _role_dtypes(cls, head: dict[str, Attribute]) -> dict[str, str]:
        dt = dtype_name(head.get("dtype", dtype_attr("f16")))
        return {r: dt for r in cls.ROLES}

    @classmethod
    def elems_per_repeat(cls, head: dict[str, Attribute]) -> int:
        widest = max(DTYPE_BYTES.get(d, 2) for d in cls._role_dtypes(head).values())
        return REPEAT_BYTES // widest

    @classmethod
    def field_defaults(cls, head) -> dict[str, FieldValue]:
        defaults = super().field_defaults(head)
        per_repeat = cls.elems_per_repeat(head)
        for role, dt in cls._role_dtypes(head).items():
            defaults[f"{role}_rep"] = per_repeat * DTYPE_BYTES.get(dt, 2) // BLOCK_BYTES
        if cls.family().mask:
            defaults["mask"] = per_repeat
        return defaults

    def head(self) -> dict[str, Attribute]:
        return {p: self.properties[p] for p, _ in self.HEAD}

    def elements_per_repeat(self) -> int:
        """The leading elements of each repeat a strided operand touches."""
        if self.family().mask:
            return self.int_field("mask")
        return self.elems_per_repeat(self.head())

    def verify_fields(self) -> None:
        head = self.head()
        for role, dt in self._role_dtypes(head).items():
            allowed = self.role_dtypes_allowed(role)
            if dt not in allowed:
                names = [_DTYPE_SYNTAX.get(a, a) for a in allowed]
                raise VerifyException(
                    f"{self.name}: {'source ' if role != 'dst' and len(allowed) > 2 else ''}dtype must be "
                    f"{', '.join(names[:-1])} or {names[-1]}, got {_DTYPE_SYNTAX.get(dt, dt)}"
                )
        self.check_range("repeat", 1, MAX_REPEAT, "split into several instructions")
        if self.family().mask:
            self.check_range("mask", 1, self.elems_per_repeat(head))
        for f in self.FIELDS:
            if f.name.endswith("_blk") or f.name.endswith("_rep"):
                self.check_range(f.name, 0, MAX_STRIDE)

    @classmethod
    def role_dtypes_allowed(cls, role: str) -> tuple[str, ...]:
        """The dtypes an operand of this role may have: the vector unit
        computes on f16/f32."""
        return tuple(ELEM_BYTES)

    def operand_spans(self) -> list[tuple[SSAValue, int, bool]]:
        """(pointer, bytes it covers from its address, written) per operand."""
        f = self.fields()
        repeat, mask = f["repeat"], self.elements_per_repeat()
        spans = []
        for i, (value, operand) in enumerate(zip(self.operands, self.family().operands)):
            es = DTYPE_BYTES[self.role_dtype(operand.role)]
            if operand.per_repeat is None:
                r = operand.role
                span = strided_span(repeat, mask, f[f"{r}_blk"], f[f"{r}_rep"], es)
            else:
                span = contiguous_span(repeat, operand.per_repeat, es)
            spans.append((value, span, i == 0))
        return spans


def _vector_props(
    cls: type[VectorOp], dtype, repeat, mask, strides: dict, scalar=None, **head
):
    h = {"dtype": dtype_attr(dtype), **head}
    fields = {"repeat": repeat, **strides}
    if cls.family().mask:
        fields["mask"] = mask
    if scalar is not None:
        fields["scalar"] = scalar
    return cls.build_properties(h, fields)


class VectorBinaryOp(VectorOp, abc.ABC):
    """dst = src0 <op> src1, elementwise."""

    FAMILY: ClassVar = Family.BINARY
    ROLES: ClassVar = FAMILIES[Family.BINARY].strided_roles
    FIELDS: ClassVar = _vector_fields(FAMILIES[Family.BINARY])
    SPACES: ClassVar = (_ub(), _ub(), _ub())

    dst = operand_def(PtrType)
    src0 = operand_def(PtrType)
    src1 = operand_def(PtrType)
    dtype = prop_def(AnyFloat)
    repeat = prop_def(IntegerAttr[I64])
    mask = prop_def(IntegerAttr[I64])
    dst_blk = prop_def(IntegerAttr[I64])
    src0_blk = prop_def(IntegerAttr[I64])
    src1_blk = prop_def(IntegerAttr[I64])
    dst_rep = prop_def(IntegerAttr[I64])
    src0_rep = prop_def(IntegerAttr[I64])
    src1_rep = prop_def(IntegerAttr[I64])

    def __init__(
        self,
        dtype: str | Attribute,
        dst: SSAValue | Operation,
        src0: SSAValue | Operation,
        src1: SSAValue | Operation,
        *,
        repeat: int,
        mask: int | None = None,
        **strides: int,
    ):
        props = _vector_props(type(self), dtype, repeat, mask, strides)
        super().__init__(operands=[dst, src0, src1], properties=props)


class VectorCompareOp(VectorBinaryOp, abc.ABC):
    """dst = 1.0 where `src0 <cmp> src1` holds, else 0.0, in the dtype (Ascend
    C's Compare writes a bit mask instead; docs/NPU.md)."""

    FAMILY: ClassVar = Family.COMPARE


class VectorUnaryOp(VectorOp, abc.ABC):
    """dst = f(src), elementwise."""

    FAMILY: ClassVar = Family.UNARY
    ROLES: ClassVar = FAMILIES[Family.UNARY].strided_roles
    FIELDS: ClassVar = _vector_fields(FAMILIES[Family.UNARY])
    SPACES: ClassVar = (_ub(), _ub())

    dst = operand_def(PtrType)
    src = operand_def(PtrType)
    dtype = prop_def(AnyFloat)
    repeat = prop_def(IntegerAttr[I64])
    mask = prop_def(IntegerAttr[I64])
    dst_blk = prop_def(IntegerAttr[I64])
    src_blk = prop_def(IntegerAttr[I64])
    dst_rep = prop_def(IntegerAttr[I64])
    src_rep = prop_def(IntegerAttr[I64])

    def __init__(
        self,
        dtype: str | Attribute,
        dst: SSAValue | Operation,
        src: SSAValue | Operation,
        *,
        repeat: int,
        mask: int | None = None,
        **strides: int,
    ):
        props = _vector_props(type(self), dtype, repeat, mask, strides)
        super().__init__(operands=[dst, src], properties=props)


class VectorScalarOp(VectorOp, abc.ABC):
    """dst = src <op> scalar, elementwise."""

    FAMILY: ClassVar = Family.SCALAR
    ROLES: ClassVar = FAMILIES[Family.SCALAR].strided_roles
    FIELDS: ClassVar = _vector_fields(FAMILIES[Family.SCALAR])
    SPACES: ClassVar = (_ub(), _ub())

    dst = operand_def(PtrType)
    src = operand_def(PtrType)
    dtype = prop_def(AnyFloat)
    scalar = prop_def(FloatAttr)
    repeat = prop_def(IntegerAttr[I64])
    mask = prop_def(IntegerAttr[I64])
    dst_blk = prop_def(IntegerAttr[I64])
    src_blk = prop_def(IntegerAttr[I64])
    dst_rep = prop_def(IntegerAttr[I64])
    src_rep = prop_def(IntegerAttr[I64])

    def __init__(
        self,
        dtype: str | Attribute,
        dst: SSAValue | Operation,
        src: SSAValue | Operation,
        scalar: float,
        *,
        repeat: int,
        mask: int | None = None,
        **strides: int,
    ):
        props = _vector_props(type(self), dtype, repeat, mask, strides, scalar=scalar)
        super().__init__(operands=[dst, src], properties=props)


class VectorReduceOp(VectorOp, abc.ABC):
    """dst[r] = reduce(the masked elements of repeat r of src); the results of
    consecutive repeats are written contiguously from dst."""

    FAMILY: ClassVar = Family.REDUCE
    ROLES: ClassVar = FAMILIES[Family.REDUCE].strided_roles
    FIELDS: ClassVar = _vector_fields(FAMILIES[Family.REDUCE])
    SPACES: ClassVar = (_ub(), _ub())

    dst = operand_def(PtrType)
    src = operand_def(PtrType)
    dtype = prop_def(AnyFloat)
    repeat = prop_def(IntegerAttr[I64])
    mask = prop_def(IntegerAttr[I64])
    src_blk = prop_def(IntegerAttr[I64])
    src_rep = prop_def(IntegerAttr[I64])

    def __init__(
        self,
        dtype: str | Attribute,
        dst: SSAValue | Operation,
        src: SSAValue | Operation,
        *,
        repeat: int,
        mask: int | None = None,
        **strides: int,
    ):
        props = _vector_props(type(self), dtype, repeat, mask, strides)
        super().__init__(operands=[dst, src], properties=props)


class VectorConvertOp(VectorOp, abc.ABC):
    """dst (dtype) = cast(src (src_dtype)): f32 <-> f16, or s32/s64 -> f16/f32
    (rounded to nearest even; Ascend C's Cast from int32/int64). A repeat
    processes 256 bytes of the wider side (64 elements of f32 <-> f16, 32 of
    s64 -> f32), so the default repeat stride is 8 blocks on the wider side."""

    FAMILY: ClassVar = Family.CONVERT
    HEAD: ClassVar = (("dtype", "dtype"), ("src_dtype", "dtype"))
    ROLES: ClassVar = FAMILIES[Family.CONVERT].strided_roles
    FIELDS: ClassVar = _vector_fields(FAMILIES[Family.CONVERT])
    SPACES: ClassVar = (_ub(), _ub())

    dst = operand_def(PtrType)
    src = operand_def(PtrType)
    dtype = prop_def(AnyFloat)
    src_dtype = prop_def(AnyFloat | IntegerType)
    repeat = prop_def(IntegerAttr[I64])
    mask = prop_def(IntegerAttr[I64])
    dst_blk = prop_def(IntegerAttr[I64])
    src_blk = prop_def(IntegerAttr[I64])
    dst_rep = prop_def(IntegerAttr[I64])
    src_rep = prop_def(IntegerAttr[I64])

    def __init__(
        self,
        dtype: str | Attribute,
        src_dtype: str | Attribute,
        dst: SSAValue | Operation,
        src: SSAValue | Operation,
        *,
        repeat: int,
        mask: int | None = None,
        **strides: int,
    ):
        props = _vector_props(
            type(self), dtype, repeat, mask, strides, src_dtype=dtype_attr(src_dtype)
        )
        super().__init__(operands=[dst, src], properties=props)

    def role_dtype(self, role: str) -> str:
        prop = "src_dtype" if role == "src" else "dtype"
        return dtype_name(self.properties[prop])

    @classmethod
    def _role_dtypes(cls, head: dict[str, Attribute]) -> dict[str, str]:
        f16 = dtype_attr("f16")
        return {
            "dst": dtype_name(head.get("dtype", f16)),
            "src": dtype_name(head.get("src_dtype", f16)),
        }

    @classmethod
    def role_dtypes_allowed(cls, role: str) -> tuple[str, ...]:
        return tuple(DTYPE_BYTES) if role == "src" else tuple(ELEM_BYTES)

    def verify_fields(self) -> None:
        super().verify_fields()
        if dtype_name(self.dtype) == dtype_name(self.src_dtype):
            raise VerifyException(
                f"{self.name}: source and destination dtypes are both "
                f"{dtype_name(self.dtype)}; use f32 <-> f16 or an integer source"
            )


class VectorDuplicateOp(VectorOp, abc.ABC):
    """dst = scalar, broadcast over the masked elements of every repeat."""

    FAMILY: ClassVar = Family.DUPLICATE
    ROLES: ClassVar = FAMILIES[Family.DUPLICATE].strided_roles
    FIELDS: ClassVar = _vector_fields(FAMILIES[Family.DUPLICATE])
    SPACES: ClassVar = (_ub(),)

    dst = operand_def(PtrType)
    dtype = prop_def(AnyFloat)
    scalar = prop_def(FloatAttr)
    repeat = prop_def(IntegerAttr[I64])
    mask = prop_def(IntegerAttr[I64])
    dst_blk = prop_def(IntegerAttr[I64])
    dst_rep = prop_def(IntegerAttr[I64])

    def __init__(
        self,
        dtype: str | Attribute,
        dst: SSAValue | Operation,
        scalar: float,
        *,
        repeat: int,
        mask: int | None = None,
        **strides: int,
    ):
        props = _vector_props(type(self), dtype, repeat, mask, strides, scalar=scalar)
        super().__init__(operands=[dst], properties=props)


class VectorSelectOp(VectorOp, abc.ABC):
    """dst = src0 where cond != 0, else src1, elementwise: the unselected
    operand is never combined with anything, so an inf or NaN in it does not
    reach dst (where(mask, x, -inf)). `cond` holds one value per element in
    the dtype, as the compare family writes it (Ascend C's selMask is a bit
    mask instead; docs/NPU.md)."""

    FAMILY: ClassVar = Family.SELECT
    ROLES: ClassVar = FAMILIES[Family.SELECT].strided_roles
    FIELDS: ClassVar = _vector_fields(FAMILIES[Family.SELECT])
    SPACES: ClassVar = (_ub(), _ub(), _ub(), _ub())

    dst = operand_def(PtrType)
    cond = operand_def(PtrType)
    src0 = operand_def(PtrType)
    src1 = operand_def(PtrType)
    dtype = prop_def(AnyFloat)
    repeat = prop_def(IntegerAttr[I64])
    mask = prop_def(IntegerAttr[I64])
    dst_blk = prop_def(IntegerAttr[I64])
    cond_blk = prop_def(IntegerAttr[I64])
    src0_blk = prop_def(IntegerAttr[I64])
    src1_blk = prop_def(IntegerAttr[I64])
    dst_rep = prop_def(IntegerAttr[I64])
    cond_rep = prop_def(IntegerAttr[I64])
    src0_rep = prop_def(IntegerAttr[I64])
    src1_rep = prop_def(IntegerAttr[I64])

    def __init__(
        self,
        dtype: str | Attribute,
        dst: SSAValue | Operation,
        cond: SSAValue | Operation,
        src0: SSAValue | Operation,
        src1: SSAValue | Operation,
        *,
        repeat: int,
        mask: int | None = None,
        **strides: int,
    ):
        props = _vector_props(type(self), dtype, repeat, mask, strides)
        super().__init__(operands=[dst, cond, src0, src1], properties=props)


class VectorBroadcastOp(VectorOp, abc.ABC):
    """Repeat r reads the 8 contiguous elements src[8r .. 8r+7] and fills
    block i of the repeat's 8 destination blocks with src[8r + i] (a per-row
    value, e.g. a reduction's result, spread along a row). There is no mask
    (every repeat writes its 8 blocks), and src has no strides."""

    FAMILY: ClassVar = Family.BROADCAST
    ROLES: ClassVar = FAMILIES[Family.BROADCAST].strided_roles
    FIELDS: ClassVar = _vector_fields(FAMILIES[Family.BROADCAST])
    SPACES: ClassVar = (_ub(), _ub())

    dst = operand_def(PtrType)
    src = operand_def(PtrType)
    dtype = prop_def(AnyFloat)
    repeat = prop_def(IntegerAttr[I64])
    dst_blk = prop_def(IntegerAttr[I64])
    dst_rep = prop_def(IntegerAttr[I64])

    def __init__(
        self,
        dtype: str | Attribute,
        dst: SSAValue | Operation,
        src: SSAValue | Operation,
        *,
        repeat: int,
        **strides: int,
    ):
        props = _vector_props(type(self), dtype, repeat, None, strides)
        super().__init__(operands=[dst, src], properties=props)


_FAMILY_BASES: dict[Family, type[VectorOp]] = {
    base.FAMILY: base
    for base in (
        VectorBinaryOp,
        VectorUnaryOp,
        VectorScalarOp,
        VectorReduceOp,
        VectorConvertOp,
        VectorDuplicateOp,
        VectorCompareOp,
        VectorSelectOp,
        VectorBroadcastOp,
    )
}


def _instruction_class(spec: VectorSpec) -> type[VectorOp]:
    """The op of one row of the table, e.g. `VaddOp` named `npu.vadd`."""
    base = _FAMILY_BASES[spec.family]
    cls = type(
        spec.class_name,
        (base,),
        {
            "__module__": __name__,
            "__qualname__": spec.class_name,
            "__doc__": f"`{spec.mnemonic}`: dst = {spec.computes} ({spec.family} family).",
            "__annotations__": {"SPEC": ClassVar[VectorSpec]},
            "name": spec.op_name,
            "SPEC": spec,
        },
    )
    return irdl_op_definition(cls)


# One class per row, by mnemonic; also module attributes (`npu.VaddOp`).
VECTOR_OP_CLASSES: dict[str, type[VectorOp]] = {
    spec.mnemonic: _instruction_class(spec) for spec in VECTOR_SPECS
}
globals().update({cls.__name__: cls for cls in VECTOR_OP_CLASSES.values()})


# ---------------------------------------------------------------------------
# Synchronisation
# ---------------------------------------------------------------------------


class FlagOp(NpuInstruction, abc.ABC):
    """`npu.set_flag mte2 -> v event 0`: a set runs on the source pipe and fires
    once all earlier work of that pipe is done; a wait runs on the destination
    pipe and stalls it until the flag is set, then clears it."""

    src_pipe = prop_def(PipeAttr)
    dst_pipe = prop_def(PipeAttr)
    event = prop_def(IntegerAttr[I64])

    def __init__(self, src: Pipe | str, dst: Pipe | str, event: int):
        super().__init__(
            properties={
                "src_pipe": PipeAttr(Pipe(src)),
                "dst_pipe": PipeAttr(Pipe(dst)),
                "event": i64_attr(event),
            }
        )

    @property
    def src(self) -> Pipe:
        return self.src_pipe.data

    @property
    def dst(self) -> Pipe:
        return self.dst_pipe.data

    def verify_(self) -> None:
        if Pipe.ALL in (self.src, self.dst):
            raise VerifyException(f"{self.name}: a flag connects two pipes, not 'all'")
        if self.src == self.dst:
            raise VerifyException(
                f"{self.name}: source and destination pipe are both {self.src.value}; "
                f"use npu.pipe_barrier {self.src.value} to order work within a pipe"
            )
        ev = self.event.value.data
        if not 0 <= ev < NUM_EVENTS:
            raise VerifyException(
                f"{self.name}: event must be in [0, {NUM_EVENTS - 1}], got {ev}"
            )

    def print(self, printer: Printer) -> None:
        printer.print_string(
            f" {self.src.value} -> {self.dst.value} event {self.event.value.data}"
        )
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser):
        src = parser.parse_str_enum(Pipe)
        parser.parse_punctuation("->")
        dst = parser.parse_str_enum(Pipe)
        parser.parse_keyword("event")
        event = parser.parse_integer(allow_negative=True)
        attrs = parser.parse_optional_attr_dict()
        op = cls(src, dst, event)
        op.attributes.update(attrs)
        return op


@irdl_op_definition
class SetFlagOp(FlagOp):
    name = "npu.set_flag"

    def pipe(self) -> Pipe:
        return self.src


@irdl_op_definition
class WaitFlagOp(FlagOp):
    name = "npu.wait_flag"

    def pipe(self) -> Pipe:
        return self.dst


@irdl_op_definition
class PipeBarrierOp(NpuInstruction):
    """`npu.pipe_barrier v` orders work within one pipe; `npu.pipe_barrier all`
    stalls issue until every pipe of the core has drained."""

    name = "npu.pipe_barrier"
    HEAD: ClassVar = (("pipe", "pipe"),)

    pipe_ = prop_def(PipeAttr, prop_name="pipe")

    def __init__(self, pipe: Pipe | str):
        super().__init__(properties={"pipe": PipeAttr(Pipe(pipe))})

    def pipe(self) -> Pipe:
        return self.pipe_.data

    def verify_fields(self) -> None:
        if self.pipe() == Pipe.S:
            raise VerifyException(
                "npu.pipe_barrier: the scalar pipe is in order already; "
                "barrier a specific pipe or 'all'"
            )


# ---------------------------------------------------------------------------
# Kernel scalars: pointers and the block index
# ---------------------------------------------------------------------------


@lru_cache(maxsize=None)
def _space_attr(space: MemSpace) -> MemSpaceAttr:
    return MemSpaceAttr(space)


@lru_cache(maxsize=None)
def _ptr_type(space: MemSpace) -> PtrType:
    return PtrType(space)


@irdl_op_definition
class PtrOp(IRDLOperation):
    """A byte address in one memory space: `npu.ptr ub 4096` or, with a
    dynamic part computed by `arith` on index values, `npu.ptr ub 4096 + %off`.
    A static-only address must satisfy the space's alignment; a dynamic one is
    checked when the simulator runs it. `npu.ptr ub 4096 + %off within 8192`
    promises that the address stays in [4096, 4096 + 8192) (its buffer), so
    npu-insert-sync can tell buffers apart without knowing %off."""

    name = "npu.ptr"

    dyn = opt_operand_def(IndexType)
    space = prop_def(MemSpaceAttr)
    offset = prop_def(IntegerAttr[I64])
    extent = opt_prop_def(IntegerAttr[I64])
    result = result_def(PtrType)

    traits = traits_def(Pure())

    def __init__(
        self,
        space: MemSpace | str,
        offset: int = 0,
        dyn: SSAValue | Operation | None = None,
        extent: int | None = None,
    ):
        space = MemSpace(space)
        props = {"space": MemSpaceAttr(space), "offset": i64_attr(offset)}
        if extent is not None:
            props["extent"] = i64_attr(extent)
        super().__init__(
            operands=[[dyn] if dyn is not None else []],
            result_types=[PtrType(space)],
            properties=props,
        )

    @classmethod
    def at(cls, space: MemSpace, offset: int, dyn: SSAValue | None = None, extent: int | None = None) -> PtrOp:
        """`PtrOp(space, offset, dyn, extent)` without IRDL's argument processing
        and with shared attributes: the lowering builds ~10^5 of them per program."""
        props = {"space": _space_attr(space), "offset": i64_attr(offset)}
        if extent is not None:
            props["extent"] = i64_attr(extent)
        return cls.create(operands=[dyn] if dyn is not None else [], result_types=[_ptr_type(space)], properties=props)

    @property
    def mem_space(self) -> MemSpace:
        return self.space.data

    def verify_(self) -> None:
        space = self.mem_space
        offset = self.offset.value.data
        if (
            not isinstance(self.result.type, PtrType)
            or self.result.type.mem_space != space
        ):
            raise VerifyException(
                f"npu.ptr: result type must be !npu.ptr<{space.value}>, "
                f"got {self.result.type}"
            )
        if offset < 0:
            raise VerifyException(f"npu.ptr: offset must be >= 0, got {offset}")
        if self.extent is not None and self.extent.value.data < 1:
            raise VerifyException(f"npu.ptr: extent must be positive, got {self.extent.value.data}")
        align = ALIGNMENT[space]
        if self.dyn is None and offset % align:
            raise VerifyException(
                f"npu.ptr: {space.value} address {offset} is not aligned to "
                f"{align} bytes"
            )

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.mem_space.value} {self.offset.value.data}")
        if self.dyn is not None:
            printer.print_string(" + ")
            printer.print_operand(self.dyn)
        if self.extent is not None:
            printer.print_string(f" within {self.extent.value.data}")
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser) -> PtrOp:
        space = parser.parse_str_enum(MemSpace)
        offset = parser.parse_integer(allow_negative=True)
        dyn = None
        if parser.parse_optional_punctuation("+") is not None:
            dyn = parser.parse_operand(IndexType())
        extent = parser.parse_integer() if parser.parse_optional_keyword("within") is not None else None
        attrs = parser.parse_optional_attr_dict()
        op = cls(space, offset, dyn, extent)
        op.attributes.update(attrs)
        return op


class _BlockScalarOp(IRDLOperation, abc.ABC):
    result = result_def(IndexType)
    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__(result_types=[IndexType()])


# ---------------------------------------------------------------------------
# Program structure
# ---------------------------------------------------------------------------


@irdl_op_definition
class ProgramOp(IRDLOperation):
    """A whole device program: one GM arena of `gm_size` bytes, its named
    tensors and constants, kernels, and launches in program order; and,
    with `host_size` > 0, a host-memory buffer of that many bytes that
    `npu.memcpy` copies to and from (absent or 0: no host memory)."""

    name = "npu.program"

    sym_name = prop_def(SymbolNameConstraint())
    gm_size = prop_def(IntegerAttr[I64])
    host_size = opt_prop_def(IntegerAttr[I64])
    body = region_def("single_block")

    traits = traits_def(NoTerminator(), SymbolTable(), SymbolOpInterface())

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        printer.print_string(f" gm_size {self.size}")
        if self.host_bytes > 0:
            printer.print_string(f" host_size {self.host_bytes}")
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(
            self.body, print_entry_block_args=False, print_empty_block=False
        )

    @classmethod
    def parse(cls, parser: Parser) -> ProgramOp:
        name = parser.parse_symbol_name().data
        parser.parse_keyword("gm_size")
        size = parser.parse_integer(allow_negative=True)
        host = 0
        if parser.parse_optional_keyword("host_size") is not None:
            host = parser.parse_integer(allow_negative=True)
        attrs = parser.parse_optional_attr_dict_with_keyword()
        op = cls(name, size, _parse_body(parser), host)
        if attrs is not None:
            op.attributes.update(attrs.data)
        return op

    def __init__(self, name: str, gm_size: int, body: Region | None = None, host_size: int = 0):
        properties: dict[str, Attribute] = {
            "sym_name": StringAttr(name),
            "gm_size": IntegerAttr(gm_size, i64),
        }
        if host_size != 0:  # absent means none: programs without host memory print as before
            properties["host_size"] = IntegerAttr(host_size, i64)
        super().__init__(
            properties=properties,
            regions=[body if body is not None else Region(_new_block())],
        )

    @property
    def size(self) -> int:
        return self.gm_size.value.data

    @property
    def host_bytes(self) -> int:
        """Bytes of host memory the program's copies use (0: none)."""
        return self.host_size.value.data if self.host_size is not None else 0

    def verify_(self) -> None:
        if self.size <= 0:
            raise VerifyException(f"npu.program: gm_size must be > 0, got {self.size}")
        if self.host_bytes < 0:
            raise VerifyException(f"npu.program: host_size must be >= 0, got {self.host_bytes}")
        consts = sorted(
            (op.gm_range(), op.const_name.data)
            for op in self.body.block.ops
            if isinstance(op, ConstantOp)
        )
        for ((_, end), name), ((start, _), other) in pairwise(consts):
            if start < end:
                raise VerifyException(
                    f"npu.program: constants '{name}' and '{other}' overlap in GM"
                )


def _new_block():
    from xdsl.ir import Block

    return Block()


def _parse_body(parser: Parser) -> Region:
    """A single-block region; `{}` (which xDSL parses as no block) gets one."""
    region = parser.parse_region()
    if not region.blocks:
        region.add_block(_new_block())
    return region


def _static_nbytes(t: Attribute) -> int | None:
    if not isinstance(t, TensorType) or any(d < 0 for d in t.get_shape()):
        return None
    elem = t.get_element_type()
    width = getattr(elem, "bitwidth", None)
    if width is None:
        width = getattr(elem, "width", None)
        width = width.data if width is not None else None
    if width is None:
        return None
    n = 1
    for d in t.get_shape():
        n *= d
    return n * max(1, width // 8)


class GmTensorOp(IRDLOperation, abc.ABC):
    """A named tensor at a GM offset (a program input or output)."""

    io_name = prop_def(StringAttr)
    offset = prop_def(IntegerAttr[I64])
    tensor_type = prop_def(TensorType)

    traits = traits_def(HasParent(ProgramOp))
    assembly_format = "$io_name `at` $offset attr-dict `:` $tensor_type"

    def __init__(self, name: str, offset: int, tensor_type: TensorType):
        super().__init__(
            properties={
                "io_name": StringAttr(name),
                "offset": IntegerAttr(offset, i64),
                "tensor_type": tensor_type,
            }
        )

    def gm_range(self) -> tuple[int, int]:
        start = self.offset.value.data
        return start, start + (_static_nbytes(self.tensor_type) or 0)

    def verify_(self) -> None:
        if _static_nbytes(self.tensor_type) is None:
            raise VerifyException(
                f"{self.name}: '{self.io_name.data}' needs a static shape and a "
                f"sized element type, got {self.tensor_type}"
            )
        _verify_in_gm(self, self.io_name.data, self.gm_range())


def _verify_in_gm(op: Operation, name: str, rng: tuple[int, int]) -> None:
    start, end = rng
    if start < 0:
        raise VerifyException(f"{op.name}: '{name}' has a negative GM offset {start}")
    program = op.parent_op()
    if isinstance(program, ProgramOp) and end > program.size:
        raise VerifyException(
            f"{op.name}: '{name}' occupies GM [{start}, {end}) beyond gm_size "
            f"{program.size}"
        )


@irdl_op_definition
class InputOp(GmTensorOp):
    name = "npu.input"


@irdl_op_definition
class OutputOp(GmTensorOp):
    name = "npu.output"


@irdl_op_definition
class ConstantOp(IRDLOperation):
    """Constant bytes (weights) placed in GM before the first launch. The value
    is a `dense<...>` or a `dense_resource<key>` whose blob is in the file's
    dialect_resources section."""

    name = "npu.constant"

    const_name = prop_def(StringAttr)
    offset = prop_def(IntegerAttr[I64])
    value = prop_def(DenseIntOrFPElementsAttr | DenseResourceAttr)

    traits = traits_def(HasParent(ProgramOp))
    assembly_format = "$const_name `at` $offset `=` $value attr-dict"

    def __init__(
        self,
        name: str,
        offset: int,
        value: DenseIntOrFPElementsAttr | DenseResourceAttr,
    ):
        super().__init__(
            properties={
                "const_name": StringAttr(name),
                "offset": IntegerAttr(offset, i64),
                "value": value,
            }
        )

    @property
    def tensor_type(self) -> Attribute:
        return self.value.type

    def gm_range(self) -> tuple[int, int]:
        start = self.offset.value.data
        return start, start + (_static_nbytes(self.value.type) or 0)

    def verify_(self) -> None:
        if _static_nbytes(self.value.type) is None:
            raise VerifyException(
                f"npu.constant: '{self.const_name.data}' needs a static tensor type"
            )
        _verify_in_gm(self, self.const_name.data, self.gm_range())


KERNEL_INFO_KEYS = ("kind", "absorbed", "source", "op_type", "in_shapes", "in_formats", "out_shapes", "out_formats",
                    "writes", "infinities")
"""What an npu.kernel may say of itself as `ge.<key>` attributes (strings; `absorbed` an array of
them): what it runs, for the profile, `writes`, the GM tensors it stores to as
'offset+nbytes:dtype;...' (the simulator's overflow check), and `infinities` = INFINITIES_BY_DESIGN
when it writes infinities on purpose. The assembler keeps them in `target.program.Kernel.info`."""

INFINITIES_BY_DESIGN = "mask"
"""`infinities` of a kernel with an immediate of a mask's magnitude (finfo(f32).min, torch's
stand-in for -inf; -inf once stored in fp16): the overflow check counts only the NaN it writes."""

SPLIT_K_SUM_KIND = "split_k_sum"
"""The `kind` of the kernel that adds a split product's partials and runs its
epilogue (tile-split-reduction): the op's second launch, whose work is not
the op's (the roofline counts the op's bound once, on its partial products)."""


GM_TENSOR_ATTR = "ge.tensor"
"""On an npu.ptr into GM in a kernel another kernel is `alike`: the GM tensor it points into."""


@irdl_op_definition
class KernelOp(IRDLOperation):
    """Code run by every block of a launch; `npu.block_idx` tells blocks apart
    (discardable `ge.*` attributes: KERNEL_INFO_KEYS).

    `npu.kernel @k2 alike @k1 moves {x = 4096 : i64}`: no body of its own, it
    runs @k1's code with every pointer into a GM tensor named in `moves`
    (by its `ge.tensor`) that many bytes further (the kernels of a network's
    repeated layers: tile-share-alike-kernels). The assembler builds its
    code from @k1's, so what runs is what @k1's code moved would be."""

    name = "npu.kernel"

    sym_name = prop_def(SymbolNameConstraint())
    alike = opt_prop_def(SymbolRefAttr)
    moves = opt_prop_def(DictionaryAttr)
    body = region_def("single_block")

    traits = traits_def(
        NoTerminator(), IsolatedFromAbove(), SymbolOpInterface(), HasParent(ProgramOp)
    )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        if self.alike is not None:
            printer.print_string(" alike ")
            printer.print_symbol_name(self.alike.root_reference.data)
            printer.print_string(" moves ")
            printer.print_attribute(self.moves if self.moves is not None else DictionaryAttr({}))
        printer.print_op_attributes(self.attributes, print_keyword=True)
        if self.alike is None:
            printer.print_string(" ")
            printer.print_region(
                self.body, print_entry_block_args=False, print_empty_block=False
            )

    @classmethod
    def parse(cls, parser: Parser) -> KernelOp:
        name = parser.parse_symbol_name().data
        alike = moves = None
        if parser.parse_optional_keyword("alike") is not None:
            alike = parser.parse_symbol_name().data
            parser.parse_keyword("moves")
            moves = parser.parse_attribute()
        attrs = parser.parse_optional_attr_dict_with_keyword()
        op = cls(name, None if alike is not None else _parse_body(parser))
        if alike is not None:
            op.properties["alike"] = SymbolRefAttr(alike)
            op.properties["moves"] = moves
        if attrs is not None:
            op.attributes.update(attrs.data)
        return op

    def __init__(self, name: str, body: Region | None = None):
        super().__init__(
            properties={"sym_name": StringAttr(name)},
            regions=[body if body is not None else Region(_new_block())],
        )

    @classmethod
    def alike_of(cls, name: str, source: str, moves: dict[str, int]) -> KernelOp:
        """`npu.kernel @name alike @source moves {...}`."""
        op = cls(name)
        op.properties["alike"] = SymbolRefAttr(source)
        op.properties["moves"] = DictionaryAttr({k: IntegerAttr(v, i64) for k, v in moves.items()})
        return op

    def verify_(self) -> None:
        if self.alike is None:
            if self.moves is not None:
                raise VerifyException(f"npu.kernel @{self.sym_name.data}: moves without alike")
            return
        if self.body.block.first_op is not None:
            raise VerifyException(f"npu.kernel @{self.sym_name.data}: a kernel alike another has no body of its own")
        if self.moves is None or not all(isinstance(v, IntegerAttr) for v in self.moves.data.values()):
            raise VerifyException(f"npu.kernel @{self.sym_name.data}: moves are integers (bytes) by GM tensor")
        source = self.alike.root_reference.data
        program = self.parent_op()
        found = None if program is None else next(
            (op for op in program.regions[0].block.ops if isinstance(op, KernelOp) and op.sym_name.data == source), None)
        if program is not None and (found is None or found.alike is not None):
            raise VerifyException(f"npu.kernel @{self.sym_name.data}: @{source} is not a kernel with a body")


@irdl_op_definition
class BlockIdxOp(_BlockScalarOp):
    """The index of the running block, in [0, block_dim)."""

    name = "npu.block_idx"
    traits = traits_def(Pure(), HasAncestor(KernelOp))


@irdl_op_definition
class BlockNumOp(_BlockScalarOp):
    """The launch's block_dim."""

    name = "npu.block_num"
    traits = traits_def(Pure(), HasAncestor(KernelOp))


@irdl_op_definition
class LoadIndexOp(IRDLOperation):
    """The scalar unit reads one integer from UB: an index into a table of
    `bound` rows (Ascend C's `LocalTensor::GetValue`, how a Gather kernel reads
    its indices). A negative index counts from the end (ONNX Gather's rule:
    bound is added once); one outside [-bound, bound) stops the simulator with
    the kernel and the value, where hardware would read some other row. The
    UB bytes are written by a DMA, so a flag orders the read after it
    (npu-insert-sync adds it); what the scalar unit issues after the read is
    ordered by issue."""

    name = "npu.load_index"

    ptr = operand_def(PtrType)
    dtype = prop_def(IntegerType)
    bound = prop_def(IntegerAttr[I64])
    result = result_def(IndexType)

    traits = traits_def(HasAncestor(KernelOp))
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$ptr attr-dict `:` type($ptr)"

    def __init__(self, ptr: SSAValue | Operation, dtype: IntegerType, bound: int):
        super().__init__(
            operands=[ptr],
            properties={"dtype": dtype, "bound": IntegerAttr(bound, i64)},
            result_types=[IndexType()],
        )

    @property
    def element_bytes(self) -> int:
        return self.dtype.width.data // 8

    def pipe(self) -> Pipe:
        return Pipe.S

    def verify_(self) -> None:
        if self.ptr.type != PtrType(MemSpace.UB):  # type: ignore[attr-defined]
            raise VerifyException(f"npu.load_index: reads ub, not {self.ptr.type}")
        if not self.dtype.signedness.data == Signedness.SIGNLESS or f"s{self.dtype.width.data}" not in INT_BYTES:
            raise VerifyException(
                f"npu.load_index: indices are {' or '.join('i' + k[1:] for k in INT_BYTES)}, got {self.dtype}"
            )
        if self.bound.value.data < 1:
            raise VerifyException(f"npu.load_index: bound must be positive, got {self.bound.value.data}")


@irdl_op_definition
class LaunchOp(IRDLOperation):
    """Run `kernel` on `block_dim` blocks, after earlier work of `stream`."""

    name = "npu.launch"

    kernel = prop_def(SymbolRefAttr)
    block_dim = prop_def(IntegerAttr[I64])
    stream = prop_def(IntegerAttr[I64])

    traits = traits_def(HasParent(ProgramOp))
    assembly_format = "$kernel `block_dim` $block_dim `stream` $stream attr-dict"

    def __init__(self, kernel: str, block_dim: int, stream: int = 0):
        super().__init__(
            properties={
                "kernel": SymbolRefAttr(kernel),
                "block_dim": IntegerAttr(block_dim, i64),
                "stream": IntegerAttr(stream, i64),
            }
        )

    def verify_(self) -> None:
        name = self.kernel.root_reference.data
        program = self.parent_op()
        if program is not None and not any(
            isinstance(op, KernelOp) and op.sym_name.data == name
            for op in program.regions[0].block.ops
        ):
            raise VerifyException(f"npu.launch: no npu.kernel named @{name}")
        bd = self.block_dim.value.data
        if not 1 <= bd <= 65535:
            raise VerifyException(
                f"npu.launch: block_dim must be in [1, 65535], got {bd}"
            )
        if self.stream.value.data < 0:
            raise VerifyException("npu.launch: stream must be >= 0")


class StreamEventOp(IRDLOperation, abc.ABC):
    stream = prop_def(IntegerAttr[I64])
    event = prop_def(IntegerAttr[I64])

    traits = traits_def(HasParent(ProgramOp))
    assembly_format = "`stream` $stream `event` $event attr-dict"

    def __init__(self, stream: int, event: int):
        super().__init__(
            properties={
                "stream": IntegerAttr(stream, i64),
                "event": IntegerAttr(event, i64),
            }
        )

    def verify_(self) -> None:
        if self.stream.value.data < 0 or self.event.value.data < 0:
            raise VerifyException(f"{self.name}: stream and event must be >= 0")


@irdl_op_definition
class StreamRecordOp(StreamEventOp):
    """Record `event` when all earlier launches of `stream` have finished."""

    name = "npu.stream_record"


@irdl_op_definition
class StreamWaitOp(StreamEventOp):
    """Later launches of `stream` start only after `event` was recorded."""

    name = "npu.stream_wait"

    def verify_(self) -> None:
        super().verify_()
        ev = self.event.value.data
        op = self.prev_op
        while op is not None:
            if isinstance(op, StreamRecordOp) and op.event.value.data == ev:
                return
            op = op.prev_op
        raise VerifyException(
            f"npu.stream_wait: event {ev} is not recorded by an earlier npu.stream_record"
        )


# ---------------------------------------------------------------------------
# AI-CPU tasks
# ---------------------------------------------------------------------------

# Element types an AI-CPU task may read from or write to GM.
AICPU_STORED_TYPES = ("f16", "f32", "f64", "i64", "i32", "i16", "i8", "ui8", "i1")
_FLOAT_NAMES = ("f16", "f32", "f64")

# One operand of a task: (GM offset, stored tensor type, scale).
AicpuSlot = tuple[int, TensorType, float]


def _format_scale(value: float) -> str:
    """A float the MLIR lexer reads back (it needs a '.' before an exponent)."""
    text = repr(float(value))
    if "e" in text and "." not in text:
        mantissa, exp = text.split("e")
        text = f"{mantissa}.0e{exp}"
    return text


@irdl_op_definition
class AicpuOp(IRDLOperation):
    """A task run by the AI CPU (the SoC's ARM cores) instead of an AI-core
    kernel, at the top of an `npu.program` in schedule order like a launch.

    It reads its inputs from GM (`in_offsets`, stored as `in_types`; logical
    value = stored value * `in_scales`), evaluates the graph-dialect ops of its
    body on the block arguments (logical types), and writes what
    `npu.aicpu_return` gives to GM (stored = cast(logical / `out_scales`)).

        npu.aicpu @k7_where stream 0 ins [0 : tensor<16xi1>, 64 : tensor<16xf16> scale 0.25]
            outs [128 : tensor<16xf16>] {
        ^bb0(%c: tensor<16xi1>, %x: tensor<16xf32>):
          ...
          npu.aicpu_return %r : tensor<16xf32>
        }
    """

    name = "npu.aicpu"

    sym_name = prop_def(SymbolNameConstraint())
    stream = prop_def(IntegerAttr[I64])
    in_offsets = prop_def(DenseArrayBase)
    in_types = prop_def(ArrayAttr)
    in_scales = prop_def(DenseArrayBase)
    out_offsets = prop_def(DenseArrayBase)
    out_types = prop_def(ArrayAttr)
    out_scales = prop_def(DenseArrayBase)
    body = region_def("single_block")

    traits = traits_def(IsolatedFromAbove(), SymbolOpInterface(), HasParent(ProgramOp))

    def __init__(
        self,
        name: str,
        stream: int,
        ins: Sequence[AicpuSlot],
        outs: Sequence[AicpuSlot],
        body: Region,
    ):
        def props(prefix: str, slots: Sequence[AicpuSlot]) -> dict[str, Attribute]:
            return {
                f"{prefix}_offsets": DenseArrayBase.from_list(i64, [int(s[0]) for s in slots]),
                f"{prefix}_types": ArrayAttr([s[1] for s in slots]),
                f"{prefix}_scales": DenseArrayBase.from_list(f64, [float(s[2]) for s in slots]),
            }

        super().__init__(
            properties={
                "sym_name": StringAttr(name),
                "stream": IntegerAttr(stream, i64),
                **props("in", ins),
                **props("out", outs),
            },
            regions=[body],
        )

    # -- accessors ------------------------------------------------------------

    @property
    def task_name(self) -> str:
        return self.sym_name.data

    def _slots(self, prefix: str) -> list[tuple[int, Attribute, float]]:
        offsets = self.properties[f"{prefix}_offsets"].get_values()  # type: ignore[attr-defined]
        types = self.properties[f"{prefix}_types"].data  # type: ignore[attr-defined]
        scales = self.properties[f"{prefix}_scales"].get_values()  # type: ignore[attr-defined]
        return [(int(o), t, float(s)) for o, t, s in zip(offsets, types, scales)]

    def ins(self) -> list[tuple[int, Attribute, float]]:
        """(GM offset, stored type, scale) of every input."""
        return self._slots("in")

    def outs(self) -> list[tuple[int, Attribute, float]]:
        """(GM offset, stored type, scale) of every output."""
        return self._slots("out")

    @property
    def terminator(self) -> AicpuReturnOp | None:
        last = self.body.block.last_op if self.body.blocks else None
        return last if isinstance(last, AicpuReturnOp) else None

    # -- text form ------------------------------------------------------------

    def print(self, printer: Printer) -> None:
        def slot(s: tuple[int, Attribute, float]) -> None:
            printer.print_string(f"{s[0]} : ")
            printer.print_attribute(s[1])
            if s[2] != 1.0:
                printer.print_string(f" scale {_format_scale(s[2])}")

        printer.print_string(" ")
        printer.print_symbol_name(self.task_name)
        printer.print_string(f" stream {self.stream.value.data} ins [")
        printer.print_list(self.ins(), slot)
        printer.print_string("] outs [")
        printer.print_list(self.outs(), slot)
        printer.print_string("]")
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=True, print_empty_block=True)

    @classmethod
    def parse(cls, parser: Parser) -> AicpuOp:
        def slot() -> AicpuSlot:
            offset = parser.parse_integer(allow_negative=True, allow_boolean=False)
            parser.parse_punctuation(":")
            pos = parser.pos
            t = parser.parse_type()
            if not isinstance(t, TensorType):
                parser.raise_error(f"npu.aicpu: expected a tensor type, got {t}", pos, parser.pos)
            scale = 1.0
            if parser.parse_optional_keyword("scale") is not None:
                scale = float(parser.parse_number())
            return offset, t, scale

        name = parser.parse_symbol_name().data
        parser.parse_keyword("stream")
        stream = parser.parse_integer(allow_negative=True, allow_boolean=False)
        parser.parse_keyword("ins")
        ins = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, slot)
        parser.parse_keyword("outs")
        outs = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, slot)
        attrs = parser.parse_optional_attr_dict_with_keyword()
        op = cls(name, stream, ins, outs, _parse_body(parser))
        if attrs is not None:
            op.attributes.update(attrs.data)
        return op

    # -- verifier -------------------------------------------------------------

    def verify_(self) -> None:
        where = f"npu.aicpu @{self.task_name}"
        if self.stream.value.data < 0:
            raise VerifyException(f"{where}: stream must be >= 0")
        for prefix, kind in (("in", "input"), ("out", "output")):
            counts = [
                len(self.properties[f"{prefix}_offsets"].get_values()),  # type: ignore[attr-defined]
                len(self.properties[f"{prefix}_types"].data),  # type: ignore[attr-defined]
                len(self.properties[f"{prefix}_scales"].get_values()),  # type: ignore[attr-defined]
            ]
            if len(set(counts)) != 1:
                raise VerifyException(
                    f"{where}: {counts[0]} {kind} offset(s), {counts[1]} {kind} type(s) "
                    f"and {counts[2]} {kind} scale(s); there must be one of each per {kind}"
                )
            for arr in ("offsets", "scales"):
                elt = self.properties[f"{prefix}_{arr}"].elt_type  # type: ignore[attr-defined]
                want = i64 if arr == "offsets" else f64
                if elt != want:
                    raise VerifyException(f"{where}: {prefix}_{arr} must be an array<{want}>, got array<{elt}>")
        program = self.parent_op()
        gm_size = program.size if isinstance(program, ProgramOp) else None
        block = self.body.block
        ret = self.terminator
        if ret is None:
            raise VerifyException(f"{where}: the body must end with npu.aicpu_return")
        ins, outs = self.ins(), self.outs()
        if len(block.args) != len(ins):
            raise VerifyException(
                f"{where}: the body takes {len(block.args)} argument(s) but the task "
                f"has {len(ins)} input(s)"
            )
        if len(ret.values) != len(outs):
            raise VerifyException(
                f"{where}: npu.aicpu_return gives {len(ret.values)} value(s) but the "
                f"task has {len(outs)} output(s)"
            )
        for kind, slots, values in (
            ("input", ins, list(block.args)),
            ("output", outs, list(ret.values)),
        ):
            for i, ((offset, stored, scale), value) in enumerate(zip(slots, values)):
                _verify_aicpu_slot(where, f"{kind} #{i}", offset, stored, scale, value.type, gm_size)


def _verify_aicpu_slot(
    where: str,
    what: str,
    offset: int,
    stored: Attribute,
    scale: float,
    logical: Attribute,
    gm_size: int | None,
) -> None:
    if not isinstance(stored, TensorType):
        raise VerifyException(f"{where}: {what} must be stored as a tensor, got {stored}")
    nbytes = _static_nbytes(stored)
    if nbytes is None:
        raise VerifyException(f"{where}: {what} needs a static shape, got {stored}")
    elem = str(stored.get_element_type())
    if elem not in AICPU_STORED_TYPES:
        raise VerifyException(
            f"{where}: {what} is stored as {elem}; the AI CPU reads and writes "
            f"{', '.join(AICPU_STORED_TYPES)}"
        )
    if not math.isfinite(scale) or scale <= 0:
        raise VerifyException(f"{where}: {what} has scale {scale}; a scale must be finite and > 0")
    if elem not in _FLOAT_NAMES and scale != 1.0:
        raise VerifyException(
            f"{where}: {what} is not a float tensor ({stored}); its scale must be 1.0, got {scale}"
        )
    if offset < 0:
        raise VerifyException(f"{where}: {what} has a negative GM offset {offset}")
    if gm_size is not None and offset + nbytes > gm_size:
        raise VerifyException(
            f"{where}: {what} occupies GM [{offset}, {offset + nbytes}) beyond gm_size {gm_size}"
        )
    side = "body argument" if what.startswith("input") else "returned value"
    if not isinstance(logical, TensorType) or tuple(logical.get_shape()) != tuple(stored.get_shape()):
        raise VerifyException(
            f"{where}: {what}: the {side} is {logical} but the stored tensor is {stored}; "
            f"their shapes must be equal"
        )
    lelem = str(logical.get_element_type())
    if lelem != elem and not (lelem in _FLOAT_NAMES and elem in _FLOAT_NAMES):
        raise VerifyException(
            f"{where}: {what}: the {side} has element type {lelem} but the stored tensor "
            f"{elem}; only float types may differ (f16/f32/f64)"
        )


@irdl_op_definition
class AicpuReturnOp(IRDLOperation):
    """Ends an `npu.aicpu` body: the task's results, in logical types, one per
    output."""

    name = "npu.aicpu_return"

    values = var_operand_def(TensorType)

    traits = traits_def(IsTerminator(), HasParent(AicpuOp))
    assembly_format = "($values^ `:` type($values))? attr-dict"

    def __init__(self, *values: SSAValue | Operation):
        super().__init__(operands=[list(values)])


# ---------------------------------------------------------------------------
# Host copies
# ---------------------------------------------------------------------------

MEMCPY_DIRECTIONS = {"d2h": "GM -> host", "h2d": "host -> GM"}


@irdl_op_definition
class MemcpyOp(IRDLOperation):
    """A copy of `nbytes` between GM and the program's host memory, at the
    top of an `npu.program` in schedule order like a launch: `d2h` copies GM
    [gm_offset, +nbytes) to host [host_offset, +nbytes), `h2d` the other way.
    It occupies its stream and the host link, not the AI cores.

        npu.memcpy @x_offload d2h gm 4096 host 0 bytes 1024 stream 1
            attributes {ge.source = "offload of conv_3", ge.tensor = "conv_3"}

    `ge.source` (what the copy is for) and `ge.tensor` (the tensor it moves)
    are optional and go to the profile."""

    name = "npu.memcpy"

    sym_name = prop_def(SymbolNameConstraint())
    direction = prop_def(StringAttr)
    gm_offset = prop_def(IntegerAttr[I64])
    host_offset = prop_def(IntegerAttr[I64])
    nbytes = prop_def(IntegerAttr[I64])
    stream = prop_def(IntegerAttr[I64])

    traits = traits_def(SymbolOpInterface(), HasParent(ProgramOp))

    def __init__(self, name: str, direction: str, gm_offset: int, host_offset: int, nbytes: int, stream: int = 0):
        super().__init__(
            properties={
                "sym_name": StringAttr(name),
                "direction": StringAttr(direction),
                "gm_offset": IntegerAttr(gm_offset, i64),
                "host_offset": IntegerAttr(host_offset, i64),
                "nbytes": IntegerAttr(nbytes, i64),
                "stream": IntegerAttr(stream, i64),
            }
        )

    @property
    def task_name(self) -> str:
        return self.sym_name.data

    def _text(self, key: str) -> str:
        attr = self.attributes.get(key)
        return attr.data if isinstance(attr, StringAttr) else ""

    @property
    def source(self) -> str:
        """What the copy is for (`ge.source`), or ""."""
        return self._text("ge.source")

    @property
    def tensor(self) -> str:
        """The tensor it moves (`ge.tensor`), or ""."""
        return self._text("ge.tensor")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_symbol_name(self.task_name)
        printer.print_string(
            f" {self.direction.data} gm {self.gm_offset.value.data} host {self.host_offset.value.data}"
            f" bytes {self.nbytes.value.data} stream {self.stream.value.data}"
        )
        printer.print_op_attributes(self.attributes, print_keyword=True)

    @classmethod
    def parse(cls, parser: Parser) -> MemcpyOp:
        def number(keyword: str) -> int:
            parser.parse_keyword(keyword)
            return parser.parse_integer(allow_negative=True, allow_boolean=False)

        name = parser.parse_symbol_name().data
        pos = parser.pos
        direction = parser.parse_optional_identifier()
        if direction not in MEMCPY_DIRECTIONS:
            parser.raise_error(f"npu.memcpy: expected a direction, d2h or h2d, got {direction!r}", pos, parser.pos)
        op = cls(name, direction, number("gm"), number("host"), number("bytes"), number("stream"))
        attrs = parser.parse_optional_attr_dict_with_keyword()
        if attrs is not None:
            op.attributes.update(attrs.data)
        return op

    def verify_(self) -> None:
        where = f"npu.memcpy @{self.task_name}"
        direction = self.direction.data
        if direction not in MEMCPY_DIRECTIONS:
            raise VerifyException(
                f"{where}: direction must be d2h ({MEMCPY_DIRECTIONS['d2h']}) or h2d "
                f"({MEMCPY_DIRECTIONS['h2d']}), got '{direction}'"
            )
        n = self.nbytes.value.data
        if n <= 0:
            raise VerifyException(f"{where}: bytes must be > 0, got {n}")
        if self.stream.value.data < 0:
            raise VerifyException(f"{where}: stream must be >= 0, got {self.stream.value.data}")
        program = self.parent_op()
        if not isinstance(program, ProgramOp):
            return
        for side, offset, size in (
            ("gm", self.gm_offset.value.data, program.size),
            ("host", self.host_offset.value.data, program.host_bytes),
        ):
            if offset < 0:
                raise VerifyException(f"{where}: {side} offset must be >= 0, got {offset}")
            if offset + n > size:
                raise VerifyException(
                    f"{where}: {side} [{offset}, {offset + n}) is outside [0, {size}) "
                    f"(the program's {side}_size)"
                )


NPU = Dialect(
    "npu",
    [
        ProgramOp,
        InputOp,
        OutputOp,
        ConstantOp,
        KernelOp,
        LaunchOp,
        StreamRecordOp,
        StreamWaitOp,
        AicpuOp,
        AicpuReturnOp,
        MemcpyOp,
        BlockIdxOp,
        BlockNumOp,
        LoadIndexOp,
        PtrOp,
        DmaOp,
        Load2dOp,
        Load3dOp,
        MmadOp,
        *VECTOR_OP_CLASSES.values(),
        SetFlagOp,
        WaitFlagOp,
        PipeBarrierOp,
    ],
    [PipeAttr, MemSpaceAttr, PtrType],
)
