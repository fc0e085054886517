"""The Python API: `gedialects.compile(model, example_inputs)`.

    compiled = gedialects.compile(model, (x,), precision_mode="must_keep_origin_dtype")
    y = compiled(x)                 # torch tensors in, torch tensors out (numpy works too)
    print(compiled.profile_table()) # the last run's per-kernel profile
    compiled.save("model.om")       # an offline model for `ge-run model.om`

`model` is a torch `nn.Module` (traced with torch.export at the example
inputs' shapes: trace mode), a `torch.export.ExportedProgram`, an
`onnx.ModelProto`, the path of an .onnx / .pt2 file (parse mode) or the
name of a bundled light model (`"squeezenet"`). The
compile is the one pipeline `lowering.pipeline.compile_module` runs for
ge-compile and ge-run; the npu backend simulates the program, the reference
backend interprets the graph dialect in numpy.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from gedialects.remarks import Remark
from lowering.graph_to_tile import DEFAULT_PRECISION, check_precision_mode

BACKENDS = ("npu", "reference")


class CompileError(Exception):
    """A model gedialects cannot compile or run, in one line."""


def import_model(model: Any, example_inputs: Sequence | None = None, source: str | None = None) -> ModuleOp:
    """The graph-dialect module of any model `compile` accepts."""
    from gedialects.frontend.errors import FrontendError

    try:
        if isinstance(model, (str, os.PathLike)):
            path = os.fspath(model)
            if not os.path.exists(path):
                from gedialects.zoo import LIGHT_MODELS, light_model_path

                if path not in LIGHT_MODELS:
                    raise CompileError(f"{path}: no such file (nor a bundled model: {', '.join(LIGHT_MODELS)})")
                path = str(light_model_path(path))
            if path.endswith(".pt2"):
                from gedialects.frontend.torch_import import import_exported_program, load_pt2

                return import_exported_program(load_pt2(path), source=path)
            from gedialects.frontend.onnx_import import import_model as import_onnx
            from gedialects.frontend.onnx_import import load_model

            return import_onnx(load_model(path), source=path)
        kind = type(model).__module__.split(".")[0]
        if kind == "onnx":
            from gedialects.frontend.onnx_import import import_model as import_onnx

            return import_onnx(model, source=source or "model")
        from gedialects.frontend.torch_import import export_module, import_exported_program

        import torch

        if isinstance(model, torch.export.ExportedProgram):
            return import_exported_program(model, source=source or "program")
        if example_inputs is None:
            raise CompileError("compile(): a torch module needs example_inputs (a tuple of tensors)")
        name = source or type(model).__name__
        return import_exported_program(export_module(model, example_inputs, name), source=name)
    except FrontendError as e:
        raise CompileError(str(e)) from None


@contextlib.contextmanager
def collect_remarks(into: list[Remark]) -> Iterator[None]:
    """Every remark the compiler logs while the body runs, appended to `into`
    (whatever the user's logging configuration shows)."""

    class _Collector(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            remark = getattr(record, "remark", None)
            if remark is not None:
                into.append(remark)

    logger = logging.getLogger("gedialects")
    handler = _Collector(logging.INFO)
    saved = logger.level
    if logger.getEffectiveLevel() > logging.INFO:
        logger.setLevel(logging.INFO)
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(saved)


class CompiledModel:
    """A model compiled for one backend; call it like the model."""

    def __init__(
        self,
        module: ModuleOp,
        *,
        backend: str = "npu",
        precision_mode: str = DEFAULT_PRECISION,
        target: str = "davinci-910",
        fuse: bool = True,
        aicpu_fallback: bool = True,
        calibration: Mapping[str, np.ndarray] | Sequence | None = None,
        fusion_switch_file: str = "",
    ):
        """`calibration`: force_fp16's range-scaling inputs, named or in the
        model's input order (torch tensors or arrays); `fusion_switch_file`:
        which fusion rules are off (docs/fusion.md)."""
        from gedialects.graph.interpreter import input_names, main_function, output_names
        from gedialects.graph.tensors import numpy_dtype

        if backend not in BACKENDS:
            raise CompileError(f"backend '{backend}' is unknown (expected one of {', '.join(BACKENDS)})")
        from xdsl.utils.exceptions import PassFailedException

        try:
            check_precision_mode(precision_mode)
        except PassFailedException as e:
            raise CompileError(str(e)) from None
        self.backend, self.precision_mode, self.target = backend, precision_mode, target
        fn = main_function(module)
        self.input_names = input_names(fn)
        self.output_names = output_names(fn)
        self.input_specs = {
            name: (np.dtype(numpy_dtype(arg.type.element_type)), tuple(arg.type.get_shape()))
            for name, arg in zip(self.input_names, fn.args)
        }
        self.graph = module.clone()
        """The graph-dialect module as imported (before any pass)."""
        self.remarks: list[Remark] = []
        """What the compiler did and did not do (fusions, AI-CPU placements, ...)."""
        self.compiled = None
        self.program = None
        self.profile = None
        """The last npu run's profile (target.profile.Profile)."""
        if calibration is not None and not isinstance(calibration, Mapping):
            arrays = [_array(a) for a in calibration]
            calibration = dict(zip(self.input_names, arrays)) if len(arrays) == len(self.input_names) else None
        if backend == "npu":
            self._compile_for_npu(module, fuse, aicpu_fallback, calibration, fusion_switch_file)

    def _compile_for_npu(self, module: ModuleOp, fuse: bool, aicpu_fallback: bool, calibration,
                         fusion_switch_file: str) -> None:
        from xdsl.utils.exceptions import DiagnosticException

        from lowering.pipeline import collector_paused, compile_module
        from target.config import load_target
        from target.errors import TargetError

        try:
            load_target(self.target)
            # compile and assemble as one job: resumed between them, the collector walks the finished IR
            with collector_paused(), collect_remarks(self.remarks):
                self.compiled = compile_module(
                    module, self.precision_mode, self.target, fuse=fuse, aicpu_fallback=aicpu_fallback,
                    calibration=dict(calibration) if calibration is not None else None,
                    fusion_switch_file=fusion_switch_file,
                )
                self.program = self.compiled.program()
        except (DiagnosticException, TargetError) as e:
            raise CompileError(str(e).strip().splitlines()[0]) from None

    # ----------------------------------------------------------------- run
    def run(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Named numpy inputs -> named numpy outputs."""
        missing = [n for n in self.input_names if n not in inputs]
        if missing:
            raise CompileError(f"missing input(s) {', '.join(missing)}; the inputs are {', '.join(self.input_names)}")
        feeds = {}
        for name in self.input_names:
            dtype, shape = self.input_specs[name]
            array = np.asarray(inputs[name])
            if tuple(array.shape) != shape:
                raise CompileError(f"input '{name}' has shape {list(array.shape)}; the model was compiled for {list(shape)}")
            feeds[name] = np.ascontiguousarray(array, dtype=dtype)
        if self.backend == "reference":
            from gedialects.graph.interpreter import run as run_reference

            return run_reference(self.graph, feeds)
        from target.errors import TargetError
        from target.simulator import simulate

        try:
            result = simulate(self.program, feeds, self.target)
        except TargetError as e:
            raise CompileError(str(e)) from None
        self.profile = result.profile
        return result.outputs

    def __call__(self, *args):
        """Positional inputs (torch tensors or arrays) in the model's order;
        the outputs as the same kind, a tuple when there are several."""
        if len(args) != len(self.input_names):
            raise CompileError(f"the model takes {len(self.input_names)} input(s) ({', '.join(self.input_names)}), got {len(args)}")
        as_torch = any(type(a).__module__.startswith("torch") for a in args)
        outputs = self.run(dict(zip(self.input_names, map(_array, args))))
        values = [outputs[n] for n in self.output_names]
        if as_torch:
            import torch

            values = [torch.from_numpy(np.ascontiguousarray(v)) for v in values]
        return values[0] if len(values) == 1 else tuple(values)

    # ------------------------------------------------------------- results
    @property
    def kernels(self) -> int:
        return self.compiled.kernels if self.compiled is not None else 0

    @property
    def aicpu(self) -> int:
        """Ops placed on the AI CPU (no AI-core kernel)."""
        return self.compiled.aicpu if self.compiled is not None else 0

    def profile_table(self) -> str:
        """The last run's per-kernel profile, as ge-run prints it."""
        from target.profile import format_profile

        if self.profile is None:
            raise CompileError("no profile yet: run the model on the npu backend first")
        return format_profile(self.profile)

    def write_trace(self, path: str) -> None:
        """The last run's Chrome trace (kernel level)."""
        from target.profile import write_chrome_trace

        if self.profile is None:
            raise CompileError("no profile yet: run the model on the npu backend first")
        write_chrome_trace(self.profile, path)

    def save(self, path: str) -> None:
        """The offline model (.om) for `ge-run PATH`."""
        if self.program is None:
            raise CompileError("only an npu-backend compile has an offline model to save")
        self.program.save(path)


def compile(  # noqa: A001 - the package's verb, as torch.compile
    model: Any,
    example_inputs: Sequence | None = None,
    *,
    backend: str = "npu",
    precision_mode: str = DEFAULT_PRECISION,
    target: str = "davinci-910",
    fuse: bool = True,
    aicpu_fallback: bool = True,
    calibration: Mapping[str, np.ndarray] | None = None,
    fusion_switch_file: str = "",
) -> CompiledModel:
    """Compile `model` (see the module docstring) for `backend`. force_fp16
    calibrates its range scaling on `calibration`, else on the example
    inputs when there are any. `fusion_switch_file`: ATC's switch file
    (e.g. `AttentionFusionPass:off`, docs/fusion.md)."""
    module = import_model(model, example_inputs)
    return CompiledModel(module, backend=backend, precision_mode=precision_mode, target=target, fuse=fuse,
                         aicpu_fallback=aicpu_fallback,
                         calibration=calibration if calibration is not None else example_inputs,
                         fusion_switch_file=fusion_switch_file)


def _array(value) -> np.ndarray:
    """A torch tensor or array-like as a numpy array."""
    return value.detach().cpu().numpy() if hasattr(value, "detach") else np.asarray(value)
