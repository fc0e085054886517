"""The tile dialect's registration: the loop-level ops (ops.py) and the
structured ops they are expanded from (structured.py, conv.py, pool.py, gemm.py,
elementwise.py, transdata.py)."""

from __future__ import annotations

from xdsl.ir import Dialect

from gedialects.tile import conv, elementwise, gemm, ops, pool, structured, transdata

Tile = Dialect(
    "tile",
    [
        ops.ProgramOp, ops.TensorOp, ops.KernelOp, ops.BlockIdxOp, ops.AllocOp, ops.GmOp, ops.AtOp,
        ops.CopyOp, ops.Im2colOp, ops.LoadFractalOp, ops.MatmulOp, ops.VecOp, ops.ReduceOp, ops.CastOp,
        ops.DupOp, ops.LoadIndexOp, ops.AicpuOp, ops.AicpuReturnOp, ops.MemcpyOp, ops.StreamRecordOp, ops.StreamWaitOp,
        structured.LoadOp, structured.GatherOp, structured.StoreOp, structured.MapOp, structured.YieldOp, structured.ReductionOp,
        structured.BatchMatmulOp, structured.AttentionOp, conv.ConvOp, pool.PoolOp, gemm.GemmOp,
        elementwise.ElementwiseOp, transdata.TransdataOp,
    ],
    [ops.RefType, structured.TilingAttr, structured.DistributionAttr, conv.ConvTilingAttr, conv.MapViewAttr, pool.PoolTilingAttr, gemm.GemmTilingAttr,
     elementwise.ElementwiseTilingAttr, transdata.TransdataTilingAttr],
)
