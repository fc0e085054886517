"""All nine light ONNX models (random weights) on the simulated NPU vs onnxruntime.

    python benchmarks/light_models_npu.py [models...] [--precision-mode force_fp16|must_keep_origin_dtype]
        [--target davinci-910] [--races error|warn|off] [--calibrate] [--max-streams N]

Per model: kernels, npu ops, transdata kernels, simulated cycles, max |npu - ort|
of the model output and of the logits (the input of a final Softmax, added as
a second graph output: a softmax of random-weight logits is often one-hot,
which would hide errors), whether all outputs pass the precision mode's
criterion (`gedialects.numerics.CRITERIA`), and "normwise" (max err <=
norm_rtol * max |ref| + atol of that criterion; for the softmax output of a
model with logits at most 2 max p times the logits' bound, the first-order
propagation of the logits' error), compile and simulation wall time.
Race detection is on ("error") unless --races says otherwise.
Weights: `zoo.with_random_weights`; with --calibrate its BatchNormalization
statistics are calibrated to the real statistics of the activations
(`zoo.calibrate_batch_norm`), as in a trained network, so activations stay
O(1). Without it resnet50's logits reach 1.7e5, beyond fp16: force_fp16
keeps them in range by its compile-time scaling (lowering/fp16_scaling.py).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import onnx
from onnx import shape_inference

from gedialects.frontend.onnx_import import import_model
from gedialects.numerics import CRITERIA
from gedialects.zoo import (
    LIGHT_MODELS,
    light_model_path,
    light_models_error,
    onnxruntime_outputs,
    random_inputs,
    with_random_weights,
)
from lowering.pipeline import DEFAULT_PRECISION, compile_module
from target.assembler import assemble
from target.simulator import simulate


def with_logits(model: onnx.ModelProto) -> tuple[onnx.ModelProto, str | None]:
    """The model with the input of its final Softmax as an extra output."""
    outs = {o.name for o in model.graph.output}
    for node in model.graph.node:
        if node.op_type == "Softmax" and node.output[0] in outs:
            inferred = shape_inference.infer_shapes(model)
            info = {v.name: v for v in inferred.graph.value_info}
            name = node.input[0]
            if name not in info:
                return model, None
            out = onnx.ModelProto()
            out.CopyFrom(model)
            out.graph.output.append(info[name])
            return out, name
    return model, None


def run_model(name: str, precision: str, target: str, races: str, calibrate: bool = False,
              max_streams: int = 0) -> dict:
    model = with_random_weights(onnx.load(str(light_model_path(name))), calibrate=calibrate)
    model, logits = with_logits(model)
    inputs = random_inputs(model)
    t0 = time.perf_counter()
    compiled = compile_module(import_model(model, {}, source=name), precision, target, max_streams=max_streams)
    program = assemble(compiled.module)
    t1 = time.perf_counter()
    res = simulate(program, inputs, target, races=races)
    t2 = time.perf_counter()
    want = onnxruntime_outputs(model, inputs)
    criterion = CRITERIA[precision]
    rtol, atol = criterion.norm_rtol, criterion.atol
    errs, ok, normwise = {}, True, True
    for k, v in want.items():
        got = res.outputs[k].reshape(v.shape)
        errs[k] = float(np.abs(got - v).max())
        ok &= criterion.check(got, v).ok
    for k, v in want.items():
        bound = rtol * float(np.abs(v).max()) + atol
        if logits and k != logits:
            # softmax of the logits: dp_i = p_i (dz_i - sum_j p_j dz_j), so
            # |dp| <= 2 max p * (the logits' bound), to first order
            z = want[logits]
            bound = max(bound, 2 * float(np.abs(v).max()) * (rtol * float(np.abs(z).max()) + atol))
        normwise &= errs[k] <= bound
    out_name = next(k for k in want if k != logits)
    return {
        "model": name,
        "kernels": compiled.kernels,
        "npu_ops": compiled.npu_ops,
        "transdata": compiled.transdata,
        "cycles": res.profile.total_cycles,
        "err": errs[out_name],
        "max_out": float(np.abs(want[out_name]).max()),
        "normwise": normwise,
        "err_logits": errs.get(logits, float("nan")) if logits else float("nan"),
        "max_logit": float(np.abs(want[logits]).max()) if logits else float("nan"),
        "ok": ok,
        "compile_s": t1 - t0,
        "sim_s": t2 - t1,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("models", nargs="*", default=list(LIGHT_MODELS))
    ap.add_argument("--target", default="davinci-910")
    ap.add_argument("--precision-mode", default=DEFAULT_PRECISION)
    ap.add_argument("--races", default="error")
    ap.add_argument("--max-streams", type=int, default=0, help="streams the scheduler may use (0: the target's)")
    ap.add_argument("--calibrate", action="store_true",
                    help="calibrate BatchNormalization statistics on the data, as in a trained network")
    args = ap.parse_args()
    if (error := light_models_error(args.models)) is not None:
        ap.error(error)
    calibrate = args.calibrate
    head = ("| model | kernels | npu ops | transdata | sim cycles | max err out (max \\|out\\|) | max err logits (max \\|logit\\|) "
            "| criterion | normwise | compile s | sim s |")
    print(f"{args.precision_mode}, {args.target}, races={args.races}, calibrated BN={calibrate}, "
          f"max streams={args.max_streams or 'the target'}")
    print(head)
    print("|" + "---|" * 11)
    for name in args.models:
        try:
            r = run_model(name, args.precision_mode, args.target, args.races, calibrate, args.max_streams)
        except Exception as e:  # noqa: BLE001 - report and go on with the next model
            print(f"| {name} | failed: {type(e).__name__}: {str(e).splitlines()[0][:120]} |", flush=True)
            continue
        print(
            f"| {r['model']} | {r['kernels']} | {r['npu_ops']:,} | {r['transdata']} | {r['cycles']:,} | {r['err']:.2g} ({r['max_out']:.3g}) "
            f"| {r['err_logits']:.2g} ({r['max_logit']:.3g}) | {'yes' if r['ok'] else '**no**'} | {'yes' if r['normwise'] else '**no**'} "
            f"| {r['compile_s']:.1f} | {r['sim_s']:.1f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
