"""A BERT-base-sized encoder layer as ONNX, in the form the TorchScript
exporter gives transformers' BertLayer (issue 13, item 5): no torch or
transformers needed.

    python benchmarks/bert_base_layer.py [--out bert_base_layer.onnx]

Sequence 128, hidden 768, 12 heads of 64, FFN 3,072, batch 1; inputs
`hidden_states` [1, 128, 768] (fp32) and `attention_mask` [1, 128] (int64,
the last 16 tokens padding). Nodes as exported: Q/K/V MatMul + Add,
Reshape + Transpose into heads (keys with perm (0, 2, 3, 1)), MatMul, Div
by sqrt(64), Add of the extended mask ((1 - mask) * finfo(f32).min),
Softmax, MatMul with the values, Transpose + Reshape back, output dense +
residual + LayerNormalization, intermediate dense + exact GELU (Div, Erf,
Add, Mul, Mul), output dense + residual + LayerNormalization.

Weights are seeded normal with the query and key projections wide enough
(std 0.05) that the softmax is far from uniform and far from one-hot on
LayerNorm-scaled inputs: a numerical check of the attention means something.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SEQ, HIDDEN, HEADS, FFN = 128, 768, 12, 3072
PADDING = 16
ATTENTION_BLOCK = ("/attention/self/MatMul", "/attention/self/Div", "/attention/self/Add", "/attention/self/Softmax",
                   "/attention/self/MatMul_1", "/attention/self/Transpose_3")
"""The nodes from the scores to the heads merged back: the attention block
whose kernels benchmarks/roofline.py compares fused and unfused."""


def build(seq: int = SEQ, hidden: int = HIDDEN, heads: int = HEADS, ffn: int = FFN, seed: int = 0) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)
    head = hidden // heads
    inits: list[onnx.TensorProto] = []
    nodes: list[onnx.NodeProto] = []

    def const(name: str, array) -> str:
        inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def node(op: str, inputs: list[str], name: str, **attrs) -> str:
        out = f"{name}_output_0"
        nodes.append(helper.make_node(op, inputs, [out], name=name, **attrs))
        return out

    def dense(x: str, fan_in: int, fan_out: int, prefix: str, std: float) -> str:
        w = const(f"{prefix}.weight", (rng.standard_normal((fan_in, fan_out)) * std).astype(np.float32))
        b = const(f"{prefix}.bias", (rng.standard_normal(fan_out) * 0.02).astype(np.float32))
        return node("Add", [node("MatMul", [x, w], f"/{prefix}/MatMul"), b], f"/{prefix}/Add")

    def layer_norm(x: str, prefix: str) -> str:
        gamma = const(f"{prefix}.weight", (1 + rng.standard_normal(hidden) * 0.1).astype(np.float32))
        beta = const(f"{prefix}.bias", (rng.standard_normal(hidden) * 0.1).astype(np.float32))
        return node("LayerNormalization", [x, gamma, beta], f"/{prefix}/LayerNormalization", axis=-1, epsilon=1e-12)

    heads_shape = const("heads_shape", np.array([1, seq, heads, head], np.int64))
    merged_shape = const("merged_shape", np.array([1, seq, hidden], np.int64))

    def split_heads(x: str, name: str, perm: list[int]) -> str:
        return node("Transpose", [node("Reshape", [x, heads_shape], f"/attention/self/{name}/Reshape")],
                    f"/attention/self/{name}/Transpose", perm=perm)

    # the extended attention mask: (1 - mask[:, None, None, :]) * finfo(f32).min
    mask = node("Unsqueeze", ["attention_mask", const("axes_1", np.array([1], np.int64))], "/Unsqueeze")
    mask = node("Unsqueeze", [mask, const("axes_2", np.array([2], np.int64))], "/Unsqueeze_1")
    mask = node("Cast", [mask], "/Cast", to=TensorProto.FLOAT)
    mask = node("Sub", [const("one", np.array(1.0, np.float32)), mask], "/Sub")
    mask = node("Mul", [mask, const("f32_min", np.array(np.finfo(np.float32).min, np.float32))], "/Mul")

    x = "hidden_states"
    q = split_heads(dense(x, hidden, hidden, "attention/self/query", 0.05), "query", [0, 2, 1, 3])
    kt = split_heads(dense(x, hidden, hidden, "attention/self/key", 0.05), "key", [0, 2, 3, 1])
    v = split_heads(dense(x, hidden, hidden, "attention/self/value", 0.02), "value", [0, 2, 1, 3])
    scores = node("MatMul", [q, kt], "/attention/self/MatMul")
    scores = node("Div", [scores, const("sqrt_head", np.array(np.sqrt(head), np.float32))], "/attention/self/Div")
    scores = node("Add", [scores, mask], "/attention/self/Add")
    probs = node("Softmax", [scores], "/attention/self/Softmax", axis=-1)
    context = node("MatMul", [probs, v], "/attention/self/MatMul_1")
    context = node("Transpose", [context], "/attention/self/Transpose_3", perm=[0, 2, 1, 3])
    context = node("Reshape", [context, merged_shape], "/attention/self/Reshape_3")
    attn = dense(context, hidden, hidden, "attention/output/dense", 0.02)
    attn = layer_norm(node("Add", [attn, x], "/attention/output/Add"), "attention/output/LayerNorm")
    inter = dense(attn, hidden, ffn, "intermediate/dense", 0.02)
    gelu = node("Erf", [node("Div", [inter, const("sqrt2", np.array(np.sqrt(2), np.float32))], "/gelu/Div")], "/gelu/Erf")
    gelu = node("Add", [gelu, const("one_gelu", np.array(1.0, np.float32))], "/gelu/Add")
    gelu = node("Mul", [node("Mul", [inter, gelu], "/gelu/Mul"), const("half", np.array(0.5, np.float32))], "/gelu/Mul_1")
    out = dense(gelu, ffn, hidden, "output/dense", 0.02)
    out = layer_norm(node("Add", [out, attn], "/output/Add"), "output/LayerNorm")
    nodes[-1].output[0] = "last_hidden_state"

    graph = helper.make_graph(
        nodes, "bert_base_layer",
        [helper.make_tensor_value_info("hidden_states", TensorProto.FLOAT, [1, seq, hidden]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, [1, seq])],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, [1, seq, hidden])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    return model


def inputs(seq: int = SEQ, hidden: int = HIDDEN, seed: int = 0) -> dict[str, np.ndarray]:
    """LayerNorm-like hidden states and a mask whose last PADDING tokens are padding."""
    rng = np.random.default_rng(seed + 1)
    mask = np.ones((1, seq), np.int64)
    mask[:, seq - PADDING:] = 0
    return {"hidden_states": rng.standard_normal((1, seq, hidden)).astype(np.float32), "attention_mask": mask}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="bert_base_layer.onnx")
    args = p.parse_args(argv)
    onnx.save(build(), args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
