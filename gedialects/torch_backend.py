"""`torch.compile(model, backend="gedialects")`: the dynamo backend.

Installing the package registers it (entry point group
`torch_dynamo_backends`), as torchair does for GE. Dynamo hands the backend
each captured FX graph (one per graph break); the backend returns a callable
that, per distinct set of input shapes (static shapes: a new shape
re-specialises, with a remark), brings the graph to core ATen with
torch.export, imports it into the graph dialect (trace mode,
gedialects/frontend/torch_import.py), compiles it with the one pipeline and
runs it on the simulated NPU (default) or the reference interpreter.

The module's parameters and buffers, which dynamo passes as graph inputs,
are compiled in as weights (so BatchNorm folds, weights are laid out once);
a weight changed in place after compiling is noticed (its version counter)
and re-specialises.

Options (`torch.compile(..., options={...})`):
  backend         "npu" (default) or "reference"
  precision_mode  ATC's modes (default: the project's, force_fp16)
  target          a target preset or config file (default davinci-910)
  fuse            graph-fuse on (default True)
  log             "info" prints every remark (fusions, AI-CPU placements,
                  specialisations) on stderr; default: warnings only
  profile         a path: the Chrome trace of each subgraph's latest run
                  (the first subgraph to write it gets the path, the k-th
                  NAME-k.json beside it); True prints
                  the per-kernel profile table on stderr after each run
"""

from __future__ import annotations

import itertools
import logging
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger("gedialects.torch")

OPTIONS = ("backend", "precision_mode", "target", "fuse", "log", "profile")

_subgraph_ids = itertools.count()


def _is_module_state(tensor) -> bool:
    """A parameter or buffer of the compiled module (dynamo marks them)."""
    import torch

    return isinstance(tensor, torch.nn.Parameter) or getattr(tensor, "_dynamo_static_input_type", None) is not None


def _bound_module(gm, statics: dict[int, Any], names: dict[int, str], ints: dict[int, int], arity: int):
    """An nn.Module that calls `gm` with its parameters and buffers held as
    this module's buffers (under their state-dict names) and the SymInt
    inputs of an automatic-dynamic graph fixed, so torch.export sees them as
    constants. The graph runs through fx.Interpreter with node metadata
    preserved, so the exported nodes keep dynamo's module paths."""
    import torch
    from torch import fx

    class Bound(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.slots: dict[int, str] = {}
            for i, tensor in statics.items():
                path = names.get(i) or f"input_{i}"
                *parents, leaf = path.split(".")
                owner = self
                for part in parents:
                    if not hasattr(owner, part):
                        owner.add_module(part, torch.nn.Module())
                    owner = getattr(owner, part)
                if hasattr(owner, leaf):  # two sources, one name: keep them apart
                    path, owner, leaf = f"input_{i}", self, f"input_{i}"
                owner.register_buffer(leaf, tensor.detach())
                self.slots[i] = path

        def forward(self, *dynamic):
            given = iter(dynamic)
            args = []
            for i in range(arity):
                if i in self.slots:
                    args.append(self.get_buffer(self.slots[i]))
                elif i in ints:
                    args.append(ints[i])
                else:
                    args.append(next(given))
            with fx.traceback.preserve_node_meta():
                return fx.Interpreter(gm).run(*args)

    return Bound()


@dataclass
class _Specialisation:
    compiled: Any
    versions: tuple
    order: list[int]
    """Positions of the tensors the compiled model takes, in its input order."""


@dataclass
class GedialectsGraph:
    """What the backend returns for one captured graph: compiles per input
    shapes on first call, then runs."""

    gm: Any
    options: dict
    index: int
    single_output: bool
    recompiled: bool = False
    """Dynamo captured this frame before (its guards failed: new shapes)."""
    specialisations: dict = field(default_factory=dict)

    def __call__(self, *args):
        import torch

        key = tuple(
            ("t", tuple(a.shape), str(a.dtype)) if isinstance(a, torch.Tensor) else ("v", a) for a in args
        )
        statics = {i for i, a in enumerate(args) if isinstance(a, torch.Tensor) and _is_module_state(a)}
        versions = tuple((i, args[i]._version, args[i].data_ptr()) for i in sorted(statics))
        spec = self.specialisations.get(key)
        if spec is not None and spec.versions != versions:
            log.info(f"subgraph {self.index}: a weight changed in place since it was compiled; re-specialising")
            spec = None
        if spec is None:
            again = self.specialisations or self.recompiled
            what = "re-specialising (static shapes) for input shapes" if again else "compiling for input shapes"
            log.info(f"subgraph {self.index}: {what} {_shapes(args)}")
            spec = self._specialise(args, statics, versions)
            self.specialisations[key] = spec
        outputs = spec.compiled(*[args[i] for i in spec.order])
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        self._report_profile(spec.compiled)
        return outputs[0] if self.single_output else list(outputs)

    def _specialise(self, args, statics: set[int], versions) -> _Specialisation:
        import torch

        from gedialects.api import CompiledModel, CompileError
        from gedialects.frontend.errors import FrontendError
        from gedialects.frontend.torch_import import export_module, import_exported_program, module_path

        placeholders = [n for n in self.gm.graph.nodes if n.op == "placeholder"]
        names = {}
        for i in statics:
            arg = placeholders[i].meta.get("grapharg") if i < len(placeholders) else None
            source = getattr(getattr(arg, "source", None), "name", None)
            source = source() if callable(source) else source
            names[i] = module_path(source or "")
        ints = {i: a for i, a in enumerate(args) if not isinstance(a, torch.Tensor)}
        order = [i for i in range(len(args)) if i not in statics and i not in ints]
        bound = _bound_module(self.gm, {i: args[i] for i in statics}, names, ints, len(args))
        source = f"subgraph {self.index}"
        try:
            module = import_exported_program(export_module(bound, [args[i] for i in order], source), source)
        except FrontendError as e:
            raise CompileError(str(e)) from None
        opts = self.options
        compiled = CompiledModel(  # force_fp16 calibrates on this call's inputs
            module, backend=opts.get("backend", "npu"), precision_mode=opts.get("precision_mode", _default_precision()),
            target=opts.get("target", "davinci-910"), fuse=opts.get("fuse", True),
            calibration=[args[i] for i in order],
        )
        if compiled.backend == "npu":
            log.info(f"subgraph {self.index}: {compiled.kernels} kernels ({compiled.aicpu} on the AI CPU), "
                    f"{sum(1 for r in compiled.remarks if r.kind == 'applied')} fusions applied")
        return _Specialisation(compiled, versions, order)

    def _report_profile(self, compiled) -> None:
        profile = self.options.get("profile")
        if not profile or compiled.profile is None:
            return
        if profile is True:
            print(compiled.profile_table(), file=sys.stderr)
            return
        # the subgraphs writing to one path: the first gets it, the k-th NAME-k.json
        writers = _profile_writers.setdefault(str(profile), [])
        if self.index not in writers:
            writers.append(self.index)
        path, k = Path(profile), writers.index(self.index)
        if k:
            path = path.with_name(f"{path.stem}-{k}{path.suffix or '.json'}")
        compiled.write_trace(str(path))


_profile_writers: dict[str, list[int]] = {}


def _default_precision() -> str:
    from lowering.graph_to_tile import DEFAULT_PRECISION

    return DEFAULT_PRECISION


def _shapes(args) -> str:
    return ", ".join(str(list(a.shape)) for a in args if hasattr(a, "shape") and not _is_module_state(a))


def gedialects_backend(gm, example_inputs, options: dict | None = None, **unused):
    """The torch.compile backend (see the module docstring)."""
    options = dict(options or {})
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        from gedialects.api import CompileError

        raise CompileError(f"unknown torch.compile option(s) {', '.join(unknown)} (expected {', '.join(OPTIONS)})")
    _configure_log(options.get("log"))
    index = next(_subgraph_ids)
    output = gm.graph.output_node().args[0]
    single = not isinstance(output, (tuple, list))
    if not any(n.op in ("call_function", "call_method", "call_module") for n in gm.graph.nodes):
        log.info(f"subgraph {index}: no computation; runs as captured")
        return gm.forward
    return GedialectsGraph(gm, options, index, single, recompiled=_recompiling())


def _recompiling() -> bool:
    """Whether dynamo is compiling a frame again (compile id 'F/C', C > 0)."""
    try:
        from torch._guards import CompileContext

        compile_id = CompileContext.current_compile_id()
    except Exception:  # private API: without it, every capture reads as a first one
        return False
    return bool(getattr(compile_id, "frame_compile_id", 0))


_stderr_handler: logging.Handler | None = None


def _configure_log(level: str | None) -> None:
    """`log=...`: gedialects' messages at that level on stderr (one handler)."""
    global _stderr_handler
    if level is None:
        return
    logger = logging.getLogger("gedialects")
    if _stderr_handler is None:
        _stderr_handler = logging.StreamHandler(sys.stderr)
        _stderr_handler.setFormatter(logging.Formatter("gedialects: %(levelname)s: %(message)s"))
        logger.addHandler(_stderr_handler)
    logger.setLevel(getattr(logging, str(level).upper()))
