"""The cube family (lowering/graph_to_tile/cube.py) and transposing loads on
the npu backend, against onnxruntime, in both precision modes: linear layers
of any M (weights stored transposed), batched products of two activations
(attention scores and context), gemm with trans_b, bias and activation
epilogues, head split/merge transposes. Each case asserts where its ops ran."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from gedialects.frontend.onnx_import import import_model
from gedialects.numerics import assert_close
from gedialects.tile import ops as t
from gedialects.zoo import onnxruntime_outputs
from lowering.pipeline import compile_module, run_compiled
from oracle import matches_onnxruntime

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

MODES = ("force_fp16", "must_keep_origin_dtype")


def _model(nodes, feeds, inits=None, outputs=("y",)):
    graph = helper.make_graph(
        nodes, "cube",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, a.shape) for n, a in feeds.items()],
        [helper.make_empty_tensor_value_info(o) for o in outputs],
        [numpy_helper.from_array(np.asarray(v, dtype=np.float32), n) for n, v in (inits or {}).items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _run(model, feeds, precision, switch_file="", **options):
    return matches_onnxruntime(model, feeds, precision, fusion_switch_file=switch_file, **options)


def _rand(*shape, scale=1.0, seed=0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


@pytest.mark.parametrize("precision", MODES)
def test_linear_layer_of_many_rows_with_bias_and_gelu(precision):
    x = _rand(1, 32, 64)
    w, b = _rand(64, 48, scale=0.125, seed=1), _rand(48, seed=2)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["t"]), helper.make_node("Add", ["t", "b"], ["u"]),
             helper.make_node("Gelu", ["u"], ["y"], domain="")]
    model = _model(nodes, {"x": x}, {"w": w, "b": b})
    model.opset_import[0].version = 20  # Gelu
    compiled = _run(model, {"x": x}, precision)
    assert compiled.kernel_kinds.get("matmul") == 1 and "aicpu" not in compiled.kernel_kinds


@pytest.mark.parametrize("precision", MODES)
def test_linear_layer_with_its_weights_stationary(precision):
    # 128 rows by a 256 x 1,024 weight, bias and exact GELU: the cost model
    # gives each core a column block of the weights, kept in L1 over four
    # row tiles whose GELUs overlap the next tile's loads (#tile.tiling's
    # stationary = "weights"); the unrolled tiles and deferred stores match
    # onnxruntime
    x = _rand(1, 128, 256)
    w, b = _rand(256, 1024, scale=1 / 16, seed=5), _rand(1024, seed=6)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["t"]), helper.make_node("Add", ["t", "b"], ["u"]),
             helper.make_node("Gelu", ["u"], ["y"], domain="")]
    model = _model(nodes, {"x": x}, {"w": w, "b": b})
    model.opset_import[0].version = 20  # Gelu
    tilings = []

    def record(stage, module):
        if stage == "tile-distribute":
            tilings.extend((k.attributes["tiling"], k.attributes["distribution"]) for k in module.walk()
                           if isinstance(k, t.KernelOp) and "tiling" in k.attributes)

    compiled = _run(model, {"x": x}, precision, dump=record)
    assert compiled.kernel_kinds.get("matmul") == 1 and "aicpu" not in compiled.kernel_kinds
    (tiling, distribution), = [(ti, d) for ti, d in tilings if ti.weights_stationary]
    assert distribution.per_core.data == tiling.grid_shape[-2] > 1  # each core every row tile of its block


@pytest.mark.parametrize("precision", MODES)
def test_gemm_with_trans_b_and_beta(precision):
    x = _rand(16, 64)
    w, c = _rand(32, 64, scale=0.125, seed=3), _rand(32, seed=4)
    model = _model([helper.make_node("Gemm", ["x", "w", "c"], ["y"], transB=1, alpha=0.5, beta=2.0)], {"x": x},
                   {"w": w, "c": c})
    compiled = _run(model, {"x": x}, precision)
    assert compiled.kernel_kinds.get("matmul") == 1


@pytest.fixture
def unfused(tmp_path):
    """A fusion switch file turning AttentionFusionPass off: these tests are
    about the products and softmax of attention as separate kernels (the
    fused kernel: test_attention_kernel.py)."""
    path = tmp_path / "switch.cfg"
    path.write_text("AttentionFusionPass:off\n")
    return str(path)


def _attention(q, k, v):
    nodes = [
        helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", ["q", "kt"], ["s"]),
        helper.make_node("Softmax", ["s"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "v"], ["y"]),
    ]
    return _model(nodes, {"q": q, "k": k, "v": v})


def test_attention_products_run_on_the_cube_in_fp16(unfused):
    q, k, v = (_rand(1, 2, 16, 16, scale=0.5, seed=s) for s in (5, 6, 7))
    compiled = _run(_attention(q, k, v), {"q": q, "k": k, "v": v}, "force_fp16", unfused)
    assert compiled.kernel_kinds.get("matmul") == 2 and compiled.kernel_kinds.get("softmax") == 1
    # the keys' transpose is folded into QK^T (read as b^T): nothing on the AI CPU
    assert "aicpu" not in compiled.kernel_kinds and "transpose" not in compiled.kernel_kinds


def test_fp32_row_major_activation_right_operand_is_transposed_first(unfused):
    """fp32 fractals are not transposed on the way to L0B: P V first writes
    V^T with an identity product (a transpose kernel), then reads it as b^T;
    the result is exact against the fp64 reference within the fp32 bound."""
    q, k, v = (_rand(1, 2, 16, 16, scale=0.5, seed=s) for s in (5, 6, 7))
    model = _attention(q, k, v)
    compiled = _run(model, {"q": q, "k": k, "v": v}, "must_keep_origin_dtype", unfused)
    assert "aicpu" not in compiled.kernel_kinds
    assert compiled.kernel_kinds.get("matmul") == 2 and compiled.kernel_kinds.get("transpose") == 1


def test_fp32_row_major_right_operand_wide_is_transposed_in_blocks():
    """Rows of 1,024 (twice the identity-product limit): V^T is written by
    identity products over blocks of 512, read through a transposing load."""
    from lowering.legality import IDENTITY_PRODUCT_LIMIT

    n = 2 * IDENTITY_PRODUCT_LIMIT
    a, b = _rand(1, 16, 16, seed=5), _rand(1, 16, n, seed=6)
    model = _model([helper.make_node("MatMul", ["a", "b"], ["y"])], {"a": a, "b": b})
    compiled = _run(model, {"a": a, "b": b}, "must_keep_origin_dtype")
    assert "aicpu" not in compiled.kernel_kinds and compiled.kernel_kinds.get("transpose") == 1


def test_fp32_row_major_right_operand_of_prime_width_falls_back_with_its_reason():
    """Rows of a prime length beyond the identity-product limit have no
    block to transpose in: the AI CPU, saying why."""
    from lowering.legality import IDENTITY_PRODUCT_LIMIT

    n = 521
    assert n > IDENTITY_PRODUCT_LIMIT
    a, b = _rand(1, 16, 16, seed=5), _rand(1, 16, n, seed=6)
    nodes = [helper.make_node("MatMul", ["a", "b"], ["y"])]
    model = _model(nodes, {"a": a, "b": b})
    compiled = _run(model, {"a": a, "b": b}, "must_keep_origin_dtype")
    assert compiled.kernel_kinds.get("aicpu") == 1
    from gedialects.frontend.onnx_import import import_model as imp
    from lowering.partition import GraphPartitionPass
    from xdsl.context import Context

    module = imp(model)
    GraphPartitionPass("must_keep_origin_dtype").apply(Context(), module)
    reasons = [op.attributes["ge.reason"].data for op in module.walk()
               if op.name == "graph.matmul" and "ge.reason" in op.attributes]
    assert len(reasons) == 1 and f"no divisor from 16 to {IDENTITY_PRODUCT_LIMIT}" in reasons[0]


@pytest.mark.parametrize("precision", MODES)
def test_head_split_and_merge_transposes(precision):
    x = _rand(2, 16, 4, 16)
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[0, 2, 1, 3]),
             helper.make_node("Relu", ["t"], ["r"]),
             helper.make_node("Transpose", ["r"], ["y"], perm=[0, 2, 1, 3])]
    compiled = _run(_model(nodes, {"x": x}), {"x": x}, precision)
    assert compiled.kernel_kinds.get("transpose") == 2 and "aicpu" not in compiled.kernel_kinds


@pytest.mark.parametrize("precision", MODES)
@pytest.mark.parametrize("m, k, n", [(64, 2048, 96), (48, 1000, 80)])
def test_long_contractions_in_double_buffered_panels(m, k, n, precision):
    """A long K goes to L1 in panels and to L0 in chunks, both ping-pong (the
    next panel's copies and chunk's loads overlap this chunk's mmad), A's
    rows staged through UB (K = 1000 also leaves a padded tail block): every
    partial product accumulates into one L0C, with the race detector on."""
    x, w = _rand(m, k), _rand(k, n, scale=k ** -0.5, seed=9)
    compiled = _run(_model([helper.make_node("MatMul", ["x", "w"], ["y"])], {"x": x}, {"w": w}), {"x": x}, precision)
    assert compiled.kernel_kinds.get("matmul") == 1 and "aicpu" not in compiled.kernel_kinds


@pytest.mark.parametrize("precision", MODES)
def test_vocabulary_not_in_whole_fractals_spreads_over_cores(precision):
    """An lm_head over 1,000 tokens: N has no divisor in whole 16-column
    fractals, so its tiles are divisors of at least a fractal, padded to
    fractals on chip (the padding columns' results never leave L0C), and the
    product runs on many cores, not whole on one."""
    h, w = _rand(16, 64), _rand(64, 1000, scale=0.125, seed=10)
    model = _model([helper.make_node("MatMul", ["h", "w"], ["y"])], {"h": h}, {"w": w})
    compiled = compile_module(import_model(model), precision)
    result = run_compiled(compiled, {"h": h})
    assert_close(np.asarray(result.outputs["y"]), onnxruntime_outputs(model, {"h": h})["y"], precision)
    product = [k for k in result.profile.kernels if k.info.get("kind") == "matmul"]
    assert len(product) == 1 and product[0].block_dim > 1


@pytest.mark.parametrize("precision", MODES)
@pytest.mark.parametrize("m, k, n", [(10, 24, 20), (3, 5, 7), (65, 65, 16), (4, 4, 4)])
def test_products_whose_k_and_n_are_not_whole_blocks(m, k, n, precision):
    """K and N of any length: a padded nd2nz load zero-fills the last block
    of each row of A (and of the stored-transposed weight) in L1; the result
    rows leave L0C in whole fractals and go to GM by a padded store."""
    x, w = _rand(m, k), _rand(k, n, seed=8)
    compiled = _run(_model([helper.make_node("MatMul", ["x", "w"], ["y"])], {"x": x}, {"w": w}), {"x": x}, precision)
    assert compiled.kernel_kinds.get("matmul") == 1 and "aicpu" not in compiled.kernel_kinds


@pytest.mark.parametrize("precision", MODES)
@pytest.mark.parametrize("tokens, head", [(65, 16), (4, 8), (20, 12)])
def test_attention_over_token_counts_that_are_not_whole_blocks(tokens, head, precision, unfused):
    """ViT's 65 tokens (a class token), SegFormer's 4, a narrow head: QK^T has
    rows of `tokens` scores; PV contracts over `tokens`. In fp16 the values
    are a row-major right operand: the missing rows of its last K fractal
    are zeroed in L1 from UB (the padded columns of P are zeros, but 0 x an
    uninitialised NaN would not be). In fp32 V^T is written first and read
    as b^T, its rows zero-padded by the load."""
    q, k, v = (_rand(1, 2, tokens, head, scale=0.5, seed=s) for s in (21, 22, 23))
    compiled = _run(_attention(q, k, v), {"q": q, "k": k, "v": v}, precision, unfused)
    assert compiled.kernel_kinds.get("matmul") == 2 and "aicpu" not in compiled.kernel_kinds


@pytest.mark.parametrize("precision", MODES)
def test_head_split_and_key_transposes_fold_into_the_products(precision, unfused):
    """BERT's form: q, k, v as [B, S, H, D]; q and v split heads with
    (0, 2, 1, 3), the keys with (0, 2, 3, 1). No transpose makes a kernel
    where its product runs on the cube: the products read the sources
    through permuted strides (the keys as b^T)."""
    q, k, v = (_rand(1, 16, 2, 16, scale=0.5, seed=s) for s in (9, 10, 11))
    nodes = [
        helper.make_node("Transpose", ["q"], ["qh"], perm=[0, 2, 1, 3]),
        helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 3, 1]),
        helper.make_node("Transpose", ["v"], ["vh"], perm=[0, 2, 1, 3]),
        helper.make_node("MatMul", ["qh", "kt"], ["s"]),
        helper.make_node("Softmax", ["s"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "vh"], ["y"]),
    ]
    compiled = _run(_model(nodes, {"q": q, "k": k, "v": v}), {"q": q, "k": k, "v": v}, precision, unfused)
    fp16 = precision == "force_fp16"
    # fp32: P V reads a row-major activation (no fp32 fractal transpose): the
    # value transpose is a vector kernel, then an identity product writes its
    # transpose for the product to read as b^T
    assert compiled.kernel_kinds.get("transpose", 0) == (0 if fp16 else 2)
    assert compiled.kernel_kinds.get("matmul") == 2
    assert "aicpu" not in compiled.kernel_kinds


@pytest.mark.parametrize("precision", MODES)
@pytest.mark.parametrize("m, k, n", [(65, 64, 64), (4, 64, 32), (2, 256, 64), (8, 16, 64)])
def test_products_not_in_whole_fractals(m, k, n, precision):
    """ViT's 65 tokens, SegFormer's 4, ConvNeXt's 2x2 and 8x8 maps: the tile
    is the whole matrix, padded to fractals on chip (rows beyond M never
    loaded, never stored)."""
    x = _rand(1, m, k, seed=3)
    w, b = _rand(k, n, scale=0.125, seed=4), _rand(n, seed=5)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["t"]), helper.make_node("Add", ["t", "b"], ["y"])]
    compiled = _run(_model(nodes, {"x": x}, {"w": w, "b": b}), {"x": x}, precision)
    assert compiled.kernel_kinds.get("matmul") == 1 and "aicpu" not in compiled.kernel_kinds


def test_narrow_product_of_two_activations_fp32():
    """Attention scores of 16 tokens by 8 keys (a swin window): N = 8 fp32
    columns are one 32-byte block; the product is padded to a 16x16 fractal."""
    q, kt = _rand(2, 16, 32, seed=6), _rand(2, 8, 32, seed=7)
    nodes = [helper.make_node("Transpose", ["k"], ["kT"], perm=[0, 2, 1]),
             helper.make_node("MatMul", ["q", "kT"], ["y"])]
    compiled = _run(_model(nodes, {"q": q, "k": kt}), {"q": q, "k": kt}, "must_keep_origin_dtype")
    assert compiled.kernel_kinds.get("matmul") == 1 and "aicpu" not in compiled.kernel_kinds


@pytest.mark.parametrize("precision", MODES)
@pytest.mark.parametrize("shape, perm", [
    ((1, 16, 256), (0, 2, 1)),      # SegFormer's token <-> channel flips
    ((1, 64, 4, 8), (0, 2, 3, 1)),  # NCHW -> NHWC (ConvNeXt)
    ((1, 4, 8, 64), (0, 3, 1, 2)),  # NHWC -> NCHW
    ((16, 16, 2, 8), (0, 2, 3, 1)),  # a Swin window's heads
    ((2, 32, 16), (0, 2, 1)),       # batched
    ((1, 16, 32, 32), (0, 2, 3, 1)),  # rows of 1,024: identity products over blocks of 512 (UNet)
    ((1, 8, 600), (0, 2, 1)),       # rows of 600: blocks of 300
])
def test_transpose_moving_the_innermost_dim_is_an_identity_product(shape, perm, precision):
    """A transpose that swaps two dim groups runs on the cube as I . x^T;
    in fp32 it is exact (every product is by 1 or 0)."""
    x, c = _rand(*shape, seed=1), _rand(*shape, seed=2)
    nodes = [helper.make_node("Add", ["x", "c"], ["h"]), helper.make_node("Transpose", ["h"], ["y"], perm=list(perm))]
    model = _model(nodes, {"x": x}, {"c": c})
    compiled = _run(model, {"x": x}, precision)
    assert compiled.kernel_kinds.get("transpose") == 1 and "aicpu" not in compiled.kernel_kinds
    if precision == "must_keep_origin_dtype":
        got = run_compiled(compiled, {"x": x}).outputs["y"]
        assert np.array_equal(np.asarray(got).reshape(-1), np.transpose(x + c, perm).reshape(-1))
