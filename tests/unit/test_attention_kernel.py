"""Fused attention (AttentionFusionPass -> graph.attention -> one
flash-attention kernel, lowering/graph_to_tile/attention.py and
gedialects/tile/transforms/expand_attention.py) on the npu backend against
onnxruntime, in both precision modes: the exported forms of the zoo
(scale after the product, padding and causal masks, a position bias plus a
mask, the scale on q), key counts that take several key blocks (the
online softmax) or are not whole fractals, broadcast key/value heads, and
the switch that turns the fusion off. Scores are far from uniform and far
from one-hot (q, k of unit-order entries, scale 1/sqrt(d)): a wrong
softmax shows."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from gedialects.frontend.onnx_import import import_model
from gedialects.numerics import assert_close
from gedialects.tile import ops as t
from gedialects.zoo import onnxruntime_outputs
from lowering.pipeline import compile_module, run_compiled

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

MODES = ("force_fp16", "must_keep_origin_dtype")
F32_MIN = float(np.finfo(np.float32).min)


def _rand(*shape, scale=1.0, seed=0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


def _model(nodes, feeds, inits=None):
    graph = helper.make_graph(
        nodes, "attention",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, a.shape) for n, a in feeds.items()],
        [helper.make_empty_tensor_value_info("y")],
        [numpy_helper.from_array(np.asarray(v, dtype=np.float32), n) for n, v in (inits or {}).items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _attention(q, k, v, masks=(), scale_node="Mul", keys_as_bshd=False):
    """softmax(q k^T * (1/sqrt(d)) + masks...) v, as exporters write it: the
    keys transposed by the product's operand transpose, the scale a Mul (or
    a Div by sqrt(d)), each mask an Add. `masks`: graph inputs by name."""
    d = q.shape[-1]
    inits = {"c": np.float32(1 / np.sqrt(d)) if scale_node == "Mul" else np.float32(np.sqrt(d))}
    perm = [0, 2, 3, 1] if keys_as_bshd else [0, 1, 3, 2]
    nodes = [helper.make_node("Transpose", ["k"], ["kt"], perm=perm),
             helper.make_node("MatMul", ["q", "kt"], ["s0"]),
             helper.make_node(scale_node, ["s0", "c"], ["s1"])]
    last = "s1"
    for i, name in enumerate(masks):
        nodes.append(helper.make_node("Add", [last, name], [f"s{i + 2}"]))
        last = f"s{i + 2}"
    nodes += [helper.make_node("Softmax", [last], ["p"], axis=-1), helper.make_node("MatMul", ["p", "v"], ["y"])]
    return nodes, inits


def _run(model, feeds, precision, switch_file="", dump=None):
    compiled = compile_module(import_model(model), precision, fusion_switch_file=switch_file, dump=dump)
    got = run_compiled(compiled, feeds).outputs
    want = onnxruntime_outputs(model, feeds)["y"]
    assert np.std(want) > 1e-3, "a constant output proves nothing"
    assert_close(np.asarray(got["y"]).reshape(want.shape), want, precision, err_msg="y")
    return compiled


def _fused(compiled, attention=1):
    kinds = compiled.kernel_kinds
    assert kinds.get("attention") == attention, kinds
    assert "softmax" not in kinds and "aicpu" not in kinds, kinds


def _padding_mask(tokens, padded):
    mask = np.zeros((1, 1, 1, tokens), np.float32)
    mask[..., tokens - padded:] = F32_MIN
    return mask


@pytest.mark.parametrize("precision", MODES)
def test_bert_form_with_a_padding_mask_is_one_kernel(precision):
    """BERT: keys [B, S, H, D] transposed (0, 2, 3, 1), scale after the
    product, the extended padding mask [1, 1, 1, S] (finfo.min) added."""
    q = _rand(1, 2, 32, 16, seed=1)
    k = _rand(1, 32, 2, 16, seed=2)
    v = _rand(1, 2, 32, 16, seed=3)
    nodes, inits = _attention(q, k, v, masks=("m",), keys_as_bshd=True)
    feeds = {"q": q, "k": k, "v": v, "m": _padding_mask(32, 5)}
    compiled = _run(_model(nodes, feeds, inits), feeds, precision)
    _fused(compiled)
    assert "matmul" not in compiled.kernel_kinds


@pytest.mark.parametrize("precision", MODES)
def test_causal_mask_over_several_key_blocks(precision):
    """512 keys of 64: more than one key block (the online softmax rescales
    the running sums); with a causal mask the first query rows have every
    key of the later blocks masked (their block max is floored, not NaN)."""
    tokens = 512
    q, k, v = _rand(1, 1, tokens, 64, seed=4), _rand(1, 1, tokens, 64, seed=5), _rand(1, 1, tokens, 64, seed=6)
    causal = np.triu(np.full((tokens, tokens), F32_MIN, np.float32), 1)[None, None]
    nodes, inits = _attention(q, k, v, masks=("causal",))
    inits["causal"] = causal
    feeds = {"q": q, "k": k, "v": v}
    products = []

    def count_products(stage, module):
        if stage == "tile-expand-structured":
            products.extend(op for op in module.walk() if isinstance(op, t.MatmulOp))

    compiled = _run(_model(nodes, feeds, inits), feeds, precision, dump=count_products)
    _fused(compiled)
    assert len(products) >= 4  # two per key block


@pytest.mark.parametrize("precision", MODES)
@pytest.mark.parametrize("tokens, head", [(65, 16), (20, 12), (4, 8)])
def test_key_counts_that_are_not_whole_fractals(tokens, head, precision):
    """ViT's 65 tokens, SegFormer's 4, a narrow head: one key block, its
    padding keys contribute exactly nothing (zero keys in L1, P clamped,
    zero value rows)."""
    q, k, v = (_rand(1, 2, tokens, head, seed=s) for s in (7, 8, 9))
    nodes, inits = _attention(q, k, v, scale_node="Div")
    feeds = {"q": q, "k": k, "v": v}
    _fused(_run(_model(nodes, feeds, inits), feeds, precision))


@pytest.mark.parametrize("precision", MODES)
def test_position_bias_and_mask_and_broadcast_key_heads(precision):
    """T5: two additive terms (a per-head position bias and the padding
    mask); the keys and values of one head shared by four query heads (the
    batch dims broadcast, as in multi-query attention)."""
    q = _rand(1, 4, 32, 32, seed=10)
    k, v = _rand(1, 1, 32, 32, seed=11), _rand(1, 1, 32, 32, seed=12)
    bias = _rand(1, 4, 32, 32, seed=13)
    nodes, inits = _attention(q, k, v, masks=("bias", "m"))
    feeds = {"q": q, "k": k, "v": v, "bias": bias, "m": _padding_mask(32, 3)}
    _fused(_run(_model(nodes, feeds, inits), feeds, precision))


@pytest.mark.parametrize("precision", MODES)
def test_scale_on_the_queries_stays_outside(precision):
    """Swin/SegFormer scale q before the product: the attention has scale 1
    and the Mul stays a kernel of its own."""
    q, k, v = (_rand(1, 2, 48, 32, seed=s) for s in (14, 15, 16))
    nodes = [helper.make_node("Mul", ["q", "c"], ["qs"]),
             helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
             helper.make_node("MatMul", ["qs", "kt"], ["s"]),
             helper.make_node("Softmax", ["s"], ["p"], axis=-1),
             helper.make_node("MatMul", ["p", "v"], ["y"])]
    feeds = {"q": q, "k": k, "v": v}
    _fused(_run(_model(nodes, feeds, {"c": np.float32(32 ** -0.5)}), feeds, precision))


@pytest.mark.parametrize("precision", MODES)
def test_switched_off_the_products_and_softmax_run_unfused(precision, tmp_path):
    """AttentionFusionPass:off in the switch file: two products and a
    softmax kernel, the same numbers."""
    q, k, v = (_rand(1, 2, 32, 16, seed=s) for s in (17, 18, 19))
    nodes, inits = _attention(q, k, v)
    feeds = {"q": q, "k": k, "v": v}
    switch = tmp_path / "switch.cfg"
    switch.write_text("AttentionFusionPass:off\n")
    compiled = _run(_model(nodes, feeds, inits), feeds, precision, str(switch))
    assert "attention" not in compiled.kernel_kinds
    assert compiled.kernel_kinds.get("matmul") == 2 and compiled.kernel_kinds.get("softmax") == 1


@pytest.mark.parametrize("precision", MODES)
def test_the_nan_guard_of_sdpa_exports_is_one_kernel(precision):
    """torch's sdpa exports (transformers' default attention) guard the
    probabilities with Where(IsNaN(p), 0, p): absorbed as zero_empty_rows.
    Query row 3 has every key masked with -inf (softmax NaN, guarded to 0:
    the kernel's row sum is 0 there), the last keys are padding."""
    q, k, v = _rand(1, 2, 32, 16, seed=7), _rand(1, 2, 32, 16, seed=8), _rand(1, 2, 32, 16, seed=9)
    mask = np.zeros((1, 1, 32, 32), np.float32)
    mask[..., 3, :] = -np.inf
    mask[..., :, 27:] = -np.inf
    nodes, inits = _attention(q, k, v, masks=("m",))
    softmax_then_pv = nodes[-2:]
    nodes = nodes[:-1] + [helper.make_node("IsNaN", ["p"], ["n"]), helper.make_node("Where", ["n", "zero", "p"], ["g"]),
                          helper.make_node("MatMul", ["g", "v"], ["y"])]
    assert softmax_then_pv[0].op_type == "Softmax"
    inits["zero"] = np.float32(0.0)
    feeds = {"q": q, "k": k, "v": v, "m": mask}
    model = _model(nodes, feeds, inits)
    assert (onnxruntime_outputs(model, feeds)["y"][0, :, 3] == 0).all()
    compiled = _run(model, feeds, precision)
    _fused(compiled)


@pytest.mark.parametrize("precision", MODES)
def test_attention_over_one_key_stays_unfused_on_the_ai_core(precision):
    """MobileViT on a small image: one patch, so one key per query. Its
    softmax is exp(x - x) (graph-canonicalize); nothing fuses (the kernel's
    row reductions need rows of keys); the chain runs on the AI core."""
    q, k, v = _rand(4, 4, 1, 16, seed=10), _rand(4, 4, 1, 16, seed=11), _rand(4, 4, 1, 16, seed=12)
    nodes, inits = _attention(q, k, v)
    feeds = {"q": q, "k": k, "v": v}
    compiled = _run(_model(nodes, feeds, inits), feeds, precision)
    assert "attention" not in compiled.kernel_kinds and "aicpu" not in compiled.kernel_kinds, compiled.kernel_kinds
