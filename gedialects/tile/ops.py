"""The tile dialect: kernels over output tiles, on-chip buffers, tile ops.

One `tile.kernel` per fused group of the graph. Its body is a loop nest
(`scf.for` over `index` values, `arith` for index math) over output tiles;
the outer loop distributes tiles over AI cores by `tile.block_idx`. Buffers
are `tile.alloc`ated in a named on-chip space (l1, l0a, l0b, l0c, ub) with a
shape, element type and layout, but no address: `convert-tile-to-npu` places
them. A buffer with `buffers = 2` is multi-buffered: inside the loop marked
`tile.pipeline` it alternates between two copies (ping-pong).

References (`!tile.ref<space, elem>`) are buffers, GM tensors (`tile.gm`) or
element offsets into either (`tile.at`). Tile ops name what moves or computes
and with which access pattern (shape and per-operand strides, in elements);
tile->npu decides how that becomes instructions (bursts, repeats, masks, the
pipe of each path) and inserts synchronisation.

    tile.program @net {
      tile.tensor {name = "x", kind = "input", offset = 0 : i64, type = tensor<1x3x8x8xf32>, layout = "NCHW"}
      tile.kernel @conv1 {block_dim = 4 : i64} {
        %b = tile.block_idx
        %ub = tile.alloc {space = "ub", shape = array<i64: 1024>, layout = "NC1HWC0", buffers = 2 : i64} : !tile.ref<ub, f32>
        ...
      }
    }
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from xdsl.dialects.builtin import (
    I64,
    ArrayAttr,
    DenseArrayBase,
    Float16Type,
    Float32Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    StringAttr,
    SymbolRefAttr,
    TensorType,
    UnitAttr,
    f64,
    i64,
)
from xdsl.ir import (
    Attribute,
    Block,
    ParametrizedAttribute,
    Region,
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
    param_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import HasParent, IsolatedFromAbove, IsTerminator, NoTerminator, SymbolOpInterface
from xdsl.utils.exceptions import VerifyException

from gedialects.npu.vector_ops import TILE_SPECS

SPACES = ("gm", "l1", "l0a", "l0b", "l0c", "ub")
LAYOUTS = ("ND", "NCHW", "NC1HWC0", "FRACTAL_Z", "FRACTAL_NZ", "ZZ", "ZN", "NZ", "FLAT_NC1HWC0")
VECTOR_OPS = tuple(TILE_SPECS)  # tile.vec's ops: the rows of gedialects/npu/vector_ops.py with a tile name


def element_bytes(element: Attribute) -> int | None:
    """Bytes of one element in GM or on chip: 2 for f16, 4 for f32, width/8
    for i32/i64 (indices) and 1 for i1 (bool bytes); None for types the AI
    core's buffers do not hold."""
    if isinstance(element, Float16Type):
        return 2
    if isinstance(element, Float32Type):
        return 4
    if isinstance(element, IntegerType) and element.width.data in (1, 8, 32, 64):
        return max(1, element.width.data // 8)
    return None


def int_array(values: Sequence[int]) -> DenseArrayBase:
    return _int_array(tuple(int(v) for v in values))


@functools.lru_cache(maxsize=1 << 16)
def _int_array(values: tuple[int, ...]) -> DenseArrayBase:
    """Built once per value: attributes are immutable, and a kernel's views
    repeat a few shapes and strides (densenet121: ~5k arrays)."""
    return DenseArrayBase.from_list(i64, values)


def ints(attr: Attribute | None) -> tuple[int, ...]:
    if attr is None:
        return ()
    assert isinstance(attr, DenseArrayBase)
    return tuple(int(v) for v in attr.get_values())


def iprop(op: IRDLOperation, name: str, default: int | None = None) -> int:
    attr = op.properties.get(name)
    if attr is None:
        if default is None:
            raise VerifyException(f"{op.name}: missing property '{name}'")
        return default
    return attr.value.data  # type: ignore[union-attr]


@irdl_attr_definition
class RefType(ParametrizedAttribute, TypeAttribute):
    """A reference to elements in one memory space: `!tile.ref<ub, f32>`."""

    name = "tile.ref"
    space: StringAttr = param_def()
    element: Attribute = param_def()

    def __init__(self, space: str, element: Attribute):
        super().__init__(StringAttr(space), element)

    def verify(self) -> None:
        if self.space.data not in SPACES:
            raise VerifyException(f"!tile.ref: unknown memory space '{self.space.data}'")

    @classmethod
    def parse_parameters(cls, parser) -> list[Attribute]:
        parser.parse_punctuation("<")
        space = parser.parse_identifier()
        parser.parse_punctuation(",")
        elem = parser.parse_type()
        parser.parse_punctuation(">")
        return [StringAttr(space), elem]

    def print_parameters(self, printer) -> None:
        printer.print_string(f"<{self.space.data}, ")
        printer.print_attribute(self.element)
        printer.print_string(">")


def space_of(value: SSAValue) -> str:
    assert isinstance(value.type, RefType)
    return value.type.space.data


class TileOp(IRDLOperation):
    irdl_options = (ParsePropInAttrDict(),)


# ------------------------------------------------------------ structure


@irdl_op_definition
class ProgramOp(TileOp):
    """A compiled graph: GM tensors and kernels, launched in program order."""

    name = "tile.program"
    sym_name = prop_def(StringAttr)
    body = region_def("single_block")
    traits = traits_def(NoTerminator(), SymbolOpInterface())
    assembly_format = "$sym_name attr-dict-with-keyword $body"

    def __init__(self, name: str):
        super().__init__(properties={"sym_name": StringAttr(name)}, regions=[Region(Block())])


TENSOR_KINDS = ("input", "output", "constant", "internal", "host")


@irdl_op_definition
class TensorOp(TileOp):
    """A tensor in GM: `kind` is input, output, constant or internal; `offset`
    is its byte offset in the program's GM arena, `type` its stored shape (in
    its `layout`), `value` the packed bytes of a constant. Kind `host` is a
    copy in host memory (`offset` in the host's space; tile.memcpy moves it)."""

    name = "tile.tensor"
    tensor_name = prop_def(StringAttr, prop_name="name")
    kind = prop_def(StringAttr)
    offset = prop_def(IntegerAttr)
    type = prop_def(TensorType)
    layout = prop_def(StringAttr)
    value = opt_prop_def(Attribute)
    assembly_format = "attr-dict"

    def verify_(self) -> None:
        if self.kind.data not in TENSOR_KINDS:
            raise VerifyException(f"tile.tensor '{self.tensor_name.data}': unknown kind '{self.kind.data}'")
        if (self.kind.data == "constant") != (self.value is not None):
            raise VerifyException(
                f"tile.tensor '{self.tensor_name.data}': constants (and only they) carry a value"
            )


@irdl_op_definition
class KernelOp(TileOp):
    """One kernel: its body runs on `block_dim` cores (`tile.block_idx`)."""

    name = "tile.kernel"
    sym_name = prop_def(StringAttr)
    block_dim = prop_def(IntegerAttr)
    stream = opt_prop_def(IntegerAttr)
    """The stream it is launched on (tile-assign-streams); absent: stream 0."""
    body = region_def("single_block")
    traits = traits_def(NoTerminator(), IsolatedFromAbove())
    assembly_format = "$sym_name attr-dict-with-keyword $body"

    def __init__(self, name: str, block_dim: int):
        super().__init__(
            properties={"sym_name": StringAttr(name), "block_dim": IntegerAttr(block_dim, i64)},
            regions=[Region(Block())],
        )

    def verify_(self) -> None:
        if self.block_dim.value.data < 1:
            raise VerifyException(f"tile.kernel @{self.sym_name.data}: block_dim must be positive")
        _verify_stream(self, f"tile.kernel @{self.sym_name.data}")


@irdl_op_definition
class MemcpyOp(TileOp):
    """A copy of the whole stored tensor `src` to `dst` between GM and host
    memory (one of them a `host` tile.tensor): a task like a kernel, run by
    the runtime's copy engine, not an AI core (npu.memcpy). Offload under a
    device-memory limit (tile-fit-device-memory) writes it out and reads it back.

        tile.memcpy "conv_3_to_host" "conv_3" -> "conv_3_host"
    """

    name = "tile.memcpy"
    sym_name = prop_def(StringAttr)
    src = prop_def(StringAttr)
    dst = prop_def(StringAttr)
    stream = opt_prop_def(IntegerAttr)
    """The stream it runs on (tile-assign-streams); absent: stream 0."""
    assembly_format = "$sym_name $src `->` $dst attr-dict"

    def __init__(self, name: str, src: str, dst: str):
        super().__init__(properties={"sym_name": StringAttr(name), "src": StringAttr(src), "dst": StringAttr(dst)})

    def verify_(self) -> None:
        where = f"tile.memcpy @{self.sym_name.data}"
        _verify_stream(self, where)
        program = self.parent_op()
        if not isinstance(program, ProgramOp):
            return
        kinds = {op.tensor_name.data: op for op in program.body.block.ops if isinstance(op, TensorOp)}
        ends = [kinds.get(n.data) for n in (self.src, self.dst)]
        for name, tensor in zip((self.src.data, self.dst.data), ends):
            if tensor is None:
                raise VerifyException(f"{where}: no tile.tensor named '{name}'")
        src, dst = ends
        assert src is not None and dst is not None
        if (src.kind.data == "host") == (dst.kind.data == "host"):
            raise VerifyException(f"{where}: copies between GM and host memory: exactly one of "
                                  f"'{self.src.data}' ({src.kind.data}) and '{self.dst.data}' ({dst.kind.data}) is a host tensor")
        if dst.kind.data in ("input", "constant"):
            raise VerifyException(f"{where}: writes '{self.dst.data}', a program {dst.kind.data}")
        if src.type != dst.type:
            raise VerifyException(f"{where}: '{self.src.data}' is {src.type}, '{self.dst.data}' is {dst.type}: a copy keeps the type")


def stream_of(task: IRDLOperation) -> int:
    """The stream of a tile.kernel, tile.aicpu or tile.memcpy (0 unless tile-assign-streams set one)."""
    attr = task.properties.get("stream")
    return attr.value.data if isinstance(attr, IntegerAttr) else 0


def _verify_stream(op: IRDLOperation, where: str) -> None:
    if stream_of(op) < 0:
        raise VerifyException(f"{where}: stream must be >= 0")


class _StreamEventOp(TileOp):
    stream = prop_def(IntegerAttr[I64])
    event = prop_def(IntegerAttr[I64])
    traits = traits_def(HasParent(ProgramOp))
    assembly_format = "`stream` $stream `event` $event attr-dict"

    def __init__(self, stream: int, event: int):
        super().__init__(properties={"stream": IntegerAttr(stream, i64), "event": IntegerAttr(event, i64)})

    def verify_(self) -> None:
        if self.stream.value.data < 0 or self.event.value.data < 0:
            raise VerifyException(f"{self.name}: stream and event must be >= 0")


@irdl_op_definition
class StreamRecordOp(_StreamEventOp):
    """Record `event` once every earlier task of `stream` has finished (npu.stream_record)."""

    name = "tile.stream_record"


@irdl_op_definition
class StreamWaitOp(_StreamEventOp):
    """Later tasks of `stream` start only after `event` was recorded (npu.stream_wait)."""

    name = "tile.stream_wait"

    def verify_(self) -> None:
        super().verify_()
        op = self.prev_op
        while op is not None:
            if isinstance(op, StreamRecordOp) and op.event.value.data == self.event.value.data:
                return
            op = op.prev_op
        raise VerifyException(f"tile.stream_wait: event {self.event.value.data} is not recorded by an earlier tile.stream_record")


@irdl_op_definition
class BlockIdxOp(TileOp):
    name = "tile.block_idx"
    result = result_def(IndexType)
    assembly_format = "attr-dict `:` type($result)"

    def __init__(self):
        super().__init__(result_types=[IndexType()])


# ------------------------------------------------------------ references


@irdl_op_definition
class AllocOp(TileOp):
    """An on-chip buffer of `shape` elements in `space`, stored in `layout`;
    `buffers = 2` asks for ping-pong copies alternating per pipelined iteration."""

    name = "tile.alloc"
    shape = prop_def(DenseArrayBase)
    layout = prop_def(StringAttr)
    buffers = prop_def(IntegerAttr)
    offset = opt_prop_def(IntegerAttr)
    """Byte address in its space (tile-allocate); each further copy follows at `bytes_per_copy`."""
    result = result_def(RefType)
    assembly_format = "attr-dict `:` type($result)"

    def __init__(self, space: str, element: Attribute, shape: Sequence[int], layout: str = "ND", buffers: int = 1):
        super().__init__(
            properties={
                "shape": int_array(shape),
                "layout": StringAttr(layout),
                "buffers": IntegerAttr(buffers, i64),
            },
            result_types=[RefType(space, element)],
        )

    def verify_(self) -> None:
        if space_of(self.result) == "gm":
            raise VerifyException("tile.alloc: buffers live on chip, not in gm")
        if self.layout.data not in LAYOUTS:
            raise VerifyException(f"tile.alloc: unknown layout '{self.layout.data}'")
        if self.buffers.value.data not in (1, 2):
            raise VerifyException("tile.alloc: buffers must be 1 or 2")

    def num_elements(self) -> int:
        n = 1
        for d in ints(self.shape):
            n *= d
        return n


@irdl_op_definition
class GmOp(TileOp):
    """The GM tensor named `tensor`, as a reference to its first element."""

    name = "tile.gm"
    tensor = prop_def(StringAttr)
    result = result_def(RefType)
    assembly_format = "attr-dict `:` type($result)"

    def __init__(self, tensor: str, element: Attribute):
        super().__init__(properties={"tensor": StringAttr(tensor)}, result_types=[RefType("gm", element)])


@irdl_op_definition
class AtOp(TileOp):
    """`ref + dyn + offset` elements (dyn an index value). `within`: what
    every access through the result touches, at any `dyn`, lies within that
    many elements from `ref + offset` (an on-chip reference's footprint for
    npu-insert-sync, which otherwise takes the rest of the buffer: a loop
    over one panel of a buffer then looks as if it read the later panels,
    and waits for their copies)."""

    name = "tile.at"
    ref = operand_def(RefType)
    dyn = opt_operand_def(IndexType)
    offset = prop_def(IntegerAttr)
    within = opt_prop_def(IntegerAttr)
    result = result_def(RefType)
    assembly_format = "$ref (`+` $dyn^)? attr-dict `:` type($ref) `->` type($result)"

    def __init__(self, ref: SSAValue, offset: int = 0, dyn: SSAValue | None = None, within: int | None = None):
        properties = {"offset": IntegerAttr(offset, i64)}
        if within is not None:
            properties["within"] = IntegerAttr(within, i64)
        super().__init__(operands=[ref, [dyn] if dyn is not None else []], properties=properties,
                         result_types=[ref.type])


def gm_tensor_of(ref: SSAValue) -> str | None:
    """The GM tensor a reference points into (through tile.at), if any."""
    owner = ref.owner
    while isinstance(owner, AtOp):
        owner = owner.ref.owner
    return owner.tensor.data if isinstance(owner, GmOp) else None


@irdl_op_definition
class LoadIndexOp(TileOp):
    """The integer at `ref` (an i32/i64 UB buffer, plus an element offset),
    read by the scalar unit as an index into `bound` rows: a negative one
    counts from the end, one outside [-bound, bound) is an error when it runs
    (npu.load_index). How a gather addresses the rows it copies."""

    name = "tile.load_index"
    ref = operand_def(RefType)
    bound = prop_def(IntegerAttr)
    result = result_def(IndexType)
    assembly_format = "$ref attr-dict `:` type($ref)"

    def __init__(self, ref: SSAValue, bound: int):
        super().__init__(operands=[ref], properties={"bound": IntegerAttr(bound, i64)}, result_types=[IndexType()])

    def verify_(self) -> None:
        ref = self.ref.type
        assert isinstance(ref, RefType)
        if space_of(self.ref) != "ub" or not isinstance(ref.element, IntegerType) or ref.element.width.data not in (32, 64):
            raise VerifyException(f"tile.load_index: reads an i32 or i64 ub reference, got {ref}")
        if self.bound.value.data < 1:
            raise VerifyException("tile.load_index: bound must be positive")


# ------------------------------------------------------------ data movement


@irdl_op_definition
class CopyOp(TileOp):
    """Copy a strided box: element (i0, .., in) goes from
    `src + sum(i_k * src_strides[k])` to `dst + sum(i_k * dst_strides[k])`.
    The innermost dim is contiguous on both sides. Layout conversions
    (ND <-> NC1HWC0 panels, fractal gathers) are strided copies; `cast`
    converts L0C's fp32 to fp16 on the way to UB."""

    name = "tile.copy"
    dst = operand_def(RefType)
    src = operand_def(RefType)
    shape = prop_def(DenseArrayBase)
    dst_strides = prop_def(DenseArrayBase)
    src_strides = prop_def(DenseArrayBase)
    cast = opt_prop_def(UnitAttr)
    assembly_format = "$dst `,` $src attr-dict `:` type($dst) `,` type($src)"

    def __init__(self, dst, src, shape, dst_strides, src_strides, cast: bool = False):
        props = {
            "shape": int_array(shape),
            "dst_strides": int_array(dst_strides),
            "src_strides": int_array(src_strides),
        }
        if cast:
            props["cast"] = UnitAttr()
        super().__init__(operands=[dst, src], properties=props)

    def verify_(self) -> None:
        n = len(ints(self.shape))
        if not n or len(ints(self.dst_strides)) != n or len(ints(self.src_strides)) != n:
            raise VerifyException("tile.copy: shape and both stride lists must have the same rank")
        if ints(self.dst_strides)[-1] != 1 or ints(self.src_strides)[-1] != 1:
            raise VerifyException("tile.copy: the innermost dim must be contiguous on both sides")


@irdl_op_definition
class Im2colOp(TileOp):
    """Rows [m_start, m_start+m_len) of the im2col matrix of one C1 slice
    [fm_h, fm_w, C0] (L1) into L0A in ZZ order."""

    name = "tile.im2col"
    dst = operand_def(RefType)
    src = operand_def(RefType)
    params = prop_def(DenseArrayBase)  # fm_h fm_w kh kw sh sw pt pb pl pr dh dw m_start m_len
    assembly_format = "$dst `,` $src attr-dict `:` type($dst) `,` type($src)"

    def __init__(self, dst, src, params: Sequence[int]):
        super().__init__(operands=[dst, src], properties={"params": int_array(params)})

    def verify_(self) -> None:
        if (space_of(self.dst), space_of(self.src)) != ("l0a", "l1"):
            raise VerifyException("tile.im2col: reads l1 and writes l0a")
        if len(ints(self.params)) != 14:
            raise VerifyException("tile.im2col: params has 14 entries")


@irdl_op_definition
class LoadFractalOp(TileOp):
    """`count` 512-byte fractals from L1 (every `src_stride`-th) into L0A/L0B;
    `transpose` transposes each 16x16 fp16 fractal (a row-major panel of B
    becomes the ZN order L0B wants)."""

    name = "tile.load_fractal"
    dst = operand_def(RefType)
    src = operand_def(RefType)
    count = prop_def(IntegerAttr)
    src_stride = prop_def(IntegerAttr)
    transpose = opt_prop_def(UnitAttr)
    assembly_format = "$dst `,` $src attr-dict `:` type($dst) `,` type($src)"

    def __init__(self, dst, src, count: int, src_stride: int = 1, transpose: bool = False):
        props = {"count": IntegerAttr(count, i64), "src_stride": IntegerAttr(src_stride, i64)}
        if transpose:
            props["transpose"] = UnitAttr()
        super().__init__(operands=[dst, src], properties=props)


# ------------------------------------------------------------ compute


@irdl_op_definition
class MatmulOp(TileOp):
    """C[m, n] (+)= A[m, k] (L0A, ZZ) x B[k, n] (L0B, ZN) on the cube, C in L0C (NZ, fp32)."""

    name = "tile.matmul"
    c = operand_def(RefType)
    a = operand_def(RefType)
    b = operand_def(RefType)
    m = prop_def(IntegerAttr)
    n = prop_def(IntegerAttr)
    k = prop_def(IntegerAttr)
    accumulate = opt_prop_def(UnitAttr)
    assembly_format = "$c `,` $a `,` $b attr-dict `:` type($c) `,` type($a) `,` type($b)"

    def __init__(self, c, a, b, m: int, n: int, k: int, accumulate: bool):
        props = {"m": IntegerAttr(m, i64), "n": IntegerAttr(n, i64), "k": IntegerAttr(k, i64)}
        if accumulate:
            props["accumulate"] = UnitAttr()
        super().__init__(operands=[c, a, b], properties=props)

    def verify_(self) -> None:
        if (space_of(self.c), space_of(self.a), space_of(self.b)) != ("l0c", "l0a", "l0b"):
            raise VerifyException("tile.matmul: operands are l0c, l0a, l0b")


@irdl_op_definition
class VecOp(TileOp):
    """Elementwise `op` on UB over a strided box: `shape`, and per operand
    (dst first) its strides in elements, concatenated in `strides`. A stride
    of 0 broadcasts. `scalar` is the immediate of adds/muls/maxs."""

    name = "tile.vec"
    dst = operand_def(RefType)
    srcs = var_operand_def(RefType)
    op = prop_def(StringAttr)
    shape = prop_def(DenseArrayBase)
    strides = prop_def(DenseArrayBase)
    scalar = opt_prop_def(FloatAttr)
    assembly_format = "$op $dst `,` $srcs attr-dict `:` type($dst) `,` type($srcs)"

    def __init__(self, op: str, dst, srcs, shape, strides: Sequence[Sequence[int]], scalar: float | None = None):
        props = {
            "op": StringAttr(op),
            "shape": int_array(shape),
            "strides": int_array([s for st in strides for s in st]),
        }
        if scalar is not None:
            props["scalar"] = FloatAttr(float(scalar), f64)
        super().__init__(operands=[dst, list(srcs)], properties=props)

    def operand_strides(self) -> list[tuple[int, ...]]:
        n = len(ints(self.shape))
        flat = ints(self.strides)
        return [flat[i * n : (i + 1) * n] for i in range(len(flat) // max(n, 1))]

    def verify_(self) -> None:
        spec = TILE_SPECS.get(self.op.data)
        if spec is None:
            raise VerifyException(f"tile.vec: unknown op '{self.op.data}' (known: {', '.join(VECTOR_OPS)})")
        n = len(ints(self.shape))
        if len(ints(self.strides)) != n * (1 + len(self.srcs)):
            raise VerifyException("tile.vec: strides must hold one stride list per operand")
        family = spec.family_spec
        if len(self.srcs) != len(family.sources):
            raise VerifyException(f"tile.vec: '{self.op.data}' takes {len(family.sources)} source(s)")
        if (self.scalar is not None) != family.scalar:
            raise VerifyException(f"tile.vec: '{self.op.data}' {'needs' if family.scalar else 'takes no'} scalar")
        for v in (self.dst, *self.srcs):
            if space_of(v) != "ub":
                raise VerifyException("tile.vec: operands live in ub")


@irdl_op_definition
class ReduceOp(TileOp):
    """dst[r] = reduce(src[r * row_stride : r * row_stride + cols]) for r < rows
    (`sum` or `max`). The source rows are clobbered (folded in place)."""

    name = "tile.reduce"
    dst = operand_def(RefType)
    src = operand_def(RefType)
    op = prop_def(StringAttr)
    rows = prop_def(IntegerAttr)
    cols = prop_def(IntegerAttr)
    row_stride = prop_def(IntegerAttr)
    assembly_format = "$op $dst `,` $src attr-dict `:` type($dst) `,` type($src)"

    def __init__(self, op: str, dst, src, rows: int, cols: int, row_stride: int):
        super().__init__(
            operands=[dst, src],
            properties={
                "op": StringAttr(op),
                "rows": IntegerAttr(rows, i64),
                "cols": IntegerAttr(cols, i64),
                "row_stride": IntegerAttr(row_stride, i64),
            },
        )


@irdl_op_definition
class CastOp(TileOp):
    """dst = cast(src) over `count` contiguous elements: f32 <-> f16, or an
    i32/i64 source to f16/f32 (vconv)."""

    name = "tile.cast"
    dst = operand_def(RefType)
    src = operand_def(RefType)
    count = prop_def(IntegerAttr)
    assembly_format = "$dst `,` $src attr-dict `:` type($dst) `,` type($src)"

    def __init__(self, dst, src, count: int):
        super().__init__(operands=[dst, src], properties={"count": IntegerAttr(count, i64)})


@irdl_op_definition
class DupOp(TileOp):
    """dst[0:count] = value."""

    name = "tile.dup"
    dst = operand_def(RefType)
    count = prop_def(IntegerAttr)
    value = prop_def(FloatAttr)
    assembly_format = "$dst attr-dict `:` type($dst)"

    def __init__(self, dst, count: int, value: float):
        super().__init__(
            operands=[dst], properties={"count": IntegerAttr(count, i64), "value": FloatAttr(float(value), f64)}
        )


# ------------------------------------------------------------ AI CPU


@irdl_op_definition
class AicpuOp(TileOp):
    """A graph op placed on the AI CPU (graph-partition): it reads the GM
    tensors `in_names` and writes `out_names`, each stored as `*_types` (GM
    element type, logical shape); logical value = stored value * scale. The
    body holds the graph op on logical types, its block arguments standing for
    the inputs; constants it reads are cloned into it."""

    name = "tile.aicpu"
    sym_name = prop_def(StringAttr)
    in_names = prop_def(ArrayAttr)
    in_types = prop_def(ArrayAttr)
    in_scales = prop_def(DenseArrayBase)
    out_names = prop_def(ArrayAttr)
    out_types = prop_def(ArrayAttr)
    out_scales = prop_def(DenseArrayBase)
    stream = opt_prop_def(IntegerAttr)
    """The stream it runs on (tile-assign-streams); absent: stream 0."""
    body = region_def("single_block")
    traits = traits_def(IsolatedFromAbove())
    assembly_format = "$sym_name attr-dict-with-keyword $body"

    def __init__(self, name: str, ins: Sequence[tuple[str, TensorType, float]], outs: Sequence[tuple[str, TensorType, float]], body: Region):
        def side(items):
            return (
                ArrayAttr([StringAttr(n) for n, _, _ in items]),
                ArrayAttr([t for _, t, _ in items]),
                DenseArrayBase.from_list(f64, [float(s) for _, _, s in items]),
            )

        (in_names, in_types, in_scales), (out_names, out_types, out_scales) = side(ins), side(outs)
        super().__init__(
            properties={
                "sym_name": StringAttr(name), "in_names": in_names, "in_types": in_types, "in_scales": in_scales,
                "out_names": out_names, "out_types": out_types, "out_scales": out_scales,
            },
            regions=[body],
        )

    def verify_(self) -> None:
        where = f"tile.aicpu @{self.sym_name.data}"
        _verify_stream(self, where)
        for side in ("in", "out"):
            names, types, scales = (self.properties[f"{side}_{k}"] for k in ("names", "types", "scales"))
            if not len(names.data) == len(types.data) == len(scales.get_values()):  # type: ignore[union-attr]
                raise VerifyException(f"{where}: {side}_names, {side}_types and {side}_scales differ in length")
        args = self.body.block.args
        if [tuple(a.type.get_shape()) for a in args] != [tuple(t.get_shape()) for t in self.in_types.data]:  # type: ignore[attr-defined]
            raise VerifyException(f"{where}: block arguments must have the shapes of in_types")
        term = self.body.block.last_op
        if not isinstance(term, AicpuReturnOp) or len(term.operands) != len(self.out_types.data):
            raise VerifyException(f"{where}: body must end with tile.aicpu_return of one value per output")


@irdl_op_definition
class AicpuReturnOp(TileOp):
    """Ends a tile.aicpu body: the values written to its outputs."""

    name = "tile.aicpu_return"
    values = var_operand_def(TensorType)
    traits = traits_def(IsTerminator(), HasParent(AicpuOp))
    assembly_format = "($values^ `:` type($values))? attr-dict"

    def __init__(self, values: Sequence[SSAValue]):
        super().__init__(operands=[values])


__all__ = ["RefType", "ArrayAttr", "SymbolRefAttr"]
