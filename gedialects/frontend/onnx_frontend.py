"""`ge-opt model.onnx` / `ge-opt model.pt2`: the ONNX importer (parse mode) and
the torch.export importer (trace mode) as xDSL frontends."""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO, ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.frontend import Frontend

from gedialects.frontend.onnx_import import import_model, load_model, parse_input_shapes


@dataclass(frozen=True)
class OnnxFrontend(Frontend):
    """Imports an ONNX model; `input_shape` uses ATC's 'x:1,3,224,224;y:...'."""

    name: ClassVar[str] = "onnx"
    input_shape: str = ""

    def parse(self, ctx: Context, input: IO[bytes], input_name: str) -> ModuleOp:
        # The printer looks for resource blobs in the dialects the context has
        # loaded; nothing was parsed, so load the ones the import produces.
        for dialect in ("builtin", "func", "graph"):
            ctx.get_dialect(dialect)
        model = load_model(input_name, input.read())
        return import_model(model, parse_input_shapes(self.input_shape), source=input_name)


@dataclass(frozen=True)
class Pt2Frontend(Frontend):
    """Imports a saved torch.export program (`torch.export.save`); needs torch."""

    name: ClassVar[str] = "pt2"

    def parse(self, ctx: Context, input: IO[bytes], input_name: str) -> ModuleOp:
        from gedialects.frontend.torch_import import import_exported_program, load_pt2

        for dialect in ("builtin", "func", "graph"):
            ctx.get_dialect(dialect)
        return import_exported_program(load_pt2(input_name, input.read()), source=input_name)
