"""The assembled program (the offline model): opcodes, layout, file format.

A kernel's code is a tuple of instructions, each a tuple of ints (and one float
for the scalar of vadds/vmuls/vmaxs/vdup), so the simulator's inner loop never
touches xDSL objects. Layouts:

  scalar ops:  (op, -1, ...operands...)                       op < FIRST_PIPE_OP
  pipe ops:    (op, pipe, r0, i0, r1, i1, r2, i2, *fields)    op >= FIRST_PIPE_OP

where address k is `regs[rk] + ik` (register 0 always holds 0, so a static
address is (0, offset)). Register 1 holds the block index, 2 the block count.

File format (`.om`): a NumPy `.npz` (zip) read with allow_pickle=False, holding
`header` (UTF-8 JSON: format version, GM layout, tensors, kernels' metadata,
schedule, AI-CPU tasks with their bodies as text), per kernel `k<i>_code` (all
instructions flattened to int64, floats stored as their IEEE-754 bit pattern)
and `k<i>_offsets`, and per constant `const<i>` (its raw bytes).
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import NamedTuple

import numpy as np

from target.errors import AssemblyError

FORMAT = "gedialects-npu-om"
VERSION = 2  # 2: AI-CPU tasks ("aicpu_tasks", schedule entries "aicpu")
READABLE_VERSIONS = (1, 2)

# --- scalar opcodes -------------------------------------------------------
MOV, ADD, SUB, MUL, DIVS, FLOORDIV, CEILDIV, REMS, MIN, MAX = range(10)
FOR, ENDFOR, WAIT_S, BARRIER_ALL = 10, 11, 12, 13
FIRST_PIPE_OP = 32
# --- pipe opcodes ---------------------------------------------------------
DMA, LOAD2D, LOAD3D, MMAD = 32, 33, 34, 35
VBIN, VUN, VSCALAR, VREDUCE, VCONV, VDUP = 36, 37, 38, 39, 40, 41
SET_FLAG, WAIT_FLAG, BARRIER = 42, 43, 44

OPCODE_NAMES = {
    MOV: "mov",
    ADD: "add",
    SUB: "sub",
    MUL: "mul",
    DIVS: "divs",
    FLOORDIV: "floordiv",
    CEILDIV: "ceildiv",
    REMS: "rems",
    MIN: "min",
    MAX: "max",
    FOR: "for",
    ENDFOR: "endfor",
    WAIT_S: "wait_flag",
    BARRIER_ALL: "pipe_barrier",
    DMA: "dma",
    LOAD2D: "load_2d",
    LOAD3D: "load_3d",
    MMAD: "mmad",
    VBIN: "vbinary",
    VUN: "vunary",
    VSCALAR: "vscalar",
    VREDUCE: "vreduce",
    VCONV: "vconv",
    VDUP: "vdup",
    SET_FLAG: "set_flag",
    WAIT_FLAG: "wait_flag",
    BARRIER: "pipe_barrier",
}

# Position of the float field, for the opcodes that have one.
FLOAT_SLOT = {VSCALAR: 16, VDUP: 13}

# Vector function ids (the `kind` field of VBIN/VUN/VSCALAR/VREDUCE).
VBIN_KINDS = ("vadd", "vsub", "vmul", "vdiv", "vmax", "vmin")
VUN_KINDS = ("vrelu", "vexp", "vln", "vsqrt", "vabs")
VSCALAR_KINDS = ("vadds", "vmuls", "vmaxs")
VREDUCE_KINDS = ("vreduce_sum", "vreduce_max")
DTYPES = ("f16", "f32")  # dtype codes


@dataclass(frozen=True)
class TensorSlot:
    """A named program input/output: where it lives in GM and what it is."""

    name: str
    offset: int
    shape: tuple[int, ...]
    dtype: str  # a NumPy dtype name, e.g. "float16"

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize


@dataclass(frozen=True)
class ConstBlob:
    name: str
    offset: int
    data: bytes


@dataclass(frozen=True)
class Kernel:
    name: str
    code: tuple[tuple, ...]
    init_regs: tuple[int, ...]
    # Per instruction: (op name, location text) for messages and traces.
    locs: tuple[tuple[str, str], ...]
    uses_cube: bool

    def describe(self, pc: int) -> str:
        name, loc = self.locs[pc]
        where = f" at {loc}" if loc else ""
        return f"{name} (#{pc}){where}"


class TaskTensor(NamedTuple):
    """One GM operand of an AI-CPU task: (offset, NumPy dtype name as stored,
    shape, scale); logical value = stored value * scale."""

    offset: int
    dtype: str
    shape: tuple[int, ...]
    scale: float

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize


@dataclass(frozen=True)
class AicpuTask:
    """An `npu.aicpu` task: its GM operands, its body (a module with one
    func.func of graph-dialect ops, printed in generic form), and what the
    compiler said of it. `func` is the body parsed (set by the assembler and
    by `Program.load`), `work` what the cost model charges for it
    (target/aicpu.py); neither is stored."""

    name: str
    ins: tuple[TaskTensor, ...]
    outs: tuple[TaskTensor, ...]
    body: str
    kind: str = "aicpu"
    absorbed: tuple[str, ...] = ()
    source: str = ""
    reason: str = ""
    func: object = field(default=None, compare=False, repr=False)
    work: int = field(default=0, compare=False)

    @property
    def bytes_read(self) -> int:
        return sum(t.nbytes for t in self.ins)

    @property
    def bytes_written(self) -> int:
        return sum(t.nbytes for t in self.outs)


@dataclass(frozen=True)
class Program:
    """A whole assembled program. `schedule` entries are
    ("launch", kernel index, block_dim, stream), ("aicpu", task index, stream),
    ("record", stream, event) or ("wait", stream, event), in program order."""

    name: str
    gm_size: int
    inputs: tuple[TensorSlot, ...]
    outputs: tuple[TensorSlot, ...]
    constants: tuple[ConstBlob, ...]
    kernels: tuple[Kernel, ...]
    schedule: tuple[tuple, ...]
    meta: dict = field(default_factory=dict, compare=False)
    aicpu_tasks: tuple[AicpuTask, ...] = ()

    def instruction_count(self) -> int:
        return sum(len(k.code) for k in self.kernels)

    # -- file I/O ---------------------------------------------------------

    def save(self, path: str | Path) -> None:
        header = {
            "format": FORMAT,
            "version": VERSION,
            "name": self.name,
            "gm_size": self.gm_size,
            "inputs": [_slot_json(s) for s in self.inputs],
            "outputs": [_slot_json(s) for s in self.outputs],
            "constants": [{"name": c.name, "offset": c.offset} for c in self.constants],
            "kernels": [
                {
                    "name": k.name,
                    "init_regs": list(k.init_regs),
                    "locs": [list(x) for x in k.locs],
                    "uses_cube": k.uses_cube,
                }
                for k in self.kernels
            ],
            "schedule": [list(s) for s in self.schedule],
            "meta": self.meta,
            "aicpu_tasks": [_task_json(t) for t in self.aicpu_tasks],
        }
        arrays: dict[str, np.ndarray] = {
            "header": np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
        }
        for i, k in enumerate(self.kernels):
            flat, offsets = _flatten(k.code)
            arrays[f"k{i}_code"] = flat
            arrays[f"k{i}_offsets"] = offsets
        for i, c in enumerate(self.constants):
            arrays[f"const{i}"] = np.frombuffer(c.data, dtype=np.uint8)
        with open(path, "wb") as f:
            np.savez_compressed(f, **arrays)

    @staticmethod
    def load(path: str | Path) -> Program:
        try:
            with np.load(path, allow_pickle=False) as z:
                header = json.loads(bytes(z["header"]).decode())
                if header.get("format") != FORMAT:
                    raise AssemblyError(f"{path}: not an npu offline model")
                if header.get("version") not in READABLE_VERSIONS:
                    raise AssemblyError(
                        f"{path}: offline model version {header.get('version')} "
                        f"is not supported (expected {VERSION})"
                    )
                kernels = tuple(
                    Kernel(
                        name=kh["name"],
                        code=_unflatten(z[f"k{i}_code"], z[f"k{i}_offsets"]),
                        init_regs=tuple(kh["init_regs"]),
                        locs=tuple(tuple(x) for x in kh["locs"]),
                        uses_cube=kh["uses_cube"],
                    )
                    for i, kh in enumerate(header["kernels"])
                )
                constants = tuple(
                    ConstBlob(c["name"], c["offset"], bytes(z[f"const{i}"]))
                    for i, c in enumerate(header["constants"])
                )
                tasks = tuple(_task_from_json(t) for t in header.get("aicpu_tasks", []))
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise AssemblyError(f"{path}: cannot read offline model: {e}") from e
        if tasks:
            from target.aicpu import reload_task  # parses graph-dialect bodies

            try:
                tasks = tuple(reload_task(t) for t in tasks)
            except AssemblyError as e:
                raise AssemblyError(f"{path}: {e}") from None
        return Program(
            name=header["name"],
            gm_size=header["gm_size"],
            inputs=tuple(_slot_from_json(s) for s in header["inputs"]),
            outputs=tuple(_slot_from_json(s) for s in header["outputs"]),
            constants=constants,
            kernels=kernels,
            schedule=tuple(tuple(s) for s in header["schedule"]),
            meta=header.get("meta", {}),
            aicpu_tasks=tasks,
        )


def _slot_json(s: TensorSlot) -> dict:
    return {
        "name": s.name,
        "offset": s.offset,
        "shape": list(s.shape),
        "dtype": s.dtype,
    }


def _slot_from_json(d: dict) -> TensorSlot:
    return TensorSlot(d["name"], d["offset"], tuple(d["shape"]), d["dtype"])


def _task_json(t: AicpuTask) -> dict:
    def tensors(ts):
        return [[x.offset, x.dtype, list(x.shape), x.scale] for x in ts]

    return {
        "name": t.name,
        "ins": tensors(t.ins),
        "outs": tensors(t.outs),
        "body": t.body,
        "kind": t.kind,
        "absorbed": list(t.absorbed),
        "source": t.source,
        "reason": t.reason,
    }


def _task_from_json(d: dict) -> AicpuTask:
    def tensors(ts):
        return tuple(TaskTensor(int(o), str(dt), tuple(int(x) for x in shape), float(sc)) for o, dt, shape, sc in ts)

    return AicpuTask(
        name=d["name"],
        ins=tensors(d["ins"]),
        outs=tensors(d["outs"]),
        body=d["body"],
        kind=d.get("kind", "aicpu"),
        absorbed=tuple(d.get("absorbed", ())),
        source=d.get("source", ""),
        reason=d.get("reason", ""),
    )


def _float_bits(x: float) -> int:
    return struct.unpack("<q", struct.pack("<d", x))[0]


def _bits_float(x: int) -> float:
    return struct.unpack("<d", struct.pack("<q", x))[0]


def _flatten(code: tuple[tuple, ...]) -> tuple[np.ndarray, np.ndarray]:
    flat: list[int] = []
    offsets = [0]
    for ins in code:
        slot = FLOAT_SLOT.get(ins[0])
        for j, v in enumerate(ins):
            flat.append(_float_bits(v) if j == slot else int(v))
        offsets.append(len(flat))
    return np.asarray(flat, dtype=np.int64), np.asarray(offsets, dtype=np.int64)


def _unflatten(flat: np.ndarray, offsets: np.ndarray) -> tuple[tuple, ...]:
    values = flat.tolist()
    bounds = offsets.tolist()
    code = []
    for a, b in pairwise(bounds):
        ins = values[a:b]
        slot = FLOAT_SLOT.get(ins[0])
        if slot is not None:
            ins[slot] = _bits_float(ins[slot])
        code.append(tuple(ins))
    return tuple(code)
