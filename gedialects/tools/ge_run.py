"""ge-run: execute a model and write its outputs.

    ge-run MODEL(.onnx|.mlir|.om) [--backend reference|npu] [--inputs IN.npz]
           [--output OUT.npz] [--input-shape 'x:1,3,224,224'] [--check]
           [--target davinci-910] [--profile trace.json [--profile-level kernel|pipe]] [--op-summary ops.csv]

npz keys are the graph's input and output names. Without --inputs, inputs
are random (seeded): floats standard normal, integers and booleans 0 or 1
(valid as an attention mask, a token id or an index). --check compares with onnxruntime and exits 1 on a
mismatch (an .onnx model, or an .om / npu .mlir with `--onnx` naming the ONNX
model it was compiled from; a .pt2 program is checked against torch running it); the criterion follows the precision mode
(`CHECK_TOLERANCE`: gedialects/numerics.py). The npu backend simulates
npu-level programs (an .om offline model or an .mlir holding an npu.program).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

import numpy as np

from gedialects.numerics import CRITERIA, Criterion
from gedialects.tools.cli import (
    ArgumentParser,
    add_log_flag,
    add_device_memory_limit_flag,
    add_max_streams_flag,
    check_device_memory_limit,
    check_max_streams,
    log_to_stderr,
    EXIT_OK,
    EXIT_USER,
    UserError,
    check_inputs,
    check_writable,
    load_module,
    npz_path,
    model_path,
    read_npz,
    run_cli,
)
from gedialects.tools.progress import progress_bar, wanted
from lowering.graph_to_tile import DEFAULT_PRECISION, PRECISION_MODES

# precision mode -> criterion of --check against onnxruntime (gedialects/numerics.py:
# fp32 elementwise plus a normwise term for summation order; force_fp16 normwise)
CHECK_TOLERANCE = CRITERIA


def build_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(
        prog="ge-run", description="Run a model on a gedialects backend and write its outputs."
    )
    p.add_argument(
        "model",
        help="an .onnx model, a .pt2 torch.export program, a graph-dialect .mlir file, or the name of a bundled "
        "light model (resnet50, squeezenet, ...)",
    )
    p.add_argument(
        "--backend",
        choices=["reference", "npu"],
        default=None,
        help="reference: the numpy interpreter of the graph dialect; npu: compile (graph -> tile -> "
        "npu) and run on the simulated NPU; .om and npu-level .mlir are simulated as they are. Default: npu",
    )
    p.add_argument(
        "--precision-mode",
        default=None,
        choices=PRECISION_MODES,
        help=f"npu backend: ATC precision mode (default {DEFAULT_PRECISION}: fp16 storage, fp32 accumulation, "
        "tensors scaled into fp16's range; must_keep_origin_dtype: fp32 throughout; see docs/LOWERING.md). "
        "An .om runs as it was compiled; this picks the --check tolerance",
    )
    p.add_argument("--no-aicpu-fallback", action="store_true",
                   help="refuse the model if any op has no AI-core kernel (listing every such op) "
                   "instead of running it on the AI CPU")
    p.add_argument("--no-fuse", action="store_true", help="npu backend: compile without graph-fuse")
    add_max_streams_flag(p)
    add_device_memory_limit_flag(p)
    p.add_argument("--target", default="davinci-910", help="npu backend: target preset name or config file")
    p.add_argument("--profile", help="npu backend: write a Chrome trace-event JSON profile here")
    p.add_argument("--profile-level", choices=["kernel", "pipe"], default="kernel",
                   help="--profile's detail: kernel (a span per launch and AI-CPU task, with its op names and "
                   "shapes; default) or pipe (also every instruction on its core and pipe: large)")
    p.add_argument("--races", choices=["off", "warn", "error"], default="off",
                   help="npu backend: the simulator's race detector. off (default): none, and the blocks of a "
                   "launch run in lock-step (outputs and cycles the same, 2-4x faster); error: stop at the "
                   "first data race (between the pipes of a core, the blocks of a launch, or streams); warn: "
                   "list them under the profile. With the detector blocks run one by one (docs/NPU.md)")
    p.add_argument("--timing-only", action="store_true",
                   help="npu backend: simulate the cycles only, computing no value (the profile and op summary "
                   "as a full run's; no outputs, so no --check or --output; lock-step, no race detector)")
    p.add_argument("--op-summary", metavar="CSV",
                   help="npu backend: write the op summary (msprof's op_summary columns: op name, type, "
                   "shapes, formats, duration, pipe ratios, GM bytes, bound) as CSV here")
    add_log_flag(p)
    p.add_argument("--inputs", help="npz file of inputs, keyed by graph input name (default: random, seeded: "
                   "floats standard normal, integers 0 or 1)")
    p.add_argument("--calibration", metavar="NPZ",
                   help="npu backend, force_fp16: inputs to calibrate the range scaling on (npz keyed by "
                   "graph input name; default: seeded standard normal)")
    p.add_argument("--output", help="npz file to write the outputs to, keyed by output name")
    p.add_argument("--input-shape", default="", help="fix dynamic dims, ATC syntax: 'x:1,3,224,224;y:4,8'")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")
    p.add_argument("--check", action="store_true",
                   help="compare with onnxruntime (a .pt2 program: with torch running it); exit 1 on mismatch")
    p.add_argument(
        "--onnx", help="--check of an .om or npu .mlir: the ONNX model it was compiled from (the oracle)"
    )
    p.add_argument(
        "--rtol", type=float, default=None,
        help="relative tolerance of --check, replacing the precision mode's relative terms (default: fp32 "
        "1e-4 of |value| plus 1e-4 of the largest |value|; force_fp16 5e-3 of the largest |value|; "
        "gedialects/numerics.py)",
    )
    p.add_argument(
        "--atol", type=float, default=None,
        help="absolute tolerance of --check (default by precision mode: 1e-5 fp32, 1e-3 force_fp16)",
    )
    return p


def make_inputs(fn, given: dict[str, np.ndarray] | None, seed: int) -> dict[str, np.ndarray]:
    from gedialects.graph.interpreter import input_names
    from gedialects.graph.shapes import DYN
    from gedialects.graph.tensors import numpy_dtype

    rng = np.random.default_rng(seed)
    wanted = {
        name: (numpy_dtype(arg.type.element_type), tuple(None if d == DYN else d for d in arg.type.get_shape()))
        for name, arg in zip(input_names(fn), fn.args)
    }
    if given is not None:  # names, dtypes, values and shapes checked against the model
        return check_inputs(given, wanted)
    out: dict[str, np.ndarray] = {}
    for name, arg in zip(input_names(fn), fn.args):
        shape = tuple(arg.type.get_shape())
        dtype = numpy_dtype(arg.type.element_type)
        if DYN in shape:
            raise UserError(f"input '{name}' has dynamic shape {_fmt(shape)}; fix it with --input-shape")
        if np.issubdtype(dtype, np.floating):
            out[name] = rng.standard_normal(shape).astype(dtype)
        else:  # 0 or 1: a mask of 2 or 3 turns BERT's (1 - mask) * finfo.min into inf, its softmax into NaN
            out[name] = rng.integers(0, 2, shape).astype(dtype)
    return out


def _fmt(shape) -> str:
    from gedialects.graph.shapes import fmt

    return fmt(shape)


def check_with_onnxruntime(path: str, inputs, outputs, criterion: Criterion) -> list[str]:
    """Mismatch lines, one per output that differs from onnxruntime."""
    import onnx

    from gedialects.zoo import onnxruntime_outputs

    return mismatches(onnxruntime_outputs(onnx.load(path), inputs), outputs, criterion, "onnxruntime")


def mismatches(expected: dict, outputs: dict, criterion: Criterion, oracle: str) -> list[str]:
    """One line per output that differs from the oracle's; a warning for
    each oracle output that is NaN or infinite somewhere (it matches only
    exactly there, which says little about the compiled model)."""
    problems = []
    for name, want in expected.items():
        floating = np.issubdtype(np.asarray(want).dtype, np.floating)
        bad = int(np.size(want) - np.count_nonzero(np.isfinite(want))) if floating else 0
        if bad:
            print(f"ge-run: warning: {oracle}'s output '{name}' is NaN or infinite in {bad} of {np.size(want)} values: "
                  "there the check passes only on the same value, which proves little; are the inputs in the "
                  "model's domain? (--inputs gives yours)", file=sys.stderr)
        got = outputs[name]
        if got.shape != want.shape:
            problems.append(f"output '{name}': shape {got.shape} vs {oracle} {want.shape}")
            continue
        result = criterion.check(got, want)
        if not result.ok:
            problems.append(f"output '{name}': {result.describe()} ({criterion})")
    return problems


def check_with_torch(path: str, inputs, outputs, criterion: Criterion) -> list[str]:
    """Mismatch lines against torch running the saved program itself."""
    import torch

    from gedialects.frontend.torch_import import load_pt2

    program = load_pt2(path)
    with torch.no_grad():
        expected = program.module()(*(torch.from_numpy(np.ascontiguousarray(v)) for v in inputs.values()))
    flat = [t.numpy() for t in torch.utils._pytree.tree_leaves(expected)]
    if len(flat) != len(outputs):
        return [f"{len(outputs)} outputs here, {len(flat)} from torch"]
    return mismatches(dict(zip(outputs, flat)), outputs, criterion, "torch")


def _criterion(args) -> Criterion:
    return CHECK_TOLERANCE[args.precision_mode].override(args.rtol, args.atol)


def report_check(problems: list[str], outputs: dict, oracle: str, args) -> int:
    for p in problems:
        print(f"ge-run: mismatch: {p}", file=sys.stderr)
    if problems:
        return EXIT_USER
    criterion = _criterion(args)
    print(
        f"check: all {len(outputs)} output(s) match {oracle} "
        f"(rtol={criterion.norm_rtol or criterion.rtol}, atol={criterion.atol}, {args.precision_mode}): {criterion}"
    )
    return EXIT_OK


def is_npu_program(path: str) -> bool:
    if path.endswith(".om"):
        return True
    if path.endswith(".mlir") and os.path.exists(path):
        with open(path) as f:
            return "npu.program" in f.read()
    return False


def run_npu(args, given: dict[str, np.ndarray] | None) -> tuple[dict, dict]:
    """Simulate an npu-level program; (inputs, outputs)."""
    from target.errors import AssemblyError
    from target.run import load_program, random_inputs

    try:
        program = load_program(args.model)
    except AssemblyError as e:
        raise UserError(str(e)) from None
    args.precision_mode = args.precision_mode or program.meta.get("precision_mode", DEFAULT_PRECISION)
    inputs = random_inputs(program, args.seed)
    if given is not None:  # names, dtypes, values and shapes checked against the program
        inputs = check_inputs(given, {s.name: (s.dtype, s.shape) for s in program.inputs})
    return inputs, simulate_and_report(args, program, inputs)


def simulate_and_report(args, program, inputs: dict) -> dict:
    """Simulate an assembled program, print its profile (and write the trace
    --profile asks for); the outputs. Simulation errors are one line."""
    from target.config import load_target
    from target.errors import AssemblyError, SimulationError
    from target.profile import format_profile, write_chrome_trace, write_op_summary
    from target.simulator import simulate

    try:
        with progress_bar("simulate", wanted(args.log)) as progress:
            result = simulate(program, inputs, load_target(args.target), races=args.races,
                              trace=bool(args.profile) and args.profile_level == "pipe",
                              progress=progress, timing_only=args.timing_only)
    except (AssemblyError, SimulationError) as e:
        raise UserError(str(e)) from None
    print(format_profile(result.profile))
    if args.timing_only:
        print("timing only: the cycles and counters of a full run; no value was computed")
    for warning in result.profile.warnings:  # before --check's verdict, as msprof's overflow alarm
        if warning.startswith("overflow:"):
            print(f"ge-run: warning: {warning}", file=sys.stderr)
    for flag, path, write in (("--profile", args.profile, write_chrome_trace),
                              ("--op-summary", args.op_summary, write_op_summary)):
        if path:
            try:
                write(result.profile, path)
            except OSError as e:
                raise UserError(f"{flag}: cannot write '{path}': {e.strerror or e}") from None
    return result.outputs


def compile_and_run_npu(args, given: dict[str, np.ndarray] | None) -> tuple[dict, dict]:
    """Compile a graph-level model all the way to npu instructions and simulate it."""
    from gedialects.graph.interpreter import main_function
    from lowering.pipeline import collector_paused, compile_module
    from target.errors import AssemblyError

    module = load_module(args.model, args.input_shape)
    inputs = make_inputs(main_function(module), given, args.seed)
    calibration = read_npz(args.calibration, "calibration inputs")
    # compile and assemble as one job: resumed between them, the collector walks the finished IR
    with collector_paused(), progress_bar("compile", wanted(args.log)) as progress:
        compiled = compile_module(module, args.precision_mode, args.target, fuse=not args.no_fuse,
                                  calibration=calibration, aicpu_fallback=not args.no_aicpu_fallback,
                                  progress=progress, max_streams=args.max_streams,
                                  device_memory_limit=args.device_memory_limit)
        try:
            program = compiled.program()
        except AssemblyError as e:
            raise UserError(str(e)) from None
    print(
        f"compiled: {compiled.kernels} kernels ({compiled.aicpu} on the AI CPU), {compiled.transdata} transdata, "
        f"{compiled.streams} stream(s), {compiled.npu_ops} npu ops, {compiled.seconds:.2f} s ({args.precision_mode})"
    )
    return inputs, simulate_and_report(args, program, inputs)


def run(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    with log_to_stderr("ge-run", args.log):
        return run_model(args)


def run_model(args) -> int:
    from target.config import load_target

    # Everything that can be checked before the work starts: output paths,
    # the target, the inputs file (its arrays are checked against the model
    # once the model is loaded, before it runs).
    if args.timing_only:
        for flag, given_flag in (("--check", args.check), ("--output", args.output),
                                 ("--backend reference", args.backend == "reference"),
                                 (f"--races {args.races}", args.races != "off"),
                                 ("--profile-level pipe", args.profile_level == "pipe")):
            if given_flag:
                raise UserError(f"--timing-only neither computes values nor checks or traces them: drop {flag}, "
                                "or run without --timing-only")
    if args.output:
        check_writable(npz_path(args.output), "--output")
    for flag, path in (("--profile", args.profile), ("--op-summary", args.op_summary)):
        if path:
            check_writable(path, flag)
    backend = args.backend or "npu"
    check_max_streams(args.max_streams)
    check_device_memory_limit(args.device_memory_limit)
    if backend == "npu":
        load_target(args.target)  # ConfigError: one line
    given = read_npz(args.inputs, "inputs")
    if backend == "reference":  # the numpy interpreter computes in the model's dtype
        args.precision_mode = args.precision_mode or "must_keep_origin_dtype"
    elif not is_npu_program(args.model):
        args.precision_mode = args.precision_mode or DEFAULT_PRECISION
    if backend == "npu" and not is_npu_program(args.model):
        inputs, outputs = compile_and_run_npu(args, given)
    elif backend == "npu":
        inputs, outputs = run_npu(args, given)
    else:
        from gedialects.graph.interpreter import main_function
        from gedialects.graph.interpreter import run as run_reference

        module = load_module(args.model, args.input_shape)
        inputs = make_inputs(main_function(module), given, args.seed)
        outputs = run_reference(module, inputs)
    for name, value in outputs.items():
        with np.errstate(over="ignore"):  # a mask of -3.4e38 sums to -inf: say so, without a warning
            mean = float(np.mean(value))
        print(f"{name}: {value.dtype}{list(value.shape)} mean={mean:.6g}")
    if args.output:
        try:
            np.savez(npz_path(args.output), **outputs)
        except OSError as e:
            raise UserError(f"--output: cannot write '{args.output}': {e.strerror or e}") from None
    if args.check:
        path = args.onnx or model_path(args.model)
        if path.endswith(".pt2"):
            return report_check(check_with_torch(path, inputs, outputs, _criterion(args)), outputs, "torch", args)
        if not path.endswith(".onnx"):
            raise UserError("--check needs an .onnx model (onnxruntime is the oracle); for an .om give --onnx")
        if not os.path.exists(path):
            raise UserError(f"--onnx: {path}: no such file")
        return report_check(check_with_onnxruntime(path, inputs, outputs, _criterion(args)), outputs, "onnxruntime", args)
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    return run_cli("ge-run", lambda: run(argv))


if __name__ == "__main__":
    sys.exit(main())
