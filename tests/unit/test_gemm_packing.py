"""A gemm's weights packed block by block (lowering/graph_to_tile/matmul.py,
`pack_gemm_weights`) equal the whole matrix scaled in fp32, zero-padded to
whole fractals, converted and put in the cube's [K1][N1][16][k0] order:
weights stored [K][N] (a MatMul) or [N][K] (a Gemm's trans_b), a plain left
operand or a flattened NC1HWC0 map (its K rows permuted, padded channels
zero), fp16 and fp32, in one block and in several with a partial last one."""

from __future__ import annotations

import numpy as np
import pytest

from lowering.fp16_scaling import to_fp16
from lowering.graph_to_tile import matmul

K0 = 16


def packed_whole(weights: np.ndarray, scale: np.float32, K1: int, N1: int, dtype, flat_src) -> np.ndarray:
    """The reference: one fp32 matrix [K1 * k0, N1 * 16], rows in the left
    operand's order, converted whole, then reordered."""
    K, N = weights.shape
    matrix = np.zeros((K1 * K0, N1 * 16), np.float32)
    if flat_src is None:
        matrix[:K, :N] = weights.astype(np.float32) * scale
    else:
        _, C, H, W = flat_src
        pixels = H * W
        for c in range(C):
            for p in range(pixels):
                c1, cc = divmod(c, K0)
                matrix[(c1 * pixels + p) * K0 + cc, :N] = weights[c * pixels + p].astype(np.float32) * scale
    values = to_fp16(matrix) if dtype == np.float16 else matrix
    return np.ascontiguousarray(values.reshape(K1, K0, N1, 16).transpose(0, 2, 3, 1))


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
@pytest.mark.parametrize("trans_b", [False, True], ids=["k_by_n", "trans_b"])
@pytest.mark.parametrize("flat_src", [None, (1, 20, 3, 2)], ids=["rows", "flat_map"])
@pytest.mark.parametrize("block_bytes", [8 << 20, 4096], ids=["one_block", "blocks"])
def test_blocks_equal_the_whole_packing(monkeypatch, dtype, trans_b, flat_src, block_bytes):
    monkeypatch.setattr(matmul, "PACK_BLOCK_BYTES", block_bytes)
    rng = np.random.default_rng(3)
    N = 37  # not whole fractals
    K = 20 * 6 if flat_src is not None else 45
    stored = rng.standard_normal((N, K) if trans_b else (K, N)) * 10.0 ** rng.uniform(-8, 2, (N, K) if trans_b else (K, N))
    weights = stored.astype(np.float32).T if trans_b else stored.astype(np.float32)
    scale = np.float32(0.375)
    if flat_src is not None:
        K1 = -(-flat_src[1] // K0) * flat_src[2] * flat_src[3]
    else:
        K1 = -(-K // K0)
    N1 = -(-N // 16)
    got = matmul.pack_gemm_weights(weights, scale, K1, N1, K0, dtype, flat_src)
    want = packed_whole(weights, scale, K1, N1, dtype, flat_src)
    assert got.dtype == dtype and got.shape == (K1, N1, 16, K0)
    np.testing.assert_array_equal(got.view(np.uint16 if dtype == np.float16 else np.uint32),
                                  want.view(np.uint16 if dtype == np.float16 else np.uint32))
