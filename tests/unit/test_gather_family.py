"""Gathers on the AI core (lowering/graph_to_tile/gather.py): ONNX Gather
along any axis as a vector-family kernel -- the indices are read from UB by
the scalar unit (npu.load_index), each row moves by one DMA -- against
onnxruntime in both precision modes, on the npu backend with the AI-CPU
fallback off. In fp32 a gather is a copy, so the result is bit-exact.

Also: out-of-range indices at run time (simulator and reference
interpreter), the legality refusal of rows that are not whole 32-byte
blocks, the race detector and npu-insert-sync on hand-written load_index
kernels, and the offline model's validation of LOAD_INDEX."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.context import Context
from xdsl.utils.exceptions import InterpretationError, PassFailedException

from gedialects.frontend.onnx_import import import_model
from gedialects.graph.interpreter import run as run_reference
from gedialects.npu import ops as npu
from gedialects.npu.transforms.insert_sync import NpuInsertSyncPass
from gedialects.numerics import CRITERIA, assert_close
from gedialects.zoo import onnxruntime_outputs
from lowering.pipeline import compile_module, run_compiled
from target import program as P
from target.assembler import assemble
from target.errors import AssemblyError, RaceError, SimulationError
from target.program import Program, read_om, write_om
from target.run import parse_npu_mlir
from target.simulator import simulate

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

MODES = ("force_fp16", "must_keep_origin_dtype")
ONNX_INT = {np.dtype(np.int64): TensorProto.INT64, np.dtype(np.int32): TensorProto.INT32}

# 16 indices into 50 rows: negative ones (-1 is the last row, -50 the first),
# repeats, both ends.
EMBEDDING_IDS = np.array([[3, -1, 0, 49, 3, 3, -50, 17, 8, 8, 22, -7, 1, 40, 0, 12]], np.int64)


def _rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _model(nodes, inputs, inits=None):
    """A model of `nodes` whose output is "y"; `inputs` name -> example array."""
    graph = helper.make_graph(
        nodes, "gather",
        [helper.make_tensor_value_info(n, ONNX_INT.get(v.dtype, TensorProto.FLOAT), v.shape) for n, v in inputs.items()],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.asarray(v), n) for n, v in (inits or {}).items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _embedding(ids: np.ndarray, table_as_input: bool = False, rows: int = 50, width: int = 64):
    """y = Gather(w [rows, width], ids, axis 0): w an initializer or an input."""
    w = _rand(rows, width, seed=7)
    node = helper.make_node("Gather", ["w", "i"], ["y"], axis=0, name="emb")
    if table_as_input:
        return _model([node], {"w": w, "i": ids}), {"w": w, "i": ids}
    return _model([node], {"i": ids}, {"w": w}), {"i": ids}


def _compile_and_check(model, feeds, precision, kernels=("gather",)):
    """Compiled with no AI-CPU fallback, run on the simulator (races are
    errors), compared to onnxruntime: bit-exact in fp32, within the fp16
    criterion in force_fp16."""
    compiled = compile_module(import_model(model), precision, aicpu_fallback=False)
    got = np.asarray(run_compiled(compiled, feeds).outputs["y"])
    want = onnxruntime_outputs(model, feeds)["y"]
    assert got.size == want.size
    got = got.reshape(want.shape)
    if precision == "must_keep_origin_dtype":
        assert np.array_equal(got, want)
    else:
        assert_close(got, want, precision)
        assert CRITERIA[precision].check(got, want).ok
    assert compiled.aicpu == 0 and "aicpu" not in compiled.kernel_kinds
    for kind in kernels:
        assert compiled.kernel_kinds.get(kind) == 1, compiled.kernel_kinds
    return compiled, got, want


# ---------------------------------------------------------------------------
# Numerics against onnxruntime
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("precision", MODES)
@pytest.mark.parametrize("table_as_input", [False, True], ids=["weight", "input"])
def test_embedding_lookup_with_negative_and_repeated_indices(precision, table_as_input):
    """BERT/GPT-2's token embedding: [50, 64] rows by [1, 16] ids."""
    model, feeds = _embedding(EMBEDDING_IDS, table_as_input)
    _, got, _ = _compile_and_check(model, feeds, precision)
    assert got.shape == (1, 16, 64)
    # the repeats are the same row, a negative index the row counted from the end
    assert np.array_equal(got[0, 0], got[0, 4]) and np.array_equal(got[0, 1], got[0, 3])
    assert np.array_equal(got[0, 6], got[0, 2])


@pytest.mark.parametrize("precision", MODES)
def test_gather_along_axis_1_of_a_computed_value(precision):
    """Gather(Relu(x) [2, 10, 32], [3] indices, axis 1): the data is an
    AI-core result in GM (fp16 in force_fp16), viewed as [A, V, B] = [2, 10, 32]."""
    x = _rand(2, 10, 32, seed=1)
    idx = np.array([9, -10, 4], np.int64)
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Gather", ["r", "i"], ["y"], axis=1, name="g")]
    model = _model(nodes, {"x": x, "i": idx})
    _compile_and_check(model, {"x": x, "i": idx}, precision, kernels=("vector", "gather"))


@pytest.mark.parametrize("precision", MODES)
def test_int32_indices(precision):
    model, feeds = _embedding(EMBEDDING_IDS.astype(np.int32))
    _compile_and_check(model, feeds, precision)


@pytest.mark.parametrize("precision", MODES)
@pytest.mark.parametrize("index", [-3, 0, 49])
def test_a_scalar_index_drops_the_axis(precision, index):
    """A 0-d index input (not a constant, which graph-canonicalize would make
    a slice): one row, the result [64]."""
    model, feeds = _embedding(np.array(index, np.int64))
    _, got, want = _compile_and_check(model, feeds, precision)
    assert want.shape == (64,)


# ---------------------------------------------------------------------------
# Out-of-range indices at run time
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("value", [50, -51, 2**40])
def test_an_out_of_range_index_stops_the_simulator_naming_kernel_and_value(value):
    model, feeds = _embedding(EMBEDDING_IDS)
    compiled = compile_module(import_model(model), "must_keep_origin_dtype", aicpu_fallback=False)
    bad = EMBEDDING_IDS.copy()
    bad[0, 5] = value
    with pytest.raises(SimulationError) as info:
        run_compiled(compiled, {"i": bad})
    text = str(info.value)
    assert "\n" not in text, text
    assert text.startswith("kernel 'k0_gather' block "), text
    assert "npu.load_index" in text, text
    assert f"index {value} is out of range [-50, 50)" in text, text
    # the reference backend refuses it too
    with pytest.raises(InterpretationError, match=rf"index {value} is out of range \[-50, 50\) along axis 0"):
        run_reference(import_model(model), {"i": bad})


def test_the_bounds_are_inclusive_of_minus_v_and_exclusive_of_v():
    ids = np.array([[-50, 49] * 8], np.int64)
    model, feeds = _embedding(ids)
    _, got, _ = _compile_and_check(model, feeds, "must_keep_origin_dtype")
    w = numpy_helper.to_array(model.graph.initializer[0])
    assert np.array_equal(got[0, 0], w[0]) and np.array_equal(got[0, 1], w[49])


# ---------------------------------------------------------------------------
# Legality: rows that are not whole 32-byte blocks
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("precision", MODES)
@pytest.mark.parametrize("width", [4, 8, 20])
def test_rows_narrower_than_a_block(width, precision):
    """4 or 8 floats (16 / 32 bytes; 8 / 16 as fp16) and 20 (80 / 40): each
    row moves by a padded DMA, whole blocks on the UB side."""
    model, feeds = _embedding(EMBEDDING_IDS, width=width)
    _compile_and_check(model, feeds, precision)


# ---------------------------------------------------------------------------
# Tiles of several rows: each index is read from its own UB element
# ---------------------------------------------------------------------------


def test_a_tile_of_several_rows_reads_every_index():
    """512 ids into a [1000, 64] table: the chosen tiles hold several rows,
    each read from its element of the indices' UB column."""
    ids = np.random.default_rng(3).integers(-1000, 1000, size=(1, 512)).astype(np.int64)
    model, feeds = _embedding(ids, rows=1000)
    _compile_and_check(model, feeds, "must_keep_origin_dtype")


# ---------------------------------------------------------------------------
# Hand-written npu kernels: the race detector and npu-insert-sync
# ---------------------------------------------------------------------------

WAIT_FOR_INDEX = """npu.set_flag mte2 -> s event 0
    npu.wait_flag mte2 -> s event 0"""


def _row_kernel(flag: str, index_at: str = "%ui", row_flags: bool = True) -> str:
    """y = w[i[0]] (an [8, 8] f32 table): mte2 brings the indices to UB, the
    scalar unit reads one (npu.load_index), mte2 copies that row, mte3
    stores it. `flag` goes between the index DMA and the read."""
    store = "npu.set_flag mte2 -> mte3 event 0\n    npu.wait_flag mte2 -> mte3 event 0" if row_flags else ""
    return f"""
npu.program @p gm_size 4096 {{
  npu.input "i" at 0 : tensor<4xi64>
  npu.input "w" at 1024 : tensor<8x8xf32>
  npu.output "y" at 2048 : tensor<8xf32>
  npu.kernel @k {{
    %c8 = arith.constant 8 : index
    %c32 = arith.constant 32 : index
    %gi = npu.ptr gm 0
    %ui = npu.ptr ub 0
    %second = npu.ptr ub 0 + %c8 within 32
    %row = npu.ptr ub 256
    %gy = npu.ptr gm 2048
    npu.dma mte2 %ui, %gi len 32 : !npu.ptr<ub>, !npu.ptr<gm> loc("load_indices")
    {flag}
    %k = npu.load_index {index_at} {{dtype = i64, bound = 8 : i64}} : !npu.ptr<ub> loc("read_index")
    %off = arith.muli %k, %c32 : index
    %gw = npu.ptr gm 1024 + %off
    npu.dma mte2 %row, %gw len 32 : !npu.ptr<ub>, !npu.ptr<gm>
    {store}
    npu.dma mte3 %gy, %row len 32 : !npu.ptr<gm>, !npu.ptr<ub>
  }}
  npu.launch @k block_dim 1 stream 0
}}"""


W8 = np.arange(64, dtype=np.float32).reshape(8, 8)


def _ids(*first):
    i = np.zeros(4, np.int64)
    i[: len(first)] = first
    return i


def test_a_load_index_of_dma_bytes_without_a_flag_is_a_race():
    prog = assemble(parse_npu_mlir(_row_kernel("")))
    with pytest.raises(RaceError) as info:
        simulate(prog, {"i": _ids(3), "w": W8})
    text = str(info.value)
    assert "data race in kernel 'k' block 0 on ub bytes [0, 8)" in text
    assert 'npu.load_index (#1) at loc("read_index") on s reads' in text
    assert 'npu.dma (#0) at loc("load_indices") on mte2 writes' in text
    assert "no flag or barrier orders them" in text
    res = simulate(prog, {"i": _ids(3), "w": W8}, races="warn")
    assert len(res.profile.races) == 1


@pytest.mark.parametrize("index,row", [(3, 3), (-1, 7), (-8, 0), (7, 7)])
def test_with_the_flag_the_read_is_ordered_and_negative_indices_wrap(index, row):
    prog = assemble(parse_npu_mlir(_row_kernel(WAIT_FOR_INDEX)))
    res = simulate(prog, {"i": _ids(index), "w": W8})
    assert res.profile.races == []
    assert np.array_equal(res.outputs["y"], W8[row])


@pytest.mark.parametrize("index", [8, -9])
def test_the_simulator_refuses_an_index_outside_the_bound(index):
    prog = assemble(parse_npu_mlir(_row_kernel(WAIT_FOR_INDEX)))
    with pytest.raises(SimulationError) as info:
        simulate(prog, {"i": _ids(index), "w": W8})
    assert str(info.value) == (
        f"kernel 'k' block 0: npu.load_index (#3) at loc(\"read_index\"): index {index} is out of "
        "range [-8, 8) (ub byte 0); check the indices fed to the gather"
    )


def test_insert_sync_orders_the_read_after_the_dma():
    module = parse_npu_mlir(_row_kernel("", row_flags=False))
    NpuInsertSyncPass().apply(Context(), module)
    text = str(module)
    assert text.index("npu.wait_flag mte2 -> s event 0") < text.index("npu.load_index"), text
    assert "set_flag s ->" not in text, text
    assert len([op for op in module.walk() if isinstance(op, npu.FlagOp)]) == 4  # + mte2 -> mte3 before the store
    res = simulate(assemble(module), {"i": _ids(-2), "w": W8})
    assert res.profile.races == []
    assert np.array_equal(res.outputs["y"], W8[6])


PREFETCH = """
npu.program @p gm_size 4096 {
  npu.input "i" at 0 : tensor<32xi64>
  npu.input "w" at 1024 : tensor<8x8xf32>
  npu.output "y" at 2048 : tensor<4x8xf32>
  npu.kernel @k {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c32 = arith.constant 32 : index
    %gi = npu.ptr gm 0
    %ui = npu.ptr ub 0
    %row = npu.ptr ub 256
    npu.dma mte2 %ui, %gi len 32 : !npu.ptr<ub>, !npu.ptr<gm>
    scf.for %r = %c0 to %c4 step %c1 {
      %k = npu.load_index %ui {dtype = i64, bound = 8 : i64} : !npu.ptr<ub>
      %n = arith.addi %r, %c1 : index
      %no = arith.muli %n, %c32 : index
      %gn = npu.ptr gm 0 + %no
      npu.dma mte2 %ui, %gn len 32 : !npu.ptr<ub>, !npu.ptr<gm>
      %off = arith.muli %k, %c32 : index
      %gw = npu.ptr gm 1024 + %off
      npu.dma mte2 %row, %gw len 32 : !npu.ptr<ub>, !npu.ptr<gm>
      %yo = arith.muli %r, %c32 : index
      %gy = npu.ptr gm 2048 + %yo
      npu.dma mte3 %gy, %row len 32 : !npu.ptr<gm>, !npu.ptr<ub>
    }
  }
  npu.launch @k block_dim 1 stream 0
}"""


def test_insert_sync_orders_a_read_of_the_previous_iterations_dma():
    """The next index is prefetched over the one just read: the read waits for
    the previous iteration's DMA (a loop-carried mte2 -> s flag); the DMA over
    the bytes just read needs no flag after the read (scalar issue order)."""
    module = parse_npu_mlir(PREFETCH)
    NpuInsertSyncPass().apply(Context(), module)
    text = str(module)
    assert "set_flag s ->" not in text and "wait_flag s ->" not in text
    i = np.zeros(32, np.int64)
    i[::4] = [5, -1, 2, 0, 7, 3, 1, 1]
    res = simulate(assemble(module), {"i": i, "w": W8})
    assert res.profile.races == []
    assert np.array_equal(res.outputs["y"], W8[[5, 7, 2, 0]])


def test_a_load_index_reads_any_element_aligned_ub_address():
    prog = assemble(parse_npu_mlir(_row_kernel(WAIT_FOR_INDEX, index_at="%second")))
    res = simulate(prog, {"i": _ids(0, 5), "w": W8})
    assert np.array_equal(res.outputs["y"], W8[5])


# ---------------------------------------------------------------------------
# The offline model: LOAD_INDEX fields are validated at load
# ---------------------------------------------------------------------------


def _load_index_pc(arrays) -> int:
    code, offsets = arrays["k0_code"], arrays["k0_offsets"]
    (pc,) = [int(a) for a in offsets[:-1] if code[a] == P.LOAD_INDEX]
    return pc


@pytest.mark.parametrize("word,value,problem", [
    (6, 0, "(load_index).bound: 0 is outside [1, "),
    (6, -8, "(load_index).bound: -8 is outside [1, "),
    (5, 2, "(load_index).dtype: 2 is outside [0, 1]"),
    (4, -32, "(load_index).offset: -32 is outside [0, "),
], ids=["bound0", "negative_bound", "dtype", "offset"])
def test_a_bad_load_index_is_refused_by_program_validation(tmp_path, word, value, problem):
    prog = assemble(parse_npu_mlir(_row_kernel(WAIT_FOR_INDEX)))
    path = tmp_path / "p.om"
    prog.save(path)
    assert Program.load(path) == prog
    header, arrays = read_om(path)
    code = arrays["k0_code"].copy()
    code[_load_index_pc(arrays) + word] = value
    arrays["k0_code"] = code
    write_om(path, header, arrays)  # a valid checksum: only validation can refuse it
    with pytest.raises(AssemblyError) as info:
        Program.load(path)
    text = str(info.value)
    assert "\n" not in text and text.startswith(f"{path}: invalid offline model: "), text
    assert f"kernels[0] 'k'.code[3] {problem}" in text, text
    # the in-memory check says the same
    loaded = prog.kernels[0]
    ins = list(loaded.code[3])
    assert ins[0] == P.LOAD_INDEX
    ins[word] = value
    bad = dataclasses.replace(prog, kernels=(dataclasses.replace(loaded, code=(*loaded.code[:3], tuple(ins), *loaded.code[4:])),))
    with pytest.raises(P.InvalidField, match=re.escape(f"kernels[0] 'k'.code[3] {problem}")):
        P.validate(bad)
