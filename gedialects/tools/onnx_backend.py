"""An `onnx.backend.base.Backend` over gedialects: the ONNX backend
conformance suite (`onnx.backend.test`) drives the importer and a runner
through it.

`prepare` imports and verifies the model once; the returned rep feeds
positional or named inputs to a *runner*, a callable
`(module, {input name: array}) -> {output name: array}`. The reference
runner is the numpy interpreter of the graph dialect (`GeReferenceBackend`);
`GeNpuBackend` runs the same reps with an `NpuRunner`, which compiles the
module for the simulated NPU (AI-CPU fallback included) and simulates it.
Inputs the graph dialect needs as attributes (shape-like operands) are
bound at run time; see `GeBackendRep`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import onnx
from onnx.backend.base import Backend, BackendRep, Device, DeviceType
from xdsl.dialects.builtin import ModuleOp

from gedialects.frontend.errors import NotConstantError
from gedialects.frontend.onnx_import import import_model
from gedialects.graph import interpreter
from gedialects.graph.interpreter import input_names, main_function, output_names
from gedialects.graph.tensors import numpy_dtype

if TYPE_CHECKING:
    from lowering.pipeline import Compiled

Runner = Callable[[ModuleOp, Mapping[str, np.ndarray]], Mapping[str, np.ndarray]]
"""Executes an imported module on named inputs; outputs by name."""


class GeBackendRep(BackendRep):
    """A model imported once, run many times by `runner`.

    When an operand the graph dialect takes as an attribute (Reshape's shape,
    Slice's starts, Reduce axes, ...) is a graph input rather than a constant,
    the rep *specialises*: it binds that input's value at run time and imports
    the model for it (once per distinct value). `bound` names those inputs.
    """

    def __init__(self, model: onnx.ModelProto, runner: Runner = interpreter.run, source: str = "model") -> None:
        self.model = model
        self.runner = runner
        self.source = source
        inits = {i.name for i in model.graph.initializer}
        self.input_names = [i.name for i in model.graph.input if i.name not in inits]
        self.output_names = [o.name for o in model.graph.output]
        self.bound: list[str] = []
        self._modules: dict[tuple, ModuleOp] = {}
        try:
            self.module: ModuleOp | None = self._import({})
        except NotConstantError as e:
            if e.tensor not in self.input_names:
                raise
            self.bound.append(e.tensor)
            self.module = None

    def run(self, inputs: Any, **kwargs: Any) -> tuple[np.ndarray, ...]:
        """Outputs in graph output order, from a list (graph input order), a
        dict keyed by input name, or a single array."""
        feeds = self.feeds(inputs)
        module = self.module if self.module is not None else self._specialise(feeds)
        fn = main_function(module)
        outputs = self.runner(module, {n: feeds[n] for n in input_names(fn)})
        return tuple(outputs[name] for name in output_names(fn))

    def feeds(self, inputs: Any) -> dict[str, np.ndarray]:
        if isinstance(inputs, Mapping):
            unknown = set(inputs) - set(self.input_names)
            if unknown:
                raise ValueError(
                    f"unknown input(s) {', '.join(sorted(unknown))}; "
                    f"the inputs are {', '.join(self.input_names)}"
                )
            return {name: np.asarray(v) for name, v in inputs.items()}
        if isinstance(inputs, np.ndarray):
            inputs = [inputs]
        if len(inputs) != len(self.input_names):
            raise ValueError(
                f"got {len(inputs)} input(s), the model takes {len(self.input_names)} "
                f"({', '.join(self.input_names)})"
            )
        return {name: np.asarray(v) for name, v in zip(self.input_names, inputs)}

    def _import(self, bind: Mapping[str, np.ndarray]) -> ModuleOp:
        module = import_model(self.model, source=self.source, bind=bind)
        module.verify()
        return module

    def _specialise(self, feeds: Mapping[str, np.ndarray]) -> ModuleOp:
        """The module for the values of the bound inputs in `feeds`."""
        while True:
            bind = {n: feeds[n] for n in self.bound}
            key = tuple((n, a.dtype.str, a.shape, a.tobytes()) for n, a in bind.items())
            if key in self._modules:
                return self._modules[key]
            try:
                module = self._import(bind)
            except NotConstantError as e:
                if e.tensor not in self.input_names or e.tensor in self.bound:
                    raise
                self.bound.append(e.tensor)
                continue
            self._modules[key] = module
            return module


class GeReferenceBackend(Backend):
    """ONNX models on the graph dialect's reference interpreter (CPU)."""

    runner: Runner = staticmethod(interpreter.run)  # type: ignore[assignment]

    @classmethod
    def prepare(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any) -> GeBackendRep:
        if not cls.supports_device(device):
            raise ValueError(f"{cls.__name__} does not run on device {device}")
        return GeBackendRep(model, cls.runner, source=model.graph.name or "model")

    @classmethod
    def run_model(
        cls, model: onnx.ModelProto, inputs: Any, device: str = "CPU", **kwargs: Any
    ) -> tuple[np.ndarray, ...]:
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(
        cls,
        node: onnx.NodeProto,
        inputs: Any,
        device: str = "CPU",
        outputs_info: Sequence[tuple[np.dtype, tuple[int, ...]]] | None = None,
        **kwargs: Any,
    ) -> tuple[np.ndarray, ...]:
        """Run one node: wrap it in a model typed from the inputs (and from
        `outputs_info` when given)."""
        arrays = list(inputs.values()) if isinstance(inputs, Mapping) else list(inputs)
        names = [n for n in node.input if n]
        if len(arrays) != len(names):
            raise ValueError(f"node {node.op_type} takes {len(names)} input(s), got {len(arrays)}")
        graph_inputs = [
            onnx.helper.make_tensor_value_info(
                n, onnx.helper.np_dtype_to_tensor_dtype(np.asarray(a).dtype), np.asarray(a).shape
            )
            for n, a in zip(names, arrays)
        ]
        outs = [n for n in node.output if n]
        if outputs_info is not None:
            graph_outputs = [
                onnx.helper.make_tensor_value_info(
                    n, onnx.helper.np_dtype_to_tensor_dtype(np.dtype(dt)), shape
                )
                for n, (dt, shape) in zip(outs, outputs_info)
            ]
        else:
            graph_outputs = [onnx.helper.make_empty_tensor_value_info(n) for n in outs]
        graph = onnx.helper.make_graph([node], f"{node.op_type}_node", graph_inputs, graph_outputs)
        opset = kwargs.get("opset_version", onnx.defs.onnx_opset_version())
        model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", opset)])
        return cls.run_model(model, arrays, device)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        try:
            return Device(device).type == DeviceType.CPU
        except AttributeError:
            return False


class NpuRunner:
    """A runner that compiles a module for the simulated NPU and simulates it.

    Each distinct module is compiled once (a clone: compilation rewrites the
    module in place, and the rep keeps its modules for later runs) with
    `lowering.pipeline.compile_module`; ops without an AI-core kernel run as
    AI-CPU tasks. Every run is simulated with `run_compiled` (race detection
    as given, "error" by default). Outputs are returned with the graph's
    declared element type and shape: the program stores some tensors in
    another float type (fp32) or another shape than the graph declares.

    `aicpu` records, per run, how many AI-CPU tasks the program that ran
    has (`Compiled.aicpu`); 0 means it ran entirely on the AI core.
    """

    def __init__(
        self, precision: str = "must_keep_origin_dtype", target: str = "davinci-910", races: str = "error"
    ) -> None:
        self.precision = precision
        self.target = target
        self.races = races
        self.aicpu: list[int] = []
        self._compiled: dict[int, tuple[ModuleOp, Compiled]] = {}

    def compile(self, module: ModuleOp) -> Compiled:
        """The compiled program for `module` (compiled on first use)."""
        from lowering.pipeline import compile_module

        entry = self._compiled.get(id(module))
        if entry is None or entry[0] is not module:
            entry = (module, compile_module(module.clone(), precision=self.precision, target=self.target))
            self._compiled[id(module)] = entry
        return entry[1]

    def __call__(self, module: ModuleOp, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        from lowering.pipeline import run_compiled

        compiled = self.compile(module)
        result = run_compiled(compiled, dict(inputs), target=self.target, races=self.races)
        self.aicpu.append(compiled.aicpu)
        fn = main_function(module)
        outputs = {}
        for name, ty in zip(output_names(fn), fn.function_type.outputs):
            value = np.asarray(result.outputs[name])
            outputs[name] = _as_declared(value, ty)
        return outputs


def _as_declared(value: np.ndarray, ty: Any) -> np.ndarray:
    """`value` with the element type and (static) shape of the graph type `ty`."""
    if hasattr(ty, "get_element_type"):
        value = value.astype(numpy_dtype(ty.get_element_type()), copy=False)
    if hasattr(ty, "get_shape"):
        shape = tuple(ty.get_shape())
        if all(d >= 0 for d in shape) and value.shape != shape and value.size == int(np.prod(shape)):
            value = value.reshape(shape)
    return value


class GeNpuBackend(GeReferenceBackend):
    """ONNX models compiled for the simulated NPU (must_keep_origin_dtype, the
    AI-CPU fallback on, races an error) and run on the simulator.

    Each rep gets its own `NpuRunner`: `rep.runner.aicpu` lists the AI-CPU
    task count of every run. The device is the host "CPU" that runs the
    simulator (onnx's device types are CPU and CUDA only)."""

    precision = "must_keep_origin_dtype"
    target = "davinci-910"
    races = "error"

    @classmethod
    def prepare(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any) -> GeBackendRep:
        if not cls.supports_device(device):
            raise ValueError(f"{cls.__name__} does not run on device {device}")
        runner = NpuRunner(cls.precision, cls.target, cls.races)
        return GeBackendRep(model, runner, source=model.graph.name or "model")
