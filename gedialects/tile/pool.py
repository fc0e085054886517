"""`tile.pool`: a max or average pool of an NC1HWC0 map before tiling, and
its tiling (`#tile.pool_tiling`).

    tile.kernel @k2_max_pool {kind = "max_pool", block_dim = 1 : i64} {
      %x = tile.gm {tensor = "conv"} : !tile.ref<gm, f16>
      %y = tile.gm {tensor = "pool"} : !tile.ref<gm, f16>
      tile.pool "max" %x, %y : !tile.ref<gm, f16>, !tile.ref<gm, f16> {input_view = #tile.map_view<...>,
          output_view = #tile.map_view<...>, kernel_size = array<i64: 3, 3>, strides = array<i64: 2, 2>,
          pads = array<i64: 1, 1, 1, 1>}

The input's padding is its storage's zero halo (the view's `padded_w`
and origin leave room for it); `lowest_halo` says the halo must read as
the storage type's lowest value (a max pool of values that may be
negative). An average pool divides by the window's size, or with `counts`
(a GM tensor of [OH][OW][C0] reciprocals) by the taps inside the map; a
`global_avg` pool's window is the whole map.

`tile-select-tiling` chooses a `#tile.pool_tiling` (bands of output rows of
one C1 slice, or a global pool's slices per tile, from UB's capacity and
the target's cost formulas:
pool_tiling.py), `tile-distribute` sets block_dim to its cores and
`tile-expand-structured` writes the loop (expand_pool.py)."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import DenseArrayBase, IntAttr, StringAttr, UnitAttr, i64
from xdsl.ir import Attribute, SSAValue
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
)
from xdsl.utils.exceptions import VerifyException

from gedialects.tile.conv import MapViewAttr
from gedialects.tile.core_tiling import CoreTilingAttr
from gedialects.tile.ops import GmOp, RefType, TileOp

POOL_KINDS = ("max", "avg", "global_avg")
"""`global_avg`: the mean of each channel over the whole map (the window is
the map), by a tree of adds rather than a vector op per tap."""


@irdl_attr_definition
class PoolTilingAttr(CoreTilingAttr):
    """A pool kernel's tiles: bands of `band_rows` output rows of `slices`
    C1 slices, spread over `cores` cores (contiguous runs); `cycles`: the
    cost model's prediction for the busiest core."""

    name = "tile.pool_tiling"
    band_rows: IntAttr = param_def()
    slices: IntAttr = param_def()
    cores: IntAttr = param_def()
    cycles: IntAttr = param_def()


def _ints(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, list(values))


@irdl_op_definition
class PoolOp(TileOp):
    """output = pool(input) over kernel_size windows: see the module's docstring."""

    name = "tile.pool"
    kind = prop_def(StringAttr)
    input = operand_def(RefType)
    output = operand_def(RefType)
    counts = opt_operand_def(RefType)
    input_view = prop_def(MapViewAttr)
    output_view = prop_def(MapViewAttr)
    kernel_size = prop_def(DenseArrayBase)
    strides = prop_def(DenseArrayBase)
    pads = prop_def(DenseArrayBase)
    lowest_halo = opt_prop_def(UnitAttr)
    irdl_options = (ParsePropInAttrDict(), AttrSizedOperandSegments(as_property=True))
    assembly_format = (
        "$kind $input `,` $output (`counts` `(` $counts^ `:` type($counts) `)`)? `:` type($input) `,` type($output) "
        "attr-dict"
    )

    def __init__(self, kind: str, input: tuple[SSAValue, MapViewAttr], output: tuple[SSAValue, MapViewAttr], *,
                 kernel_size: Sequence[int], strides: Sequence[int], pads: Sequence[int], lowest_halo: bool = False,
                 counts: SSAValue | None = None):
        props: dict[str, Attribute] = {
            "kind": StringAttr(kind), "input_view": input[1], "output_view": output[1],
            "kernel_size": _ints(kernel_size), "strides": _ints(strides), "pads": _ints(pads),
        }
        if lowest_halo:
            props["lowest_halo"] = UnitAttr()
        super().__init__(operands=[input[0], output[0], [counts] if counts is not None else []], properties=props)

    def ints(self, key: str) -> tuple[int, ...]:
        return tuple(int(v) for v in self.properties[key].get_values())  # type: ignore[attr-defined]

    def verify_(self) -> None:
        if not all(isinstance(v.owner, GmOp) for v in self.operands):
            raise VerifyException("tile.pool: its operands are tile.gm references (a view's offset is its origin)")
        if self.kind.data not in POOL_KINDS:
            raise VerifyException(f"tile.pool: kind is one of {', '.join(POOL_KINDS)}")
        if len(self.ints("kernel_size")) != 2 or len(self.ints("strides")) != 2 or len(self.ints("pads")) != 4:
            raise VerifyException("tile.pool: kernel_size and strides are pairs, pads [top, left, bottom, right]")
        if self.counts is not None and self.kind.data != "avg":
            raise VerifyException("tile.pool: only an average pool divides by counts")
        if self.kind.data == "global_avg" and (
                self.ints("kernel_size") != self.input_view.dims[2:] or self.output_view.dims[2:] != (1, 1)
                or any(self.ints("pads")) or self.ints("strides") != (1, 1)):
            raise VerifyException("tile.pool: a global_avg pool's window is its whole, unpadded map")
        if self.lowest_halo is not None and self.kind.data != "max":
            raise VerifyException("tile.pool: only a max pool reads its halo as the lowest value")


__all__ = ["POOL_KINDS", "PoolOp", "PoolTilingAttr"]
