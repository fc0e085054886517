"""The offline model (.om) is checked before anything runs: a checksum over the
header and every array, then every field against its range (target/program.py
`Program.load`, `validate`); the simulator never runs away (instruction
budgets). Every refusal is one line naming the file (and the field)."""

from __future__ import annotations

import json
import signal
import zipfile

import numpy as np
import pytest

from gedialects.npu import examples
from target import program as P
from target.assembler import assemble
from target.errors import AssemblyError, SimulationError
from target.program import Program, read_om, write_om
from target.run import parse_npu_mlir, random_inputs
from target.simulator import simulate

# A program with every part of the format: inputs, a constant, a kernel with a
# loop over GM tiles, an AI-CPU task, outputs.
PROGRAM = """
npu.program @p gm_size 4096 {
  npu.input "x" at 0 : tensor<512xf16>
  npu.constant "w" at 1024 = dense<0.5> : tensor<512xf16>
  npu.output "z" at 2048 : tensor<512xf16>
  npu.output "a" at 3072 : tensor<16xf16>
  npu.kernel @k0_add {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c256 = arith.constant 256 : index
    %ux = npu.ptr ub 0
    %uw = npu.ptr ub 256
    %uz = npu.ptr ub 512
    scf.for %i = %c0 to %c4 step %c1 {
      %off = arith.muli %i, %c256 : index
      %gx = npu.ptr gm 0 + %off
      %gw = npu.ptr gm 1024 + %off
      %gz = npu.ptr gm 2048 + %off
      npu.dma mte2 %ux, %gx len 256 : !npu.ptr<ub>, !npu.ptr<gm>
      npu.dma mte2 %uw, %gw len 256 : !npu.ptr<ub>, !npu.ptr<gm>
      npu.set_flag mte2 -> v event 0
      npu.wait_flag mte2 -> v event 0
      npu.vadd f16 %uz, %ux, %uw repeat 1 : !npu.ptr<ub>, !npu.ptr<ub>, !npu.ptr<ub>
      npu.set_flag v -> mte3 event 0
      npu.wait_flag v -> mte3 event 0
      npu.dma mte3 %gz, %uz len 256 : !npu.ptr<gm>, !npu.ptr<ub>
      npu.pipe_barrier all
    }
  }
  npu.launch @k0_add block_dim 1 stream 0
  npu.aicpu @k1_aicpu_abs stream 0 ins [2048 : tensor<16xf16>] outs [3072 : tensor<16xf16>] {
  ^bb0(%a: tensor<16xf16>):
    %r = graph.abs %a : (tensor<16xf16>) -> tensor<16xf16>
    npu.aicpu_return %r : tensor<16xf16>
  }
}
"""


@pytest.fixture(autouse=True)
def no_hang():
    """Every test here must finish quickly: a hang fails it after 60 s."""

    def fail(*_):
        raise TimeoutError("the test hung (more than 60 s)")

    old = signal.signal(signal.SIGALRM, fail)
    signal.alarm(60)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def _program() -> Program:
    return assemble(parse_npu_mlir(PROGRAM))


def _x():
    return {"x": np.linspace(-4, 4, 512).astype(np.float16)}


@pytest.fixture
def om(tmp_path):
    path = tmp_path / "p.om"
    _program().save(path)
    return path


def _refused(path, match: str) -> str:
    with pytest.raises(AssemblyError) as info:
        Program.load(path)
    text = str(info.value)
    assert "\n" not in text, text
    assert text.startswith(f"{path}: "), text
    assert match in text, text
    return text


def _rewrite(path, edit_header=None, edit_arrays=None):
    """Edit the decoded header / arrays and write the file back with a
    recomputed (valid) checksum: only field validation can refuse it."""
    header, arrays = read_om(path)
    if edit_header:
        edit_header(header)
    if edit_arrays:
        edit_arrays(arrays)
    write_om(path, header, arrays)


def _members(path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k].copy() for k in z.files}


def _pc(arrays, kernel: int, opcode: int, nth: int = 0) -> int:
    """Word index (in k<kernel>_code) of the nth instruction with `opcode`."""
    code, offsets = arrays[f"k{kernel}_code"], arrays[f"k{kernel}_offsets"]
    starts = [int(a) for a in offsets[:-1] if code[a] == opcode]
    return starts[nth]


# ---------------------------------------------------------------------------
# A valid file
# ---------------------------------------------------------------------------


def test_a_valid_offline_model_runs_bit_identically(om):
    prog = _program()
    loaded = Program.load(om)
    assert loaded == prog
    header, _ = read_om(om)
    assert header["version"] == P.VERSION == 5
    assert header["checksum"].startswith("sha256:") and len(header["checksum"]) == 7 + 64
    a, b = simulate(prog, _x()), simulate(loaded, _x())
    for name in ("z", "a"):
        assert a.outputs[name].tobytes() == b.outputs[name].tobytes()
    assert a.profile.total_cycles == b.profile.total_cycles
    x = _x()["x"]
    np.testing.assert_array_equal(b.outputs["z"], x + np.float16(0.5))
    np.testing.assert_array_equal(b.outputs["a"], np.abs(x[:16] + np.float16(0.5)))


def test_bundled_examples_validate_and_round_trip(tmp_path):
    for module in (examples.matmul(block_dim=2), examples.vector_add(1 << 14, tile=4096), examples.row_sum(64, 128)):
        prog = assemble(module)
        P.validate(prog)
        prog.save(tmp_path / "e.om")
        loaded = Program.load(tmp_path / "e.om")
        assert loaded == prog
        inputs = random_inputs(prog)
        a, b = simulate(prog, inputs), simulate(loaded, inputs)
        assert all(a.outputs[k].tobytes() == b.outputs[k].tobytes() for k in a.outputs)


def test_precision_modes_are_the_lowerings():
    from lowering.graph_to_tile import PRECISION_MODES

    assert P.PRECISION_MODES == PRECISION_MODES


# ---------------------------------------------------------------------------
# Corruption the checksum catches
# ---------------------------------------------------------------------------


def _flip_in_member(path, name: str, index: int) -> None:
    """Flip one byte inside a member's data and write a well-formed zip (new
    CRCs): only the .om checksum can notice."""
    members = _members(path)
    data = bytearray(members[name].tobytes())
    data[index % len(data)] ^= 0x01
    members[name] = np.frombuffer(bytes(data), dtype=members[name].dtype).reshape(members[name].shape)
    with open(path, "wb") as f:
        np.savez(f, **members)


@pytest.mark.parametrize("member", ["header", "k0_code", "k0_offsets", "const0"])
@pytest.mark.parametrize("where", [0, 1, 2, 3])
def test_a_flipped_byte_in_any_member_is_refused_by_the_checksum(om, member, where):
    members = _members(om)
    n = members[member].nbytes
    if member == "header":
        text = members["header"].tobytes().decode()
        # flips that keep the header valid JSON: a digit of gm_size, a name, the
        # version digit, a body character
        index = [
            text.index('"gm_size": ') + len('"gm_size": '),
            text.index('"k0_add"') + 2,
            text.index('"version": ') + len('"version": '),
            text.index("graph.abs") + 6,
        ][where]
    else:
        index = [0, n // 3, n // 2, n - 1][where]
    _flip_in_member(om, member, index)
    assert _refused(om, "corrupted (checksum mismatch)")


def test_a_removed_or_added_member_is_refused(om, tmp_path):
    members = _members(om)
    del members["const0"]
    with open(om, "wb") as f:
        np.savez(f, **members)
    _refused(om, "corrupted (checksum mismatch)")
    members = _members(tmp_path / "p.om")
    members["extra"] = np.zeros(3, np.uint8)
    with open(om, "wb") as f:
        np.savez(f, **members)
    _refused(om, "corrupted (checksum mismatch)")


def test_raw_byte_flips_anywhere_in_the_file_never_load_a_different_program(om):
    raw = om.read_bytes()
    prog = _program()
    refused = 0
    for i in range(0, len(raw), max(1, len(raw) // 120)):
        data = bytearray(raw)
        data[i] ^= 0xFF
        om.write_bytes(bytes(data))
        try:
            loaded = Program.load(om)
        except AssemblyError as e:
            text = str(e)
            assert "\n" not in text and text.startswith(f"{om}: ")
            refused += 1
            continue
        # a flip in zip metadata nothing reads (timestamps, padding): same program
        assert loaded == prog
    assert refused > 100


def test_a_truncated_file_is_refused(om):
    raw = om.read_bytes()
    for cut in (0, 10, len(raw) // 2, len(raw) - 1):
        om.write_bytes(raw[:cut])
        _refused(om, "cannot read offline model")


def test_a_non_zip_file_is_refused(tmp_path):
    path = tmp_path / "x.om"
    path.write_bytes(b"this is not a zip file at all")
    text = _refused(path, "cannot read offline model: not a zip file")
    assert "BadZipFile" not in text or "not a zip" in text
    _refused(tmp_path / "missing.om", "cannot read offline model")


def test_old_versions_and_files_without_a_checksum_are_refused(om):
    header, arrays = read_om(om)
    raw = dict(header)
    del raw["checksum"]
    members = {"header": np.frombuffer(json.dumps(raw).encode(), np.uint8), **arrays}
    with open(om, "wb") as f:
        np.savez(f, **members)
    _refused(om, "corrupted (no checksum in the header)")
    _rewrite(om, lambda h: h.update(version=2))
    _refused(om, "offline model version 2 is not supported (this build reads versions 3, 4")


def test_a_version_3_file_without_kernel_info_loads(om):
    """Version 4 added the kernels' info (op names and shapes for the
    profile); a version-3 file has none and runs as it did."""
    prog = _program()

    def as_version_3(h):
        h["version"] = 3
        for k in h["kernels"]:
            k.pop("info", None)

    _rewrite(om, as_version_3)
    loaded = Program.load(om)
    assert all(k.info == {} for k in loaded.kernels)
    assert loaded.kernels[0].code == prog.kernels[0].code


# ---------------------------------------------------------------------------
# Corruption with a recomputed checksum: field validation names the field
# ---------------------------------------------------------------------------

HEADER_EDITS = [
    (lambda h: h.update(gm_size=0), "gm_size: 0 is outside [1, "),
    (lambda h: h.update(gm_size=1 << 40), "gm_size: 1099511627776 is outside"),
    (lambda h: h["inputs"][0].update(offset=4000), "inputs[0] 'x'.offset: GM [4000, 5024) is outside gm_size 4096"),
    (lambda h: h["inputs"][0].update(offset=-1), "inputs[0] 'x'.offset: -1 is outside"),
    (lambda h: h["inputs"][0].update(offset=1000), "constants[0] 'w': GM [1024, 2048) overlaps inputs[0] 'x'"),
    (lambda h: h["outputs"][0].update(shape=[4096]), "outputs[0] 'z'.offset: GM [2048, 10240) is outside gm_size"),
    (lambda h: h["outputs"][0].update(shape=[-5]), "outputs[0] 'z'.shape[0]: -5 is outside"),
    (lambda h: h["outputs"][0].update(dtype="complex64"), "outputs[0] 'z'.dtype: 'complex64' is not one of"),
    (lambda h: h["outputs"][1].update(name="z"), "outputs[1] 'z'.name: a second output named 'z'"),
    (lambda h: h["constants"][0].update(offset=4000), "constants[0] 'w'.offset: GM [4000, 5024) is outside"),
    (lambda h: h["kernels"][0]["init_regs"].__setitem__(0, 7), "kernels[0] 'k0_add'.init_regs[0]: register 0 holds 0"),
    (lambda h: h["kernels"][0].update(uses_cube=True), "kernels[0] 'k0_add'.uses_cube: True, but the kernel has no mmad"),
    (lambda h: h["kernels"][0]["locs"].pop(), "kernels[0] 'k0_add'.locs: "),
    (lambda h: h["kernels"][0].update(extra=1), "kernels[0]: unknown key 'extra'"),
    (lambda h: h["kernels"][0].update(info={"op_type": 3}), "kernels[0] 'k0_add'.info.op_type: expected a string"),
    (lambda h: h["kernels"][0].update(info={"colour": "red"}), "kernels[0] 'k0_add'.info: unknown key 'colour'"),
    (lambda h: h["kernels"][0].update(info={"writes": "12:float16"}),
     "kernels[0] 'k0_add'.info.writes: expected 'offset+nbytes:dtype', got '12:float16'"),
    (lambda h: h["kernels"][0].update(info={"writes": "4000+1024:float16"}),
     "kernels[0] 'k0_add'.info.writes: GM [4000, 5024) is outside gm_size 4096"),
    (lambda h: h.update(surprise=1), "header: unknown key 'surprise'"),
    (lambda h: h["schedule"][0].__setitem__(1, 5), "schedule[0] (launch).kernel: 5 is outside [0, 0]"),
    (lambda h: h["schedule"][0].__setitem__(2, 0), "schedule[0] (launch).block_dim: 0 is outside [1, 65535]"),
    (lambda h: h["schedule"][0].__setitem__(2, 70000), "schedule[0] (launch).block_dim: 70000 is outside"),
    (lambda h: h["schedule"][0].__setitem__(3, -1), "schedule[0] (launch).stream: -1 is outside [0, 1023]"),
    (lambda h: h["schedule"][1].__setitem__(1, 3), "schedule[1] (aicpu).task: 3 is outside [0, 0]"),
    (lambda h: h["schedule"].append(["wait", 0, 9]), "schedule[2] (wait).event: event 9 is not recorded"),
    (lambda h: h["schedule"].append(["record", 0, 1 << 20]), "schedule[2] (record).event: 1048576 is outside"),
    (lambda h: h["schedule"].append(["jump", 0, 1]), "schedule[2]: expected [launch"),
    (lambda h: h["schedule"].append(["aicpu", 0, 0]), "aicpu_tasks[0] 'k1_aicpu_abs': scheduled 2 times"),
    (lambda h: h["aicpu_tasks"][0]["ins"][0].__setitem__(0, 4090), "aicpu_tasks[0] 'k1_aicpu_abs'.ins[0].offset: GM [4090, 4122)"),
    (lambda h: h["aicpu_tasks"][0]["outs"][0].__setitem__(0, 1024),
     "aicpu_tasks[0] 'k1_aicpu_abs'.outs[0]: GM [1024, 1056) overlaps constants[0] 'w' [1024, 2048) (a task must not write a constant)"),
    (lambda h: h["aicpu_tasks"][0]["ins"][0].__setitem__(3, -1.0), "aicpu_tasks[0] 'k1_aicpu_abs'.ins[0].scale: -1.0 is not finite and > 0"),
    (lambda h: h["constants"][0].update(nbytes=100), "constants[0] 'w'.nbytes: 100, but member 'const0' has 1024 bytes"),
    (lambda h: h["aicpu_tasks"][0]["ins"][0].__setitem__(1, "object"), "aicpu_tasks[0] 'k1_aicpu_abs'.ins[0].dtype: 'object' is not one of"),
    (lambda h: h["meta"].update(precision_mode="fp8"), "meta.precision_mode: 'fp8' is not one of"),
    (lambda h: h["meta"].update(arena_live_bytes="64"), "meta.arena_live_bytes: expected 2 byte counts within GM"),
    (lambda h: h["meta"].update(arena_live_bytes="64;-1"), "meta.arena_live_bytes: expected 2 byte counts"),
    (lambda h: h["meta"].update(arena_live_bytes="64;99999"), "meta.arena_live_bytes: expected 2 byte counts within GM"),
]


@pytest.mark.parametrize("edit,field", HEADER_EDITS, ids=[f for _, f in HEADER_EDITS])
def test_a_bad_header_field_is_refused_even_with_a_valid_checksum(om, edit, field):
    _rewrite(om, edit)
    assert field in _refused(om, "invalid offline model: ")


def _edit_word(opcode: int, word: int, value: int, nth: int = 0):
    def edit(arrays):
        code = arrays["k0_code"].copy()
        code[_pc(arrays, 0, opcode, nth) + word] = value
        arrays["k0_code"] = code

    return edit


CODE_EDITS = [
    # (opcode, word, value, expected field and problem)
    (P.DMA, 0, 99, "kernels[0] 'k0_add'.code[2]: unknown opcode 99"),
    (P.DMA, 1, 0, "code[2] (dma).pipe: s, this instruction runs on mte2"),
    (P.DMA, 2, 999, "code[2] (dma): register operand 0 is 999, the kernel has registers 0..8"),
    (P.DMA, 3, -64, "code[2] (dma).operand0.offset: -64 is outside"),
    (P.DMA, 3, 16, "code[2] (dma).operand0.offset: ub address 16 is not aligned to 32 bytes"),
    (P.DMA, 6, 3, "code[2] (dma).operand2: an unused operand slot must be (0, 0)"),
    (P.DMA, 8, 9, "code[2] (dma).src_space: 9 is outside [0, 5]"),
    (P.DMA, 8, 2, "code[2] (dma).dst_space: no DMA path moves l0a -> ub"),
    (P.DMA, 10, 0, "code[2] (dma).nburst: 0 is outside [1, 4095]"),
    (P.DMA, 10, 5000, "code[2] (dma).nburst: 5000 is outside [1, 4095]"),
    (P.DMA, 11, 100, "code[2] (dma).len: len and dst_gap must be multiples of 32 bytes on the destination side (ub)"),
    (P.DMA, 11, 1 << 40, "code[2] (dma).len: 1099511627776 is outside"),
    (P.DMA, 14, 1, "code[2] (dma).cast_f16: only l0c -> ub converts"),
    (P.DMA, 15, 3, "code[2] (dma).path: path 3 is not gm -> ub"),
    (P.VBIN, 8, 6, "(vbinary).kind: 6 is outside [0, 5]"),
    (P.VBIN, 9, 2, "(vbinary).dtype: 2 is outside [0, 1]"),
    (P.VBIN, 10, 0, "(vbinary).repeat: 0 is outside [1, 255]"),
    (P.VBIN, 10, 256, "(vbinary).repeat: 256 is outside [1, 255]"),
    (P.VBIN, 11, 129, "(vbinary).mask: 129 is outside [1, 128]"),
    (P.VBIN, 14, 256, "(vbinary).stride2: 256 is outside [0, 255]"),
    (P.SET_FLAG, 10, 8, "(set_flag).event: 8 is outside [0, 7]"),
    (P.SET_FLAG, 8, 5, "code[4] (set_flag).pipe: mte2, a set runs on its source pipe"),
    (P.WAIT_FLAG, 8, 1, "(wait_flag).dst_pipe: a flag connects two different pipes"),
    (P.FOR, 2, 0, "code[0] (for): writes register 0; writable registers are 3..8"),
    (P.FOR, 6, 2, "code[0] (for).end: 2 is not the index of an endfor after it"),
    (P.ENDFOR, 5, 2, "code[11] (endfor): does not close the for at code[0]"),
    (P.MUL, 2, 5, "code[0] (for): the loop body writes its upper bound register 5"),
]


@pytest.mark.parametrize("opcode,word,value,field", CODE_EDITS, ids=[f for *_, f in CODE_EDITS])
def test_a_bad_instruction_is_refused_even_with_a_valid_checksum(om, opcode, word, value, field):
    code = read_om(om)[1]["k0_code"]
    _rewrite(om, edit_arrays=_edit_word(opcode, word, value))
    text = _refused(om, "invalid offline model: kernels[0] 'k0_add'")
    assert field in text, (text, code.tolist())


def test_bad_offsets_and_member_types_are_refused(om):
    _rewrite(om, edit_arrays=lambda a: a.update(k0_offsets=a["k0_offsets"] + np.int64(1)))
    _refused(om, "kernels[0] 'k0_add'.offsets: must run from 0 to the code length")
    _program().save(om)

    def shift(a):
        off = a["k0_offsets"].copy()
        off[1] += 1
        a["k0_offsets"] = off

    _rewrite(om, edit_arrays=shift)
    _refused(om, "kernels[0] 'k0_add'.code[")
    _program().save(om)
    _rewrite(om, edit_arrays=lambda a: a.update(k0_code=a["k0_code"].astype(np.float64)))
    _refused(om, "kernels[0] 'k0_add'.code: member 'k0_code' is float64")
    _program().save(om)
    _rewrite(om, edit_arrays=lambda a: a.update(const0=a["const0"][:100]))
    _refused(om, "constants[0] 'w'.nbytes: 1024, but member 'const0' has 100 bytes")
    _program().save(om)
    _rewrite(om, edit_arrays=lambda a: a.update(extra=np.zeros(1, np.uint8)))
    _refused(om, "invalid offline model: members: unexpected member 'extra'")


# ---------------------------------------------------------------------------
# Loop counts: refused or stopped, never a hang
# ---------------------------------------------------------------------------


def _loop_ub_register(arrays) -> int:
    """The register holding the upper bound of the kernel's loop."""
    return int(arrays["k0_code"][_pc(arrays, 0, P.FOR) + 4])


def test_a_huge_loop_count_is_refused_at_load(om):
    _, arrays = read_om(om)
    ub = _loop_ub_register(arrays)
    _rewrite(om, lambda h: h["kernels"][0]["init_regs"].__setitem__(ub, 1 << 40))
    _refused(om, "kernels[0] 'k0_add'.code[0] (for): a block of schedule[0] (block_dim 1) can execute up to")


def test_a_huge_loop_count_in_an_assembled_program_is_refused_by_the_simulator():
    text = PROGRAM.replace("%c4 = arith.constant 4 : index", "%c4 = arith.constant 1000000000000 : index")
    prog = assemble(parse_npu_mlir(text))
    with pytest.raises(SimulationError, match=r"can execute up to \d+ instructions, more than the limit"):
        simulate(prog, _x())


def test_many_blocks_over_the_run_limit_are_refused(om, monkeypatch):
    monkeypatch.setattr(P, "MAX_RUN_INSTRUCTIONS", 10_000)
    _rewrite(om, lambda h: h["schedule"][0].__setitem__(2, 65535))
    _refused(om, "schedule[0] (launch): the run can execute up to")


UNBOUNDED = """
npu.program @u gm_size 64 {
  npu.output "z" at 0 : tensor<16xf16>
  npu.kernel @k {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %c1000 = arith.constant 1000 : index
    %r = scf.for %i = %c0 to %c3 step %c1 iter_args(%n = %c1) -> (index) {
      scf.for %j = %c0 to %n step %c1 {
        %t = arith.addi %j, %c1 : index
      }
      %m = arith.muli %n, %c1000 : index
      scf.yield %m : index
    }
  }
  npu.launch @k block_dim 1 stream 0
}
"""


def test_a_loop_the_analysis_cannot_bound_is_stopped_by_the_runtime_cap(tmp_path, monkeypatch):
    # the inner loop runs to a loop-carried value: no static bound
    prog = assemble(parse_npu_mlir(UNBOUNDED))
    assert P.instruction_bound(prog.kernels[0], 1)[0] is None
    res = simulate(prog, {})  # 1 + 1000 + 10^6 inner iterations: runs to its end
    assert res.profile.kernels[0].instructions > 2_000_000
    # with a corrupted multiplier it would run for ever; the cap stops it
    path = tmp_path / "u.om"
    prog.save(path)
    header, arrays = read_om(path)
    regs = header["kernels"][0]["init_regs"]
    regs[regs.index(1000)] = 1 << 60
    write_om(path, header, arrays)
    loaded = Program.load(path)  # no static bound: left to the cap
    monkeypatch.setattr(P, "MAX_BLOCK_INSTRUCTIONS", 50_000)
    with pytest.raises(SimulationError, match=r"kernel 'k' block 0: scf.for .*more than the limit of 50000 instructions per block; stopped"):
        simulate(loaded, {})


def test_the_runtime_budget_is_the_static_bound(monkeypatch):
    prog = _program()
    bound, _ = P.instruction_bound(prog.kernels[0], 1)
    res = simulate(prog, _x())
    assert res.profile.kernels[0].instructions <= bound
    # the bound holds for a launch of many blocks whose loops depend on the block index
    mm = assemble(examples.matmul(block_dim=4))
    for e, k in zip([e for e in mm.schedule if e[0] == "launch"], simulate(mm, random_inputs(mm)).profile.kernels):
        assert k.instructions <= e[2] * P.instruction_bound(mm.kernels[e[1]], e[2])[0]


def test_the_file_is_a_plain_zip_without_pickles(om):
    with zipfile.ZipFile(om) as z:
        assert set(z.namelist()) == {"header.npy", "k0_code.npy", "k0_offsets.npy", "const0.npy"}
    with np.load(om, allow_pickle=False) as z:
        assert all(z[k].dtype != object for k in z.files)


def test_members_that_shrink_are_deflated_and_noise_is_stored(om, tmp_path):
    """Code and a constant fill are deflated; weights that are noise to
    deflate (random fp16) are stored as they are; the same program writes
    the same bytes."""
    rng = np.random.default_rng(7)
    header, arrays = read_om(om)
    arrays["const0"] = rng.standard_normal(1 << 15).astype(np.float16).view(np.uint8)
    arrays["const1"] = np.zeros(1 << 16, np.uint8)
    paths = [tmp_path / "b.om", tmp_path / "c.om"]
    for path in paths:
        write_om(path, header, arrays)
    assert paths[0].read_bytes() == paths[1].read_bytes()
    with zipfile.ZipFile(paths[0]) as z:
        kinds = {info.filename: info.compress_type for info in z.infolist()}
    assert kinds["const0.npy"] == zipfile.ZIP_STORED
    assert kinds["const1.npy"] == kinds["k0_code.npy"] == kinds["header.npy"] == zipfile.ZIP_DEFLATED
    _, back = read_om(paths[0])
    assert back.keys() == arrays.keys() and all(np.array_equal(back[k], arrays[k]) for k in arrays)
