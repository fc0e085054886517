"""Zoo CNNs with a batch of images on the simulated NPU (map-unbatch).

    .venv/bin/python benchmarks/batch_npu.py [NAME ...] [--batch 2] [--precision-mode force_fp16]

NAME is a zoo CNN with one image input (default: tv_resnet18,
tv_squeezenet1_1, resnet_hf, efficientnet). Each is compiled twice, as
committed (batch 1) and with the batch dim of its input and output set to
--batch (the zoo's example image, then its mirror images), and simulated
on davinci-910; per model the kernels, AI-CPU tasks and simulated cycles
of both, and whether the batched run matches onnxruntime by the mode's
criterion (gedialects/numerics.py).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import onnx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "zoo"))

from zoo import zoo_inputs, zoo_path  # noqa: E402

from gedialects.frontend.onnx_import import import_model  # noqa: E402
from gedialects.numerics import criterion  # noqa: E402
from gedialects.zoo import onnxruntime_outputs  # noqa: E402
from lowering.pipeline import compile_module, run_compiled  # noqa: E402

MODELS = ("tv_resnet18", "tv_squeezenet1_1", "resnet_hf", "efficientnet")


def batched(model: onnx.ModelProto, n: int) -> onnx.ModelProto:
    """The model with the batch dim of its inputs and outputs set to n."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    for value in (*model.graph.input, *model.graph.output):
        value.type.tensor_type.shape.dim[0].dim_value = n
    del model.graph.value_info[:]
    return model


def run(model: onnx.ModelProto, feeds: dict, precision: str) -> tuple[int, int, int, bool]:
    compiled = compile_module(import_model(model), precision)
    result = run_compiled(compiled, feeds, races="off")
    check = criterion(precision)
    ok = all(check.check(np.asarray(result.outputs[k]).reshape(v.shape), v).ok
             for k, v in onnxruntime_outputs(model, feeds).items())
    return compiled.kernels, compiled.aicpu, result.profile.total_cycles, ok


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", default=list(MODELS))
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--precision-mode", default="force_fp16", choices=("force_fp16", "must_keep_origin_dtype"))
    args = ap.parse_args(argv)
    print(f"{args.precision_mode}, davinci-910, batch {args.batch}\n")
    print(f"| model | kernels (batch 1) | cycles (batch 1) | kernels (batch {args.batch}) | AI-CPU tasks "
          f"(batch {args.batch}) | cycles (batch {args.batch}) | matches onnxruntime |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for name in args.names:
        model = onnx.load(zoo_path(name))
        (input_name, image), = zoo_inputs(name).items()
        k1, _, c1, _ = run(model, {input_name: image}, args.precision_mode)
        images = np.concatenate([image if i % 2 == 0 else image[..., ::-1] for i in range(args.batch)])
        kn, an, cn, ok = run(batched(model, args.batch), {input_name: images.astype(np.float32)}, args.precision_mode)
        print(f"| {name} | {k1} | {c1:,} | {kn} | {an} | {cn:,} | {'yes' if ok else 'NO'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
