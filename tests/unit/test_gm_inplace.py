"""A conv with a fused residual writes its output over the residual when it is
the residual's last reader (`ge.reuses`, gedialects/tile/gm_arena.py): the
arena shrinks, the numbers stay right and no race appears."""

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


def _bottlenecks(blocks: int = 2):
    """ResNet-style blocks of 1x1 convs, y = relu(conv(relu(conv(x))) + x),
    then one more conv."""
    rng = np.random.default_rng(7)
    nodes, inits, prev = [], [], "x"
    for i in range(blocks):
        for j in range(2):
            w = (rng.standard_normal((32, 32, 1, 1)) / 6).astype(np.float32)
            inits.append(helper.make_tensor(f"w{i}{j}", TensorProto.FLOAT, w.shape, w.ravel()))
        nodes += [
            helper.make_node("Conv", [prev, f"w{i}0"], [f"c{i}0"]),
            helper.make_node("Relu", [f"c{i}0"], [f"r{i}0"]),
            helper.make_node("Conv", [f"r{i}0", f"w{i}1"], [f"c{i}1"]),
            helper.make_node("Add", [f"c{i}1", prev], [f"s{i}"]),
            helper.make_node("Relu", [f"s{i}"], [f"y{i}"]),
        ]
        prev = f"y{i}"
    w = (rng.standard_normal((32, 32, 1, 1)) / 6).astype(np.float32)  # a last conv reads the blocks' result
    inits.append(helper.make_tensor("w_out", TensorProto.FLOAT, w.shape, w.ravel()))
    nodes.append(helper.make_node("Conv", [prev, "w_out"], ["out"]))
    prev = "out"
    graph = helper.make_graph(
        nodes, "bottlenecks", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32, 14, 14])],
        [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [1, 32, 14, 14])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("precision", ["must_keep_origin_dtype", "force_fp16"])
def test_residual_written_in_place_matches_onnxruntime(precision, monkeypatch):
    model = _bottlenecks()
    inputs = random_inputs(model)
    shared = compile_module(import_model(model, {}, source="blocks"), precision)
    res = simulate(assemble(shared.module), inputs, races="error")
    ((name, ref),) = onnxruntime_outputs(model, inputs).items()
    assert CRITERIA[precision].check(res.outputs[name].reshape(ref.shape), ref).ok
    # the test can fail: without the in-place reuse the arena is larger
    monkeypatch.setattr(placement, "_overwritten", lambda ctx, st: None)
    apart = compile_module(import_model(model, {}, source="blocks"), precision)
    assert int(shared.memory["arena_size"]) < int(apart.memory["arena_size"])
    same = simulate(assemble(apart.module), inputs, races="error")
    np.testing.assert_array_equal(same.outputs[name], res.outputs[name])
