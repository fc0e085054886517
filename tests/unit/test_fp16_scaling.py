"""force_fp16 range scaling (lowering/fp16_scaling.py): tensors beyond fp16's
range come back right, and the scale classes follow the rules."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects import func

from gedialects.frontend.onnx_import import import_model
from gedialects.graph import ops as g
from gedialects.graph.interpreter import input_names, run
from gedialects.numerics import assert_close
from gedialects.textual import parse_module
from lowering import fp16_scaling
from lowering.fp16_scaling import calibrate, plan_scales
from lowering.pipeline import compile_module, run_compiled

GROW = (Path(__file__).parents[1] / "filecheck" / "lowering" / "fp16-scaling.mlir").read_text()


def _grow_inputs():
    return {"x": np.random.default_rng(3).standard_normal((1, 16, 2, 16)).astype(np.float32)}


def test_values_beyond_fp16_come_back_scaled():
    want = run(parse_module(GROW), _grow_inputs(), "grow")
    assert np.abs(want["map"]).max() > 65504  # the test means something
    got = run_compiled(compile_module(parse_module(GROW), precision="force_fp16"), _grow_inputs()).outputs
    for name, value in want.items():
        assert_close(got[name].reshape(value.shape), value, "force_fp16", err_msg=name)


def test_without_scaling_fp16_overflows(monkeypatch):
    # what range scaling prevents: the same program with every scale 1
    import lowering.graph_to_tile as gt

    monkeypatch.setattr(gt, "plan_scales", lambda fn, ranges: {})
    got = run_compiled(compile_module(parse_module(GROW), precision="force_fp16"), _grow_inputs()).outputs
    assert not np.isfinite(got["map"]).all()


def _fn(nodes, inits, x_shape, outs):
    graph = helper.make_graph(
        nodes, "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs],
        [numpy_helper.from_array(v, k) for k, v in inits.items()],
    )
    module = import_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), {}, source="t")
    return next(op for op in module.body.block.ops if isinstance(op, func.FuncOp))


def _by_name(fn):
    return {op.results[0].name_hint or str(op.location): op.results[0] for op in fn.body.block.ops if op.results}


def test_scale_classes():
    # conv a (big weights) -> relu r -> conv b (+ residual r: one class with
    # r) -> conv c (a new class) -> flatten -> softmax (result pinned)
    w = np.full((8, 8, 1, 1), 40.0, np.float32)
    fn = _fn(
        [
            helper.make_node("Conv", ["x", "w"], ["a"]),
            helper.make_node("Relu", ["a"], ["r"]),
            helper.make_node("Conv", ["r", "w"], ["b"]),
            helper.make_node("Add", ["b", "r"], ["s"]),
            helper.make_node("Conv", ["s", "w"], ["c"]),
            helper.make_node("Flatten", ["c"], ["f"]),
            helper.make_node("Softmax", ["f"], ["p"]),
        ],
        {"w": w}, [1, 8, 4, 4], ["p"],
    )
    from gedialects.graph.transforms.fuse import GraphFusePass
    from xdsl.context import Context

    GraphFusePass().apply(Context(), fn.parent_op())
    scales = plan_scales(fn, calibrate(fn))
    convs = [op for op in fn.body.block.ops if isinstance(op, g.ConvOp)]
    a, b, c = convs  # the residual add is fused into b
    assert b.residual is not None
    assert b.residual is a.output  # relu fused into a
    assert scales[b.output] == scales[a.output] > 1  # a residual joins its conv's class
    assert scales[c.output] > scales[b.output]  # c absorbs b's scale, starts its own
    soft = next(op for op in fn.body.block.ops if isinstance(op, g.SoftmaxOp))
    assert scales[soft.output] == 1.0 and scales[soft.input] > 1
    assert scales[fn.args[0]] == 1.0  # graph inputs are pinned


def test_lrn_input_is_pinned():
    fn = _fn(
        [helper.make_node("Conv", ["x", "w"], ["a"]), helper.make_node("LRN", ["a"], ["y"], size=3)],
        {"w": np.full((8, 8, 1, 1), 40.0, np.float32)}, [1, 8, 4, 4], ["y"],
    )
    scales = plan_scales(fn, calibrate(fn))
    lrn = next(op for op in fn.body.block.ops if isinstance(op, g.LrnOp))
    assert scales[lrn.input] == 1.0


def test_weights_stay_in_range_when_a_class_is_dominated_elsewhere():
    # p (small) and q (huge) meet in a concat: one class, scaled for q; the
    # last conv reads only p's channels, so its result is small and would
    # need its weights x 2^15 -- past fp16; its output class is raised instead
    fn = _fn(
        [
            helper.make_node("Conv", ["x", "small"], ["p"]),
            helper.make_node("Conv", ["x", "big"], ["q"]),
            helper.make_node("Concat", ["p", "q"], ["c"], axis=1),
            helper.make_node("Conv", ["c", "tiny"], ["y"]),
        ],
        {"small": np.full((8, 8, 1, 1), 0.01, np.float32), "big": np.full((8, 8, 1, 1), 3e6, np.float32),
         "tiny": np.concatenate([np.ones((8, 8, 1, 1)), np.zeros((8, 8, 1, 1))], axis=1).astype(np.float32)},
        [1, 8, 4, 4], ["y"],
    )
    scales = plan_scales(fn, calibrate(fn))
    last = [op for op in fn.body.block.ops if isinstance(op, g.ConvOp)][-1]
    assert scales[last.input] > fp16_scaling.WEIGHT_LIMIT
    assert scales[last.input] / scales[last.output] * 1.0 <= fp16_scaling.WEIGHT_LIMIT


def test_the_largest_weight_counts_negative_and_non_finite_values():
    """A product's largest |weight| (read without a weight-sized |w|) is the
    most negative weight's magnitude when that is the larger, and inf or NaN
    when a weight is."""
    def weight_max(w):
        fn = _fn([helper.make_node("Conv", ["x", "w"], ["y"])], {"w": w}, [1, 2, 4, 4], ["y"])
        conv = next(op for op in fn.body.block.ops if isinstance(op, g.ConvOp))
        return fp16_scaling._activation_and_weight_max(conv)[1]

    w = np.array([0.5, -3.0, 2.0, 1.0], np.float32).reshape(2, 2, 1, 1)
    assert weight_max(w) == 3.0
    assert weight_max(np.where(w < 0, -np.inf, w).astype(np.float32)) == np.inf
    assert np.isnan(weight_max(np.where(w < 0, np.nan, w).astype(np.float32)))


def test_calibration_is_deterministic_and_seeded_apart_from_run_inputs():
    fn = next(op for op in parse_module(GROW).body.block.ops if isinstance(op, func.FuncOp))
    assert calibrate(fn) == calibrate(fn)
    assert fp16_scaling.CALIBRATION_SEED not in (0, 1)  # ge-run's default seeds
    given = {n: np.ones((1, 16, 2, 16), np.float32) for n in input_names(fn)}
    assert calibrate(fn, given) != calibrate(fn)


def test_calibration_convs_accumulate_in_float32_and_the_oracle_in_float64(monkeypatch):
    """Calibration needs magnitudes, so its convs run in float32 (twice as
    fast); the reference interpreter, the oracle, stays in float64."""
    from gedialects.graph import interpreter, reference

    seen = []
    conv = reference.conv

    def spy(*args):
        seen.append(reference._CONV_ACCUMULATOR.get())
        return conv(*args)

    monkeypatch.setattr(interpreter.ref, "conv", spy)
    fn = next(op for op in parse_module(GROW).body.block.ops if isinstance(op, func.FuncOp))
    ranges = calibrate(fn)
    assert seen and set(seen) == {np.float32}
    seen.clear()
    exact = run(parse_module(GROW), _grow_inputs(), "grow")
    assert seen and set(seen) == {np.float64}
    # float32 sums give the same magnitudes to well within a power of two: each conv here sums 144
    # products (16 channels x 9 taps), off by at most 144 * 2^-24 ~ 1e-5 of their magnitudes per layer
    # whatever order the CPU's BLAS adds them in; 1e-3 leaves room for three layers and cancellation
    monkeypatch.setattr(fp16_scaling, "conv_accumulation", lambda _: reference.conv_accumulation(np.float64))
    seen.clear()
    ranges64 = calibrate(fn)
    assert set(seen) == {np.float64}
    assert ranges.keys() == ranges64.keys()
    for v, r in ranges.items():
        assert abs(r - ranges64[v]) <= 1e-3 * ranges64[v]
    assert exact


def test_calibration_inputs_set_the_scales(tmp_path, capsys):
    from gedialects.tools import ge_compile, ge_run
    from lowering.graph_to_tile import convert
    from lowering.partition import partition

    def exps(calibration):
        module = parse_module(GROW)
        partition(next(op for op in module.body.block.ops if isinstance(op, func.FuncOp)), "force_fp16")
        convert(module, "force_fp16", calibration=calibration)
        prog = next(iter(module.body.block.ops))
        return {k.sym_name.data: k.attributes["scale_exp"].value.data
                for k in prog.body.block.ops if "scale_exp" in k.attributes}

    x = _grow_inputs()["x"]
    assert exps(None) != exps({"x": x})  # the default draws its own inputs
    # the program is near-linear in x (relu, a bias of 1): 64x larger inputs, 2^6 more scaling
    assert exps({"x": 64 * x})["k2_conv"] == exps({"x": x})["k2_conv"] + 6

    good, bad = tmp_path / "cal.npz", tmp_path / "bad.npz"
    np.savez(good, x=np.ones((1, 16, 2, 16), np.float32))
    np.savez(bad, x=np.ones((1, 16, 2, 8), np.float32))
    src = tmp_path / "grow.mlir"
    src.write_text(GROW.replace("func.func @grow", "func.func @main"))
    assert ge_compile.main([str(src), "-o", str(tmp_path / "a.om"), "--calibration", str(good)]) == 0
    assert ge_run.main([str(src), "--calibration", str(good)]) == 0
    capsys.readouterr()
    assert ge_compile.main([str(src), "-o", str(tmp_path / "b.om"), "--calibration", str(bad)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["ge-compile: error: calibration input 'x' has shape [1, 16, 2, 8], the graph takes [1, 16, 2, 16]"]


def test_a_mask_fused_as_the_scores_bias_does_not_set_their_scale():
    """Mistral's dynamo export: scores = q . k^T + where(mask, 0, -3.4e38),
    the add fused into the product as its bias (MatMulBiasAddFusionPass),
    then a softmax. The bias joins the product's class, as the add would
    have: the class holds the mask (pinned), so the scores stay at scale 1
    and -3.4e38 becomes -inf in fp16. Given its own class, the -3.4e38 would
    set a scale of 2^120 that flushes the scores to 0 (a uniform softmax)."""
    rng = np.random.default_rng(0)
    s = 8
    keep = np.tril(np.ones((s, s), bool))
    nodes = [
        helper.make_node("MatMul", ["x", "k"], ["scores"]),
        helper.make_node("Where", ["keep", "zero", "big"], ["mask"]),
        helper.make_node("Add", ["scores", "mask"], ["masked"]),
        helper.make_node("Softmax", ["masked"], ["p"], axis=-1),
    ]
    inits = {"k": rng.standard_normal((16, s)).astype(np.float32), "keep": keep,
             "zero": np.array(0.0, np.float32), "big": np.array(np.finfo(np.float32).min)}
    graph = helper.make_graph(
        nodes, "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, s, 16])],
        [helper.make_tensor_value_info("p", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v, k) for k, v in inits.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    fused = []

    def dump(stage, module):
        if stage == "fuse":
            fused.extend(op for op in module.walk() if isinstance(op, g.MatMulOp) and op.bias is not None)

    compiled = compile_module(import_model(model, {}, source="t"), precision="force_fp16", dump=dump)
    assert fused, "the mask add is the product's bias"
    x = rng.standard_normal((1, s, 16)).astype(np.float32)
    got = run_compiled(compiled, {"x": x}).outputs["p"].reshape(1, s, s)
    from gedialects.zoo import onnxruntime_outputs

    want = onnxruntime_outputs(model, {"x": x})["p"]
    assert np.std(want[0, -1]) > 0.05  # the scores matter: not a uniform row
    assert_close(got, want, "force_fp16")


def _fp16_boundaries(dtype) -> np.ndarray:
    """Every fp16 value, the midpoints between neighbours (where rounding
    to nearest even decides) and values just either side of them, of both
    signs, as `dtype`; plus zeros, infinities, NaN, values that overflow and
    values far below fp16's smallest subnormal."""
    finite = np.arange(0, 0x7C00, dtype=np.uint16).view(np.float16).astype(np.float64)
    mid = (finite[:-1] + finite[1:]) / 2
    near = np.concatenate([mid, np.nextafter(mid, 0), np.nextafter(mid, 1)]).astype(dtype)
    special = np.array([0.0, np.inf, np.nan, 65504.0, 65519.0, 65520.0, 1e9, 1e-30, 2.0**-25, 2.0**-26], dtype)
    values = np.concatenate([finite.astype(dtype), near, special])
    return np.concatenate([values, -values])


@pytest.mark.parametrize("share", [1, fp16_scaling.SUBNORMAL_SHARE, 10**9], ids=["astype", "chosen", "integers"])
def test_to_fp16_is_astype_bit_for_bit(monkeypatch, share):
    """The fast conversion of weights to fp16 rounds every value as NumPy's
    astype does, subnormals and their rounding to the smallest normal
    included, from fp32 and from fp64 (one rounding, not two), by either
    route: astype itself, or the integer route for values bound for the
    subnormals (`share` 1 takes astype for every chunk, 10**9 the integer
    route for every chunk with such a value)."""
    monkeypatch.setattr(fp16_scaling, "SUBNORMAL_SHARE", share)
    for dtype in (np.float32, np.float64):
        x = _fp16_boundaries(dtype)
        with np.errstate(over="ignore"):
            want = x.astype(np.float16)
            got = fp16_scaling.to_fp16(x)
        np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16), err_msg=str(dtype))


def test_to_fp16_keeps_shape_and_order_of_any_view():
    """In chunks: a transposed (non-contiguous) 4-D view larger than one
    chunk (runs of its leading index), a contiguous 1-D array of several
    chunks, a 0-d array and an empty one convert in place."""
    rng = np.random.default_rng(7)
    flat = (rng.standard_normal(3 * fp16_scaling._CHUNK + 5) * 10.0 ** rng.uniform(-9, 3, 3 * fp16_scaling._CHUNK + 5))
    np.testing.assert_array_equal(fp16_scaling.to_fp16(flat).view(np.uint16), flat.astype(np.float16).view(np.uint16))
    packed = (rng.standard_normal((8, 40, 33, 16)) * 10.0 ** rng.uniform(-9, 3, (8, 40, 33, 16))).astype(np.float32)
    view = packed.transpose(0, 2, 3, 1)
    got = fp16_scaling.to_fp16(view)
    assert got.shape == view.shape and got.flags.c_contiguous
    np.testing.assert_array_equal(got.view(np.uint16), view.astype(np.float16).view(np.uint16))
    assert fp16_scaling.to_fp16(np.float32(3e-6)).shape == ()
    assert fp16_scaling.to_fp16(np.float32(3e-6)) == np.float32(3e-6).astype(np.float16)
    assert fp16_scaling.to_fp16(np.zeros((0, 3), np.float32)).shape == (0, 3)


def test_saturate_to_fp16_clamps_finite_values_only():
    """Finite values beyond fp16's range stop at +-65504 (a mask's
    finfo(f32).min too); infinities, NaN and everything in range convert as
    astype does, integers included."""
    x = np.concatenate([_fp16_boundaries(np.float32), [np.finfo(np.float32).min, -np.inf]]).astype(np.float32)
    got = fp16_scaling.saturate_to_fp16(x)
    with np.errstate(over="ignore", invalid="ignore"):
        want = np.where(np.isfinite(x) & (np.abs(x) > 65504), np.sign(x) * 65504, x).astype(np.float16)
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))
    assert fp16_scaling.saturate_to_fp16(np.array([70000, -3, 2049], np.int64)).tolist() == [65504, -3, 2048]


def test_mask_sentinels_are_found_in_broadcast_constants_without_expanding_them():
    """A fill's value is a zero-stride view of one number; whether it holds a
    mask's finfo(f32).min is read from that number (a fill of a classifier's
    shape is hundreds of MB whole)."""
    sentinel = np.finfo(np.float32).min
    huge = (1 << 20, 1 << 20)  # 4 TB were it expanded
    assert fp16_scaling.holds_mask_sentinel(np.broadcast_to(np.float32(sentinel), huge))
    assert not fp16_scaling.holds_mask_sentinel(np.broadcast_to(np.float32(-3e4), huge))
    assert not fp16_scaling.holds_mask_sentinel(np.broadcast_to(np.float32(np.inf), huge))
    row = np.array([0.0, sentinel, 1.0], np.float32)
    assert fp16_scaling.holds_mask_sentinel(np.broadcast_to(row, (1 << 20, 3)))
    assert fp16_scaling.holds_mask_sentinel(np.float32(sentinel)) and not fp16_scaling.holds_mask_sentinel(2.0)
