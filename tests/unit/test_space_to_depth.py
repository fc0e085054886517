"""conv-space-to-depth (lowering/space_to_depth.py) and graph.space_to_depth
on the AI core (a tile.transdata with block_size: lowering/graph_to_tile/transdata.py, expand_transdata.py):
image stems against onnxruntime in both precision modes, where they run,
and what the rewrite saves; ONNX SpaceToDepth itself."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.context import Context

from gedialects.frontend.onnx_import import import_model
from gedialects.graph import ops as g
from gedialects.graph.interpreter import run as run_reference
from gedialects.numerics import assert_close
from gedialects.zoo import onnxruntime_outputs
from lowering.pipeline import compile_module, run_compiled
from lowering.space_to_depth import ConvSpaceToDepthPass, block_k

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

MODES = ("force_fp16", "must_keep_origin_dtype")


def _rand(*shape, scale=1.0, seed=0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


def _model(nodes, inits: dict, feeds: dict):
    graph = helper.make_graph(
        nodes, "stem", [helper.make_tensor_value_info(n, TensorProto.FLOAT, a.shape) for n, a in feeds.items()],
        [helper.make_empty_tensor_value_info("y")],
        [numpy_helper.from_array(np.asarray(v, np.float32), n) for n, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def stem(channels: int, kernel: int, stride: int, pads: list[int], size: int, out: int = 32, pool: bool = False):
    """A conv stem (+ relu, + a 3x3/2 max pool when asked) on a random image."""
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], strides=[stride, stride], pads=pads),
             helper.make_node("Relu", ["c"], ["r" if pool else "y"])]
    if pool:
        nodes.append(helper.make_node("MaxPool", ["r"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]))
    inits = {"w": _rand(out, channels, kernel, kernel, scale=0.3, seed=1), "b": _rand(out, scale=0.1, seed=2)}
    feeds = {"x": _rand(1, channels, size, size, seed=3)}
    return _model(nodes, inits, feeds), feeds


STEMS = {  # images of at least MIN_PIXELS
    "resnet 7x7/2": (3, 7, 2, [3, 3, 3, 3], 128, 32, True),
    "shufflenet 3x3/2": (3, 3, 2, [1, 1, 1, 1], 128, 24, False),
    "uneven pads": (3, 5, 2, [2, 1, 3, 2], 128, 16, False),
    "one channel": (1, 7, 2, [3, 3, 3, 3], 128, 16, False),
    "four channels, long rows": (4, 3, 2, [1, 1, 1, 1], 200, 16, False),  # 100 cells a row: a tail chunk
    "alexnet 11x11/4": (3, 11, 4, [0, 0, 0, 0], 128, 16, False),  # 48 channels of cells: three blocks
    "3x3 cells": (3, 7, 3, [3, 3, 3, 3], 129, 16, False),  # 27 channels: a block and a part
}


@pytest.mark.parametrize("precision", MODES)
@pytest.mark.parametrize("name", sorted(STEMS))
def test_stems_match_onnxruntime(name, precision):
    model, feeds = stem(*STEMS[name])
    compiled = compile_module(import_model(model), precision)
    got = run_compiled(compiled, feeds).outputs["y"]
    want = onnxruntime_outputs(model, feeds)["y"]
    assert np.std(want) > 1e-2
    assert_close(np.asarray(got).reshape(want.shape), want, precision)
    assert compiled.aicpu == 0 and compiled.transdata == 2 and "conv" in compiled.kernel_kinds  # in and out
    assert _op_types(compiled, feeds)[0] == "space_to_depth"  # the input transdata folds the cells


def _op_types(compiled, feeds) -> list[str]:
    return [k.info.get("op_type", "") for k in run_compiled(compiled, feeds).profile.kernels]


def test_the_stem_conv_does_a_third_of_the_work(monkeypatch):
    """ResNet-50's stem in force_fp16: K 784 -> 256 products per output, and
    the conv takes less than half the plain stem conv's cycles."""
    model, feeds = stem(3, 7, 2, [3, 3, 3, 3], 128, 32)
    assert block_k(3, 49, 16) == 784 and block_k(12, 16, 16) == 256
    module = import_model(model)
    ConvSpaceToDepthPass("force_fp16").apply(Context(), module)
    (conv,) = [op for op in module.walk() if isinstance(op, g.ConvOp)]
    assert g.shape_of(conv.weight) == (32, 12, 4, 4) and conv.ints("pads") == (2, 2, 1, 1)
    fast = run_compiled(compile_module(import_model(model)), feeds).profile
    conv_cycles = sum(k.cycles for k in fast.kernels if k.info.get("op_type") == "conv")
    monkeypatch.setattr(ConvSpaceToDepthPass, "apply", lambda self, ctx, op: None)
    plain = compile_module(import_model(model), "force_fp16")
    plain_conv = sum(k.cycles for k in run_compiled(plain, feeds).profile.kernels if k.info.get("op_type") == "conv")
    assert conv_cycles < plain_conv / 2


@pytest.mark.parametrize("channels,kernel,stride,size", [(3, 3, 1, 128), (16, 3, 2, 128), (3, 11, 5, 130), (3, 7, 2, 64)])
def test_convs_it_leaves_alone(channels, kernel, stride, size):
    """Stride 1; channels that fill the blocks already; cells of 5x5 pixels
    (the space-to-depth kernel takes up to 16); a 64x64 image (below
    MIN_PIXELS: the kernel would cost more than the conv saves)."""
    model, _ = stem(channels, kernel, stride, [1, 1, 1, 1], size)
    module = import_model(model)
    ConvSpaceToDepthPass("force_fp16").apply(Context(), module)
    assert not any(isinstance(op, g.SpaceToDepthOp) for op in module.walk())


@pytest.mark.parametrize("precision", MODES)
def test_onnx_space_to_depth(precision):
    """ONNX SpaceToDepth (DCR) imports, interprets and, read by a conv, runs
    on the AI core."""
    nodes = [helper.make_node("SpaceToDepth", ["x"], ["s"], blocksize=2),
             helper.make_node("Conv", ["s", "w"], ["y"], pads=[1, 1, 1, 1])]
    feeds = {"x": _rand(1, 3, 32, 48, seed=5)}
    model = _model(nodes, {"w": _rand(8, 12, 3, 3, scale=0.3, seed=6)}, feeds)
    want = onnxruntime_outputs(model, feeds)["y"]
    assert_close(run_reference(import_model(model), feeds)["y"], want, "must_keep_origin_dtype")
    compiled = compile_module(import_model(model), precision)
    assert compiled.aicpu == 0 and compiled.transdata == 2  # in and out
    result = run_compiled(compiled, feeds)
    assert result.profile.kernels[0].info.get("op_type") == "space_to_depth"
    assert_close(np.asarray(result.outputs["y"]).reshape(want.shape), want, precision)
