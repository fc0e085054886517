"""Simulator speed: executed instructions per second of wall time.

    python benchmarks/sim_speed.py [--iters N] [--repeat R]

Kernels (each a loop of N iterations; instruction counts include loop
control and scalar address arithmetic, as the simulator executes them):
  scalar      address arithmetic only (arith.addi/muli on index values)
  sync        set_flag/wait_flag ping-pong between two pipes
  vector      small vector ops (one 256-byte repeat each) on UB
  pipeline    256-byte DMA GM->UB, vadd, DMA UB->GM with the flags between them
plus the hand-written example kernels (vector add, matmul, row sum).
Each is run with the race detector on (the default) and off.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from gedialects.npu import examples
from gedialects.npu import ops as npu
from gedialects.npu.builder import KernelBuilder, ProgramBuilder
from target.assembler import assemble
from target.simulator import simulate


def _program(name: str, body, iters: int, gm: int = 1 << 16):
    pb = ProgramBuilder(name, gm_size=gm)
    pb.input("x", 0, (gm // 2,), "f16")
    with pb.kernel(name) as k:
        body(k, iters)
    pb.launch(name, 1)
    return assemble(pb.module())


def scalar(k: KernelBuilder, iters: int) -> None:
    with k.loop(0, iters) as i:
        a = k.add(i, 7)
        b = k.mul(a, 3)
        k.add(b, i)


def sync(k: KernelBuilder, iters: int) -> None:
    k.set_flag("v", "mte2", 0)
    with k.loop(0, iters):
        k.wait_flag("v", "mte2", 0)
        k.set_flag("mte2", "v", 0)
        k.wait_flag("mte2", "v", 0)
        k.set_flag("v", "mte2", 0)
    k.wait_flag("v", "mte2", 0)


def vector(k: KernelBuilder, iters: int) -> None:
    a, b, c = k.ptr("ub", 0), k.ptr("ub", 256), k.ptr("ub", 512)
    with k.loop(0, iters):
        k.emit(npu.VaddOp("f16", c, a, b, repeat=1))
        k.emit(npu.VmulsOp("f16", a, c, 0.5, repeat=1))
        k.emit(npu.VmaxOp("f16", b, a, c, repeat=1))
        k.emit(npu.VexpOp("f16", c, b, repeat=1))


def pipeline(k: KernelBuilder, iters: int) -> None:
    x, z = k.ptr("ub", 0), k.ptr("ub", 256)
    k.set_flag("v", "mte2", 0)
    k.set_flag("mte3", "v", 0)
    with k.loop(0, iters) as i:
        off = k.mul(k.rem(i, 64), 256)
        k.wait_flag("v", "mte2", 0)
        k.emit(npu.DmaOp("mte2", x, k.ptr("gm", 0, off), len=256))
        k.set_flag("mte2", "v", 0)
        k.wait_flag("mte2", "v", 0)
        k.wait_flag("mte3", "v", 0)
        k.emit(npu.VaddOp("f16", z, x, x, repeat=1))
        k.set_flag("v", "mte2", 0)
        k.set_flag("v", "mte3", 0)
        k.wait_flag("v", "mte3", 0)
        k.emit(npu.DmaOp("mte3", k.ptr("gm", 32768, off), z, len=256))
        k.set_flag("mte3", "v", 0)
    k.wait_flag("v", "mte2", 0)
    k.wait_flag("mte3", "v", 0)


def _inputs(prog):
    rng = np.random.default_rng(0)
    return {s.name: rng.standard_normal(s.shape).astype(s.dtype) for s in prog.inputs}


def measure(prog, races: str, repeat: int) -> tuple[int, float, float]:
    """(instructions, best wall seconds, best CPU seconds) over `repeat` runs."""
    inputs = _inputs(prog)
    wall = cpu = float("inf")
    count = 0
    for _ in range(repeat):
        w0, c0 = time.perf_counter(), time.process_time()
        res = simulate(prog, inputs, races=races)
        wall = min(wall, time.perf_counter() - w0)
        cpu = min(cpu, time.process_time() - c0)
        count = res.profile.instructions
    return count, wall, cpu


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iters", type=int, default=20000, help="loop trip count")
    ap.add_argument("--repeat", type=int, default=3, help="runs; the best is reported")
    args = ap.parse_args(argv)
    progs = {
        "scalar": _program("scalar", scalar, args.iters),
        "sync": _program("sync", sync, args.iters),
        "vector": _program("vector", vector, args.iters),
        "pipeline": _program("pipeline", pipeline, args.iters),
        "ex.vector_add": assemble(examples.vector_add()),
        "ex.matmul": assemble(examples.matmul()),
        "ex.row_sum": assemble(examples.row_sum()),
    }
    print("instructions per second of wall time (and of process CPU time, which")
    print("a busy machine disturbs less), race detector on and off:")
    head = f"{'kernel':<15} {'instr':>8} {'races on':>12} {'(cpu)':>12} {'races off':>12} {'(cpu)':>12}"
    print(head)
    for name, prog in progs.items():
        n, w_on, c_on = measure(prog, "error", args.repeat)
        _, w_off, c_off = measure(prog, "off", args.repeat)
        print(
            f"{name:<15} {n:>8} {n / w_on:>12,.0f} {n / c_on:>12,.0f} "
            f"{n / w_off:>12,.0f} {n / c_off:>12,.0f}"
        )


if __name__ == "__main__":
    main()
