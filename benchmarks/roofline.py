"""How far the compiled code is from the roofline (issue 13, item 1).

    python benchmarks/roofline.py [models ...] [--precision-mode force_fp16] [--target davinci-910]
                                  [--top 3] [--markdown] [--cost-model]

Per model (default: the nine light models, the zoo's transformers and a
BERT-base-sized encoder layer, benchmarks/bert_base_layer.py, the latter
with fused attention on and off, then a summary of the two: the attention
block's cycles, the dense layers' share and the cost model's prediction of
them against the simulator; for resnet50 (`--cost-model`: every light
model measured) the CNN kernels' cost models against the simulator per
kind of kernel, and resnet50's convs' per-core split floor,
`conv_split_floor`): the
simulated cycles, the roofline bound (target/roofline.py: per AI-core
launch the larger of MACs at the cube's peak and the bytes that must move
at the GM rates, summed over launches), their ratio, the GM bytes moved
against the minimum, the cube utilisation, and the launches that lose the
most cycles against their bound, each run on one stream (the model compiled
again with `max_streams=1`, timing only: on several streams a launch's
duration also counts its wait for cores another stream holds). Numbers come from the target config and
the simulator's profile; nothing is timed. Light models run on ge-run's
seeded random inputs, zoo models on their committed inputs.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "zoo"))

ZOO_TRANSFORMERS = ("bert", "distilbert", "gpt2", "llama", "t5_encoder", "vit")
BERT_BASE_LAYER = "bert_base_layer"
UNFUSED = " (attention unfused)"
"""Suffix of a model name measured with AttentionFusionPass switched off."""
PROFILES: dict = {}
"""The simulator's profile of each model measured, by name."""


def precision_bytes(precision: str) -> int:
    """Bytes of a stored element under a precision mode (fp32 or fp16)."""
    return 4 if precision == "must_keep_origin_dtype" else 2


def model_path_and_inputs(name: str):
    if name == BERT_BASE_LAYER:
        import bert_base_layer  # benchmarks/

        return bert_base_layer.build(), bert_base_layer.inputs()
    from gedialects.graph.interpreter import main_function
    from gedialects.tools.cli import load_module, model_path
    from gedialects.tools.ge_run import make_inputs

    from zoo import zoo_inputs, zoo_path  # tests/zoo

    if name in ZOO_TRANSFORMERS or (ROOT / "tests" / "zoo" / "models" / f"{name}.onnx").exists():
        return str(zoo_path(name)), zoo_inputs(name)
    path = model_path(name)
    return path, make_inputs(main_function(load_module(path, "")), None, 0)


def measure(name: str, precision: str, target: str):
    """(the run's bounds, each launch's cycles run on one stream by kernel name): under several
    streams a launch's duration also counts the time it waits for cores another stream holds,
    so the launches that lose the most are ranked by their cycles on one stream."""
    import tempfile

    import gedialects
    from gedialects.api import import_model
    from lowering.pipeline import compile_module
    from target.config import load_target
    from target.roofline import run_bound
    from target.simulator import simulate

    unfused = name.endswith(UNFUSED)
    path, inputs = model_path_and_inputs(name.removesuffix(UNFUSED))
    with tempfile.TemporaryDirectory() as tmp:
        switch = ""
        if unfused:
            switch = str(Path(tmp) / "switch.cfg")
            Path(switch).write_text("AttentionFusionPass:off\n")
        compiled = gedialects.compile(path, precision_mode=precision, target=target, fusion_switch_file=switch)
        compiled.run(inputs)
        alone = {}
        if len({k.stream for k in compiled.profile.kernels}) > 1:
            single = compile_module(import_model(path, None), precision, target, fusion_switch_file=switch,
                                    max_streams=1)
            feeds = {n: v for n, v in inputs.items() if n in compiled.input_names}
            ran = simulate(single.program(), feeds, target, races="off", timing_only=True)
            alone = {k.name: k.cycles for k in ran.profile.kernels}
    element_bytes = precision_bytes(precision)
    PROFILES[name] = compiled.profile
    return run_bound(compiled.profile, load_target(target), element_bytes), alone


def predicted_cycles(name: str, precision: str, target: str) -> dict[str, int]:
    """The cycles tile-select-tiling predicts for each structured kernel of
    the model (its #tile.tiling) and each conv, pool, gemm or elementwise
    kernel (its #tile.conv_tiling, ...), by kernel name."""
    from gedialects.frontend.onnx_import import import_model
    from gedialects.tile import ops as t
    from gedialects.tile.map_kernels import MapKernelTiling
    from gedialects.tile import structured as st
    from gedialects.tools.cli import load_module
    from lowering.pipeline import compile_module

    model, _ = model_path_and_inputs(name)
    predicted: dict[str, int] = {}

    def record(stage, module):
        if stage == "tile-select-tiling":
            for k in module.walk():
                tiling = k.attributes.get(st.TILING_ATTR) if isinstance(k, t.KernelOp) else None
                if isinstance(tiling, st.TilingAttr | MapKernelTiling):
                    predicted[k.sym_name.data] = tiling.cycles.data

    module = load_module(model, "") if isinstance(model, str) else import_model(model)  # a path or a ModelProto
    compile_module(module, precision, target, dump=record)
    return predicted


def bert_layer_summary(runs: dict, precision: str, target: str) -> None:
    """Fused vs unfused on the BERT-base layer: the whole layer, its
    attention block, the dense layers' share, and the cost model's
    prediction of the matmul kernels against the simulator."""
    from bert_base_layer import ATTENTION_BLOCK  # benchmarks/

    fused, unfused = runs[BERT_BASE_LAYER], runs[BERT_BASE_LAYER + UNFUSED]

    def block(r) -> int:
        return sum(k.cycles for k in r.kernels if set(k.op_name.split(";")) & set(ATTENTION_BLOCK))

    # the products and the sums of those split over K (tile-split-reduction), not the casts of their fp32 inputs
    products = [k for k in fused.kernels if k.name.endswith(("_matmul", "_matmul_sum"))]
    layers = sum(1 for k in products if k.name.endswith("_matmul"))
    dense = sum(k.cycles for k in products)
    print(f"\n{BERT_BASE_LAYER}: fused attention {unfused.cycles / fused.cycles:.2f}x fewer cycles than unfused; "
          f"its attention block {block(fused):,} fused vs {block(unfused):,} unfused cycles "
          f"({block(unfused) / block(fused):.2f}x); its {layers} dense layers {dense:,} of {fused.cycles:,} "
          f"({len(products) - layers} split over K)")
    predicted = predicted_cycles(BERT_BASE_LAYER, precision, target)
    errors = [predicted[k.name] / k.cycles - 1 for k in products if k.name in predicted]
    print(f"cost model on the dense layers' kernels: predicted / simulated - 1 from {min(errors):+.1%} "
          f"to {max(errors):+.1%}")
    from target.config import load_target

    config, element_bytes = load_target(target), precision_bytes(precision)
    by_name = {k.name: k for k in PROFILES[BERT_BASE_LAYER].kernels}
    floors = {k.name: matmul_split_floor(by_name[k.name], config, element_bytes) for k in products
              if k.name.endswith("_matmul")}
    floor = sum(floors.values())
    cycles = {k.name: k.cycles for k in products}  # a product split over K with its sum kernel
    simulated = {name: cycles[name] + cycles.get(name + "_sum", 0) for name in floors}
    first_node = {k.name: k.op_name.split(";")[0] for k in products}
    print(f"{BERT_BASE_LAYER}: each dense layer, simulated / its floor: " + ", ".join(
        f"{first_node[name]} {simulated[name]:,} / {at:,.0f}"
        for name, at in sorted(floors.items(), key=lambda kv: kv[1] - simulated[kv[0]])))

    def at_floor(r) -> float:  # the layer with its dense layers' kernels at the floor, the rest as simulated
        own = sum(k.cycles for k in r.kernels if k.name.endswith(("_matmul", "_matmul_sum"))
                  and not set(k.op_name.split(";")) & set(ATTENTION_BLOCK))
        return r.cycles - own + floor

    print(f"{BERT_BASE_LAYER}: its {layers} dense layers at their per-core split floor {floor:,.0f} cycles (simulated "
          f"{dense:,}); with its other launches as simulated {at_floor(fused):,.0f}, "
          f"{at_floor(fused) / fused.bound:.1f}x the roofline bound, and fused attention "
          f"{at_floor(unfused) / at_floor(fused):.2f}x fewer cycles than unfused")
    shared, fused_own, unfused_own = fusion_ceiling(fused, unfused, config, element_bytes)
    print(f"{BERT_BASE_LAYER}: fused attention at most {(shared + unfused_own) / (shared + fused_own):.2f}x fewer "
          f"cycles than unfused on this target: the launches both forms share at their floors "
          f"{shared:,.0f}, the fused form's own at theirs {fused_own:,.0f}, the unfused form's own as simulated "
          f"{unfused_own:,.0f} (a product's floor is its per-core split floor, any other launch's its roofline bound)")


def fusion_ceiling(fused, unfused, config, element_bytes: int) -> tuple[float, float, float]:
    """What bounds fused attention's gain over unfused on the BERT-base
    layer: (the floors of the launches both forms share, the floors of the
    fused form's own launches, the unfused form's own as simulated). Better
    code in a shared launch serves both forms, and the unfused form's own
    are taken as they are (any gain there lowers the ratio), so
    (shared + unfused own) / (shared + fused own) is the most fusion can
    gain. A launch is known by the model nodes it computes (a product split
    over K, its sum kernel and the casts of its operands compute the same
    ones: one launch here, whose floor is the product's split floor)."""
    profiles = {k.name: k for k in PROFILES[BERT_BASE_LAYER].kernels}

    def floor(kernels: list) -> float:
        products = [k for k in kernels if k.name.endswith("_matmul")]
        if products:
            return sum(matmul_split_floor(profiles[k.name], config, element_bytes) for k in products)
        return sum(k.bound for k in kernels)

    def launches(run) -> dict[str, list]:
        grouped: dict[str, list] = {}
        for k in run.kernels:
            grouped.setdefault(k.op_name, []).append(k)
        return grouped

    fused_launches, unfused_launches = launches(fused), launches(unfused)
    both = fused_launches.keys() & unfused_launches.keys()
    shared = sum(floor(fused_launches[nodes]) for nodes in both)
    fused_own = sum(floor(fused_launches[nodes]) for nodes in fused_launches.keys() - both)
    unfused_own = sum(k.cycles for nodes in unfused_launches.keys() - both for k in unfused_launches[nodes])
    return shared, fused_own, unfused_own


def conv_model_summary(name: str, precision: str, target: str) -> None:
    """The CNN kernels' cost models (gedialects/tile/transforms/conv_tiling.py,
    pool_tiling.py, elementwise_tiling.py, ...) against the simulator, per
    kind of kernel (its name's suffix: conv, max_pool, elementwise, ...).
    Launches that overlap one on another stream are left out: their cycles
    include that launch's share of the cores."""
    predicted = predicted_cycles(name, precision, target)
    kernels = PROFILES[name].kernels
    alone = [k for k in kernels if k.name in predicted and not any(
        o is not k and o.start < k.start + k.cycles and k.start < o.start + o.cycles for o in kernels)]
    by_kind: dict[str, list[float]] = {}
    for k in alone:
        by_kind.setdefault(k.name.split("_", 1)[-1], []).append(predicted[k.name] / k.cycles - 1)
    for kind, errors in sorted(by_kind.items()):
        errors.sort()
        print(f"cost model on {name}'s {len(errors)} {kind} kernels run alone: predicted / simulated - 1 from "
              f"{errors[0]:+.1%} to {errors[-1]:+.1%}, median {errors[len(errors) // 2]:+.1%}")


def conv_split_floor(k, config, element_bytes: int) -> float:
    """The fewest cycles a conv launch can take when its output is split
    over the cores in rectangles (bands of rows x blocks of output
    channels) and, as split-K does (lowering/graph_to_tile/conv_split_k.py),
    its input channels in R runs of whole C0 slices (P x Q x R <= cores),
    each core loading its own input band (its window rows; a strided 1x1
    conv only the rows and pixels it reads) of its channel run and its
    weight block through its own GM -> L1 path: per split the largest of
    that load (one DMA latency), the store of its output (and a residual's
    load) and its MACs at the cube's rate; with R > 1 the partials' sum
    kernel after it (every core reading its share of the R partials and the
    residual, storing the result). The best split."""
    from target.roofline import cube_macs_per_cycle, parse_shapes

    ins, outs = parse_shapes(k.info.get("in_shapes", "")), parse_shapes(k.info.get("out_shapes", ""))
    (_, c, h, w), (o, i, kh, kw), (oh, ow) = ins[0], ins[1], outs[0][2:]
    stride = -(-h // oh)
    cores = config.cube_cores
    per_core_macs = cube_macs_per_cycle(config, element_bytes) / cores
    c0 = 32 // element_bytes
    residual = len(ins) > 3
    out_bytes = o * oh * ow * element_bytes
    best = math.inf
    for parts in (r for r in range(1, cores + 1) if i % (r * c0) == 0 or r == 1):
        reduce = 0.0
        if parts > 1:  # the sum kernel: every core reads its share of the partials (and residual), stores the result
            reduce = split_cycles(config, cores, (parts + residual) * out_bytes / cores, out_bytes / cores, 0)
        for rows in range(1, min(oh, cores // parts) + 1):
            band = -(-oh // rows)
            in_rows, in_w = (band, ow) if kh == 1 and stride > 1 else (min(h, (band - 1) * stride + kh), w)
            for cols in range(1, min(cores // (rows * parts), -(-o // 16)) + 1):
                block = -(-o // cols)
                loaded = (in_rows * in_w * c + block * i * kh * kw) * element_bytes / parts
                stored = band * ow * block * element_bytes * (2 if residual and parts == 1 else 1)
                cycles = split_cycles(config, rows * cols * parts, loaded, stored,
                                      band * ow * block * i * kh * kw / parts / per_core_macs)
                best = min(best, cycles + reduce)
    return best


def split_cycles(config, cores: int, loaded: float, stored: float, mac_cycles: float) -> float:
    """A split's cycles when each of `cores` cores loads `loaded` bytes
    through its own GM -> L1 path (one DMA latency), stores `stored` and
    runs `mac_cycles` on its cube: the largest of the three, and of all the
    cores' bytes at HBM's rate (which they share)."""
    return max(loaded / config.dma_bytes_per_cycle["gm_l1"] + config.latency_cycles["dma_gm"],
               stored / config.dma_bytes_per_cycle["ub_gm"], mac_cycles,
               cores * (loaded + stored) / config.hbm_bytes_per_cycle)


def matmul_split_floor(k, config, element_bytes: int) -> float:
    """The fewest cycles a product (A [.., M, K] x B [.., K, N]) can take
    when its batch, M, N and K are split over the cores in blocks of whole
    16 x 16 fractals (P_b x P_m x P_n x P_k <= cores) and each core loads
    its own blocks of A and B through its own GM -> L1 path: per split the
    largest of that load (one DMA latency), the store of its output (fp32
    partials when K is split) and its MACs at the cube's rate; a split of K
    adds its sum kernel (every core reading its share of the partials and
    storing the result) after it. The best split."""
    from target.roofline import cube_macs_per_cycle, parse_shapes

    ins, outs = parse_shapes(k.info.get("in_shapes", "")), parse_shapes(k.info.get("out_shapes", ""))
    a, b = ins[0], ins[1]
    m, kk, n = a[-2], a[-1], outs[0][-1]
    batch = math.prod(outs[0][:-2])
    b_batched = math.prod(b[:-2]) > 1
    cores = config.cube_cores
    per_core_macs = cube_macs_per_cycle(config, element_bytes) / cores

    def splits(d: int) -> list[int]:  # parts of a dim of whole fractals (at least one fractal each)
        return [p for p in range(1, max(1, -(-d // 16)) + 1) if p <= cores]

    best = math.inf
    for pb in range(1, min(batch, cores) + 1):
        for pk in splits(kk):
            for pm in splits(m):
                if pb * pk * pm > cores:
                    break
                for pn in splits(n):
                    if pb * pk * pm * pn > cores:
                        break
                    bb, kb, mb, nb = -(-batch // pb), -(-kk // pk), -(-m // pm), -(-n // pn)
                    loaded = (bb * mb * kb + (bb if b_batched else 1) * kb * nb) * element_bytes
                    stored = bb * mb * nb * (4 if pk > 1 else element_bytes)
                    cycles = split_cycles(config, pb * pk * pm * pn, loaded, stored, bb * mb * nb * kb / per_core_macs)
                    if pk > 1:  # the sum kernel: every core reads its share of the partials, stores the result
                        cycles += split_cycles(config, cores, pk * batch * m * n * 4 / cores,
                                               batch * m * n * element_bytes / cores, 0)
                    best = min(best, cycles)
    return best


def split_floor_summary(name: str, run, target: str, element_bytes: int) -> None:
    """The model's convs at their split floors, its other launches as simulated."""
    from gedialects.npu.ops import SPLIT_K_SUM_KIND
    from target.config import load_target

    config = load_target(target)
    by_name = {k.name: k for k in PROFILES[name].kernels}
    convs = [k for k in run.kernels if k.op_type == "conv"]  # a split conv's sum kernel too: its floor counts it
    floor = sum(conv_split_floor(by_name[k.name], config, element_bytes) for k in convs
                if by_name[k.name].info.get("kind") != SPLIT_K_SUM_KIND)
    others = sum(k.cycles for k in run.kernels if k.op_type != "conv")
    split = sum(by_name[k.name].info.get("kind") == SPLIT_K_SUM_KIND for k in convs)
    print(f"{name}: its {len(convs) - split} convs ({split} split in K) at their per-core split floor {floor:,.0f} cycles "
          f"(simulated {sum(k.cycles for k in convs):,}); with its other launches as simulated "
          f"{floor + others:,.0f}, {(floor + others) / run.bound:.1f}x the roofline bound (the convs alone "
          f"{floor / run.bound:.2f}x)")


def main(argv: list[str] | None = None) -> int:
    from gedialects.zoo import LIGHT_MODELS
    from target.profile import short_name

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("models", nargs="*", default=[*LIGHT_MODELS, *ZOO_TRANSFORMERS, BERT_BASE_LAYER])
    p.add_argument("--precision-mode", default="force_fp16")
    p.add_argument("--target", default="davinci-910")
    p.add_argument("--top", type=int, default=2, help="launches losing the most cycles, per model")
    p.add_argument("--markdown", action="store_true")
    p.add_argument("--cost-model", action="store_true",
                   help="the cost models against the simulator per kind of kernel for every light model measured "
                        "(default: resnet50's only)")
    args = p.parse_args(argv)
    zoo_models = ROOT / "tests" / "zoo" / "models"
    unknown = [m for m in args.models if m not in (*LIGHT_MODELS, *ZOO_TRANSFORMERS, BERT_BASE_LAYER)
               and not (zoo_models / f"{m}.onnx").exists() and not Path(m).exists()]
    if unknown:
        p.error(f"no model {', '.join(repr(m) for m in unknown)} (a light model: {', '.join(LIGHT_MODELS)}; "
                f"a zoo model of tests/zoo/models; {BERT_BASE_LAYER}; or a path)")
    head = ["model", "cycles", "bound", "x bound", "GM MB", "min MB", "x min", "cube util",
            "most cycles lost: launch (op type, what bounds it) cycles above its bound on one stream (x its bound)"]
    if args.markdown:
        print(f"{args.precision_mode}, {args.target}\n")
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
    names = [m for name in args.models for m in ((name, name + UNFUSED) if name == BERT_BASE_LAYER else (name,))]
    runs = {}
    for name in names:
        r, alone = measure(name, args.precision_mode, args.target)
        runs[name] = r
        one_stream = [dataclasses.replace(k, cycles=alone.get(k.name, k.cycles)) for k in r.kernels]
        worst = ", ".join(f"{short_name(k.op_name, 30)} ({k.op_type}, {k.limit}) {k.lost:,.0f} ({k.ratio:.1f}x)"
                          for k in sorted(one_stream, key=lambda k: -k.lost)[: args.top])
        cells = [name, f"{r.cycles:,}", f"{r.bound:,.0f}", f"{r.cycles / r.bound:.1f}", f"{r.gm_bytes / 1e6:.2f}",
                 f"{r.min_bytes / 1e6:.2f}", f"{r.gm_bytes / max(1, r.min_bytes):.2f}", f"{r.cube_utilisation:.3f}", worst]
        print(("| " + " | ".join(cells) + " |") if args.markdown else "  ".join(f"{h}={c}" for h, c in zip(head, cells)),
              flush=True)
    for name in runs:
        if name in LIGHT_MODELS and (args.cost_model or name == "resnet50"):
            conv_model_summary(name, args.precision_mode, args.target)
    if "resnet50" in runs:
        split_floor_summary("resnet50", runs["resnet50"], args.target,
                            precision_bytes(args.precision_mode))
    if BERT_BASE_LAYER in runs and BERT_BASE_LAYER + UNFUSED in runs:
        bert_layer_summary(runs, args.precision_mode, args.target)
    return 0


if __name__ == "__main__":
    sys.exit(main())
