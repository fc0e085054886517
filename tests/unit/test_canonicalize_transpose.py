"""graph-canonicalize's FoldTransposeChain: transpose(transpose(x, p), q) is
one transpose (or none when p and q cancel), with the same values exactly
as onnxruntime gives for the two (a transpose copies)."""

from __future__ import annotations

import numpy as np
import onnx
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper
from xdsl.context import Context

from gedialects.frontend.onnx_import import import_model
from gedialects.graph.interpreter import run
from gedialects.graph.transforms.canonicalize import GraphCanonicalizePass
from gedialects.zoo import onnxruntime_outputs


def _two_transposes(shape, p, q) -> onnx.ModelProto:
    nodes = [
        helper.make_node("Transpose", ["x"], ["t"], name="first", perm=list(p)),
        helper.make_node("Transpose", ["t"], ["y"], name="second", perm=list(q)),
    ]
    graph = helper.make_graph(
        nodes, "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@st.composite
def chains(draw):
    rank = draw(st.integers(1, 5))
    shape = draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank))
    p = draw(st.permutations(range(rank)))
    q = draw(st.permutations(range(rank)))
    return shape, p, q


@settings(max_examples=40, deadline=None)
@given(chains())
def test_transpose_chain_is_one_transpose(chain):
    shape, p, q = chain
    model = _two_transposes(shape, p, q)
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    module = import_model(model)
    GraphCanonicalizePass().apply(Context(), module)
    left = [op.name for op in module.walk() if op.name == "graph.transpose"]
    identity = [p[i] for i in q] == list(range(len(shape)))
    assert len(left) == (0 if identity else 1)
    np.testing.assert_array_equal(run(module, {"x": x})["y"], onnxruntime_outputs(model, {"x": x})["y"])
