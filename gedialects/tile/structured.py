"""Structured tile ops: a kernel's computation on whole tensors, before tiling.

A `tile.kernel` whose body holds these ops says *what* it computes, in the
manner of linalg on tensors; the tile passes decide *how*:

    tile.kernel @k3_layer_norm {block_dim = 1 : i64} {
      %x = tile.load "t2" : tensor<16x64xf32>
      %s = tile.reduction "sum" %x : tensor<16x64xf32> -> tensor<16x1xf32>
      %y = tile.map ins(%x, %s : tensor<16x64xf32>, tensor<16x1xf32>) -> tensor<16x64xf32> {
      ^bb0(%a : f32, %b : f32):
        %c = arith.constant 1.562500e-02 : f32
        %m = arith.mulf %b, %c : f32
        %d = arith.subf %a, %m : f32
        tile.yield %d : f32
      }
      tile.store %y, "t3" : tensor<16x64xf32>
    }

* `tile.load` / `tile.store` read and write a GM tensor (`tile.tensor`) as a
  row-major tensor of the given shape (a view: any shape of the same size).
* `tile.map` applies its region elementwise; inputs broadcast as in numpy
  (ranks aligned on the right). The region is a chain of `arith` / `math`
  scalar ops ending in `tile.yield`: a fused elementwise chain.
* `tile.reduction` folds the last dim (`sum` or `max`) and keeps it as 1.
* `tile.gather` reads the GM rows its integer indices choose (an embedding
  lookup): the indices are a tile.load, each row one DMA.
* `tile.batch_matmul` is a (batched) product on the cube, in fp32; maps after
  it are its epilogue (bias, activation), applied in UB.

The iteration space of such a kernel is the shape of what it stores; every
value is that shape or broadcasts to it. `tile-select-tiling` chooses a tile
box over the leading dims (`#tile.tiling`), `tile-distribute` spreads the
tiles over cores (`#tile.distribution`), `tile-pipeline-buffers` double-buffers
the loads and `tile-expand-structured` rewrites the kernel into loops of
buffers, DMA copies and vector ops (gedialects/tile/ops.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects.builtin import (
    DenseArrayBase,
    FloatAttr,
    IntAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    UnitAttr,
    f32,
    i64,
)
from xdsl.ir import Attribute, Operation, ParametrizedAttribute, Region, SSAValue
from xdsl.irdl import (
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    param_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.dialects.builtin import ArrayAttr
from xdsl.traits import HasParent, IsTerminator
from xdsl.utils.exceptions import PassFailedException, VerifyException

from gedialects.tile.conv import ConvOp
from gedialects.tile.elementwise import ElementwiseOp
from gedialects.tile.gemm import GemmOp
from gedialects.tile.ops import KernelOp, TileOp
from gedialects.walk import outermost

REDUCTIONS = ("sum", "max")
FRACTAL_NZ = "FRACTAL_NZ"
"""The blocked layout of a cube operand in GM (tile.load `layout`)."""


def shape_of(v: SSAValue) -> tuple[int, ...]:
    assert isinstance(v.type, TensorType)
    return tuple(v.type.get_shape())


def broadcasts_to(shape: Sequence[int], target: Sequence[int]) -> bool:
    """numpy's rule: ranks aligned on the right, each dim equal or 1."""
    if len(shape) > len(target):
        return False
    return all(a in (1, b) for a, b in zip(reversed(shape), reversed(target)))


def collapse_dims(out: Sequence[int], operands: Sequence[Sequence[int]]) -> tuple[tuple[int, ...], list[tuple[int, ...]]]:
    """Merge adjacent dims where every operand is either whole or broadcast in
    both; returns the collapsed output shape and operand shapes."""
    n = len(out)
    aligned = [(1,) * (n - len(s)) + tuple(s) for s in operands]
    groups: list[list[int]] = []
    for k in range(n):
        if out[k] == 1:
            continue  # unit dims merge with anything
        pattern = tuple(s[k] == 1 for s in aligned)
        if groups and groups[-1][0] == pattern:
            groups[-1][1].append(k)
        else:
            groups.append([pattern, [k]])
    if not groups:
        return (1,), [(1,) for _ in operands]
    new_out = tuple(math.prod(out[k] for k in ks) for _, ks in groups)
    new_ops = [tuple(math.prod(s[k] for k in ks) for _, ks in groups) for s in aligned]
    return new_out, new_ops


# ------------------------------------------------------------ attributes


def _parse_ints(parser) -> tuple[int, ...]:
    return tuple(parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_integer))


def _print_ints(printer, values) -> None:
    printer.print_string("[" + ", ".join(str(v.data) for v in values) + "]")


WEIGHTS_STATIONARY = "weights"
"""A matmul kernel's loop order that keeps its right operand (the weights)
in L1: each core runs every row tile of one column block of the output,
loading that block of the weights once (`TilingAttr.stationary`)."""


@irdl_attr_definition
class TilingAttr(ParametrizedAttribute):
    """The tile box a structured kernel iterates over: `tile` elements per
    dim (the last dim whole), `grid` tiles per dim, the UB bytes one tile's
    buffers take (double-buffered loads counted twice), the cycles the
    cost model predicts for the kernel, and which operand stays on chip
    across a core's tiles: none ("", the tiles in row-major order) or, for
    a matmul kernel, WEIGHTS_STATIONARY (printed only then)."""

    name = "tile.tiling"
    tile: ArrayAttr[IntAttr] = param_def()
    grid: ArrayAttr[IntAttr] = param_def()
    ub_bytes: IntAttr = param_def()
    cycles: IntAttr = param_def()
    stationary: StringAttr = param_def()

    def __init__(self, tile: Sequence[int], grid: Sequence[int], ub_bytes: int, cycles: int, stationary: str = ""):
        super().__init__(
            ArrayAttr([IntAttr(v) for v in tile]), ArrayAttr([IntAttr(v) for v in grid]),
            IntAttr(ub_bytes), IntAttr(cycles), StringAttr(stationary),
        )

    @property
    def weights_stationary(self) -> bool:
        return self.stationary.data == WEIGHTS_STATIONARY

    @property
    def tile_shape(self) -> tuple[int, ...]:
        return tuple(v.data for v in self.tile)

    @property
    def grid_shape(self) -> tuple[int, ...]:
        return tuple(v.data for v in self.grid)

    @property
    def tiles(self) -> int:
        n = 1
        for g in self.grid_shape:
            n *= g
        return n

    @classmethod
    def parse_parameters(cls, parser) -> list[Attribute]:
        values: dict[str, object] = {}
        parser.parse_punctuation("<")
        for i, key in enumerate(("tile", "grid", "ub_bytes", "cycles")):
            if i:
                parser.parse_punctuation(",")
            parser.parse_keyword(key)
            parser.parse_punctuation("=")
            values[key] = _parse_ints(parser) if key in ("tile", "grid") else parser.parse_integer()
        stationary = ""
        if parser.parse_optional_punctuation(","):
            parser.parse_keyword("stationary")
            parser.parse_punctuation("=")
            stationary = parser.parse_str_literal()
        parser.parse_punctuation(">")
        return [
            ArrayAttr([IntAttr(v) for v in values["tile"]]),  # type: ignore[union-attr]
            ArrayAttr([IntAttr(v) for v in values["grid"]]),  # type: ignore[union-attr]
            IntAttr(values["ub_bytes"]),  # type: ignore[arg-type]
            IntAttr(values["cycles"]),  # type: ignore[arg-type]
            StringAttr(stationary),
        ]

    def print_parameters(self, printer) -> None:
        printer.print_string("<tile = ")
        _print_ints(printer, self.tile)
        printer.print_string(", grid = ")
        _print_ints(printer, self.grid)
        printer.print_string(f", ub_bytes = {self.ub_bytes.data}, cycles = {self.cycles.data}")
        if self.stationary.data:
            printer.print_string(f', stationary = "{self.stationary.data}"')
        printer.print_string(">")

    def verify(self) -> None:
        if len(self.tile.data) != len(self.grid.data) or not self.tile.data:
            raise VerifyException("#tile.tiling: tile and grid need the same, non-zero rank")
        if any(v.data < 1 for v in (*self.tile.data, *self.grid.data)):
            raise VerifyException("#tile.tiling: tile sizes and grid counts are positive")
        if self.stationary.data not in ("", WEIGHTS_STATIONARY):
            raise VerifyException(f'#tile.tiling: the stationary operand is "{WEIGHTS_STATIONARY}" or none')
        if self.weights_stationary and (len(self.grid.data) < 2 or any(g.data != 1 for g in self.grid.data[:-2])):
            raise VerifyException("#tile.tiling: a weights-stationary tiling covers one matrix (grid [1.., M, N])")


@irdl_attr_definition
class DistributionAttr(ParametrizedAttribute):
    """How a structured kernel's tiles are spread over its `block_dim` cores:
    core b runs tiles [b * per_core, min((b + 1) * per_core, tiles))."""

    name = "tile.distribution"
    cores: IntAttr = param_def()
    per_core: IntAttr = param_def()

    def __init__(self, cores: int, per_core: int):
        super().__init__(IntAttr(cores), IntAttr(per_core))

    @classmethod
    def parse_parameters(cls, parser) -> list[Attribute]:
        parser.parse_punctuation("<")
        parser.parse_keyword("cores")
        parser.parse_punctuation("=")
        cores = parser.parse_integer()
        parser.parse_punctuation(",")
        parser.parse_keyword("per_core")
        parser.parse_punctuation("=")
        per_core = parser.parse_integer()
        parser.parse_punctuation(">")
        return [IntAttr(cores), IntAttr(per_core)]

    def print_parameters(self, printer) -> None:
        printer.print_string(f"<cores = {self.cores.data}, per_core = {self.per_core.data}>")


TILING_ATTR = "tiling"
DISTRIBUTION_ATTR = "distribution"


# ------------------------------------------------------------ ops


@irdl_op_definition
class LoadOp(TileOp):
    """The GM tensor `tensor`, read as a row-major tensor of the result type;
    with `perm`, read as transpose(t, perm) of a row-major t (the innermost
    dim stays innermost: DMA moves rows); with `source` and `offsets`, read
    as the box t[offsets : offsets + shape] of a row-major t of shape
    `source` (a slice), with `steps` every steps[k]-th element along dim k
    (a strided slice; the innermost step is 1: DMA moves rows); with both,
    as transpose(box, perm), the box's shape the result's permuted back
    (an attention's heads read from a product of several projections).
    `buffers = 2` (tile-pipeline-buffers) double-buffers its tiles.
    With `layout = "FRACTAL_NZ"` (a cube operand only) the GM tensor holds
    each matrix [R, C] of the result as [ceil(C / c0)][round_up(R, 16)][c0]
    (c0 = 32 bytes of elements), zero-padded: a column block's rows are one
    contiguous run, so a tile of them is one DMA burst (weights packed at
    compile time)."""

    name = "tile.load"
    tensor = prop_def(StringAttr)
    layout = opt_prop_def(StringAttr)
    perm = opt_prop_def(DenseArrayBase)
    source = opt_prop_def(DenseArrayBase)
    offsets = opt_prop_def(DenseArrayBase)
    steps = opt_prop_def(DenseArrayBase)
    buffers = opt_prop_def(IntegerAttr)
    result = result_def(TensorType)
    assembly_format = "$tensor attr-dict `:` type($result)"

    def __init__(self, tensor: str, type: TensorType, perm: Sequence[int] | None = None,
                 window: tuple[Sequence[int], Sequence[int]] | None = None, steps: Sequence[int] | None = None,
                 layout: str | None = None):
        """`window`: (source shape, offsets) of a box load; `steps` its
        strides in elements of the source (None: all 1)."""
        props: dict[str, Attribute] = {"tensor": StringAttr(tensor)}
        if layout is not None:
            props["layout"] = StringAttr(layout)
        if perm is not None:
            props["perm"] = DenseArrayBase.from_list(i64, list(perm))
        if window is not None:
            props["source"] = DenseArrayBase.from_list(i64, list(window[0]))
            props["offsets"] = DenseArrayBase.from_list(i64, list(window[1]))
        if steps is not None and any(sp != 1 for sp in steps):
            props["steps"] = DenseArrayBase.from_list(i64, list(steps))
        super().__init__(properties=props, result_types=[type])

    def step_sizes(self) -> tuple[int, ...]:
        n = len(shape_of(self.result))
        return (1,) * n if self.steps is None else tuple(int(sp) for sp in self.steps.get_values())

    def buffer_count(self) -> int:
        return 1 if self.buffers is None else self.buffers.value.data

    def permutation(self) -> tuple[int, ...]:
        n = len(shape_of(self.result))
        return tuple(range(n)) if self.perm is None else tuple(int(p) for p in self.perm.get_values())

    def gm_strides(self) -> tuple[int, ...]:
        """Element strides in GM of each dim of the result."""
        perm = self.permutation()
        if self.source is not None:  # a box, permuted: result dim k is the source's dim perm[k]
            strides = row_major_strides([int(d) for d in self.source.get_values()])
            return tuple(strides[p] * sp for p, sp in zip(perm, self.step_sizes()))
        out = shape_of(self.result)
        source = [0] * len(out)
        for k, p in enumerate(perm):
            source[p] = out[k]
        strides = row_major_strides(source)
        return tuple(strides[p] for p in perm)

    def gm_base(self) -> int:
        """Element offset in GM of the box's first element."""
        return _window_base(self.source, self.offsets)

    def box_shape(self) -> list[int]:
        """The result's shape in the dims of the tensor read (a permuted
        load's shape permuted back)."""
        out, box = shape_of(self.result), list(shape_of(self.result))
        for k, p in enumerate(self.permutation()):
            box[p] = out[k]
        return box

    def fractal_nz(self) -> bool:
        return self.layout is not None and self.layout.data == FRACTAL_NZ

    def verify_(self) -> None:
        if self.buffers is not None and self.buffers.value.data not in (1, 2):
            raise VerifyException("tile.load: buffers must be 1 or 2")
        if self.layout is not None:
            if self.layout.data != FRACTAL_NZ:
                raise VerifyException(f"tile.load: layout '{self.layout.data}' is not {FRACTAL_NZ}")
            if len(shape_of(self.result)) < 2 or any(p is not None for p in (self.perm, self.source, self.steps)):
                raise VerifyException(f"tile.load: a {FRACTAL_NZ} load reads whole matrices (rank >= 2, no perm or box)")
        if self.perm is not None:
            perm = self.permutation()
            if sorted(perm) != list(range(len(shape_of(self.result)))):
                raise VerifyException(f"tile.load: perm {list(perm)} is not a permutation of the result's dims")
            if perm[-1] != len(perm) - 1:
                raise VerifyException("tile.load: perm keeps the innermost dim innermost (DMA moves rows)")
        if self.perm is not None and self.steps is not None:
            raise VerifyException("tile.load: a permuted box has no steps")
        _verify_window("tile.load", self.source, self.offsets, self.box_shape(), self.step_sizes())
        if self.steps is not None:
            steps = self.step_sizes()
            if self.source is None:
                raise VerifyException("tile.load: steps need a box (source and offsets)")
            if len(steps) != len(shape_of(self.result)) or any(sp < 1 for sp in steps):
                raise VerifyException(f"tile.load: steps {list(steps)} are not one positive step per dim")
            if steps[-1] != 1:
                raise VerifyException("tile.load: the innermost step is 1 (DMA moves rows)")


def pack_fractal_nz(array, c0: int):
    """A numpy array [.., R, C] in the FRACTAL_NZ layout of a tile.load:
    [.., ceil(C / c0), round_up(R, 16), c0], zero-padded."""
    import numpy as np

    *batch, rows, cols = array.shape
    blocks, padded = -(-cols // c0), -(-rows // 16) * 16
    out = np.zeros((*batch, padded, blocks * c0), array.dtype)
    out[..., :rows, :cols] = array
    return np.ascontiguousarray(out.reshape(*batch, padded, blocks, c0).swapaxes(-2, -3))


def row_major_strides(shape: Sequence[int]) -> tuple[int, ...]:
    strides, step = [0] * len(shape), 1
    for k in range(len(shape) - 1, -1, -1):
        strides[k] = step
        step *= shape[k]
    return tuple(strides)


def _window_base(source, offsets) -> int:
    if source is None or offsets is None:
        return 0
    strides = row_major_strides([int(d) for d in source.get_values()])
    return sum(int(o) * s for o, s in zip(offsets.get_values(), strides))


def _verify_window(what: str, source, offsets, shape: Sequence[int], steps: Sequence[int] | None = None) -> None:
    if (source is None) != (offsets is None):
        raise VerifyException(f"{what}: source and offsets go together")
    if source is None:
        return
    src, off = [int(d) for d in source.get_values()], [int(o) for o in offsets.get_values()]
    if not len(src) == len(off) == len(shape):
        raise VerifyException(f"{what}: source {src}, offsets {off} and the box {list(shape)} differ in rank")
    steps = steps or (1,) * len(shape)
    if any(o < 0 or o + (d - 1) * sp >= n for o, d, n, sp in zip(off, shape, src, steps) if d):
        raise VerifyException(f"{what}: the box {list(shape)} at {off} is not inside {src}")


@irdl_op_definition
class StoreOp(TileOp):
    """Write `value` to the GM tensor `tensor` (row-major); with `dest` and
    `offsets`, into the box tensor[offsets : offsets + shape] of a row-major
    tensor of shape `dest` (one input of a concat)."""

    name = "tile.store"
    value = operand_def(TensorType)
    tensor = prop_def(StringAttr)
    dest = opt_prop_def(DenseArrayBase)
    offsets = opt_prop_def(DenseArrayBase)
    assembly_format = "$value `,` $tensor attr-dict `:` type($value)"

    def __init__(self, value: SSAValue, tensor: str, window: tuple[Sequence[int], Sequence[int]] | None = None):
        props: dict[str, Attribute] = {"tensor": StringAttr(tensor)}
        if window is not None:
            props["dest"] = DenseArrayBase.from_list(i64, list(window[0]))
            props["offsets"] = DenseArrayBase.from_list(i64, list(window[1]))
        super().__init__(operands=[value], properties=props)

    def gm_strides(self) -> tuple[int, ...]:
        shape = shape_of(self.value) if self.dest is None else [int(d) for d in self.dest.get_values()]
        return row_major_strides(shape)

    def gm_base(self) -> int:
        return _window_base(self.dest, self.offsets)

    def verify_(self) -> None:
        _verify_window("tile.store", self.dest, self.offsets, shape_of(self.value))


@irdl_op_definition
class MapOp(TileOp):
    """result[i] = body(inputs[i]...), inputs broadcast numpy-style to the
    result's shape; block argument k is an element of input k."""

    name = "tile.map"
    inputs = var_operand_def(TensorType)
    result = result_def(TensorType)
    body = region_def("single_block")
    assembly_format = "`ins` `(` $inputs `:` type($inputs) `)` attr-dict `->` type($result) $body"

    def __init__(self, inputs: Sequence[SSAValue], result_type: TensorType, body: Region):
        super().__init__(operands=[list(inputs)], result_types=[result_type], regions=[body])

    def verify_(self) -> None:
        out = shape_of(self.result)
        for x in self.inputs:
            if not broadcasts_to(shape_of(x), out):
                raise VerifyException(
                    f"tile.map: input {list(shape_of(x))} does not broadcast to the result {list(out)}"
                )
        args = self.body.block.args
        if len(args) != len(self.inputs):
            raise VerifyException("tile.map: the body takes one element per input")
        for a, x in zip(args, self.inputs):
            if a.type != x.type.element_type:  # type: ignore[attr-defined]
                raise VerifyException(f"tile.map: block argument {a.type} is not the element type of its input")
        term = self.body.block.last_op
        if not isinstance(term, YieldOp) or len(term.values) != 1:
            raise VerifyException("tile.map: the body ends with tile.yield of one value")
        if term.values[0].type != self.result.type.element_type:  # type: ignore[attr-defined]
            raise VerifyException("tile.map: the yielded value has the result's element type")


@irdl_op_definition
class YieldOp(TileOp):
    """Ends a map body (a tile.map's or tile.elementwise's, a tile.conv's epilogue or stage, a tile.gemm's
    epilogue): the element(s) it produces."""

    name = "tile.yield"
    values = var_operand_def()
    traits = traits_def(IsTerminator(), HasParent(MapOp, ConvOp, GemmOp, ElementwiseOp))
    assembly_format = "$values `:` type($values) attr-dict"

    def __init__(self, values: Sequence[SSAValue]):
        super().__init__(operands=[list(values)])


@irdl_op_definition
class ReductionOp(TileOp):
    """Fold the last dim of `input` with `kind` (sum or max); it stays as 1."""

    name = "tile.reduction"
    kind = prop_def(StringAttr)
    input = operand_def(TensorType)
    result = result_def(TensorType)
    assembly_format = "$kind $input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, kind: str, input: SSAValue):
        shape = shape_of(input)[:-1] + (1,)
        elem = input.type.element_type  # type: ignore[attr-defined]
        super().__init__(
            operands=[input], properties={"kind": StringAttr(kind)}, result_types=[TensorType(elem, shape)]
        )

    def verify_(self) -> None:
        if self.kind.data not in REDUCTIONS:
            raise VerifyException(f"tile.reduction: kind must be one of {', '.join(REDUCTIONS)}")
        ins, out = shape_of(self.input), shape_of(self.result)
        if not ins or out != ins[:-1] + (1,):
            raise VerifyException(f"tile.reduction: result {list(out)} must be the input {list(ins)} with its last dim 1")
        if self.input.type.element_type != self.result.type.element_type:  # type: ignore[attr-defined]
            raise VerifyException("tile.reduction: result and input have the same element type")


@irdl_op_definition
class BatchMatmulOp(TileOp):
    """result[..., m, n] = sum_k a[..., m, k] * b[..., k, n] on the cube, in fp32;
    batch dims broadcast. With `transpose_b`, `b` holds b^T ([..., n, k]):
    its rows are the columns of the product (a weight stored transposed, or
    the keys of attention). Both operands are tile.loads: the cube reads them
    from GM into L1, not through UB."""

    name = "tile.batch_matmul"
    a = operand_def(TensorType)
    b = operand_def(TensorType)
    transpose_b = opt_prop_def(UnitAttr)
    result = result_def(TensorType)
    assembly_format = "$a `,` $b attr-dict `:` type($a) `,` type($b) `->` type($result)"

    def __init__(self, a: SSAValue, b: SSAValue, transpose_b: bool = False):
        sa, sb = shape_of(a), shape_of(b)
        n = sb[-2] if transpose_b else sb[-1]
        batch = _broadcast(sa[:-2], sb[:-2])
        props = {"transpose_b": UnitAttr()} if transpose_b else {}
        super().__init__(operands=[a, b], properties=props,
                         result_types=[TensorType(f32, [*batch, sa[-2], n])])

    def contraction(self) -> tuple[int, int, int]:
        """(M, N, K)."""
        sa, sb = shape_of(self.a), shape_of(self.b)
        n = sb[-2] if self.transpose_b is not None else sb[-1]
        return sa[-2], n, sa[-1]

    def verify_(self) -> None:
        sa, sb = shape_of(self.a), shape_of(self.b)
        if len(sa) < 2 or len(sb) < 2:
            raise VerifyException("tile.batch_matmul: operands have rank >= 2")
        k_b = sb[-1] if self.transpose_b is not None else sb[-2]
        if sa[-1] != k_b:
            raise VerifyException(f"tile.batch_matmul: contraction sizes differ ({sa[-1]} vs {k_b})")
        if not isinstance(self.a.owner, LoadOp) or not isinstance(self.b.owner, LoadOp):
            raise VerifyException("tile.batch_matmul: both operands are tile.load results (the cube reads GM)")


@irdl_op_definition
class AttentionOp(TileOp):
    """result[..., i, :] = softmax_j(q[..., i, :] . k[..., j, :] * scale
    + sum_m masks[m][..., i, j] * mask_scales[m]) . v[..., j, :], in fp32, on
    the cube and the vector unit: scaled dot-product attention as one
    flash-attention kernel (the scores of one tile of query rows and one
    block of keys at a time, an online softmax across key blocks; the
    scores never reach GM). q [.., Sq, d], k [.., Sk, d] (keys as rows),
    v [.., Sk, dv] or, with `transpose_v`, v^T [.., dv, Sk]; masks broadcast
    to [.., Sq, Sk] with whole rows of keys. Every operand is a tile.load
    the expansion reads itself, block by block (not through the tile's UB
    boxes); the iteration space is the result's [.., Sq, dv]. With
    `zero_empty_rows`, a row whose every score is -inf gives 0, not NaN."""

    name = "tile.attention"
    q = operand_def(TensorType)
    k = operand_def(TensorType)
    v = operand_def(TensorType)
    masks = var_operand_def(TensorType)
    scale = prop_def(FloatAttr)
    mask_scales = opt_prop_def(DenseArrayBase)
    transpose_v = opt_prop_def(UnitAttr)
    zero_empty_rows = opt_prop_def(UnitAttr)
    result = result_def(TensorType)
    assembly_format = (
        "$q `,` $k `,` $v (`mask` `(` $masks^ `:` type($masks) `)`)? attr-dict "
        "`:` type($q) `,` type($k) `,` type($v) `->` type($result)"
    )

    def __init__(self, q: SSAValue, k: SSAValue, v: SSAValue, masks: Sequence[SSAValue], scale: float,
                 mask_scales: Sequence[float] | None = None, transpose_v: bool = False,
                 zero_empty_rows: bool = False):
        sq, sk, sv = shape_of(q), shape_of(k), shape_of(v)
        dv = sv[-2] if transpose_v else sv[-1]
        batch = _broadcast(_broadcast(sq[:-2], sk[:-2]), sv[:-2])
        props: dict[str, Attribute] = {"scale": FloatAttr(scale, f32)}
        if mask_scales is not None and any(m != 1.0 for m in mask_scales):
            props["mask_scales"] = DenseArrayBase.from_list(f32, list(mask_scales))
        if transpose_v:
            props["transpose_v"] = UnitAttr()
        if zero_empty_rows:
            props["zero_empty_rows"] = UnitAttr()
        super().__init__(operands=[q, k, v, list(masks)], properties=props,
                         result_types=[TensorType(f32, [*batch, sq[-2], dv])])

    def mask_factors(self) -> list[float]:
        if self.mask_scales is None:
            return [1.0] * len(self.masks)
        return [float(x) for x in self.mask_scales.get_values()]

    def sizes(self) -> tuple[int, int, int, int]:
        """(Sq, Sk, d, dv)."""
        sq, sk, sv = shape_of(self.q), shape_of(self.k), shape_of(self.v)
        dv = sv[-2] if self.transpose_v is not None else sv[-1]
        return sq[-2], sk[-2], sq[-1], dv

    def verify_(self) -> None:
        sq, sk, sv = shape_of(self.q), shape_of(self.k), shape_of(self.v)
        if min(len(sq), len(sk), len(sv)) < 2:
            raise VerifyException("tile.attention: operands have rank >= 2")
        keys = sv[-1] if self.transpose_v is not None else sv[-2]
        if sq[-1] != sk[-1] or sk[-2] != keys:
            raise VerifyException(f"tile.attention: q {list(sq)}, k {list(sk)} and v {list(sv)} do not match")
        Sq, Sk, _, _ = self.sizes()
        scores = (*shape_of(self.result)[:-2], Sq, Sk)
        for m in self.masks:
            if not broadcasts_to(shape_of(m), scores) or shape_of(m)[-1] != Sk:
                raise VerifyException(f"tile.attention: mask {list(shape_of(m))} is not whole rows of keys of {list(scores)}")
        if len(self.mask_factors()) != len(self.masks):
            raise VerifyException("tile.attention: one mask scale per mask")
        for x in (self.q, self.k, self.v, *self.masks):
            if not isinstance(x.owner, LoadOp):
                raise VerifyException("tile.attention: every operand is a tile.load result")
        if self.q.type.element_type != self.k.type.element_type or self.q.type.element_type != self.v.type.element_type:  # type: ignore[attr-defined]
            raise VerifyException("tile.attention: q, k and v have one element type")


@irdl_op_definition
class GatherOp(TileOp):
    """Rows of the GM tensor `tensor`, chosen by integer indices: with the
    tensor viewed as `table` = [A, V, B] (row-major), result[a, n, b] =
    tensor[a, indices[n], b]; `indices` is [N, 1] (i32 or i64) and the result
    [A, N, B]. A negative index counts from the end; one outside [-V, V) is
    an error when the kernel runs. ONNX Gather along axis k of data is the
    view A = prod(data.shape[:k]), V = data.shape[k], B = the rest."""

    name = "tile.gather"
    tensor = prop_def(StringAttr)
    table = prop_def(DenseArrayBase)
    indices = operand_def(TensorType)
    result = result_def(TensorType)
    assembly_format = "$tensor `[` $indices `]` attr-dict `:` type($indices) `->` type($result)"

    def __init__(self, tensor: str, table: Sequence[int], indices: SSAValue, element: Attribute):
        a, _, b = table
        n = shape_of(indices)[0]
        super().__init__(operands=[indices],
                         properties={"tensor": StringAttr(tensor), "table": DenseArrayBase.from_list(i64, list(table))},
                         result_types=[TensorType(element, [a, n, b])])

    def table_shape(self) -> tuple[int, int, int]:
        a, v, b = (int(d) for d in self.table.get_values())
        return a, v, b

    def verify_(self) -> None:
        table = [int(d) for d in self.table.get_values()]
        idx, out = shape_of(self.indices), shape_of(self.result)
        if len(table) != 3 or min(table) < 1:
            raise VerifyException(f"tile.gather: table is [A, V, B] with positive sizes, got {table}")
        element = self.indices.type.element_type  # type: ignore[attr-defined]
        if not isinstance(element, IntegerType) or element.width.data not in (32, 64):
            raise VerifyException(f"tile.gather: indices are i32 or i64, got {element}")
        if len(idx) != 2 or idx[1] != 1:
            raise VerifyException(f"tile.gather: indices are [N, 1], got {list(idx)}")
        if out != (table[0], idx[0], table[2]):
            raise VerifyException(f"tile.gather: result {list(out)} is not [A, N, B] = {[table[0], idx[0], table[2]]}")


def _broadcast(a: Sequence[int], b: Sequence[int]) -> tuple[int, ...]:
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
    return tuple(max(x, y) for x, y in zip(a, b))


STRUCTURED_OPS = (LoadOp, GatherOp, StoreOp, MapOp, ReductionOp, BatchMatmulOp, AttentionOp)
CUBE_OPS = (BatchMatmulOp, AttentionOp)
"""Structured ops whose operands the expansion reads from GM itself (not as UB boxes of the tile)."""


def is_structured(kernel: KernelOp) -> bool:
    """A kernel written with structured ops (not yet expanded into loops)."""
    return any(isinstance(op, STRUCTURED_OPS) for op in kernel.body.block.ops)


def tiled_kernels(module: Operation):
    """(kernel, its #tile.tiling) for every structured kernel under `module`;
    a kernel without a tiling is a PassFailedException naming the pass to run first."""
    for kernel in outermost(module, KernelOp):
        if is_structured(kernel):
            tiling = kernel.attributes.get(TILING_ATTR)
            if not isinstance(tiling, TilingAttr):
                raise PassFailedException(
                    f"tile.kernel {kernel.sym_name.data}: no #tile.tiling (run tile-select-tiling first)"
                )
            yield kernel, tiling


def iteration_shape(kernel: KernelOp) -> tuple[int, ...]:
    """The shape of what a structured kernel stores: every value but the
    operands of a batch_matmul or an attention broadcasts to it."""
    shape: tuple[int, ...] = ()
    cube_operands = {v for op in kernel.body.block.ops if isinstance(op, CUBE_OPS) for v in op.operands}
    for op in kernel.body.block.ops:
        for v in (*op.operands, *op.results):
            if isinstance(v.type, TensorType) and v not in cube_operands:
                shape = _broadcast(shape, shape_of(v))
    return shape


__all__ = [
    "LoadOp", "GatherOp", "StoreOp", "MapOp", "YieldOp", "ReductionOp", "BatchMatmulOp", "AttentionOp", "TilingAttr",
    "DistributionAttr", "STRUCTURED_OPS", "CUBE_OPS", "is_structured", "iteration_shape", "IntegerAttr", "i64",
]
