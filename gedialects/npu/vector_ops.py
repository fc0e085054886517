"""The vector instructions of the AI core: one table, and what follows from it.

Every vector instruction is one `VectorSpec` row of `VECTOR_SPECS`: its
mnemonic, its family, what it computes (a NumPy function), and the tile.vec
op that lowers to it. A family (`FamilySpec` in `FAMILIES`) fixes the
operands (their roles, and which carry block/repeat strides) and the fields.
Everything else is derived from these two tables:

* the npu op classes: `gedialects/npu/ops.py` makes one class per row on its
  family's base class (operands, fields, verifier, text form);
* the encoding: `target/program.py` has one opcode per family, and a row's
  kind id is its position among the rows of its family;
* what the simulator computes (`semantics`) and prices (the target config's
  `vector_cycles_per_repeat` keys are the mnemonics);
* the tile.vec vocabulary (`tile_name`) and tile -> npu's choice of class;
* the table in docs/NPU.md (`python -m gedialects.npu.vector_ops` prints it).

A new instruction of an existing family is one row here, appended after the
last row of its family (kind ids are positions, and saved .om files name
instructions by kind id), plus optionally its cost in target/configs/*.json.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from xdsl.utils.str_enum import StrEnum

from gedialects.npu.isa import BLOCK_BYTES, BLOCKS_PER_REPEAT


class Family(StrEnum):
    """What an instruction's operands and fields look like."""

    BINARY = "binary"
    UNARY = "unary"
    SCALAR = "scalar"
    REDUCE = "reduce"
    CONVERT = "convert"
    DUPLICATE = "duplicate"
    COMPARE = "compare"
    SELECT = "select"
    BROADCAST = "broadcast"


@dataclass(frozen=True)
class Operand:
    """A pointer operand. `per_repeat` None: strided, with `<role>_blk` and
    `<role>_rep` fields (in 32-byte blocks), each repeat touching its `mask`
    leading elements (all 256 bytes' worth if the family has no mask); an
    int: that many contiguous elements per repeat, no stride fields."""

    role: str
    per_repeat: int | None = None


@dataclass(frozen=True)
class FamilySpec:
    operands: tuple[Operand, ...]  # in operand order; the first is written
    scalar: bool = False  # a float immediate `scalar`, the semantics' last argument
    mask: bool = True  # a `mask` field: the leading elements of each repeat processed
    src_dtype: bool = False  # the sources have their own dtype (vconv)

    @property
    def roles(self) -> tuple[str, ...]:
        return tuple(o.role for o in self.operands)

    @property
    def sources(self) -> tuple[Operand, ...]:
        return self.operands[1:]

    @property
    def strided_roles(self) -> tuple[str, ...]:
        """The roles with blk/rep fields, in field order."""
        return tuple(o.role for o in self.operands if o.per_repeat is None)

    @property
    def elementwise(self) -> bool:
        """Every operand has the same elements per repeat, so the semantics
        also apply to flat runs of them."""
        return all(o.per_repeat is None for o in self.operands)


def _strided(*roles: str) -> tuple[Operand, ...]:
    return tuple(Operand(r) for r in roles)


FAMILIES: dict[Family, FamilySpec] = {
    Family.BINARY: FamilySpec(_strided("dst", "src0", "src1")),
    Family.UNARY: FamilySpec(_strided("dst", "src")),
    Family.SCALAR: FamilySpec(_strided("dst", "src"), scalar=True),
    # One result per repeat, written contiguously.
    Family.REDUCE: FamilySpec((Operand("dst", per_repeat=1), Operand("src"))),
    Family.CONVERT: FamilySpec(_strided("dst", "src"), src_dtype=True),
    Family.DUPLICATE: FamilySpec(_strided("dst"), scalar=True),
    Family.COMPARE: FamilySpec(_strided("dst", "src0", "src1")),
    # `cond` (Ascend C's selMask) is not called `mask`: `mask` is a field.
    Family.SELECT: FamilySpec(_strided("dst", "cond", "src0", "src1")),
    # A repeat reads one element per destination block and writes all 8 blocks.
    Family.BROADCAST: FamilySpec(
        (Operand("dst"), Operand("src", per_repeat=BLOCKS_PER_REPEAT)), mask=False
    ),
}


@dataclass(frozen=True)
class VectorSpec:
    """One vector instruction.

    `semantics(*sources[, scalar])` gets each source operand as a
    [repeat, n] array of the elements it reads (n = mask, or the operand's
    `per_repeat`) and the scalar as a value of the dtype; its result is
    broadcast to the destination's [repeat, n] and rounded to the
    destination's dtype when stored."""

    mnemonic: str
    family: Family
    semantics: Callable[..., np.ndarray | np.generic]
    computes: str  # dst = ..., for docs and docstrings
    tile_name: str | None = None  # the tile.vec op lowered to it
    ascend_c: str = ""  # the closest Ascend C API (sources in docs/NPU.md)

    @property
    def op_name(self) -> str:
        return f"npu.{self.mnemonic}"

    @property
    def class_name(self) -> str:
        """`vreduce_sum` -> `VreduceSumOp`."""
        return "".join(part.capitalize() for part in self.mnemonic.split("_")) + "Op"

    @property
    def family_spec(self) -> FamilySpec:
        return FAMILIES[self.family]


def _relu(x):
    return np.maximum(x, x.dtype.type(0))


def _rsqrt(x):
    return np.reciprocal(np.sqrt(x))


def _reduce_sum(x):
    # The adder tree accumulates in fp32; the store rounds once to the dtype.
    return np.sum(x, axis=1, keepdims=True, dtype=np.float32)


def _reduce_max(x):
    return np.max(x, axis=1, keepdims=True)


def _select(cond, a, b):
    # Picks, never combines: an inf or NaN in the other operand cannot leak.
    return np.where(cond != 0, a, b)


def _broadcast_blocks(x):
    return np.repeat(x, BLOCK_BYTES // x.itemsize, axis=1)


def _same(x):
    return x


B, U, S, R = Family.BINARY, Family.UNARY, Family.SCALAR, Family.REDUCE
C = Family.COMPARE

VECTOR_SPECS: tuple[VectorSpec, ...] = (
    VectorSpec("vadd", B, np.add, "src0 + src1", "add", "Add"),
    VectorSpec("vsub", B, np.subtract, "src0 - src1", "sub", "Sub"),
    VectorSpec("vmul", B, np.multiply, "src0 * src1", "mul", "Mul"),
    VectorSpec("vdiv", B, np.divide, "src0 / src1", "div", "Div"),
    VectorSpec("vmax", B, np.maximum, "max(src0, src1)", "max", "Max"),
    VectorSpec("vmin", B, np.minimum, "min(src0, src1)", "min", "Min"),
    VectorSpec("vrelu", U, _relu, "max(src, 0)", "relu", "Relu"),
    VectorSpec("vexp", U, np.exp, "exp(src)", "exp", "Exp"),
    VectorSpec("vln", U, np.log, "ln(src)", "ln", "Ln"),
    VectorSpec("vsqrt", U, np.sqrt, "sqrt(src)", "sqrt", "Sqrt"),
    VectorSpec("vabs", U, np.abs, "abs(src)", "abs", "Abs"),
    VectorSpec("vrec", U, np.reciprocal, "1 / src", "rec", "Reciprocal"),
    VectorSpec("vrsqrt", U, _rsqrt, "1 / sqrt(src)", "rsqrt", "Rsqrt"),
    VectorSpec("vadds", S, np.add, "src + scalar", "adds", "Adds"),
    VectorSpec("vmuls", S, np.multiply, "src * scalar", "muls", "Muls"),
    VectorSpec("vmaxs", S, np.maximum, "max(src, scalar)", "maxs", "Maxs"),
    VectorSpec("vmins", S, np.minimum, "min(src, scalar)", "mins", "Mins"),
    VectorSpec("vreduce_sum", R, _reduce_sum, "sum of the repeat's elements (in fp32)", None, "WholeReduceSum"),
    VectorSpec("vreduce_max", R, _reduce_max, "max of the repeat's elements", None, "WholeReduceMax (value only)"),
    VectorSpec("vconv", Family.CONVERT, _same, "src rounded to dst's dtype", None, "Cast"),
    VectorSpec("vdup", Family.DUPLICATE, _same, "scalar", None, "Duplicate"),
    VectorSpec("vcmp_lt", C, np.less, "src0 < src1 ? 1 : 0", "cmp_lt", "Compare (LT)"),
    VectorSpec("vcmp_le", C, np.less_equal, "src0 <= src1 ? 1 : 0", "cmp_le", "Compare (LE)"),
    VectorSpec("vcmp_gt", C, np.greater, "src0 > src1 ? 1 : 0", "cmp_gt", "Compare (GT)"),
    VectorSpec("vcmp_ge", C, np.greater_equal, "src0 >= src1 ? 1 : 0", "cmp_ge", "Compare (GE)"),
    VectorSpec("vcmp_eq", C, np.equal, "src0 == src1 ? 1 : 0", "cmp_eq", "Compare (EQ)"),
    VectorSpec("vcmp_ne", C, np.not_equal, "src0 != src1 ? 1 : 0", "cmp_ne", "Compare (NE)"),
    VectorSpec("vsel", Family.SELECT, _select, "cond != 0 ? src0 : src1", "sel", "Select"),
    VectorSpec("vbrcb", Family.BROADCAST, _broadcast_blocks, "src[8r + i] in every element of block i of repeat r", "brcb", "Brcb"),
)

SPECS: dict[str, VectorSpec] = {s.mnemonic: s for s in VECTOR_SPECS}
TILE_SPECS: dict[str, VectorSpec] = {s.tile_name: s for s in VECTOR_SPECS if s.tile_name}


def family_members(family: Family) -> tuple[VectorSpec, ...]:
    """The rows of a family in table order: index = kind id."""
    return tuple(s for s in VECTOR_SPECS if s.family == family)


_KIND_IDS = {s.mnemonic: family_members(s.family).index(s) for s in VECTOR_SPECS}


def kind_id(spec: VectorSpec) -> int:
    """Which instruction of its family a row is, in the encoding."""
    return _KIND_IDS[spec.mnemonic]


# -- footprints: which bytes an operand covers, from its base ------------------


def strided_span(repeat: int, mask: int, blk: int, rep: int, esize: int) -> int:
    """Bytes from the base to the end of the last 32-byte block a strided
    operand touches (the hardware addresses UB in whole blocks)."""
    blocks = -(-(mask * esize) // BLOCK_BYTES)
    return ((repeat - 1) * rep + (blocks - 1) * blk + 1) * BLOCK_BYTES


def contiguous_span(repeat: int, per_repeat: int, esize: int) -> int:
    """Bytes of a contiguous operand, rounded up to whole blocks."""
    return -(-(repeat * per_repeat * esize) // BLOCK_BYTES) * BLOCK_BYTES


# -- documentation -----------------------------------------------------------


def markdown_table() -> str:
    """The instruction table of docs/NPU.md section 3."""
    rows = [
        "| instruction | family | operands | dst = | tile.vec | closest Ascend C API |",
        "|---|---|---|---|---|---|",
    ]
    for s in VECTOR_SPECS:
        fam = s.family_spec
        operands = ", ".join(fam.roles) + (", scalar" if fam.scalar else "")
        tile = f"`{s.tile_name}`" if s.tile_name else ""
        rows.append(
            f"| `{s.mnemonic}` | {s.family} | {operands} | {s.computes} | {tile} | {s.ascend_c} |"
        )
    return "\n".join(rows)


if __name__ == "__main__":
    print(markdown_table())
