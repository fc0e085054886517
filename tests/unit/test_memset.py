"""Zero-halo tensors in reused GM storage: the arena plan gives them their
exact lifetimes and a memset kernel clears the storage an earlier tensor
left behind (lowering/graph_to_tile/memset.py)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from gedialects.frontend.onnx_import import import_model
from gedialects.numerics import CRITERIA
from gedialects.zoo import onnxruntime_outputs, random_inputs
from lowering.graph_to_tile import placement
from lowering.pipeline import compile_module
from target.assembler import assemble
from target.simulator import simulate


def _conv_chain(kernels=(1, 1, 3, 3, 3)):
    """1x1 convs (+ relu; 1) and padded 3x3 max pools (3) in a chain: a
    pool's input has a zero halo (convs pad on the fly and need none), and
    can take the storage an earlier map (with no halo, written everywhere)
    left."""
    rng = np.random.default_rng(3)
    nodes, inits = [], []
    prev = "x"
    for i, k in enumerate(kernels):
        if k == 3:
            nodes.append(helper.make_node("MaxPool", [prev], [f"p{i}"], kernel_shape=[3, 3], pads=[1] * 4))
            prev = f"p{i}"
            continue
        w = (rng.standard_normal((16, 16, 1, 1)) / 4).astype(np.float32)
        inits.append(helper.make_tensor(f"w{i}", TensorProto.FLOAT, w.shape, w.ravel()))
        nodes.append(helper.make_node("Conv", [prev, f"w{i}"], [f"c{i}"]))
        nodes.append(helper.make_node("Relu", [f"c{i}"], [f"r{i}"]))
        prev = f"r{i}"
    graph = helper.make_graph(
        nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 12, 12])],
        [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [1, 16, 12, 12])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("precision", ["must_keep_origin_dtype", "force_fp16"])
def test_reused_halo_storage_is_cleared_and_matches_onnxruntime(precision):
    model = _conv_chain()
    inputs = random_inputs(model)
    compiled = compile_module(import_model(model, {}, source="chain"), precision, max_streams=1)
    assert compiled.kernel_kinds.get("memset", 0) >= 1
    res = simulate(assemble(compiled.module), inputs, races="error")
    want = onnxruntime_outputs(model, inputs)
    (name, ref), = want.items()
    assert CRITERIA[precision].check(res.outputs[name].reshape(ref.shape), ref).ok


def test_without_the_memsets_the_borders_are_wrong(monkeypatch):
    """The test above can fail: the same plan without its memset kernels
    reads the previous tenant's values as halo."""
    monkeypatch.setattr(placement, "_insert_memsets", lambda ctx, names: None)
    model = _conv_chain()
    inputs = random_inputs(model)
    compiled = compile_module(import_model(model, {}, source="chain"), "must_keep_origin_dtype", max_streams=1)
    assert "memset" not in compiled.kernel_kinds
    res = simulate(assemble(compiled.module), inputs, races="error")
    (name, ref), = onnxruntime_outputs(model, inputs).items()
    got = res.outputs[name].reshape(ref.shape)
    assert not CRITERIA["must_keep_origin_dtype"].check(got, ref).ok
    # the interior of the maps is right; the border rows and columns are not
    np.testing.assert_allclose(got[..., 4:-4, 4:-4], ref[..., 4:-4, 4:-4], rtol=1e-4, atol=1e-4)


def test_memsets_on_streams_stay_before_their_writers():
    model = _conv_chain((1, 1, 3, 3, 1, 1, 3, 3))
    inputs = random_inputs(model)
    compiled = compile_module(import_model(model, {}, source="chain"), "force_fp16")
    res = simulate(assemble(compiled.module), inputs, races="error")  # a memset beside its writer would race
    (name, ref), = onnxruntime_outputs(model, inputs).items()
    assert CRITERIA["force_fp16"].check(res.outputs[name].reshape(ref.shape), ref).ok
