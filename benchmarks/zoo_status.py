"""Status of the model zoo (tests/zoo/models) through the compiler: a Markdown table.

    .venv/bin/python benchmarks/zoo_status.py [NAME ...] [--timeout 300] [--jobs 1]

NAME is a zoo model ("bert", "bert.dynamo", ...; default: all of
tests/zoo/zoo.py's `zoo_models()`). Per model, on its committed example
inputs (NAME.inputs.npz):

- import: `import_model(onnx.load(path), {}, source=path)`; a FrontendError's
  one-line message is recorded (file path and node location dropped);
- reference: `gedialects.graph.interpreter.run` vs onnxruntime
  (`gedialects.zoo.onnxruntime_outputs`): "ok"/"MISMATCH" by fp32's
  elementwise tolerance (rtol 1e-4, atol 1e-5), then max |ref - ort| over all
  outputs / max |ort|;
- npu fp32 / npu fp16: `compile_module(module, precision=P)` with P
  must_keep_origin_dtype / force_fp16 (default calibration), then
  `run_compiled(compiled, inputs).outputs` vs onnxruntime: the same numbers,
  fp16 judged normwise (max err <= 5e-3 max |ort| + 1e-3), the tolerances
  of ge-run --check; or the one-line error ("compile:" for a
  PassFailedException, "run:" for an assembler/simulator error, the exception
  type otherwise).

Each stage (import + reference, npu fp32, npu fp16) runs in its own
subprocess with a timeout, so a slow or crashing model does not block the
table. After the table: the import failures and each npu stage's failures,
deduplicated, with counts and models.
Prints to stdout only.
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
TOLERANCE = {  # as gedialects/tools/ge_run.py's CHECK_TOLERANCE
    "reference": (1e-4, 1e-5, "elementwise"),
    "must_keep_origin_dtype": (1e-4, 1e-5, "elementwise"),
    "force_fp16": (5e-3, 1e-3, "normwise"),
}
MAX_CELL = 220


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


def compare(got: dict, want: dict, tolerance) -> dict:
    import numpy as np

    rtol, atol, criterion = tolerance
    err, peak, ok = 0.0, 0.0, True
    for name, w in want.items():
        if name not in got:
            return {"error": f"no output '{name}' (got {', '.join(got)})"}
        g = np.asarray(got[name])
        if g.shape != w.shape:
            if g.size != w.size:
                return {"error": f"output '{name}' has shape {list(g.shape)}, onnxruntime {list(w.shape)}"}
            g = g.reshape(w.shape)
        if not np.issubdtype(w.dtype, np.floating):
            e = float(np.abs(g.astype(np.int64) - w.astype(np.int64)).max(initial=0))
            ok &= e == 0
        else:
            g64, w64 = g.astype(np.float64), w.astype(np.float64)
            e = float(np.abs(g64 - w64).max(initial=0.0)) if np.isfinite(g64).all() else float("inf")
            m = float(np.abs(w64).max(initial=0.0))
            if criterion == "normwise":
                ok &= e <= rtol * m + atol
            else:
                ok &= bool(np.allclose(g64, w64, rtol=rtol, atol=atol))
            peak = max(peak, m)
        err = max(err, e)
    return {"ok": bool(ok), "err": err, "peak": peak}


def load(name: str):
    import onnx

    from gedialects.frontend.onnx_import import import_model

    path = str(zoo_path(name))
    model = onnx.load(path)
    return model, import_model(model, {}, source=path)


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
    out["reference"] = compare(got, want, TOLERANCE["reference"])
    return out


def stage_npu(name: str, precision: str) -> dict:
    import warnings

    from xdsl.utils.exceptions import PassFailedException

    from gedialects.zoo import onnxruntime_outputs
    from lowering.pipeline import compile_module, run_compiled

    warnings.filterwarnings("ignore")
    model, module = load(name)
    inputs = zoo_inputs(name)
    t0 = time.perf_counter()
    try:
        compiled = compile_module(module, precision=precision)
    except PassFailedException as e:
        return {"error": f"compile: {one_line(e)}"}
    except Exception as e:  # noqa: BLE001
        return {"error": f"compile: {type(e).__name__}: {one_line(e)}"}
    t1 = time.perf_counter()
    try:
        got = run_compiled(compiled, inputs).outputs
    except Exception as e:  # noqa: BLE001
        from target.errors import AssemblyError, SimulationError

        kind = "" if isinstance(e, (AssemblyError, SimulationError)) else f"{type(e).__name__}: "
        return {"error": f"run: {kind}{one_line(e)}"}
    t2 = time.perf_counter()
    res = compare(got, onnxruntime_outputs(model, inputs), TOLERANCE[precision])
    res["seconds"] = [round(t1 - t0, 1), round(t2 - t1, 1)]
    return res


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


def cell(res: dict | None) -> str:
    if res is None:
        return "—"
    if "error" in res:
        text = res["error"]
    elif "err" in res:
        text = f"{'ok' if res['ok'] else 'MISMATCH'} {res['err']:.2g} / {res['peak']:.3g}"
    else:
        text = "ok"
    text = text.replace("|", "\\|").replace("\n", " ")
    return text if len(text) <= MAX_CELL else text[: MAX_CELL - 1] + "…"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="zoo models through import, reference, npu fp32/fp16")
    p.add_argument("names", nargs="*", help="zoo models (default: all)")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per stage (default 300)")
    p.add_argument("--jobs", type=int, default=1, help="models run in parallel (default 1)")
    p.add_argument("--json", action="store_true", help="print the rows as JSON instead of Markdown")
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
    print("| model | ONNX nodes | import | reference vs ort | npu fp32 | npu fp16 |")
    print("| --- | ---: | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['name']} | {r['nodes']} | {cell(r['import'])} | {cell(r['reference'])} | "
              f"{cell(r.get('npu_fp32'))} | {cell(r.get('npu_fp16'))} |")
    print()
    print("Numbers: ok/MISMATCH, max |got - onnxruntime| / max |onnxruntime| over all outputs.")
    n_ok = {k: sum(1 for r in rows if (r.get(k) or {}).get("ok")) for k in ("import", "reference", *PRECISIONS)}
    print(f"Passing: import {n_ok['import']}/{len(rows)}, reference {n_ok['reference']}, "
          f"npu fp32 {n_ok['npu_fp32']}, npu fp16 {n_ok['npu_fp16']}.")
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
    for stage in PRECISIONS:
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
