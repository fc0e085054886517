"""`tile.conv`: a convolution on the cube before tiling, and the attributes
that describe it (`#tile.map_view`) and its tiling (`#tile.conv_tiling`).

    tile.kernel @k3_conv {kind = "conv", block_dim = 1 : i64} {
      %x = tile.gm {tensor = "t1"} : !tile.ref<gm, f16>
      %w = tile.gm {tensor = "conv_w"} : !tile.ref<gm, f16>
      %y = tile.gm {tensor = "t2"} : !tile.ref<gm, f16>
      tile.conv ins(%x : !tile.ref<gm, f16>) weights(%w : !tile.ref<gm, f16>) outs(%y : !tile.ref<gm, f16>)
          {input_views = [#tile.map_view<...>], output_view = #tile.map_view<...>, kernel_size = array<i64: 3, 3>,
           stride = 1, dilation = 1, pads = array<i64: 1, 1, 1, 1>, ...} { epilogue } { stage }
    }

The maps are NC1HWC0 tensors in GM, each seen through a `#tile.map_view`
(its logical [N, C, H, W], where (c1 = 0, y = 0, x = 0) lies and its
strides: a view may start inside a larger storage with a zero halo); the
weights are packed at compile time in FRACTAL_Z, `superblocks` blocks of
[in_slices][taps][out_fractals * 16][c0] (a grouped conv: one block per
group of groups, block-diagonal). `bias` (fp32, one per output channel),
`residual` (a map added to the result before the epilogue, or with
`residual_mode = "scale"` multiplied with its result) are optional. The
`epilogue` region, when it has a block, is a map body (a tile.map's:
one element in, `tile.yield` of one) applied to the result in UB (a fused
activation); the `stage` region one applied to the input on its way to L1
(GM -> UB -> L1: LRN squares it; DenseNet's pre-activation batch norm and
ReLU), its first argument the input's element and one more per
`stage_ins` operand: a per-channel vector ([1, C, 1, 1] through its
`stage_views` view, a batch norm's scale or shift) broadcast over the
pixels.

`tile-select-tiling` chooses a `#tile.conv_tiling` (band, channel block,
chunk, core grid and loop order, from the target's capacities and cost
formulas: conv_tiling.py), `tile-distribute` sets the kernel's block_dim
from its grid and `tile-expand-structured` writes the loops
(expand_conv.py)."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import ArrayAttr, DenseArrayBase, IntAttr, IntegerAttr, StringAttr, i64
from xdsl.ir import Attribute, ParametrizedAttribute, Region, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    ParsePropInAttrDict,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    param_def,
    prop_def,
    region_def,
    var_operand_def,
)
from xdsl.utils.exceptions import VerifyException

from gedialects.tile.ops import GmOp, RefType, TileOp

RESIDUAL_MODES = ("add", "scale")


def parse_fields(parser, keys: Sequence[str]) -> dict[str, object]:
    """`<key = value, ...>` in the order of `keys`; a value is an integer, a
    list of integers or a bare word."""
    values: dict[str, object] = {}
    parser.parse_punctuation("<")
    for i, key in enumerate(keys):
        if i:
            parser.parse_punctuation(",")
        parser.parse_keyword(key)
        parser.parse_punctuation("=")
        if (word := parser.parse_optional_identifier()) is not None:
            values[key] = word
        elif parser.parse_optional_punctuation("[") is not None:
            values[key] = [parser.parse_integer()]
            while parser.parse_optional_punctuation(","):
                values[key].append(parser.parse_integer())  # type: ignore[union-attr]
            parser.parse_punctuation("]")
        else:
            values[key] = parser.parse_integer()
    parser.parse_punctuation(">")
    return values


@irdl_attr_definition
class MapViewAttr(ParametrizedAttribute):
    """A map [N, C, H, W] in an NC1HWC0 GM tensor: element `origin` holds
    (c1 = 0, y = 0, x = 0, c0 = 0); C1 slices are `slice_stride` elements
    apart, rows `padded_w` pixels of C0 (the storage's halo included)."""

    name = "tile.map_view"
    shape: ArrayAttr[IntAttr] = param_def()
    origin: IntAttr = param_def()
    slice_stride: IntAttr = param_def()
    padded_w: IntAttr = param_def()

    def __init__(self, shape: Sequence[int], origin: int, slice_stride: int, padded_w: int):
        super().__init__(ArrayAttr([IntAttr(d) for d in shape]), IntAttr(origin), IntAttr(slice_stride),
                         IntAttr(padded_w))

    @property
    def dims(self) -> tuple[int, ...]:
        return tuple(d.data for d in self.shape.data)

    @classmethod
    def parse_parameters(cls, parser) -> list[Attribute]:
        v = parse_fields(parser, ("shape", "origin", "slice_stride", "padded_w"))
        return [ArrayAttr([IntAttr(d) for d in v["shape"]]), IntAttr(v["origin"]), IntAttr(v["slice_stride"]),  # type: ignore
                IntAttr(v["padded_w"])]  # type: ignore[arg-type]

    def print_parameters(self, printer) -> None:
        printer.print_string(f"<shape = [{', '.join(map(str, self.dims))}], origin = {self.origin.data}, "
                             f"slice_stride = {self.slice_stride.data}, padded_w = {self.padded_w.data}>")

    def verify(self) -> None:
        if len(self.shape.data) != 4 or any(d.data < 1 for d in self.shape.data):
            raise VerifyException("#tile.map_view: the shape is a positive [N, C, H, W]")
        if self.padded_w.data < self.dims[3] or self.origin.data < 0:
            raise VerifyException("#tile.map_view: padded_w is at least W, origin is not negative")


_TILING_FIELDS = ("band_rows", "tile_fractals", "chunk_rows", "chunk_m", "chunks_per_row", "k_rows", "cores",
                  "per_core", "stationary", "steps", "slices_per_mmad", "panels", "stage_slices", "cycles")


@irdl_attr_definition
class ConvTilingAttr(ParametrizedAttribute):
    """How a conv kernel is tiled. A tile is `band_rows` output rows x
    `tile_fractals` fractals (16 channels each) of output channels; it is
    computed in chunks of `chunk_rows` rows (`chunk_m` matrix rows, the
    pixels rounded up to 16; `chunks_per_row` > 1 when a row takes
    several), K split over kernel rows in parts of `k_rows`. The cores form
    a grid `cores` = [rows, columns] over bands x channel blocks, each
    running `per_core` = [bands, blocks] with the `stationary` operand
    (band or weights) kept in L1 while the other streams. `steps`: a
    strided 1-row / 1-pixel conv reads every steps[0]-th row and
    steps[1]-th pixel into its band; `slices_per_mmad` > 0: a direct 1x1
    conv loads A's fractals as they lie in L1, that many C1 slices per
    mmad. `panels` > 1: the operands copied to L1 next to a tile's
    products (both, on a core with one tile) go in that many panels of C1
    slices, and the tile's first chunk takes them panel by panel, its
    products on a panel beside the copy of the next. `stage_slices`: a
    staged conv's C1 slices per copy through UB (1 otherwise). `cycles`: the
    cost model's prediction for the busiest core."""

    name = "tile.conv_tiling"
    band_rows: IntAttr = param_def()
    tile_fractals: IntAttr = param_def()
    chunk_rows: IntAttr = param_def()
    chunk_m: IntAttr = param_def()
    chunks_per_row: IntAttr = param_def()
    k_rows: IntAttr = param_def()
    cores: ArrayAttr[IntAttr] = param_def()
    per_core: ArrayAttr[IntAttr] = param_def()
    stationary: StringAttr = param_def()
    steps: ArrayAttr[IntAttr] = param_def()
    slices_per_mmad: IntAttr = param_def()
    panels: IntAttr = param_def()
    stage_slices: IntAttr = param_def()
    cycles: IntAttr = param_def()

    def __init__(self, band_rows: int, tile_fractals: int, chunk_rows: int, chunk_m: int, chunks_per_row: int,
                 k_rows: int, cores: Sequence[int], per_core: Sequence[int], stationary: str, steps: Sequence[int],
                 slices_per_mmad: int, panels: int, stage_slices: int, cycles: int):
        super().__init__(
            IntAttr(band_rows), IntAttr(tile_fractals), IntAttr(chunk_rows), IntAttr(chunk_m), IntAttr(chunks_per_row),
            IntAttr(k_rows), ArrayAttr([IntAttr(c) for c in cores]), ArrayAttr([IntAttr(c) for c in per_core]),
            StringAttr(stationary), ArrayAttr([IntAttr(c) for c in steps]), IntAttr(slices_per_mmad), IntAttr(panels),
            IntAttr(stage_slices), IntAttr(cycles))

    def value(self, key: str):
        """A field as plain Python: an int, a tuple of ints or a string."""
        attr = getattr(self, key)
        if isinstance(attr, ArrayAttr):
            return tuple(a.data for a in attr.data)
        return attr.data

    @property
    def block_dim(self) -> int:
        rows, cols = self.value("cores")
        return rows * cols

    @classmethod
    def parse_parameters(cls, parser) -> list[Attribute]:
        v = parse_fields(parser, _TILING_FIELDS)
        return [ArrayAttr([IntAttr(x) for x in v[k]]) if isinstance(v[k], list)  # type: ignore[union-attr]
                else StringAttr(v[k]) if isinstance(v[k], str) else IntAttr(v[k])  # type: ignore[arg-type]
                for k in _TILING_FIELDS]

    def print_parameters(self, printer) -> None:
        def show(key: str) -> str:
            value = self.value(key)
            return f"[{', '.join(map(str, value))}]" if isinstance(value, tuple) else str(value)

        printer.print_string("<" + ", ".join(f"{k} = {show(k)}" for k in _TILING_FIELDS) + ">")

    def verify(self) -> None:
        if self.stationary.data not in ("band", "weights"):
            raise VerifyException("#tile.conv_tiling: the stationary operand is band or weights")
        if len(self.cores.data) != 2 or len(self.per_core.data) != 2 or len(self.steps.data) != 2:
            raise VerifyException("#tile.conv_tiling: cores, per_core and steps are pairs")
        ints = [self.band_rows, self.tile_fractals, self.chunk_rows, self.chunk_m, self.chunks_per_row, self.k_rows,
                *self.cores.data, *self.per_core.data, *self.steps.data, self.panels, self.stage_slices]
        if any(a.data < 1 for a in ints) or self.chunk_m.data % 16:
            raise VerifyException("#tile.conv_tiling: sizes are positive and chunk_m whole fractals (16 rows)")


def _ints(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, list(values))


@irdl_op_definition
class ConvOp(TileOp):
    """output = epilogue(conv(stage(inputs), weights) + bias (+ or x residual)),
    on the cube: see the module's docstring."""

    name = "tile.conv"
    inputs = var_operand_def(RefType)
    weights = operand_def(RefType)
    bias = opt_operand_def(RefType)
    residual = opt_operand_def(RefType)
    output = operand_def(RefType)
    input_views = prop_def(ArrayAttr)
    residual_view = opt_prop_def(MapViewAttr)
    output_view = prop_def(MapViewAttr)
    kernel_size = prop_def(DenseArrayBase)
    stride = prop_def(IntegerAttr)
    dilation = prop_def(IntegerAttr)
    pads = prop_def(DenseArrayBase)
    in_slices = prop_def(IntegerAttr)
    out_fractals = prop_def(IntegerAttr)
    superblocks = prop_def(IntegerAttr)
    block_in_channels = prop_def(IntegerAttr)
    residual_mode = opt_prop_def(StringAttr)
    stage_inputs = var_operand_def(RefType)
    stage_views = opt_prop_def(ArrayAttr)
    epilogue = region_def()
    stage = region_def()
    irdl_options = (ParsePropInAttrDict(), AttrSizedOperandSegments(as_property=True))
    assembly_format = (
        "`ins` `(` $inputs `:` type($inputs) `)` `weights` `(` $weights `:` type($weights) `)` "
        "(`bias` `(` $bias^ `:` type($bias) `)`)? (`residual` `(` $residual^ `:` type($residual) `)`)? "
        "(`stage_ins` `(` $stage_inputs^ `:` type($stage_inputs) `)`)? "
        "`outs` `(` $output `:` type($output) `)` attr-dict-with-keyword $epilogue $stage"
    )

    def __init__(self, inputs: Sequence[tuple[SSAValue, MapViewAttr]], weights: SSAValue,
                 output: tuple[SSAValue, MapViewAttr], *, kernel_size: Sequence[int], stride: int, dilation: int,
                 pads: Sequence[int], in_slices: int, out_fractals: int, superblocks: int, block_in_channels: int,
                 bias: SSAValue | None = None, residual: tuple[SSAValue, MapViewAttr] | None = None,
                 residual_mode: str = "add", epilogue: Region | None = None, stage: Region | None = None,
                 stage_inputs: Sequence[tuple[SSAValue, MapViewAttr]] = ()):
        props: dict[str, Attribute] = {
            "input_views": ArrayAttr([view for _, view in inputs]), "output_view": output[1],
            "kernel_size": _ints(kernel_size), "stride": IntegerAttr(stride, i64), "dilation": IntegerAttr(dilation, i64),
            "pads": _ints(pads), "in_slices": IntegerAttr(in_slices, i64), "out_fractals": IntegerAttr(out_fractals, i64),
            "superblocks": IntegerAttr(superblocks, i64), "block_in_channels": IntegerAttr(block_in_channels, i64),
        }
        if residual is not None:
            props["residual_view"] = residual[1]
        if residual_mode != "add":
            props["residual_mode"] = StringAttr(residual_mode)
        if stage_inputs:
            props["stage_views"] = ArrayAttr([view for _, view in stage_inputs])
        super().__init__(
            operands=[[v for v, _ in inputs], weights, [bias] if bias is not None else [],
                      [residual[0]] if residual is not None else [], output[0], [v for v, _ in stage_inputs]],
            properties=props, regions=[epilogue or Region(), stage or Region()])

    # -- reading it --------------------------------------------------------
    def int_(self, key: str) -> int:
        return self.properties[key].value.data  # type: ignore[attr-defined]

    def ints(self, key: str) -> tuple[int, ...]:
        return tuple(int(v) for v in self.properties[key].get_values())  # type: ignore[attr-defined]

    def views(self) -> list[MapViewAttr]:
        return list(self.input_views.data)  # type: ignore[arg-type]

    def stage_input_views(self) -> list[MapViewAttr]:
        return list(self.stage_views.data) if self.stage_views is not None else []  # type: ignore[arg-type]

    def mode(self) -> str:
        return "add" if self.residual_mode is None else self.residual_mode.data

    def verify_(self) -> None:
        if not all(isinstance(v.owner, GmOp) for v in self.operands):
            raise VerifyException("tile.conv: its operands are tile.gm references (a view's offset is its origin)")
        if len(self.input_views.data) != len(self.inputs) or not self.inputs:
            raise VerifyException("tile.conv: one #tile.map_view per input map")
        if not all(isinstance(v, MapViewAttr) for v in self.input_views.data):
            raise VerifyException("tile.conv: input_views are #tile.map_view")
        if (self.residual_view is None) != (self.residual is None):
            raise VerifyException("tile.conv: a residual comes with its residual_view")
        if self.mode() not in RESIDUAL_MODES:
            raise VerifyException(f"tile.conv: residual_mode is one of {', '.join(RESIDUAL_MODES)}")
        if len(self.ints("kernel_size")) != 2 or len(self.ints("pads")) != 4:
            raise VerifyException("tile.conv: kernel_size is [kh, kw], pads [top, left, bottom, right]")
        if min(self.int_("stride"), self.int_("dilation"), self.int_("in_slices"), self.int_("out_fractals"),
               self.int_("superblocks")) < 1:
            raise VerifyException("tile.conv: stride, dilation, in_slices, out_fractals and superblocks are positive")
        if len(self.inputs) > 1 and (self.int_("superblocks") > 1 or self.stage.blocks):
            raise VerifyException("tile.conv: several input maps (channel pieces) feed a dense, unstaged conv")
        if len(self.epilogue.blocks) > 1 or self.epilogue.blocks and len(self.epilogue.block.args) != 1:
            raise VerifyException("tile.conv: the epilogue is one map body of one argument")
        stage_args = 1 + len(self.stage_inputs)
        if len(self.stage.blocks) > 1 or self.stage.blocks and len(self.stage.block.args) != stage_args:
            raise VerifyException("tile.conv: the stage is one map body of the input and one argument per stage_ins")
        views = self.stage_views.data if self.stage_views is not None else ()
        if len(views) != len(self.stage_inputs) or (self.stage_inputs and not self.stage.blocks):
            raise VerifyException("tile.conv: each stage_ins operand has a #tile.map_view in stage_views and the stage reads it")
        if not all(isinstance(v, MapViewAttr) and v.dims[0] == 1 and v.dims[2:] == (1, 1) for v in views):
            raise VerifyException("tile.conv: a stage_ins view is a per-channel [1, C, 1, 1] #tile.map_view")


__all__ = ["ConvOp", "ConvTilingAttr", "MapViewAttr", "parse_fields"]
