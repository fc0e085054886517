# lit configuration of the gedialects FileCheck tests: `lit -v tests/filecheck`.
#
# RUN lines call `ge-opt`, `ge-run` and `filecheck` by name: the directory of
# the Python running lit (the venv's bin/, where pip put those scripts) goes
# first on PATH, so tests always use the same environment as lit itself.
# `not` is built into lit's shell. Helper files (e.g. .onnx models) live in an
# `Inputs/` directory next to the tests (not collected as tests); RUN lines
# reach them with `%inputs/model.onnx`.

import importlib.util
import os
import sys

import lit.formats

config.name = "gedialects"
# lit's internal shell: it provides `not`, and lit 18+ refuses the external one.
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".test"]
config.excludes = ["Inputs", "lit.cfg.py"]
config.test_source_root = os.path.dirname(__file__)

bin_dir = os.path.dirname(sys.executable)
config.environment["PATH"] = os.pathsep.join(
    [bin_dir, config.environment.get("PATH", os.environ.get("PATH", ""))]
)
for name in ("GE_OPT_TRACEBACK", "HOME", "PYTHONPATH"):  # PYTHONPATH: run a worktree's code
    if name in os.environ:
        config.environment[name] = os.environ[name]

# `%S` is substituted after ours, giving the test's own Inputs/ directory.
config.substitutions.append(("%inputs", "%S/Inputs"))
config.substitutions.append(("%python", sys.executable))

# `%onnx_light`: the light models that ship in the onnx wheel
# (onnx/backend/test/data/light/*.onnx); tests using it say `REQUIRES: onnx`.
_onnx = importlib.util.find_spec("onnx")
if _onnx is not None and _onnx.submodule_search_locations:
    _onnx_dir = list(_onnx.submodule_search_locations)[0]
    config.substitutions.append(
        ("%onnx_light", os.path.join(_onnx_dir, "backend", "test", "data", "light"))
    )
    config.available_features.add("onnx")

# Trace-mode tests build their .pt2 programs with torch (an optional extra):
# they say `REQUIRES: torch`.
if importlib.util.find_spec("torch") is not None:
    config.available_features.add("torch")
