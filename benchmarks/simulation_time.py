"""Simulation wall time per light model against onnxruntime's inference.

    .venv/bin/python benchmarks/simulation_time.py [MODEL ...] [--precision-mode ...] [--repeat N] [--markdown]

Each light model (random weights) is compiled once (timed: the last column
is compile plus lock-step time per thousand instructions of the assembled
program, every kernel's code counted, a kernel alike another's too), then run in
the same process by onnxruntime (CPU, the median of N inferences after one
warm-up) and by the simulator three ways: block by block with the race
detector (races="error", what the tests run), block by block without it, and
lock-step (target/lockstep.py; the default when races are off); and
timing only (lock-step computing no value). The block-by-block runs are
timed once, lock-step and timing only as the fastest of FAST_REPEAT, after
one warm-up simulation in lock-step; the ratios are over onnxruntime's
inference. "NumPy value work" is the part of one more lock-step run spent
inside the instructions' value semantics (target/semantics.py: the cube's
products, DMA and L1 -> L0 copies, im2col; the vector instructions' NumPy
calls), timed call by call: what a simulator executing these semantics in
NumPy spends however little it costs to interpret the program around them;
after the table, each model's value work by kind and its cube's operand
bytes, then NumPy's cost per element of the fp16 operations on this machine.
The last column says whether lock-step's outputs (bit for bit)
and every kernel's cycles and counters, and timing-only's counters, equal
the block-by-block run's.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time

import numpy as np
import onnx

from gedialects.frontend.onnx_import import import_model
from gedialects.zoo import LIGHT_MODELS, light_model_path, light_models_error, random_inputs, with_random_weights
from lowering.pipeline import DEFAULT_PRECISION, compile_module
from target.assembler import assemble
import target.lockstep
import target.simulator
from target.simulator import simulate

FAST_REPEAT = 3
"""Lock-step and timing-only runs are timed as the fastest of three (a
single run of a fraction of a second is at the mercy of the VM)."""

COLUMNS = ("model", "npu ops", "program instructions", "npu instructions run", "onnxruntime ms", "race detector s", "block by block s",
           "lock-step s", "lock-step / onnxruntime", "detector / lock-step", "NumPy value work s",
           "NumPy value work / onnxruntime", "timing only s", "timing only / onnxruntime", "compile + lock-step ms per 1k program instructions", "identical")


def onnxruntime_ms(model, inputs, repeat: int) -> float:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    session = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    session.run(None, inputs)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        session.run(None, inputs)
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


def timed(program, inputs, repeat: int = 1, **kw):
    """(the fastest of `repeat` simulations' wall time, the last result)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        result = simulate(program, inputs, **kw)
        best = min(best, time.perf_counter() - start)
    return best, result


LOCKSTEP_SEMANTICS = ("mmad", "dma_copy", "load2d_copy", "load3d_copy")
"""The value semantics lock-step calls by name (target/lockstep.py imports them from target/semantics.py)."""


@contextlib.contextmanager
def semantics_timed(spent: dict[str, float]):
    """Within: every call of the value semantics a lock-step simulation makes
    adds its wall time to spent[its name] (the data handlers' semantics
    functions; "vector": the vector instructions' NumPy parts, as
    `_vector_compute` builds them)."""
    def timing(name, func):
        def timed_call(*args):
            start = time.perf_counter()
            func(*args)
            spent[name] = spent.get(name, 0.0) + time.perf_counter() - start
        return timed_call

    originals = {name: getattr(target.lockstep, name) for name in LOCKSTEP_SEMANTICS}
    vector_compute = target.simulator._vector_compute
    for name, func in originals.items():
        setattr(target.lockstep, name, timing(name, func))
    target.simulator._vector_compute = lambda *args: timing("vector", vector_compute(*args))
    try:
        yield
    finally:
        for name, func in originals.items():
            setattr(target.lockstep, name, func)
        target.simulator._vector_compute = vector_compute


def numpy_value_work(program, inputs) -> dict[str, float]:
    """Seconds one lock-step simulation spends in the value semantics' NumPy calls, by kind."""
    spent: dict[str, float] = {}
    with semantics_timed(spent):
        simulate(program, inputs, races="off")
    return spent


def numpy_element_costs(n: int = 1 << 20, repeat: int = 20) -> dict[str, float]:
    """Nanoseconds per element of the NumPy operations fp16 semantics are
    made of, on this machine (the fastest of `repeat`, outputs preallocated):
    what bounds the value work of programs that compute in fp16."""
    from target.semantics import _F16_AS_F32

    rng = np.random.default_rng(0)
    a16, b16 = (rng.standard_normal(n).astype(np.float16) for _ in range(2))
    a32, b32 = a16.astype(np.float32), b16.astype(np.float32)
    out16, out32 = np.empty(n, np.float16), np.empty(n, np.float32)
    operations = {
        "fp16 -> fp32 (table)": lambda: _F16_AS_F32.take(a16.view(np.uint16), out=out32, mode="clip"),
        "fp16 -> fp32 (astype)": lambda: np.copyto(out32, a16),
        "fp32 -> fp16": lambda: np.copyto(out16, a32, casting="same_kind"),
        "fp16 add": lambda: np.add(a16, b16, out=out16),
        "fp32 add": lambda: np.add(a32, b32, out=out32),
    }
    costs = {}
    for name, operation in operations.items():
        best = float("inf")
        for _ in range(repeat):
            start = time.perf_counter()
            operation()
            best = min(best, time.perf_counter() - start)
        costs[name] = 1e9 * best / n
    return costs


def counters(result):
    return [(k.name, k.start, k.cycles, k.instructions, k.busy, k.bytes) for k in result.profile.kernels]


def measure(name: str, precision: str, repeat: int) -> tuple[list[str], str]:
    """(the model's table row, the line after the table: its NumPy value work
    by kind and the bytes its cube's operands move L1 -> L0A / L0B, each
    converted to fp32 by an mmad)."""
    model = with_random_weights(onnx.load(str(light_model_path(name))))
    inputs = random_inputs(model)
    start = time.perf_counter()
    compiled = compile_module(import_model(model, {}, source=name), precision)
    program = assemble(compiled.module)
    compile_s = time.perf_counter() - start
    ort_ms = onnxruntime_ms(model, inputs, repeat)
    simulate(program, inputs, races="off")  # warm-up: im2col patterns, the cores' rows
    detector_s, _ = timed(program, inputs, races="error")
    plain_s, plain = timed(program, inputs, races="off", lockstep=False)
    lockstep_s, fast = timed(program, inputs, FAST_REPEAT, races="off", lockstep=True)
    timing_s, timing = timed(program, inputs, FAST_REPEAT, races="off", timing_only=True)
    value_work = min((numpy_value_work(program, inputs) for _ in range(FAST_REPEAT)), key=lambda d: sum(d.values()))
    numpy_s = sum(value_work.values())
    operand_bytes = sum(k.bytes.get("l1_l0a", 0) + k.bytes.get("l1_l0b", 0) for k in fast.profile.kernels)
    footer = (f"NumPy value work of {name}: "
              + ", ".join(f"{k} {v:.2f} s" for k, v in sorted(value_work.items(), key=lambda kv: -kv[1]))
              + f"; its cube's operands {operand_bytes / 1e6:,.0f} MB (L1 -> L0A / L0B)")
    same = counters(plain) == counters(fast) == counters(timing) and all(
        np.array_equal(plain.outputs[k].view(np.uint8), fast.outputs[k].view(np.uint8)) for k in plain.outputs)
    instructions = sum(k.instructions for k in fast.profile.kernels)
    size = program.instruction_count()  # every kernel's code, an alias's too (the IR holds its source's once)
    row = [name, f"{compiled.npu_ops:,}", f"{size:,}", f"{instructions:,}", f"{ort_ms:.1f}", f"{detector_s:.2f}", f"{plain_s:.2f}", f"{lockstep_s:.2f}",
            f"{1e3 * lockstep_s / ort_ms:.0f}x", f"{detector_s / lockstep_s:.1f}x", f"{numpy_s:.2f}",
            f"{1e3 * numpy_s / ort_ms:.0f}x", f"{timing_s:.2f}",
            f"{1e3 * timing_s / ort_ms:.1f}x", f"{1e6 * (compile_s + lockstep_s) / size:.0f}",
            "yes" if same else "NO"]
    return row, footer


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*", default=list(LIGHT_MODELS))
    ap.add_argument("--precision-mode", default=DEFAULT_PRECISION)
    ap.add_argument("--repeat", type=int, default=20, help="onnxruntime inferences timed (median)")
    ap.add_argument("--markdown", action="store_true", help="print a markdown table")
    args = ap.parse_args()
    if (error := light_models_error(args.models)) is not None:
        ap.error(error)
    rows, footers = zip(*(measure(name, args.precision_mode, args.repeat) for name in args.models))
    if args.markdown:
        print("| " + " | ".join(COLUMNS) + " |")
        print("|---|" + "---:|" * (len(COLUMNS) - 2) + "---|")
        for row in rows:
            print("| " + " | ".join(row) + " |")
    else:
        widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(COLUMNS)]
        print("  ".join(c.rjust(w) for c, w in zip(COLUMNS, widths)))
        for row in rows:
            print("  ".join(v.rjust(w) for v, w in zip(row, widths)))
    for footer in footers:
        print(footer)
    costs = numpy_element_costs()
    print("NumPy per element on this machine: " + ", ".join(f"{k} {v:.2f} ns" for k, v in costs.items()))
    if any(row[-1] != "yes" for row in rows):
        raise SystemExit("lock-step and block-by-block simulation differ")


if __name__ == "__main__":
    main()
