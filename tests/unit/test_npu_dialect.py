"""The npu dialect: typed builders, printed form, verifiers, pipes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from xdsl.utils.exceptions import DiagnosticException

from gedialects.npu import examples
from gedialects.npu import ops as npu
from gedialects.npu.isa import Pipe
from target.run import parse_npu_mlir

INVALID = Path(__file__).parents[1] / "filecheck" / "npu" / "invalid.mlir"


@pytest.mark.parametrize("name", sorted(examples.EXAMPLES))
def test_examples_verify_and_round_trip(name):
    module = examples.EXAMPLES[name]()
    module.verify()
    text = str(module)
    again = parse_npu_mlir(text)
    again.verify()
    assert str(again) == text


def _chunks():
    text = INVALID.read_text()
    for i, chunk in enumerate(text.split("// -----")):
        m = re.search(r"expected-error@\+1 \{\{(.*)\}\}", chunk)
        if m:
            yield pytest.param(chunk, m.group(1), id=f"chunk{i}")


@pytest.mark.parametrize("chunk,expected", list(_chunks()))
def test_invalid_chunk_reports_its_error(chunk, expected):
    """Each chunk of invalid.mlir fails with its expected message (this checks
    the verifiers without the ge-opt driver)."""
    with pytest.raises(DiagnosticException) as info:
        parse_npu_mlir(chunk).verify()
    assert expected in str(info.value)


def test_every_instruction_declares_its_pipe():
    u = npu.PtrOp("ub", 0)
    g = npu.PtrOp("gm", 0)
    c = npu.PtrOp("l0c", 0)
    cases = [
        (npu.DmaOp("mte2", u, g, len=32), Pipe.MTE2),
        (npu.DmaOp("v", u, c, len=64), Pipe.V),
        (npu.VaddOp("f16", u, u, u, repeat=1), Pipe.V),
        (
            npu.MmadOp("f16", c, npu.PtrOp("l0a"), npu.PtrOp("l0b"), m=16, n=16, k=16),
            Pipe.M,
        ),
        (npu.Load2dOp(npu.PtrOp("l0a"), npu.PtrOp("l1"), repeat=1), Pipe.MTE1),
        (npu.SetFlagOp("mte2", "v", 0), Pipe.MTE2),
        (npu.WaitFlagOp("mte2", "v", 0), Pipe.V),
        (npu.PipeBarrierOp("all"), Pipe.ALL),
    ]
    for op, pipe in cases:
        assert isinstance(op, npu.NpuInstruction)
        assert op.pipe() == pipe


def test_defaults_depend_on_dtype_and_are_filled_in():
    u = npu.PtrOp("ub", 0)
    f16 = npu.VaddOp("f16", u, u, u, repeat=2)
    f32 = npu.VaddOp("f32", u, u, u, repeat=2)
    assert f16.fields()["mask"] == 128 and f32.fields()["mask"] == 64
    assert f16.fields()["dst_rep"] == 8 and f16.fields()["src1_blk"] == 1
    conv = npu.VconvOp("f16", "f32", u, u, repeat=1)
    assert conv.fields()["dst_rep"] == 4 and conv.fields()["src_rep"] == 8
    assert conv.fields()["mask"] == 64


def test_unknown_field_is_a_python_error():
    u = npu.PtrOp("ub", 0)
    with pytest.raises(ValueError, match="unknown fields"):
        npu.VaddOp("f16", u, u, u, repeat=1, dst_stride=2)


def test_printed_form_elides_defaults_and_keeps_locations():
    text = """
    npu.program @p gm_size 64 {
      npu.kernel @k {
        %u = npu.ptr ub 0
        npu.vadd f16 %u, %u, %u repeat 2 mask 128 dst_blk 1 : !npu.ptr<ub>, !npu.ptr<ub>, !npu.ptr<ub> loc("conv1")
      }
    }"""
    module = parse_npu_mlir(text)
    vadd = next(op for op in module.walk() if isinstance(op, npu.VaddOp))
    assert str(vadd.location) == 'loc("conv1")'
    assert "repeat 2 :" in str(module)
