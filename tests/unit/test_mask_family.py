"""Attention masks built from int64 inputs, on the AI core: graph-canonicalize
moves views before casts (ViewBeforeCast) and writes constant gather_nds as
gathers / views (GatherNDToGather), graph-fuse makes the where and the bool
ops of its condition one graph.fusion (MaskWhereFusionPass), and the vector
family loads the i32/i64 operands as they are and converts them to fp32 in
UB (`npu.vconv` with an s32/s64 source).

Numerics against onnxruntime on the npu backend with the AI-CPU fallback off,
in both precision modes (gedialects.numerics.CRITERIA), and no AI-CPU task in
the compiled program. In force_fp16 -3.4e38 becomes -inf, so the masks feed
an Add with scores and a Softmax as real models do, and the softmax output is
compared (masked positions exactly 0).

Also: hand-written npu kernels converting int64 / int32 in UB with vconv
(exact round-to-nearest-even values), and program validation refusing an
integer dtype code where only f16/f32 are allowed."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from gedialects.frontend.onnx_import import import_model
from gedialects.graph import ops as g
from gedialects.numerics import CRITERIA
from gedialects.zoo import onnxruntime_outputs
from lowering.pipeline import compile_module, run_compiled
from target import program as P
from target.assembler import assemble
from target.errors import AssemblyError
from target.program import Program, read_om, write_om
from target.run import parse_npu_mlir
from target.simulator import simulate

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

MODES = ("must_keep_origin_dtype", "force_fp16")
ONNX_TYPES = {
    np.dtype(np.int64): TensorProto.INT64,
    np.dtype(np.int32): TensorProto.INT32,
    np.dtype(np.float32): TensorProto.FLOAT,
    np.dtype(np.bool_): TensorProto.BOOL,
}
S, H = 16, 4  # sequence length, heads
VALID = 11  # the padding mask keeps tokens 0..10
BIG = np.float32(-3.4e38)  # torch.finfo(float32).min, rounded as the exporters write it

RNG = np.random.default_rng(5)
SCORES = RNG.standard_normal((1, H, S, S)).astype(np.float32)
ATTENTION_MASK = np.array([[1] * VALID + [0] * (S - VALID)], np.int64)
CAUSAL = np.tril(np.ones((S, S), bool)).reshape(1, 1, S, S)


def _model(nodes, inputs: dict, inits: dict | None = None):
    """A model of `nodes` whose output is "y"; `inputs` name -> example array."""
    graph = helper.make_graph(
        nodes,
        "mask",
        [helper.make_tensor_value_info(n, ONNX_TYPES[v.dtype], v.shape) for n, v in inputs.items()],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.asarray(v), n) for n, v in (inits or {}).items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _attention(mask_nodes, mask: str = "m"):
    """scores + mask -> Softmax over the last axis: `mask_nodes` compute `mask`."""
    return [
        *mask_nodes,
        helper.make_node("Add", ["s", mask], ["a"], name="add_mask"),
        helper.make_node("Softmax", ["a"], ["y"], axis=-1, name="softmax"),
    ]


WHERE_0_BIG = {"zero": np.array(0.0, np.float32), "big": np.array(BIG)}


def _fusions(module) -> list[list[str]]:
    """The `absorbed` names of every graph.fusion."""
    return [[a.data for a in op.attributes["absorbed"].data] for op in module.walk() if isinstance(op, g.FusionOp)]


def _vconv_sources(program) -> set[str]:
    """The source dtypes of every vconv in the program."""
    enc = P.VECTOR_ENCODINGS[P.VCONV]
    return {P.DTYPES[ins[enc.src_dtype]] for k in program.kernels for ins in k.code if ins[0] == P.VCONV}


def _compile_and_check(model, feeds, precision, absorbed: list[str] | None = None, converts: str = "s64"):
    """Compile with no AI-CPU fallback, simulate (races are errors), compare
    with onnxruntime by the precision mode's criterion; the program has no
    AI-CPU task and converts the integer input in UB (a vconv from
    `converts`). `absorbed`: the names the mask fusion must hold."""
    fused: list[list[str]] = []

    def dump(stage, module):
        if stage == "fuse":
            fused.extend(_fusions(module))

    compiled = compile_module(import_model(model, source="test"), precision, aicpu_fallback=False, dump=dump)
    assert compiled.aicpu == 0 and "aicpu" not in compiled.kernel_kinds, compiled.kernel_kinds
    program = assemble(compiled.module)
    assert program.aicpu_tasks == ()
    assert converts in _vconv_sources(program), _vconv_sources(program)
    if absorbed is not None:
        assert absorbed in fused, fused
    got = np.asarray(run_compiled(compiled, feeds).outputs["y"])
    want = onnxruntime_outputs(model, feeds)["y"]
    assert got.size == want.size
    got = got.reshape(want.shape)
    check = CRITERIA[precision].check(got, want)
    assert check.ok, check
    return compiled, got, want


def _assert_masked(got, want, keep: np.ndarray):
    """Softmax probabilities: exactly 0 where `keep` (broadcast) is false, and
    a real distribution elsewhere."""
    keep = np.broadcast_to(keep, want.shape)
    assert (want[~keep] == 0).all() and (got[~keep] == 0).all()
    assert (want[keep] > 0).all() and (got[keep] > 0).all()
    np.testing.assert_allclose(got.sum(axis=-1), 1.0, rtol=2e-3)


# ---------------------------------------------------------------------------
# Masks against onnxruntime
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("precision", MODES)
def test_bert_padding_mask(precision):
    """BERT's extended attention mask: Cast(attention_mask -> bool),
    Unsqueeze to [1,1,1,16], And with an all-true [1,1,16,1] (the expand the
    exporter leaves), Where(0, -3.4e38): one fusion from the int64 input."""
    nodes = _attention([
        helper.make_node("Cast", ["am"], ["b"], to=TensorProto.BOOL, name="cast"),
        helper.make_node("Unsqueeze", ["b", "axes"], ["u"], name="unsqueeze"),
        helper.make_node("And", ["u", "all_true"], ["c"], name="and"),
        helper.make_node("Where", ["c", "zero", "big"], ["m"], name="where"),
    ])
    inits = {"axes": np.array([1, 2], np.int64), "all_true": np.ones((1, 1, S, 1), bool), **WHERE_0_BIG}
    feeds = {"am": ATTENTION_MASK, "s": SCORES}
    compiled, got, want = _compile_and_check(_model(nodes, feeds, inits), feeds, precision,
                                             absorbed=["cast", "and", "where"])
    _assert_masked(got, want, ATTENTION_MASK.astype(bool).reshape(1, 1, 1, S))
    assert compiled.kernel_kinds.get("softmax") == 1


@pytest.mark.parametrize("precision", MODES)
def test_gpt2_causal_and_padding_mask(precision):
    """GPT-2: a constant lower-triangular bool And the padding mask."""
    nodes = _attention([
        helper.make_node("Cast", ["am"], ["b"], to=TensorProto.BOOL, name="cast"),
        helper.make_node("Unsqueeze", ["b", "axes"], ["u"], name="unsqueeze"),
        helper.make_node("And", ["causal", "u"], ["c"], name="and"),
        helper.make_node("Where", ["c", "zero", "big"], ["m"], name="where"),
    ])
    inits = {"axes": np.array([1, 2], np.int64), "causal": CAUSAL, **WHERE_0_BIG}
    feeds = {"am": ATTENTION_MASK, "s": SCORES}
    _, got, want = _compile_and_check(_model(nodes, feeds, inits), feeds, precision,
                                      absorbed=["cast", "and", "where"])
    _assert_masked(got, want, CAUSAL & ATTENTION_MASK.astype(bool).reshape(1, 1, 1, S))


@pytest.mark.parametrize("precision", MODES)
def test_where_selects_the_scores_themselves(precision):
    """GPT-2's older export: Where(causal And padding, scores, -3.4e38) then
    Softmax; the scores are a float operand of the mask fusion."""
    nodes = [
        helper.make_node("Cast", ["am"], ["b"], to=TensorProto.BOOL, name="cast"),
        helper.make_node("Unsqueeze", ["b", "axes"], ["u"], name="unsqueeze"),
        helper.make_node("And", ["causal", "u"], ["c"], name="and"),
        helper.make_node("Where", ["c", "s", "big"], ["w"], name="where"),
        helper.make_node("Softmax", ["w"], ["y"], axis=-1, name="softmax"),
    ]
    inits = {"axes": np.array([1, 2], np.int64), "causal": CAUSAL, "big": np.array(BIG)}
    feeds = {"am": ATTENTION_MASK, "s": SCORES}
    _, got, want = _compile_and_check(_model(nodes, feeds, inits), feeds, precision,
                                      absorbed=["cast", "and", "where"])
    _assert_masked(got, want, CAUSAL & ATTENTION_MASK.astype(bool).reshape(1, 1, 1, S))


@pytest.mark.parametrize("precision", MODES)
def test_the_nan_guard_of_fully_masked_rows(precision):
    """BART's and Mistral's exports: Where(IsNaN(p), 0, p) after the softmax,
    so a row whose every score is -inf (fully masked: softmax gives NaN)
    comes out 0. IsNaN runs in the where's map (x != x), on the AI core."""
    scores = SCORES.copy()
    scores[0, 1, 3, :] = -np.inf  # a fully masked row
    scores[0, 2, :, 5] = -np.inf  # one masked key
    nodes = [
        helper.make_node("Softmax", ["s"], ["p"], axis=-1, name="softmax"),
        helper.make_node("IsNaN", ["p"], ["n"], name="isnan"),
        helper.make_node("Where", ["n", "zero", "p"], ["y"], name="guard"),
    ]
    model = _model(nodes, {"s": scores}, {"zero": np.array(0.0, np.float32)})
    fused: list[list[str]] = []
    compiled = compile_module(import_model(model, source="test"), precision, aicpu_fallback=False,
                              dump=lambda stage, module: fused.extend(_fusions(module)) if stage == "fuse" else None)
    assert compiled.aicpu == 0 and ["isnan", "guard"] in fused, (compiled.kernel_kinds, fused)
    got = np.asarray(run_compiled(compiled, {"s": scores}).outputs["y"]).reshape(scores.shape)
    want = onnxruntime_outputs(model, {"s": scores})["y"]
    assert not np.isnan(want).any() and (want[0, 1, 3] == 0).all()
    assert (got[0, 1, 3] == 0).all() and (got[0, 2, :, 5] == 0).all()
    check = CRITERIA[precision].check(got, want)
    assert check.ok, check


@pytest.mark.parametrize("precision", MODES)
def test_equal_on_int64_ids_runs_on_the_ai_cpu(precision):
    """Where(Equal(input_ids, pad), -1e4, 0): the vector unit would compare
    the ids in fp32, where 2^24 + 1 == 2^24; the partition sends the fusion
    to the AI CPU, which compares int64 exactly."""
    pad = 2**24
    ids = np.array([[101, 50256, 7, 1, 2**20, 3, 17, 9, 44, 12, 102, pad + 1, pad, pad, pad, pad]], np.int64)
    nodes = _attention([
        helper.make_node("Equal", ["ids", "pad"], ["e"], name="equal"),
        helper.make_node("Where", ["e", "minus", "zero"], ["m"], name="where"),
    ])
    inits = {"pad": np.array(pad, np.int64), "minus": np.array(-1e4, np.float32), "zero": np.array(0.0, np.float32)}
    feeds = {"ids": ids, "s": SCORES}
    m = _model(nodes, feeds, inits)
    placed = []

    def dump(stage, module):
        if stage == "partition":
            placed.extend(o for o in module.walk() if isinstance(o, g.FusionOp))

    compiled = compile_module(import_model(m, source="test"), precision, dump=dump)
    (fusion,) = placed
    assert fusion.attributes["ge.engine"].data == "AI_CPU"
    assert "graph.equal of integers" in fusion.attributes["ge.reason"].data
    got = np.asarray(run_compiled(compiled, feeds).outputs["y"]).reshape(1, 4, S, S)
    want = onnxruntime_outputs(m, feeds)["y"]
    assert CRITERIA[precision].check(got, want).ok
    _assert_masked(got, want, (ids != pad).reshape(1, 1, 1, S))


@pytest.mark.parametrize("precision", MODES)
def test_not_or_xor_on_int64_inputs(precision):
    """cond = Xor(Or(Not(Cast(am -> bool)), Cast(pm -> bool)), flip): masked
    where padded or marked in `pm`, except where `flip` (a constant) turns it
    over; Where(cond, -3.4e38, 0). The [1, 16] condition meets the
    [1, 1, 1, 16] `flip` by broadcasting inside the fusion."""
    pm = np.array([[0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0]], np.int64)
    flip = np.zeros((1, 1, 1, S), bool)
    flip[..., [0, 3, 12]] = True  # unmasks the padded 12, masks 0 and 3
    nodes = _attention([
        helper.make_node("Cast", ["am"], ["b"], to=TensorProto.BOOL, name="cast"),
        helper.make_node("Not", ["b"], ["nb"], name="not"),
        helper.make_node("Cast", ["pm"], ["e"], to=TensorProto.BOOL, name="cast_pm"),
        helper.make_node("Or", ["nb", "e"], ["o"], name="or"),
        helper.make_node("Xor", ["o", "flip"], ["c"], name="xor"),
        helper.make_node("Where", ["c", "big", "zero"], ["m"], name="where"),
    ])
    inits = {"flip": flip, **WHERE_0_BIG}
    feeds = {"am": ATTENTION_MASK, "pm": pm, "s": SCORES}
    _, got, want = _compile_and_check(_model(nodes, feeds, inits), feeds, precision,
                                      absorbed=["cast", "not", "cast_pm", "or", "xor", "where"])
    masked = (~ATTENTION_MASK.astype(bool) | pm.astype(bool)).reshape(1, 1, 1, S) ^ flip
    _assert_masked(got, want, ~masked)


@pytest.mark.parametrize("precision", MODES)
def test_torch_dynamo_gather_nd_on_the_bool_mask(precision):
    """torch's exporter writes `mask[:, None, None, :]` on the bool mask as a
    GatherND with constant (0, j) tuples: graph-canonicalize makes it a view,
    moves the cast after it, and the cast fuses with the where."""
    tuples = np.stack([np.zeros(S, np.int64), np.arange(S, dtype=np.int64)], axis=-1).reshape(1, 1, 1, S, 2)
    nodes = _attention([
        helper.make_node("Cast", ["am"], ["b"], to=TensorProto.BOOL, name="cast"),
        helper.make_node("GatherND", ["b", "tuples"], ["u"], name="gather_nd"),
        helper.make_node("Where", ["u", "zero", "big"], ["m"], name="where"),
    ])
    inits = {"tuples": tuples, **WHERE_0_BIG}
    feeds = {"am": ATTENTION_MASK, "s": SCORES}
    compiled, got, want = _compile_and_check(_model(nodes, feeds, inits), feeds, precision,
                                             absorbed=["cast", "where"])
    _assert_masked(got, want, ATTENTION_MASK.astype(bool).reshape(1, 1, 1, S))
    assert "gather" not in compiled.kernel_kinds  # a view, no indexed copy


INTS = {
    # exact in fp32 below 2^24, negative values too
    "must_keep_origin_dtype": [-7, 0, 1, 2, -1, 1000, -1000, 2**20, -(2**20), 3, 5, 8, 13, 21, 34, 2**24 - 1],
    # force_fp16 stores the cast's result as fp16 (its own kernel): well inside 65504
    "force_fp16": [-7, 0, 1, 2, -1, 1000, -1000, 2048, -2048, 3, 5, 8, 13, 21, 34, 511],
}


@pytest.mark.parametrize("precision", MODES)
@pytest.mark.parametrize("dtype", [np.int64, np.int32], ids=["int64", "int32"])
def test_an_elementwise_op_reads_an_integer_input(precision, dtype):
    """Mul(Cast(i -> float), x): the integer input is loaded as it is and
    converted in UB; in fp32 the product is bit-exact."""
    i = np.array([INTS[precision]], dtype)
    x = RNG.standard_normal((2, S)).astype(np.float32)
    nodes = [
        helper.make_node("Cast", ["i"], ["f"], to=TensorProto.FLOAT, name="cast"),
        helper.make_node("Mul", ["f", "x"], ["y"], name="mul"),
    ]
    feeds = {"i": i, "x": x}
    _, got, want = _compile_and_check(_model(nodes, feeds), feeds, precision,
                                      converts="s64" if dtype is np.int64 else "s32")
    if precision == "must_keep_origin_dtype":
        assert np.array_equal(got, want)


@pytest.mark.parametrize("precision", MODES)
def test_an_int32_padding_mask(precision):
    """The BERT mask from an int32 attention_mask (an s32 vconv source)."""
    am = ATTENTION_MASK.astype(np.int32)
    nodes = _attention([
        helper.make_node("Cast", ["am"], ["b"], to=TensorProto.BOOL, name="cast"),
        helper.make_node("Unsqueeze", ["b", "axes"], ["u"], name="unsqueeze"),
        helper.make_node("Where", ["u", "zero", "big"], ["m"], name="where"),
    ])
    inits = {"axes": np.array([1, 2], np.int64), **WHERE_0_BIG}
    feeds = {"am": am, "s": SCORES}
    _, got, want = _compile_and_check(_model(nodes, feeds, inits), feeds, precision, absorbed=["cast", "where"],
                                      converts="s32")
    _assert_masked(got, want, am.astype(bool).reshape(1, 1, 1, S))


# ---------------------------------------------------------------------------
# vconv from integers on the simulator
# ---------------------------------------------------------------------------


def _round_int(v: int, mantissa: int, max_finite: float) -> float:
    """v rounded to a float of `mantissa` significant bits, to nearest, ties
    to even (exact integer arithmetic, independent of NumPy's casts);
    beyond the largest finite value: +-inf."""
    a = abs(v)
    shift = a.bit_length() - mantissa
    if shift > 0:
        q, r = divmod(a, 1 << shift)
        half = 1 << (shift - 1)
        if r > half or (r == half and q & 1):
            q += 1
        a = q << shift
    if a > max_finite:
        return float("-inf") if v < 0 else float("inf")
    return float(-a if v < 0 else a)


def _vconv_program(n: int, src: str, dst: str, repeat: int) -> str:
    """y = vconv(x): n `src` integers DMA'd GM -> UB, converted to `dst`, stored."""
    sb = {"i64": 8, "i32": 4}[src] * n
    db = {"f32": 4, "f16": 2}[dst] * n
    return f"""
npu.program @p gm_size {sb + db} {{
  npu.input "x" at 0 : tensor<{n}x{src}>
  npu.output "y" at {sb} : tensor<{n}x{dst}>
  npu.kernel @k {{
    %gx = npu.ptr gm 0
    %gy = npu.ptr gm {sb}
    %ux = npu.ptr ub 0
    %uy = npu.ptr ub 8192
    npu.dma mte2 %ux, %gx len {sb} : !npu.ptr<ub>, !npu.ptr<gm>
    npu.set_flag mte2 -> v event 0
    npu.wait_flag mte2 -> v event 0
    npu.vconv {dst} {src} %uy, %ux repeat {repeat} : !npu.ptr<ub>, !npu.ptr<ub>
    npu.set_flag v -> mte3 event 0
    npu.wait_flag v -> mte3 event 0
    npu.dma mte3 %gy, %uy len {db} : !npu.ptr<gm>, !npu.ptr<ub>
  }}
  npu.launch @k block_dim 1 stream 0
}}"""


S64_VALUES = [
    0, 1, -1, 7, -7, 2**24 - 1, -(2**24), 2**24 + 1, 2**24 + 3, -(2**24 + 3),  # 2^24 + 1 is a tie: to 2^24
    2**40 + 1, -(2**40 + 1), 2**40 + 2**16, 2**40 + 2**16 + 1, 3 * 2**39 - 1,
    2**62 + 2**38, 2**63 - 1, -(2**63), 123456789, -987654321,
]


def test_vconv_s64_to_f32_rounds_to_nearest_even():
    """64 int64 values (two repeats of 32) to f32: exact below 2^24, rounded
    to nearest (ties to even) above, negative values and the int64 extremes."""
    x = np.array(S64_VALUES + list(range(-22, 22)), np.int64)
    assert x.size == 64
    res = simulate(assemble(parse_npu_mlir(_vconv_program(64, "i64", "f32", repeat=2))), {"x": x})
    assert res.profile.races == []
    got = res.outputs["y"]
    assert got.dtype == np.float32
    want = np.array([_round_int(int(v), 24, float(np.finfo(np.float32).max)) for v in x], np.float32)
    np.testing.assert_array_equal(got, want)
    assert got[10] == np.float32(2**40) and got[11] == np.float32(-(2**40))  # 2^40 + 1 -> 2^40
    assert got[7] == np.float32(2**24) and got[8] == np.float32(2**24 + 4)


def test_vconv_s32_to_f16_rounds_to_nearest_even():
    """64 int32 values (one repeat) to f16: exact up to 2048, ties to even
    above, the largest finite 65504, overflow to inf (round to nearest)."""
    vals = [0, 1, -1, 2048, -2048, 2049, 2051, -2051, 4097, 65504, 65519, -65519, 65520, 70000, -70000,
            2**31 - 1, -(2**31), 12345, -321]
    x = np.array(vals + list(range(-22, 23)), np.int32)
    assert x.size == 64
    res = simulate(assemble(parse_npu_mlir(_vconv_program(64, "i32", "f16", repeat=1))), {"x": x})
    got = res.outputs["y"]
    assert got.dtype == np.float16
    want = np.array([_round_int(int(v), 11, 65504.0) for v in x], np.float16)
    np.testing.assert_array_equal(got, want)
    assert list(got[5:9]) == [2048, 2052, -2052, 4096]
    assert got[10] == 65504 and np.isposinf(got[12]) and np.isneginf(got[14])


# ---------------------------------------------------------------------------
# Program validation: integer dtype codes only as vconv's source
# ---------------------------------------------------------------------------


def _vconv_kernel_program() -> Program:
    return assemble(parse_npu_mlir(_vconv_program(64, "i64", "f32", repeat=2)))


def _with_word(prog: Program, opcode: int, word: int, value) -> Program:
    kernel = prog.kernels[0]
    (pc,) = [i for i, ins in enumerate(kernel.code) if ins[0] == opcode]
    ins = list(kernel.code[pc])
    ins[word] = value
    code = (*kernel.code[:pc], tuple(ins), *kernel.code[pc + 1 :])
    return dataclasses.replace(prog, kernels=(dataclasses.replace(kernel, code=code),))


def test_the_vconv_dtype_codes_are_the_source_integers():
    prog = _vconv_kernel_program()
    (ins,) = [i for i in prog.kernels[0].code if i[0] == P.VCONV]
    enc = P.VECTOR_ENCODINGS[P.VCONV]
    assert P.DTYPES[ins[enc.dtype]] == "f32" and P.DTYPES[ins[enc.src_dtype]] == "s64"
    assert ins[enc.mask] == 32  # 256 bytes of s64 per repeat
    P.validate(prog)


VCONV = P.VECTOR_ENCODINGS[P.VCONV]
VBIN = P.VECTOR_ENCODINGS[P.VBIN]


@pytest.mark.parametrize("field,value,problem", [
    ("dtype", 2, "(vconv).dtype: 2 is outside [0, 1]"),  # s32 as the destination
    ("dtype", 3, "(vconv).dtype: 3 is outside [0, 1]"),  # s64 as the destination
    ("src_dtype", 4, "(vconv).src_dtype: 4 is outside [0, 3]"),
    ("mask", 64, "(vconv).mask: 64 is outside [1, 32]"),  # an s64 source: 32 per repeat
], ids=["s32_destination", "s64_destination", "unknown_source", "mask_beyond_32"])
def test_program_validation_refuses_an_integer_vconv_destination(tmp_path, field, value, problem):
    prog = _vconv_kernel_program()
    bad = _with_word(prog, P.VCONV, getattr(VCONV, field), value)
    with pytest.raises(P.InvalidField, match=re.escape(problem)):
        P.validate(bad)
    # the offline model is refused at load, with a valid checksum
    path = tmp_path / "p.om"
    prog.save(path)
    header, arrays = read_om(path)
    code, offsets = arrays["k0_code"].copy(), arrays["k0_offsets"]
    (start,) = [int(a) for a in offsets[:-1] if code[a] == P.VCONV]
    code[start + getattr(VCONV, field)] = value
    arrays["k0_code"] = code
    write_om(path, header, arrays)
    with pytest.raises(AssemblyError) as info:
        Program.load(path)
    text = str(info.value)
    assert "\n" not in text and text.startswith(f"{path}: invalid offline model: "), text
    assert problem in text, text


@pytest.mark.parametrize("value", [2, 3], ids=["s32", "s64"])
def test_program_validation_refuses_an_integer_vadd(value):
    prog = assemble(parse_npu_mlir("""
npu.program @p gm_size 1024 {
  npu.input "x" at 0 : tensor<64xf32>
  npu.output "y" at 256 : tensor<64xf32>
  npu.kernel @k {
    %gx = npu.ptr gm 0
    %gy = npu.ptr gm 256
    %u = npu.ptr ub 0
    npu.dma mte2 %u, %gx len 256 : !npu.ptr<ub>, !npu.ptr<gm>
    npu.set_flag mte2 -> v event 0
    npu.wait_flag mte2 -> v event 0
    npu.vadd f32 %u, %u, %u repeat 1 : !npu.ptr<ub>, !npu.ptr<ub>, !npu.ptr<ub>
    npu.set_flag v -> mte3 event 0
    npu.wait_flag v -> mte3 event 0
    npu.dma mte3 %gy, %u len 256 : !npu.ptr<gm>, !npu.ptr<ub>
  }
  npu.launch @k block_dim 1 stream 0
}"""))
    P.validate(prog)
    x = np.linspace(-1, 1, 64).astype(np.float32)
    np.testing.assert_array_equal(simulate(prog, {"x": x}).outputs["y"], x + x)
    with pytest.raises(P.InvalidField, match=re.escape(f"(vbinary).dtype: {value} is outside [0, 1]")):
        P.validate(_with_word(prog, P.VBIN, VBIN.dtype, value))


# ---------------------------------------------------------------------------
# Rows a mask fills entirely (force_fp16: the sentinel saturates, not -inf)
# ---------------------------------------------------------------------------


def _query_key_masked_softmax(shared: bool):
    """DeBERTa's attention mask: mask[:, None, :] * mask[:, :, None] as bools,
    masked_fill(~mask, finfo(f32).min) of the scores, softmax. A padded
    query's row is all finfo.min: in fp32 its softmax is uniform. `shared`:
    the bool mask feeds two wheres (DeBERTa's layers share it)."""
    nodes = [
        helper.make_node("Unsqueeze", ["mask", "ax1"], ["mk"]),
        helper.make_node("Unsqueeze", ["mask", "ax2"], ["mq"]),
        helper.make_node("Mul", ["mk", "mq"], ["m2"]),
        helper.make_node("Unsqueeze", ["m2", "ax1"], ["m4"]),
        helper.make_node("Cast", ["m4"], ["mb"], to=TensorProto.BOOL),
        helper.make_node("Not", ["mb"], ["off"]),
        helper.make_node("Where", ["off", "big", "s"], ["w"], name="masked_fill"),
        helper.make_node("Softmax", ["w"], ["y" if not shared else "p"], axis=-1, name="softmax"),
    ]
    if shared:
        nodes += [
            helper.make_node("Where", ["off", "big", "p"], ["w2"], name="masked_fill2"),
            helper.make_node("Softmax", ["w2"], ["y"], axis=-1, name="softmax2"),
        ]
    inits = {"ax1": np.array([1], np.int64), "ax2": np.array([2], np.int64), "big": np.array(BIG)}
    return _model(nodes, {"s": SCORES, "mask": ATTENTION_MASK}, inits)


@pytest.mark.parametrize("precision", MODES)
@pytest.mark.parametrize("shared", [False, True], ids=["one-where", "shared-mask"])
def test_rows_the_mask_fills_entirely_stay_uniform(precision, shared):
    """force_fp16 stores finfo(f32).min as fp16's most negative finite value
    (fp16_scaling.saturate_to_fp16; an AI-CPU where clamps its fp16 result
    the same way), not -inf: a padded query's row of equal values has the
    uniform softmax fp32 gives, where -inf - -inf made it NaN (DeBERTa-v2
    in force_fp16 was NaN everywhere, its NaN spreading through the values
    of the next layer). The int64 product of the mask runs on the AI CPU
    (integer arithmetic); the bool mask two wheres share is computed again
    in each where's fusion (MaskWhereFusionPass), on the AI core."""
    model = _query_key_masked_softmax(shared)
    feeds = {"s": SCORES, "mask": ATTENTION_MASK}
    compiled = compile_module(import_model(model, source="test"), precision)
    assert compiled.aicpu == 1, compiled.kernel_kinds  # the int64 Mul
    got = np.asarray(run_compiled(compiled, feeds).outputs["y"])
    want = onnxruntime_outputs(model, feeds)["y"]
    got = got.reshape(want.shape)
    assert not np.isnan(got).any()
    padded = want[0, :, VALID:, :]
    assert np.allclose(padded, 1.0 / S)  # the reference: uniform rows
    check = CRITERIA[precision].check(got, want)
    assert check.ok, check
