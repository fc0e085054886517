"""ge-compile: ATC-like one-shot compiler, ONNX model (or .pt2 torch.export program) -> offline model (.om).

    ge-compile MODEL.onnx [--input-shape 'x:1,3,224,224'] -o MODEL.om
               [--precision-mode force_fp16|must_keep_origin_dtype] [--calibration IN.npz]
               [--target davinci-910] [--fusion-switch-file F] [--no-fuse] [--max-streams N]
               [--device-memory-limit BYTES]
               [--dump-ir DIR] [--log LEVEL]
    ge-compile --model=MODEL.onnx --framework=5 --output=MODEL --soc_version=Ascend910
               [--input_shape=...] [--out_nodes=node:0;...] [--precision_mode=...]    (ATC's spellings)
    ge-compile --mode=1 --om=MODEL.om --json=MODEL.json    (an offline model as JSON)

Stages: import, graph-canonicalize, graph-decompose, graph-fuse, graph-plan-memory,
map-unbatch, conv-space-to-depth, graph-partition, assign-layouts, convert-graph-to-tile, the tile passes
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
    add_device_memory_limit_flag,
    add_max_streams_flag,
    check_device_memory_limit,
    check_max_streams,
    check_writable,
    load_module,
    log_to_stderr,
    read_npz,
    run_cli,
)
from gedialects.tools.progress import progress_bar, wanted
from lowering.graph_to_tile import DEFAULT_PRECISION, check_precision_mode
from lowering.pipeline import collector_paused



SOC_VERSIONS = {"Ascend910": "davinci-910", "Ascend910A": "davinci-910", "Ascend910B": "davinci-910b"}
"""ATC's --soc_version names -> the target presets modelled on those chips."""

ONNX_FRAMEWORK = "5"
"""ATC's --framework number of ONNX (0 Caffe, 1 MindSpore, 3 TensorFlow, 5 ONNX)."""


def build_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(
        prog="ge-compile",
        description="Compile an ONNX model to an offline model (.om) for the simulated NPU. "
        "ATC's spellings work too (--model, --output without .om, --framework=5, --input_shape, "
        "--input_format, --out_nodes, --precision_mode, --soc_version, --fusion_switch_file; --mode=1 --om M.om "
        "--json M.json dumps an offline model as JSON).",
    )
    p.add_argument("model", nargs="?", help="an .onnx model, a .pt2 torch.export program (torch.export.save) "
                   "or a graph-dialect .mlir file")
    p.add_argument("--model", dest="model_flag", metavar="MODEL", help="the model, as ATC spells it")
    p.add_argument("-o", "--output", help="offline model to write (.om is added when missing, as ATC does)")
    p.add_argument("--framework", help=f"ATC's source framework: {ONNX_FRAMEWORK} (ONNX) is the one read here")
    p.add_argument("--input-shape", "--input_shape", dest="input_shape", default="",
                   help="fix input shapes, ATC syntax: 'x:1,3,224,224;y:4,8'")
    p.add_argument("--out-nodes", "--out_nodes", dest="out_nodes", default="", metavar="NODE:INDEX;...",
                   help="ATC's choice of the graph's outputs: those outputs of those nodes, e.g. 'fc1:0;pool5:0'")
    p.add_argument("--input-format", "--input_format", dest="input_format", default="NCHW",
                   help="ATC's input format: NCHW or ND (the graph's inputs are read in their logical order)")
    p.add_argument(
        "--precision-mode", "--precision_mode", dest="precision_mode",
        default=DEFAULT_PRECISION,
        help="force_fp16 (fp16 storage, fp32 accumulation, tensors scaled into fp16's range) or "
        f"must_keep_origin_dtype (fp32 throughout); default {DEFAULT_PRECISION}; see docs/LOWERING.md, Precision modes",
    )
    p.add_argument(
        "--calibration", metavar="NPZ",
        help="force_fp16: inputs to calibrate the range scaling on (npz keyed by graph input name; "
        "default: seeded standard normal)",
    )
    p.add_argument("--target", default=None, help="target preset name or config file (default davinci-910)")
    p.add_argument("--soc-version", "--soc_version", dest="soc_version",
                   help=f"ATC's chip name: {', '.join(SOC_VERSIONS)} (selects the preset modelled on it)")
    p.add_argument("--fusion-switch-file", "--fusion_switch_file", dest="fusion_switch_file", default="",
                   help="ATC fusion switch file for graph-fuse")
    p.add_argument("--no-aicpu-fallback", action="store_true",
                   help="refuse the model if any op has no AI-core kernel (listing every such op) "
                   "instead of running it on the AI CPU")
    p.add_argument("--no-fuse", action="store_true", help="skip graph-fuse")
    add_max_streams_flag(p)
    add_device_memory_limit_flag(p)
    p.add_argument("--dump-ir", metavar="DIR", help="write the IR after every stage to DIR/NN-<stage>.mlir")
    p.add_argument("--mlir-elide-elementsattrs-if-larger", dest="elide_elements", type=int, metavar="N",
                   help="--dump-ir: elements attributes of more than N elements as dense_resource<__elided__>")
    p.add_argument("--mlir-elide-resource-strings-if-larger", dest="elide_resources", type=int, metavar="N",
                   help="--dump-ir: leave resource blobs longer than N characters out")
    p.add_argument("--fusion-report", "--fusion_report", dest="fusion_report", metavar="FILE.json",
                   help="write graph-fuse's match/effect counts per rule (as ge-opt and ATC's fusion_result.json)")
    p.add_argument("--memory-report", "--memory_report", dest="memory_report", metavar="FILE.json",
                   help="write the memory plan's figures per function (no_reuse, lower_bound, planned, as "
                   "ge-opt does) and the device arena the lowering uses")
    p.add_argument("--mode", default="0", help="ATC's mode: 0 compiles a model (default), 1 dumps --om as --json")
    p.add_argument("--om", metavar="OM", help="--mode=1: the offline model to dump")
    p.add_argument("--json", metavar="JSON", help="--mode=1: where to write the JSON")
    add_log_flag(p)
    return p


def resolve_atc_spellings(args) -> None:
    """Check ATC's flags and fold them into the plain ones (one line per problem)."""
    if args.model and args.model_flag:
        raise UserError("give the model once: as an argument or as --model")
    args.model = args.model or args.model_flag
    if args.framework is not None and args.framework != ONNX_FRAMEWORK:
        raise UserError(f"--framework={args.framework}: only {ONNX_FRAMEWORK} (ONNX) is read here")
    if args.input_format not in ("NCHW", "ND"):
        raise UserError(f"--input_format={args.input_format}: only NCHW and ND (the graph's logical order) are read")
    if args.soc_version is not None:
        if args.soc_version not in SOC_VERSIONS:
            raise UserError(f"--soc_version={args.soc_version}: expected one of {', '.join(SOC_VERSIONS)}")
        if args.target is not None and args.target != SOC_VERSIONS[args.soc_version]:
            raise UserError(f"--soc_version={args.soc_version} and --target {args.target} disagree")
        args.target = SOC_VERSIONS[args.soc_version]
    args.target = args.target or "davinci-910"
    if args.mode not in ("0", "1"):
        raise UserError(f"--mode={args.mode}: 0 (compile) and 1 (offline model to JSON) are the modes here")
    if args.mode == "1":
        if not args.om or not args.json:
            raise UserError("--mode=1 needs --om (the offline model) and --json (where to write it)")
        return
    if not args.model:
        raise UserError("no model: give an .onnx file (or --model)")
    if not args.output:
        raise UserError("no output: give -o/--output (the offline model to write)")
    if not args.output.endswith(".om"):
        args.output += ".om"


def dump_om_json(om: str, path: str) -> int:
    """ATC's --mode=1: the offline model's header as JSON, with each
    kernel's info (what it runs) and instruction count instead of its code."""
    import json

    from target.errors import AssemblyError
    from target.program import Program

    check_writable(path, "--json")
    try:
        program = Program.load(om)
    except AssemblyError as e:
        raise UserError(str(e)) from None
    doc = {
        "name": program.name,
        "gm_size": program.gm_size,
        "inputs": [{"name": s.name, "offset": s.offset, "shape": list(s.shape), "dtype": s.dtype} for s in program.inputs],
        "outputs": [{"name": s.name, "offset": s.offset, "shape": list(s.shape), "dtype": s.dtype} for s in program.outputs],
        "constants": [{"name": c.name, "offset": c.offset, "nbytes": len(c.data)} for c in program.constants],
        "kernels": [{"name": k.name, "instructions": len(k.code), "uses_cube": k.uses_cube, **k.info}
                    for k in program.kernels],
        "aicpu_tasks": [{"name": t.name, "kind": t.kind, "absorbed": list(t.absorbed), "source": t.source,
                         "reason": t.reason} for t in program.aicpu_tasks],
        "schedule": [list(e) for e in program.schedule],
        "meta": program.meta,
    }
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"ge-compile: {om} -> {path} ({len(program.kernels)} kernels, {len(program.aicpu_tasks)} AI-CPU tasks)")
    return EXIT_OK


class Dumper:
    """Writes DIR/NN-<stage>.mlir after each stage."""

    def __init__(self, directory: str | None, elide_elements: int | None = None, elide_resources: int | None = None):
        self.dir = directory
        self.elide = {"elide_elements": elide_elements, "elide_resources": elide_resources}
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

        from gedialects.textual import ElidingPrinter

        path = os.path.join(self.dir, f"{self.n:02d}-{stage}.mlir")
        self.n += 1
        try:
            with open(path, "w") as f:
                printer = ElidingPrinter(stream=f, **self.elide)
                printer.print_op(module)
                printer.print_metadata([Builtin])  # dense_resource blobs: the dump parses back (unless elided)
                f.write("\n")
        except OSError as e:
            raise UserError(f"--dump-ir: cannot write '{path}': {e.strerror}") from None
        self.files.append(path)


def write_memory_report(path: str, plans: dict, device: dict) -> None:
    """ge-opt's --memory-report figures per planned function, each with the
    device arena the lowering put its intermediates in (planned, its lower
    bound: the most bytes live at one task, and no reuse)."""
    import json

    report = {name: {**numbers, "device_arena": int(device.get("arena_size", 0)),
                     "device_lower_bound": int(device.get("lower_bound", 0)),
                     "device_no_reuse": int(device.get("no_reuse", 0))} for name, numbers in plans.items()}
    try:
        with open(path, "w") as f:
            json.dump(report, f, indent=2)
            f.write("\n")
    except OSError as e:
        raise UserError(f"--memory-report: cannot write '{path}': {e.strerror or e}") from None


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


@collector_paused()  # the whole job: resumed between compile and save, the collector walks the finished IR
def compile_model(args) -> int:
    from lowering.pipeline import compile_module
    from target.config import load_target

    check_precision_mode(args.precision_mode)
    check_max_streams(args.max_streams)
    check_device_memory_limit(args.device_memory_limit)
    load_target(args.target)  # a bad target fails before the long part
    if args.fusion_switch_file and not os.path.exists(args.fusion_switch_file):
        raise UserError(f"--fusion-switch-file: {args.fusion_switch_file}: no such file")
    check_writable(args.output)  # before the long part: directory exists and is writable
    for flag, path in (("--fusion-report", args.fusion_report), ("--memory-report", args.memory_report)):
        if path:
            check_writable(path, flag)
    if args.fusion_report and args.no_fuse:
        raise UserError("--fusion-report needs graph-fuse (drop --no-fuse)")
    calibration = read_npz(args.calibration, "calibration inputs")
    t0 = time.perf_counter()
    dump = Dumper(args.dump_ir, args.elide_elements, args.elide_resources)
    module = load_module(args.model, args.input_shape, args.out_nodes)
    dump("import", module)
    plans: dict = {}

    def after_stage(stage: str, m) -> None:
        dump(stage, m)
        if stage == "plan-memory" and args.memory_report:  # the graph plan, before lowering rewrites it
            from gedialects.graph.memory.report import memory_report

            plans.update(memory_report(m))
    with progress_bar("compile", wanted(args.log)) as progress:
        compiled = compile_module(
            module,
            args.precision_mode,
            args.target,
            fuse=not args.no_fuse,
            dump=after_stage,
            fusion_switch_file=args.fusion_switch_file,
            calibration=calibration,
            aicpu_fallback=not args.no_aicpu_fallback,
            progress=progress,
            fusion_report=args.fusion_report or "",
            max_streams=args.max_streams,
            device_memory_limit=args.device_memory_limit,
        )
    if args.memory_report:
        write_memory_report(args.memory_report, plans, compiled.memory)
    program = compiled.program()
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
    print(f"  streams          {compiled.streams} ({compiled.events} events)")
    print(f"  npu ops          {compiled.npu_ops}")
    if mem:
        print(
            f"  GM arena         {_mb(int(mem['arena_size']))}, lower bound {_mb(int(mem.get('lower_bound', 0)))}, "
            f"no reuse {_mb(int(mem['no_reuse']))}, {mem['tensors']} tensors, {mem['strategy']}"
        )
    if "device_memory_limit" in mem:
        print(f"  memory limit     {_mb(int(mem['device_memory_limit']))}: {mem.get('offloaded', 0)} offloaded "
              f"({_mb(int(mem.get('host_bytes', 0)))} on host, ~{mem.get('copy_cycles', 0)} copy cycles), "
              f"{mem.get('recomputed', 0)} recomputed, {mem.get('sliced', 0)} conv outputs sliced")
    print(f"  GM size          {_mb(program.gm_size)}")
    if dump.files:
        print(f"  IR dumps         {len(dump.files)} files in {args.dump_ir}")
    print(f"  compile time     {seconds:.2f} s")
    return EXIT_OK


def run(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    with log_to_stderr("ge-compile", args.log):
        resolve_atc_spellings(args)
        if args.mode == "1":
            return dump_om_json(args.om, args.json)
        return compile_model(args)


def main(argv: Sequence[str] | None = None) -> int:
    return run_cli("ge-compile", lambda: run(argv))  # target errors are user errors (run_cli)


if __name__ == "__main__":
    sys.exit(main())
