"""The xDSL universe of gedialects: dialects, passes and frontends by name.

Every entry is a lazy factory (it imports on use) so that `ge-opt --help` and
plain `xdsl-opt` start fast. Registered through the `xdsl.universe` entry point
in pyproject.toml; nothing else registers these names again.
"""

from __future__ import annotations

from xdsl.universe import Universe


def _graph_dialect():
    from gedialects.graph.ops import Graph

    return Graph


def _npu_dialect():
    from gedialects.npu.ops import NPU

    return NPU


def _graph_canonicalize():
    from gedialects.graph.transforms.canonicalize import GraphCanonicalizePass

    return GraphCanonicalizePass


def _graph_decompose():
    from gedialects.graph.transforms.decompose import GraphDecomposePass

    return GraphDecomposePass


def _graph_plan_memory():
    from gedialects.graph.transforms.plan_memory import GraphPlanMemoryPass

    return GraphPlanMemoryPass


def _graph_fuse():
    from gedialects.graph.transforms.fuse import GraphFusePass

    return GraphFusePass


def _tile_dialect():
    from gedialects.tile.dialect import Tile

    return Tile


def _graph_partition():
    from lowering.partition import GraphPartitionPass

    return GraphPartitionPass


def _conv_space_to_depth():
    from lowering.space_to_depth import ConvSpaceToDepthPass

    return ConvSpaceToDepthPass


def _assign_layouts():
    from lowering.assign_layouts import AssignLayoutsPass

    return AssignLayoutsPass


def _convert_graph_to_tile():
    from lowering.graph_to_tile import ConvertGraphToTilePass

    return ConvertGraphToTilePass


def _convert_tile_to_npu():
    from lowering.tile_to_npu import ConvertTileToNpuPass

    return ConvertTileToNpuPass


def _ge_graph_opt():
    from lowering.pipeline import GeGraphOptPass

    return GeGraphOptPass


def _ge_lower():
    from lowering.pipeline import GeLowerPass

    return GeLowerPass


def _ge_compile():
    from lowering.pipeline import GeCompilePass

    return GeCompilePass


def _lazy(module: str, cls: str):
    """A factory importing `cls` from `module` on first use."""

    def factory():
        import importlib

        return getattr(importlib.import_module(module), cls)

    return factory


TILE_PASSES = {
    "tile-fit-device-memory": _lazy("gedialects.tile.transforms.fit_device_memory", "TileFitDeviceMemoryPass"),
    "tile-legalize-math": _lazy("gedialects.tile.transforms.legalize_math", "TileLegalizeMathPass"),
    "tile-split-reduction": _lazy("gedialects.tile.transforms.split_reduction", "TileSplitReductionPass"),
    "tile-select-tiling": _lazy("gedialects.tile.transforms.select_tiling", "TileSelectTilingPass"),
    "tile-distribute": _lazy("gedialects.tile.transforms.distribute", "TileDistributePass"),
    "tile-pipeline-buffers": _lazy("gedialects.tile.transforms.pipeline_buffers", "TilePipelineBuffersPass"),
    "tile-share-alike-kernels": _lazy("gedialects.tile.transforms.share_alike", "TileShareAlikeKernelsPass"),
    "tile-expand-structured": _lazy("gedialects.tile.transforms.expand_structured", "TileExpandStructuredPass"),
    "tile-allocate": _lazy("gedialects.tile.transforms.allocate", "TileAllocatePass"),
    "tile-assign-streams": _lazy("gedialects.tile.transforms.assign_streams", "TileAssignStreamsPass"),
    "ge-tile-opt": _lazy("lowering.pipeline", "GeTileOptPass"),
    "npu-insert-sync": _lazy("gedialects.npu.transforms.insert_sync", "NpuInsertSyncPass"),
}


def _onnx_frontend():
    from gedialects.frontend.onnx_frontend import OnnxFrontend

    return OnnxFrontend


def _pt2_frontend():
    from gedialects.frontend.onnx_frontend import Pt2Frontend

    return Pt2Frontend


GE_UNIVERSE = Universe(
    all_dialects={
        "graph": _graph_dialect,
        "npu": _npu_dialect,
        "tile": _tile_dialect,
    },
    all_passes={
        "graph-canonicalize": _graph_canonicalize,
        "graph-decompose": _graph_decompose,
        "graph-fuse": _graph_fuse,
        "graph-plan-memory": _graph_plan_memory,
        "conv-space-to-depth": _conv_space_to_depth,
        "map-unbatch": _lazy("lowering.unbatch", "MapUnbatchPass"),
        "graph-partition": _graph_partition,
        "assign-layouts": _assign_layouts,
        "convert-graph-to-tile": _convert_graph_to_tile,
        "convert-tile-to-npu": _convert_tile_to_npu,
        "ge-graph-opt": _ge_graph_opt,
        "ge-lower": _ge_lower,
        "ge-compile": _ge_compile,
        **TILE_PASSES,
    },
    all_frontends={
        "onnx": _onnx_frontend,
        "pt2": _pt2_frontend,
    },
)
