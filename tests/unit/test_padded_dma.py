"""Padded DMA (`npu.dma ... pad`: Ascend C's DataCopyPad GM <-> UB, and the
nd2nz load GM -> L1): bursts whose length is not whole 32-byte blocks.

On the on-chip side a padded burst occupies padded_burst(len) bytes (len
rounded up to whole blocks; a load zero-fills the rest of the last block)
and the on-chip gap counts from there; on the GM side it moves exactly `len` bytes and the
GM gap counts from len. Encoded in DMA word 14 as a mode (P.DMA_PLAIN,
P.DMA_CAST_F16, P.DMA_PAD).

Here: the simulator's semantics on hand-written programs (zero fill, gaps on
both sides, GM bytes past a burst untouched), the race detector's rounded UB
extent, Program validation (in memory and from an .om file), and ops whose
rows are not whole blocks compiled for the npu backend with the AI-CPU
fallback off, each using at least one padded DMA, against onnxruntime in
both precision modes.
"""

from __future__ import annotations

import dataclasses
import re
import zlib

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.utils.exceptions import PassFailedException

from gedialects.frontend.onnx_import import import_model
from gedialects.npu.isa import padded_burst
from gedialects.numerics import CRITERIA, assert_close
from gedialects.zoo import onnxruntime_outputs
from lowering.pipeline import compile_module
from target import program as P
from target.assembler import assemble
from target.errors import AssemblyError, RaceError
from target.program import Program, read_om, write_om
from target.run import parse_npu_mlir
from target.simulator import simulate

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

# DMA instruction words (target/program.py, _check_pipe_instruction)
W_SRC_SPACE, W_DST_SPACE, W_NBURST, W_LEN, W_SRC_GAP, W_DST_GAP, W_MODE, W_PATH = range(8, 16)

UB, GM = "!npu.ptr<ub>", "!npu.ptr<gm>"


def _program(body: str, inputs: dict[str, tuple[int, str]], outputs: dict[str, tuple[int, str]], gm: int = 4096):
    """An npu program of one kernel `@k` (one block) around `body`; inputs and
    outputs are name -> (GM offset, tensor type)."""
    slots = [f'npu.input "{n}" at {o} : {t}' for n, (o, t) in inputs.items()]
    slots += [f'npu.output "{n}" at {o} : {t}' for n, (o, t) in outputs.items()]
    text = "\n".join([
        f"npu.program @p gm_size {gm} {{",
        *slots,
        "npu.kernel @k {",
        body,
        "}",
        "npu.launch @k block_dim 1 stream 0",
        "}",
    ])
    return assemble(parse_npu_mlir(text))


def _dmas(prog: P.Program) -> list[tuple]:
    return [ins for k in prog.kernels for ins in k.code if ins[0] == P.DMA]


def _nonzero(*shape, seed=0) -> np.ndarray:
    """Values with no zero among them, so zero-filled bytes stand out."""
    x = np.random.default_rng(seed).uniform(1.0, 2.0, shape) * np.random.default_rng(seed + 1).choice([-1, 1], shape)
    return x.astype(np.float32)


# ---------------------------------------------------------------------------
# The helper
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("n,padded", [(1, 32), (20, 32), (31, 32), (32, 32), (33, 64), (60, 64), (260, 288)])
def test_padded_burst_rounds_up_to_whole_blocks(n, padded):
    assert padded_burst(n) == padded


# ---------------------------------------------------------------------------
# Simulator semantics
# ---------------------------------------------------------------------------


def test_gm_to_ub_zero_fills_the_rest_of_the_last_block():
    """UB [0, 64) is first filled with nonzero floats; a padded DMA of 5 floats
    (20 bytes) at ub 0 writes them and zeroes ub [20, 32), the rest of their
    block, and leaves the next block [32, 64) alone."""
    prog = _program(f"""
        %gf = npu.ptr gm 0
        %gw = npu.ptr gm 64
        %gy = npu.ptr gm 128
        %u = npu.ptr ub 0
        npu.dma mte2 %u, %gf len 64 : {UB}, {GM}
        npu.dma mte2 %u, %gw len 20 pad : {UB}, {GM}
        npu.set_flag mte2 -> mte3 event 0
        npu.wait_flag mte2 -> mte3 event 0
        npu.dma mte3 %gy, %u len 64 : {GM}, {UB}
    """, {"fill": (0, "tensor<16xf32>"), "w": (64, "tensor<5xf32>")}, {"y": (128, "tensor<16xf32>")})
    (_, pad, _) = _dmas(prog)
    assert pad[W_MODE] == P.DMA_PAD and pad[W_LEN] == 20
    fill, w = _nonzero(16, seed=1), _nonzero(5, seed=2)
    y = simulate(prog, {"fill": fill, "w": w}).outputs["y"]
    np.testing.assert_array_equal(y[:5], w)
    np.testing.assert_array_equal(y[5:8], 0.0)
    np.testing.assert_array_equal(y[8:], fill[8:])


def test_gm_to_l1_zero_fills_the_rest_of_each_rows_block():
    """The nd2nz load (copy_gm_to_cbuf_multi_nd2nz): L1 [0, 96) first holds
    nonzero floats; three padded bursts of 3 floats (12 bytes), from GM rows
    of 7, land one block apart in L1 with the rest of each block zeroed. Read
    back through UB (l1 -> ub, ub -> gm)."""
    prog = _program(f"""
        %gf = npu.ptr gm 0
        %gx = npu.ptr gm 128
        %gy = npu.ptr gm 256
        %l1 = npu.ptr l1 0
        %u = npu.ptr ub 0
        npu.dma mte2 %l1, %gf len 96 : !npu.ptr<l1>, {GM}
        npu.dma mte2 %l1, %gx nburst 3 len 12 src_gap 16 pad : !npu.ptr<l1>, {GM}
        npu.set_flag mte2 -> mte1 event 0
        npu.wait_flag mte2 -> mte1 event 0
        npu.dma mte1 %u, %l1 len 96 : {UB}, !npu.ptr<l1>
        npu.set_flag mte1 -> mte3 event 0
        npu.wait_flag mte1 -> mte3 event 0
        npu.dma mte3 %gy, %u len 96 : {GM}, {UB}
    """, {"fill": (0, "tensor<3x8xf32>"), "x": (128, "tensor<3x7xf32>")}, {"y": (256, "tensor<3x8xf32>")})
    fill, x = _nonzero(3, 8, seed=11), _nonzero(3, 7, seed=12)
    y = simulate(prog, {"fill": fill, "x": x}).outputs["y"]
    np.testing.assert_array_equal(y[:, :3], x[:, :3])
    np.testing.assert_array_equal(y[:, 3:], 0.0)


def test_gm_to_ub_bursts_with_gaps_on_both_sides():
    """Three rows of 5 floats out of a [3, 7] tensor (GM gap 8 from len 20)
    into UB rows 16 floats apart (UB gap 32 from the padded 32): each UB row
    is its 5 floats, 3 zeros to the end of the block, then the gap's 8 floats
    as they were."""
    prog = _program(f"""
        %gf = npu.ptr gm 0
        %gx = npu.ptr gm 256
        %gy = npu.ptr gm 512
        %u = npu.ptr ub 0
        npu.dma mte2 %u, %gf len 192 : {UB}, {GM}
        npu.dma mte2 %u, %gx nburst 3 len 20 src_gap 8 dst_gap 32 pad : {UB}, {GM}
        npu.set_flag mte2 -> mte3 event 0
        npu.wait_flag mte2 -> mte3 event 0
        npu.dma mte3 %gy, %u len 192 : {GM}, {UB}
    """, {"fill": (0, "tensor<3x16xf32>"), "x": (256, "tensor<3x7xf32>")}, {"y": (512, "tensor<3x16xf32>")})
    fill, x = _nonzero(3, 16, seed=3), _nonzero(3, 7, seed=4)
    y = simulate(prog, {"fill": fill, "x": x}).outputs["y"]
    np.testing.assert_array_equal(y[:, :5], x[:, :5])
    np.testing.assert_array_equal(y[:, 5:8], 0.0)
    np.testing.assert_array_equal(y[:, 8:], fill[:, 8:])


def test_ub_to_gm_writes_exactly_len_bytes_per_burst():
    """The output [3, 8] is first filled with nonzero floats; a padded store
    of three 20-byte bursts from UB rows one block apart into GM rows 32 bytes
    apart (GM gap 12 from len 20) writes floats 0..4 of each row, not the UB
    row's floats 5..7 (which are nonzero data): GM floats 5..7 keep the fill."""
    prog = _program(f"""
        %gf = npu.ptr gm 0
        %gd = npu.ptr gm 128
        %gy = npu.ptr gm 256
        %uf = npu.ptr ub 0
        %ud = npu.ptr ub 128
        npu.dma mte2 %uf, %gf len 96 : {UB}, {GM}
        npu.dma mte2 %ud, %gd len 96 : {UB}, {GM}
        npu.set_flag mte2 -> mte3 event 0
        npu.wait_flag mte2 -> mte3 event 0
        npu.dma mte3 %gy, %uf len 96 : {GM}, {UB}
        npu.dma mte3 %gy, %ud nburst 3 len 20 dst_gap 12 pad : {GM}, {UB}
    """, {"fill": (0, "tensor<3x8xf32>"), "d": (128, "tensor<3x8xf32>")}, {"y": (256, "tensor<3x8xf32>")})
    fill, d = _nonzero(3, 8, seed=5), _nonzero(3, 8, seed=6)
    y = simulate(prog, {"fill": fill, "d": d}).outputs["y"]
    np.testing.assert_array_equal(y[:, :5], d[:, :5])
    np.testing.assert_array_equal(y[:, 5:], fill[:, 5:])


def test_ub_to_gm_contiguous_rows_and_nothing_past_the_last_burst():
    """Padded store of 3 x 5 floats from UB rows one block apart into 15
    contiguous GM floats: the 16th GM float (just past the last burst) and
    everything after keep their fill."""
    prog = _program(f"""
        %gf = npu.ptr gm 0
        %gd = npu.ptr gm 128
        %gy = npu.ptr gm 256
        %uf = npu.ptr ub 0
        %ud = npu.ptr ub 128
        npu.dma mte2 %uf, %gf len 128 : {UB}, {GM}
        npu.dma mte2 %ud, %gd len 96 : {UB}, {GM}
        npu.set_flag mte2 -> mte3 event 0
        npu.wait_flag mte2 -> mte3 event 0
        npu.dma mte3 %gy, %uf len 128 : {GM}, {UB}
        npu.dma mte3 %gy, %ud nburst 3 len 20 pad : {GM}, {UB}
    """, {"fill": (0, "tensor<32xf32>"), "d": (128, "tensor<3x8xf32>")}, {"y": (256, "tensor<32xf32>")})
    fill, d = _nonzero(32, seed=7), _nonzero(3, 8, seed=8)
    y = simulate(prog, {"fill": fill, "d": d}).outputs["y"]
    np.testing.assert_array_equal(y[:15], d[:, :5].ravel())
    np.testing.assert_array_equal(y[15:], fill[15:])


def test_f16_bursts_round_trip():
    """Rows of 10 halves (20 bytes) through UB rows one block apart and back:
    the store's GM result is the input (the zero fill never reaches GM)."""
    prog = _program(f"""
        %gx = npu.ptr gm 0
        %gy = npu.ptr gm 128
        %u = npu.ptr ub 0
        npu.dma mte2 %u, %gx nburst 4 len 20 pad : {UB}, {GM}
        npu.set_flag mte2 -> mte3 event 0
        npu.wait_flag mte2 -> mte3 event 0
        npu.dma mte3 %gy, %u nburst 4 len 20 pad : {GM}, {UB}
    """, {"x": (0, "tensor<4x10xf16>")}, {"y": (128, "tensor<4x10xf16>")})
    x = _nonzero(4, 10, seed=9).astype(np.float16)
    np.testing.assert_array_equal(simulate(prog, {"x": x}).outputs["y"], x)


# ---------------------------------------------------------------------------
# The race detector sees the rounded UB extent
# ---------------------------------------------------------------------------

_RACE_IO = ({"x": (0, "tensor<16xf32>")}, {"y": (1024, "tensor<64xf32>")})


def _race_kernel(dma: str, read_at: int):
    """`dma` (GM -> UB at ub 0) and, without a flag, a vector op on the v
    pipe reading the block at ub `read_at`."""
    return _program(f"""
        %gx = npu.ptr gm 0
        %gy = npu.ptr gm 1024
        %u = npu.ptr ub 0
        %r = npu.ptr ub {read_at}
        %o = npu.ptr ub 1024
        {dma}
        npu.vadds f32 %o, %r scalar 1.0 repeat 1 mask 8 : {UB}, {UB} loc("reader")
        npu.set_flag v -> mte3 event 0
        npu.wait_flag v -> mte3 event 0
        npu.dma mte3 %gy, %o len 32 : {GM}, {UB}
    """, *_RACE_IO)


def test_a_read_of_the_zero_filled_block_without_a_flag_is_a_race():
    """20 bytes land in ub [0, 20), the fill in [20, 32): the race is on the
    whole block [0, 32), not only on the 20 bytes moved."""
    prog = _race_kernel(f'npu.dma mte2 %u, %gx len 20 pad : {UB}, {GM} loc("padded")', 0)
    with pytest.raises(RaceError) as info:
        simulate(prog, {"x": _nonzero(16)})
    msg = str(info.value)
    assert "on ub bytes [0, 32)" in msg, msg
    assert 'npu.vadds (#1) at loc("reader") on v reads' in msg, msg
    assert 'npu.dma (#0) at loc("padded") on mte2 writes' in msg, msg


def test_a_read_of_the_last_padded_burst_is_a_race():
    """Three padded bursts of 20 bytes are ub [0, 96) (not the [0, 60) they
    would be unpadded): reading the third block [64, 96) races."""
    prog = _race_kernel(f"npu.dma mte2 %u, %gx nburst 3 len 20 pad : {UB}, {GM}", 64)
    with pytest.raises(RaceError, match=re.escape("on ub bytes [64, 96)")):
        simulate(prog, {"x": _nonzero(16)})


@pytest.mark.parametrize("dma,read_at", [
    (f"npu.dma mte2 %u, %gx len 20 pad : {UB}, {GM}", 32),  # the next block
    (f"npu.dma mte2 %u, %gx nburst 3 len 20 pad : {UB}, {GM}", 96),  # past the third block
    (f"npu.dma mte2 %u, %gx nburst 2 len 20 src_gap 12 dst_gap 32 pad : {UB}, {GM}", 32),  # the UB gap
], ids=["next-block", "past-the-bursts", "in-the-gap"])
def test_a_read_of_bytes_no_burst_touches_is_not_a_race(dma, read_at):
    res = simulate(_race_kernel(dma, read_at), {"x": _nonzero(16)}, races="warn")
    assert res.profile.races == []


def test_a_padded_store_reads_whole_blocks():
    """A vector write into ub [64, 96) then, without a flag, a padded store of
    three 20-byte rows from ub 0: the store reads the third block."""
    prog = _program(f"""
        %gy = npu.ptr gm 0
        %u = npu.ptr ub 0
        %third = npu.ptr ub 64
        %s = npu.ptr ub 512
        npu.vadds f32 %third, %s scalar 1.0 repeat 1 mask 8 : {UB}, {UB}
        npu.dma mte3 %gy, %u nburst 3 len 20 pad : {GM}, {UB}
    """, {}, {"y": (0, "tensor<15xf32>")})
    with pytest.raises(RaceError, match=re.escape("on ub bytes [64, 96)")):
        simulate(prog, {})


# ---------------------------------------------------------------------------
# Program validation: in memory and from an offline model
# ---------------------------------------------------------------------------

# One padded load, a plain copy UB -> L1 (a path that never pads) and a padded store.
VALIDATED = f"""
    %gx = npu.ptr gm 0
    %gy = npu.ptr gm 256
    %u = npu.ptr ub 0
    %l1 = npu.ptr l1 0
    npu.dma mte2 %u, %gx nburst 3 len 20 src_gap 8 dst_gap 32 pad : {UB}, {GM}
    npu.set_flag mte2 -> mte3 event 0
    npu.wait_flag mte2 -> mte3 event 0
    npu.dma mte3 %l1, %u len 32 : !npu.ptr<l1>, {UB}
    npu.dma mte3 %gy, %u nburst 3 len 20 src_gap 32 dst_gap 8 pad : {GM}, {UB}
"""
_PAD_LOAD, _L1_COPY, _PAD_STORE = 0, 1, 2  # the nth DMA

# (nth DMA, word, value, the problem named after "code[pc] (dma).")
BAD_WORDS = [
    (_PAD_LOAD, W_MODE, 3, "mode: 3 is outside [0, 2]"),
    (_PAD_LOAD, W_MODE, -1, "mode: -1 is outside [0, 2]"),
    (_L1_COPY, W_MODE, P.DMA_PAD, "pad: only gm <-> ub and gm -> l1 pad, not ub -> l1"),
    (_PAD_LOAD, W_MODE, P.DMA_CAST_F16, "cast_f16: only l0c -> ub converts, not gm -> ub"),
    (_PAD_LOAD, W_MODE, P.DMA_PLAIN,
     "len: len and dst_gap must be multiples of 32 bytes on the destination side (ub), got 20 and 32"),
    (_PAD_LOAD, W_DST_GAP, 12,
     "len: len and dst_gap must be multiples of 32 bytes on the destination side (ub), got 32 and 12"),
    (_PAD_STORE, W_SRC_GAP, 40,
     "len: len and src_gap must be multiples of 32 bytes on the source side (ub), got 32 and 40"),
]
BAD_IDS = ["mode3", "mode-1", "pad-ub-l1", "cast-gm-ub", "unpadded-len20", "load-ub-gap12", "store-ub-gap40"]


@pytest.fixture(scope="module")
def validated() -> P.Program:
    return _program(VALIDATED, {"x": (0, "tensor<3x7xf32>")}, {"y": (256, "tensor<3x7xf32>")})


def _nth_dma_pc(kernel: P.Kernel, nth: int) -> int:
    return [pc for pc, ins in enumerate(kernel.code) if ins[0] == P.DMA][nth]


def test_the_mode_word_is_what_the_assembler_wrote(validated, tmp_path):
    modes = [ins[W_MODE] for ins in _dmas(validated)]
    assert modes == [P.DMA_PAD, P.DMA_PLAIN, P.DMA_PAD]
    assert (P.DMA_PLAIN, P.DMA_CAST_F16, P.DMA_PAD) == (0, 1, 2)
    P.validate(validated)
    path = tmp_path / "p.om"
    validated.save(path)
    assert Program.load(path) == validated
    x = _nonzero(3, 7)
    np.testing.assert_array_equal(simulate(Program.load(path), {"x": x}).outputs["y"][:, :5], x[:, :5])


@pytest.mark.parametrize("nth,word,value,problem", BAD_WORDS, ids=BAD_IDS)
def test_program_validation_refuses_a_bad_padded_dma(validated, nth, word, value, problem):
    kernel = validated.kernels[0]
    pc = _nth_dma_pc(kernel, nth)
    ins = list(kernel.code[pc])
    ins[word] = value
    code = (*kernel.code[:pc], tuple(ins), *kernel.code[pc + 1 :])
    bad = dataclasses.replace(validated, kernels=(dataclasses.replace(kernel, code=code),))
    with pytest.raises(P.InvalidField, match=re.escape(f"kernels[0] 'k'.code[{pc}] (dma).{problem}")):
        P.validate(bad)


@pytest.mark.parametrize("nth,word,value,problem", BAD_WORDS, ids=BAD_IDS)
def test_an_offline_model_with_a_bad_padded_dma_is_refused_at_load(validated, tmp_path, nth, word, value, problem):
    path = tmp_path / "p.om"
    validated.save(path)
    header, arrays = read_om(path)
    code, offsets = arrays["k0_code"].copy(), arrays["k0_offsets"]
    starts = [int(a) for a in offsets[:-1] if code[a] == P.DMA]
    code[starts[nth] + word] = value
    arrays["k0_code"] = code
    write_om(path, header, arrays)  # a valid checksum: only validation can refuse it
    with pytest.raises(AssemblyError) as info:
        Program.load(path)
    text = str(info.value)
    pc = _nth_dma_pc(validated.kernels[0], nth)
    assert "\n" not in text and text.startswith(f"{path}: invalid offline model: "), text
    assert f"kernels[0] 'k'.code[{pc}] (dma).{problem}" in text, text


# ---------------------------------------------------------------------------
# Rows that are not whole blocks, end to end (AI-CPU fallback off)
# ---------------------------------------------------------------------------

MODES = ("must_keep_origin_dtype", "force_fp16")
F = TensorProto.FLOAT
ONNX_TYPE = {np.dtype(np.float32): F, np.dtype(np.int64): TensorProto.INT64}


def _rng(request) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


def _model(nodes, feeds, inits=None, opset=17):
    graph = helper.make_graph(
        nodes, "padded",
        [helper.make_tensor_value_info(n, ONNX_TYPE[a.dtype], a.shape) for n, a in feeds.items()],
        [helper.make_tensor_value_info("y", F, None)],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in (inits or {}).items()],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def _on_the_ai_core_with_padded_dma(m, feeds, precision, exact=False):
    """Compiled with no AI-CPU fallback; the program has no AI-CPU task and
    at least one padded DMA; simulated (races are errors) and compared with
    onnxruntime (`exact`: bit for bit in fp32)."""
    compiled = compile_module(import_model(m, {}, source="test"), precision=precision, aicpu_fallback=False)
    assert compiled.aicpu == 0 and "aicpu" not in compiled.kernel_kinds, compiled.kernel_kinds
    prog = assemble(compiled.module)
    assert prog.aicpu_tasks == ()
    assert not any(s[0] == "aicpu" for s in prog.schedule)
    modes = [ins[W_MODE] for ins in _dmas(prog)]
    assert P.DMA_PAD in modes, modes
    got = simulate(prog, feeds).outputs["y"]
    want = onnxruntime_outputs(m, feeds)["y"]
    got = np.asarray(got).reshape(want.shape)
    if exact and precision == "must_keep_origin_dtype":
        np.testing.assert_array_equal(got, want)
    else:
        assert_close(got, want, precision)
        assert CRITERIA[precision].check(got, want).ok
    return got, want


# convert-tile-to-npu's vector_plan (gedialects/npu/vector_plan.py) still refuses a
# row of more than one repeat (64 floats: the kernels compute in fp32 in both
# modes) that is not whole 32-byte blocks, although legality now accepts it.
@pytest.mark.parametrize("precision", MODES)
@pytest.mark.parametrize("tokens", [50, 65, 197], ids=["vit-b32", "vit-b16", "vit-b16-224"])
def test_softmax_over_rows_of_vit_tokens(tokens, precision, request):
    """ViT's attention rows, the patches and the class token: 7 x 7 + 1 = 50
    (ViT-B/32 at 224) and 8 x 8 + 1 = 65 (ViT-B/16 at 128)."""
    x = (_rng(request).standard_normal((2, tokens, tokens)) * 2.0).astype(np.float32)
    _, want = _on_the_ai_core_with_padded_dma(_model([helper.make_node("Softmax", ["x"], ["y"], axis=-1)], {"x": x}),
                                              {"x": x}, precision)
    assert np.ptp(want) > 0.1


@pytest.mark.parametrize("precision", MODES)
def test_layer_norm_over_20(precision, request):
    rng = _rng(request)
    x = (rng.standard_normal((6, 20)) * 2.0 + 0.5).astype(np.float32)
    inits = {"g": (rng.standard_normal(20) + 1.0).astype(np.float32), "b": rng.standard_normal(20).astype(np.float32)}
    m = _model([helper.make_node("LayerNormalization", ["x", "g", "b"], ["y"], axis=-1, epsilon=1e-5)], {"x": x}, inits)
    _on_the_ai_core_with_padded_dma(m, {"x": x}, precision)


@pytest.mark.parametrize("precision", MODES)
def test_add_of_a_7x1_column(precision, request):
    """A [7, 1] column is 28 (fp32) or 14 (fp16) bytes: one padded run; the
    rows of 13 are not whole blocks either."""
    rng = _rng(request)
    feeds = {"a": rng.standard_normal((7, 13)).astype(np.float32), "b": rng.standard_normal((7, 1)).astype(np.float32)}
    _on_the_ai_core_with_padded_dma(_model([helper.make_node("Add", ["a", "b"], ["y"])], feeds), feeds, precision)


@pytest.mark.parametrize("precision", MODES)
def test_reduce_mean_to_one_number(precision, request):
    x = (_rng(request).standard_normal((5, 9)) + 0.5).astype(np.float32)
    m = _model([helper.make_node("ReduceMean", ["x", "axes"], ["y"], keepdims=0)], {"x": x},
               {"axes": np.array([0, 1], np.int64)}, opset=18)
    got, want = _on_the_ai_core_with_padded_dma(m, {"x": x}, precision)
    assert want.size == 1 and abs(float(want)) > 1e-3


@pytest.mark.parametrize("precision", MODES)
def test_gather_of_rows_of_3(precision, request):
    """12 bytes (fp32) or 6 (fp16) per gathered row; repeated and negative ids."""
    rng = _rng(request)
    w = rng.standard_normal((10, 3)).astype(np.float32)
    ids = np.array([4, -1, 0, 4, 9, -10, 7], np.int64)
    m = _model([helper.make_node("Gather", ["w", "i"], ["y"], axis=0)], {"i": ids}, {"w": w})
    got, want = _on_the_ai_core_with_padded_dma(m, {"i": ids}, precision, exact=True)
    assert want.shape == (7, 3)


@pytest.mark.parametrize("precision", MODES)
def test_slice_of_rows_of_5(precision, request):
    x = _rng(request).standard_normal((6, 12)).astype(np.float32)
    i64 = lambda *v: np.array(v, np.int64)  # noqa: E731
    m = _model([helper.make_node("Slice", ["x", "s", "e", "ax"], ["y"])], {"x": x},
               {"s": i64(2), "e": i64(7), "ax": i64(1)})
    got, want = _on_the_ai_core_with_padded_dma(m, {"x": x}, precision, exact=True)
    assert want.shape == (6, 5)
