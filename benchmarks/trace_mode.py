"""Trace mode vs parse mode on the torch families of tests/torch/families.py.

    python benchmarks/trace_mode.py [family ...] [--markdown]

Per family: the same torch model traced (gedialects.compile: torch.export ->
graph dialect) and parsed (torch.onnx.export, legacy exporter, opset 20,
no exporter folding -> ONNX importer), both compiled fp32 and run on the
simulated NPU: kernels and fusions applied in each mode, simulated cycles,
the error against eager torch (max |npu - torch| / max |torch|, fp32 and
force_fp16), and the wall time of the first torch.compile call (capture,
export, compile, simulate) beside eager torch's. Needs torch.
"""

from __future__ import annotations

import argparse
import io
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "torch"))


def _err(got, want) -> float:
    return float(np.max(np.abs(got - want)) / np.max(np.abs(want)))


def measure(name: str) -> dict:
    import onnx
    import torch

    import families
    import gedialects

    model, inputs = families.build(name)
    with torch.no_grad():
        t0 = time.perf_counter()
        want = model(*inputs)
        eager_ms = 1000 * (time.perf_counter() - t0)
    want = [w.numpy() for w in (want if isinstance(want, tuple) else (want,))]
    traced = gedialects.compile(model, inputs, precision_mode="must_keep_origin_dtype")
    got = traced(*inputs)
    got = [g.numpy() for g in (got if isinstance(got, tuple) else (got,))]
    buffer = io.BytesIO()
    torch.onnx.export(model, inputs, buffer, dynamo=False, opset_version=20, do_constant_folding=False,
                      input_names=traced.input_names)
    parsed = gedialects.compile(onnx.load_from_string(buffer.getvalue()), precision_mode="must_keep_origin_dtype")
    parsed(*inputs)
    fp16 = gedialects.compile(model, inputs)
    got16 = fp16(*inputs)
    got16 = [g.numpy() for g in (got16 if isinstance(got16, tuple) else (got16,))]
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="gedialects", options={"precision_mode": "must_keep_origin_dtype"})
    with torch.no_grad():
        t0 = time.perf_counter()
        compiled(*inputs)
        first_call_s = time.perf_counter() - t0

    def fusions(c):
        return sum(1 for r in c.remarks if r.kind == "applied" and r.rule.endswith("FusionPass"))

    return {
        "family": name,
        "trace kernels": traced.kernels, "parse kernels": parsed.kernels, "AI-CPU ops": traced.aicpu + parsed.aicpu,
        "trace fusions": fusions(traced), "parse fusions": fusions(parsed),
        "trace cycles": traced.profile.total_cycles, "parse cycles": parsed.profile.total_cycles,
        "err fp32": max(_err(g, w) for g, w in zip(got, want)),
        "err fp16": max(_err(g, w) for g, w in zip(got16, want)),
        "first call s": first_call_s, "eager ms": eager_ms,
    }


def main(argv: list[str] | None = None) -> int:
    import families

    warnings.filterwarnings("ignore")
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("families", nargs="*", default=list(families.FAMILIES))
    p.add_argument("--markdown", action="store_true")
    args = p.parse_args(argv)
    rows = [measure(name) for name in args.families]
    cols = list(rows[0])
    if args.markdown:
        print("| " + " | ".join(cols) + " |")
        print("|" + "---|" * len(cols))
    for r in rows:
        cells = [f"{v:.2g}" if isinstance(v, float) and k.startswith("err") else
                 f"{v:.2f}" if isinstance(v, float) else f"{v:,}" if isinstance(v, int) else str(v)
                 for k, v in r.items()]
        print(("| " + " | ".join(cells) + " |") if args.markdown else "  ".join(f"{k}={c}" for k, c in zip(cols, cells)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
