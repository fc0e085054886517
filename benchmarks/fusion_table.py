"""graph-fuse on the nine light models of the onnx wheel: op counts before and
after fusion, and the remarks per rule.

    python benchmarks/fusion_table.py              # Markdown tables
    python benchmarks/fusion_table.py --json       # the same numbers as JSON

Each model is imported and canonicalized (graph-canonicalize), then fused
(graph-fuse with every rule on). "ops" counts the operators of @main: graph
ops at the top level, without constants (graph.constant / graph.fill) and
without the ops inside a graph.fusion body (a fusion counts as one op).
The remark columns give applied/missed per rule (rules with no candidate
in any model are left out), and the missed reasons.
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from collections import Counter

import onnx
from xdsl.context import Context

from gedialects.frontend.onnx_import import import_model
from gedialects.graph import ops as g
from gedialects.graph.fusion import registered_rules
from gedialects.graph.interpreter import main_function
from gedialects.graph.transforms.canonicalize import GraphCanonicalizePass
from gedialects.graph.transforms.fuse import fuse
from gedialects.zoo import LIGHT_MODELS, light_model_path, light_models_error


def count_ops(module) -> int:
    block = main_function(module).body.block
    return sum(
        1
        for op in block.ops
        if op.dialect_name() == "graph" and not isinstance(op, g.ConstantOp | g.FillOp)
    )


def measure(name: str) -> dict:
    module = import_model(onnx.load(light_model_path(name)), source=name)
    GraphCanonicalizePass().apply(Context(), module)
    before = count_ops(module)
    start = time.perf_counter()
    result = fuse(module)
    seconds = time.perf_counter() - start
    module.verify()
    stats = result.stats()
    return {
        "model": name,
        "ops_before": before,
        "ops_after": count_ops(module),
        "fuse_seconds": round(seconds, 3),
        "rules": {
            rule: {"applied": s.applied, "missed": s.missed.total(), "reasons": dict(s.missed)}
            for rule, s in stats.items()
            if s.matched
        },
    }


def markdown(rows: list[dict]) -> str:
    order = [r.name for r in registered_rules()]
    used = [r for r in order if any(r in row["rules"] for row in rows)]
    lines = [
        "| model | ops before | ops after | fewer | applied | missed |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        applied = sum(s["applied"] for s in row["rules"].values())
        missed = sum(s["missed"] for s in row["rules"].values())
        b, a = row["ops_before"], row["ops_after"]
        lines.append(f"| {row['model']} | {b} | {a} | {100 * (b - a) / b:.0f}% | {applied} | {missed} |")
    lines += ["", "Remarks per rule (applied/missed; rule names without `FusionPass`):", ""]
    lines.append("| model | " + " | ".join(r.removesuffix("FusionPass") for r in used) + " |")
    lines.append("|---|" + "---:|" * len(used))
    for row in rows:
        cells = []
        for rule in used:
            s = row["rules"].get(rule)
            cells.append(f"{s['applied']}/{s['missed']}" if s else "")
        lines.append(f"| {row['model']} | " + " | ".join(cells) + " |")
    reasons: Counter[str] = Counter()
    for row in rows:
        for rule, s in row["rules"].items():
            for reason, n in s["reasons"].items():
                reasons[f"{rule}: {reason}"] += n
    if reasons:
        lines += ["", "Missed, by rule and reason:", ""]
        lines += [f"- {key}: {n}" for key, n in sorted(reasons.items())]
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", action="store_true", help="print JSON instead of Markdown")
    p.add_argument("models", nargs="*", default=list(LIGHT_MODELS))
    args = p.parse_args()
    if (error := light_models_error(args.models)) is not None:
        p.error(error)
    logging.getLogger("gedialects").setLevel(logging.WARNING)
    rows = [measure(m) for m in args.models]
    print(json.dumps(rows, indent=2) if args.json else markdown(rows))


if __name__ == "__main__":
    main()
