"""target/roofline.py: MACs from kernel shapes, rates from the target config,
and bounds no simulated launch beats (the simulator's own cost formulas
never run faster than the peak rates they are built from)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

import gedialects
from target.config import load_target
from target.roofline import cube_macs_per_cycle, kernel_macs, run_bound, traffic_cycles

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "zoo"))
from zoo import zoo_inputs, zoo_path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import roofline as roofline_benchmark  # noqa: E402

CONFIG = load_target("davinci-910")


def test_macs_of_conv_matmul_and_vector_kernels():
    # conv: output elements x Cin/group x kh x kw
    assert kernel_macs("conv", [[1, 3, 8, 8], [16, 3, 3, 3], [16]], [[1, 16, 8, 8]]) == 16 * 64 * 27
    # a depthwise conv: weight [C, 1, 3, 3]
    assert kernel_macs("conv", [[1, 8, 4, 4], [8, 1, 3, 3]], [[1, 8, 4, 4]]) == 8 * 16 * 9
    # batched matmul: output elements x K
    assert kernel_macs("matmul", [[2, 4, 16, 8], [2, 4, 8, 16]], [[2, 4, 16, 16]]) == 2 * 4 * 16 * 16 * 8
    assert kernel_macs("elementwise", [[1, 8]], [[1, 8]]) == 0


def test_rates_come_from_the_target_config():
    # davinci-910: 32 cube cores, a 16x16x16 fp16 fractal per cycle, a 16x16x8 fp32 one every other cycle
    assert cube_macs_per_cycle(CONFIG, 2) == 32 * 4096
    assert cube_macs_per_cycle(CONFIG, 4) == 32 * 1024
    # loads: 32 cores x 32 B (gm_l1 / gm_ub) = 1,024 B/cycle, under HBM's 1,200
    assert traffic_cycles(CONFIG, 1024 * 1000, 0) == pytest.approx(1000)
    # stores: 32 x 64 B = 2,048 B/cycle, capped by HBM at 1,200
    assert traffic_cycles(CONFIG, 0, 1200 * 10) == pytest.approx(10)


@pytest.mark.parametrize("model, precision", [("squeezenet", "force_fp16"), ("bert", "must_keep_origin_dtype")])
def test_no_launch_beats_its_bound(model, precision):
    path = str(zoo_path(model)) if model == "bert" else model
    compiled = gedialects.compile(path, precision_mode=precision)
    if model == "bert":
        compiled.run(zoo_inputs(model))
    else:
        from gedialects.graph.interpreter import main_function
        from gedialects.tools.ge_run import make_inputs

        compiled.run(make_inputs(main_function(compiled.graph), None, 0))
    r = run_bound(compiled.profile, CONFIG, 2 if precision == "force_fp16" else 4)
    assert r.kernels and all(k.cycles >= k.bound for k in r.kernels), [k.name for k in r.kernels if k.cycles < k.bound]
    assert r.cycles >= r.bound and 0 < r.cube_utilisation < 1
    cube = [k for k in r.kernels if k.macs]
    assert cube and sum(k.macs for k in cube) == r.macs
    assert math.isclose(r.bound, sum(k.bound for k in r.kernels))
    # benchmarks/roofline.py's per-core split floors lie between a launch's bound and its simulated cycles
    floor = roofline_benchmark.matmul_split_floor if model == "bert" else roofline_benchmark.conv_split_floor
    kind = "matmul" if model == "bert" else "conv"
    profiled = {k.name: k for k in compiled.profile.kernels}
    floors = [(k.name, k.bound, floor(profiled[k.name], CONFIG, 2 if precision == "force_fp16" else 4), k.cycles)
              for k in r.kernels if k.op_type == kind and not k.name.endswith("_sum")]
    assert floors and all(bound <= at_floor <= cycles for _, bound, at_floor, cycles in floors), floors


def test_fusion_ceiling_counts_shared_launches_once_per_form(monkeypatch):
    """benchmarks/roofline.py's bound on fused attention's gain: launches both
    forms run (known by their model nodes) at their floors, the fused form's
    own at theirs, the unfused form's own as simulated; a product, its
    split-K sum kernel and its operands' cast are one launch, its floor the product's."""
    from types import SimpleNamespace

    def bound(name, op_name, cycles, at_bound):
        return SimpleNamespace(name=name, op_name=op_name, cycles=cycles, bound=at_bound)

    shared_product = bound("k1_matmul", "/dense/MatMul", 900, 100)
    fused = SimpleNamespace(kernels=[
        shared_product, bound("k1_matmul_sum", "/dense/MatMul", 300, 50),
        bound("k2_layer_norm", "/LayerNorm", 400, 40),
        bound("k3_attention", "/attn/MatMul;/attn/Softmax", 700, 70),
        bound("k4_cast", "/qkv/MatMul", 80, 300), bound("k4_matmul", "/qkv/MatMul", 900, 300),
    ])
    unfused = SimpleNamespace(kernels=[
        bound("k1_matmul", "/dense/MatMul", 900, 100), bound("k1_matmul_sum", "/dense/MatMul", 300, 50),
        bound("k2_layer_norm", "/LayerNorm", 400, 40),
        bound("k3_matmul", "/attn/MatMul", 500, 60), bound("k4_softmax", "/attn/Softmax", 600, 60),
    ])
    floors = {"k1_matmul": 250.0, "k3_matmul": 999.0, "k4_matmul": 400.0}  # k3_matmul is the unfused form's own: as simulated
    monkeypatch.setitem(roofline_benchmark.PROFILES, roofline_benchmark.BERT_BASE_LAYER,
                        SimpleNamespace(kernels=[SimpleNamespace(name=n) for n in ("k1_matmul", "k1_matmul_sum", "k2_layer_norm",
                                                                                     "k3_attention", "k4_cast", "k4_matmul")]))
    monkeypatch.setattr(roofline_benchmark, "matmul_split_floor", lambda k, config, es: floors[k.name])
    shared, fused_own, unfused_own = roofline_benchmark.fusion_ceiling(fused, unfused, CONFIG, 2)
    assert shared == 250.0 + 40  # the product's floor (its sum counted in it) and the layer norm's bound
    assert fused_own == 70 + 400  # the fused attention kernel at its bound, the product (with its cast) at its floor
    assert unfused_own == 500 + 600  # the unfused form's own launches as simulated
