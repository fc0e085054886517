"""benchmarks/simulation_time.py's "NumPy value work": the time a lock-step
simulation spends inside the instructions' value semantics, which is what
bounds a NumPy simulator's speed (README, "Simulator speed")."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import onnx

import target.lockstep
import target.semantics
import target.simulator
from gedialects.frontend.onnx_import import import_model
from gedialects.zoo import light_model_path, random_inputs, with_random_weights
from lowering.pipeline import compile_module
from target.assembler import assemble
from target.simulator import simulate

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import simulation_time  # noqa: E402


def test_every_kind_of_value_work_is_timed_and_the_simulator_restored():
    model = with_random_weights(onnx.load(str(light_model_path("squeezenet"))))
    inputs = random_inputs(model)
    program = assemble(compile_module(import_model(model, {}, source="squeezenet")).module)
    plain = simulate(program, inputs, races="off")
    spent: dict[str, float] = {}
    start = time.perf_counter()
    with simulation_time.semantics_timed(spent):
        timed = simulate(program, inputs, races="off")
    wall = time.perf_counter() - start
    # convs (im2col, weights, cube), DMAs, the epilogues' vector work
    assert set(spent) == {"mmad", "dma_copy", "load2d_copy", "load3d_copy", "vector"}
    assert 0 < sum(spent.values()) < wall
    assert all((plain.outputs[k] == timed.outputs[k]).all() for k in plain.outputs)
    for name in simulation_time.LOCKSTEP_SEMANTICS:
        assert getattr(target.lockstep, name) is getattr(target.semantics, name)
    assert target.simulator._vector_compute.__module__ == "target.simulator"
    assert set(simulation_time.numpy_value_work(program, inputs)) == set(spent)


def test_numpy_element_costs_name_what_fp16_semantics_are_made_of():
    costs = simulation_time.numpy_element_costs(n=4096, repeat=2)
    assert set(costs) == {"fp16 -> fp32 (table)", "fp16 -> fp32 (astype)", "fp32 -> fp16", "fp16 add", "fp32 add"}
    assert all(cost > 0 for cost in costs.values())
