"""Memory planning on the nine light models of the onnx wheel: bytes per model
for every strategy and for `auto`, against the lower bound.

    python benchmarks/memory_plan.py
    python benchmarks/memory_plan.py --pipeline graph-canonicalize,graph-fuse
    python benchmarks/memory_plan.py --alignment 32 --markdown

Each model is imported, run through `--pipeline` (default
`graph-canonicalize`), then planned by graph-plan-memory's analysis with
each strategy. Columns (bytes): no_reuse (every tensor its own slot),
lower_bound (max over steps of live bytes), planned per strategy, and the
ratio planned/lower_bound of `auto` (the smallest of them, as the pass keeps).
Also checks each auto plan with the verifier (through the pass itself).
"""

from __future__ import annotations

import argparse
import time

import onnx
from xdsl.context import Context
from xdsl.passes import PassPipeline
from xdsl.universe import Universe

from gedialects.frontend.onnx_import import import_model
from gedialects.graph.interpreter import main_function
from gedialects.graph.memory.lifetimes import analyse
from gedialects.graph.memory.report import memory_report
from gedialects.graph.memory.strategies import STRATEGIES, arena_size
from gedialects.graph.transforms.plan_memory import GraphPlanMemoryPass
from gedialects.zoo import LIGHT_MODELS, light_model_path


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pipeline", default="graph-canonicalize", help="passes before planning (xDSL -p syntax)")
    p.add_argument("--alignment", type=int, default=512)
    p.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = p.parse_args()

    passes = Universe.get_multiverse().all_passes
    pipeline = PassPipeline.parse_spec(passes, args.pipeline) if args.pipeline else PassPipeline(())
    ctx = Context()
    short = {name: name.removeprefix("greedy-by-") for name in STRATEGIES}
    header = ["model", "no_reuse", "lower_bound", *short.values(), "auto", "auto/lb", "ms"]
    rows = []
    for name in LIGHT_MODELS:
        module = import_model(onnx.load(light_model_path(name)), source=name)
        pipeline.apply(ctx, module)
        start = time.perf_counter()
        lv = analyse(main_function(module), args.alignment)
        sizes = [arena_size(lv.blocks, fn(lv.blocks)) for fn in STRATEGIES.values()]
        GraphPlanMemoryPass(alignment=args.alignment).apply(ctx, module)  # auto, verified
        ms = (time.perf_counter() - start) * 1000
        (numbers,) = memory_report(module).values()
        assert numbers["planned"] == min(sizes)
        rows.append(
            [name, numbers["no_reuse"], numbers["lower_bound"], *sizes,
             numbers["planned"], f"{numbers['planned/lower_bound']:.4f}", f"{ms:.0f}"]
        )
    if args.markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|")
        for r in rows:
            print("| " + " | ".join(str(x) for x in r) + " |")
    else:
        widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
        for r in [header, *rows]:
            print("  ".join(str(x).rjust(w) if i else str(x).ljust(w) for i, (x, w) in enumerate(zip(r, widths))))
    print(f"\npipeline: {args.pipeline or '(none)'}, then graph-plan-memory{{alignment={args.alignment}}}")


if __name__ == "__main__":
    main()
