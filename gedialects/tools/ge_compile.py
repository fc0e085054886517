"""ge-compile: ATC-like one-shot compiler, ONNX model -> offline model (.om).

    ge-compile MODEL.onnx [--input-shape 'x:1,3,224,224'] -o MODEL.om
               [--precision-mode force_fp16|must_keep_origin_dtype] [--calibration IN.npz]
               [--target davinci-910] [--fusion-switch-file F] [--no-fuse]
               [--dump-ir DIR] [--log LEVEL]

Stages: import, graph-canonicalize, graph-decompose, graph-fuse, graph-plan-memory,
graph-partition, assign-layouts, convert-graph-to-tile, the tile passes
(ge-tile-opt), convert-tile-to-npu, npu-insert-sync, assemble, save
(`lowering.pipeline.compile_module`; the same stages as `ge-opt -p ge-compile`).
`--dump-ir DIR` writes the IR after each stage as `NN-<stage>.mlir`.
The offline model is written with `target.program.Program.save` and runs
with `ge-run MODEL.om`. A one-screen summary goes to stdout. Problems are one
`ge-compile: error: ...` line and exit 1 (2 for an internal error; set
GE_OPT_TRACEBACK=1 for the traceback).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence

from gedialects.tools.cli import (
    EXIT_OK,
    ArgumentParser,
    UserError,
    add_log_flag,
    check_writable,
    load_module,
    log_to_stderr,
    read_npz,
    run_cli,
)
from lowering.graph_to_tile import DEFAULT_PRECISION, check_precision_mode



def build_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(
        prog="ge-compile",
        description="Compile an ONNX model to an offline model (.om) for the simulated NPU.",
    )
    p.add_argument("model", help="an .onnx model (or a graph-dialect .mlir file)")
    p.add_argument("-o", "--output", required=True, help="offline model to write (.om)")
    p.add_argument("--input-shape", default="", help="fix input shapes, ATC syntax: 'x:1,3,224,224;y:4,8'")
    p.add_argument(
        "--precision-mode",
        default=DEFAULT_PRECISION,
        help="force_fp16 (fp16 storage, fp32 accumulation, tensors scaled into fp16's range) or "
        f"must_keep_origin_dtype (fp32 throughout); default {DEFAULT_PRECISION}; see docs/LOWERING.md, Precision modes",
    )
    p.add_argument(
        "--calibration", metavar="NPZ",
        help="force_fp16: inputs to calibrate the range scaling on (npz keyed by graph input name; "
        "default: seeded standard normal)",
    )
    p.add_argument("--target", default="davinci-910", help="target preset name or config file")
    p.add_argument("--fusion-switch-file", default="", help="ATC fusion switch file for graph-fuse")
    p.add_argument("--no-aicpu-fallback", action="store_true",
                   help="refuse the model if any op has no AI-core kernel (listing every such op) "
                   "instead of running it on the AI CPU")
    p.add_argument("--no-fuse", action="store_true", help="skip graph-fuse")
    p.add_argument("--dump-ir", metavar="DIR", help="write the IR after every stage to DIR/NN-<stage>.mlir")
    add_log_flag(p)
    return p


class Dumper:
    """Writes DIR/NN-<stage>.mlir after each stage."""

    def __init__(self, directory: str | None):
        self.dir = directory
        self.n = 0
        self.files: list[str] = []
        if directory:
            try:
                os.makedirs(directory, exist_ok=True)
            except OSError as e:
                raise UserError(f"--dump-ir: cannot create '{directory}': {e.strerror}") from None

    def __call__(self, stage: str, module) -> None:
        if not self.dir:
            return
        from xdsl.dialects.builtin import Builtin
        from xdsl.printer import Printer

        path = os.path.join(self.dir, f"{self.n:02d}-{stage}.mlir")
        self.n += 1
        try:
            with open(path, "w") as f:
                printer = Printer(stream=f)
                printer.print_op(module)
                printer.print_metadata([Builtin])  # dense_resource blobs: the dump parses back
                f.write("\n")
        except OSError as e:
            raise UserError(f"--dump-ir: cannot write '{path}': {e.strerror}") from None
        self.files.append(path)


def _mb(n: int) -> str:
    return f"{n / (1 << 20):.2f} MiB ({n} bytes)"


def aicpu_op_summary(module) -> str:
    """'graph.where 2, graph.gather 1': the graph ops of the AI-CPU tasks."""
    from collections import Counter

    from gedialects.npu.ops import AicpuOp, AicpuReturnOp

    ops = Counter(
        inner.name for task in module.walk() if isinstance(task, AicpuOp)
        for inner in task.body.block.ops if not isinstance(inner, AicpuReturnOp) and inner.name not in ("graph.fill",)
    )
    return ", ".join(f"{name} {n}" for name, n in ops.most_common())


def compile_model(args) -> int:
    from lowering.pipeline import compile_module
    from target.assembler import assemble
    from target.config import load_target

    check_precision_mode(args.precision_mode)
    load_target(args.target)  # a bad target fails before the long part
    if args.fusion_switch_file and not os.path.exists(args.fusion_switch_file):
        raise UserError(f"--fusion-switch-file: {args.fusion_switch_file}: no such file")
    check_writable(args.output)  # before the long part: directory exists and is writable
    calibration = read_npz(args.calibration, "calibration inputs")
    t0 = time.perf_counter()
    dump = Dumper(args.dump_ir)
    module = load_module(args.model, args.input_shape)
    dump("import", module)
    compiled = compile_module(
        module,
        args.precision_mode,
        args.target,
        fuse=not args.no_fuse,
        dump=dump,
        fusion_switch_file=args.fusion_switch_file,
        calibration=calibration,
        aicpu_fallback=not args.no_aicpu_fallback,
    )
    program = assemble(compiled.module)
    try:
        program.save(args.output)
    except OSError as e:
        raise UserError(f"cannot write '{args.output}': {e.strerror or e}") from None
    seconds = time.perf_counter() - t0
    mem = compiled.memory
    kinds = ", ".join(f"{k} {v}" for k, v in sorted(compiled.kernel_kinds.items()))
    print(f"ge-compile: {args.model} -> {args.output}")
    print(f"  precision mode   {args.precision_mode}, target {args.target}, fuse {'off' if args.no_fuse else 'on'}")
    print(f"  kernels          {compiled.kernels} ({kinds})")
    if compiled.aicpu:
        print(f"  AI CPU           {compiled.aicpu} op(s) ({aicpu_op_summary(compiled.module)})")
    print(f"  transdata        {compiled.transdata}")
    print(f"  npu ops          {compiled.npu_ops}")
    if mem:
        print(
            f"  GM arena         {_mb(int(mem['arena_size']))}, no reuse {_mb(int(mem['no_reuse']))}, "
            f"{mem['tensors']} tensors, {mem['strategy']}"
        )
    print(f"  GM size          {_mb(program.gm_size)}")
    if dump.files:
        print(f"  IR dumps         {len(dump.files)} files in {args.dump_ir}")
    print(f"  compile time     {seconds:.2f} s")
    return EXIT_OK


def run(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    with log_to_stderr("ge-compile", args.log):
        return compile_model(args)


def main(argv: Sequence[str] | None = None) -> int:
    return run_cli("ge-compile", lambda: run(argv))  # target errors are user errors (run_cli)


if __name__ == "__main__":
    sys.exit(main())
