"""gedialects: an MLIR-style graph compiler for NPUs on xDSL, with a simulated NPU.

`gedialects.compile(model, example_inputs)` is the Python API (gedialects/api.py);
`torch.compile(model, backend="gedialects")` the torch backend
(gedialects/torch_backend.py). Both load on first use: importing the package
stays cheap and never imports torch.
"""

_API = ("compile", "CompiledModel", "CompileError")


def __getattr__(name: str):
    if name in _API:
        from gedialects import api

        return getattr(api, name)
    raise AttributeError(f"module 'gedialects' has no attribute '{name}'")
