"""The assembled program (the offline model): opcodes, layout, file format.

A kernel's code is a tuple of instructions, each a tuple of ints (and one float
for the scalar of the scalar family and vdup), so the simulator's inner loop
never touches xDSL objects. Layouts:

  scalar ops:  (op, -1, ...operands...)                       op < FIRST_PIPE_OP
  load_index:  (LOAD_INDEX, -1, dst, r, i, dtype, bound)      reads UB at regs[r] + i
  pipe ops:    (op, pipe, r0, i0, r1, i1, r2, i2, *fields)    op >= FIRST_PIPE_OP

where address k is `regs[rk] + ik` (register 0 always holds 0, so a static
address is (0, offset)). Register 1 holds the block index, 2 the block count.
Vector instructions have one opcode per family (gedialects/npu/vector_ops.py)
and the word layout `VectorEncoding` describes; vsel's fourth address pair
follows the other three.

File format (`.om`, version 5): a NumPy `.npz` (zip) read with
allow_pickle=False, holding `header` (UTF-8 JSON: format version, GM layout,
host-memory size, tensors, kernels' metadata, schedule, AI-CPU tasks with
their bodies as text, host copies, and a SHA-256 checksum over the header and
every array), per kernel
`k<i>_code` (all instructions flattened to int64, floats stored as their
IEEE-754 bit pattern) and `k<i>_offsets`, and per constant `const<i>` (its raw
bytes). `Program.load` verifies the checksum and validates every field
(`validate`) before anything runs; `instruction_bound` gives the instruction
budget the simulator enforces (docs/NPU.md section 4).
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import struct
import zipfile
import zlib
from dataclasses import asdict, dataclass, field, fields, replace
from itertools import pairwise
from pathlib import Path
from typing import NamedTuple

import numpy as np

from gedialects.npu.isa import (
    ALIGNMENT,
    BLOCK_BYTES,
    DMA_PATHS,
    DTYPE_BYTES,
    ELEM_BYTES,
    FRACTAL,
    INT_BYTES,
    MAX_NBURST,
    MAX_REPEAT,
    MAX_STRIDE,
    NUM_EVENTS,
    PAD_PATHS,
    PIPE_INDEX,
    PIPES,
    REPEAT_BYTES,
    SPACE_INDEX,
    SPACES,
    MemSpace,
    Pipe,
    padded_burst,
)
from gedialects.npu import ops as npu_ops
from gedialects.npu.vector_ops import FAMILIES, Family, FamilySpec, family_members
from target.errors import AssemblyError

FORMAT = "gedialects-npu-om"
VERSION = 5  # 5: host memory and copies; 4: kernel "info" (op names and shapes for the profile); 3: SHA-256 checksum; 2: AI-CPU tasks
READABLE_VERSIONS = (3, 4, 5)  # 3 reads with empty kernel info, 3 and 4 with no host memory; older files carry no checksum: recompile them
KERNEL_INFO_KEYS = npu_ops.KERNEL_INFO_KEYS
"""What a kernel's info may hold: the npu.kernel's ge.* attributes."""

# --- scalar opcodes -------------------------------------------------------
MOV, ADD, SUB, MUL, DIVS, FLOORDIV, CEILDIV, REMS, MIN, MAX = range(10)
FOR, ENDFOR, WAIT_S, BARRIER_ALL, LOAD_INDEX = 10, 11, 12, 13, 14
FIRST_PIPE_OP = 32
# --- pipe opcodes ---------------------------------------------------------
DMA, LOAD2D, LOAD3D, MMAD = 32, 33, 34, 35
DMA_PLAIN, DMA_CAST_F16, DMA_PAD = 0, 1, 2  # a DMA's mode word (word 14)
VBIN, VUN, VSCALAR, VREDUCE, VCONV, VDUP = 36, 37, 38, 39, 40, 41
SET_FLAG, WAIT_FLAG, BARRIER = 42, 43, 44
VCMP, VSEL, VBRCB = 45, 46, 47

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
    LOAD_INDEX: "load_index",
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
    VCMP: "vcompare",
    VSEL: "vselect",
    VBRCB: "vbroadcast",
    SET_FLAG: "set_flag",
    WAIT_FLAG: "wait_flag",
    BARRIER: "pipe_barrier",
}

DTYPES = ("f16", "f32", "s32", "s64")  # dtype codes; the integers only as a vconv source
INDEX_DTYPES = tuple(INT_BYTES)  # load_index's dtype codes (s32, s64)

# One opcode per vector family.
VECTOR_OPCODES: dict[Family, int] = {
    Family.BINARY: VBIN,
    Family.UNARY: VUN,
    Family.SCALAR: VSCALAR,
    Family.REDUCE: VREDUCE,
    Family.CONVERT: VCONV,
    Family.DUPLICATE: VDUP,
    Family.COMPARE: VCMP,
    Family.SELECT: VSEL,
    Family.BROADCAST: VBRCB,
}
# vconv and vdup were encoded before families had several members: no kind word.
_NO_KIND_WORD = (Family.CONVERT, Family.DUPLICATE)


@dataclass(frozen=True)
class VectorEncoding:
    """Where the words of one vector opcode sit: (op, pipe, one (register,
    immediate) address pair per operand, [kind], dtype, [src_dtype], repeat,
    [mask], <role>_blk..., <role>_rep..., [scalar]), the brackets present as
    the family has them; unused address pairs of the first three are (0, 0).
    A row's kind id is its position in its family (vector_ops.family_members)."""

    opcode: int
    family: Family
    kinds: tuple[str, ...]  # mnemonic by kind id
    addresses: tuple[int, ...]  # word of each operand's register (its immediate follows)
    kind: int | None
    dtype: int
    src_dtype: int | None
    repeat: int
    mask: int | None
    blk: int  # the <role>_blk words of the strided roles, in order; then the _rep words
    rep: int
    scalar: int | None
    length: int

    @property
    def family_spec(self) -> FamilySpec:
        return FAMILIES[self.family]

    def mnemonic(self, ins: tuple) -> str:
        return self.kinds[ins[self.kind]] if self.kind is not None else self.kinds[0]


def _vector_encoding(family: Family) -> VectorEncoding:
    spec = FAMILIES[family]
    n = len(spec.operands)
    addresses = tuple(range(2, 2 + 2 * n, 2))
    word = 2 + 2 * max(n, 3)

    def take(present: bool, count: int = 1) -> int | None:
        nonlocal word
        if not present:
            return None
        at, word = word, word + count
        return at

    kind = take(family not in _NO_KIND_WORD)
    dtype = take(True)
    src_dtype = take(spec.src_dtype)
    repeat = take(True)
    mask = take(spec.mask)
    strided = len(spec.strided_roles)
    blk, rep = take(True, strided), take(True, strided)
    scalar = take(spec.scalar)
    return VectorEncoding(
        VECTOR_OPCODES[family], family, tuple(s.mnemonic for s in family_members(family)),
        addresses, kind, dtype, src_dtype, repeat, mask, blk, rep, scalar, word,
    )


VECTOR_ENCODINGS: dict[int, VectorEncoding] = {
    VECTOR_OPCODES[f]: _vector_encoding(f) for f in Family
}
# Position of the float field, for the opcodes that have one.
FLOAT_SLOT = {op: e.scalar for op, e in VECTOR_ENCODINGS.items() if e.scalar is not None}


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
    # What the kernel runs, for the profile (KERNEL_INFO_KEYS, all strings;
    # "absorbed": the model nodes, ';'-separated): empty for hand-written programs.
    info: dict[str, str] = field(default_factory=dict)

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


MEMCPY_DIRECTIONS = tuple(npu_ops.MEMCPY_DIRECTIONS)  # d2h: GM -> host; h2d: host -> GM


@dataclass(frozen=True)
class MemcpyTask:
    """An `npu.memcpy`: `nbytes` from GM to host memory (d2h) or back (h2d),
    and what the compiler said of it (what it is for, the tensor it moves)."""

    name: str
    direction: str
    gm_offset: int
    host_offset: int
    nbytes: int
    source: str = ""
    tensor: str = ""

    @property
    def writes_gm(self) -> bool:
        """h2d writes its GM range and reads its host range; d2h the reverse."""
        return self.direction == "h2d"


TASK_KINDS = ("launch", "aicpu", "memcpy")
"""The schedule entries that run something: one profile entry each."""


@dataclass(frozen=True)
class Program:
    """A whole assembled program. `schedule` entries are
    ("launch", kernel index, block_dim, stream), ("aicpu", task index, stream),
    ("memcpy", task index, stream), ("record", stream, event) or
    ("wait", stream, event), in program order. `host_size`: bytes of host
    memory the copies use (0: none)."""

    name: str
    gm_size: int
    inputs: tuple[TensorSlot, ...]
    outputs: tuple[TensorSlot, ...]
    constants: tuple[ConstBlob, ...]
    kernels: tuple[Kernel, ...]
    schedule: tuple[tuple, ...]
    meta: dict = field(default_factory=dict, compare=False)
    aicpu_tasks: tuple[AicpuTask, ...] = ()
    host_size: int = 0
    memcpy_tasks: tuple[MemcpyTask, ...] = ()

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
            "constants": [{"name": c.name, "offset": c.offset, "nbytes": len(c.data)} for c in self.constants],
            "kernels": [
                {
                    "name": k.name,
                    "init_regs": list(k.init_regs),
                    "locs": [list(x) for x in k.locs],
                    "uses_cube": k.uses_cube,
                    "info": dict(k.info),
                }
                for k in self.kernels
            ],
            "schedule": [list(s) for s in self.schedule],
            "meta": self.meta,
            "aicpu_tasks": [_task_json(t) for t in self.aicpu_tasks],
            "host_size": self.host_size,
            "memcpy_tasks": [asdict(t) for t in self.memcpy_tasks],
        }
        arrays: dict[str, np.ndarray] = {}
        for i, k in enumerate(self.kernels):
            flat, offsets = _flatten(k.code)
            arrays[f"k{i}_code"] = flat
            arrays[f"k{i}_offsets"] = offsets
        for i, c in enumerate(self.constants):
            arrays[f"const{i}"] = np.frombuffer(c.data, dtype=np.uint8)
        write_om(path, header, arrays)

    @staticmethod
    def load(path: str | Path) -> Program:
        """Read an offline model and validate every field before anything runs
        (see `validate`): a file that is not a readable zip, whose checksum
        does not match, of another version, or with any field out of range is
        refused with one AssemblyError line naming the file (and the field)."""
        header, raw, arrays = _read(path)
        if "checksum" in header:
            _verify_checksum(path, raw, header, arrays)
        if header.get("format") != FORMAT:
            raise AssemblyError(f"{path}: not an npu offline model")
        if header.get("version") not in READABLE_VERSIONS:
            raise AssemblyError(
                f"{path}: offline model version {header.get('version')!r} is not supported "
                f"(this build reads versions {', '.join(map(str, READABLE_VERSIONS))}; "
                "recompile the model with ge-compile)"
            )
        if "checksum" not in header:
            raise AssemblyError(f"{path}: corrupted (no checksum in the header)")
        try:
            program = _decode(header, arrays)
            validate(program)
        except InvalidField as e:
            raise AssemblyError(f"{path}: invalid offline model: {e}") from None
        if program.aicpu_tasks:
            from target.aicpu import reload_task  # parses graph-dialect bodies

            try:
                tasks = tuple(reload_task(t) for t in program.aicpu_tasks)
            except AssemblyError as e:
                raise AssemblyError(f"{path}: {e}") from None
            except Exception as e:  # a body the checks above did not foresee: still one line
                raise AssemblyError(f"{path}: invalid offline model: an AI-CPU task body: {_one_line(e)}") from None
            program = replace(program, aicpu_tasks=tasks)
        return program


# ---------------------------------------------------------------------------
# The file: an npz (zip) with a JSON header holding a SHA-256 checksum
# ---------------------------------------------------------------------------

_CHECKSUM_PLACEHOLDER = "sha256:" + "0" * 64


def _checksum_text(value: str) -> bytes:
    """How the checksum entry appears in the header JSON (json.dumps' separators)."""
    return f"{json.dumps('checksum')}: {json.dumps(value)}".encode()


def _digest(raw_header: bytes, arrays: dict[str, np.ndarray]) -> str:
    """SHA-256 over the header JSON (checksum entry = placeholder) and every
    other array: name, dtype, shape and bytes, in name order."""
    h = hashlib.sha256()
    h.update(FORMAT.encode() + b"\0")
    h.update(len(raw_header).to_bytes(8, "little"))
    h.update(raw_header)
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        meta = f"{name}\0{a.dtype.str}\0{list(a.shape)}\0".encode()
        h.update(len(meta).to_bytes(8, "little"))
        h.update(meta)
        h.update(a.nbytes.to_bytes(8, "little"))
        if a.nbytes:
            h.update(memoryview(a).cast("B"))
    return "sha256:" + h.hexdigest()


def write_om(path: str | Path, header: dict, arrays: dict[str, np.ndarray]) -> None:
    """Write an offline model: `header` (a JSON object; its "checksum" is set
    here) and `arrays` (every other member), sealed with the checksum. This is
    what `Program.save` calls; tools that rewrite an .om call it too."""
    header = {k: v for k, v in header.items() if k != "checksum"}
    header["checksum"] = _CHECKSUM_PLACEHOLDER
    raw = json.dumps(header).encode()
    digest = _digest(raw, arrays)
    at = raw.rindex(_checksum_text(_CHECKSUM_PLACEHOLDER))  # the last key: the top-level entry
    raw = raw[:at] + _checksum_text(digest) + raw[at + len(_checksum_text(digest)) :]
    members = {"header": np.frombuffer(raw, dtype=np.uint8), **arrays}
    with open(path, "wb") as f, zipfile.ZipFile(f, "w", allowZip64=True) as zf:
        for name, array in members.items():
            npy = io.BytesIO()
            np.lib.format.write_array(npy, np.asanyarray(array), allow_pickle=False)
            data = npy.getbuffer()
            # a fixed timestamp: the same program gives the same bytes
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED if _deflates(data) else zipfile.ZIP_STORED
            zf.writestr(info, data, compresslevel=1)


_DEFLATE_SAMPLE_BYTES = 1 << 16


def _deflates(data: memoryview) -> bool:
    """Whether deflating a member pays: a sample of it shrinks to 90% or
    less. Code, offsets and constant fills (the light models' placeholder
    weights) shrink a hundredfold; the weights of a trained or randomly
    initialised model by 7% (fp16 mantissas are noise), for twenty times
    the write time of storing them (0.25 s per 10 MB)."""
    sample = data[:_DEFLATE_SAMPLE_BYTES]
    return len(zlib.compress(sample, 1)) <= 0.9 * len(sample)


def read_om(path: str | Path) -> tuple[dict, dict[str, np.ndarray]]:
    """(header, other arrays) of an offline-model file, read without pickle and
    without validation (for tools and tests; `Program.load` validates). A
    missing or unreadable file, a file that is not a zip (or a truncated one),
    and members that do not decode are one AssemblyError line."""
    header, _, arrays = _read(path)
    return header, arrays


def _read(path: str | Path) -> tuple[dict, bytes, dict[str, np.ndarray]]:
    try:
        with zipfile.ZipFile(path) as zf:
            for info in zf.infolist():
                if info.file_size > MAX_GM_SIZE + (1 << 20):
                    raise AssemblyError(
                        f"{path}: corrupted (member '{info.filename}' claims {info.file_size} bytes)"
                    )
    except (FileNotFoundError, IsADirectoryError, PermissionError) as e:
        raise AssemblyError(f"{path}: cannot read offline model: {e.strerror or e}") from None
    except AssemblyError:
        raise
    except Exception as e:  # BadZipFile, truncated central directory, EOF, ...
        raise AssemblyError(
            f"{path}: cannot read offline model: not a zip file, or truncated ({_one_line(e)})"
        ) from None
    try:
        with np.load(path, allow_pickle=False) as z:
            members = {name: z[name] for name in z.files}
    except Exception as e:  # bad CRC, deflate stream, .npy header, pickled members, ...
        raise AssemblyError(f"{path}: corrupted ({type(e).__name__}: {_one_line(e)})") from None
    if "header" not in members:
        raise AssemblyError(f"{path}: not an npu offline model (no header)")
    raw = members.pop("header")
    if raw.dtype != np.uint8 or raw.ndim != 1:
        raise AssemblyError(f"{path}: corrupted (the header is not a byte array)")
    try:
        header = json.loads(raw.tobytes().decode(), parse_constant=_no_json_constant)
    except Exception as e:  # UnicodeDecodeError, JSONDecodeError, RecursionError
        raise AssemblyError(f"{path}: corrupted (the header is not JSON: {_one_line(e)})") from None
    if not isinstance(header, dict):
        raise AssemblyError(f"{path}: corrupted (the header is not a JSON object)")
    return header, raw.tobytes(), members


def _verify_checksum(path, raw: bytes, header: dict, arrays: dict[str, np.ndarray]) -> None:
    """The header's checksum is the digest of the raw header bytes (with the
    checksum entry reset to the placeholder) and every array."""
    value = header.get("checksum")
    ok = (
        isinstance(value, str)
        and raw.count(_checksum_text(value)) == 1
        and _digest(raw.replace(_checksum_text(value), _checksum_text(_CHECKSUM_PLACEHOLDER)), arrays)
        == value
    )
    if not ok:
        raise AssemblyError(f"{path}: corrupted (checksum mismatch)")


def _no_json_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def _one_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__


# ---------------------------------------------------------------------------
# Validation: every field, before anything runs
# ---------------------------------------------------------------------------
#
# `Program.load` decodes the header with type checks (`_decode`) and then runs
# `validate`, which an assembled program passes by construction: the checks
# are the npu verifiers' (gedialects/npu/ops.py) restated on the encoding,
# plus the structure the assembler guarantees (register use, loop nesting,
# schedule indices) and the limits below. A file whose checksum was
# recomputed after an edit is still refused if any field is out of range.

MAX_GM_SIZE = 1 << 34  # 16 GiB: the simulator allocates the whole arena
MAX_HOST_SIZE = 1 << 34  # the host memory the simulator allocates
MAX_BLOCK_DIM = 65535  # as npu.launch's verifier
MAX_STREAMS = 1024  # stream ids 0..1023
MAX_STREAM_EVENTS = 1 << 16  # stream event ids 0..65535
MAX_ADDRESS = MAX_GM_SIZE  # immediates, DMA lengths and gaps (bytes)
MAX_LOAD3D_BYTES = 1 << 31  # the rows one load_3d writes, in bytes
# Instruction budgets. The largest bundled model (vgg19, fp32) bounds at 284k
# instructions per block and 50M per run (instruction_bound, which
# over-estimates ~25x); these limits leave three orders of magnitude.
MAX_BLOCK_INSTRUCTIONS = 1 << 28  # instructions one block may execute
MAX_RUN_INSTRUCTIONS = 1 << 32  # instructions one run may execute (all launches, all blocks)
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1

# NumPy names of the element types a program input/output may have (the
# assembler's numpy_dtype) and an AI-CPU operand may be stored as
# (gedialects/npu/ops.py AICPU_STORED_TYPES).
SLOT_DTYPES = (
    "float16", "float32", "float64", "int8", "int16", "int32", "int64",
    "uint8", "uint16", "uint32", "uint64", "bool",
)
TASK_DTYPES = ("float16", "float32", "float64", "int64", "int32", "int16", "int8", "uint8", "bool")
# lowering.graph_to_tile.PRECISION_MODES (target/ does not import lowering).
PRECISION_MODES = ("force_fp16", "must_keep_origin_dtype")

_HEADER_KEYS = (
    "format", "version", "name", "gm_size", "inputs", "outputs", "constants",
    "kernels", "schedule", "meta", "aicpu_tasks", "checksum",
)
_HOST_KEYS = ("host_size", "memcpy_tasks")  # in the header from version 5
_MEMCPY_KEYS = tuple(f.name for f in fields(MemcpyTask))
_KERNEL_KEYS = ("name", "init_regs", "locs", "uses_cube")
_TASK_KEYS = ("name", "ins", "outs", "body", "kind", "absorbed", "source", "reason")
_BINARY_SCALAR = (ADD, SUB, MUL, DIVS, FLOORDIV, CEILDIV, REMS, MIN, MAX)
# Instruction length per opcode (ENDFOR: 6 + 2 per loop-carried value).
_LENGTH = {
    MOV: 4, FOR: 7, WAIT_S: 4, BARRIER_ALL: 2, LOAD_INDEX: 7,
    DMA: 16, LOAD2D: 12, LOAD3D: 23, MMAD: 13,
    **{op: e.length for op, e in VECTOR_ENCODINGS.items()},
    SET_FLAG: 11, WAIT_FLAG: 11, BARRIER: 8,
    **{op: 5 for op in _BINARY_SCALAR},
}
_NPIPES = len(PIPES)
_S = PIPE_INDEX[Pipe.S]
_SP = SPACE_INDEX
_PATHS = tuple(DMA_PATHS)  # path index -> (src, dst): as target.assembler.PATHS
_ELEM = tuple(DTYPE_BYTES[d] for d in DTYPES)  # bytes per element by dtype code
_FLOAT_CODES = sum(1 for d in DTYPES if d in ELEM_BYTES)  # codes 0.. of the dtypes the units compute on


class InvalidField(Exception):
    """A field of a program is outside its range; str() is `field: problem`."""

    def __init__(self, field: str, problem: str):
        super().__init__(f"{field}: {problem}")
        self.field = field


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _int(v, field: str, lo: int, hi: int) -> int:
    if not _is_int(v):
        raise InvalidField(field, f"expected an integer, got {v!r}")
    if not lo <= v <= hi:
        raise InvalidField(field, f"{v} is outside [{lo}, {hi}]")
    return v


def _str(v, field: str) -> str:
    if not isinstance(v, str):
        raise InvalidField(field, f"expected a string, got {v!r}")
    return v


def _list(v, field: str) -> list:
    if not isinstance(v, list):
        raise InvalidField(field, f"expected a list, got {type(v).__name__}")
    return v


def written_regions(info: dict, field: str = "info.writes", gm_size: int = MAX_GM_SIZE) -> list[tuple[int, int, str]]:
    """(offset, nbytes, dtype) of the GM tensors a kernel writes, from its
    info's `writes` ('offset+nbytes:dtype;...'); InvalidField on a malformed
    or out-of-range entry."""
    regions = []
    for part in filter(None, info.get("writes", "").split(";")):
        where, _, dtype = part.partition(":")
        offset, _, nbytes = where.partition("+")
        if not (offset.isdigit() and nbytes.isdigit()) or dtype not in SLOT_DTYPES:
            raise InvalidField(field, f"expected 'offset+nbytes:dtype', got {part!r}")
        if int(offset) + int(nbytes) > gm_size:
            raise InvalidField(field, f"GM [{offset}, {int(offset) + int(nbytes)}) is outside gm_size {gm_size}")
        regions.append((int(offset), int(nbytes), dtype))
    return regions


def _obj(v, keys, field: str, optional: tuple[str, ...] = ()) -> dict:
    if not isinstance(v, dict):
        raise InvalidField(field, f"expected an object, got {type(v).__name__}")
    missing = [k for k in keys if k not in v]
    if missing:
        raise InvalidField(field, f"missing key '{missing[0]}'")
    unknown = sorted(set(v) - set(keys) - set(optional))
    if unknown:
        raise InvalidField(field, f"unknown key '{unknown[0]}'")
    return v


def _array(arrays: dict, name: str, dtype, field: str) -> np.ndarray:
    if name not in arrays:
        raise InvalidField(field, f"the file has no member '{name}'")
    a = arrays[name]
    if a.dtype != dtype or a.ndim != 1:
        raise InvalidField(field, f"member '{name}' is {a.dtype}{list(a.shape)}, expected a 1-D {np.dtype(dtype)} array")
    return a


def _decode(h: dict, arrays: dict[str, np.ndarray]) -> Program:
    """The Program a (checksummed, right-version) header and its arrays
    describe; InvalidField on a field of the wrong type or shape."""
    # version 5 added host memory; older files leave its keys out (no host memory)
    required, optional = (_HEADER_KEYS + _HOST_KEYS, ()) if h["version"] >= 5 else (_HEADER_KEYS, _HOST_KEYS)
    _obj(h, required, "header", optional=optional)
    expected_members = set()
    kernels = []
    for i, kh in enumerate(_list(h["kernels"], "kernels")):
        where = f"kernels[{i}]"
        _obj(kh, _KERNEL_KEYS, where, optional=("info",))
        name = _str(kh["name"], f"{where}.name")
        where = f"kernels[{i}] '{name}'"
        regs = _list(kh["init_regs"], f"{where}.init_regs")
        for r, v in enumerate(regs):
            _int(v, f"{where}.init_regs[{r}]", INT64_MIN, INT64_MAX)
        locs = _list(kh["locs"], f"{where}.locs")
        for j, loc in enumerate(locs):
            if not (isinstance(loc, list) and len(loc) == 2 and all(isinstance(x, str) for x in loc)):
                raise InvalidField(f"{where}.locs[{j}]", f"expected [op name, location], got {loc!r}")
        if not isinstance(kh["uses_cube"], bool):
            raise InvalidField(f"{where}.uses_cube", f"expected true or false, got {kh['uses_cube']!r}")
        flat = _array(arrays, f"k{i}_code", np.int64, f"{where}.code")
        offsets = _array(arrays, f"k{i}_offsets", np.int64, f"{where}.code")
        expected_members |= {f"k{i}_code", f"k{i}_offsets"}
        code = _decode_code(flat, offsets, where)
        if len(locs) != len(code):
            raise InvalidField(f"{where}.locs", f"{len(locs)} entries for {len(code)} instructions")
        info = _obj(kh.get("info", {}), (), f"{where}.info", optional=KERNEL_INFO_KEYS)
        for key, text in info.items():
            _str(text, f"{where}.info.{key}")
        gm_size = h["gm_size"] if isinstance(h["gm_size"], int) else MAX_GM_SIZE
        written_regions(info, f"{where}.info.writes", gm_size)
        kernels.append(Kernel(name, code, tuple(regs), tuple(tuple(x) for x in locs), kh["uses_cube"], dict(info)))
    constants = []
    for i, c in enumerate(_list(h["constants"], "constants")):
        _obj(c, ("name", "offset", "nbytes"), f"constants[{i}]")
        name = _str(c["name"], f"constants[{i}].name")
        offset = _int(c["offset"], f"constants[{i}] '{name}'.offset", 0, MAX_GM_SIZE)
        nbytes = _int(c["nbytes"], f"constants[{i}] '{name}'.nbytes", 0, MAX_GM_SIZE)
        data = _array(arrays, f"const{i}", np.uint8, f"constants[{i}] '{name}'")
        if data.size != nbytes:
            raise InvalidField(f"constants[{i}] '{name}'.nbytes", f"{nbytes}, but member 'const{i}' has {data.size} bytes")
        expected_members.add(f"const{i}")
        constants.append(ConstBlob(name, offset, data.tobytes()))
    extra = sorted(set(arrays) - expected_members)
    if extra:
        raise InvalidField("members", f"unexpected member '{extra[0]}'")
    schedule = []
    for i, e in enumerate(_list(h["schedule"], "schedule")):
        kinds = {"launch": 4, "aicpu": 3, "memcpy": 3, "record": 3, "wait": 3}
        if not (isinstance(e, list) and e and e[0] in kinds and len(e) == kinds[e[0]]):
            raise InvalidField(f"schedule[{i}]", f"expected [launch, kernel, block_dim, stream], "
                               f"[aicpu|memcpy, task, stream], [record|wait, stream, event]; got {e!r}")
        for j, v in enumerate(e[1:], 1):
            if not _is_int(v):
                raise InvalidField(f"schedule[{i}][{j}]", f"expected an integer, got {v!r}")
        schedule.append(tuple(e))
    meta = h["meta"]
    if not isinstance(meta, dict):
        raise InvalidField("meta", f"expected an object, got {type(meta).__name__}")
    tasks = []
    for i, t in enumerate(_list(h["aicpu_tasks"], "aicpu_tasks")):
        where = f"aicpu_tasks[{i}]"
        _obj(t, _TASK_KEYS, where)
        name = _str(t["name"], f"{where}.name")
        where = f"aicpu_tasks[{i}] '{name}'"
        for key in ("body", "kind", "source", "reason"):
            _str(t[key], f"{where}.{key}")
        absorbed = _list(t["absorbed"], f"{where}.absorbed")
        for j, a in enumerate(absorbed):
            _str(a, f"{where}.absorbed[{j}]")
        sides = []
        for side in ("ins", "outs"):
            tensors = []
            for j, x in enumerate(_list(t[side], f"{where}.{side}")):
                f = f"{where}.{side}[{j}]"
                if not (isinstance(x, list) and len(x) == 4):
                    raise InvalidField(f, f"expected [offset, dtype, shape, scale], got {x!r}")
                offset, dtype, shape, scale = x
                _int(offset, f"{f}.offset", 0, MAX_GM_SIZE)
                _str(dtype, f"{f}.dtype")
                for d, n in enumerate(_list(shape, f"{f}.shape")):
                    _int(n, f"{f}.shape[{d}]", 0, MAX_GM_SIZE)
                if not (isinstance(scale, (int, float)) and not isinstance(scale, bool)):
                    raise InvalidField(f"{f}.scale", f"expected a number, got {scale!r}")
                tensors.append(TaskTensor(offset, dtype, tuple(shape), float(scale)))
            sides.append(tuple(tensors))
        tasks.append(AicpuTask(name, sides[0], sides[1], t["body"], t["kind"], tuple(absorbed), t["source"], t["reason"]))
    copies = []
    for i, t in enumerate(_list(h.get("memcpy_tasks", []), "memcpy_tasks")):
        where = f"memcpy_tasks[{i}]"
        _obj(t, _MEMCPY_KEYS, where)
        name = _str(t["name"], f"{where}.name")
        where = f"memcpy_tasks[{i}] '{name}'"
        for key in ("direction", "source", "tensor"):
            _str(t[key], f"{where}.{key}")
        for key in ("gm_offset", "host_offset", "nbytes"):
            _int(t[key], f"{where}.{key}", 0, MAX_HOST_SIZE)
        copies.append(MemcpyTask(**t))
    name = _str(h["name"], "name")
    gm_size = _int(h["gm_size"], "gm_size", 1, MAX_GM_SIZE)
    slots = []
    for side in ("inputs", "outputs"):
        out = []
        for i, d in enumerate(_list(h[side], side)):
            f = f"{side}[{i}]"
            _obj(d, ("name", "offset", "shape", "dtype"), f)
            sname = _str(d["name"], f"{f}.name")
            f = f"{side}[{i}] '{sname}'"
            offset = _int(d["offset"], f"{f}.offset", 0, MAX_GM_SIZE)
            shape = _list(d["shape"], f"{f}.shape")
            for k, n in enumerate(shape):
                _int(n, f"{f}.shape[{k}]", 0, MAX_GM_SIZE)
            out.append(TensorSlot(sname, offset, tuple(shape), _str(d["dtype"], f"{f}.dtype")))
        slots.append(tuple(out))
    return Program(
        name=name,
        gm_size=gm_size,
        inputs=slots[0],
        outputs=slots[1],
        constants=tuple(constants),
        kernels=tuple(kernels),
        schedule=tuple(schedule),
        meta=meta,
        aicpu_tasks=tuple(tasks),
        host_size=_int(h.get("host_size", 0), "host_size", 0, MAX_HOST_SIZE),
        memcpy_tasks=tuple(copies),
    )


def _decode_code(flat: np.ndarray, offsets: np.ndarray, where: str) -> tuple[tuple, ...]:
    bounds = offsets.tolist()
    n = len(flat)
    if not bounds or bounds[0] != 0 or bounds[-1] != n:
        raise InvalidField(f"{where}.offsets", f"must run from 0 to the code length {n}, got {bounds[:1]}..{bounds[-1:]}")
    values = flat.tolist()
    code = []
    for pc, (a, b) in enumerate(pairwise(bounds)):
        if not a < b:
            raise InvalidField(f"{where}.offsets[{pc + 1}]", f"{b} does not follow {a}")
        ins = values[a:b]
        _check_length(ins, f"{where}.code[{pc}]")
        op = ins[0]
        slot = FLOAT_SLOT.get(op)
        if slot is not None:
            ins[slot] = _bits_float(ins[slot])
        code.append(tuple(ins))
    return tuple(code)


def _check_length(ins: tuple | list, field: str) -> None:
    op = ins[0] if len(ins) else None
    if op not in OPCODE_NAMES:
        raise InvalidField(field, f"unknown opcode {op}")
    want = _LENGTH.get(op)
    ok = len(ins) == want if want is not None else len(ins) >= 6 and len(ins) % 2 == 0
    if not ok:
        raise InvalidField(
            f"{field} ({OPCODE_NAMES[op]})",
            f"{len(ins)} words, expected {want if want is not None else '6 + 2 per loop-carried value'}",
        )
    for j, v in enumerate(ins):
        if not (_is_int(v) or (j == FLOAT_SLOT.get(op) and isinstance(v, float))):
            raise InvalidField(f"{field} ({OPCODE_NAMES[op]})", f"word {j} is {v!r}, not an integer")


def _ranges_disjoint(items: list[tuple[int, int, str]], what: str, blame: tuple = ()) -> None:
    """items: (start, end, field); refuse the first overlap of two non-empty
    ranges, naming the one in `blame` if either is."""
    items = sorted(x for x in items if x[1] > x[0])
    reach = None  # the earlier range reaching furthest
    for s1, e1, f1 in items:
        if reach is not None and s1 < reach[1]:
            s0, e0, f0 = reach
            if f0 in blame and f1 not in blame:
                (s0, e0, f0), (s1, e1, f1) = (s1, e1, f1), (s0, e0, f0)
            raise InvalidField(f1, f"GM [{s1}, {e1}) overlaps {f0} [{s0}, {e0}) ({what})")
        if reach is None or e1 > reach[1]:
            reach = (s1, e1, f1)


def _nbytes(shape, dtype: str) -> int:
    n = np.dtype(dtype).itemsize
    for d in shape:
        n *= d
    return n


def _inside(start: int, nbytes: int, size: int, field: str, memory: str = "GM") -> None:
    """[start, start + nbytes) inside GM (or host memory) of `size` bytes;
    `field` is the offset's."""
    if start < 0 or start + nbytes > size:
        limit = "gm_size" if memory == "GM" else "host_size"
        raise InvalidField(field, f"{memory} [{start}, {start + nbytes}) is outside {limit} {size}")


def arena_live_bytes(program: Program) -> list[int]:
    """The arena bytes held at each task (launch, AI-CPU task or host copy, in
    schedule order), as the compiler planned them ([] when it recorded none)."""
    text = program.meta.get("arena_live_bytes")
    if text is None:
        return []
    tasks = sum(1 for entry in program.schedule if entry[0] in TASK_KINDS)
    items = str(text).split(";") if text != "" else []
    if len(items) != tasks or not all(i.isdigit() and int(i) <= program.gm_size for i in items):
        raise InvalidField("meta.arena_live_bytes", f"expected {tasks} byte counts within GM separated by ';'")
    return [int(i) for i in items]


def validate(program: Program) -> None:
    """Every field of `program` in range (InvalidField naming the first that
    is not); see the comment above MAX_GM_SIZE."""
    gm = _int(program.gm_size, "gm_size", 1, MAX_GM_SIZE)
    fixed: list[tuple[int, int, str]] = []  # inputs and constants: must not overlap
    for side, slots in (("inputs", program.inputs), ("outputs", program.outputs)):
        seen: set[str] = set()
        for i, s in enumerate(slots):
            f = f"{side}[{i}] '{s.name}'"
            if not s.name:
                raise InvalidField(f"{side}[{i}].name", "empty name")
            if s.name in seen:
                raise InvalidField(f"{f}.name", f"a second {side[:-1]} named '{s.name}'")
            seen.add(s.name)
            if s.dtype not in SLOT_DTYPES:
                raise InvalidField(f"{f}.dtype", f"'{s.dtype}' is not one of {', '.join(SLOT_DTYPES)}")
            for k, d in enumerate(s.shape):
                _int(d, f"{f}.shape[{k}]", 0, MAX_GM_SIZE)
            nbytes = _nbytes(s.shape, s.dtype)
            _inside(_int(s.offset, f"{f}.offset", 0, MAX_GM_SIZE), nbytes, gm, f"{f}.offset")
            if side == "inputs":
                fixed.append((s.offset, s.offset + nbytes, f))
    consts: list[tuple[int, int, str]] = []
    for i, c in enumerate(program.constants):
        f = f"constants[{i}] '{c.name}'"
        _inside(_int(c.offset, f"{f}.offset", 0, MAX_GM_SIZE), len(c.data), gm, f"{f}.offset")
        consts.append((c.offset, c.offset + len(c.data), f))
    _ranges_disjoint(consts, "constants must not overlap")
    _ranges_disjoint(fixed + consts, "an input must not overlap another input or a constant")
    names: set[str] = set()
    for i, k in enumerate(program.kernels):
        f = f"kernels[{i}] '{k.name}'"
        if not k.name or k.name in names:
            raise InvalidField(f"{f}.name", "empty, or the name of an earlier kernel")
        names.add(k.name)
        _check_kernel(k, f)
    for i, t in enumerate(program.aicpu_tasks):
        f = f"aicpu_tasks[{i}] '{t.name}'"
        if not t.name or t.name in names:
            raise InvalidField(f"{f}.name", "empty, or the name of an earlier kernel or task")
        names.add(t.name)
        outs: list[tuple[int, int, str]] = []
        for side, tensors in (("ins", t.ins), ("outs", t.outs)):
            for j, x in enumerate(tensors):
                g = f"{f}.{side}[{j}]"
                if x.dtype not in TASK_DTYPES:
                    raise InvalidField(f"{g}.dtype", f"'{x.dtype}' is not one of {', '.join(TASK_DTYPES)}")
                if not (math.isfinite(x.scale) and x.scale > 0):
                    raise InvalidField(f"{g}.scale", f"{x.scale} is not finite and > 0")
                if x.scale != 1.0 and np.dtype(x.dtype).kind != "f":
                    raise InvalidField(f"{g}.scale", f"{x.scale} on a {x.dtype} tensor (must be 1.0)")
                for d, n in enumerate(x.shape):
                    _int(n, f"{g}.shape[{d}]", 0, MAX_GM_SIZE)
                nbytes = _nbytes(x.shape, x.dtype)
                _inside(_int(x.offset, f"{g}.offset", 0, MAX_GM_SIZE), nbytes, gm, f"{g}.offset")
                if side == "outs":
                    outs.append((x.offset, x.offset + nbytes, g))
        _ranges_disjoint(outs, "the outputs of a task must not overlap")
        _ranges_disjoint(outs + consts, "a task must not write a constant", tuple(f for *_, f in outs))
    host = _int(program.host_size, "host_size", 0, MAX_HOST_SIZE)
    for i, t in enumerate(program.memcpy_tasks):
        f = f"memcpy_tasks[{i}] '{t.name}'"
        if not t.name or t.name in names:
            raise InvalidField(f"{f}.name", "empty, or the name of an earlier kernel or task")
        names.add(t.name)
        if t.direction not in MEMCPY_DIRECTIONS:
            raise InvalidField(f"{f}.direction", f"{t.direction!r} is not one of {', '.join(MEMCPY_DIRECTIONS)}")
        _int(t.nbytes, f"{f}.nbytes", 1, MAX_GM_SIZE)
        _inside(_int(t.gm_offset, f"{f}.gm_offset", 0, MAX_GM_SIZE), t.nbytes, gm, f"{f}.gm_offset")
        _inside(_int(t.host_offset, f"{f}.host_offset", 0, MAX_HOST_SIZE), t.nbytes, host, f"{f}.host_offset", "host")
        if t.writes_gm:
            written = [(t.gm_offset, t.gm_offset + t.nbytes, f)]
            _ranges_disjoint(written + consts, "a task must not write a constant", (f,))
    _check_schedule(program)
    for key, value in program.meta.items():
        if not isinstance(key, str) or not isinstance(value, (str, int, float, bool)):
            raise InvalidField(f"meta.{key}", f"expected a string or number, got {value!r}")
    mode = program.meta.get("precision_mode")
    if mode is not None and mode not in PRECISION_MODES:
        raise InvalidField("meta.precision_mode", f"{mode!r} is not one of {', '.join(PRECISION_MODES)}")
    if "arena_live_bytes" in program.meta:
        arena_live_bytes(program)  # InvalidField unless one count per task, each within GM
    problem = budget_problem(program)
    if problem is not None:
        raise InvalidField(*problem)


_TASK_LISTS = {"aicpu": "aicpu_tasks", "memcpy": "memcpy_tasks"}  # schedule kind -> Program field


def _check_schedule(program: Program) -> None:
    recorded: set[int] = set()
    scheduled = {kind: [0] * len(getattr(program, tasks)) for kind, tasks in _TASK_LISTS.items()}
    for i, e in enumerate(program.schedule):
        f = f"schedule[{i}] ({e[0]})"
        if e[0] == "launch":
            _int(e[1], f"{f}.kernel", 0, len(program.kernels) - 1)
            _int(e[2], f"{f}.block_dim", 1, MAX_BLOCK_DIM)
            _int(e[3], f"{f}.stream", 0, MAX_STREAMS - 1)
        elif e[0] in _TASK_LISTS:
            _int(e[1], f"{f}.task", 0, len(scheduled[e[0]]) - 1)
            _int(e[2], f"{f}.stream", 0, MAX_STREAMS - 1)
            scheduled[e[0]][e[1]] += 1
        elif e[0] in ("record", "wait"):
            _int(e[1], f"{f}.stream", 0, MAX_STREAMS - 1)
            _int(e[2], f"{f}.event", 0, MAX_STREAM_EVENTS - 1)
            if e[0] == "record":
                recorded.add(e[2])
            elif e[2] not in recorded:
                raise InvalidField(f"{f}.event", f"event {e[2]} is not recorded by an earlier entry")
        else:
            raise InvalidField(f, f"unknown schedule entry kind {e[0]!r}")
    for kind, counts in scheduled.items():
        tasks = _TASK_LISTS[kind]
        for j, n in enumerate(counts):
            if n != 1:
                raise InvalidField(
                    f"{tasks}[{j}] '{getattr(program, tasks)[j].name}'", f"scheduled {n} times (must be once)"
                )


def _regs_written(ins: tuple) -> tuple[int, ...]:
    """Registers an instruction writes."""
    op = ins[0]
    if op in (MOV, FOR, LOAD_INDEX) or op in _BINARY_SCALAR:
        return (ins[2],)
    if op == ENDFOR:
        return (ins[2], *ins[6::2])
    return ()


def _regs_read(ins: tuple) -> tuple[int, ...]:
    """Registers an instruction reads."""
    op = ins[0]
    if op in (MOV, LOAD_INDEX):
        return (ins[3],)
    if op in _BINARY_SCALAR:
        return (ins[3], ins[4])
    if op == FOR:
        return (ins[3], ins[4], ins[5])
    if op == ENDFOR:
        return (ins[2], ins[3], ins[4], *ins[7::2])
    if op >= FIRST_PIPE_OP:
        return tuple(ins[w] for w in _address_words(op))
    return ()


def _address_words(op: int) -> tuple[int, ...]:
    """Words holding the registers of a pipe instruction's address pairs."""
    enc = VECTOR_ENCODINGS.get(op)
    return (2, 4, 6) if enc is None or len(enc.addresses) <= 3 else enc.addresses


def _check_kernel(k: Kernel, where: str) -> None:
    nregs = len(k.init_regs)
    if nregs < 3:
        raise InvalidField(f"{where}.init_regs", f"{nregs} registers (at least 3: zero, block index, block count)")
    if k.init_regs[0] != 0:
        raise InvalidField(f"{where}.init_regs[0]", f"register 0 holds 0, got {k.init_regs[0]}")
    for r, v in enumerate(k.init_regs):
        _int(v, f"{where}.init_regs[{r}]", INT64_MIN, INT64_MAX)
    if len(k.locs) != len(k.code):
        raise InvalidField(f"{where}.locs", f"{len(k.locs)} entries for {len(k.code)} instructions")
    n = len(k.code)
    loops: list[int] = []  # open FORs
    writers: dict[int, set[int]] = {}
    for pc, ins in enumerate(k.code):
        _check_length(ins, f"{where}.code[{pc}]")
        if ins[0] < FIRST_PIPE_OP:
            for r in _regs_written(ins):
                writers.setdefault(r, set()).add(pc)
    for pc, ins in enumerate(k.code):
        op = ins[0]
        f = f"{where}.code[{pc}] ({OPCODE_NAMES.get(op, op)})"
        for j, r in enumerate(_regs_read(ins)):
            if not (_is_int(r) and 0 <= r < nregs):
                raise InvalidField(f, f"register operand {j} is {r}, the kernel has registers 0..{nregs - 1}")
        for r in _regs_written(ins):
            if not (_is_int(r) and 3 <= r < nregs):
                raise InvalidField(f, f"writes register {r}; writable registers are 3..{nregs - 1}")
        if op < FIRST_PIPE_OP:
            if ins[1] != -1:
                raise InvalidField(f"{f}.pipe", f"a scalar op has pipe -1, got {ins[1]}")
            if op == FOR:
                if not pc < ins[6] < n or k.code[ins[6]][0] != ENDFOR:
                    raise InvalidField(f"{f}.end", f"{ins[6]} is not the index of an endfor after it")
                loops.append(pc)
            elif op == ENDFOR:
                if not loops:
                    raise InvalidField(f, "endfor without an open for")
                head = loops.pop()
                h = k.code[head]
                if h[6] != pc or ins[5] != head + 1 or (ins[2], ins[3], ins[4]) != (h[2], h[4], h[5]):
                    raise InvalidField(f, f"does not close the for at code[{head}] (loop registers or targets differ)")
                body_writes = {r for x in k.code[head + 1 : pc] for r in _regs_written(x)}
                for role, r in (("induction variable", h[2]), ("upper bound", h[4]), ("step", h[5])):
                    if r in body_writes:
                        raise InvalidField(f"{where}.code[{head}] (for)", f"the loop body writes its {role} register {r}")
                if writers.get(h[2]) != {head, pc}:
                    raise InvalidField(f"{where}.code[{head}] (for)", f"induction variable register {h[2]} is written outside its loop")
            elif op == WAIT_S:
                _int(ins[2], f"{f}.src_pipe", 0, _NPIPES - 1)
                if ins[2] == _S:
                    raise InvalidField(f"{f}.src_pipe", "a flag connects two different pipes")
                _int(ins[3], f"{f}.event", 0, NUM_EVENTS - 1)
            elif op == LOAD_INDEX:
                _int(ins[4], f"{f}.offset", 0, MAX_ADDRESS)
                _int(ins[5], f"{f}.dtype", 0, len(INDEX_DTYPES) - 1)
                _int(ins[6], f"{f}.bound", 1, INT64_MAX)
            continue
        _check_pipe_instruction(ins, f)
    if loops:
        raise InvalidField(f"{where}.code[{loops[-1]}] (for)", "the loop is never closed")
    has_mmad = any(ins[0] == MMAD for ins in k.code)
    if k.uses_cube != has_mmad:
        raise InvalidField(f"{where}.uses_cube", f"{k.uses_cube}, but the kernel {'has' if has_mmad else 'has no'} mmad")


def _check_pipe_instruction(ins: tuple, f: str) -> None:
    op, pipe = ins[0], ins[1]
    _int(pipe, f"{f}.pipe", 0, _NPIPES - 1)
    spaces = _operand_spaces(ins, f)
    for j, word in enumerate(_address_words(op)):
        imm = ins[word + 1]
        if j >= len(spaces):
            if (ins[word], imm) != (0, 0):
                raise InvalidField(f"{f}.operand{j}", "an unused operand slot must be (0, 0)")
            continue
        _int(imm, f"{f}.operand{j}.offset", 0, MAX_ADDRESS)
        space = spaces[j]
        if ins[word] == 0 and imm % ALIGNMENT[space]:
            raise InvalidField(f"{f}.operand{j}.offset", f"{space.value} address {imm} is not aligned to {ALIGNMENT[space]} bytes")

    def rng(i: int, name: str, lo: int, hi: int) -> int:
        return _int(ins[i], f"{f}.{name}", lo, hi)

    def flag(i: int, name: str) -> int:
        return rng(i, name, 0, 1)

    def want_pipe(p: Pipe) -> None:
        if pipe != PIPE_INDEX[p]:
            raise InvalidField(f"{f}.pipe", f"{PIPES[pipe].value}, this instruction runs on {p.value}")

    if op == DMA:
        src, dst = SPACES[ins[8]], SPACES[ins[9]]
        want_pipe(DMA_PATHS[(src, dst)])
        rng(15, "path", 0, len(_PATHS) - 1)
        if _PATHS[ins[15]] != (src, dst):
            raise InvalidField(f"{f}.path", f"path {ins[15]} is not {src.value} -> {dst.value}")
        rng(10, "nburst", 1, MAX_NBURST)
        length = rng(11, "len", 1, MAX_ADDRESS)
        rng(12, "src_gap", 0, MAX_ADDRESS)
        rng(13, "dst_gap", 0, MAX_ADDRESS)
        mode = rng(14, "mode", DMA_PLAIN, DMA_PAD)
        cast, pad = mode == DMA_CAST_F16, mode == DMA_PAD
        if cast and (src, dst) != (MemSpace.L0C, MemSpace.UB):
            raise InvalidField(f"{f}.cast_f16", f"only l0c -> ub converts, not {src.value} -> {dst.value}")
        if pad and (src, dst) not in PAD_PATHS:
            raise InvalidField(f"{f}.pad", f"only gm <-> ub and gm -> l1 pad, not {src.value} -> {dst.value}")
        for side, space, nb, gap, gname in (
            ("source", src, length, ins[12], "src_gap"),
            ("destination", dst, length // 2 if cast else length, ins[13], "dst_gap"),
        ):
            unit = max(ALIGNMENT[space], BLOCK_BYTES) if space != MemSpace.GM else 1
            if pad and space != MemSpace.GM:
                nb = padded_burst(nb)
            if nb % unit or gap % unit:
                raise InvalidField(f"{f}.len", f"len and {gname} must be multiples of {unit} bytes on the {side} side ({space.value}), got {nb} and {gap}")
    elif op == LOAD2D:
        want_pipe(Pipe.MTE1)
        rng(9, "repeat", 1, MAX_REPEAT)
        rng(10, "src_stride", 0, 65535)
        flag(11, "transpose")
    elif op == LOAD3D:
        want_pipe(Pipe.MTE1)
        names = ("fm_h", "fm_w", "kh", "kw", "stride_h", "stride_w", "pad_top", "pad_bottom",
                 "pad_left", "pad_right", "dilation_h", "dilation_w", "m_start", "m_len")
        limits = ((1, 65535), (1, 65535), (1, 255), (1, 255), (1, 63), (1, 63), (0, 255), (0, 255),
                  (0, 255), (0, 255), (1, 255), (1, 255))
        v = dict(zip(names, ins[8:22]))
        for i, (name, (lo, hi)) in enumerate(zip(names, limits)):
            rng(8 + i, name, lo, hi)
        b32 = flag(22, "f32")
        es, c0 = (4, 8) if b32 else (2, 16)
        m_len = rng(21, "m_len", 1, MAX_LOAD3D_BYTES)
        if m_len % FRACTAL or m_len * v["kh"] * v["kw"] * c0 * es > MAX_LOAD3D_BYTES:
            raise InvalidField(f"{f}.m_len", f"{m_len} must be a multiple of {FRACTAL} writing at most {MAX_LOAD3D_BYTES} bytes")
        oh = (v["fm_h"] + v["pad_top"] + v["pad_bottom"] - v["dilation_h"] * (v["kh"] - 1) - 1) // v["stride_h"] + 1
        ow = (v["fm_w"] + v["pad_left"] + v["pad_right"] - v["dilation_w"] * (v["kw"] - 1) - 1) // v["stride_w"] + 1
        if oh < 1 or ow < 1:
            raise InvalidField(f"{f}.kh", f"the kernel does not fit the padded feature map (output {oh}x{ow})")
        rng(20, "m_start", 0, oh * ow - 1)
    elif op == MMAD:
        want_pipe(Pipe.M)
        dt = rng(8, "dtype", 0, _FLOAT_CODES - 1)
        k0 = BLOCK_BYTES // _ELEM[dt]
        for i, name, unit in ((9, "m", FRACTAL), (10, "n", FRACTAL), (11, "k", k0)):
            if rng(i, name, 1, 4095) % unit:
                raise InvalidField(f"{f}.{name}", f"{ins[i]} is not a multiple of {unit}")
        flag(12, "accumulate")
    elif op in VECTOR_ENCODINGS:
        want_pipe(Pipe.V)
        enc = VECTOR_ENCODINGS[op]
        if enc.kind is not None:
            rng(enc.kind, "kind", 0, len(enc.kinds) - 1)
        dt = rng(enc.dtype, "dtype", 0, _FLOAT_CODES - 1)
        widest = _ELEM[dt]
        if enc.src_dtype is not None:
            sdt = rng(enc.src_dtype, "src_dtype", 0, len(DTYPES) - 1)
            if dt == sdt:
                raise InvalidField(f"{f}.src_dtype", f"source and destination are both {DTYPES[dt]}")
            widest = max(widest, _ELEM[sdt])
        rng(enc.repeat, "repeat", 1, MAX_REPEAT)
        if enc.mask is not None:
            rng(enc.mask, "mask", 1, REPEAT_BYTES // widest)
        for j in range(2 * len(enc.family_spec.strided_roles)):
            rng(enc.blk + j, f"stride{j}", 0, MAX_STRIDE)
        if enc.scalar is not None and not isinstance(ins[enc.scalar], float):
            raise InvalidField(f"{f}.scalar", f"expected a float, got {ins[enc.scalar]!r}")
    elif op in (SET_FLAG, WAIT_FLAG):
        src = rng(8, "src_pipe", 0, _NPIPES - 1)
        dst = rng(9, "dst_pipe", 0, _NPIPES - 1)
        if src == dst:
            raise InvalidField(f"{f}.dst_pipe", "a flag connects two different pipes")
        if op == WAIT_FLAG and dst == _S:
            raise InvalidField(f"{f}.dst_pipe", "a wait on the scalar unit is opcode wait_flag (scalar)")
        if pipe != (src if op == SET_FLAG else dst):
            raise InvalidField(f"{f}.pipe", f"{PIPES[pipe].value}, a {'set' if op == SET_FLAG else 'wait'} runs on its {'source' if op == SET_FLAG else 'destination'} pipe")
        rng(10, "event", 0, NUM_EVENTS - 1)
    elif op == BARRIER:
        if pipe == _S:
            raise InvalidField(f"{f}.pipe", "the scalar pipe is in order already")
    if op in (SET_FLAG, WAIT_FLAG, BARRIER) and any(ins[2:8]):
        raise InvalidField(f, "the operand slots of a flag or barrier must be 0")


def _operand_spaces(ins: tuple, f: str) -> tuple[MemSpace, ...]:
    """Memory space of each pointer operand (destination first)."""
    op = ins[0]
    if op == DMA:
        src = SPACES[_int(ins[8], f"{f}.src_space", 0, len(SPACES) - 1)]
        dst = SPACES[_int(ins[9], f"{f}.dst_space", 0, len(SPACES) - 1)]
        if (src, dst) not in DMA_PATHS:
            raise InvalidField(f"{f}.dst_space", f"no DMA path moves {src.value} -> {dst.value}")
        return (dst, src)
    if op == LOAD2D:
        dst = _int(ins[8], f"{f}.dst_space", 0, len(SPACES) - 1)
        if dst not in (_SP[MemSpace.L0A], _SP[MemSpace.L0B]):
            raise InvalidField(f"{f}.dst_space", f"{SPACES[dst].value}; load_2d writes l0a or l0b")
        return (SPACES[dst], MemSpace.L1)
    if op == LOAD3D:
        return (MemSpace.L0A, MemSpace.L1)
    if op == MMAD:
        return (MemSpace.L0C, MemSpace.L0A, MemSpace.L0B)
    if op in VECTOR_ENCODINGS:
        return (MemSpace.UB,) * len(VECTOR_ENCODINGS[op].addresses)
    return ()


# ---------------------------------------------------------------------------
# Instruction budget: how many instructions a block can execute
# ---------------------------------------------------------------------------


def _interval_op(op: int, a, b):
    """Bounds of `a op b` for integer intervals (lo, hi); None = unknown."""
    if a is None or b is None:
        return None
    (a0, a1), (b0, b1) = a, b
    if op == ADD:
        return a0 + b0, a1 + b1
    if op == SUB:
        return a0 - b1, a1 - b0
    if op == MIN:
        return min(a0, b0), min(a1, b1)
    if op == MAX:
        return max(a0, b0), max(a1, b1)
    if op == REMS:
        m = max(abs(b0), abs(b1)) - 1
        if m < 0:
            return None
        return (0 if a0 >= 0 else -m), (0 if a1 <= 0 else m)
    if op == MUL:
        fn = int.__mul__
    elif b0 <= 0 <= b1:  # a division that may divide by zero
        return None
    elif op == FLOORDIV:
        fn = int.__floordiv__
    elif op == CEILDIV:
        def fn(x, y):
            return -(-x // y)
    else:  # DIVS: truncating
        def fn(x, y):
            q = abs(x) // abs(y)
            return q if (x >= 0) == (y > 0) else -q
    corners = [fn(x, y) for x in (a0, a1) for y in (b0, b1)]
    return min(corners), max(corners)


def instruction_bound(kernel: Kernel, block_dim: int) -> tuple[int | None, int]:
    """(an upper bound of the instructions one block of a launch with
    `block_dim` blocks executes, or None if the loop counts cannot be bounded;
    the index of the loop that contributes most). Interval arithmetic over
    the registers: the assembler writes every register once, except loop
    induction variables and loop-carried values (unknown); a loop runs at
    most ceil((max ub - min lb) / min step) times."""
    code = kernel.code
    writes: dict[int, int] = {}
    for ins in code:
        for r in _regs_written(ins):
            writes[r] = writes.get(r, 0) + 1
    val: dict[int, tuple[int, int] | None] = {}
    for r, v in enumerate(kernel.init_regs):
        if r not in writes:
            val[r] = (v, v)
    val[0] = (0, 0)
    val[1] = (0, block_dim - 1)
    val[2] = (block_dim, block_dim)
    init = kernel.init_regs
    stack: list[tuple[int, int]] = []  # (multiplier outside the loop, head)
    mult, total, worst, worst_pc = 1, 0, 0, -1
    for pc, ins in enumerate(code):
        op = ins[0]
        total += mult
        if op == FOR:
            lb, ub, step = val.get(ins[3]), val.get(ins[4]), val.get(ins[5])
            if lb is None or ub is None or step is None:
                return None, pc
            trips = max(0, -(-(ub[1] - lb[0]) // max(1, step[0])))
            if mult * trips > worst:
                worst, worst_pc = mult * trips, pc
            val[ins[2]] = (lb[0], max(lb[0], ub[1] - 1))
            stack.append((mult, lb, ub, step))
            mult *= trips
        elif op == ENDFOR:
            mult, lb, ub, step = stack.pop()
            # after the loop the induction variable is past ub by < step
            val[ins[2]] = (lb[0], max(lb[1], ub[1] - 1 + max(1, step[1])))
            for r in ins[6::2]:
                val[r] = None
        elif op == LOAD_INDEX:
            val[ins[2]] = (0, ins[6] - 1) if writes.get(ins[2], 0) == 1 else None
        elif op == MOV or op in _BINARY_SCALAR:
            dst = ins[2]
            if writes.get(dst, 0) != 1:
                val[dst] = None
                continue
            v = val.get(ins[3]) if op == MOV else _interval_op(op, val.get(ins[3]), val.get(ins[4]))
            if v is not None and stack:  # may keep its initial value if the loop never runs
                v = (min(v[0], init[dst]), max(v[1], init[dst]))
            val[dst] = v
    return total, worst_pc


def budget_problem(program: Program, bounds: dict | None = None) -> tuple[str, str] | None:
    """(field, problem) if a launch of `program` can execute more instructions
    than the limits allow (MAX_BLOCK_INSTRUCTIONS per block,
    MAX_RUN_INSTRUCTIONS per run), else None. Unbounded loops are left to
    the simulator's run-time cap. `bounds`, if given, receives every
    launch's instruction_bound keyed by (id(kernel), block_dim)."""
    total = 0
    seen: dict[tuple[int, int], int | None] = {}
    for i, e in enumerate(program.schedule):
        if e[0] != "launch":
            continue
        k, bd = e[1], e[2]
        if (k, bd) not in seen:
            bound, pc = instruction_bound(program.kernels[k], bd)
            kernel = program.kernels[k]
            if bounds is not None:
                bounds[(id(kernel), bd)] = bound, pc
            if bound is not None and bound > MAX_BLOCK_INSTRUCTIONS:
                where = f"kernels[{k}] '{kernel.name}'"
                if pc >= 0:
                    where += f".code[{pc}] (for)"
                return (
                    where,
                    f"a block of schedule[{i}] (block_dim {bd}) can execute up to {bound} instructions, "
                    f"more than the limit of {MAX_BLOCK_INSTRUCTIONS} (a loop count is too large)",
                )
            seen[(k, bd)] = bound
        if seen[(k, bd)] is not None:
            total += bd * seen[(k, bd)]
            if total > MAX_RUN_INSTRUCTIONS:
                return (
                    f"schedule[{i}] (launch)",
                    f"the run can execute up to {total} instructions by this launch, more than the "
                    f"limit of {MAX_RUN_INSTRUCTIONS}",
                )
    return None


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
