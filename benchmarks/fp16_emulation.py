"""How far fp16 arithmetic itself takes a zoo model from fp32: the error of
an emulation that rounds every fused op's result to fp16 (weights fp32, then
weights fp16 too), next to the npu backend's force_fp16 error and the
criterion (the yardstick of tests/unit/test_zoo.py's FP16_EXCEEDS_CRITERION).

    .venv/bin/python benchmarks/fp16_emulation.py [NAME ...]

NAME is a zoo model (default: the models FP16_EXCEEDS_CRITERION lists and
two that pass, for contrast). Per model, on its committed example inputs:
the graph after graph-canonicalize, graph-decompose and graph-fuse (the ops
the npu kernels compute) runs in the reference interpreter, each float
result rounded to fp16 before the next op reads it, with its weights and
constants fp32 (kinder than force_fp16) and then rounded to fp16 as
force_fp16 stores them (after graph-fuse: a conv's folded batch norm
rounded with its weights); then the compiled model in force_fp16 on the
simulator.
Both errors are max |got - onnxruntime| / max |onnxruntime| over the
outputs; the criterion is gedialects.numerics' normwise fp16 bound.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import onnx
from xdsl.context import Context
from xdsl.dialects import func

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "zoo"))
from zoo import zoo_inputs, zoo_path  # noqa: E402

from gedialects.frontend.onnx_import import import_model  # noqa: E402
from gedialects.graph import ops as g  # noqa: E402
from gedialects.graph.interpreter import evaluate, input_names, main_function, output_names  # noqa: E402
from gedialects.numerics import CRITERIA  # noqa: E402
from gedialects.zoo import onnxruntime_outputs  # noqa: E402
from lowering.pipeline import compile_module, graph_stages, run_compiled, run_stage  # noqa: E402

DEFAULT = ["mobilenet_v2", "tv_shufflenet_v2_x0_5", "deeplabv3", "tv_resnet18", "convnext"]


def relative_error(got: dict, want: dict) -> float:
    return max(float(np.abs(np.asarray(got[k]).reshape(v.shape) - v).max() / np.abs(v).max()) for k, v in want.items())


def to_fp16(value: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return value.astype(np.float16).astype(np.float32)


def emulated_fp16(model: onnx.ModelProto, inputs: dict, fp16_weights: bool) -> dict:
    """The fused graph in the reference interpreter, every float op result
    rounded to fp16 (`fp16_weights`: constants too)."""
    module = import_model(model, {}, source="emulation")
    ctx = Context()
    for name, run in graph_stages(fuse=True, plan_memory=False):
        run_stage(name, run, ctx, module)
    fn = main_function(module)
    env = {arg: np.asarray(inputs[n]) for n, arg in zip(input_names(fn), fn.args)}
    for op in fn.body.block.ops:
        if isinstance(op, func.ReturnOp):
            return dict(zip(output_names(fn), (env[v] for v in op.operands)))
        for r, value in zip(op.results, evaluate(op, [env[v] for v in op.operands])):
            is_weight = isinstance(op, g.ConstantOp | g.FillOp)
            if value.dtype == np.float32 and (fp16_weights or not is_weight):
                value = to_fp16(value)
            env[r] = value
    raise AssertionError("main has no return")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*", default=DEFAULT)
    args = ap.parse_args()
    bound = CRITERIA["force_fp16"].norm_rtol
    print(f"{'model':24} {'emulation, fp32 weights':>24} {'emulation, fp16 weights':>24} {'npu force_fp16':>15} {'criterion':>10}")
    for name in args.models:
        model = onnx.load(str(zoo_path(name)))
        inputs = zoo_inputs(name)
        want = onnxruntime_outputs(model, inputs)
        kind = relative_error(emulated_fp16(model, inputs, fp16_weights=False), want)
        stored = relative_error(emulated_fp16(model, inputs, fp16_weights=True), want)
        compiled = compile_module(import_model(model, {}, source=name), precision="force_fp16")
        npu = relative_error(run_compiled(compiled, inputs, races="off").outputs, want)
        print(f"{name:24} {kind:>23.2%} {stored:>23.2%} {npu:>14.2%} {bound:>9.1%}")


if __name__ == "__main__":
    main()
