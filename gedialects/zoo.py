"""The bundled models: the nine "light" ONNX models that ship inside the onnx
wheel, plus what tests and benchmarks need to run them honestly.

Their weights are all one constant (ConstantOfShape 0.02), so every logit is
equal and the shipped outputs are weak checks; `with_random_weights` turns
them into models with real, distinct weights.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

LIGHT_MODELS = (
    "bvlc_alexnet",
    "densenet121",
    "inception_v1",
    "inception_v2",
    "resnet50",
    "shufflenet",
    "squeezenet",
    "vgg19",
    "zfnet512",
)


def light_dir() -> Path:
    return Path(os.path.dirname(onnx.__file__)) / "backend" / "test" / "data" / "light"


def light_model_path(name: str) -> Path:
    """Path of `light_<name>.onnx` (name as in LIGHT_MODELS, or a file path)."""
    if os.path.exists(name):
        return Path(name)
    path = light_dir() / f"light_{name}.onnx"
    if not path.exists():
        raise FileNotFoundError(f"no light model '{name}' (known: {', '.join(LIGHT_MODELS)})")
    return path


def light_models_error(names) -> str | None:
    """One line naming the `names` that are neither a bundled light model nor
    a file (for a command line's usage error), or None."""
    unknown = [n for n in names if n not in LIGHT_MODELS and not os.path.exists(n)]
    if not unknown:
        return None
    return f"no light model {', '.join(repr(n) for n in unknown)} (known: {', '.join(LIGHT_MODELS)}, or a path)"


def expected_output(name: str) -> np.ndarray:
    """The output shipped next to a light model (for onnx's dummy input)."""
    path = light_dir() / f"light_{name}_output_0.pb"
    return numpy_helper.to_array(onnx.load_tensor(str(path)))


def graph_inputs(model: onnx.ModelProto) -> list[onnx.ValueInfoProto]:
    inits = {i.name for i in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in inits]


def dummy_inputs(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    """onnx's backend-test input for light models: arange(n)/n in the input shape."""
    feeds = {}
    for x in graph_inputs(model):
        shape = tuple(d.dim_value if d.HasField("dim_value") else 1 for d in x.type.tensor_type.shape.dim)
        n = int(np.prod(shape))
        feeds[x.name] = (np.arange(n).reshape(shape) / n).astype(np.float32)
    return feeds


def random_inputs(model: onnx.ModelProto, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    feeds = {}
    for x in graph_inputs(model):
        shape = tuple(d.dim_value if d.HasField("dim_value") else 1 for d in x.type.tensor_type.shape.dim)
        feeds[x.name] = rng.standard_normal(shape).astype(np.float32)
    return feeds


def with_random_weights(model: onnx.ModelProto, seed: int = 0, calibrate: bool = False) -> onnx.ModelProto:
    """Replace every ConstantOfShape weight by a random initializer.

    Multi-dimensional weights get He-style scaling (fan-in = all dims but the
    first) so activations stay O(1) through deep networks; 1-d parameters
    (biases, BN scale/mean/var) are uniform in [0.5, 1.5], so variances stay
    positive.

    With `calibrate=True` the BatchNormalization statistics are then set to
    the real ones of the activations (`calibrate_batch_norm`, on
    `random_inputs(model, seed)`), as in a trained network; the default keeps
    the random statistics (their activations can grow through residual
    blocks: resnet50's logits reach 1.7e5, beyond fp16).
    """
    rng = np.random.default_rng(seed)
    out = onnx.ModelProto()
    out.CopyFrom(model)
    inits = {i.name: i for i in out.graph.initializer}
    kept = []
    for node in out.graph.node:
        if node.op_type != "ConstantOfShape" or node.input[0] not in inits:
            kept.append(node)
            continue
        shape = [int(d) for d in numpy_helper.to_array(inits[node.input[0]])]
        if len(shape) >= 2:
            fan_in = int(np.prod(shape[1:]))
            value = rng.standard_normal(shape, dtype=np.float32)
            value *= np.float32(np.sqrt(2.0 / fan_in))
        else:
            value = rng.uniform(0.5, 1.5, shape).astype(np.float32)
        out.graph.initializer.append(numpy_helper.from_array(value, node.output[0]))
    del out.graph.node[:]
    out.graph.node.extend(kept)
    if calibrate:
        out = calibrate_batch_norm(out, random_inputs(out, seed))
    return out


def calibrate_batch_norm(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> onnx.ModelProto:
    """Data-dependent init (like LSUV): set every BatchNormalization's mean and
    var initializers to the per-channel mean and variance of its input on
    `feeds`, computed by the reference interpreter in one pass. The graph is
    run op by op (`gedialects.graph.interpreter.evaluate`) and each batch
    norm's statistics are fixed as it is reached, so every batch norm sees
    inputs of already calibrated ones (topological order). Scale and bias
    stay as they are (uniform [0.5, 1.5]), so each batch norm's output is
    O(1) per channel. Models whose batch norm is exported as Mul/Add of
    constants are only calibrated where a BatchNormalization node exists.
    Deterministic: same model and feeds, same result.
    """
    from gedialects.frontend.onnx_import import import_model
    from gedialects.graph import ops as g
    from gedialects.graph.interpreter import evaluate, input_names, main_function

    bn_nodes = [n for n in model.graph.node if n.op_type == "BatchNormalization"]
    if not bn_nodes:
        return model
    out = onnx.ModelProto()
    out.CopyFrom(model)
    inits = {i.name: i for i in out.graph.initializer}
    fn = main_function(import_model(out, {}, source="calibrate"))
    env = {}
    for name, arg in zip(input_names(fn), fn.args):
        env[arg] = feeds[name]
    bn_ops = [op for op in fn.body.block.ops if isinstance(op, g.BatchNormOp)]
    if len(bn_ops) != len(bn_nodes):
        raise ValueError(f"calibrate_batch_norm: {len(bn_nodes)} BatchNormalization nodes but {len(bn_ops)} graph.batch_norm ops")
    which = dict(zip(bn_ops, bn_nodes))
    ret = fn.body.block.last_op
    for op in fn.body.block.ops:
        if op is ret:
            break
        args = [env[v] for v in op.operands]
        if op in which:
            node = which[op]
            x = args[0].astype(np.float64)
            axes = (0,) + tuple(range(2, x.ndim))
            mean = x.mean(axis=axes).astype(np.float32)
            var = x.var(axis=axes).astype(np.float32)
            for name, value in ((node.input[3], mean), (node.input[4], var)):
                if name not in inits:
                    raise ValueError(f"calibrate_batch_norm: {name} is not an initializer")
                inits[name].CopyFrom(numpy_helper.from_array(value, name))
            args[3], args[4] = mean, var
        for r, v in zip(op.results, evaluate(op, args)):
            env[r] = v
    return out


def onnxruntime_outputs(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3  # unused-initializer warnings of the light models
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, feeds)))
