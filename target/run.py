"""Run an npu-level `.mlir` file or an offline model (`.om`) on the simulator.

`run_npu_file` is what `ge-run --backend npu` calls for npu-level input; the
`main` here is a small stand-alone CLI (`python -m target.run prog.om`):

    python -m target.run prog.mlir --input x=x.npy --target davinci-910b \\
        --profile trace.json --save-om prog.om --outputs outdir/
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from target.assembler import assemble
from target.config import load_target
from target.errors import AssemblyError, TargetError
from target.profile import Profile, format_profile, write_chrome_trace
from target.program import Program
from target.simulator import simulate


def parse_npu_mlir(text: str, name: str = "<input>"):
    """Parse npu-level MLIR text with the dialects a kernel may use (and, loaded
    only when the text uses them, those of AI-CPU task bodies: func, graph)."""
    from xdsl.context import Context
    from xdsl.dialects.arith import Arith
    from xdsl.dialects.builtin import Builtin
    from xdsl.dialects.scf import Scf

    from gedialects.npu.ops import NPU
    from gedialects.textual import GeParser

    ctx = Context()
    for dialect in (Builtin, Arith, Scf, NPU):
        ctx.load_dialect(dialect)

    def body_dialect(i: int):
        def load():
            from target.aicpu import body_dialects

            return body_dialects()[i]

        return load

    ctx.register_dialect("func", body_dialect(1))
    ctx.register_dialect("graph", body_dialect(2))
    return GeParser(ctx, text, name).parse_module()


def load_program(path: str | Path) -> Program:
    """A Program from an `.mlir` file (assembled) or an offline-model file."""
    path = Path(path)
    if path.suffix == ".mlir":
        try:
            module = parse_npu_mlir(path.read_text(), str(path))
        except Exception as e:  # parse errors carry their own location text
            raise AssemblyError(f"{path}: {e}") from e
        return assemble(module)
    return Program.load(path)


def random_inputs(program: Program, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    out = {}
    for s in program.inputs:
        if np.dtype(s.dtype).kind == "f":
            out[s.name] = rng.standard_normal(s.shape).astype(s.dtype)
        else:
            out[s.name] = rng.integers(-8, 8, size=s.shape).astype(s.dtype)
    return out


def run_npu_file(
    path: str | Path,
    inputs: dict[str, np.ndarray] | None = None,
    target: str = "davinci-910",
    *,
    races: str = "error",
    trace: bool = False,
) -> tuple[dict[str, np.ndarray], Profile]:
    """Simulate an npu-level `.mlir` or `.om` file; missing inputs are random
    (seeded). Returns (outputs by name, profile)."""
    program = load_program(path)
    given = dict(inputs or {})
    for name, value in random_inputs(program).items():
        given.setdefault(name, value)
    result = simulate(program, given, load_target(target), races=races, trace=trace)
    return result.outputs, result.profile


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="npu-run", description=__doc__.splitlines()[0])
    ap.add_argument("program", help="an npu-level .mlir file or an offline model (.om)")
    ap.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy")
    ap.add_argument(
        "--target", default="davinci-910", help="preset name or config file"
    )
    ap.add_argument("--races", choices=("error", "warn", "off"), default="error")
    ap.add_argument("--profile", metavar="TRACE.json", help="write a Chrome trace")
    ap.add_argument("--save-om", metavar="FILE.om", help="save the assembled program")
    ap.add_argument("--outputs", metavar="DIR", help="save outputs as DIR/<name>.npy")
    args = ap.parse_args(argv)
    try:
        for flag, out in (("--profile", args.profile), ("--save-om", args.save_om)):
            if out and (Path(out).is_dir() or not Path(out).resolve().parent.is_dir()):
                raise AssemblyError(f"{flag}: cannot write '{out}': a directory, or its directory does not exist")
        inputs = {}
        for item in args.input:
            name, _, file = item.partition("=")
            inputs[name] = np.load(file, allow_pickle=False)
        if args.save_om:
            load_program(args.program).save(args.save_om)
        outputs, profile = run_npu_file(
            args.program,
            inputs,
            args.target,
            races=args.races,
            trace=bool(args.profile),
        )
    except (TargetError, OSError, ValueError) as e:  # TargetError: config, offline model, simulation
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(format_profile(profile))
    for name, value in outputs.items():
        print(f"output {name}: {value.dtype}{list(value.shape)}")
        if args.outputs:
            Path(args.outputs).mkdir(parents=True, exist_ok=True)
            np.save(Path(args.outputs) / f"{name}.npy", value)
    if args.profile:
        write_chrome_trace(profile, args.profile)
        print(f"trace written to {args.profile}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
