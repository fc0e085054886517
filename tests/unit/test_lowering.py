"""graph -> tile -> npu -> simulator, compared with onnxruntime (must_keep_origin_dtype)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from gedialects.frontend.onnx_import import import_model
from gedialects.numerics import assert_close
from gedialects.zoo import onnxruntime_outputs
from lowering.pipeline import compile_module, run_compiled

RNG = np.random.default_rng(0)


def _model(nodes, inits, x_shape, y_shape):
    graph = helper.make_graph(
        nodes,
        "m",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)],
        [numpy_helper.from_array(v, k) for k, v in inits.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def _w(*shape, scale=0.3):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def _check(model, x_shape, fuse=True):
    module = import_model(model, {}, source="test")
    compiled = compile_module(module, precision="must_keep_origin_dtype", fuse=fuse)
    x = RNG.standard_normal(x_shape).astype(np.float32)
    got = run_compiled(compiled, {"x": x}).outputs["y"]
    want = onnxruntime_outputs(model, {"x": x})["y"]
    assert_close(got, want, "must_keep_origin_dtype")
    return compiled


def test_conv_bias_relu_with_transdata_both_ways():
    m = _model(
        [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["y"])],
        {"w": _w(32, 3, 3, 3), "b": _w(32)},
        [1, 3, 32, 32],
        [1, 32, 32, 32],
    )
    c = _check(m, (1, 3, 32, 32))
    assert c.transdata == 2  # NCHW -> NC1HWC0 at the input, back at the 4-D output


def test_strided_conv_residual_maxpool():
    m = _model(
        [
            helper.make_node("Conv", ["x", "w1", "b1"], ["a"], pads=[3, 3, 3, 3], strides=[2, 2]),
            helper.make_node("Relu", ["a"], ["r"]),
            helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
            helper.make_node("Conv", ["p", "w2", "b2"], ["c"], pads=[1, 1, 1, 1]),
            helper.make_node("Add", ["c", "p"], ["s"]),
            helper.make_node("Relu", ["s"], ["y"]),
        ],
        {"w1": _w(16, 3, 7, 7, scale=0.1), "b1": _w(16), "w2": _w(16, 16, 3, 3, scale=0.1), "b2": _w(16)},
        [1, 3, 64, 64],
        [1, 16, 16, 16],
    )
    _check(m, (1, 3, 64, 64))


def test_concat_in_place_global_pool_gemm_softmax():
    m = _model(
        [
            helper.make_node("Conv", ["x", "wa"], ["a"]),
            helper.make_node("Conv", ["x", "wb"], ["b"], pads=[1, 1, 1, 1]),
            helper.make_node("Concat", ["a", "b"], ["c"], axis=1),
            helper.make_node("AveragePool", ["c"], ["ap"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
            helper.make_node("GlobalAveragePool", ["ap"], ["g"]),
            helper.make_node("Flatten", ["g"], ["f"]),
            helper.make_node("Gemm", ["f", "wf", "bf"], ["l"], transB=1),
            helper.make_node("Softmax", ["l"], ["y"], axis=1),
        ],
        {"wa": _w(16, 8, 1, 1), "wb": _w(32, 8, 3, 3), "wf": _w(10, 48), "bf": _w(10)},
        [1, 8, 16, 16],
        [1, 10],
    )
    c = _check(m, (1, 8, 16, 16))
    assert c.transdata == 1  # only at the input: flatten of a 1x1 map is a view


def test_flatten_of_a_map_folds_into_the_gemm_weights():
    m = _model(
        [
            helper.make_node("Conv", ["x", "w"], ["a"], pads=[1, 1, 1, 1]),
            helper.make_node("Flatten", ["a"], ["f"]),
            helper.make_node("Gemm", ["f", "wf"], ["y"], transB=1),
        ],
        {"w": _w(12, 3, 3, 3), "wf": _w(20, 12 * 16 * 16, scale=0.02)},
        [1, 3, 16, 16],
        [1, 20],
    )
    c = _check(m, (1, 3, 16, 16))
    assert c.transdata == 1


def test_batchnorm_and_elementwise_fusion_on_nc1hwc0():
    c = 24
    m = _model(
        [
            helper.make_node("Conv", ["x", "w"], ["a"], pads=[1, 1, 1, 1]),
            helper.make_node("BatchNormalization", ["a", "s", "bb", "mu", "var"], ["n"]),
            helper.make_node("Mul", ["n", "k"], ["m"]),
            helper.make_node("Add", ["m", "one"], ["p"]),
            helper.make_node("Relu", ["p"], ["y"]),
        ],
        {
            "w": _w(c, 3, 3, 3),
            "s": RNG.uniform(0.5, 1.5, c).astype(np.float32),
            "bb": _w(c),
            "mu": _w(c),
            "var": RNG.uniform(0.5, 1.5, c).astype(np.float32),
            "k": _w(1, c, 1, 1),
            "one": np.array(0.5, np.float32),
        },
        [1, 3, 16, 16],
        [1, c, 16, 16],
    )
    _check(m, (1, 3, 16, 16))


def test_spatial_1x1_map_output_has_its_logical_shape():
    # densenet121 ends in a 1x1 conv whose (1, 1000, 1, 1) output is written in
    # place (NC1HWC0 with H*W = 1 is NCHW); its slot used to be the stored
    # [1, C1, 1, 1, C0] with C1 rounded up to whole fractals
    m = _model(
        [
            helper.make_node("Conv", ["x", "w"], ["a"]),
            helper.make_node("GlobalAveragePool", ["a"], ["g"]),
            helper.make_node("Conv", ["g", "w2", "b2"], ["y"]),
        ],
        {"w": _w(64, 8, 1, 1), "w2": _w(40, 64, 1, 1), "b2": _w(40)},
        [1, 8, 16, 16],
        [1, 40, 1, 1],
    )
    c = _check(m, (1, 8, 16, 16))
    assert c.transdata == 1


@pytest.mark.parametrize("size", [5, 3])
def test_lrn_window_crosses_c0_slices(size):
    # 40 channels = 5 slices of C0 = 8 (plus a padded fractal); a window of 5
    # (or 3) straddles slice borders
    m = _model(
        [
            helper.make_node("Conv", ["x", "w"], ["a"], pads=[1, 1, 1, 1]),
            helper.make_node("LRN", ["a"], ["y"], size=size, alpha=0.02, beta=0.75, bias=1.5),
        ],
        {"w": _w(40, 3, 3, 3)},
        [1, 3, 16, 16],
        [1, 40, 16, 16],
    )
    c = _check(m, (1, 3, 16, 16))
    # one cube kernel for the LRN, storing no map but its result: the
    # intermediates are x in NC1HWC0, the conv's output and the LRN's
    assert c.kernel_kinds["conv"] == 2 and c.memory["tensors"] == 3


@pytest.mark.parametrize(
    "cin,cout,group,k,stride",
    [
        (16, 32, 2, 3, 1),  # two superblocks of one group (alexnet)
        (32, 32, 32, 3, 2),  # depthwise: superblocks of 16 channels
        (24, 24, 24, 3, 1),  # depthwise, 24 channels: two superblocks of 16, the second half empty
        (24, 48, 4, 1, 1),  # 6 input channels per group: block-diagonal (shufflenet)
    ],
)
def test_grouped_and_depthwise_conv(cin, cout, group, k, stride):
    m = _model(
        [
            helper.make_node("Conv", ["x", "w0"], ["a"], pads=[1, 1, 1, 1]),
            helper.make_node("Conv", ["a", "w", "b"], ["y"], group=group, pads=[k // 2] * 4, strides=[stride] * 2),
        ],
        {"w0": _w(cin, 3, 3, 3), "w": _w(cout, cin // group, k, k), "b": _w(cout)},
        [1, 3, 16, 16],
        [1, cout, 16 // stride, 16 // stride],
    )
    _check(m, (1, 3, 16, 16))


def test_11x11_conv_splits_k_over_kernel_rows():
    # alexnet's first conv: 121 taps do not fit L0A in one im2col; the K loop
    # runs over (C1 slice, part of the kernel rows), accumulating in L0C
    m = _model(
        [helper.make_node("Conv", ["x", "w", "b"], ["c"], strides=[4, 4], pads=[2, 2, 2, 2]), helper.make_node("Relu", ["c"], ["y"])],
        {"w": _w(32, 3, 11, 11, scale=0.05), "b": _w(32)},
        [1, 3, 64, 64],
        [1, 32, 15, 15],
    )
    _check(m, (1, 3, 64, 64))


@pytest.mark.parametrize("folded", [True, False])
def test_channel_shuffle_reshape_transpose_reshape(folded):
    # shufflenet: the shuffled map feeds a padded depthwise conv (halo on the
    # permuted map). Folded: the producer (a grouped conv + relu, used once)
    # gets permuted weight rows; otherwise (its output is used twice) the
    # shuffle is a permutation-matrix 1x1 conv kernel.
    nodes = [
        helper.make_node("Conv", ["x", "w0"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["c", "w1", "b1"], ["r0"], group=4),
        helper.make_node("Relu", ["r0"], ["a"]),
        helper.make_node("Reshape", ["a", "s5"], ["r"]),
        helper.make_node("Transpose", ["r"], ["t"], perm=[0, 2, 1, 3, 4]),
        helper.make_node("Reshape", ["t", "s4"], ["u"]),
        helper.make_node("Conv", ["u", "w"], ["d" if not folded else "y"], group=24, pads=[1, 1, 1, 1]),
    ]
    if not folded:
        nodes.append(helper.make_node("Add", ["d", "a"], ["y"]))
    m = _model(
        nodes,
        {"w0": _w(24, 3, 3, 3), "w1": _w(24, 6, 1, 1), "b1": _w(24), "w": _w(24, 1, 3, 3),
         "s5": np.array([1, 4, 6, 16, 16]), "s4": np.array([1, 24, 16, 16])},
        [1, 3, 16, 16],
        [1, 24, 16, 16],
    )
    c = _check(m, (1, 3, 16, 16))
    # transdata in/out, 3 convs (+ the shuffle kernel; the add is the residual);
    # memsets clear the halo maps put in reused storage
    assert c.kernels - c.kernel_kinds.get("memset", 0) == (5 if folded else 6)


@pytest.mark.parametrize(
    "precision,ca,cb",
    [
        ("must_keep_origin_dtype", 12, 17),  # C0 = 8: operands at channels 12 and 15
        ("force_fp16", 24, 5),  # C0 = 16: operands at channels 24 and 27
    ],
)
def test_concat_at_channel_offsets_inside_a_c0_slice(precision, ca, cb):
    # concat(a, x, b, d): a with a partial last slice, the graph input x (not
    # writable in place) and b, d at offsets that are not multiples of C0 (b)
    # or are (d at 32): the concat is built by copy kernels (each operand into
    # its columns of a pixel-major scratch, lanes shifted in GM, then the
    # scratch into the map); the result feeds a padded conv (halo)
    nodes = [
        helper.make_node("Conv", ["x", "wa"], ["a"], pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["x", "wb"], ["b0"]),
        helper.make_node("Relu", ["b0"], ["b"]),
        helper.make_node("Conv", ["x", "wd"], ["d"], pads=[1, 1, 1, 1]),
        helper.make_node("Concat", ["a", "x", "b", "d"], ["c"], axis=1),
        helper.make_node("Conv", ["c", "wy"], ["y"], pads=[1, 1, 1, 1]),
    ]
    cc = ca + 3 + cb + 8
    m = _model(
        nodes,
        {"wa": _w(ca, 3, 3, 3), "wb": _w(cb, 3, 1, 1), "wd": _w(8, 3, 3, 3), "wy": _w(16, cc, 3, 3, scale=0.1)},
        [1, 3, 16, 16],
        [1, 16, 16, 16],
    )
    compiled = compile_module(import_model(m, {}, source="test"), precision=precision)
    assert compiled.kernel_kinds.get("concat_gather") == 4 and compiled.kernel_kinds.get("concat_scatter") == 1
    x = RNG.standard_normal((1, 3, 16, 16)).astype(np.float32)
    got = run_compiled(compiled, {"x": x}).outputs["y"]
    want = onnxruntime_outputs(m, {"x": x})["y"]
    assert_close(got, want, precision)


@pytest.mark.parametrize("first", ["a", "b"])
def test_concat_of_a_ragged_conv_output_is_not_written_in_place(first):
    # a has 8 channels: aligned for fp32 (C0 = 8), but its conv stores a whole
    # 16-channel fractal column, which in place would spill into b's channels
    # whenever b's kernel runs first
    na = helper.make_node("Conv", ["x", "wa"], ["a"])
    nb = helper.make_node("Conv", ["x", "wb"], ["b"])
    nodes = [na, nb] if first == "a" else [nb, na]
    m = _model(
        nodes + [helper.make_node("Concat", ["a", "b"], ["y"], axis=1)],
        {"wa": _w(8, 16, 1, 1), "wb": _w(16, 16, 1, 1)},
        [1, 16, 4, 16],
        [1, 24, 4, 16],
    )
    compiled = _check(m, (1, 16, 4, 16))
    assert compiled.kernel_kinds.get("concat_gather") == 2 and compiled.kernel_kinds.get("concat_scatter") == 1


# The light models that compile and simulate fastest (about 10-20 s each with
# race detection); all nine run in benchmarks/light_models_npu.py (numbers in
# docs/LOWERING.md).
FAST_LIGHT_MODELS = ["bvlc_alexnet", "shufflenet", "squeezenet", "inception_v1", "zfnet512"]


def _with_logits(model):
    """Add the input of a final Softmax as a second output: softmax of
    random-weight logits is often one-hot and would hide errors."""
    from onnx import shape_inference

    outs = {o.name for o in model.graph.output}
    for node in model.graph.node:
        if node.op_type == "Softmax" and node.output[0] in outs:
            info = {v.name: v for v in shape_inference.infer_shapes(model).graph.value_info}
            model.graph.output.append(info[node.input[0]])
            break
    return model


@pytest.mark.parametrize("name", FAST_LIGHT_MODELS)
def test_light_model_random_weights(name):
    from gedialects.zoo import light_model_path, random_inputs, with_random_weights

    model = _with_logits(with_random_weights(onnx.load(str(light_model_path(name)))))
    compiled = compile_module(import_model(model, {}, source=name), precision="must_keep_origin_dtype")
    x = random_inputs(model)
    got = run_compiled(compiled, x).outputs
    want = onnxruntime_outputs(model, x)
    assert len(want) == 2 or name == "squeezenet"
    for k, v in want.items():
        assert_close(got[k].reshape(v.shape), v, "must_keep_origin_dtype", err_msg=k)


def test_squeezenet_light_model_unfused():
    from gedialects.zoo import light_model_path, random_inputs, with_random_weights

    model = with_random_weights(onnx.load(str(light_model_path("squeezenet"))))
    compiled = compile_module(import_model(model, {}, source="squeezenet"), precision="must_keep_origin_dtype", fuse=False)
    x = random_inputs(model)
    got = run_compiled(compiled, x).outputs
    want = onnxruntime_outputs(model, x)
    for k, v in want.items():
        assert_close(got[k], v, "must_keep_origin_dtype", err_msg=k)


def test_force_fp16_lrn_with_padded_last_slice():
    # 40 channels in fp16: C0 = 16, the third slice holds 8 padded channels;
    # they must stay finite through ln/exp (they feed the next conv's zero weights)
    m = _model(
        [
            helper.make_node("Conv", ["x", "w"], ["a"], pads=[1, 1, 1, 1]),
            helper.make_node("LRN", ["a"], ["l"], size=5, alpha=0.02, beta=0.75, bias=1.5),
            helper.make_node("Conv", ["l", "w2"], ["y"], group=2),
        ],
        {"w": _w(40, 3, 3, 3), "w2": _w(32, 20, 1, 1)},
        [1, 3, 16, 16],
        [1, 32, 16, 16],
    )
    compiled = compile_module(import_model(m, {}, source="test"), precision="force_fp16")
    x = RNG.standard_normal((1, 3, 16, 16)).astype(np.float32)
    got = run_compiled(compiled, {"x": x}).outputs["y"]
    want = onnxruntime_outputs(m, {"x": x})["y"]
    assert_close(got.reshape(want.shape), want, "force_fp16")


@pytest.mark.parametrize("name,weights", [
    ("squeezenet", "calibrated"), ("shufflenet", "calibrated"), ("resnet50", "calibrated"),
    ("resnet50", "random"), ("bvlc_alexnet", "shipped"),
])
def test_force_fp16_light_model(name, weights):
    # calibrated: BatchNormalization statistics set from the data
    # (zoo.calibrate_batch_norm), activations O(1); shufflenet's concats put
    # operands at channel 136 (not a multiple of C0 = 16): the gather/scatter
    # concat kernels; squeezenet has no BN. random: resnet50's logits reach
    # 1.7e5 and shipped: alexnet's 8e11 -- beyond fp16, kept in range by the
    # compile-time scaling (lowering/fp16_scaling.py)
    from gedialects.zoo import light_model_path, random_inputs, with_random_weights

    model = onnx.load(str(light_model_path(name)))
    if weights != "shipped":
        model = with_random_weights(model, calibrate=weights == "calibrated")
    model = _with_logits(model)
    compiled = compile_module(import_model(model, {}, source=name), precision="force_fp16")
    if name == "shufflenet":
        assert compiled.kernel_kinds.get("concat_gather", 0) >= 1
    x = random_inputs(model)
    got = run_compiled(compiled, x).outputs
    want = onnxruntime_outputs(model, x)
    if weights != "calibrated":
        assert max(np.abs(v).max() for v in want.values()) > 65504
    for k, v in want.items():
        assert_close(got[k].reshape(v.shape), v, "force_fp16", err_msg=k)


def test_calibrated_batch_norm_statistics():
    # zoo.with_random_weights(calibrate=True): every BN's mean/var are the
    # statistics of its input (one pass, topological order), deterministic;
    # the default (random statistics) is unchanged
    from gedialects.zoo import light_model_path, random_inputs, with_random_weights

    base = onnx.load(str(light_model_path("resnet50")))
    plain = with_random_weights(base)
    assert plain.SerializeToString() == with_random_weights(base, calibrate=False).SerializeToString()
    cal = with_random_weights(base, calibrate=True)
    assert cal.SerializeToString() == with_random_weights(base, calibrate=True).SerializeToString()
    x = random_inputs(cal)
    z_plain = onnxruntime_outputs(_with_logits(plain), x)
    z_cal = onnxruntime_outputs(_with_logits(cal), x)
    logits = next(k for k in z_cal if k != "gpu_0/softmax_1")
    assert np.abs(z_plain[logits]).max() > 1e5  # beyond fp16 (65504)
    assert np.abs(z_cal[logits]).max() < 100
    # the first BN normalises its input exactly: its output per channel has mean bias, std ~scale
    bn = next(n for n in cal.graph.node if n.op_type == "BatchNormalization")
    inits = {i.name: numpy_helper.to_array(i) for i in cal.graph.initializer}
    assert np.all(inits[bn.input[4]] > 0) and not np.allclose(inits[bn.input[4]], numpy_helper.to_array(
        next(i for i in plain.graph.initializer if i.name == bn.input[4])))


def test_loop_fusion_with_splat_constants_in_its_body():
    # densenet121's pre-activation Mul + Add + Relu after a concat, with the
    # shipped weights: every parameter is 0.02, so the fused body holds
    # graph.fill constants (they used to be taken for ops to lower)
    p = np.full((32, 1, 1), 0.02, np.float32)
    m = _model(
        [
            helper.make_node("Conv", ["x", "w"], ["a"], pads=[1, 1, 1, 1]),
            helper.make_node("Concat", ["x", "a"], ["c"], axis=1),
            helper.make_node("Mul", ["c", "s"], ["m"]),
            helper.make_node("Add", ["m", "b"], ["n"]),
            helper.make_node("Relu", ["n"], ["y"]),
        ],
        {"w": _w(16, 16, 3, 3), "s": p, "b": p},
        [1, 16, 8, 16],
        [1, 32, 8, 16],
    )
    from gedialects.graph import ops as g
    from xdsl.context import Context

    from gedialects.graph.transforms.fuse import GraphFusePass

    module = import_model(m, {}, source="test")
    GraphFusePass().apply(Context(), module)
    body = [op for op in module.walk() if isinstance(op, g.FusionOp)][0].body.block.ops
    assert any(isinstance(op, g.FillOp) for op in body)
    compiled = _check(m, (1, 16, 8, 16))
    assert compiled.kernel_kinds.get("elementwise") == 1


@pytest.mark.parametrize("c,h,w", [(3, 20, 20), (3, 5, 7), (40, 6, 18)])
def test_input_transdata_any_width_and_channel_count(c, h, w):
    # widths without a multiple-of-16 divisor end each row with a short
    # chunk; more than 16 channels go through the cube in blocks of 16
    m = _model(
        [helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])],
        {"w": _w(16, c, 3, 3)},
        [1, c, h, w],
        [1, 16, h, w],
    )
    c_ = _check(m, (1, c, h, w))
    assert c_.transdata == 2


@pytest.mark.parametrize("reader", ["conv", "max_pool"])
def test_output_map_that_a_padded_window_also_reads(reader):
    # a padded max pool gives the map a halo, and it is a graph output: its
    # transdata first copies it without the halo (found by the fuzz test); a
    # padded conv pads on the fly and leaves the map as it is
    if reader == "conv":
        last = helper.make_node("Conv", ["a", "w2"], ["y"], pads=[1, 1, 1, 1])
        y_shape = [1, 16, 6, 12]
    else:
        last = helper.make_node("MaxPool", ["a"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])
        y_shape = [1, 40, 6, 12]
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w1"], ["c"]), helper.make_node("Relu", ["c"], ["a"]), last],
        "m",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 6, 12])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape),
         helper.make_tensor_value_info("a", TensorProto.FLOAT, [1, 40, 6, 12])],
        [numpy_helper.from_array(_w(40, 16, 1, 1), "w1"), numpy_helper.from_array(_w(16, 40, 3, 3, scale=0.1), "w2")],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    compiled = compile_module(import_model(m, {}, source="test"), precision="must_keep_origin_dtype")
    assert compiled.kernel_kinds.get("strip_halo", 0) == (reader == "max_pool")
    x = {"x": RNG.standard_normal((1, 16, 6, 12)).astype(np.float32)}
    got = run_compiled(compiled, x).outputs
    for k, v in onnxruntime_outputs(m, x).items():
        assert_close(got[k].reshape(v.shape), v, "must_keep_origin_dtype", err_msg=k)


def test_loop_fusion_with_two_results():
    # r = a*a feeds both the fused add and another conv: the loop fusion
    # yields r and s, and its kernel stores both (found by the fuzz test)
    from gedialects.graph import ops as g

    v = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 16, 8, 16]) for n in ("x", "y", "s")]
    graph = helper.make_graph(
        [
            helper.make_node("Conv", ["x", "w"], ["a"]),
            helper.make_node("Mul", ["a", "a"], ["r"]),
            helper.make_node("Add", ["r", "a"], ["s"]),
            helper.make_node("Conv", ["r", "w"], ["y"]),
        ],
        "m", [v[0]], v[1:], [numpy_helper.from_array(_w(16, 16, 1, 1), "w")],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    x = {"x": RNG.standard_normal((1, 16, 8, 16)).astype(np.float32)}
    want = onnxruntime_outputs(m, x)
    from xdsl.context import Context

    from gedialects.graph.transforms.fuse import GraphFusePass

    fused = import_model(m, {}, source="test")
    GraphFusePass().apply(Context(), fused)
    assert any(isinstance(op, g.FusionOp) and len(op.results) == 2 for op in fused.walk())
    for precision in ("must_keep_origin_dtype", "force_fp16"):
        compiled = compile_module(import_model(m, {}, source="test"), precision=precision)
        got = run_compiled(compiled, x).outputs
        for k, val in want.items():
            assert_close(got[k].reshape(val.shape), val, precision, err_msg=k)


@pytest.mark.parametrize("precision", ["must_keep_origin_dtype", "force_fp16"])
def test_one_value_two_outputs(precision):
    # v0 and v2 are one value after CSE: the second output is a copy of the
    # first (already fp32), not a cast of it (found by the fuzz test)
    v = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 16, 8, 16]) for n in ("x", "c", "v0", "v2")]
    graph = helper.make_graph(
        [
            helper.make_node("Add", ["x", "x"], ["v0"]),
            helper.make_node("Conv", ["v0", "w"], ["c"]),
            helper.make_node("Add", ["x", "x"], ["v2"]),
        ],
        "m", [v[0]], v[1:], [numpy_helper.from_array(_w(16, 16, 1, 1), "w")],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    x = {"x": RNG.standard_normal((1, 16, 8, 16)).astype(np.float32)}
    got = run_compiled(compile_module(import_model(m, {}, source="test"), precision=precision), x).outputs
    for k, val in onnxruntime_outputs(m, x).items():
        assert_close(got[k].reshape(val.shape), val, precision, err_msg=k)


@pytest.mark.parametrize("precision", ["must_keep_origin_dtype", "force_fp16"])
@pytest.mark.parametrize("size", [12, 64], ids=["one-band", "bands"])
def test_padded_max_pool_of_negative_values(precision, size):
    """YOLO's SPPF: max pools (5x5, stride 1, pads 2; and 3x3 stride 2,
    uneven pads) of a conv's output with no relu. Every value is negative
    (bias -4), so a zero padding would make every border pixel 0: the halo
    is the lowest value instead (on a 64x64 map the pool runs in bands, the
    top and bottom halo rows only in the edge bands), on the AI core."""
    out = size // 2
    m = _model(
        [
            helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
            helper.make_node("MaxPool", ["c"], ["p"], kernel_shape=[5, 5], pads=[2, 2, 2, 2]),
            helper.make_node("MaxPool", ["p"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 0, 1, 1]),
        ],
        {"w": _w(16, 8, 3, 3, scale=0.1), "b": np.full(16, -4.0, np.float32)},
        [1, 8, size, size],
        [1, 16, out, out],
    )
    compiled = compile_module(import_model(m, {}, source="test"), precision=precision, aicpu_fallback=False)
    assert compiled.kernel_kinds.get("max_pool") == 2, compiled.kernel_kinds
    x = RNG.standard_normal((1, 8, size, size)).astype(np.float32)
    got = np.asarray(run_compiled(compiled, {"x": x}).outputs["y"]).reshape(1, 16, out, out)
    want = onnxruntime_outputs(m, {"x": x})["y"]
    assert want.max() < 0
    assert_close(got, want, precision)


@pytest.mark.parametrize("precision", ["must_keep_origin_dtype", "force_fp16"])
def test_max_pool_bands_spread_over_the_cores(precision):
    """A stem's max pool (shufflenet: 24 channels, 112x112, 3x3 stride 2)
    has few C1 slices: its bands are sized by the target's cost formulas,
    not as large as UB allows, so its tiles fill the cores (it took 8 of 32
    with the largest bands), and the halo rows between bands are right."""
    m = _model(
        [helper.make_node("Relu", ["x"], ["r"]),
         helper.make_node("MaxPool", ["r"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])],
        {}, [1, 24, 112, 112], [1, 24, 56, 56],
    )
    compiled = compile_module(import_model(m, {}, source="test"), precision=precision, aicpu_fallback=False)
    x = RNG.standard_normal((1, 24, 112, 112)).astype(np.float32)
    result = run_compiled(compiled, {"x": x})
    pools = [k for k in result.profile.kernels if "max_pool" in k.name]
    assert pools and all(k.block_dim >= 16 for k in pools), [(k.name, k.block_dim) for k in pools]
    got = np.asarray(result.outputs["y"]).reshape(1, 24, 56, 56)
    assert_close(got, onnxruntime_outputs(m, {"x": x})["y"], precision)
