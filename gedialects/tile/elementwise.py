"""`tile.elementwise`: a vector kernel over NC1HWC0 maps before tiling (the
CNN path's elementwise ops, batch norms and loop fusions), and its tiling
(`#tile.elementwise_tiling`).

    tile.kernel @k5_elementwise {kind = "elementwise", block_dim = 1 : i64} {
      %x = tile.gm {tensor = "conv"} : !tile.ref<gm, f16>
      %s = tile.gm {tensor = "chan"} : !tile.ref<gm, f16>
      %y = tile.gm {tensor = "relu"} : !tile.ref<gm, f16>
      tile.elementwise ins(%x, %s : !tile.ref<gm, f16>, !tile.ref<gm, f16>) outs(%y : !tile.ref<gm, f16>)
          {input_views = [#tile.map_view<...>, #tile.map_view<shape = [1, 64, 1, 1], ...>],
           output_views = [#tile.map_view<...>]} {
      ^bb0(%a : f16, %c : f16):
        %m = arith.mulf %a, %c : f16
        %zero = arith.constant 0.000000e+00 : f16
        %r = arith.maximumf %m, %zero : f16
        tile.yield %r : f16
      }
    }

Every operand is an NC1HWC0 tensor in GM seen through a `#tile.map_view`
(gedialects/tile/conv.py): the outputs are maps of one shape [1, C, H, W];
an input is a map of that shape or a per-channel one [1, C, 1, 1] (a
constant packed C1 x C0, or a computed squeeze-excite gate), broadcast over
the pixels. The body is a map body (a tile.map's: one element per input,
scalars as `arith.constant`) that yields one element per output (a loop
fusion may yield several), computed in the maps' element type.

`tile-select-tiling` chooses a `#tile.elementwise_tiling` (bands of rows of
one C1 slice, from UB's capacity and the target's cost formulas:
elementwise_tiling.py), `tile-distribute` sets block_dim to its cores and
`tile-expand-structured` writes the loop (expand_elementwise.py)."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import ArrayAttr, IntAttr
from xdsl.ir import Region, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    ParsePropInAttrDict,
    irdl_attr_definition,
    irdl_op_definition,
    param_def,
    prop_def,
    region_def,
    var_operand_def,
)
from xdsl.utils.exceptions import VerifyException

from gedialects.tile.conv import MapViewAttr
from gedialects.tile.core_tiling import CoreTilingAttr
from gedialects.tile.ops import GmOp, RefType, TileOp


@irdl_attr_definition
class ElementwiseTilingAttr(CoreTilingAttr):
    """An elementwise kernel's tiles: bands of `band_rows` rows of one C1
    slice, spread over `cores` cores (contiguous runs); `cycles`: the cost
    model's prediction for the busiest core."""

    name = "tile.elementwise_tiling"
    band_rows: IntAttr = param_def()
    cores: IntAttr = param_def()
    cycles: IntAttr = param_def()


@irdl_op_definition
class ElementwiseOp(TileOp):
    """outputs = body(inputs) per element of the maps: see the module's docstring."""

    name = "tile.elementwise"
    inputs = var_operand_def(RefType)
    outputs = var_operand_def(RefType)
    input_views = prop_def(ArrayAttr)
    output_views = prop_def(ArrayAttr)
    body = region_def("single_block")
    irdl_options = (ParsePropInAttrDict(), AttrSizedOperandSegments(as_property=True))
    assembly_format = (
        "`ins` `(` $inputs `:` type($inputs) `)` `outs` `(` $outputs `:` type($outputs) `)` "
        "attr-dict-with-keyword $body"
    )

    def __init__(self, inputs: Sequence[tuple[SSAValue, MapViewAttr]], outputs: Sequence[tuple[SSAValue, MapViewAttr]],
                 body: Region):
        super().__init__(
            operands=[[v for v, _ in inputs], [v for v, _ in outputs]],
            properties={"input_views": ArrayAttr([view for _, view in inputs]),
                        "output_views": ArrayAttr([view for _, view in outputs])},
            regions=[body])

    def views(self) -> list[MapViewAttr]:
        return list(self.input_views.data)  # type: ignore[arg-type]

    def out_views(self) -> list[MapViewAttr]:
        return list(self.output_views.data)  # type: ignore[arg-type]

    def map_shape(self) -> tuple[int, ...]:
        """[N, C, H, W] of the outputs (the iteration space)."""
        return self.out_views()[0].dims

    def per_channel(self, k: int) -> bool:
        """Input k is one value per channel, broadcast over the pixels."""
        return self.views()[k].dims != self.map_shape()

    def verify_(self) -> None:
        if not all(isinstance(v.owner, GmOp) for v in self.operands):
            raise VerifyException("tile.elementwise: its operands are tile.gm references (a view's offset is its origin)")
        views, outs = self.input_views.data, self.output_views.data
        if len(views) != len(self.inputs) or len(outs) != len(self.outputs) or not self.outputs:
            raise VerifyException("tile.elementwise: one #tile.map_view per input and per output (at least one output)")
        if not all(isinstance(v, MapViewAttr) for v in (*views, *outs)):
            raise VerifyException("tile.elementwise: input_views and output_views are #tile.map_view")
        n, c, _, _ = shape = outs[0].dims  # type: ignore[attr-defined]
        if n != 1 or any(v.dims != shape for v in outs):  # type: ignore[attr-defined]
            raise VerifyException("tile.elementwise: the outputs are maps of one shape [1, C, H, W]")
        for v in views:
            if v.dims not in (shape, (1, c, 1, 1)):  # type: ignore[attr-defined]
                raise VerifyException(f"tile.elementwise: an input is a map of {list(shape)} or per-channel "
                                      f"[1, {c}, 1, 1], not {list(v.dims)}")  # type: ignore[attr-defined]
        block = self.body.block
        if len(block.args) != len(self.inputs):
            raise VerifyException("tile.elementwise: the body takes one element per input")
        term = block.last_op
        if term is None or term.name != "tile.yield" or len(term.operands) != len(self.outputs):
            raise VerifyException("tile.elementwise: the body ends with tile.yield of one element per output")


__all__ = ["ElementwiseOp", "ElementwiseTilingAttr"]
