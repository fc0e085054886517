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


def with_random_weights(model: onnx.ModelProto, seed: int = 0) -> onnx.ModelProto:
    """Replace every ConstantOfShape weight by a random initializer.

    Multi-dimensional weights get He-style scaling (fan-in = all dims but the
    first) so activations stay O(1) through deep networks; 1-d parameters
    (biases, BN scale/mean/var) are uniform in [0.5, 1.5], so variances stay
    positive.
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
    return out


def onnxruntime_outputs(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3  # unused-initializer warnings of the light models
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, feeds)))
