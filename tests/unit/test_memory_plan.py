"""graph-plan-memory: verifier, bounds and numerics on random DAGs, the light
models' ratios to the lower bound, a corrupted plan, and device-memory limits.

The numerical oracle is `run_planned`, which keeps every intermediate tensor
only in its arena slot: a plan that lets a write clobber a live tensor gives
different numbers from the plain interpreter.
"""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    DenseArrayBase,
    FunctionType,
    ModuleOp,
    TensorType,
    f32,
)
from xdsl.ir import Block, Region, SSAValue
from xdsl.utils.exceptions import PassFailedException

from gedialects.frontend.onnx_import import import_model
from gedialects.graph import ops as g
from gedialects.graph.interpreter import main_function, run
from gedialects.graph.memory import attributes as attrs
from gedialects.graph.memory.execute import run_planned
from gedialects.graph.memory.lifetimes import Block as MemBlock
from gedialects.graph.memory.report import memory_report, tensor_table, text_report
from gedialects.graph.memory.strategies import (
    STRATEGIES,
    STRATEGY_NAMES,
    arena_size,
    plan,
)
from gedialects.graph.memory.verify import plan_problems
from gedialects.graph.memory_ops import OffloadOp, ReloadOp
from gedialects.graph.transforms.canonicalize import GraphCanonicalizePass
from gedialects.graph.transforms.plan_memory import GraphPlanMemoryPass
from gedialects.location import name_loc
from gedialects.numerics import assert_close
from gedialects.textual import parse_module, print_module
from gedialects.zoo import (
    LIGHT_MODELS,
    light_model_path,
    onnxruntime_outputs,
    random_inputs,
)

CTX = Context()


def _plan(module: ModuleOp, **options) -> ModuleOp:
    GraphPlanMemoryPass(**options).apply(CTX, module)
    return module


def _fn(module: ModuleOp) -> func.FuncOp:
    return main_function(module)


# ------------------------------------------------------------ random DAGs

_UNARY = [g.ReluOp, g.SigmoidOp, g.TanhOp, g.NegOp, g.AbsOp]
_BINARY = [g.AddOp, g.MulOp, g.SubOp, g.MaxOp]
INPUT_TYPES = [TensorType(f32, (1, 2, 4)), TensorType(f32, (1, 3, 4))]


def _shape(v: SSAValue) -> tuple[int, ...]:
    return g.shape_of(v)


@st.composite
def dags(draw) -> ModuleOp:
    """A function of 1-14 ops over tensors <1 x c x k>: elementwise ops
    (same shape, or broadcasting a graph.fill), concats along axis 1 (pieces
    side by side: in-place candidates) or axis 2 (interleaved: copies),
    reshapes (views), two-result splits, 1x1 convs with a residual operand,
    and a few outputs."""
    block = Block(arg_types=INPUT_TYPES)
    values: list[SSAValue] = list(block.args)
    n = draw(st.integers(1, 14))
    for i in range(n):
        kind = draw(
            st.sampled_from(["unary", "binary", "binary", "fill", "concat", "concat2", "reshape", "split", "conv"])
        )
        pick = lambda: values[draw(st.integers(0, len(values) - 1))]
        if kind == "unary":
            op = draw(st.sampled_from(_UNARY)).build_inferred([pick()])
        elif kind == "binary":
            a = pick()
            same = [v for v in values if _shape(v) == _shape(a)]
            b = same[draw(st.integers(0, len(same) - 1))]
            op = draw(st.sampled_from(_BINARY)).build_inferred([a, b])
        elif kind == "fill":
            a = pick()
            fill = g.FillOp(0.5, TensorType(f32, (1, 1, _shape(a)[2])))
            block.add_op(fill)
            op = g.AddOp.build_inferred([a, fill.output])
        elif kind == "concat":
            k = _shape(pick())[2]
            same = [v for v in values if _shape(v)[2] == k]
            parts = [same[draw(st.integers(0, len(same) - 1))] for _ in range(draw(st.integers(1, 3)))]
            op = g.ConcatOp.build_inferred([parts], {"axis": g.IntegerAttr(1, 64)})
        elif kind == "concat2":
            a = pick()
            same = [v for v in values if _shape(v)[1] == _shape(a)[1]]
            b = same[draw(st.integers(0, len(same) - 1))]
            op = g.ConcatOp.build_inferred([[a, b]], {"axis": g.IntegerAttr(2, 64)})
        elif kind == "split" and _shape(values[-1])[1] >= 2:
            a = values[-1]
            c = _shape(a)[1]
            props = {"axis": g.IntegerAttr(1, 64), "split": g.int_array([1, c - 1])}
            op = g.SplitOp.build_inferred([a], props, num_results=2)
        elif kind == "conv":
            # a 1x1 conv (weights are a graph.fill) adding a residual, which it
            # may overwrite in place
            r = pick()
            _, c_out, k = _shape(r)
            same_k = [v for v in values if _shape(v)[2] == k]
            x = same_k[draw(st.integers(0, len(same_k) - 1))]
            w = g.FillOp(0.25, TensorType(f32, (c_out, _shape(x)[1], 1)))
            block.add_op(w)
            op = g.ConvOp.build_inferred([x, w.output, [], [r]])
        else:
            a = pick()
            _, c, k = _shape(a)
            target = (1, c * k // 4, 4) if (c * k) % 4 == 0 else (1, 1, c * k)
            op = g.ReshapeOp.build_inferred([a], {"shape": g.int_array(target)})
        op.location = name_loc(f"n{i}")
        block.add_op(op)
        values.extend(op.results)
    outs = [values[-1]] + [values[j] for j in draw(st.lists(st.integers(0, len(values) - 1), max_size=2))]
    block.add_op(func.ReturnOp(*outs))
    fn = func.FuncOp("main", FunctionType.from_lists(INPUT_TYPES, [o.type for o in outs]), Region(block))
    module = ModuleOp([fn])
    module.verify()
    return module


def _inputs(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {f"arg{i}": rng.standard_normal(t.get_shape()).astype(np.float32) for i, t in enumerate(INPUT_TYPES)}


FAST = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(dags(), st.sampled_from(STRATEGY_NAMES), st.sampled_from([1, 4, 32, 512]))
def test_random_dag_plans_verify_and_compute_the_same(module, strategy, alignment):
    want = run(module, _inputs())
    _plan(module, strategy=strategy, alignment=alignment)
    fn = _fn(module)
    assert plan_problems(fn) == []
    s = attrs.memory_summary(fn)
    assert s["arena_size"] >= s["lower_bound"]
    assert s["no_reuse"] >= s["lower_bound"]
    for op in fn.body.block.ops:
        for off in attrs.op_offsets(op) if "ge.offsets" in op.attributes else []:
            assert off == -1 or off % alignment == 0
    got = run_planned(module, _inputs())
    for name in want:
        np.testing.assert_array_equal(got[name], want[name])


@FAST
@given(dags(), st.floats(0.3, 0.99))
def test_random_dag_under_a_limit_fits_or_names_the_peak(module, fraction):
    want = run(module, _inputs())
    planned = attrs.arena_size(_fn(_plan(module.clone(), alignment=4)))
    limit = max(1, int(planned * fraction))
    try:
        _plan(module, alignment=4, device_memory_limit=limit)
    except PassFailedException as e:
        assert f"device-memory-limit={limit} cannot be met" in str(e)
        assert "live there:" in str(e)
        return
    fn = _fn(module)
    assert attrs.arena_size(fn) <= limit
    assert plan_problems(fn) == []
    got = run_planned(module, _inputs())
    for name in want:
        np.testing.assert_array_equal(got[name], want[name])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 9), st.integers(0, 6), st.integers(1, 8)), min_size=1, max_size=25))
def test_strategies_never_overlap_blocks_live_together(raw):
    blocks = [MemBlock(size * 64, first, first + length) for first, length, size in raw]
    live = [sum(b.size for b in blocks if b.first <= s <= b.last) for s in range(20)]
    for name, strategy in STRATEGIES.items():
        offsets = strategy(blocks)
        for i, a in enumerate(blocks):
            for j in range(i):
                b = blocks[j]
                if a.overlaps_in_time(b):
                    assert offsets[i] + a.size <= offsets[j] or offsets[j] + b.size <= offsets[i], name
        assert arena_size(blocks, offsets) >= max(live)


def test_best_fit_uses_the_gap_below_the_first_placed_block():
    # the big block is placed first, at 0; when it dies a small block can
    # take [0, 64) below a block that sits at 64
    blocks = [MemBlock(128, 0, 1), MemBlock(64, 1, 3), MemBlock(64, 2, 3)]
    offsets = STRATEGIES["greedy-by-size"](blocks)
    assert arena_size(blocks, offsets) == 192
    blocks = [MemBlock(64, 0, 0), MemBlock(64, 0, 2), MemBlock(64, 1, 2)]
    _, offsets = plan(blocks, "greedy-by-size")
    assert arena_size(blocks, offsets) == 128, offsets


# ------------------------------------------------------------ hand-made graphs

CHAIN = """
func.func @main(%x: tensor<1x4x8xf32>) -> (tensor<1x12x8xf32>) {
  %a = graph.exp %x : (tensor<1x4x8xf32>) -> tensor<1x4x8xf32> loc("a")
  %b = graph.sigmoid %x : (tensor<1x4x8xf32>) -> tensor<1x4x8xf32> loc("b")
  %c = graph.add %a, %b : (tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x8xf32> loc("c")
  %d = graph.relu %b : (tensor<1x4x8xf32>) -> tensor<1x4x8xf32> loc("d")
  %r = graph.reshape %d {shape = array<i64: 1, 4, 8>} : (tensor<1x4x8xf32>) -> tensor<1x4x8xf32> loc("r")
  %e = graph.concat %c, %r, %a {axis = 1 : i64} : (tensor<1x4x8xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x12x8xf32> loc("e")
  func.return %e : tensor<1x12x8xf32>
}
"""


def _chain(alignment: int = 128) -> ModuleOp:
    module = parse_module(CHAIN)
    return _plan(module, alignment=alignment)


def _by_name(fn: func.FuncOp) -> dict[str, dict]:
    return {row["name"]: row for row in tensor_table(fn)}


def test_views_in_place_and_concat_pieces_share_storage():
    module = _chain()
    rows = _by_name(_fn(module))
    e = rows["e"]["offset"]
    # c, d (through its view r) and a are written straight into the concat;
    # c cannot overwrite a, which the concat reads later
    assert rows["c"]["offset"] == e
    assert rows["d"]["offset"] == e + 128
    assert rows["r"]["offset"] == rows["d"]["offset"]  # a view
    assert rows["b"]["offset"] == rows["d"]["offset"]  # relu in place of b, which dies there
    assert rows["a"]["offset"] == e + 256  # the third piece
    s = attrs.memory_summary(_fn(module))
    assert s["arena_size"] == s["lower_bound"] == 384
    assert plan_problems(_fn(module)) == []


def test_accessors_for_the_lowering():
    module = _chain()
    fn = _fn(module)
    ops = {op.results[0]: op for op in fn.body.block.ops if op.results}
    e = next(v for v, op in ops.items() if isinstance(op, g.ConcatOp))
    assert attrs.tensor_offset(e) == _by_name(fn)["e"]["offset"]
    assert attrs.tensor_lifetime(e) == (5, 6)
    assert attrs.arena_size(fn) == 384
    with pytest.raises(attrs.NoPlanError):
        attrs.tensor_offset(fn.args[0])


def test_plan_survives_print_and_parse():
    module = _chain()
    text = print_module(module)
    again = parse_module(text)
    assert print_module(again) == text
    assert plan_problems(_fn(again)) == []
    assert memory_report(again) == memory_report(module)


def test_report_has_exactly_four_numbers_per_function():
    report = memory_report(_chain())
    assert set(report) == {"main"}
    assert set(report["main"]) == {"no_reuse", "lower_bound", "planned", "planned/lower_bound"}
    assert report["main"]["planned/lower_bound"] == 1.0
    json.dumps(report)
    text = text_report(_fn(_chain()))
    assert "lower bound 384" in text and "[5, 6]" in text


def test_corrupted_plan_is_caught_and_gives_wrong_numbers():
    module = _chain(alignment=128)
    want = run(parse_module(CHAIN), {"arg0": np.linspace(-1, 1, 32, dtype=np.float32).reshape(1, 4, 8)})
    fn = _fn(module)
    ops = {str(op.location): op for op in fn.body.block.ops}
    a, b = ops['loc("a")'], ops['loc("b")']
    # a and b are both alive at step 1: put b over a
    b.attributes[attrs.OFFSETS] = DenseArrayBase.from_list(g.i64, attrs.op_offsets(a))
    problems = plan_problems(fn)
    assert problems and "writes b over bytes" in problems[0] and "of a" in problems[0]
    got = run_planned(module, {"arg0": np.linspace(-1, 1, 32, dtype=np.float32).reshape(1, 4, 8)})
    assert not np.allclose(got["out0"], want["out0"])


def test_stale_plan_is_reported():
    module = _chain()
    fn = _fn(module)
    ops = list(fn.body.block.ops)
    ops[1].detach()
    fn.body.block.insert_op_before(ops[1], ops[0])  # b before a
    assert any("stale" in p for p in plan_problems(fn))


def test_replanning_replaces_the_old_plan():
    module = _chain()
    before = print_module(module)
    _plan(module, alignment=128)
    assert print_module(module) == before


def test_dynamic_shapes_are_skipped_with_a_remark(caplog):
    module = parse_module(
        """
        func.func @main(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
          %a = graph.relu %x : (tensor<?x4xf32>) -> tensor<?x4xf32>
          func.return %a : tensor<?x4xf32>
        }
        """
    )
    with caplog.at_level("INFO", logger="gedialects.plan_memory"):
        _plan(module)
    assert not attrs.has_plan(_fn(module))
    assert "not planned" in caplog.text and "dynamic shape" in caplog.text


# ------------------------------------------------------------ device-memory limit

LIMITED = """
func.func @main(%x: tensor<16x16xf32>, %w: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %a = graph.exp %x : (tensor<16x16xf32>) -> tensor<16x16xf32> loc("a")
  %m = graph.matmul %a, %w : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32> loc("m")
  %b = graph.sigmoid %x : (tensor<16x16xf32>) -> tensor<16x16xf32> loc("b")
  %c = graph.matmul %b, %w : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32> loc("c")
  %d = graph.matmul %c, %b : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32> loc("d")
  %e = graph.add %d, %a : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32> loc("e")
  %f = graph.add %e, %m : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32> loc("f")
  func.return %f : tensor<16x16xf32>
}
"""


def _limited_inputs():
    rng = np.random.default_rng(3)
    return {"arg0": rng.standard_normal((16, 16)).astype(np.float32), "arg1": rng.standard_normal((16, 16)).astype(np.float32)}


def test_limit_recomputes_cheap_producers_and_offloads_the_rest():
    want = run(parse_module(LIMITED), _limited_inputs())
    assert attrs.arena_size(_fn(_plan(parse_module(LIMITED), alignment=64))) == 5120
    module = _plan(parse_module(LIMITED), alignment=64, device_memory_limit=3072)
    fn = _fn(module)
    s = attrs.memory_summary(fn)
    assert s["arena_size"] <= 3072
    assert (s["recomputed"], s["offloaded"], s["host_bytes"]) == (1, 1, 1024)
    names = [op.name for op in fn.body.block.ops]
    assert names.count("graph.exp") == 2  # the exp is recomputed (cheap) ...
    assert "graph.offload" in names and "graph.reload" in names  # ... the matmul offloaded
    assert plan_problems(fn) == []
    got = run_planned(module, _limited_inputs())
    np.testing.assert_array_equal(got["out0"], want["out0"])
    # the rewritten graph also runs in the plain interpreter
    np.testing.assert_array_equal(run(module, _limited_inputs())["out0"], want["out0"])


def test_impossible_limit_names_the_peak_step_and_its_tensors():
    with pytest.raises(PassFailedException) as e:
        _plan(parse_module(LIMITED), alignment=64, device_memory_limit=2048)
    message = str(e.value)
    assert "device-memory-limit=2048 cannot be met" in message
    assert 'at step 5 (graph.matmul at loc("d"))' in message
    assert "b (1024 B), c (1024 B), d (1024 B)" in message


def test_limit_above_the_plan_changes_nothing():
    module = _plan(parse_module(LIMITED), alignment=64, device_memory_limit=1 << 20)
    s = attrs.memory_summary(_fn(module))
    assert (s["arena_size"], s["recomputed"], s["offloaded"]) == (5120, 0, 0)


def test_offload_ops_verify_their_host_side():
    module = parse_module(
        """
        func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
          %h = graph.offload %x : (tensor<4xf32>) -> tensor<4xf32>
          %y = graph.relu %h : (tensor<4xf32>) -> tensor<4xf32>
          func.return %y : tensor<4xf32>
        }
        """
    )
    with pytest.raises(Exception, match="can only be read by graph.reload"):
        module.verify()
    assert OffloadOp.name == "graph.offload" and ReloadOp.name == "graph.reload"


# ------------------------------------------------------------ options and CLI


@pytest.mark.parametrize(
    "options, message",
    [
        ({"strategy": "best"}, "unknown strategy 'best'"),
        ({"alignment": 0}, "alignment must be a positive power of two, got 0"),
        ({"alignment": 48}, "alignment must be a positive power of two, got 48"),
        ({"device_memory_limit": -1}, "device-memory-limit must be >= 0"),
    ],
)
def test_bad_options(options, message):
    with pytest.raises(PassFailedException, match=message):
        _plan(parse_module(CHAIN), **options)


def test_ge_opt_writes_the_json_report(tmp_path):
    from gedialects.tools.ge_opt import main

    src = tmp_path / "chain.mlir"
    src.write_text(CHAIN)
    out = tmp_path / "report.json"
    assert main([str(src), "-p", "graph-plan-memory{alignment=128}", f"--memory-report={out}", "-o", str(tmp_path / "o.mlir")]) == 0
    assert json.loads(out.read_text()) == {
        "main": {"no_reuse": 896, "lower_bound": 384, "planned": 384, "planned/lower_bound": 1.0}
    }
    assert main([str(src), f"--memory-report={out}", "-o", str(tmp_path / "o.mlir")]) == 1


def test_arena_plot(tmp_path):
    pytest.importorskip("matplotlib")
    from gedialects.graph.memory.plot import plot_arena

    path = tmp_path / "arena.png"
    fn = _fn(_chain())
    texts = plot_arena([fn], str(path))
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    from gedialects.graph.memory.attributes import memory_summary
    from gedialects.graph.memory.report import tensor_table

    rows = [r for r in tensor_table(fn) if r["offset"] >= 0 and r["size"] > 0]
    assert f"arena {memory_summary(fn)['arena_size']} B" in texts
    peak = max(sum(r["size"] for r in rows if r["lifetime"][0] <= t <= r["lifetime"][1])
               for t in range(max(r["lifetime"][1] for r in rows) + 1))
    assert any(t.startswith(f"peak: {peak} B live at step") for t in texts)
    assert any(t == r["name"] for r in rows for t in texts)  # tensors are named where they fit


def test_arena_plot_without_matplotlib(tmp_path, monkeypatch):
    import sys

    from gedialects.graph.memory.plot import PlotError, plot_arena

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(PlotError, match="needs matplotlib"):
        plot_arena([_fn(_chain())], str(tmp_path / "arena.png"))


# ------------------------------------------------------------ light models


@pytest.fixture(scope="module")
def light_modules() -> dict[str, ModuleOp]:
    out = {}
    for name in LIGHT_MODELS:
        module = import_model(onnx.load(light_model_path(name)), source=name)
        GraphCanonicalizePass().apply(CTX, module)
        out[name] = module
    return out


def test_light_models_auto_is_within_two_percent_of_the_lower_bound(light_modules):
    for name, module in light_modules.items():
        module = _plan(module.clone())
        (numbers,) = memory_report(module).values()
        assert numbers["planned/lower_bound"] <= 1.02, (name, numbers)
        assert plan_problems(_fn(module)) == [], name


def test_light_model_runs_out_of_its_arena_and_matches_onnxruntime(light_modules):
    # squeezenet: concat pieces written in place, in-place relus, a view
    full = next(n for n in LIGHT_MODELS if "squeezenet" in n)
    model = onnx.load(light_model_path(full))
    feeds = random_inputs(model, seed=0)
    module = _plan(light_modules[full].clone())
    got = run_planned(module, feeds)
    for key, want in onnxruntime_outputs(model, feeds).items():
        assert_close(got[key], want, "must_keep_origin_dtype", err_msg=key)


def test_light_model_under_a_limit_fits_and_computes_the_same(light_modules):
    # densenet121: concat chains and in-place ops, plus offloads to fit
    full = next(n for n in LIGHT_MODELS if "densenet" in n)
    model = onnx.load(light_model_path(full))
    feeds = random_inputs(model, seed=0)
    planned = attrs.arena_size(_fn(_plan(light_modules[full].clone())))
    module = _plan(light_modules[full].clone(), device_memory_limit=int(planned * 0.8))
    fn = _fn(module)
    s = attrs.memory_summary(fn)
    assert s["arena_size"] <= planned * 0.8
    assert s["recomputed"] + s["offloaded"] > 0
    assert plan_problems(fn) == []
    got = run_planned(module, feeds)
    for key, want in onnxruntime_outputs(model, feeds).items():
        assert_close(got[key], want, "must_keep_origin_dtype", err_msg=key)
