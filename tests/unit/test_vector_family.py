"""The vector kernel family end to end (lowering/graph_to_tile/vector.py):
row-major elementwise ops and fusions with broadcasting, softmax /
log_softmax, layer_norm and trailing-axis reductions compiled for the npu
backend, simulated, and compared with onnxruntime in both precision modes
(gedialects/numerics.py's criteria).

Every case also checks where the op ran: `ge.kernel = "vector"` after
graph-partition and no AI-CPU task (or, for the refusals at the end, the AI
CPU with the reason the vector family gives). Inputs are standard normal
scaled so the ops are exercised away from their trivial regions (softmax
neither uniform nor one-hot), and every reference is checked not to be
constant.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from gedialects.frontend.onnx_import import import_model
from gedialects.numerics import assert_close
from gedialects.zoo import onnxruntime_outputs
from lowering.pipeline import compile_module, run_compiled

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

RNG = np.random.default_rng(2024)


@pytest.fixture(autouse=True)
def _seeded(request):
    """Each test draws from its own seed (its name): the data do not depend
    on which tests ran before it in the same process (pytest-xdist)."""
    global RNG
    RNG = np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))
PRECISIONS = ["must_keep_origin_dtype", "force_fp16"]
F = TensorProto.FLOAT
PLACED = ("graph.constant", "graph.fill", "func.return")


def rand(*shape, scale=1.0, positive=False):
    x = RNG.standard_normal(shape) * scale
    if positive:
        x = np.abs(x) + 0.25
    return x.astype(np.float32)


def model(nodes, feeds, inits=None, outputs=("y",), opset=17):
    graph = helper.make_graph(
        nodes,
        "vector",
        [helper.make_tensor_value_info(n, F, a.shape) for n, a in feeds.items()],
        [helper.make_tensor_value_info(o, F, None) for o in outputs],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in (inits or {}).items()],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def placements(module) -> list[tuple[str, str | None, str | None, str | None]]:
    """(op, ge.kernel, ge.engine, ge.reason) of every op graph-partition placed."""
    out = []
    for op in module.walk():
        if not op.name.startswith("graph.") or op.name in PLACED or op.parent_op() is None:
            continue
        if op.parent_op().name == "graph.fusion":
            continue
        attr = lambda k: getattr(op.attributes.get(k), "data", None)  # noqa: E731
        out.append((op.name, attr("ge.kernel"), attr("ge.engine"), attr("ge.reason")))
    return out


def run(m, feeds, precision, fuse=True, trivial_ok=False):
    """Compile for the npu, simulate, compare with onnxruntime; (compiled, placements).
    `trivial_ok`: the reference may be constant (a softmax over one element)."""
    placed = []

    def dump(stage, module):
        if stage == "partition":
            placed.extend(placements(module))

    compiled = compile_module(import_model(m, {}, source="test"), precision=precision, fuse=fuse, dump=dump)
    result = run_compiled(compiled, feeds)
    want = onnxruntime_outputs(m, feeds)
    for name, value in want.items():
        finite = value[np.isfinite(value)]
        assert finite.size, f"{name}: no finite reference value"
        if value.size > 1 and not trivial_ok:
            assert np.ptp(finite) > 1e-3 * np.abs(finite).max(), f"{name}: a trivial reference"
        assert_close(result.outputs[name].reshape(value.shape), value, precision, err_msg=name)
    return compiled, placed


def on_vector(compiled, placed, ops=None, fusion=None):
    """Every placed op (or those named in `ops`) is a vector kernel; no AI-CPU task."""
    assert "aicpu" not in compiled.kernel_kinds, (compiled.kernel_kinds, placed)
    assert placed, "nothing was placed"
    for name, kernel, engine, reason in placed:
        if ops is None or name in ops:
            assert engine != "AI_CPU" and kernel == "vector", (name, kernel, reason)
    if ops is not None:
        assert {n for n, *_ in placed} >= set(ops), placed
    if fusion is not None:
        assert [n for n, *_ in placed].count("graph.fusion") == fusion, placed


def vector(m, feeds, precision, ops=None, fusion=None, fuse=True):
    compiled, placed = run(m, feeds, precision, fuse)
    on_vector(compiled, placed, ops, fusion)
    return compiled, placed


def node(op, inputs, **attrs):
    return helper.make_node(op, inputs, ["y"], **attrs)


precisions = pytest.mark.parametrize("precision", PRECISIONS, ids=["fp32", "fp16"])


# ----------------------------------------------------------------- unary ops

# (id, node, opset, input scale, positive inputs)
UNARY = [
    ("sigmoid", node("Sigmoid", ["x"]), 17, 3.0, False),
    ("tanh", node("Tanh", ["x"]), 17, 2.0, False),
    ("erf", node("Erf", ["x"]), 17, 1.5, False),
    ("gelu", node("Gelu", ["x"]), 20, 2.0, False),
    ("gelu-tanh", node("Gelu", ["x"], approximate="tanh"), 20, 2.0, False),
    ("sqrt", node("Sqrt", ["x"]), 17, 2.0, True),
    ("exp", node("Exp", ["x"]), 17, 1.5, False),
    ("log", node("Log", ["x"]), 17, 2.0, True),
    ("neg", node("Neg", ["x"]), 17, 1.0, False),
    ("abs", node("Abs", ["x"]), 17, 1.0, False),
    ("reciprocal", node("Reciprocal", ["x"]), 17, 1.0, True),
    ("relu", node("Relu", ["x"]), 17, 1.0, False),
    ("leaky_relu", node("LeakyRelu", ["x"], alpha=0.1), 17, 1.0, False),
    ("clip", node("Clip", ["x", "lo", "hi"]), 17, 2.0, False),
    ("relu6", node("Clip", ["x", "zero", "six"]), 17, 4.0, False),
    ("clip-min", node("Clip", ["x", "lo"]), 17, 2.0, False),
    ("clip-max", node("Clip", ["x", "", "hi"]), 17, 2.0, False),
    ("hard_sigmoid", node("HardSigmoid", ["x"], alpha=0.3, beta=0.4), 17, 3.0, False),
    ("hard_swish", node("HardSwish", ["x"]), 17, 4.0, False),
    ("softplus", node("Softplus", ["x"]), 17, 4.0, False),
]
CLIP = {"lo": np.float32(-0.75), "hi": np.float32(1.25), "zero": np.float32(0.0), "six": np.float32(6.0)}
# ranks 1 to 5, batch > 1; every row a whole number of 32-byte blocks in fp16
UNARY_SHAPES = {1: (96,), 2: (4, 48), 3: (2, 6, 16), 4: (2, 3, 4, 16), 5: (2, 2, 3, 2, 16)}


@precisions
@pytest.mark.parametrize("case", UNARY, ids=[c[0] for c in UNARY])
def test_unary(case, precision):
    name, n, opset, scale, positive = case
    rank = 1 + UNARY.index(case) % 5
    x = rand(*UNARY_SHAPES[rank], scale=scale, positive=positive)
    inits = {k: v for k, v in CLIP.items() if k in n.input}
    vector(model([n], {"x": x}, inits, opset=opset), {"x": x}, precision)


# ---------------------------------------------------------------- binary ops

# (id, op, a shape, b shape); b may be the smaller one or the larger one
BROADCASTS = [
    ("same", "Add", (4, 32), (4, 32)),
    ("row", "Mul", (6, 32), (32,)),
    ("row-first", "Sub", (32,), (6, 32)),
    ("column", "Sub", (8, 48), (8, 1)),
    ("column-first", "Div", (8, 1), (8, 48)),
    ("mask", "Add", (2, 4, 16, 16), (2, 1, 1, 16)),
    ("per-head", "Mul", (2, 16, 8, 16), (1, 16, 1, 1)),
    ("middle", "Max", (2, 3, 4, 16), (2, 1, 4, 16)),
    ("outer", "Min", (3, 1, 32), (1, 4, 32)),
    ("rank5", "Add", (2, 2, 3, 8, 16), (1, 2, 1, 8, 1)),  # a column, not contiguous per tile
    ("rank1", "Div", (64,), (64,)),
]


@precisions
@pytest.mark.parametrize("case", BROADCASTS, ids=[c[0] for c in BROADCASTS])
def test_binary_broadcast(case, precision):
    _, op, a, b = case
    feeds = {"a": rand(*a), "b": rand(*b, positive=op == "Div")}
    vector(model([node(op, ["a", "b"])], feeds), feeds, precision)


@precisions
@pytest.mark.parametrize("op,first", [
    ("Add", False), ("Add", True), ("Sub", False), ("Sub", True), ("Mul", True),
    ("Div", False), ("Div", True), ("Max", False), ("Min", True),
])
def test_binary_scalar_constant(op, first, precision):
    x = rand(3, 64, positive=op == "Div" and first)
    c = np.float32(0.75) if op != "Div" else np.float32(2.5)
    inputs = ["c", "x"] if first else ["x", "c"]
    vector(model([node(op, inputs)], {"x": x}, {"c": c}), {"x": x}, precision)


@precisions
def test_binary_tensor_constant_operands(precision):
    # a per-column constant row and a constant column, not single numbers
    x = rand(16, 32)
    inits = {"w": rand(32), "b": rand(16, 1)}
    nodes = [helper.make_node("Mul", ["x", "w"], ["t"]), node("Add", ["b", "t"])]
    vector(model(nodes, {"x": x}, inits), {"x": x}, precision)


@precisions
@pytest.mark.parametrize("exponent", [2.0, 3.0, 0.5, 1.7])
def test_pow_constant(exponent, precision):
    positive = exponent not in (2.0, 3.0)
    x = rand(4, 32, scale=1.5, positive=positive)
    m = model([node("Pow", ["x", "e"])], {"x": x}, {"e": np.float32(exponent)})
    vector(m, {"x": x}, precision)


@precisions
def test_pow_tensor_exponent(precision):
    feeds = {"x": rand(4, 32, positive=True), "e": rand(4, 32, scale=0.7)}
    vector(model([node("Pow", ["x", "e"])], feeds), feeds, precision)


@precisions
def test_sum_of_three(precision):
    feeds = {"a": rand(16, 32), "b": rand(32), "c": rand(16, 1)}
    vector(model([node("Sum", ["a", "b", "c"])], feeds), feeds, precision)


# ------------------------------------------------------------------- where


@precisions
@pytest.mark.parametrize("fill", [-np.inf, -1e4, 2.5], ids=["-inf", "-1e4", "2.5"])
def test_where_constant_mask(fill, precision):
    S = 16
    x = rand(2, 2, S, S, scale=2.0)
    inits = {"mask": np.tril(np.ones((S, S), bool)), "fill": np.float32(fill)}
    vector(model([node("Where", ["mask", "x", "fill"])], {"x": x}, inits), {"x": x}, precision)


@precisions
def test_where_large_negative_fill_then_softmax(precision):
    # -1e9 is beyond fp16: stored as -inf, exp(-inf) = 0 is still the answer
    S = 16
    x = rand(1, 2, S, S, scale=2.0)
    inits = {"mask": np.tril(np.ones((S, S), bool)), "fill": np.float32(-1e9)}
    nodes = [helper.make_node("Where", ["mask", "x", "fill"], ["m"]), node("Softmax", ["m"], axis=-1)]
    vector(model(nodes, {"x": x}, inits), {"x": x}, precision)




# ---------------------------------------------------------------- fusions


FUSIONS = {
    # Mul -> Add -> Sigmoid -> Mul (a gated unit), per-column and per-row constants
    "gate": (
        [
            helper.make_node("Mul", ["x", "w"], ["a"]),
            helper.make_node("Add", ["a", "b"], ["s"]),
            helper.make_node("Sigmoid", ["s"], ["g"]),
            node("Mul", ["g", "x"]),
        ],
        {"x": (2, 16, 32)},
        {"w": (32,), "b": (16, 1)},
    ),
    # the tanh gelu written out as exporters emit it, plus a per-column constant:
    # graph-fuse recognises the gelu, then loop-fuses it with the Mul
    "gelu-decomposed": (
        [
            helper.make_node("Mul", ["x", "x"], ["x2"]),
            helper.make_node("Mul", ["x2", "x"], ["x3"]),
            helper.make_node("Mul", ["x3", "k"], ["c"]),
            helper.make_node("Add", ["x", "c"], ["i"]),
            helper.make_node("Mul", ["i", "r"], ["j"]),
            helper.make_node("Tanh", ["j"], ["t"]),
            helper.make_node("Add", ["t", "one"], ["u"]),
            helper.make_node("Mul", ["x", "half"], ["h"]),
            helper.make_node("Mul", ["h", "u"], ["v"]),
            node("Mul", ["v", "w"]),
        ],
        {"x": (4, 64)},
        {"w": (64,)},
    ),
    # two activations and a broadcast mask: x * sigmoid(z) / d + mask
    "two-inputs": (
        [
            helper.make_node("Sigmoid", ["z"], ["s"]),
            helper.make_node("Mul", ["x", "s"], ["p"]),
            helper.make_node("Div", ["p", "d"], ["q"]),
            node("Add", ["q", "m"]),
        ],
        {"x": (2, 4, 16, 16), "z": (2, 4, 16, 16), "m": (2, 1, 1, 16)},
        {"d": ()},
    ),
    # exp/log/pow chain, constant first
    "exp-log": (
        [
            helper.make_node("Abs", ["x"], ["a"]),
            helper.make_node("Add", ["one", "a"], ["b"]),
            helper.make_node("Log", ["b"], ["l"]),
            helper.make_node("Pow", ["b", "half"], ["p"]),
            helper.make_node("Sub", ["l", "p"], ["s"]),
            node("Exp", ["s"]),
        ],
        {"x": (3, 5, 32)},
        {},
    ),
}
FUSION_CONSTS = {"k": 0.044715, "r": 0.7978845608, "one": 1.0, "half": 0.5}


@precisions
@pytest.mark.parametrize("name", list(FUSIONS))
def test_fused_chain(name, precision):
    nodes, inputs, params = FUSIONS[name]
    feeds = {k: rand(*s, scale=1.5) for k, s in inputs.items()}
    inits = {k: rand(*s, positive=True) if k == "d" else rand(*s) for k, s in params.items()}
    used = {i for n in nodes for i in n.input}
    inits |= {k: np.float32(v) for k, v in FUSION_CONSTS.items() if k in used}
    vector(model(nodes, feeds, inits), feeds, precision, fusion=1)


@precisions
def test_large_activations_are_scaled(precision):
    # values beyond force_fp16's 2^8 calibration target: scaled kernels
    x = rand(16, 64)
    nodes = [
        helper.make_node("Mul", ["x", "big"], ["a"]),
        helper.make_node("Add", ["a", "b"], ["c"]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("Softmax", ["x"], ["s"]),
        helper.make_node("ReduceMax", ["r", "axes"], ["y"], keepdims=1),
        helper.make_node("ReduceMean", ["c", "axes"], ["w"], keepdims=0),
        helper.make_node("LayerNormalization", ["c", "g"], ["n"]),
        helper.make_node("Mul", ["s", "r"], ["z"]),
    ]
    inits = {"big": np.float32(3000.0), "b": rand(64, scale=500.0), "axes": np.array([-1], np.int64), "g": rand(64) + 1.0}
    m = model(nodes, {"x": x}, inits, outputs=("y", "w", "n", "z"), opset=18)
    vector(m, {"x": x}, precision, fuse=False)


@precisions
@pytest.mark.parametrize("op", ["Tanh", "Erf", "Gelu", "GeluTanh", "Sigmoid", "Softplus", "HardSwish"])
def test_saturating_unary_ops_far_out(op, precision):
    # |x| up to 100: the expansions of tanh / erf / gelu / softplus must not overflow to NaN
    x = np.linspace(-100, 100, 256, dtype=np.float32).reshape(4, 64)
    n = node("Gelu", ["x"], approximate="tanh") if op == "GeluTanh" else node(op, ["x"])
    vector(model([n], {"x": x}, opset=20), {"x": x}, precision)


# ----------------------------------------------------------------- softmax


@precisions
@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("shape,axis", [
    ((1, 4, 16, 16), -1),       # attention scores [1, H, S, S]
    ((2, 3, 32), 2),            # batch 2, positive axis
    ((2, 4096), -1),            # rows longer than 2048 elements
    ((1, 2, 3008, 1), 2),       # along the last non-unit axis
    ((64,), 0),                 # rank 1
], ids=["attention", "batch2", "long-rows", "unit-tail", "rank1"])
def test_softmax(op, shape, axis, precision):
    x = rand(*shape, scale=2.0)
    m = model([node(op, ["x"], axis=axis)], {"x": x})
    name = f"graph.{'softmax' if op == 'Softmax' else 'log_softmax'}"
    if len(shape) == 1 and precision == "must_keep_origin_dtype":
        compiled, placed = run(m, {"x": x}, precision)  # one row: the CNN softmax pattern takes it
        assert "aicpu" not in compiled.kernel_kinds and all(p[2] is None for p in placed), placed
    else:
        vector(m, {"x": x}, precision, ops=(name,))
    if op == "Softmax":
        y = onnxruntime_outputs(m, {"x": x})["y"]
        peaks = np.median(np.max(y, axis=axis))  # a typical row: neither one-hot nor uniform
        assert 2 / shape[axis] < peaks < 0.9 and y.min() < 0.2 / shape[axis]


# -------------------------------------------------------------- layer norm


@precisions
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no-bias"])
@pytest.mark.parametrize("eps", [1e-12, 1e-5])
@pytest.mark.parametrize("shape", [(2, 8, 64), (4, 768)], ids=["rank3", "bert-row"])
def test_layer_norm(shape, eps, bias, precision):
    D = shape[-1]
    x = rand(*shape, scale=2.0) + 0.5
    inits = {"g": rand(D) + 1.0}
    ins = ["x", "g"]
    if bias:
        inits["b"] = rand(D)
        ins.append("b")
    m = model([node("LayerNormalization", ins, axis=-1, epsilon=eps)], {"x": x}, inits)
    vector(m, {"x": x}, precision, ops=("graph.layer_norm",))


@precisions
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no-bias"])
def test_layer_norm_with_residual(bias, precision):
    # x + h, then layer_norm: graph-fuse gives the layer_norm the residual
    feeds = {"x": rand(2, 16, 128, scale=2.0), "h": rand(2, 16, 128)}
    inits = {"g": rand(128) + 1.0, "b": rand(128)}
    ins = ["s", "g", "b"] if bias else ["s", "g"]
    nodes = [helper.make_node("Add", ["x", "h"], ["s"]), node("LayerNormalization", ins, axis=-1, epsilon=1e-12)]
    vector(model(nodes, feeds, inits), feeds, precision, ops=("graph.layer_norm",))


@precisions
def test_layer_norm_over_two_axes(precision):
    x = rand(2, 4, 8, 16, scale=2.0)
    inits = {"g": rand(8, 16) + 1.0, "b": rand(8, 16)}
    m = model([node("LayerNormalization", ["x", "g", "b"], axis=2, epsilon=1e-5)], {"x": x}, inits)
    vector(m, {"x": x}, precision)


# -------------------------------------------------------------- reductions


def reduce_model(op, x, axes, keepdims=1):
    # opset 18: the axes are an input
    return model([node(op, ["x", "axes"], keepdims=keepdims)], {"x": x}, {"axes": np.array(axes, np.int64)}, opset=18)


@precisions
@pytest.mark.parametrize("keepdims", [0, 1])
@pytest.mark.parametrize("op", ["ReduceMean", "ReduceSum", "ReduceMax"])
@pytest.mark.parametrize("shape,axes", [
    ((16, 64), [-1]),
    ((2, 8, 4, 16), [-1]),
    ((2, 8, 4, 16), [2, 3]),
    ((16, 3, 32), [-2, -1]),
    ((2, 2, 4, 2, 16), [-1]),
], ids=["rank2-last", "rank4-last", "rank4-last2", "rank3-last2", "rank5-last"])
def test_reduce(op, keepdims, shape, axes, precision):
    x = rand(*shape) + (0.5 if op == "ReduceMean" else 0.0)
    vector(reduce_model(op, x, axes, keepdims), {"x": x}, precision, ops=(f"graph.reduce_{op[6:].lower()}",))


@pytest.mark.parametrize("rows,cols,precision", [
    (32, 2032, "force_fp16"),
    (16, 3072, "must_keep_origin_dtype"),  # rows of more than 255 blocks: folded to narrower rows first
    (32, 3072, "force_fp16"),  # a tile of fewer rows than a block of results: a padded store
    (16, 20000, "must_keep_origin_dtype"),
])
def test_reduce_long_rows_fp64_reference(rows, cols, precision):
    # a long sum against float64: the criterion of the mode, on the exact sum
    x = rand(rows, cols) + 0.3
    m = reduce_model("ReduceSum", x, [-1], keepdims=0)
    placed = []
    compiled = compile_module(import_model(m, {}, source="test"), precision=precision,
                              dump=lambda s, mod: placed.extend(placements(mod)) if s == "partition" else None)
    on_vector(compiled, placed)
    got = run_compiled(compiled, {"x": x}).outputs["y"].reshape(rows)
    assert_close(got, x.astype(np.float64).sum(-1), precision)


# -------------------------------------------------------- a transformer block


@precisions
def test_attention_block(precision):
    # scores -> scale -> mask -> softmax, a residual layer_norm and a gelu:
    # every row-major op of an encoder layer on the AI core
    B, H, S, D = 2, 2, 16, 32
    feeds = {"s": rand(B, H, S, S, scale=3.0), "x": rand(B, S, D), "h": rand(B, S, D)}
    inits = {"scale": np.float32(0.5), "mask": np.where(RNG.random((B, 1, 1, S)) < 0.25, -1e4, 0.0).astype(np.float32),
             "g": rand(D) + 1.0, "b": rand(D)}
    nodes = [
        helper.make_node("Mul", ["s", "scale"], ["a"]),
        helper.make_node("Add", ["a", "mask"], ["am"]),
        helper.make_node("Softmax", ["am"], ["p"], axis=-1),
        helper.make_node("Add", ["x", "h"], ["r"]),
        helper.make_node("LayerNormalization", ["r", "g", "b"], ["n"], epsilon=1e-12),
        helper.make_node("Gelu", ["n"], ["y"]),
    ]
    vector(model(nodes, feeds, inits, outputs=("p", "y"), opset=20), feeds, precision)


# ---------------------------------------------------------------- refusals


def refused(m, feeds, precision, op, reason):
    """op goes to the AI CPU saying `reason`; the model still matches onnxruntime."""
    compiled, placed = run(m, feeds, precision)
    assert compiled.kernel_kinds.get("aicpu", 0) >= 1, compiled.kernel_kinds
    mine = [p for p in placed if p[0] == op]
    assert mine and all(p[2] == "AI_CPU" and p[1] is None for p in mine), placed
    assert all(reason in p[3] for p in mine), mine


@precisions
def test_softmax_rows_that_are_not_whole_blocks(precision):
    # 20 floats: 80 bytes in fp32, 40 in fp16 -- never whole 32-byte blocks:
    # padded DMA (the UB side of each row is whole blocks), the softmax over
    # the 20 valid elements only
    x = rand(3, 20, scale=2.0)
    vector(model([node("Softmax", ["x"], axis=-1)], {"x": x}), {"x": x}, precision, ops=("graph.softmax",))


@precisions
def test_elementwise_rows_that_are_not_whole_blocks(precision):
    feeds = {"x": rand(3, 20), "b": rand(20)}
    vector(model([node("Add", ["x", "b"])], feeds), feeds, precision, ops=("graph.add",))


@precisions
def test_half_block_rows(precision):
    # 8 floats are a block in fp32 but half a block in fp16
    x = rand(6, 8, scale=2.0)
    vector(model([node("Softmax", ["x"], axis=-1)], {"x": x}), {"x": x}, precision, ops=("graph.softmax",))


@precisions
def test_refuses_log_softmax_over_one_element(precision):
    # [1, 1, 3, 1] along its last (unit) axis: a reduction over one element
    # (found by the differential fuzzer once rows of any length were lowered)
    x = rand(1, 1, 3, 1, scale=2.0)
    m = model([node("LogSoftmax", ["x"], axis=-1)], {"x": x})
    compiled, placed = run(m, {"x": x}, precision, trivial_ok=True)
    mine = [p for p in placed if p[0] == "graph.log_softmax"]
    assert mine and all(p[2] == "AI_CPU" and "a reduction over one element" in p[3] for p in mine), placed


@precisions
def test_softmax_over_one_element_is_exp_of_zero(precision):
    # the same shape: graph-canonicalize writes the softmax as exp(x - x), a
    # map of the vector unit (1, or NaN where x is infinite, as softmax gives)
    x = rand(1, 1, 3, 1, scale=2.0)
    x[0, 0, 1, 0] = -np.inf
    compiled, placed = run(model([node("Softmax", ["x"], axis=-1)], {"x": x}), {"x": x}, precision, trivial_ok=True)
    assert all(p[2] != "AI_CPU" for p in placed) and not any(p[0] == "graph.softmax" for p in placed), placed


@precisions
@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
def test_refuses_softmax_along_a_middle_axis(op, precision):
    x = rand(2, 16, 32, scale=2.0)
    name = "graph.softmax" if op == "Softmax" else "graph.log_softmax"
    refused(model([node(op, ["x"], axis=1)], {"x": x}), {"x": x}, precision, name,
            "softmax along axis 1 of 2x16x32 is not along the last non-unit dim")


@precisions
@pytest.mark.parametrize("op,axes", [("ReduceMean", [1]), ("ReduceSum", [0, 2]), ("ReduceMax", [1])])
def test_reduction_over_non_trailing_axes_after_a_transpose(op, axes, precision):
    """The vector kernel reduces trailing axes; graph-decompose moves the
    others last with a transpose first."""
    x = rand(4, 16, 32) + 0.5
    compiled, placed = run(reduce_model(op, x, axes), {"x": x}, precision)
    assert "aicpu" not in compiled.kernel_kinds, (compiled.kernel_kinds, placed)
    kernels = {name: kernel for name, kernel, *_ in placed}
    assert kernels[f"graph.reduce_{op[6:].lower()}"] == "vector", placed
    assert kernels["graph.transpose"] in ("cube", "vector"), placed  # an identity product, or rows moved


@precisions
def test_a_fusion_with_two_results(precision):
    """Gemma's scaled embedding feeding the residual and its own square
    (RMSNorm): one fusion, two results of one shape, a map each."""
    feeds = {"x": rand(1, 16, 64)}
    nodes = [helper.make_node("Mul", ["x", "k"], ["h"]), helper.make_node("Pow", ["h", "two"], ["sq"]),
             helper.make_node("ReduceMean", ["sq", "axes"], ["ms"], keepdims=1),
             helper.make_node("Add", ["h", "ms"], ["y"])]
    inits = {"k": np.float32(8.0), "two": np.float32(2.0), "axes": np.array([-1], np.int64)}
    compiled, placed = vector(model(nodes, feeds, inits, opset=18), feeds, precision, ops=("graph.fusion",))
    assert compiled.kernel_kinds.get("vector", 0) >= 1, compiled.kernel_kinds


@precisions
def test_refuses_a_broadcast_residual(precision):
    feeds = {"x": rand(2, 16, 64, scale=2.0), "h": rand(16, 64)}
    inits = {"g": rand(64) + 1.0, "b": rand(64)}
    nodes = [helper.make_node("Add", ["x", "h"], ["s"]), node("LayerNormalization", ["s", "g", "b"], axis=-1)]
    compiled, placed = run(model(nodes, feeds, inits), feeds, precision)
    # either the residual stays an add (both vector kernels) or a refused fused layer_norm
    assert [p for p in placed if p[0] == "graph.layer_norm"], placed


@precisions
def test_a_short_broadcast_column(precision):
    # a [4, 1] operand is 16 (fp32) or 8 (fp16) bytes: less than a 32-byte block
    feeds = {"x": rand(4, 32), "c": rand(4, 1)}
    vector(model([node("Add", ["x", "c"])], feeds), feeds, precision, ops=("graph.add",))


@precisions
@pytest.mark.parametrize("op,rows", [("ReduceMean", 4), ("ReduceMax", 4), ("ReduceMean", 8)])
def test_a_short_reduction_result(op, rows, precision):
    # 4 row results are 16 (fp32) or 8 (fp16) bytes, 8 in fp16 half a block: a padded store
    x = rand(rows, 64) + 0.5
    vector(reduce_model(op, x, [-1], keepdims=1), {"x": x}, precision, ops=(f"graph.reduce_{op[6:].lower()}",))


@precisions
def test_a_computed_mask_fuses_into_its_where(precision):
    # a comparison's i1 is fused with the where that reads it (MaskWhereFusionPass):
    # no bool tensor between kernels, the vector unit selects on the 0/1 mask
    feeds = {"x": rand(4, 64), "t": rand(64)}
    nodes = [
        helper.make_node("Greater", ["x", "t"], ["c"]),
        helper.make_node("Mul", ["x", "two"], ["d"]),
        node("Where", ["c", "d", "x"]),
    ]
    m = model(nodes, feeds, {"two": np.float32(2.0)})
    compiled, placed = vector(m, feeds, precision)
    assert [p[0] for p in placed if p[0] in ("graph.greater", "graph.where")] == [], placed  # inside a fusion


@precisions
def test_refuses_a_stored_bool(precision):
    # a comparison read by something other than a where would store a bool
    # tensor (a byte per element): the vector family refuses bool results
    feeds = {"x": rand(4, 64), "t": rand(64)}
    nodes = [helper.make_node("Greater", ["x", "t"], ["c"]), helper.make_node("Not", ["c"], ["y"])]
    m = helper.make_model(helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info(k, TensorProto.FLOAT, v.shape) for k, v in feeds.items()],
        [helper.make_tensor_value_info("y", TensorProto.BOOL, None)]), opset_imports=[helper.make_opsetid("", 17)])
    compiled = compile_module(import_model(m, {}, source="test"), precision=precision)
    assert compiled.kernel_kinds.get("aicpu", 0) >= 1, compiled.kernel_kinds
    got = run_compiled(compiled, feeds).outputs["y"]
    assert np.array_equal(got, onnxruntime_outputs(m, feeds)["y"])


@precisions
@pytest.mark.parametrize("keepdims", [0, 1])
def test_a_reduction_to_one_number(keepdims, precision):
    # one result element (4 or 2 bytes): a padded store of less than a block
    x = rand(8, 64) + 0.5
    vector(reduce_model("ReduceMean", x, [0, 1], keepdims), {"x": x}, precision, ops=("graph.reduce_mean",))


@precisions
def test_a_fusion_with_a_graph_output_inside(precision):
    # graph-fuse yields an intermediate that is also a graph output: a map per result
    x = rand(4, 64)
    m = model([helper.make_node("Sigmoid", ["x"], ["s"]), node("Mul", ["s", "x"])], {"x": x}, outputs=("s", "y"))
    vector(m, {"x": x}, precision, ops=("graph.fusion",), fusion=1)


@precisions
@pytest.mark.parametrize("op", ["Mul", "Pow", "Max"])
def test_same_operand_twice(op, precision):
    # one load of x serves both operands
    x = rand(4, 64, positive=op == "Pow")
    vector(model([node(op, ["x", "x"])], {"x": x}), {"x": x}, precision)
