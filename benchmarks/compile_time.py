"""Compile time per light model, against onnxruntime's session creation.

    .venv/bin/python benchmarks/compile_time.py [MODEL ...] [--precision-mode ...] [--stages]

Per bundled light model (default: all nine), in one process, one model at a
time: onnxruntime's CPU session creation on the same model bytes (the
median of 3), then what `ge-compile` does to write an offline model --
import, `compile_module`, assembly and the `.om` write, with Python's
cyclic collector paused over the whole job as ge-compile pauses it -- timed
stage by stage; the ratio of the two (issue 14: ResNet-50 at most 2x) and the
milliseconds per thousand npu ops. "npu IR built": the compiled module
cloned op by op, what xDSL takes to build the final IR alone; "floor":
import, that, assembly and the `.om` write -- what a compile costs with no
pass doing any work but build its output -- over onnxruntime's session. `--stages` adds the pipeline stages that
took 0.3 s or more (timed between `compile_module`'s `dump` callbacks).
Run it in a worktree of another commit
(`PYTHONPATH=<worktree> python <worktree>/benchmarks/compile_time.py`) to
compare.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import onnx

from gedialects.frontend.onnx_import import import_model
from gedialects.zoo import LIGHT_MODELS, light_model_path, light_models_error
from lowering.pipeline import DEFAULT_PRECISION, collector_paused, compile_module


def onnxruntime_session_seconds(model_bytes: bytes, repeats: int = 3) -> float:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3  # the light models' unused initializers warn, one line each
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        ort.InferenceSession(model_bytes, options, providers=["CPUExecutionProvider"])
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def measure(name: str, precision: str) -> dict:
    path = light_model_path(name)
    model_bytes = Path(path).read_bytes()
    row = {"model": name, "ort_s": onnxruntime_session_seconds(model_bytes)}
    stages: dict[str, float] = {}
    last = [0.0]

    def dump(stage: str, _module) -> None:
        now = time.perf_counter()
        stages[stage] = now - last[0]
        last[0] = now

    with collector_paused():  # as ge-compile runs the job
        t0 = time.perf_counter()
        module = import_model(onnx.load_from_string(model_bytes), {}, source=name)
        t1 = last[0] = time.perf_counter()
        compiled = compile_module(module, precision, dump=dump)
        t2 = time.perf_counter()
        program = compiled.program()
        t3 = time.perf_counter()
        with tempfile.TemporaryDirectory() as tmp:
            program.save(Path(tmp) / f"{name}.om")
        t4 = time.perf_counter()
        compiled.module.clone()  # the final IR built again, op by op
        t5 = time.perf_counter()
    row.update(import_s=t1 - t0, compile_s=t2 - t1, assemble_s=t3 - t2, save_s=t4 - t3, total_s=t4 - t0,
               npu_ir_s=t5 - t4, floor_s=(t1 - t0) + (t5 - t4) + (t4 - t2), npu_ops=compiled.npu_ops, stages=stages)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*", default=list(LIGHT_MODELS))
    ap.add_argument("--precision-mode", default=DEFAULT_PRECISION)
    ap.add_argument("--stages", action="store_true", help="also the pipeline stages that took 0.3 s or more")
    args = ap.parse_args()
    if (error := light_models_error(args.models)) is not None:
        ap.error(error)
    head = ("| model | npu ops | onnxruntime session | import | compile | assemble | .om write | total "
            "| total / onnxruntime | ms per 1k npu ops | npu IR built | floor / onnxruntime |")
    print(head + (" stages >= 0.3 s |" if args.stages else ""))
    print("|---|" + "---:|" * 11 + ("---|" if args.stages else ""))
    for name in args.models:
        r = measure(name, args.precision_mode)
        line = (f"| {name} | {r['npu_ops']:,} | {r['ort_s']:.2f} s | {r['import_s']:.2f} s | {r['compile_s']:.2f} s "
                f"| {r['assemble_s']:.2f} s | {r['save_s']:.2f} s | {r['total_s']:.2f} s "
                f"| {r['total_s'] / r['ort_s']:.1f}x | {1000 * r['total_s'] / max(1, r['npu_ops']) * 1000:.0f} "
                f"| {r['npu_ir_s']:.2f} s | {r['floor_s'] / r['ort_s']:.1f}x |")
        if args.stages:
            line += " " + ", ".join(f"{k} {v:.1f}" for k, v in r["stages"].items() if v >= 0.3) + " |"
        print(line, flush=True)


if __name__ == "__main__":
    main()
