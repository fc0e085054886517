"""Structured tile kernels, through the tile passes, simulated: numbers
against a float64 NumPy reference (fp32 criterion), on shapes that need
several tiles per core, broadcasting along rows and columns, reductions
and the math tile-legalize-math expands."""

from __future__ import annotations

import math

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import ModuleOp, TensorType, f32
from xdsl.ir import Block, Region

from gedialects.npu.transforms.insert_sync import NpuInsertSyncPass
from gedialects.numerics import assert_close
from gedialects.tile import ops as t
from gedialects.tile import structured as st
from gedialects.tile.transforms.select_tiling import candidate_tiles, choose_tiling
from lowering.map_bodies import ScalarBuilder
from lowering.pipeline import tile_passes
from lowering.tile_to_npu import ConvertTileToNpuPass
from target.assembler import assemble
from target.config import load_target
from target.simulator import simulate


class Program:
    """A one-kernel structured tile program over named fp32 GM tensors."""

    def __init__(self):
        self.prog = t.ProgramOp("p")
        self.kernel = t.KernelOp("k", 1)
        self.offset = 0
        self.outputs: list[str] = []

    def tensor(self, name: str, shape, kind: str) -> None:
        ty = TensorType(f32, list(shape))
        self.prog.body.block.add_op(t.TensorOp.create(properties={
            "name": st.StringAttr(name), "kind": st.StringAttr(kind), "offset": st.IntegerAttr(self.offset, st.i64),
            "type": ty, "layout": st.StringAttr("ND"),
        }))
        self.offset += -(-4 * math.prod(shape) // 64) * 64 + 64
        if kind == "output":
            self.outputs.append(name)

    def emit(self, op):
        self.kernel.body.block.add_op(op)
        return op.results[0] if op.results else None

    def load(self, name, shape):
        return self.emit(st.LoadOp(name, TensorType(f32, list(shape))))

    def map(self, inputs, shape, body):
        block = Block(arg_types=[f32] * len(inputs))
        sb = ScalarBuilder(block)
        block.add_op(st.YieldOp([body(sb, *block.args)]))
        return self.emit(st.MapOp(inputs, TensorType(f32, list(shape)), Region(block)))

    def run(self, inputs: dict, target: str = "davinci-910") -> dict:
        self.prog.body.block.add_op(self.kernel)
        module = ModuleOp([self.prog])
        ctx = Context()
        for p in tile_passes(target):
            p.apply(ctx, module)
        self.tiling = self.kernel.attributes.get(st.TILING_ATTR)
        ConvertTileToNpuPass(target=target).apply(ctx, module)
        NpuInsertSyncPass().apply(ctx, module)
        module.verify()
        return simulate(assemble(module), inputs, target).outputs


def _rng(seed=0):
    return np.random.default_rng(seed)


@pytest.mark.parametrize("rows,cols", [(16, 64), (300, 128), (8, 2048)])
def test_softmax_rows(rows, cols):
    x = _rng().standard_normal((rows, cols)).astype(np.float32) * 3
    p = Program()
    p.tensor("x", (rows, cols), "input")
    p.tensor("y", (rows, cols), "output")
    xs = p.load("x", (rows, cols))
    m = p.emit(st.ReductionOp("max", xs))
    e = p.map([xs, m], (rows, cols), lambda sb, a, b: sb.exp(sb.sub(a, b)))
    s = p.emit(st.ReductionOp("sum", e))
    y = p.map([e, s], (rows, cols), lambda sb, a, b: sb.div(a, b))
    p.emit(st.StoreOp(y, "y"))
    got = p.run({"x": x})["y"]
    x64 = x.astype(np.float64)
    want = np.exp(x64 - x64.max(1, keepdims=True))
    want /= want.sum(1, keepdims=True)
    assert_close(got.reshape(rows, cols), want, "must_keep_origin_dtype")
    if rows == 300:  # more tiles than cores: double-buffered loads
        assert p.tiling.tiles > 32


def test_layer_norm_with_loop_invariant_gamma():
    rows, cols = 48, 256
    rng = _rng(1)
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    gamma = rng.standard_normal((1, cols)).astype(np.float32)
    p = Program()
    p.tensor("x", (rows, cols), "input")
    p.tensor("g", (1, cols), "input")
    p.tensor("y", (rows, cols), "output")
    xs, gs = p.load("x", (rows, cols)), p.load("g", (1, cols))
    mean = p.map([p.emit(st.ReductionOp("sum", xs))], (rows, 1), lambda sb, s: sb.mul(s, sb.const(1 / cols)))
    d = p.map([xs, mean], (rows, cols), lambda sb, a, b: sb.sub(a, b))
    var = p.map([p.emit(st.ReductionOp("sum", p.map([d], (rows, cols), lambda sb, a: sb.mul(a, a))))], (rows, 1),
                lambda sb, s: sb.rsqrt(sb.add(sb.mul(s, sb.const(1 / cols)), sb.const(1e-5))))
    y = p.map([d, var, gs], (rows, cols), lambda sb, a, r, gm: sb.mul(sb.mul(a, r), gm))
    p.emit(st.StoreOp(y, "y"))
    got = p.run({"x": x, "g": gamma})["y"].reshape(rows, cols)
    x64 = x.astype(np.float64)
    mu = x64.mean(1, keepdims=True)
    want = (x64 - mu) / np.sqrt(((x64 - mu) ** 2).mean(1, keepdims=True) + 1e-5) * gamma
    assert_close(got, want, "must_keep_origin_dtype")


def test_broadcast_over_middle_dims_and_math():
    """An attention-mask-like [2, 1, 16] operand over [2, 24, 16]; tanh, erf and powf."""
    rng = _rng(2)
    x = rng.standard_normal((2, 24, 16)).astype(np.float32)
    mask = rng.standard_normal((2, 1, 16)).astype(np.float32)
    p = Program()
    p.tensor("x", (2, 24, 16), "input")
    p.tensor("m", (2, 1, 16), "input")
    p.tensor("y", (2, 24, 16), "output")
    xs, ms = p.load("x", (2, 24, 16)), p.load("m", (2, 1, 16))
    y = p.map([xs, ms], (2, 24, 16), lambda sb, a, b: sb.add(sb.add(sb.tanh(a), sb.erf(b)),
                                                                sb.pow(a, sb.const(2.0))))
    p.emit(st.StoreOp(y, "y"))
    got = p.run({"x": x, "m": mask})["y"].reshape(2, 24, 16)
    from math import erf

    want = np.tanh(x.astype(np.float64)) + np.vectorize(erf)(mask.astype(np.float64)) + x.astype(np.float64) ** 2
    assert_close(got, want, "must_keep_origin_dtype")


def test_select_keeps_minus_infinity_out_of_the_other_branch():
    rng = _rng(3)
    x = rng.standard_normal((16, 32)).astype(np.float32)
    p = Program()
    p.tensor("x", (16, 32), "input")
    p.tensor("y", (16, 32), "output")
    xs = p.load("x", (16, 32))
    y = p.map([xs], (16, 32), lambda sb, a: sb.select(sb.compare("olt", a, sb.const(0.0)),
                                                       sb.const(float("-inf")), sb.exp(a)))
    p.emit(st.StoreOp(y, "y"))
    got = p.run({"x": x})["y"].reshape(16, 32)
    want = np.where(x < 0, -np.inf, np.exp(x.astype(np.float64)))
    assert np.array_equal(np.isneginf(got), x < 0)
    assert_close(got[x >= 0], want[x >= 0], "must_keep_origin_dtype")


def test_chosen_tiling_fits_and_is_predicted_by_the_simulators_formulas():
    config = load_target("davinci-910")
    p = Program()
    p.tensor("x", (4096, 1024), "input")
    p.tensor("y", (4096, 1024), "output")
    xs = p.load("x", (4096, 1024))
    p.emit(st.StoreOp(p.map([xs, p.emit(st.ReductionOp("max", xs))], (4096, 1024),
                            lambda sb, a, b: sb.sub(a, b)), "y"))
    tiling = choose_tiling(p.kernel, config)
    assert tiling.ub_bytes.data <= config.capacity_bytes["ub"]
    assert tiling.tile_shape[-1] == 1024  # a reduction keeps rows whole
    assert tiling.tiles >= config.vector_cores


def test_candidate_tiles_divide_the_iteration_space():
    for tile in candidate_tiles((6, 4, 8), split_last=True):
        assert all(d % k == 0 for d, k in zip((6, 4, 8), tile))
    assert (6, 4, 8) in candidate_tiles((6, 4, 8), split_last=False)
    assert all(tile[-1] == 8 for tile in candidate_tiles((6, 4, 8), split_last=False))


@pytest.mark.parametrize("transpose_b,dtype", [(True, np.float32), (True, np.float16), (False, np.float16)])
def test_batch_matmul_on_the_cube_with_a_bias_epilogue(transpose_b, dtype):
    """[2, 32, 48] x [2, 48, 64] (+ bias, tanh), both operands from GM; K split when asked."""
    from xdsl.dialects.builtin import f16

    rng = _rng(4)
    elem = f16 if dtype == np.float16 else f32
    a = (rng.standard_normal((2, 32, 48)) / 4).astype(dtype)
    b = (rng.standard_normal((2, 48, 64)) / 4).astype(dtype)
    bias = rng.standard_normal((1, 64)).astype(np.float32)
    p = Program()
    for name, arr in (("a", a), ("b", b.transpose(0, 2, 1) if transpose_b else b)):
        ty = TensorType(elem, list(arr.shape))
        p.prog.body.block.add_op(t.TensorOp.create(properties={
            "name": st.StringAttr(name), "kind": st.StringAttr("input"), "offset": st.IntegerAttr(p.offset, st.i64),
            "type": ty, "layout": st.StringAttr("ND")}))
        p.offset += -(-arr.nbytes // 64) * 64 + 64
    p.tensor("bias", (1, 64), "input")
    p.tensor("y", (2, 32, 64), "output")
    la = p.emit(st.LoadOp("a", TensorType(elem, [2, 32, 48])))
    lb = p.emit(st.LoadOp("b", TensorType(elem, [2, 64, 48] if transpose_b else [2, 48, 64])))
    r = p.emit(st.BatchMatmulOp(la, lb, transpose_b))
    y = p.map([r, p.load("bias", (1, 64))], (2, 32, 64), lambda sb, c, d: sb.tanh(sb.add(c, d)))
    p.emit(st.StoreOp(y, "y"))
    ins = {"a": a, "b": np.ascontiguousarray(b.transpose(0, 2, 1)) if transpose_b else b, "bias": bias}
    got = p.run(ins)["y"].reshape(2, 32, 64)
    want = np.tanh(a.astype(np.float64) @ b.astype(np.float64) + bias)
    assert_close(got, want, "must_keep_origin_dtype" if dtype == np.float32 else "force_fp16")
    assert p.tiling.tile_shape[0] == 1 and p.tiling.tile_shape[1] % 16 == 0
