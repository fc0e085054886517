"""Facts of the NPU instruction set that every target of the family shares.

These are properties of the instruction encoding (what an instruction can say),
not performance numbers: capacities, rates and latencies live in the target
config files under `target/configs/`. The simulator re-checks addresses against
the config's alignment and capacities at run time, so a user can describe a
stricter machine without touching the dialect.
"""

from __future__ import annotations

from xdsl.utils.str_enum import StrEnum


class Pipe(StrEnum):
    """An execution pipe of an AI core (names as in CCE's PIPE_*)."""

    S = "s"  # scalar unit: issues everything, runs loops and address math
    V = "v"  # vector unit on UB (also moves L0C -> UB on coupled cores)
    M = "m"  # cube unit: mmad L0A x L0B -> L0C
    MTE1 = "mte1"  # L1 -> L0A/L0B/UB
    MTE2 = "mte2"  # GM -> L1/UB
    MTE3 = "mte3"  # UB -> GM/L1
    ALL = "all"  # only as the argument of pipe_barrier


# Index of each real pipe in per-pipe tables (simulator queues, profiles).
PIPES: tuple[Pipe, ...] = (Pipe.S, Pipe.V, Pipe.M, Pipe.MTE1, Pipe.MTE2, Pipe.MTE3)
PIPE_INDEX: dict[Pipe, int] = {p: i for i, p in enumerate(PIPES)}
PIPE_ALL_INDEX = len(PIPES)


class MemSpace(StrEnum):
    """A memory an instruction can address, by byte offset from its start."""

    GM = "gm"  # global (device) memory, one flat arena per program
    L1 = "l1"  # cube-side buffer
    L0A = "l0a"  # left matrix of the cube
    L0B = "l0b"  # right matrix of the cube
    L0C = "l0c"  # cube accumulators
    UB = "ub"  # unified buffer of the vector unit


SPACES: tuple[MemSpace, ...] = tuple(MemSpace)
SPACE_INDEX: dict[MemSpace, int] = {s: i for i, s in enumerate(SPACES)}

# Start-address alignment each space demands (bytes). GM has none.
ALIGNMENT: dict[MemSpace, int] = {
    MemSpace.GM: 1,
    MemSpace.L1: 32,
    MemSpace.UB: 32,
    MemSpace.L0A: 512,
    MemSpace.L0B: 512,
    MemSpace.L0C: 64,
}

# Which pipe moves data along which path. A path's name keys the target
# config's bandwidth table.
DMA_PATHS: dict[tuple[MemSpace, MemSpace], Pipe] = {
    (MemSpace.GM, MemSpace.L1): Pipe.MTE2,
    (MemSpace.GM, MemSpace.UB): Pipe.MTE2,
    (MemSpace.L1, MemSpace.L0A): Pipe.MTE1,
    (MemSpace.L1, MemSpace.L0B): Pipe.MTE1,
    (MemSpace.L1, MemSpace.UB): Pipe.MTE1,
    (MemSpace.UB, MemSpace.GM): Pipe.MTE3,
    (MemSpace.UB, MemSpace.L1): Pipe.MTE3,
    (MemSpace.L0C, MemSpace.UB): Pipe.V,
    (MemSpace.UB, MemSpace.UB): Pipe.V,
}


# Paths whose DMA may move bursts that are not whole 32-byte blocks (`pad`):
# the on-chip side of each burst is rounded up to blocks, zero-filled on the
# way in. GM <-> UB is Ascend C's DataCopyPad; GM -> L1 is the nd2nz load
# (copy_gm_to_cbuf_multi_nd2nz pads a row's last 32 bytes with zeros in L1).
PAD_PATHS: frozenset[tuple[MemSpace, MemSpace]] = frozenset(
    {(MemSpace.GM, MemSpace.UB), (MemSpace.UB, MemSpace.GM), (MemSpace.GM, MemSpace.L1)}
)


def padded_burst(nbytes: int) -> int:
    """On-chip bytes a padded burst of `nbytes` occupies: whole 32-byte
    blocks (a load zero-fills the rest of the last block)."""
    return -(-nbytes // BLOCK_BYTES) * BLOCK_BYTES


def path_name(src: MemSpace, dst: MemSpace) -> str:
    """The config key of a data path, e.g. `gm_ub`."""
    return f"{src.value}_{dst.value}"


BLOCK_BYTES = 32  # one vector block; DMA lengths on chip are counted in these
REPEAT_BYTES = 256  # bytes one vector repeat processes (8 blocks)
BLOCKS_PER_REPEAT = REPEAT_BYTES // BLOCK_BYTES
MAX_REPEAT = 255  # the repeat field is 8 bits
MAX_STRIDE = 255  # block/repeat strides are 8-bit counts of 32-byte blocks
MAX_NBURST = 4095  # the DMA burst-count field is 12 bits
NUM_EVENTS = 8  # event ids per (src pipe, dst pipe) pair
FRACTAL = 16  # rows of a cube fractal (and columns for fp16)
FRACTAL_BYTES = 512  # one L0A/L0B fractal: 16 x 32 bytes
FRACTAL_ELEMS = FRACTAL * FRACTAL
"""Elements of a 16 x 16 fractal."""

# Element size in bytes of the dtypes the vector and cube units understand.
ELEM_BYTES: dict[str, int] = {"f16": 2, "f32": 4}
# Bytes of the integers UB holds: indices the scalar unit reads (npu.load_index)
# and sources of vconv to a float type (Ascend C's Cast from int32/int64).
INT_BYTES: dict[str, int] = {"s32": 4, "s64": 8}
DTYPE_BYTES: dict[str, int] = {**ELEM_BYTES, **INT_BYTES}
"""Every dtype an npu instruction names."""
