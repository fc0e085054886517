"""The vector-instruction table (gedialects/npu/vector_ops.py): every row,
simulated as a one-instruction kernel, computes its NumPy semantics on the
elements its fields select; and the table is the only list of instructions."""

from __future__ import annotations

import operator
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects.builtin import IntegerAttr, StringAttr, TensorType, f16, i64

from gedialects.npu import ops as npu
from gedialects.npu.builder import ProgramBuilder
from gedialects.npu.isa import BLOCK_BYTES, REPEAT_BYTES
from gedialects.npu.vector_ops import (
    FAMILIES,
    SPECS,
    TILE_SPECS,
    VECTOR_SPECS,
    Family,
    kind_id,
    markdown_table,
)
from gedialects.tile import ops as t
from gedialects.npu.transforms.insert_sync import insert_sync
from target import program as P
from target.assembler import assemble
from target.config import VECTOR_OP_NAMES, config_from_dict, load_target
from target.errors import AssemblyError, RaceError
from target.program import read_om, write_om
from target.simulator import UNDEFINED_BYTE, simulate
from test_sim_semantics import OUT, ref_index, run_ub  # the UB harness of the instruction tests

RNG = np.random.default_rng(11)
NP = {"f16": np.float16, "f32": np.float32}
SOURCE_BYTES = 8192  # each source operand gets its own 8 KB of UB, from 0
DOCS = Path(__file__).parents[2] / "docs" / "NPU.md"

# (dtype, repeat, mask or None for a full repeat, stride pattern)
CASES = [
    ("f16", 3, None, "dense"),
    ("f32", 2, None, "dense"),
    ("f16", 2, 100, "strided"),
    ("f32", 4, 40, "strided"),
]
# Per operand (dst first): (blk, rep) in blocks; rep 0 repeats a source row.
STRIDED = [(2, 16), (1, 16), (2, 20), (1, 0)]


def _data(n: int, dtype, positive: bool) -> np.ndarray:
    """Few distinct values (ties for the compares, zeros for vsel's cond)."""
    x = RNG.choice(np.arange(-1.75, 2.0, 0.25), n).astype(dtype)
    return np.abs(x) if positive else x


def _elements(spec, role_index: int, repeat: int, mask: int, strides, es: int) -> np.ndarray:
    """[repeat, n] element indices of one operand, from its base (written from
    the ISA description, independent of target/semantics.py)."""
    operand = spec.family_spec.operands[role_index]
    if operand.per_repeat is not None:
        return np.arange(repeat * operand.per_repeat).reshape(repeat, operand.per_repeat)
    blk, rep = strides[role_index]
    return ref_index(repeat, mask, blk, rep, es)


def _run_row(spec, dtype: str, repeat: int, mask: int | None, pattern: str, positive: bool):
    family = spec.family_spec
    dst_t = NP[dtype]
    src_t = NP["f32" if dtype == "f16" else "f16"] if family.src_dtype else dst_t
    d_es, s_es = np.dtype(dst_t).itemsize, np.dtype(src_t).itemsize
    full = REPEAT_BYTES // max(d_es, s_es)
    m = full if mask is None or not family.mask else min(mask, full)
    n_ops = len(family.operands)
    dense = [(1, full * (d_es if i == 0 else s_es) // BLOCK_BYTES) for i in range(n_ops)]
    strides = STRIDED[:n_ops] if pattern == "strided" else dense
    x = _data(max(1, n_ops - 1) * SOURCE_BYTES // s_es, src_t, positive)
    scalar = dst_t(-0.75) if family.scalar else None
    fields = {"repeat": repeat}
    if family.mask:
        fields["mask"] = m
    for (blk, rep), operand in zip(strides, family.operands):
        if operand.per_repeat is None:
            fields[f"{operand.role}_blk"] = blk
            fields[f"{operand.role}_rep"] = rep

    def emit(k, inp, out):
        ptrs = [out] + [k.ptr("ub", i * SOURCE_BYTES) for i in range(n_ops - 1)]
        cls = npu.VECTOR_OP_CLASSES[spec.mnemonic]
        head = (dtype, "f32" if dtype == "f16" else "f16") if family.src_dtype else (dtype,)
        args = (*head, *ptrs) + ((float(scalar),) if scalar is not None else ())
        k.emit(cls(*args, **fields))

    out_n = SOURCE_BYTES // d_es
    got = run_ub(emit, x, dst_t, out_n)
    # OUT starts as a copy of the first bytes of x; the instruction overwrites what it writes.
    expected = x.view(np.uint8)[: out_n * d_es].view(dst_t).copy()
    sources = [
        x[i * SOURCE_BYTES // s_es + _elements(spec, i + 1, repeat, m, strides, s_es)]
        for i in range(n_ops - 1)
    ]
    with np.errstate(all="ignore"):
        result = spec.semantics(*sources, *(() if scalar is None else (scalar,)))
        where = _elements(spec, 0, repeat, m, strides, d_es)
        expected[where] = np.broadcast_to(result, where.shape)
    return got, expected


@pytest.mark.parametrize("positive", [True, False], ids=["positive", "signed"])
@pytest.mark.parametrize("dtype,repeat,mask,pattern", CASES, ids=[f"{c[0]}-{c[3]}-r{c[1]}" for c in CASES])
@pytest.mark.parametrize("spec", VECTOR_SPECS, ids=lambda s: s.mnemonic)
def test_every_row_computes_its_semantics(spec, dtype, repeat, mask, pattern, positive):
    got, expected = _run_row(spec, dtype, repeat, mask, pattern, positive)
    np.testing.assert_array_equal(got, expected)


# -- the new instructions, against references that do not use the table ------


@pytest.mark.parametrize("dtype", ["f16", "f32"])
def test_reciprocal_rsqrt_and_mins(dtype):
    x = RNG.uniform(0.1, 8.0, 4096 // np.dtype(NP[dtype]).itemsize).astype(NP[dtype])
    n = x.size // 2
    rel = 1e-3 if dtype == "f16" else 1e-6

    def emit(k, inp, out):
        half = k.ptr("ub", OUT + n * x.itemsize)
        repeat = n * x.itemsize // REPEAT_BYTES
        k.emit(npu.VrecOp(dtype, out, inp, repeat=repeat))
        k.emit(npu.VrsqrtOp(dtype, half, inp, repeat=repeat))

    got = run_ub(emit, x, NP[dtype], 2 * n).astype(np.float64)
    np.testing.assert_allclose(got[:n], 1.0 / x[:n].astype(np.float64), rtol=rel)
    np.testing.assert_allclose(got[n:], 1.0 / np.sqrt(x[:n].astype(np.float64)), rtol=2 * rel)
    got = run_ub(lambda k, i, o: k.emit(npu.VminsOp(dtype, o, i, 2.5, repeat=1, mask=17)), x, NP[dtype], 64)
    per = REPEAT_BYTES // x.itemsize
    np.testing.assert_array_equal(got[:17], [min(v, 2.5) for v in x[:17]])
    np.testing.assert_array_equal(got[17 : min(per, 64)], x[17 : min(per, 64)])  # past the mask: untouched


COMPARES = {"lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge, "eq": operator.eq, "ne": operator.ne}


@pytest.mark.parametrize("cmp", list(COMPARES))
def test_compare_writes_one_or_zero_in_the_dtype(cmp):
    x = np.array([1.0, 2.0, np.nan, -np.inf] * 64, dtype=np.float32)  # src0
    y = np.array([2.0, 2.0, np.nan, -np.inf] * 64, dtype=np.float32)  # src1
    data = np.concatenate([x, y])
    cls = npu.VECTOR_OP_CLASSES[f"vcmp_{cmp}"]
    got = run_ub(lambda k, i, o: k.emit(cls("f32", o, i, k.ptr("ub", x.nbytes), repeat=4)), data, np.float32, 256)
    want = [1.0 if COMPARES[cmp](a, b) else 0.0 for a, b in zip(x, y)]
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", ["f16", "f32"])
def test_select_never_lets_the_unselected_operand_through(dtype):
    tp = NP[dtype]
    n = REPEAT_BYTES // np.dtype(tp).itemsize * 2  # two repeats
    cond = (np.arange(n) % 3 == 0).astype(tp)  # 1, 0, 0, 1, 0, 0, ...
    a = np.where(cond != 0, 1.5, np.inf).astype(tp)  # inf where src1 is selected
    b = np.where(cond != 0, -np.inf, -2.0).astype(tp)  # -inf where src0 is selected
    a[1], b[3] = np.nan, np.nan  # NaN in the unselected operand, too
    data = np.concatenate([cond, a, b])
    step = n * np.dtype(tp).itemsize

    def emit(k, inp, out):
        k.emit(npu.VselOp(dtype, out, inp, k.ptr("ub", step), k.ptr("ub", 2 * step), repeat=2))

    got = run_ub(emit, data, tp, n)
    assert np.isfinite(got).all()
    np.testing.assert_array_equal(got, np.where(cond != 0, tp(1.5), tp(-2.0)))


@pytest.mark.parametrize("dtype", ["f16", "f32"])
def test_brcb_replicates_each_source_element_over_one_block(dtype):
    tp = NP[dtype]
    epb = BLOCK_BYTES // np.dtype(tp).itemsize
    src = (np.arange(64) + 1).astype(tp)  # 3 repeats read src[0:24]
    out_n = 4096 // np.dtype(tp).itemsize

    def emit(k, inp, out):
        k.emit(npu.VbrcbOp(dtype, out, inp, repeat=3, dst_blk=2, dst_rep=16))

    got = run_ub(emit, src, tp, out_n)
    blocks = got.reshape(-1, epb)
    for r in range(3):
        for i in range(8):
            assert (blocks[r * 16 + i * 2] == src[8 * r + i]).all(), (r, i)
    written = {r * 16 + i * 2 for r in range(3) for i in range(8)}
    initial = np.full(out_n * np.dtype(tp).itemsize, UNDEFINED_BYTE, np.uint8).view(tp)  # never written: NaN
    initial[: src.size] = src  # OUT starts as a copy of the input bytes
    for b in set(range(len(blocks))) - written:
        np.testing.assert_array_equal(blocks[b], initial.reshape(-1, epb)[b])


# -- timing, .om files, races, synchronisation --------------------------------


def test_new_instructions_are_priced_by_the_config():
    cfg = load_target("davinci-910")
    assert cfg.vector_cycles("vrsqrt", 3) == cfg.vector_cycles("vadd", 3)  # the default rate
    data = {**_config_json(cfg), "vector_cycles_per_repeat": {"default": 1, "vrsqrt": 3}}
    assert config_from_dict(data).vector_cycles("vrsqrt", 3) == cfg.latency_cycles["vector"] + 9


def _config_json(cfg) -> dict:
    import json

    return json.loads(Path(cfg.path).read_text())


def _dynamic_select_program():
    """vsel in a loop with all four pointers dynamic, then vbrcb and vcmp."""
    n = 128  # f16: one repeat
    pb = ProgramBuilder("sel", gm_size=8 * 1024)
    pb.input("x", 0, (4 * 4 * n,), "f16")  # 4 iterations x (cond, a, b, pad)
    pb.output("y", 4096, (4 * n,), "f16")
    with pb.kernel("k") as k:
        k.emit(npu.DmaOp("mte2", k.ptr("ub", 0), k.ptr("gm", 0), len=4 * 4 * n * 2))
        k.set_flag("mte2", "v", 0)
        k.wait_flag("mte2", "v", 0)
        with k.loop(0, 4) as i:
            src = k.mul(i, 4 * n * 2)
            dst = k.mul(i, n * 2)
            k.emit(npu.VselOp("f16", k.ptr("ub", 16384, dst), k.ptr("ub", 0, src),
                              k.ptr("ub", n * 2, src), k.ptr("ub", 2 * n * 2, src), repeat=1))
        k.emit(npu.VbrcbOp("f16", k.ptr("ub", 32768), k.ptr("ub", 16384), repeat=1))
        k.emit(npu.VcmpGeOp("f16", k.ptr("ub", 32768), k.ptr("ub", 32768), k.ptr("ub", 16384), repeat=1))
        k.set_flag("v", "mte3", 0)
        k.wait_flag("v", "mte3", 0)
        k.emit(npu.DmaOp("mte3", k.ptr("gm", 4096), k.ptr("ub", 16384), len=3 * n * 2))
        k.emit(npu.DmaOp("mte3", k.ptr("gm", 4096 + 3 * n * 2), k.ptr("ub", 32768), len=n * 2))
    pb.launch("k")
    return assemble(pb.module())


def _dynamic_select_expected(x: np.ndarray) -> np.ndarray:
    n = 128
    rows = x.reshape(4, 4, n)
    sel = np.where(rows[:, 0] != 0, rows[:, 1], rows[:, 2])
    brcb = np.repeat(sel[0, :8], 16)
    return np.concatenate([sel[:3].ravel(), (brcb >= sel[0]).astype(np.float16)])


def test_om_round_trip_of_the_new_encodings(tmp_path):
    program = _dynamic_select_program()
    x = _data(4 * 4 * 128, np.float16, positive=False)
    om = tmp_path / "sel.om"
    program.save(om)
    loaded = P.Program.load(om)
    assert loaded.kernels[0].code == program.kernels[0].code
    got = simulate(loaded, {"x": x}).outputs["y"]
    np.testing.assert_array_equal(got, _dynamic_select_expected(x))


@pytest.mark.parametrize(
    "word,value,problem",
    [
        (8, 999, r"\(vselect\): register operand 3 is 999, the kernel has registers"),
        (9, -64, r"\(vselect\).operand3.offset: -64 is outside"),
    ],
)
def test_a_corrupt_fourth_address_is_refused(tmp_path, word, value, problem):
    om = tmp_path / "sel.om"
    _dynamic_select_program().save(om)
    header, arrays = read_om(om)
    code, offsets = arrays["k0_code"].copy(), arrays["k0_offsets"]
    pc = next(i for i in range(len(offsets) - 1) if code[offsets[i]] == P.VSEL)
    code[offsets[pc] + word] = value  # src1's (register, immediate) pair: words 8, 9
    arrays["k0_code"] = code
    write_om(om, header, arrays)
    with pytest.raises(AssemblyError, match=problem):
        P.Program.load(om)


def test_unsynchronised_select_operand_is_a_race():
    pb = ProgramBuilder("race", gm_size=4096)
    pb.input("x", 0, (1024,), "f16")
    with pb.kernel("k") as k:
        u = [k.ptr("ub", 512 * i) for i in range(4)]
        k.emit(npu.DmaOp("mte2", u[1], k.ptr("gm", 0), len=256))  # the cond operand, no flag
        k.emit(npu.VselOp("f16", u[0], u[1], u[2], u[3], repeat=1))
    pb.launch("k")
    with pytest.raises(RaceError, match="npu.vsel .* on v reads, npu.dma .* on mte2 writes"):
        simulate(assemble(pb.module()), {"x": np.zeros(1024, np.float16)})


def test_sync_insertion_knows_every_operand_of_the_new_instructions():
    """Without flags the kernel races; insert_sync (from the ops' footprints)
    makes it race-free and it computes the same."""
    pb = ProgramBuilder("s", gm_size=16384)
    pb.input("x", 0, (4096,), "f16")
    pb.output("y", 8192, (2048,), "f16")
    with pb.kernel("k") as k:
        k.emit(npu.DmaOp("mte2", k.ptr("ub", 0), k.ptr("gm", 0), len=8192))
        k.emit(npu.VcmpLtOp("f16", k.ptr("ub", 8192), k.ptr("ub", 0), k.ptr("ub", 256), repeat=1))
        k.emit(npu.VselOp("f16", k.ptr("ub", 8448), k.ptr("ub", 8192), k.ptr("ub", 512), k.ptr("ub", 768), repeat=1))
        k.emit(npu.VbrcbOp("f16", k.ptr("ub", 9216), k.ptr("ub", 8448), repeat=2))
        k.emit(npu.DmaOp("mte3", k.ptr("gm", 8192), k.ptr("ub", 8192), len=4096))
    pb.launch("k")
    module = pb.module()
    x = _data(4096, np.float16, positive=False)
    with pytest.raises(RaceError):
        simulate(assemble(module), {"x": x})
    kernel = next(op for op in module.walk() if isinstance(op, npu.KernelOp))
    insert_sync(kernel)
    got = simulate(assemble(module), {"x": x}).outputs["y"]
    cmp = (x[:128] < x[128:256]).astype(np.float16)
    sel = np.where(cmp != 0, x[256:384], x[384:512])
    np.testing.assert_array_equal(got[:128], cmp)
    np.testing.assert_array_equal(got[128:256], sel)
    np.testing.assert_array_equal(got[512:768], np.repeat(sel[:16], 16))


# -- tile.vec -> npu ---------------------------------------------------------


def _tile_program(n: int, body):
    """A tile program over f16 vectors a, b, c -> y of n elements in UB."""
    prog = t.ProgramOp("p")
    names = ("a", "b", "c", "y")
    for i, name in enumerate(names):
        prog.body.block.add_op(t.TensorOp.create(properties={
            "name": StringAttr(name), "kind": StringAttr("output" if name == "y" else "input"),
            "offset": IntegerAttr(i * n * 2, i64), "type": TensorType(f16, [n]), "layout": StringAttr("ND"),
        }))
    kernel = t.KernelOp("k", 1)
    prog.body.block.add_op(kernel)
    ops = kernel.body.block
    refs = {}
    for name in names:
        gm, ub = t.GmOp(name, f16), t.AllocOp("ub", f16, [n])
        ops.add_op(gm)
        ops.add_op(ub)
        refs[name] = (gm.result, ub.result)
        if name != "y":
            ops.add_op(t.CopyOp(ub.result, gm.result, [n], [1], [1]))
    for op in body({name: ub for name, (_, ub) in refs.items()}):
        ops.add_op(op)
    ops.add_op(t.CopyOp(refs["y"][0], refs["y"][1], [n], [1], [1]))
    prog.verify()
    return prog, kernel


def test_tile_vec_names_lower_to_their_instructions():
    from gedialects.tile.transforms.allocate import allocate_kernel
    from lowering.tile_to_npu import lower_program

    n = 384

    def body(r):
        one = [[1]] * 4
        return [
            t.VecOp("cmp_le", r["y"], [r["a"], r["b"]], [n], one[:3]),
            t.VecOp("sel", r["y"], [r["y"], r["a"], r["c"]], [n], one),
            t.VecOp("mins", r["y"], [r["y"]], [n], one[:2], 0.5),
            t.VecOp("rec", r["y"], [r["y"]], [n], one[:2]),
        ]

    prog, kernel = _tile_program(n, body)
    config = load_target("davinci-910")
    allocate_kernel(kernel, config)
    module = lower_program(prog, config)
    for k in module.walk():
        if isinstance(k, npu.KernelOp):
            insert_sync(k)
    names = [op.name for op in module.walk() if isinstance(op, npu.VectorOp)]
    assert names == ["npu.vcmp_le", "npu.vsel", "npu.vmins", "npu.vrec"]
    ins = {k: _data(n, np.float16, positive=False) for k in "abc"}
    got = simulate(assemble(module), ins).outputs["y"]
    with np.errstate(divide="ignore"):
        want = np.reciprocal(np.minimum(np.where(ins["a"] <= ins["b"], ins["a"], ins["c"]), np.float16(0.5)))
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    "op,srcs,scalar,message",
    [
        ("sel", 2, None, "tile.vec: 'sel' takes 3 source(s)"),
        ("mins", 1, None, "tile.vec: 'mins' needs scalar"),
        ("abs", 1, 1.0, "tile.vec: 'abs' takes no scalar"),
        ("vbrcb", 1, None, "tile.vec: unknown op 'vbrcb'"),
    ],
)
def test_tile_vec_checks_its_vocabulary(op, srcs, scalar, message):
    ub = t.AllocOp("ub", f16, [128])
    vec = t.VecOp(op, ub.result, [ub.result] * srcs, [128], [[1]] * (srcs + 1), scalar)
    with pytest.raises(Exception, match=message.replace("(", r"\(").replace(")", r"\)")):
        vec.verify_()


# -- one table ---------------------------------------------------------------


def test_every_row_is_a_registered_op_with_its_family_operands():
    registered = {op.name: op for op in npu.NPU.operations}
    for spec in VECTOR_SPECS:
        cls = registered[spec.op_name]
        assert cls is npu.VECTOR_OP_CLASSES[spec.mnemonic] is getattr(npu, spec.class_name)
        assert cls.SPEC is spec and issubclass(cls, npu.VectorOp) and cls.FAMILY == spec.family
        assert tuple(name for name, _ in cls.get_irdl_definition().operands) == spec.family_spec.roles
    vector_ops = {name for name, cls in registered.items() if issubclass(cls, npu.VectorOp)}
    assert vector_ops == {s.op_name for s in VECTOR_SPECS}


def test_config_program_assembler_and_tile_derive_from_the_table():
    assert VECTOR_OP_NAMES == tuple(SPECS)
    encoded = [m for e in P.VECTOR_ENCODINGS.values() for m in e.kinds]
    assert sorted(encoded) == sorted(SPECS)
    assert set(P.VECTOR_OPCODES) == set(Family) == set(FAMILIES)
    for spec in VECTOR_SPECS:
        enc = P.VECTOR_ENCODINGS[P.VECTOR_OPCODES[spec.family]]
        assert enc.kinds[kind_id(spec)] == spec.mnemonic
    assert t.VECTOR_OPS == tuple(TILE_SPECS)
    from lowering.tile_to_npu import VECTOR_CLASSES

    assert {name: cls.SPEC for name, cls in VECTOR_CLASSES.items()} == TILE_SPECS


def test_saved_programs_keep_their_meaning():
    """Opcodes and kind ids of the instructions older .om files hold."""
    old = {
        P.VBIN: ("vadd", "vsub", "vmul", "vdiv", "vmax", "vmin"),
        P.VUN: ("vrelu", "vexp", "vln", "vsqrt", "vabs"),
        P.VSCALAR: ("vadds", "vmuls", "vmaxs"),
        P.VREDUCE: ("vreduce_sum", "vreduce_max"),
        P.VCONV: ("vconv",),
        P.VDUP: ("vdup",),
    }
    assert (P.VBIN, P.VUN, P.VSCALAR, P.VREDUCE, P.VCONV, P.VDUP) == (36, 37, 38, 39, 40, 41)
    lengths = {P.VBIN: 18, P.VUN: 16, P.VSCALAR: 17, P.VREDUCE: 14, P.VCONV: 16, P.VDUP: 14}
    for op, kinds in old.items():
        enc = P.VECTOR_ENCODINGS[op]
        assert enc.kinds[: len(kinds)] == kinds
        assert enc.length == lengths[op]
    assert P.FLOAT_SLOT == {P.VSCALAR: 16, P.VDUP: 13}


def test_docs_show_the_table():
    assert markdown_table() in DOCS.read_text()

