"""Status of the model zoo (tests/zoo/models) through the compiler: a Markdown table.

    .venv/bin/python benchmarks/zoo_status.py [NAME ...] [--timeout 300] [--jobs 1] [--markdown | --json]

NAME is a zoo model ("bert", "bert.dynamo", ...; default: all of
tests/zoo/zoo.py's `zoo_models()`). Per model, on its committed example
inputs (NAME.inputs.npz), the columns:

- ONNX nodes: nodes of the ONNX graph;
- graph ops: graph-dialect operators after graph-canonicalize and graph-fuse
  (as the fp32 compile sees them): ops of `gedialects.graph.ops.GraphOp`
  subclasses and graph.fusion ops directly in the function bodies (not the
  ops inside a fusion body; graph.constant and graph.fill not counted);
- AI-CPU ops, kernels, transdata: `Compiled.aicpu` (ops graph-partition
  placed on the AI CPU), `Compiled.kernels` and `Compiled.transdata` (the
  layout conversions assign-layouts placed, each a kernel) of the fp32
  compile;
- import: `import_model(onnx.load(path), {}, source=path)`; a FrontendError's
  one-line message is recorded (file path and node location dropped);
- reference vs ort: `gedialects.graph.interpreter.run` vs onnxruntime
  (`gedialects.zoo.onnxruntime_outputs`), judged by the fp32 criterion
  `gedialects.numerics.CRITERIA["must_keep_origin_dtype"]` (the interpreter
  computes in fp32): "ok"/"MISMATCH" by `Criterion.check` on every output,
  then max |got - ort| over all outputs / max |ort|;
- npu fp32 / npu fp16: `compile_module(module, precision=P)` with P
  must_keep_origin_dtype / force_fp16 (default calibration), then
  `run_compiled(compiled, inputs).outputs` vs onnxruntime: the same numbers,
  judged by `CRITERIA[P]` (the criterion of ge-run --check); or the one-line
  error ("compile:" for a PassFailedException, "run:" for an
  assembler/simulator error, the exception type otherwise);
- cycles fp32: `run_compiled(...).profile.total_cycles` of the fp32 run.

"—": not reached (import failed, the stage timed out or died, or failed
before that number exists).

Each stage (import + reference, npu fp32, npu fp16) runs in its own
subprocess with a timeout, so a slow or crashing model does not block the
table; a worker passes its results back as one JSON line on stdout.

Output (stdout): by default the table with error cells cut to 80 characters,
then the import failures and the reference's and each npu stage's failures,
deduplicated, with counts and models (full messages), then the summary line
"N models: import X/N, reference X/N, npu fp32 X/N, npu fp16 X/N" (a stage
passes when its criterion holds). --markdown prints only the table (error
cells up to 220 characters; for the README) and writes the summary line to
stderr. --json prints the rows as JSON. Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "zoo"))

from zoo import zoo_inputs, zoo_models, zoo_path  # noqa: E402

PRECISIONS = {"npu_fp32": "must_keep_origin_dtype", "npu_fp16": "force_fp16"}
REFERENCE_PRECISION = "must_keep_origin_dtype"  # the reference interpreter computes in fp32
MAX_CELL = 220  # --markdown: the table is the only place the errors show
COMPACT_CELL = 80  # default: the failure tables below give the full messages


def one_line(e: BaseException) -> str:
    lines = str(e).strip().splitlines()
    return lines[0] if lines else type(e).__name__


def short_import_error(msg: str) -> str:
    """A FrontendError message without the file path and the node location."""
    msg = re.sub(r"^\S+\.onnx: ", "", msg)
    return re.sub(r" \(node '[^']*', \w+, opset \d+\)$", "", msg)


def error_kind(msg: str) -> str:
    """An error message with its model-specific parts (kernel numbers, byte
    ranges, op numbers, locations) blanked, to count alike errors together."""
    msg = re.sub(r"\bk\d+_", "kN_", msg)
    msg = re.sub(r"\[\d+, \d+\)", "[…)", msg)
    msg = re.sub(r"#\d+", "#N", msg)
    msg = re.sub(r'loc\("[^"]*"\)', "loc(…)", msg)
    return re.sub(r"\b(\w+)\.onnx\b", "MODEL.onnx", msg)


def compare(got: dict, want: dict, precision: str) -> dict:
    """Every output of `want` (onnxruntime's) against `got` by
    `CRITERIA[precision].check`; err = the largest |got - want| of all
    outputs, peak = the largest finite |want|."""
    import numpy as np

    from gedialects.numerics import CRITERIA

    criterion = CRITERIA[precision]
    err, peak, ok = 0.0, 0.0, True
    for name, w in want.items():
        if name not in got:
            return {"error": f"no output '{name}' (got {', '.join(got)})"}
        g, w = np.asarray(got[name]), np.asarray(w)
        if g.shape != w.shape:
            if g.size != w.size:
                return {"error": f"output '{name}' has shape {list(g.shape)}, onnxruntime {list(w.shape)}"}
            g = g.reshape(w.shape)
        result = criterion.check(g, w)
        ok &= result.ok
        err = max(err, result.max_err)
        a = np.abs(w.astype(np.float64))
        peak = max(peak, float(a[np.isfinite(a)].max(initial=0.0)))
    return {"ok": bool(ok), "err": err, "peak": peak}


def load(name: str):
    import onnx

    from gedialects.frontend.onnx_import import import_model

    path = str(zoo_path(name))
    model = onnx.load(path)
    return model, import_model(model, {}, source=path)


def count_graph_ops(module) -> int:
    """Operators (GraphOp subclasses and graph.fusion) directly in the
    function bodies of `module`: not inside fusion bodies, no constants/fills."""
    from xdsl.dialects import func

    from gedialects.graph.ops import FusionOp, GraphOp

    n = 0
    for fn in module.body.block.ops:
        if isinstance(fn, func.FuncOp) and not fn.is_declaration:
            for block in fn.body.blocks:
                n += sum(1 for op in block.ops if isinstance(op, GraphOp | FusionOp))
    return n


def stage_reference(name: str) -> dict:
    """Import, then the reference interpreter vs onnxruntime."""
    import warnings

    import onnx

    from gedialects.frontend.errors import FrontendError
    from gedialects.graph.interpreter import run
    from gedialects.zoo import onnxruntime_outputs

    warnings.filterwarnings("ignore")
    model = onnx.load(str(zoo_path(name)))
    out: dict = {"nodes": len(model.graph.node)}
    try:
        _, module = load(name)
    except FrontendError as e:
        out["import"] = {"error": short_import_error(one_line(e)), "frontend": True}
        return out
    except Exception as e:  # noqa: BLE001 - an importer crash is a finding too
        out["import"] = {"error": f"{type(e).__name__}: {one_line(e)}"}
        return out
    out["import"] = {"ok": True}
    inputs = zoo_inputs(name)
    want = onnxruntime_outputs(model, inputs)
    try:
        got = run(module, inputs)
    except Exception as e:  # noqa: BLE001
        out["reference"] = {"error": f"{type(e).__name__}: {one_line(e)}"}
        return out
    out["reference"] = compare(got, want, REFERENCE_PRECISION)
    return out


def stage_npu(name: str, precision: str) -> dict:
    """Compile at `precision`, simulate, compare with onnxruntime. Besides
    the verdict: graph_ops (counted after graph-fuse), kernels, aicpu (once
    compiled), cycles (once run)."""
    import warnings

    from xdsl.utils.exceptions import PassFailedException

    from gedialects.zoo import onnxruntime_outputs
    from lowering.pipeline import compile_module, run_compiled

    warnings.filterwarnings("ignore")
    model, module = load(name)
    inputs = zoo_inputs(name)
    stats: dict = {}

    def dump(stage: str, m) -> None:
        if stage == "fuse":
            stats["graph_ops"] = count_graph_ops(m)

    t0 = time.perf_counter()
    try:
        compiled = compile_module(module, precision=precision, dump=dump)
    except PassFailedException as e:
        return {"error": f"compile: {one_line(e)}", **stats}
    except Exception as e:  # noqa: BLE001
        return {"error": f"compile: {type(e).__name__}: {one_line(e)}", **stats}
    stats.update(kernels=compiled.kernels, aicpu=compiled.aicpu, transdata=compiled.transdata)
    t1 = time.perf_counter()
    try:
        result = run_compiled(compiled, inputs)
    except Exception as e:  # noqa: BLE001
        from target.errors import AssemblyError, SimulationError

        kind = "" if isinstance(e, (AssemblyError, SimulationError)) else f"{type(e).__name__}: "
        return {"error": f"run: {kind}{one_line(e)}", **stats}
    t2 = time.perf_counter()
    stats["cycles"] = int(result.profile.total_cycles)
    res = compare(result.outputs, onnxruntime_outputs(model, inputs), precision)
    res["seconds"] = [round(t1 - t0, 1), round(t2 - t1, 1)]
    return {**res, **stats}


def worker(name: str, stage: str) -> None:
    res = stage_reference(name) if stage == "reference" else stage_npu(name, PRECISIONS[stage])
    print("ZOO-STATUS " + json.dumps(res))


def run_stage(name: str, stage: str, timeout: float) -> dict:
    cmd = [sys.executable, __file__, "--worker", stage, name]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT,
                              env={**os.environ, "PYTHONWARNINGS": "ignore"})
    except subprocess.TimeoutExpired:
        return {"error": f"timeout after {timeout:.0f} s"}
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("ZOO-STATUS "):
            res = json.loads(line[len("ZOO-STATUS "):])
            res.setdefault("wall", round(time.perf_counter() - t0, 1))
            return res
    tail = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
    return {"error": f"worker died (exit {proc.returncode}): {tail}"}


def run_model(name: str, timeout: float) -> dict:
    row = {"name": name}
    ref = run_stage(name, "reference", timeout)
    row["nodes"] = ref.get("nodes", "?")
    row["import"] = ref.get("import", {"error": ref.get("error", "?")})
    row["reference"] = ref.get("reference")
    if row["import"].get("ok"):
        for stage in PRECISIONS:
            row[stage] = run_stage(name, stage, timeout)
    print(f"[zoo_status] {name}: done", file=sys.stderr, flush=True)
    return row


def cell(res: dict | None, width: int = MAX_CELL) -> str:
    if res is None:
        return "—"
    if "error" in res:
        text = res["error"]
    elif "err" in res:
        text = f"{'ok' if res['ok'] else 'MISMATCH'} {res['err']:.2g} / {res['peak']:.3g}"
    else:
        text = "ok"
    text = text.replace("|", "\\|").replace("\n", " ")
    return text if len(text) <= width else text[: width - 1] + "…"


def number(row: dict, key: str, fmt: str = "{}") -> str:
    """`key` of the fp32 stage's results ("—" if it did not get that far)."""
    value = (row.get("npu_fp32") or {}).get(key)
    return "—" if value is None else fmt.format(value)


def print_table(rows: list[dict], width: int) -> None:
    print("| model | ONNX nodes | graph ops | AI-CPU ops | kernels | transdata | import | reference vs ort | "
          "npu fp32 | npu fp16 | cycles fp32 |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | --- | --- | --- | --- | ---: |")
    for r in rows:
        print(f"| {r['name']} | {r['nodes']} | {number(r, 'graph_ops')} | {number(r, 'aicpu')} | "
              f"{number(r, 'kernels')} | {number(r, 'transdata')} | {cell(r['import'], width)} | {cell(r['reference'], width)} | "
              f"{cell(r.get('npu_fp32'), width)} | {cell(r.get('npu_fp16'), width)} | "
              f"{number(r, 'cycles', '{:,}')} |")


def summary_line(rows: list[dict]) -> str:
    n = len(rows)
    ok = {k: sum(1 for r in rows if (r.get(k) or {}).get("ok")) for k in ("import", "reference", *PRECISIONS)}
    return (f"{n} models: import {ok['import']}/{n}, reference {ok['reference']}/{n}, "
            f"npu fp32 {ok['npu_fp32']}/{n}, npu fp16 {ok['npu_fp16']}/{n}")


def print_failures(rows: list[dict]) -> None:
    failures = Counter(r["import"]["error"] for r in rows if "error" in r["import"])
    if failures:
        print()
        print("Import failures (deduplicated):")
        print()
        print("| count | error | models |")
        print("| ---: | --- | --- |")
        for msg, n in failures.most_common():
            who = ", ".join(r["name"] for r in rows if r["import"].get("error") == msg)
            print(f"| {n} | {cell({'error': msg})} | {who} |")
    for stage in ("reference", *PRECISIONS):
        kinds: dict[str, list[str]] = {}
        for r in rows:
            res = r.get(stage) or {}
            if "error" in res:
                kinds.setdefault(error_kind(res["error"]), []).append(r["name"])
            elif res and not res.get("ok"):
                kinds.setdefault("MISMATCH (beyond tolerance)", []).append(r["name"])
        if kinds:
            print()
            print(f"{stage} failures (deduplicated; kernel numbers, addresses and locations blanked):")
            print()
            print("| count | error | models |")
            print("| ---: | --- | --- |")
            for msg, who in sorted(kinds.items(), key=lambda kv: -len(kv[1])):
                print(f"| {len(who)} | {cell({'error': msg})} | {', '.join(who)} |")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="zoo models through import, reference, npu fp32/fp16")
    p.add_argument("names", nargs="*", help="zoo models (default: all)")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per stage (default 300)")
    p.add_argument("--jobs", type=int, default=1, help="models run in parallel (default 1)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--markdown", action="store_true",
                      help="print only the table (summary line to stderr)")
    mode.add_argument("--json", action="store_true", help="print the rows as JSON")
    p.add_argument("--worker", nargs=2, metavar=("STAGE", "NAME"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        worker(args.worker[1], args.worker[0])
        return 0
    names = args.names or zoo_models()
    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        rows = list(pool.map(lambda n: run_model(n, args.timeout), names))
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    if args.markdown:
        print_table(rows, MAX_CELL)
        print(summary_line(rows), file=sys.stderr)
        return 0
    print_table(rows, COMPACT_CELL)
    print()
    print("Numbers: ok/MISMATCH by gedialects.numerics.CRITERIA, "
          "max |got - onnxruntime| / max |onnxruntime| over all outputs.")
    print_failures(rows)
    print()
    print(summary_line(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
