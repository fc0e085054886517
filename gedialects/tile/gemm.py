"""`tile.gemm`: the CNN classifier's product before tiling -- a few rows
(M <= 16) times a constant matrix packed at compile time -- and its tiling
(`#tile.gemm_tiling`).

    tile.kernel @k5_gemm {kind = "gemm", block_dim = 1 : i64} {
      %a = tile.gm {tensor = "pool"} : !tile.ref<gm, f16>
      %w = tile.gm {tensor = "gemm_w"} : !tile.ref<gm, f16>
      %y = tile.gm {tensor = "gemm"} : !tile.ref<gm, f16>
      tile.gemm %a, %w, %y : ... {m = 1, n = 1000, k_fractals = 128, n_fractals = 63, a_origin = 0} { epilogue }

`a` holds M rows of K elements from `a_origin` (a flattened NC1HWC0 map is
read in its stored order: the weight rows were permuted to match); the
weights are [K1][N1][16][k0] (k0 elements of K per 32-byte block, 16
output columns per fractal); `bias` (fp32, N1 * 16) and the `epilogue` map
body (a fused activation) apply to the result, stored as M rows of N.
`tile-select-tiling` chooses a `#tile.gemm_tiling` (output fractals per
tile and K fractals per step: gemm_tiling.py), `tile-distribute` sets
block_dim to its cores, `tile-expand-structured` writes the loops
(expand_gemm.py)."""

from __future__ import annotations

from xdsl.dialects.builtin import IntAttr, IntegerAttr, i64
from xdsl.ir import Region, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    ParsePropInAttrDict,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    param_def,
    prop_def,
    region_def,
)
from xdsl.utils.exceptions import VerifyException

from gedialects.tile.core_tiling import CoreTilingAttr
from gedialects.tile.ops import GmOp, RefType, TileOp

@irdl_attr_definition
class GemmTilingAttr(CoreTilingAttr):
    """A gemm kernel's tiles: blocks of `tile_fractals` output fractals (16
    columns each), K accumulated in steps of `k_fractals` fractals, the
    tiles spread over `cores` cores; `cycles`: the cost model's figure."""

    name = "tile.gemm_tiling"
    tile_fractals: IntAttr = param_def()
    k_fractals: IntAttr = param_def()
    cores: IntAttr = param_def()
    cycles: IntAttr = param_def()


@irdl_op_definition
class GemmOp(TileOp):
    """output = epilogue(a x weights + bias): see the module's docstring."""

    name = "tile.gemm"
    a = operand_def(RefType)
    weights = operand_def(RefType)
    output = operand_def(RefType)
    bias = opt_operand_def(RefType)
    m = prop_def(IntegerAttr)
    n = prop_def(IntegerAttr)
    k_fractals = prop_def(IntegerAttr)
    n_fractals = prop_def(IntegerAttr)
    a_origin = prop_def(IntegerAttr)
    epilogue = region_def()
    irdl_options = (ParsePropInAttrDict(), AttrSizedOperandSegments(as_property=True))
    assembly_format = (
        "$a `,` $weights `,` $output (`bias` `(` $bias^ `:` type($bias) `)`)? `:` type($a) `,` type($weights) `,` "
        "type($output) attr-dict-with-keyword $epilogue"
    )

    def __init__(self, a: SSAValue, weights: SSAValue, output: SSAValue, *, m: int, n: int, k_fractals: int,
                 n_fractals: int, a_origin: int = 0, bias: SSAValue | None = None, epilogue: Region | None = None):
        props = {key: IntegerAttr(value, i64) for key, value in
                 (("m", m), ("n", n), ("k_fractals", k_fractals), ("n_fractals", n_fractals), ("a_origin", a_origin))}
        super().__init__(operands=[a, weights, output, [bias] if bias is not None else []], properties=props,
                         regions=[epilogue or Region()])

    def int_(self, key: str) -> int:
        return self.properties[key].value.data  # type: ignore[attr-defined]

    def verify_(self) -> None:
        if not all(isinstance(v.owner, GmOp) for v in self.operands):
            raise VerifyException("tile.gemm: its operands are tile.gm references")
        if not 1 <= self.int_("m") <= 16:
            raise VerifyException("tile.gemm: m is 1 to 16 rows (one fractal of rows)")
        if min(self.int_("n"), self.int_("k_fractals"), self.int_("n_fractals")) < 1 or \
                self.int_("n") > 16 * self.int_("n_fractals"):
            raise VerifyException("tile.gemm: n, k_fractals, n_fractals are positive, n at most 16 * n_fractals")
        if len(self.epilogue.blocks) > 1 or self.epilogue.blocks and len(self.epilogue.block.args) != 1:
            raise VerifyException("tile.gemm: the epilogue is one map body of one argument")


__all__ = ["GemmOp", "GemmTilingAttr"]
