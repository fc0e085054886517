"""Ops the compiler rewrites into ops the simulated AI core runs, on the npu
backend against onnxruntime in both precision modes: resize as products
with constant interpolation matrices, stride-equals-kernel conv_transpose
as a product and the other conv_transposes as a zero insertion and a conv,
batch norms of rows as a scale and shift, reductions over any axes,
transposes of any permutation and gather_elements by constant indices
(graph-decompose), strided slices as box copies with steps
(lowering/legality/base.py copy_boxes), and no-op pads, whole-map average pools,
global pools of rows and reductions over one element (graph-canonicalize). Each case asserts where its
ops ran: the rewritten forms need no AI-CPU task, the ones left alone do."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from gedialects.frontend.onnx_import import import_model
from gedialects.graph.transforms.decompose import RESIZE_PRODUCT_LIMIT
from gedialects.numerics import assert_close
from gedialects.zoo import onnxruntime_outputs
from lowering.pipeline import compile_module, run_compiled

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

MODES = ("force_fp16", "must_keep_origin_dtype")


def _rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _i64(*v):
    return np.array(v, np.int64)


def _model(nodes, x, inits, outputs):
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "c"], ["h"])] + nodes, "decompose",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
        [helper.make_empty_tensor_value_info(o) for o in outputs],
        [numpy_helper.from_array(np.asarray(v), n) for n, v in inits.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 8
    return model


def _check(nodes, shape, precision, inits=None, outputs=("y",), exact=False, c_shape=None):
    """h = x + c (an AI-core value; c of x's shape unless `c_shape`) feeds
    `nodes`; every output is compared with onnxruntime (`exact`: bit for bit
    in fp32); returns the compiled model."""
    x = _rand(*shape, seed=1)
    model = _model(nodes, x, {"c": _rand(*(c_shape or shape), seed=2), **(inits or {})}, outputs)
    compiled = compile_module(import_model(model), precision)
    got = run_compiled(compiled, {"x": x}).outputs
    want = onnxruntime_outputs(model, {"x": x})
    for name in outputs:
        w = want[name]
        assert np.std(w) > 1e-3, "a constant output proves nothing"
        g = np.asarray(got[name]).reshape(w.shape)
        if exact and precision == "must_keep_origin_dtype":
            assert np.array_equal(g, w), name
        else:
            assert_close(g, w, precision, err_msg=name)
    return compiled


# --- graph-decompose: ResizeToProducts ---------------------------------------------------------------------------

def _resize(shape, precision, scales=None, sizes=None, **attrs):
    if scales is not None:
        node = helper.make_node("Resize", ["h", "", "scales"], ["y"], **attrs)
        inits = {"scales": np.array(scales, np.float32)}
    else:
        node = helper.make_node("Resize", ["h", "", "", "sizes"], ["y"], **attrs)
        inits = {"sizes": np.array(sizes, np.int64)}
    return _check([node], shape, precision, inits)


RESIZES = {
    "linear-half_pixel-2x": dict(shape=(1, 8, 4, 4), scales=[1, 1, 2, 2], mode="linear",
                                 coordinate_transformation_mode="half_pixel"),
    "linear-half_pixel-4x": dict(shape=(1, 8, 2, 2), scales=[1, 1, 4, 4], mode="linear",
                                 coordinate_transformation_mode="half_pixel"),
    "linear-align_corners-sizes": dict(shape=(1, 8, 4, 3), sizes=[1, 8, 7, 5], mode="linear",
                                       coordinate_transformation_mode="align_corners"),
    "nearest-asymmetric-floor": dict(shape=(1, 4, 3, 5), scales=[1, 1, 2, 2], mode="nearest",
                                     coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
    "linear-pytorch_half_pixel-w-only": dict(shape=(1, 4, 6, 4), scales=[1, 1, 1, 2], mode="linear",
                                             coordinate_transformation_mode="pytorch_half_pixel"),
    "cubic-half_pixel-2x": dict(shape=(1, 8, 4, 5), scales=[1, 1, 2, 2], mode="cubic",
                                coordinate_transformation_mode="half_pixel"),
    "cubic-align_corners-exclude_outside": dict(shape=(1, 4, 6, 4), sizes=[1, 4, 4, 7], mode="cubic",
                                                coordinate_transformation_mode="align_corners", exclude_outside=1,
                                                cubic_coeff_a=-0.5),
}


@pytest.mark.parametrize("precision", MODES)
@pytest.mark.parametrize("case", list(RESIZES))
def test_resize_of_the_last_two_dims_runs_as_products(case, precision):
    """SegFormer's decoder upsampling (2x bilinear), and the other coordinate
    modes and rounding rules a resize of H and W may use."""
    spec = dict(RESIZES[case])
    compiled = _resize(spec.pop("shape"), precision, **spec)
    assert "aicpu" not in compiled.kernel_kinds


@pytest.mark.parametrize("precision", MODES)
def test_resize_beyond_the_product_limit_stays_on_the_aicpu(precision):
    """An output extent past RESIZE_PRODUCT_LIMIT: no dense product, the AI CPU."""
    w = RESIZE_PRODUCT_LIMIT // 2 + 44  # 300 -> 600 for a limit of 512
    assert w <= RESIZE_PRODUCT_LIMIT < 2 * w
    compiled = _resize((1, 1, 2, w), precision, scales=[1, 1, 1, 2], mode="linear",
                       coordinate_transformation_mode="half_pixel")
    assert compiled.kernel_kinds.get("aicpu", 0) >= 1


# --- graph-decompose: StridedConvTransposeToProduct --------------------------------------------------------------

def _conv_transpose(shape, weight, bias, precision, **attrs):
    inputs = ["h", "w"] + (["b"] if bias is not None else [])
    inits = {"w": weight, **({"b": bias} if bias is not None else {})}
    return _check([helper.make_node("ConvTranspose", inputs, ["y"], **attrs)], shape, precision, inits)


CONV_TRANSPOSES = {
    "unet-2x2-bias": ((1, 16, 8, 8), (16, 8, 2, 2), True, 2),
    "3x3-stride3-no-bias": ((1, 8, 5, 4), (8, 4, 3, 3), False, 3),
    "batch2-2x2-bias": ((2, 8, 4, 4), (8, 8, 2, 2), True, 2),
}


@pytest.mark.parametrize("precision", MODES)
@pytest.mark.parametrize("case", list(CONV_TRANSPOSES))
def test_conv_transpose_with_kernel_equal_to_stride_runs_as_a_product(case, precision):
    """UNet's 2x2 up-convolution of stride 2 (and a 3x3 of stride 3, a batch of 2)."""
    shape, wshape, has_bias, s = CONV_TRANSPOSES[case]
    weight = _rand(*wshape, seed=3)
    bias = _rand(wshape[1], seed=4) if has_bias else None
    compiled = _conv_transpose(shape, weight, bias, precision, kernel_shape=list(wshape[2:]), strides=[s, s])
    assert "aicpu" not in compiled.kernel_kinds


OVERLAPPING_CONV_TRANSPOSES = {
    # name: (input shape, weight shape, bias, attributes)
    "dcgan-4x4-stride2-pads1": ((1, 8, 6, 6), (8, 8, 4, 4), False, dict(strides=[2, 2], pads=[1, 1, 1, 1])),
    "3x3-stride2-output-padding-bias": ((1, 16, 5, 7), (16, 8, 3, 3), True,
                                        dict(strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1])),
    "groups2-dilation2-stride1": ((1, 8, 6, 5), (8, 4, 3, 3), True, dict(group=2, dilations=[2, 2], pads=[1, 0, 2, 1])),
    "cropping-pads-past-the-kernel": ((1, 4, 9, 9), (4, 4, 3, 3), False, dict(strides=[2, 2], pads=[3, 3, 3, 2])),
    "batch2-uneven-strides": ((2, 4, 5, 4), (4, 8, 3, 4), True, dict(strides=[2, 3], pads=[1, 0, 1, 1])),
}


@pytest.mark.parametrize("precision", MODES)
@pytest.mark.parametrize("case", list(OVERLAPPING_CONV_TRANSPOSES))
def test_conv_transpose_with_overlapping_windows_runs_as_a_conv(case, precision):
    """DCGAN's 4x4 up-convolution of stride 2 and the rest of ConvTranspose's
    attributes: the input's zeros inserted by 0/1 products, then a conv, on
    the AI core."""
    shape, wshape, has_bias, attrs = OVERLAPPING_CONV_TRANSPOSES[case]
    weight = _rand(*wshape, seed=3)
    bias = _rand(wshape[1] * attrs.get("group", 1), seed=4) if has_bias else None
    compiled = _conv_transpose(shape, weight, bias, precision, kernel_shape=list(wshape[2:]), **attrs)
    assert "aicpu" not in compiled.kernel_kinds
    assert compiled.kernel_kinds.get("conv", 0) >= 1


# --- graph-decompose: ConvOneDimAsTwo, ChannelNormAsLayerNorm ----------------------------------------------------

CONV_1D = {
    # name: (op, input shape, weight shape, bias, attributes)
    "whisper-stem-stride2": ("Conv", (1, 16, 64), (32, 16, 3), True, dict(pads=[1, 1], strides=[2])),
    "wav2vec2-stem-stride5": ("Conv", (1, 1, 400), (16, 1, 10), False, dict(strides=[5])),
    "grouped-dilated": ("Conv", (1, 16, 40), (16, 4, 3), True, dict(group=4, dilations=[2], pads=[2, 2])),
    "conv-transpose-stride2": ("ConvTranspose", (1, 8, 20), (8, 4, 4), True, dict(strides=[2], pads=[1, 1])),
}


@pytest.mark.parametrize("precision", MODES)
@pytest.mark.parametrize("case", list(CONV_1D))
def test_one_dimensional_convs_run_as_two_dimensional(case, precision):
    """Audio stems (Whisper, wav2vec2) and 1-d up-convolutions: a 2-d op on a
    map of height 1, on the AI core."""
    kind, shape, wshape, has_bias, attrs = CONV_1D[case]
    weight = (_rand(*wshape, seed=3) / np.sqrt(np.prod(wshape[1:]))).astype(np.float32)
    out_channels = wshape[1] * attrs.get("group", 1) if kind == "ConvTranspose" else wshape[0]
    inits = {"w": weight, **({"b": _rand(out_channels, seed=4)} if has_bias else {})}
    node = helper.make_node(kind, ["h", "w"] + (["b"] if has_bias else []), ["y"], kernel_shape=[wshape[2]], **attrs)
    compiled = _check([node], shape, precision, inits)
    assert "aicpu" not in compiled.kernel_kinds, compiled.kernel_kinds


CHANNEL_NORMS = {
    # name: (node, input shape, scale and bias given as graph inputs' constants)
    "wav2vec2-instance-norm-1d": (("InstanceNormalization", {}), (1, 16, 50)),
    "instance-norm-2d": (("InstanceNormalization", {"epsilon": 1e-3}), (1, 8, 6, 7)),
    "group-norm-4-groups": (("GroupNormalization", {"num_groups": 4}), (2, 16, 5, 5)),
}


@pytest.mark.parametrize("precision", MODES)
@pytest.mark.parametrize("case", list(CHANNEL_NORMS))
def test_instance_and_group_norms_run_as_layer_norms(case, precision):
    """Normalisation per sample and channel group as a layer_norm of the
    groups as rows, then the per-channel scale and bias, on the AI core."""
    (kind, attrs), shape = CHANNEL_NORMS[case]
    c = attrs.get("num_groups", shape[1])  # opset 19's GroupNormalization: a scale and bias per group
    inits = {"s": (1.0 + 0.5 * _rand(c, seed=5)).astype(np.float32), "t": _rand(c, seed=6)}
    node = helper.make_node(kind, ["h", "s", "t"], ["y"], **attrs)
    compiled = _check([node], shape, precision, inits)
    assert "aicpu" not in compiled.kernel_kinds, compiled.kernel_kinds


# --- graph-decompose: BatchNormAsAffine, ReduceL2AsSumOfSquares, ReduceOverTrailingAxes, TransposeAsGroupSwapAndRows

@pytest.mark.parametrize("precision", MODES)
@pytest.mark.parametrize("shape", [(16, 32), (2, 24, 10)], ids=["rows", "channels-by-length"])
def test_batch_norm_of_rows_runs_as_a_scale_and_shift(shape, precision):
    """LeViT's BatchNorm1d after every linear ([tokens, C]) and a [N, C, L] one."""
    c = shape[1]
    inits = {"s": (1.0 + 0.5 * _rand(c, seed=5)), "t": _rand(c, seed=6), "m": _rand(c, seed=7),
             "v": (0.5 + np.abs(_rand(c, seed=8)))}
    node = helper.make_node("BatchNormalization", ["h", "s", "t", "m", "v"], ["y"], epsilon=1e-3)
    compiled = _check([node], shape, precision, inits)
    assert "aicpu" not in compiled.kernel_kinds, compiled.kernel_kinds


REDUCTIONS = {
    "l2-over-pixels-of-nhwc": ("ReduceL2", (1, 8, 8, 32), (1, 2), 1),  # ConvNeXt V2's GRN
    "sum-over-the-middle": ("ReduceSum", (4, 24, 16), (1,), 0),
    "max-over-channels-of-a-map": ("ReduceMax", (1, 16, 6, 6), (1,), 1),
    "mean-of-the-first-and-last": ("ReduceMean", (6, 5, 32), (0, 2), 1),
}


@pytest.mark.parametrize("precision", MODES)
@pytest.mark.parametrize("case", list(REDUCTIONS))
def test_reductions_over_any_axes_run_on_the_ai_core(case, precision):
    """reduce_l2 as a sum of squares; a reduction over axes that are not the
    trailing ones after a transpose that moves them last."""
    kind, shape, axes, keepdims = REDUCTIONS[case]
    node = helper.make_node(kind, ["h", "axes"], ["y"], keepdims=keepdims)
    compiled = _check([node], shape, precision, {"axes": _i64(*axes)})
    assert "aicpu" not in compiled.kernel_kinds, compiled.kernel_kinds


@pytest.mark.parametrize("precision", MODES)
@pytest.mark.parametrize("perm", [(0, 3, 2, 1), (2, 0, 1, 3, 4)[::-1], (1, 3, 0, 2)])
def test_transposes_of_any_permutation_run_on_the_ai_core(perm, precision):
    """MobileViT's (0, 3, 2, 1) of its patches, and others that move the
    innermost dim without swapping two dim groups: a group swap, then a
    transpose of whole rows."""
    shape = (2, 16, 8, 32, 16)[: len(perm)]
    compiled = _check([helper.make_node("Transpose", ["h"], ["y"], perm=list(perm))], shape, precision, exact=True)
    assert "aicpu" not in compiled.kernel_kinds, compiled.kernel_kinds


@pytest.mark.parametrize("precision", MODES)
def test_gather_elements_by_constant_indices_runs_as_a_selection_product(precision):
    """DeBERTa's content-to-position scores: gather_elements along the last
    axis by constant (relative-position) indices, negative ones included."""
    q = np.arange(16)
    index = np.clip(q[:, None] - q[None, :] + 8, 0, 15) - 16 * (q[None, :] % 3 == 0)  # some negative
    index = np.broadcast_to(index, (4, 16, 16)).astype(np.int64)
    node = helper.make_node("GatherElements", ["h", "idx"], ["y"], axis=-1)
    compiled = _check([node], (4, 16, 16), precision, {"idx": index}, exact=True)
    assert "aicpu" not in compiled.kernel_kinds, compiled.kernel_kinds


# --- strided slices ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("precision", MODES)
def test_patch_merging_strided_slices_and_concat(precision):
    """Swin's patch merging: x[:, i::2, j::2, :] of an NHWC map, concatenated along channels."""
    nodes, inits = [], {"ax": _i64(1, 2), "e": _i64(2**62, 2**62), "st": _i64(2, 2)}
    for k, (i, j) in enumerate([(0, 0), (1, 0), (0, 1), (1, 1)]):
        inits[f"s{k}"] = _i64(i, j)
        nodes.append(helper.make_node("Slice", ["h", f"s{k}", "e", "ax", "st"], [f"p{k}"]))
    nodes.append(helper.make_node("Concat", ["p0", "p1", "p2", "p3"], ["y"], axis=-1))
    compiled = _check(nodes, (1, 8, 8, 16), precision, inits, exact=True)
    assert "aicpu" not in compiled.kernel_kinds


@pytest.mark.parametrize("precision", MODES)
def test_slice_with_a_step_along_the_innermost_dim_stays_on_the_aicpu(precision):
    """x[..., ::2]: DMA moves contiguous rows, so the AI CPU picks every other element."""
    nodes = [helper.make_node("Slice", ["h", "s", "e", "ax", "st"], ["y"])]
    inits = {"s": _i64(0), "e": _i64(2**62), "ax": _i64(-1), "st": _i64(2)}
    compiled = _check(nodes, (1, 8, 8, 16), precision, inits, exact=True)
    assert compiled.kernel_kinds.get("aicpu", 0) >= 1


# --- graph-canonicalize ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("precision", MODES)
def test_reduction_over_one_element_is_a_view(precision):
    """LeViT's mean over its one remaining token."""
    node = helper.make_node("ReduceMean", ["h", "axes"], ["y"], keepdims=0)
    compiled = _check([node], (2, 1, 32), precision, {"axes": _i64(1)}, exact=True)
    assert "aicpu" not in compiled.kernel_kinds and "reduce" not in compiled.kernel_kinds, compiled.kernel_kinds

@pytest.mark.parametrize("precision", MODES)
def test_pad_by_zero_is_removed(precision):
    """HF Swin pads to whole windows, by 0 when the map already fits."""
    nodes = [helper.make_node("Pad", ["h", "pads"], ["p"]), helper.make_node("Relu", ["p"], ["y"])]
    compiled = _check(nodes, (1, 8, 8, 16), precision, {"pads": np.zeros(8, np.int64)})
    assert "aicpu" not in compiled.kernel_kinds


@pytest.mark.parametrize("precision", MODES)
def test_average_pool_whose_window_covers_the_map_runs_with_the_exact_window(precision):
    """HF EfficientNet's pooler: AvgPool2d with a kernel larger than the map, ceil_mode.
    (c per channel, a bias as a CNN has: a full-shape constant map operand
    makes the add a row-major kernel, which fp16 cannot hand to a map kernel.)"""
    node = helper.make_node("AveragePool", ["h"], ["y"], kernel_shape=[320, 320], strides=[320, 320],
                            ceil_mode=1, count_include_pad=1)
    compiled = _check([node], (1, 16, 7, 7), precision, c_shape=(1, 16, 1, 1))
    assert "aicpu" not in compiled.kernel_kinds


@pytest.mark.parametrize("precision", MODES)
def test_global_average_pool_of_tokens_is_a_mean(precision):
    """Swin's pooler: a global average pool of [N, C, L] tokens."""
    compiled = _check([helper.make_node("GlobalAveragePool", ["h"], ["y"])], (1, 32, 64), precision)
    assert "aicpu" not in compiled.kernel_kinds
