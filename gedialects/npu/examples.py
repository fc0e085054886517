"""Hand-written npu programs: the shapes of IR a lowering is expected to emit.

Each function returns a builtin.module holding one npu.program. They are used
by the simulator tests and benchmark, and documented in docs/NPU.md.

Synchronisation follows one pattern everywhere: for each buffer and each pair
(producer pipe, consumer pipe) there is an event; the consumer waits for
"data ready" before use and the producer waits for "buffer free" before
overwriting. "Free" flags are set once before the loop (so the first wait
passes) and waited once after it (so every kernel ends with no flag set).
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects.builtin import ModuleOp

from gedialects.npu import ops as npu
from gedialects.npu.builder import KernelBuilder, ProgramBuilder

F16, F32 = 2, 4


def vector_add(
    n: int = 1 << 18,
    tile: int = 16384,
    *,
    double_buffer: bool = True,
    block_dim: int = 1,
) -> ModuleOp:
    """z = x + y over `n` fp16 elements (default 512 KB per tensor, twice the
    UB), `tile` elements per step; blocks split the tensor evenly. With
    `double_buffer`, two sets of UB buffers alternate (ping-pong) so MTE2 loads
    the next tile while V adds the current one; the loop runs over tile pairs
    with the ping and pong halves written out, so event ids stay static."""
    per_block = n // block_dim
    tiles = per_block // tile
    nbuf = 2 if double_buffer else 1
    if per_block % tile or tiles % nbuf or tile % 128:
        raise ValueError("n/block_dim must be a multiple of nbuf*tile, tile of 128")
    tb = tile * F16
    pb = ProgramBuilder("vector_add", gm_size=3 * n * F16)
    pb.input("x", 0, (n,), "f16")
    pb.input("y", n * F16, (n,), "f16")
    pb.output("z", 2 * n * F16, (n,), "f16")
    with pb.kernel("vadd") as k:
        base = k.mul(k.block_idx(), per_block * F16)
        ub = [
            (
                k.ptr("ub", 3 * tb * b),
                k.ptr("ub", 3 * tb * b + tb),
                k.ptr("ub", 3 * tb * b + 2 * tb),
            )
            for b in range(nbuf)
        ]
        for b in range(nbuf):
            k.set_flag("v", "mte2", b)
            k.set_flag("mte3", "v", b)
        with k.loop(0, tiles, nbuf) as i:
            for b in range(nbuf):
                off = k.add(base, k.mul(k.add(i, b), tb))
                x, y, z = ub[b]
                k.wait_flag("v", "mte2", b)
                k.emit(npu.DmaOp("mte2", x, k.ptr("gm", 0, off), len=tb))
                k.emit(npu.DmaOp("mte2", y, k.ptr("gm", n * F16, off), len=tb))
                k.set_flag("mte2", "v", b)
                k.wait_flag("mte2", "v", b)
                k.wait_flag("mte3", "v", b)
                k.emit(npu.VaddOp("f16", z, x, y, repeat=tile // 128))
                k.set_flag("v", "mte2", b)
                k.set_flag("v", "mte3", b)
                k.wait_flag("v", "mte3", b)
                k.emit(npu.DmaOp("mte3", k.ptr("gm", 2 * n * F16, off), z, len=tb))
                k.set_flag("mte3", "v", b)
        for b in range(nbuf):
            k.wait_flag("v", "mte2", b)
            k.wait_flag("mte3", "v", b)
    pb.launch("vadd", block_dim)
    return pb.module()


def matmul(
    m: int = 64,
    n: int = 64,
    k: int = 128,
    tm: int = 32,
    tn: int = 32,
    tk: int = 32,
    *,
    block_dim: int = 4,
) -> ModuleOp:
    """C[m, n] (fp32) = A[m, k] @ B[k, n] (fp16, row-major in GM).

    Output tiles (tm x tn) are spread over blocks by `npu.block_idx`; each
    tile accumulates over k in tk steps (the first step peeled: it initialises
    L0C, the loop accumulates). Per step: MTE2 gathers the A and B tiles into
    L1 as 16-column panels (strided DMA), MTE1 reorders them into L0A (ZZ) and
    L0B (ZN, transposing each fractal), the cube multiplies; at the end V moves
    L0C to UB and MTE3 scatters the NZ tile into row-major C."""
    mt, nt, kt = m // tm, n // tn, k // tk
    tiles = mt * nt
    if m % tm or n % tn or k % tk or tiles % block_dim or tm % 16 or tn % 16 or tk % 16:
        raise ValueError("tile sizes must divide the matrix and be multiples of 16")
    per_block = tiles // block_dim
    a_gm, b_gm, c_gm = 0, m * k * F16, m * k * F16 + k * n * F16
    m1, n1, k1 = tm // 16, tn // 16, tk // 16
    l1_a, l1_b = 0, tm * tk * F16
    pb = ProgramBuilder("matmul", gm_size=c_gm + m * n * F32)
    pb.input("a", a_gm, (m, k), "f16")
    pb.input("b", b_gm, (k, n), "f16")
    pb.output("c", c_gm, (m, n), "f32")
    with pb.kernel("matmul") as kb:
        first = kb.mul(kb.block_idx(), per_block)
        la, lb, lc, ub = (
            kb.ptr("l0a", 0),
            kb.ptr("l0b", 0),
            kb.ptr("l0c", 0),
            kb.ptr("ub", 0),
        )
        kb.set_flag("mte1", "mte2", 0)
        kb.set_flag("m", "mte1", 0)
        kb.set_flag("v", "m", 0)
        kb.set_flag("mte3", "v", 0)

        def k_step(row, col, kk, accumulate: bool) -> None:
            kb.wait_flag("mte1", "mte2", 0)
            for p in range(k1):  # A panel p: rows of tm x 16 columns
                src = kb.add(
                    kb.mul(row, tm * k * F16),
                    kb.add(kb.mul(kk, tk * F16), p * 16 * F16),
                )
                kb.emit(
                    npu.DmaOp(
                        "mte2",
                        kb.ptr("l1", l1_a + p * tm * 32),
                        kb.ptr("gm", a_gm, src),
                        nburst=tm,
                        len=32,
                        src_gap=k * F16 - 32,
                    )
                )
            for p in range(n1):  # B panel p: tk rows x 16 columns
                src = kb.add(
                    kb.mul(kk, tk * n * F16),
                    kb.add(kb.mul(col, tn * F16), p * 16 * F16),
                )
                kb.emit(
                    npu.DmaOp(
                        "mte2",
                        kb.ptr("l1", l1_b + p * tk * 32),
                        kb.ptr("gm", b_gm, src),
                        nburst=tk,
                        len=32,
                        src_gap=n * F16 - 32,
                    )
                )
            kb.set_flag("mte2", "mte1", 0)
            kb.wait_flag("mte2", "mte1", 0)
            kb.wait_flag("m", "mte1", 0)
            for i in range(m1):  # L0A row i of fractals: (i, 0..k1) from panels
                kb.emit(
                    npu.Load2dOp(
                        kb.ptr("l0a", i * k1 * 512),
                        kb.ptr("l1", l1_a + i * 512),
                        repeat=k1,
                        src_stride=m1,
                    )
                )
            for j in range(k1):  # L0B row j: (j, 0..n1), each fractal transposed
                kb.emit(
                    npu.Load2dOp(
                        kb.ptr("l0b", j * n1 * 512),
                        kb.ptr("l1", l1_b + j * 512),
                        repeat=n1,
                        src_stride=k1,
                        transpose=True,
                    )
                )
            kb.set_flag("mte1", "mte2", 0)
            kb.set_flag("mte1", "m", 0)
            kb.wait_flag("mte1", "m", 0)
            kb.emit(
                npu.MmadOp("f16", lc, la, lb, m=tm, n=tn, k=tk, accumulate=accumulate)
            )
            kb.set_flag("m", "mte1", 0)

        with kb.loop(first, kb.add(first, per_block)) as t:
            row, col = _divmod(kb, t, nt)
            kb.wait_flag("v", "m", 0)
            k_step(row, col, kb.const(0), accumulate=False)
            with kb.loop(1, kt) as kk:
                k_step(row, col, kk, accumulate=True)
            kb.set_flag("m", "v", 0)
            kb.wait_flag("m", "v", 0)
            kb.wait_flag("mte3", "v", 0)
            kb.emit(npu.DmaOp("v", ub, lc, len=tm * tn * F32))
            kb.set_flag("v", "m", 0)
            kb.set_flag("v", "mte3", 0)
            kb.wait_flag("v", "mte3", 0)
            for p in range(n1):  # NZ column panel p -> tm rows of 16 floats
                dst = kb.add(
                    kb.mul(row, tm * n * F32),
                    kb.add(kb.mul(col, tn * F32), p * 16 * F32),
                )
                kb.emit(
                    npu.DmaOp(
                        "mte3",
                        kb.ptr("gm", c_gm, dst),
                        kb.ptr("ub", p * tm * 64),
                        nburst=tm,
                        len=64,
                        dst_gap=n * F32 - 64,
                    )
                )
            kb.set_flag("mte3", "v", 0)
        kb.wait_flag("mte1", "mte2", 0)
        kb.wait_flag("m", "mte1", 0)
        kb.wait_flag("v", "m", 0)
        kb.wait_flag("mte3", "v", 0)
    pb.launch("matmul", block_dim)
    return pb.module()


def _divmod(kb: KernelBuilder, a, b: int):
    from xdsl.dialects import arith

    q = kb.emit(arith.FloorDivSIOp(kb.value(a), kb.value(b))).results[0]
    return q, kb.sub(a, kb.mul(q, b))


def row_sum(rows: int = 64, cols: int = 256) -> ModuleOp:
    """out[r] = sum(x[r, :]) for an fp32 [rows, cols] matrix, cols a multiple
    of 64 (one repeat). V first folds the column chunks of every row into one
    256-byte accumulator row (vadd with a 4*cols-byte repeat stride, all rows
    in one instruction), then reduces each accumulator row (vreduce_sum)."""
    chunks = cols // 64
    if cols % 64 or rows > 255 or rows % 8:
        raise ValueError("cols must be a multiple of 64, rows a multiple of 8, <= 255")
    row_bytes = cols * F32
    x_bytes = rows * row_bytes
    acc = x_bytes
    out = acc + rows * 256
    pb = ProgramBuilder("row_sum", gm_size=x_bytes + rows * F32)
    pb.input("x", 0, (rows, cols), "f32")
    pb.output("out", x_bytes, (rows,), "f32")
    with pb.kernel("row_sum") as k:
        x_ub, acc_ub, out_ub = k.ptr("ub", 0), k.ptr("ub", acc), k.ptr("ub", out)
        k.emit(npu.DmaOp("mte2", x_ub, k.ptr("gm", 0), len=x_bytes))
        k.set_flag("mte2", "v", 0)
        k.wait_flag("mte2", "v", 0)
        rep = row_bytes // 32
        if chunks == 1:
            k.emit(npu.VaddsOp("f32", acc_ub, x_ub, 0.0, repeat=rows, src_rep=rep))
        else:
            k.emit(
                npu.VaddOp(
                    "f32",
                    acc_ub,
                    x_ub,
                    k.ptr("ub", 256),
                    repeat=rows,
                    src0_rep=rep,
                    src1_rep=rep,
                )
            )
        for c in range(2, chunks):
            k.barrier("v")
            k.emit(
                npu.VaddOp(
                    "f32",
                    acc_ub,
                    acc_ub,
                    k.ptr("ub", 256 * c),
                    repeat=rows,
                    src1_rep=rep,
                )
            )
        k.barrier("v")
        k.emit(npu.VreduceSumOp("f32", out_ub, acc_ub, repeat=rows))
        k.set_flag("v", "mte3", 0)
        k.wait_flag("v", "mte3", 0)
        k.emit(npu.DmaOp("mte3", k.ptr("gm", x_bytes), out_ub, len=rows * F32))
    pb.launch("row_sum", 1)
    return pb.module()


EXAMPLES: dict[str, Callable[[], ModuleOp]] = {
    "vector_add": vector_add,
    "vector_add_single": lambda: vector_add(double_buffer=False),
    "vector_add_4core": lambda: vector_add(block_dim=4),
    "matmul": matmul,
    "row_sum": row_sum,
}
