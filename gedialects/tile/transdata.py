"""`tile.transdata`: a layout conversion between row-major NCHW and an
NC1HWC0 map before tiling, and its tiling (`#tile.transdata_tiling`).

    tile.kernel @k0_transdata {kind = "transdata", block_dim = 1 : i64} {
      %x = tile.gm {tensor = "image"} : !tile.ref<gm, f32>
      %y = tile.gm {tensor = "input_5hd"} : !tile.ref<gm, f16>
      tile.transdata "NCHW" to "NC1HWC0" %x, %y : !tile.ref<gm, f32>, !tile.ref<gm, f16>
          {map_view = #tile.map_view<shape = [1, 3, 224, 224], origin = 0, slice_stride = 50176, padded_w = 224>}
    }

Between NCHW and the map, both directions are products on the cube with
constant 0/1 matrices (GE's TransData on the AI core does the same with its
vector transposes; the cube is the unit this target moves 16 x 16 blocks
fastest):

* `NCHW` to `NC1HWC0`: the row-major side is [N, C, H, W] (`shape` of the
  map view, one image at element `offset` of the row-major tensor); per
  16 channels by a chunk of kc pixels, C = I x B with B the channels'
  pixel runs gathered as ZN fractals, I a kc x kc identity; the result's
  rows are the map's C0 slices. With `block_size` s > 1 it is a
  space-to-depth (the conv-space-to-depth stems): the map view is the
  [1, s*s*C, H/s, W/s] result, `mode` DCR or CRD names where input channel
  c of cell position (dy, dx) goes, and per chunk of mc cells the s
  products with picking matrices A_dx [mc, s*mc] gather each cell's pixels.
* `NC1HWC0` to `ND`: per 16 channels by a chunk of kn pixels,
  C[16, kn] = I16 x B where B's ZN fractals are exactly the map's pixel
  runs; the NZ result rows are NCHW channel rows (the map must have no
  halo: the lowering strips one first). `scale`: the power of two force_fp16
  stored the map divided by, undone in fp32 on the way out.

* `NHWC` to `NC1HWC0` and back: between the map and its pixels' rows of C
  channels ([H*W, C] row-major at element `offset`: the layout of a
  layer_norm over channels in ConvNeXt and SegFormer). In NC1HWC0 a pixel's
  channels are already contiguous, C0 at a time, so each direction is
  strided copies through UB (no product): per chunk of pixels, the chunk's
  run of every C1 slice one side, its rows the other (rows of C that are not
  whole blocks: padded copies, the pad channels zero in UB). The map may
  have a halo (its interior is read or written). `row_pitch`: elements from
  one pixel's row to the next when the rows are columns of a wider tensor
  (a channel concat's operand written at its channel offset, `offset`).

The element types are the references': the output may be narrower (fp32
image -> fp16 map) or wider (an fp16 map -> an fp32 graph output) than the
input; the cube accumulates in fp32 either way.

`tile-select-tiling` chooses a `#tile.transdata_tiling` (the pixel layout,
the chunk and the cores, by the target's cost formulas:
transdata_tiling.py), `tile-distribute` sets block_dim to its cores and
`tile-expand-structured` writes the loop and adds the 0/1 constants it
reads to the program (expand_transdata.py)."""

from __future__ import annotations

from xdsl.dialects.builtin import FloatAttr, IntAttr, IntegerAttr, StringAttr, f64, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    ParsePropInAttrDict,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    param_def,
    prop_def,
)
from xdsl.utils.exceptions import VerifyException

from gedialects.tile.conv import MapViewAttr
from gedialects.tile.core_tiling import CoreTilingAttr
from gedialects.tile.ops import GmOp, RefType, TileOp

DIRECTIONS = (("NCHW", "NC1HWC0"), ("NC1HWC0", "ND"), ("NHWC", "NC1HWC0"), ("NC1HWC0", "NHWC"))
SPACE_TO_DEPTH_MODES = ("DCR", "CRD")


@irdl_attr_definition
class TransdataTilingAttr(CoreTilingAttr):
    """A transdata's tiles: the pixels as `rows` runs of `width` (a map
    without a side halo is one run of H x W, else H rows of W; a
    space-to-depth's are cell rows), each cut into chunks of `chunk` pixels
    (cells) that go through the cube at once, times the 16-channel blocks;
    spread over `cores` cores; `cycles`: the cost model's prediction for
    the busiest core."""

    name = "tile.transdata_tiling"
    rows: IntAttr = param_def()
    width: IntAttr = param_def()
    chunk: IntAttr = param_def()
    cores: IntAttr = param_def()
    cycles: IntAttr = param_def()


@irdl_op_definition
class TransdataOp(TileOp):
    """output = input in the other layout: see the module's docstring."""

    name = "tile.transdata"
    src_format = prop_def(StringAttr)
    dst_format = prop_def(StringAttr)
    input = operand_def(RefType)
    output = operand_def(RefType)
    map_view = prop_def(MapViewAttr)
    offset = opt_prop_def(IntegerAttr)
    scale = opt_prop_def(FloatAttr)
    block_size = opt_prop_def(IntegerAttr)
    mode = opt_prop_def(StringAttr)
    row_pitch = opt_prop_def(IntegerAttr)
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$src_format `to` $dst_format $input `,` $output `:` type($input) `,` type($output) attr-dict"

    def __init__(self, src_format: str, dst_format: str, input: SSAValue, output: SSAValue, map_view: MapViewAttr, *,
                 offset: int = 0, scale: float = 1.0, block_size: int = 1, mode: str = "DCR", row_pitch: int = 0):
        props: dict[str, Attribute] = {"src_format": StringAttr(src_format), "dst_format": StringAttr(dst_format),
                                       "map_view": map_view}
        if offset:
            props["offset"] = IntegerAttr(offset, i64)
        if scale != 1.0:
            props["scale"] = FloatAttr(scale, f64)
        if block_size != 1:
            props["block_size"] = IntegerAttr(block_size, i64)
            props["mode"] = StringAttr(mode)
        if row_pitch:
            props["row_pitch"] = IntegerAttr(row_pitch, i64)
        super().__init__(operands=[input, output], properties=props)

    @property
    def to_map(self) -> bool:
        """Into NC1HWC0 (else out of it)."""
        return self.dst_format.data == "NC1HWC0"

    @property
    def rows(self) -> bool:
        """Between the map and its NHWC rows (strided copies, no product)."""
        return "NHWC" in (self.src_format.data, self.dst_format.data)

    @property
    def element_offset(self) -> int:
        return self.offset.value.data if self.offset is not None else 0

    @property
    def scale_factor(self) -> float:
        return self.scale.value.data if self.scale is not None else 1.0

    @property
    def pitch(self) -> int:
        """Elements from one NHWC row to the next (the map's channel count unless `row_pitch`)."""
        return self.row_pitch.value.data if self.row_pitch is not None else self.map_view.dims[1]

    @property
    def cell(self) -> int:
        """The space-to-depth block size (1: a plain transdata)."""
        return self.block_size.value.data if self.block_size is not None else 1

    def out_channel(self, dy: int, dx: int, c: int, channels: int) -> int:
        """A space-to-depth's output channel of input channel c at (dy, dx) of its cell (ONNX SpaceToDepth)."""
        s = self.cell
        return c * s * s + dy * s + dx if self.mode is not None and self.mode.data == "CRD" else (dy * s + dx) * channels + c

    def nchw_shape(self) -> tuple[int, int, int, int]:
        """[N, C, H, W] of the row-major side (a space-to-depth's input)."""
        n, c, h, w = self.map_view.dims
        s = self.cell
        return n, c // (s * s), h * s, w * s

    def verify_(self) -> None:
        if not all(isinstance(v.owner, GmOp) for v in self.operands):
            raise VerifyException("tile.transdata: its operands are tile.gm references (a view's offset is its origin)")
        formats = (self.src_format.data, self.dst_format.data)
        if formats not in DIRECTIONS:
            raise VerifyException(f"tile.transdata: {formats[0]} to {formats[1]} is not a transdata "
                                  f"(one of {', '.join(f'{a} to {b}' for a, b in DIRECTIONS)})")
        view = self.map_view
        if view.dims[0] != 1:
            raise VerifyException("tile.transdata: the map is one image (map-unbatch slices batches)")
        if self.scale is not None and formats != ("NC1HWC0", "ND"):
            raise VerifyException("tile.transdata: only NC1HWC0 to ND undoes a scale")
        if self.block_size is not None and formats != ("NCHW", "NC1HWC0"):
            raise VerifyException("tile.transdata: only NCHW to NC1HWC0 is a space-to-depth (block_size)")
        if self.row_pitch is not None and (not self.rows or self.pitch < view.dims[1]):
            raise VerifyException("tile.transdata: a row_pitch is NHWC rows' and at least the map's channel count")
        if self.rows and self.input.type.element != self.output.type.element:  # type: ignore[attr-defined]
            raise VerifyException("tile.transdata: NHWC rows and their map have one element type (copies convert none)")
        if formats == ("NC1HWC0", "ND"):
            if self.offset is not None or self.block_size is not None:
                raise VerifyException("tile.transdata: NC1HWC0 to ND writes a whole tensor (no offset, no block_size)")
            if view.padded_w.data != view.dims[3]:
                raise VerifyException("tile.transdata: NC1HWC0 to ND reads a map without a halo (strip it first)")
        if self.block_size is not None:
            s = self.cell
            if s < 2 or self.mode is None or self.mode.data not in SPACE_TO_DEPTH_MODES:
                raise VerifyException("tile.transdata: a space-to-depth has block_size >= 2 and mode DCR or CRD")
            if view.dims[1] % (s * s):
                raise VerifyException(f"tile.transdata: a space-to-depth map has a multiple of {s * s} channels")


__all__ = ["DIRECTIONS", "TransdataOp", "TransdataTilingAttr"]
