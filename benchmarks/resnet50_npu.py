"""ResNet-50 (light model, random weights) on the simulated NPU vs onnxruntime.

    python benchmarks/resnet50_npu.py [--model resnet50] [--target davinci-910]
        [--precision-mode force_fp16|must_keep_origin_dtype]

Prints, fused and unfused (graph-fuse off): simulated cycles and time, GM
bytes moved, cube utilisation (cube busy / (cycles x cores) over the whole
run), transdata kernels, npu op count, compile and simulation wall time; and
onnxruntime's session-creation and inference time measured in the same run.
Any light model name works with --model.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import onnx

from gedialects.frontend.onnx_import import import_model
from gedialects.zoo import light_model_path, random_inputs, with_random_weights
from lowering.pipeline import DEFAULT_PRECISION, compile_module
from target.assembler import assemble
from target.simulator import simulate


def measure(model, inputs, precision, target, fuse):
    t0 = time.perf_counter()
    compiled = compile_module(import_model(model, {}, source="bench"), precision, target, fuse=fuse)
    program = assemble(compiled.module)
    t1 = time.perf_counter()
    res = simulate(program, inputs, target, races="off")
    t2 = time.perf_counter()
    prof = res.profile
    gm = sum(v for k in prof.kernels for p, v in k.bytes.items() if p.startswith("gm_") or p.endswith("_gm"))
    cube_busy = sum(k.busy.get("cube", 0) for k in prof.kernels)
    cube_cap = sum(k.cycles * k.cores for k in prof.kernels)
    return {
        "outputs": res.outputs,
        "cycles": prof.total_cycles,
        "time_us": prof.time_us() if callable(getattr(prof, "time_us", None)) else prof.time_us,
        "gm_bytes": gm,
        "cube_util": cube_busy / max(1, cube_cap),
        "transdata": compiled.transdata,
        "kernels": compiled.kernels,
        "npu_ops": compiled.npu_ops,
        "compile_s": t1 - t0,
        "sim_s": t2 - t1,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--target", default="davinci-910")
    ap.add_argument("--precision-mode", default=DEFAULT_PRECISION)
    args = ap.parse_args()
    model = with_random_weights(onnx.load(str(light_model_path(args.model))))
    inputs = random_inputs(model)
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    t0 = time.perf_counter()
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    t1 = time.perf_counter()
    want = sess.run(None, inputs)
    t2 = time.perf_counter()
    rows = {}
    for fuse in (True, False):
        rows["fused" if fuse else "unfused"] = measure(model, inputs, args.precision_mode, args.target, fuse)
    print(f"{args.model} on {args.target}, {args.precision_mode}")
    print(f"{'':22}{'fused':>16}{'unfused':>16}")
    for key, fmt in (
        ("cycles", "{:,}"), ("time_us", "{:.1f}"), ("gm_bytes", "{:,}"), ("cube_util", "{:.3f}"),
        ("transdata", "{}"), ("kernels", "{}"), ("npu_ops", "{:,}"), ("compile_s", "{:.2f}"), ("sim_s", "{:.2f}"),
    ):
        print(f"{key:22}" + "".join(f"{fmt.format(rows[r][key]):>16}" for r in ("fused", "unfused")))
    err = max(float(np.abs(list(rows["fused"]["outputs"].values())[0] - want[0]).max()), 0.0)
    print(f"onnxruntime session creation {t1 - t0:.3f} s, inference {t2 - t1:.3f} s; max |npu - ort| = {err:.3g}")


if __name__ == "__main__":
    main()
