"""The race detector and deadlock detection."""

from __future__ import annotations

import numpy as np
import pytest

from gedialects.npu import examples
from gedialects.npu import ops as npu
from target.assembler import assemble
from target.errors import DeadlockError, FlagBalanceError, RaceError
from target.run import parse_npu_mlir, random_inputs
from target.simulator import simulate

# The kernels of test_sim_kernels, sized so that every loop runs at least two
# iterations per buffer (a missing wait then shows as a real data race).
KERNELS = {
    "vector_add_double": lambda: examples.vector_add(1 << 16, tile=8192),
    "vector_add_single": lambda: examples.vector_add(
        1 << 16, tile=8192, double_buffer=False
    ),
    "vector_add_4core": lambda: examples.vector_add(1 << 16, tile=4096, block_dim=4),
    "matmul_2tiles_per_block": lambda: examples.matmul(block_dim=2),
    "row_sum": lambda: examples.row_sum(64, 256),
}


def _waits(module):
    return [op for op in module.walk() if isinstance(op, npu.WaitFlagOp)]


def _cases():
    for name, build in KERNELS.items():
        for i in range(len(_waits(build()))):
            yield pytest.param(name, i, id=f"{name}-wait{i}")


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_kernels_are_race_free(name):
    prog = assemble(KERNELS[name]())
    res = simulate(prog, random_inputs(prog), races="warn")
    assert res.profile.races == []


@pytest.mark.parametrize("name,index", list(_cases()))
def test_removing_any_wait_is_caught(name, index):
    module = KERNELS[name]()
    wait = _waits(module)[index]
    wait.detach()
    wait.erase()
    prog = assemble(module)
    with pytest.raises(RaceError) as info:
        simulate(prog, random_inputs(prog))
    # Waits inside the kernel guard data: removing one is a data race. The
    # closing waits only balance the "buffer free" flags: removing one leaves a
    # flag set for the next kernel on the core.
    if not isinstance(info.value, FlagBalanceError):
        assert "data race" in str(info.value)
        assert "no flag or barrier orders them" in str(info.value)


def test_missing_in_kernel_waits_are_data_races_not_only_imbalance():
    module = KERNELS["vector_add_double"]()
    kinds = []
    for i in range(len(_waits(module))):
        m = KERNELS["vector_add_double"]()
        w = _waits(m)[i]
        w.detach()
        w.erase()
        prog = assemble(m)
        try:
            simulate(prog, random_inputs(prog))
        except FlagBalanceError:
            kinds.append("balance")
        except RaceError:
            kinds.append("race")
    # 4 closing waits (2 buffers x 2 "free" flags), every other one a race
    assert kinds.count("balance") == 4
    assert kinds.count("race") == len(kinds) - 4


def _kernel(body: str, block_dim: int = 1, gm: int = 4096, extra: str = ""):
    text = f"""
    npu.program @p gm_size {gm} {{
      npu.input "x" at 0 : tensor<1024xf16>
      npu.output "y" at 2048 : tensor<1024xf16>
      npu.kernel @k {{
        %g = npu.ptr gm 0
        %gy = npu.ptr gm 2048
        %u = npu.ptr ub 0
        %u2 = npu.ptr ub 2048
        {body}
      }}
      npu.launch @k block_dim {block_dim} stream 0
      {extra}
    }}"""
    return assemble(parse_npu_mlir(text))


def _x():
    return {"x": np.ones(1024, np.float16)}


def test_race_message_names_both_instructions_and_locations():
    prog = _kernel("""
        npu.dma mte2 %u, %g len 2048 : !npu.ptr<ub>, !npu.ptr<gm> loc("load_x")
        npu.vadd f16 %u2, %u, %u repeat 8 : !npu.ptr<ub>, !npu.ptr<ub>, !npu.ptr<ub> loc("add1")
        npu.set_flag v -> mte3 event 0
        npu.wait_flag v -> mte3 event 0
        npu.dma mte3 %gy, %u2 len 2048 : !npu.ptr<gm>, !npu.ptr<ub>
    """)
    with pytest.raises(RaceError) as info:
        simulate(prog, _x())
    msg = str(info.value)
    assert "ub bytes [0, 2048)" in msg
    assert 'npu.vadd (#1) at loc("add1") on v reads' in msg
    assert 'npu.dma (#0) at loc("load_x") on mte2 writes' in msg


def test_barrier_all_orders_pipes():
    prog = _kernel("""
        npu.dma mte2 %u, %g len 2048 : !npu.ptr<ub>, !npu.ptr<gm>
        npu.pipe_barrier all
        npu.vadd f16 %u2, %u, %u repeat 8 : !npu.ptr<ub>, !npu.ptr<ub>, !npu.ptr<ub>
        npu.pipe_barrier all
        npu.dma mte3 %gy, %u2 len 2048 : !npu.ptr<gm>, !npu.ptr<ub>
    """)
    res = simulate(prog, _x())
    np.testing.assert_array_equal(res.outputs["y"], np.full(1024, 2, np.float16))


def test_strided_accesses_that_interleave_are_not_a_race():
    # MTE2 fills the even 32-byte chunks while V reads the odd ones.
    prog = _kernel("""
        npu.dma mte2 %u, %g len 32 : !npu.ptr<ub>, !npu.ptr<gm>
        npu.set_flag mte2 -> v event 0
        npu.wait_flag mte2 -> v event 0
        %odd = npu.ptr ub 32
        %even = npu.ptr ub 64
        npu.dma mte2 %even, %g nburst 8 len 32 dst_gap 32 : !npu.ptr<ub>, !npu.ptr<gm>
        npu.vadds f16 %u2, %odd scalar 1.0 repeat 1 mask 16 : !npu.ptr<ub>, !npu.ptr<ub>
        npu.set_flag mte2 -> v event 0
        npu.wait_flag mte2 -> v event 0
        npu.set_flag v -> mte3 event 0
        npu.wait_flag v -> mte3 event 0
        npu.dma mte3 %gy, %u2 len 2048 : !npu.ptr<gm>, !npu.ptr<ub>
    """)
    simulate(prog, _x())  # no RaceError


def test_wait_that_is_never_set_is_a_deadlock():
    prog = _kernel("""
        npu.wait_flag v -> mte2 event 3 loc("stuck")
        npu.dma mte2 %u, %g len 2048 : !npu.ptr<ub>, !npu.ptr<gm>
    """)
    with pytest.raises(
        DeadlockError,
        match=r'npu.wait_flag \(#0\) at loc\("stuck"\) on mte2 waits for v -> mte2 event 3',
    ):
        simulate(prog, _x())


def test_circular_waits_deadlock():
    prog = _kernel("""
        npu.wait_flag v -> mte2 event 0
        npu.set_flag mte2 -> v event 0
        npu.wait_flag mte2 -> v event 0
        npu.set_flag v -> mte2 event 0
    """)
    with pytest.raises(DeadlockError, match="never set"):
        simulate(prog, _x())


def test_wait_issued_before_its_set_is_fine():
    # MTE2 parks until V sets the flag later in program order.
    prog = _kernel("""
        npu.wait_flag v -> mte2 event 0
        npu.dma mte2 %u2, %g len 2048 : !npu.ptr<ub>, !npu.ptr<gm>
        npu.vdup f16 %u2 scalar 5.0 repeat 8 : !npu.ptr<ub>
        npu.set_flag v -> mte2 event 0
        npu.set_flag mte2 -> mte3 event 0
        npu.wait_flag mte2 -> mte3 event 0
        npu.dma mte3 %gy, %u2 len 2048 : !npu.ptr<gm>, !npu.ptr<ub>
    """)
    res = simulate(prog, _x())
    # the load ran after the vdup, as the flag demands
    np.testing.assert_array_equal(res.outputs["y"], np.ones(1024, np.float16))


def test_scalar_wait_and_barrier_deadlock():
    prog = _kernel("""
        npu.wait_flag mte3 -> s event 1 loc("scalar_wait")
    """)
    with pytest.raises(DeadlockError, match="scalar unit waits"):
        simulate(prog, _x())
    prog = _kernel("""
        npu.wait_flag v -> mte2 event 0
        npu.pipe_barrier all
        npu.set_flag v -> mte2 event 0
    """)
    with pytest.raises(DeadlockError, match="waits for every pipe"):
        simulate(prog, _x())


def test_blocks_writing_the_same_gm_bytes_race():
    prog = _kernel(
        """
        npu.dma mte2 %u, %g len 2048 : !npu.ptr<ub>, !npu.ptr<gm>
        npu.set_flag mte2 -> mte3 event 0
        npu.wait_flag mte2 -> mte3 event 0
        npu.dma mte3 %gy, %u len 2048 : !npu.ptr<gm>, !npu.ptr<ub>
    """,
        block_dim=2,
    )
    with pytest.raises(
        RaceError, match=r"between blocks 0 and 1 on gm bytes \[2048, 4096\)"
    ):
        simulate(prog, _x())
    res = simulate(prog, _x(), races="warn")
    assert len(res.profile.races) == 1


def test_launches_on_two_streams_need_an_event():
    body = """
        npu.dma mte2 %u, %g len 2048 : !npu.ptr<ub>, !npu.ptr<gm>
        npu.set_flag mte2 -> mte3 event 0
        npu.wait_flag mte2 -> mte3 event 0
        npu.dma mte3 %gy, %u len 2048 : !npu.ptr<gm>, !npu.ptr<ub>
    """
    racy = _kernel(body, extra="npu.launch @k block_dim 1 stream 1")
    with pytest.raises(RaceError, match="no stream event orders them"):
        simulate(racy, _x())
    ordered = _kernel(
        body,
        extra="""
      npu.stream_record stream 0 event 0
      npu.stream_wait stream 1 event 0
      npu.launch @k block_dim 1 stream 1""",
    )
    res = simulate(ordered, _x())
    first, second = res.profile.kernels
    assert second.start == first.start + first.cycles  # waited for stream 0
    assert res.profile.total_cycles == first.cycles + second.cycles
    # the trace draws the event: a flow from stream 0's launch to stream 1's
    from target.profile import chrome_trace

    assert res.profile.stream_flows == [(0, first.cycles, 1, first.cycles, 0)]
    flows = [e for e in chrome_trace(res.profile)["traceEvents"] if e.get("cat") == "stream"]
    (start,), (finish,) = ([e for e in flows if e["ph"] == ph] for ph in ("s", "f"))
    assert (start["tid"], finish["tid"], start["id"]) == (0, 1, finish["id"])
    assert start["ts"] < finish["ts"] == second.start / res.profile.clock_mhz


def test_independent_streams_overlap_in_time():
    prog = _kernel(
        """
        npu.dma mte2 %u, %g len 2048 : !npu.ptr<ub>, !npu.ptr<gm>
    """,
        extra="npu.launch @k block_dim 1 stream 1",
    )
    res = simulate(prog, _x())
    a, b = res.profile.kernels
    assert a.start == b.start == 0
    assert res.profile.total_cycles == max(a.cycles, b.cycles)


def test_ge_run_runs_the_race_detector_on_request(tmp_path, capsys):
    from gedialects.tools import ge_run

    racy = tmp_path / "racy.mlir"
    racy.write_text("""
    npu.program @p gm_size 4096 {
      npu.input "x" at 0 : tensor<1024xf16>
      npu.output "y" at 2048 : tensor<1024xf16>
      npu.kernel @k {
        %g = npu.ptr gm 0
        %gy = npu.ptr gm 2048
        %u = npu.ptr ub 0
        npu.dma mte2 %u, %g len 2048 : !npu.ptr<ub>, !npu.ptr<gm>
        npu.set_flag mte2 -> mte3 event 0
        npu.wait_flag mte2 -> mte3 event 0
        npu.dma mte3 %gy, %u len 2048 : !npu.ptr<gm>, !npu.ptr<ub>
      }
      npu.launch @k block_dim 2 stream 0
    }""")
    assert ge_run.main([str(racy)]) == 0  # by default no detector: the blocks run in lock-step
    capsys.readouterr()
    assert ge_run.main([str(racy), "--races", "error"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "data race in kernel 'k' between blocks 0 and 1" in err[0]
    assert ge_run.main([str(racy), "--races", "warn"]) == 0
    assert "data race" in capsys.readouterr().out
