"""Lock-step simulation (target/lockstep.py) against the plain simulator:
the same outputs, bit for bit, and the same cycles and counters in every
kernel's profile, on hand-written kernels (branches that split the blocks,
row-by-row vector instructions, gathers, more blocks than a cohort holds),
zoo models and a light model; errors come out as the plain simulator's."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

from gedialects.frontend.onnx_import import import_model
from gedialects.npu import examples
from gedialects.npu import ops as npu
from gedialects.npu.builder import ProgramBuilder
from gedialects.zoo import light_model_path, random_inputs, with_random_weights
from lowering.pipeline import compile_module
from target import lockstep
from target.assembler import assemble
from target.errors import SimulationError
from target.simulator import simulate

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "zoo"))
from zoo import zoo_inputs, zoo_path  # noqa: E402

RNG = np.random.default_rng(7)
CHUNK = 128  # fp16 elements: one vector repeat


def _counters(profile):
    return [(k.name, k.launch, k.stream, k.block_dim, k.cores, k.start, k.cycles, k.instructions,
             k.busy, k.ratio, k.bytes, k.info) for k in profile.kernels], profile.total_cycles


def assert_same_run(program, inputs, target="davinci-910"):
    """Both simulators give identical outputs (bit for bit) and profiles; a
    timing-only run the same profile (no overflow check: no values) and no
    outputs."""
    plain = simulate(program, inputs, target, races="off", lockstep=False)
    fast = simulate(program, inputs, target, races="off", lockstep=True)
    assert plain.outputs.keys() == fast.outputs.keys()
    for name, value in plain.outputs.items():
        assert value.dtype == fast.outputs[name].dtype
        np.testing.assert_array_equal(value.view(np.uint8), fast.outputs[name].view(np.uint8), err_msg=name)
    assert _counters(plain.profile) == _counters(fast.profile)
    timing = simulate(program, inputs, target, races="off", timing_only=True)
    assert timing.outputs == {}
    for k in plain.profile.kernels:
        k.info.pop("overflow", None)
    assert _counters(timing.profile) == _counters(plain.profile)
    return fast


def uneven_blocks(block_dim: int, op: str = "exp", out_of_bounds_block: int | None = None):
    """Block b handles chunks 0..b%3 of its row of x (so blocks 0, 3, 6, ...
    leave their loop first: a split into blocks that are not neighbours):
    out = op(x) * 0.5 per chunk. With `out_of_bounds_block`, that block
    stores one row past the end of GM."""
    row = 3 * CHUNK * 2
    n = block_dim * row
    pb = ProgramBuilder("uneven", gm_size=2 * n)
    pb.input("x", 0, (block_dim, 3, CHUNK), "f16")
    pb.output("out", n, (block_dim, 3, CHUNK), "f16")
    with pb.kernel("uneven") as k:
        b = k.block_idx()
        count = k.add(k.rem(b, 3), 1)
        store_row = b
        if out_of_bounds_block is not None:
            past = k.emit(npu.BlockNumOp()).results[0]  # block_dim: one row past the output
            is_bad = k.mul(k.sub(b, out_of_bounds_block), k.sub(b, out_of_bounds_block))
            store_row = k.add(b, k.mul(k.sub(1, k.min(is_bad, 1)), k.sub(past, b)))
        src, mid, dst = k.ptr("ub", 0), k.ptr("ub", 512), k.ptr("ub", 1024)
        with k.loop(0, count) as i:
            offset = k.add(k.mul(b, row), k.mul(i, CHUNK * 2))
            store = k.add(k.mul(store_row, row), k.add(n, k.mul(i, CHUNK * 2)))
            k.emit(npu.DmaOp("mte2", src, k.ptr("gm", 0, offset), len=CHUNK * 2))
            k.barrier()
            unary = {"exp": npu.VexpOp, "relu": npu.VreluOp}[op]
            k.emit(unary("f16", mid, src, repeat=1))
            k.barrier()
            k.emit(npu.VmulsOp("f16", dst, mid, 0.5, repeat=1))
            k.barrier()
            k.emit(npu.DmaOp("mte3", k.ptr("gm", 0, store), dst, len=CHUNK * 2))
            k.barrier()
    pb.launch("uneven", block_dim)
    return assemble(pb.module())


def _uneven_inputs(block_dim):
    return {"x": RNG.standard_normal((block_dim, 3, CHUNK)).astype(np.float16)}


@pytest.mark.parametrize("op", ["exp", "relu"])  # row by row / batched
def test_blocks_that_branch_apart_split_the_cohort(op):
    res = assert_same_run(uneven_blocks(7, op), _uneven_inputs(7))
    out = res.outputs["out"]
    assert np.all(out[3, 1:] == 0) and np.any(out[5, 2] != 0)  # block 3 ran one chunk, block 5 three


def test_more_blocks_than_a_cohort_holds():
    block_dim = lockstep.MAX_ROWS + 5
    assert_same_run(uneven_blocks(block_dim), _uneven_inputs(block_dim))


@pytest.mark.parametrize("name", sorted(examples.EXAMPLES))
def test_hand_written_examples(name):
    module = examples.EXAMPLES[name]()
    program = assemble(module)
    inputs = {s.name: RNG.standard_normal(s.shape).astype(s.dtype) for s in program.inputs}
    assert_same_run(program, inputs)


def test_matmul_over_blocks_on_a_split_target():
    program = assemble(examples.matmul(block_dim=4))
    inputs = {s.name: RNG.standard_normal(s.shape).astype(s.dtype) for s in program.inputs}
    assert_same_run(program, inputs, "davinci-910b")


@pytest.mark.parametrize("name", ["bert", "gpt2"])  # embedding gathers (load_index), softmax, layer norm
@pytest.mark.parametrize("precision", ["force_fp16", "must_keep_origin_dtype"])
def test_zoo_transformers(name, precision):
    module = import_model(onnx.load(zoo_path(name)), {}, source=name)
    program = assemble(compile_module(module, precision, "davinci-910").module)
    assert_same_run(program, zoo_inputs(name))


@pytest.mark.parametrize("precision", ["force_fp16", "must_keep_origin_dtype"])
def test_light_model(precision):
    model = with_random_weights(onnx.load(light_model_path("squeezenet")))
    program = assemble(compile_module(import_model(model, {}, source="squeezenet"), precision, "davinci-910").module)
    assert_same_run(program, random_inputs(model))


def test_errors_are_the_plain_simulators():
    program = uneven_blocks(6, out_of_bounds_block=4)
    inputs = _uneven_inputs(6)
    with pytest.raises(SimulationError) as plain:
        simulate(program, inputs, races="off", lockstep=False)
    assert "block 4" in str(plain.value)
    with pytest.raises(SimulationError) as default:
        simulate(program, inputs, races="off")  # lock-step meets it, the plain run reports it
    assert str(default.value) == str(plain.value)
    with pytest.raises(SimulationError, match="block 4"):
        simulate(program, inputs, races="off", lockstep=True)


def test_lockstep_neither_detects_races_nor_traces():
    program = uneven_blocks(2)
    for kw in ({"races": "error"}, {"races": "off", "trace": True}):
        with pytest.raises(ValueError, match="lock-step"):
            simulate(program, _uneven_inputs(2), lockstep=True, **kw)
        with pytest.raises(ValueError, match="lock-step"):
            simulate(program, _uneven_inputs(2), timing_only=True, **kw)


def test_ge_run_timing_only(tmp_path, capsys):
    from gedialects.tools import ge_run

    assert ge_run.main(["squeezenet", "--timing-only", "--op-summary", str(tmp_path / "ops.csv")]) == 0
    out = capsys.readouterr().out
    assert "timing only" in out and "mean=" not in out  # a profile, no outputs
    assert (tmp_path / "ops.csv").read_text().count("\n") > 10
    for flag in (["--check"], ["--output", str(tmp_path / "o.npz")], ["--races", "error"],
                 ["--profile", str(tmp_path / "t.json"), "--profile-level", "pipe"]):
        assert ge_run.main(["squeezenet", "--timing-only", *flag]) == 1
        err = capsys.readouterr().err.strip().splitlines()
        named = "--profile-level pipe" if "--profile-level" in flag else " ".join(flag[:2] if flag[0] == "--races" else flag[:1])
        assert len(err) == 1 and "--timing-only" in err[0] and f"drop {named}," in err[0]
