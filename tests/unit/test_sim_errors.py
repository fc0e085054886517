"""Run-time errors: bounds, alignment, capacity, inputs, assembly."""

from __future__ import annotations

import numpy as np
import pytest

from target.assembler import assemble
from target.errors import AssemblyError, SimulationError
from target.run import parse_npu_mlir
from target.simulator import simulate


def _prog(body: str, gm: int = 4096, consts: str = ""):
    return assemble(
        parse_npu_mlir(f"""
    npu.program @p gm_size {gm} {{
      npu.input "x" at 0 : tensor<1024xf16>
      {consts}
      npu.kernel @k {{
        %g = npu.ptr gm 0
        %u = npu.ptr ub 0
        {body}
      }}
      npu.launch @k block_dim 1 stream 0
    }}""")
    )


X = {"x": np.zeros(1024, np.float16)}


def test_out_of_bounds_ub_names_the_instruction_and_location():
    prog = _prog("""
        %end = npu.ptr ub 262112
        npu.vdup f16 %end scalar 1.0 repeat 2 : !npu.ptr<ub> loc("conv1")
    """)
    with pytest.raises(SimulationError) as info:
        simulate(prog, X)
    assert str(info.value) == (
        "kernel 'k' block 0: npu.vdup (#0) at loc(\"conv1\"): destination ub "
        "[262112, 262624) is out of bounds (capacity 262144 bytes)"
    )


def test_the_capacity_comes_from_the_target():
    prog = _prog("""
        %hi = npu.ptr ub 200000
        npu.vdup f16 %hi scalar 1.0 repeat 1 : !npu.ptr<ub>
    """)
    simulate(prog, X, "davinci-910")  # 256 KB UB
    with pytest.raises(SimulationError, match="capacity 196608 bytes"):
        simulate(prog, X, "davinci-910b")  # 192 KB UB


def test_dma_beyond_gm_size():
    prog = _prog("""
        %g2 = npu.ptr gm 4000
        npu.dma mte2 %u, %g2 len 256 : !npu.ptr<ub>, !npu.ptr<gm>
    """)
    with pytest.raises(
        SimulationError,
        match=r"source gm \[4000, 4256\) is out of bounds \(gm_size 4096 bytes\)",
    ):
        simulate(prog, X)


def test_strided_dma_extent_is_checked():
    prog = _prog("""
        npu.dma mte2 %u, %g nburst 17 len 32 src_gap 224 : !npu.ptr<ub>, !npu.ptr<gm>
    """)
    with pytest.raises(SimulationError, match=r"source gm \[0, 4128\)"):
        simulate(prog, X)


def test_dynamic_address_misaligned_at_run_time():
    prog = _prog("""
        %c0 = arith.constant 0 : index
        %c2 = arith.constant 2 : index
        %c1 = arith.constant 1 : index
        %c16 = arith.constant 16 : index
        scf.for %i = %c0 to %c2 step %c1 {
          %off = arith.muli %i, %c16 : index
          %p = npu.ptr ub 0 + %off
          npu.vdup f16 %p scalar 0.0 repeat 1 : !npu.ptr<ub> loc("fill")
        }
    """)
    with pytest.raises(
        SimulationError,
        match=r'npu.vdup \(#\d+\) at loc\("fill"\): destination ub address 16 is not aligned to 32 bytes',
    ):
        simulate(prog, X)


def test_mmad_operand_over_capacity():
    prog = _prog("""
        %a = npu.ptr l0a 0
        %b = npu.ptr l0b 0
        %c = npu.ptr l0c 0
        npu.mmad f16 %c, %a, %b m 256 n 16 k 256 : !npu.ptr<l0c>, !npu.ptr<l0a>, !npu.ptr<l0b>
    """)
    with pytest.raises(
        SimulationError,
        match=r"npu.mmad \(#0\): A l0a \[0, 131072\) is out of bounds \(capacity 65536",
    ):
        simulate(prog, X)


def test_nonpositive_loop_step():
    prog = _prog("""
        %c0 = arith.constant 0 : index
        %c4 = arith.constant 4 : index
        scf.for %i = %c0 to %c4 step %c0 {
        }
    """)
    with pytest.raises(SimulationError, match="loop step 0 is not positive"):
        simulate(prog, X)


def test_scalar_division_by_zero():
    prog = _prog("""
        %c0 = arith.constant 0 : index
        %c4 = arith.constant 4 : index
        %q = arith.floordivsi %c4, %c0 : index loc("tile_count")
    """)
    with pytest.raises(
        SimulationError,
        match=r'arith.floordivsi \(#0\) at loc\("tile_count"\): division by zero',
    ):
        simulate(prog, X)


def test_inputs_are_checked():
    prog = _prog("")
    with pytest.raises(SimulationError, match=r"missing input 'x' \(float16\[1024\]\)"):
        simulate(prog, {})
    with pytest.raises(
        SimulationError,
        match=r"input 'x' has shape \[4\], the program expects \[1024\]",
    ):
        simulate(prog, {"x": np.zeros(4)})
    with pytest.raises(SimulationError, match="unknown input"):
        simulate(prog, {"x": np.zeros(1024), "z": np.zeros(1)})


def test_unsupported_op_in_a_kernel_is_an_assembly_error():
    text = """
    npu.program @p gm_size 64 {
      npu.kernel @k {
        %f = arith.constant 1.0 : f32
      }
    }"""
    with pytest.raises(AssemblyError, match="only integer constants"):
        assemble(parse_npu_mlir(text))
    text = """
    npu.program @p gm_size 64 {
      npu.kernel @k {
        %f = arith.constant 1 : index
        %g = arith.cmpi slt, %f, %f : index
      }
    }"""
    with pytest.raises(AssemblyError, match="arith.cmpi: not allowed in an npu.kernel"):
        assemble(parse_npu_mlir(text))


def test_unverified_program_is_refused():
    text = """
    npu.program @p gm_size 64 {
      npu.kernel @k {
        %u = npu.ptr ub 7
      }
    }"""
    with pytest.raises(AssemblyError, match="does not verify.*not aligned to 32 bytes"):
        assemble(parse_npu_mlir(text))


def test_constants_are_placed_in_gm():
    prog = _prog(
        """
        %gw = npu.ptr gm 2048
        npu.dma mte2 %u, %gw len 32 : !npu.ptr<ub>, !npu.ptr<gm>
        npu.set_flag mte2 -> mte3 event 0
        npu.wait_flag mte2 -> mte3 event 0
        %go = npu.ptr gm 3072
        npu.dma mte3 %go, %u len 32 : !npu.ptr<gm>, !npu.ptr<ub>
        """,
        consts="""npu.constant "w" at 2048 = dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]> : tensor<8xf32>
        npu.output "y" at 3072 : tensor<8xf32>""",
    )
    res = simulate(prog, X)
    np.testing.assert_array_equal(res.outputs["y"], np.arange(1, 9, dtype=np.float32))


def test_missing_resource_blob_is_reported():
    text = """
    npu.program @p gm_size 64 {
      npu.constant "r" at 0 = dense_resource<nowhere> : tensor<2xf16>
    }"""
    with pytest.raises(AssemblyError, match=r"no blob for dense_resource<nowhere>"):
        assemble(parse_npu_mlir(text))


def test_dense_resource_constant_bytes():
    text = """
    npu.program @p gm_size 64 {
      npu.constant "r" at 0 = dense_resource<r_blob> : tensor<2xf16>
    }
    {-#
      dialect_resources: {
        builtin: {
          r_blob: "0x02000000003C0040"
        }
      }
    #-}"""
    prog = assemble(parse_npu_mlir(text))
    data = np.frombuffer(prog.constants[0].data, np.float16)
    np.testing.assert_array_equal(data, [1.0, 2.0])
