"""Host memory and copies between GM and host memory (`npu.memcpy`) on the
simulator: what they move, what they cost (the target config's `host_link`),
races against launches (GM) and other copies (host memory), the profile, and
the offline model."""

from __future__ import annotations

import csv
import json
import math
from dataclasses import replace

import numpy as np
import pytest
from xdsl.dialects.builtin import StringAttr

from gedialects.npu import ops as npu
from gedialects.npu.builder import ProgramBuilder
from gedialects.npu.ops import DmaOp
from target import program as P
from target.assembler import assemble
from target.config import ConfigError, config_from_dict, load_target
from target.errors import AssemblyError, RaceError, SimulationError
from target.profile import HOST_LINK_PID, MEMCPY, chrome_trace, format_profile, op_summary, write_op_summary
from target.program import Program, read_om, write_om
from target.run import parse_npu_mlir
from target.simulator import simulate

X = np.linspace(-3, 3, 16).astype(np.float16)  # 32 bytes
Y = np.arange(16).astype(np.float16)


def _copy_kernel(pb: ProgramBuilder, name: str, src: int, dst: int, nbytes: int = 32) -> None:
    """A kernel copying GM [src, +nbytes) to GM [dst, +nbytes) through UB."""
    with pb.kernel(name) as k:
        u = k.ptr("ub", 0)
        k.emit(DmaOp("mte2", u, k.ptr("gm", src), len=nbytes))
        k.set_flag("mte2", "mte3", 0)
        k.wait_flag("mte2", "mte3", 0)
        k.emit(DmaOp("mte3", k.ptr("gm", dst), u, len=nbytes))


def _offload_program(reload_to: int) -> Program:
    """x -> t (GM 128); t -> host; y overwrites t; host -> GM `reload_to`.
    Outputs: t (GM 128) and z (GM 256)."""
    pb = ProgramBuilder("offload", gm_size=1024, host_size=256)
    pb.input("x", 0, (16,), "f16")
    pb.input("y", 64, (16,), "f16")
    pb.output("t", 128, (16,), "f16")
    pb.output("z", 256, (16,), "f16")
    _copy_kernel(pb, "k0_x_to_t", 0, 128)
    _copy_kernel(pb, "k1_y_to_t", 64, 128)
    pb.launch("k0_x_to_t")
    pb.memcpy("t_offload", "d2h", 128, 96, 32).attributes["ge.tensor"] = StringAttr("t")
    pb.launch("k1_y_to_t")
    pb.memcpy("t_reload", "h2d", reload_to, 96, 32)
    module = pb.module()
    module.verify()
    return assemble(module)


# ---------------------------------------------------------------------------
# What copies move
# ---------------------------------------------------------------------------


def test_a_tensor_offloaded_and_overwritten_comes_back_from_host():
    res = simulate(_offload_program(reload_to=256), {"x": X, "y": Y})
    np.testing.assert_array_equal(res.outputs["t"], Y)  # overwritten in GM after the d2h
    np.testing.assert_array_equal(res.outputs["z"], X)  # and reloaded elsewhere from host memory


def test_a_reload_to_the_same_place_restores_it():
    res = simulate(_offload_program(reload_to=128), {"x": X, "y": Y})
    np.testing.assert_array_equal(res.outputs["t"], X)
    np.testing.assert_array_equal(res.outputs["z"], np.zeros(16, np.float16))  # GM starts zeroed


def test_the_program_records_host_size_and_copies():
    prog = _offload_program(reload_to=256)
    assert prog.host_size == 256
    assert prog.memcpy_tasks == (
        P.MemcpyTask("t_offload", "d2h", 128, 96, 32, tensor="t"),
        P.MemcpyTask("t_reload", "h2d", 256, 96, 32),
    )
    assert [e[0] for e in prog.schedule] == ["launch", "memcpy", "launch", "memcpy"]


def test_host_size_is_absent_unless_positive():
    assert npu.ProgramOp("p", 64).host_bytes == 0
    assert "host_size" not in npu.ProgramOp("p", 64, host_size=0).properties
    assert npu.ProgramOp("p", 64, host_size=128).host_bytes == 128


def test_an_unknown_direction_word_is_a_parse_error():
    with pytest.raises(Exception, match="expected a direction, d2h or h2d, got 'sideways'"):
        parse_npu_mlir("npu.program @p gm_size 64 host_size 64 {\n"
                       "  npu.memcpy @c sideways gm 0 host 0 bytes 8 stream 0\n}")


# ---------------------------------------------------------------------------
# Cost, streams, races
# ---------------------------------------------------------------------------


COPIES = """
npu.program @c gm_size 1024 host_size 1024 {{
  npu.input "x" at 0 : tensor<16xf16>
  npu.output "z" at 256 : tensor<16xf16>
  npu.kernel @k0_copy {{
    %g = npu.ptr gm 0
    %o = npu.ptr gm 128
    %u = npu.ptr ub 0
    npu.dma mte2 %u, %g len 32 : !npu.ptr<ub>, !npu.ptr<gm>
    npu.set_flag mte2 -> mte3 event 0
    npu.wait_flag mte2 -> mte3 event 0
    npu.dma mte3 %o, %u len 32 : !npu.ptr<gm>, !npu.ptr<ub>
  }}
  {body}
}}
"""


def _copies(*lines: str) -> Program:
    """A program running `lines` (copies, launches of @k0_copy, which copies
    x at GM 0 to GM 128, 32 bytes; stream events) in order."""
    return assemble(parse_npu_mlir(COPIES.format(body="\n  ".join(lines))))


@pytest.mark.parametrize("target", ["davinci-910", "davinci-910b"])
def test_a_copy_costs_latency_plus_bytes_over_the_link_rate(target):
    cfg = load_target(target)
    link = cfg.host_link
    n = 1000  # not a multiple of either rate
    prog = _copies(f"npu.memcpy @a d2h gm 0 host 0 bytes {n} stream 0",
                   f"npu.memcpy @b h2d gm 0 host 0 bytes {n} stream 0")
    res = simulate(prog, {"x": X}, cfg)
    a, b = res.profile.kernels
    want = link.latency_cycles + math.ceil(n / link.bytes_per_cycle)
    assert a.cycles == b.cycles == want == cfg.memcpy_cycles(n)
    assert (a.start, b.start) == (0, want)  # in its stream's order
    assert res.profile.total_cycles == 2 * want
    assert res.profile.memcpy_cycles == 2 * want


def test_the_presets_link_numbers():
    """PCIe 4.0 x16 at an effective 25 GB/s and 5 us per copy (docs/NPU.md section 6)."""
    assert load_target("davinci-910").memcpy_cycles(25_000) == 5000 + 1000
    assert load_target("davinci-910b").memcpy_cycles(27_000) == 9250 + 2000


def test_a_copy_on_another_stream_overlaps_a_launch():
    prog = _copies("npu.launch @k0_copy block_dim 1 stream 0",
                   "npu.memcpy @c d2h gm 0 host 0 bytes 32 stream 1")
    res = simulate(prog, {"x": X})
    launch, copy = res.profile.kernels
    assert launch.start == copy.start == 0
    assert res.profile.total_cycles == max(launch.cycles, copy.cycles) < launch.cycles + copy.cycles


RACE_LINES = ("npu.launch @k0_copy block_dim 1 stream 0",
              "npu.memcpy @t_offload d2h gm 128 host 0 bytes 32 stream 1")
ORDER = ("npu.stream_record stream 0 event 0", "npu.stream_wait stream 1 event 0")


def test_a_copy_reading_what_an_unordered_launch_writes_is_a_race():
    prog = _copies(*RACE_LINES)
    with pytest.raises(
        RaceError,
        match=r"^data race between launch of 'k0_copy' \(stream 0\) and host copy 't_offload' \(stream 1\) "
        r"on gm bytes \[128, 160\): no stream event orders them$",
    ):
        simulate(prog, {"x": X})
    assert len(simulate(prog, {"x": X}, races="warn").profile.races) == 1


def test_a_stream_event_orders_the_copy_after_the_launch():
    prog = _copies(RACE_LINES[0], *ORDER, RACE_LINES[1], "npu.memcpy @back h2d gm 256 host 0 bytes 32 stream 1")
    res = simulate(prog, {"x": X})
    np.testing.assert_array_equal(res.outputs["z"], X)
    launch, copy, _ = res.profile.kernels
    assert copy.start == launch.start + launch.cycles


def test_a_launch_writing_what_an_unordered_copy_writes_is_a_race():
    prog = _copies("npu.memcpy @in h2d gm 128 host 0 bytes 64 stream 1", "npu.launch @k0_copy block_dim 1 stream 0")
    with pytest.raises(RaceError, match=r"host copy 'in' \(stream 1\) and launch of 'k0_copy' \(stream 0\) "
                                        r"on gm bytes \[128, 160\)"):
        simulate(prog, {"x": X})


@pytest.mark.parametrize(
    "second,race",
    [
        ("npu.memcpy @b h2d gm 256 host 16 bytes 32 stream 1", "[16, 32)"),  # reads what @a writes
        ("npu.memcpy @b d2h gm 0 host 16 bytes 32 stream 1", "[16, 32)"),  # writes it too
        ("npu.memcpy @b d2h gm 0 host 32 bytes 32 stream 1", None),  # other host bytes
    ],
)
def test_unordered_copies_race_on_host_bytes(second, race):
    prog = _copies("npu.memcpy @a d2h gm 0 host 0 bytes 32 stream 0", second)
    if race is None:
        simulate(prog, {"x": X})
        return
    with pytest.raises(RaceError, match=rf"^data race between host copy 'a' \(stream 0\) and host copy 'b' "
                                        rf"\(stream 1\) on host bytes \[{race[1:-1]}\): no stream event orders them$"):
        simulate(prog, {"x": X})


def test_copies_reading_the_same_host_bytes_or_ordered_do_not_race():
    reads = _copies("npu.memcpy @a h2d gm 256 host 0 bytes 32 stream 0",
                    "npu.memcpy @b h2d gm 512 host 0 bytes 32 stream 1")
    simulate(reads, {"x": X})
    ordered = _copies("npu.memcpy @a d2h gm 0 host 0 bytes 32 stream 0", *ORDER,
                      "npu.memcpy @b h2d gm 256 host 0 bytes 32 stream 1")
    np.testing.assert_array_equal(simulate(ordered, {"x": X}).outputs["z"], X)


# ---------------------------------------------------------------------------
# Targets without a host link
# ---------------------------------------------------------------------------


def _preset(name: str = "davinci-910") -> dict:
    with open(load_target(name).path) as f:
        return json.load(f)


def test_a_target_without_host_link_loads_but_cannot_run_a_copy():
    data = _preset()
    del data["host_link"]
    cfg = config_from_dict(data, "old.json")
    assert cfg.host_link is None
    res = simulate(_copies(), {"x": X}, cfg)  # no copies: runs as before
    assert res.profile.memcpy_cycles == 0
    with pytest.raises(SimulationError) as info:
        simulate(_copies("npu.memcpy @c d2h gm 0 host 0 bytes 32 stream 0"), {"x": X}, cfg)
    text = str(info.value)
    assert "\n" not in text and "target config 'old.json' lacks host_link" in text
    with pytest.raises(ConfigError, match="lacks host_link"):
        cfg.memcpy_cycles(32)


@pytest.mark.parametrize(
    "link,message",
    [
        ({"bytes_per_cycle": 0, "latency_cycles": 10}, "host_link.bytes_per_cycle must be a positive number"),
        ({"bytes_per_cycle": 8, "latency_cycles": 1.5}, "host_link.latency_cycles must be an integer in [0, "),
        ({"bytes_per_cycle": 8}, "host_link: missing key 'latency_cycles'"),
        ({"bytes_per_cycle": 8, "latency_cycles": 10, "lanes": 16}, "host_link: unknown keys ['lanes']"),
        (25, "host_link: expected an object, got int"),
    ],
)
def test_the_host_link_section_is_validated(link, message):
    data = _preset()
    data["host_link"] = link
    with pytest.raises(ConfigError) as info:
        config_from_dict(data, "x.json")
    assert message in str(info.value)


# ---------------------------------------------------------------------------
# Profile
# ---------------------------------------------------------------------------


def _profiled():
    prog = _copies(RACE_LINES[0], *ORDER, RACE_LINES[1],
                   "npu.memcpy @t_reload h2d gm 256 host 0 bytes 32 stream 1 attributes "
                   '{ge.source = "reload of t", ge.tensor = "t"}')
    return simulate(prog, {"x": X}).profile


def test_copies_are_memcpy_rows_of_the_op_summary(tmp_path):
    profile = _profiled()
    rows = {r["Kernel"]: r for r in op_summary(profile)}
    assert set(rows) == {"k0_copy", "t_offload", "t_reload"}
    reload = rows["t_reload"]
    assert (reload["Task Type"], reload["OP Type"], reload["Bound"], reload["Stream ID"]) == (MEMCPY, "memcpy", "host", 1)
    assert reload["Op Name"] == "reload of t" and reload["GM Bytes"] == 32 and reload["aic_mac_ratio"] == ""
    assert reload["Cycles"] == load_target("davinci-910").memcpy_cycles(32)
    copies = [k for k in profile.kernels if k.task_type == MEMCPY]
    assert [k.bytes for k in copies] == [{"gm_host": 32}, {"host_gm": 32}]
    assert copies[1].cores == 0 and copies[1].info == {"kind": "memcpy", "direction": "h2d", "source": "reload of t",
                                                       "tensor": "t"}
    assert (profile.bytes_to_host, profile.bytes_from_host) == (32, 32)
    assert profile.memcpy_cycles == sum(k.cycles for k in copies)
    write_op_summary(profile, tmp_path / "ops.csv")
    with open(tmp_path / "ops.csv") as f:
        assert sorted(r["Task Type"] for r in csv.DictReader(f)) == ["AI_CORE", MEMCPY, MEMCPY]


def test_the_text_profile_counts_copies_and_their_cycles():
    profile = _profiled()
    table = format_profile(profile)
    assert "1 launch(es), 2 host copies" in table
    assert (f"host offload: 2 host copies, 32 bytes to host and 32 from host, {profile.memcpy_cycles} cycles"
            in table)
    assert "  t_reload: h2d copy on the host link (t: reload of t)" in table
    assert "; host memory 1024 bytes" in table
    row = next(line for line in table.splitlines() if line.startswith("reload of t"))
    assert row.split()[4:6] == ["MEMCPY", "-"] and row.split()[-1] == "host"


def test_the_chrome_trace_has_a_host_link_track_per_stream():
    profile = _profiled()
    trace = chrome_trace(profile)
    events = trace["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    assert names[HOST_LINK_PID] == "Host link"
    spans = [e for e in events if e.get("ph") == "X" and e["pid"] == HOST_LINK_PID]
    assert [(e["name"], e["tid"], e["args"]["task_type"]) for e in spans] == [
        ("t_offload", 1, MEMCPY), ("t_reload", 1, MEMCPY)]
    threads = [e for e in events if e["name"] == "thread_name" and e["pid"] == HOST_LINK_PID]
    assert [t["args"]["name"] for t in threads] == ["stream 1"]
    assert trace["otherData"]["memcpy_cycles"] == profile.memcpy_cycles
    assert trace["otherData"]["bytes_to_host"] == 32


def test_the_arena_counts_one_entry_per_copy_too():
    """ge.arena_live_bytes has one count per launch, AI-CPU task and copy;
    the device-memory track has a point at each."""
    prog = _copies("npu.launch @k0_copy block_dim 1 stream 0", "npu.memcpy @c d2h gm 128 host 0 bytes 32 stream 0")
    counted = replace(prog, meta={"arena_live_bytes": "32;32"})
    trace = chrome_trace(simulate(counted, {"x": X}).profile)
    assert len([e for e in trace["traceEvents"] if e.get("ph") == "C"]) == 3
    with pytest.raises(P.InvalidField, match="expected 2 byte counts"):
        P.validate(replace(prog, meta={"arena_live_bytes": "32"}))


# ---------------------------------------------------------------------------
# Offline model
# ---------------------------------------------------------------------------


@pytest.fixture
def om(tmp_path):
    path = tmp_path / "c.om"
    _offload_program(reload_to=256).save(path)
    return path


def test_offline_model_round_trip_keeps_copies_outputs_and_cycles(om):
    prog = _offload_program(reload_to=256)
    loaded = Program.load(om)
    assert loaded == prog and loaded.host_size == 256 and loaded.memcpy_tasks == prog.memcpy_tasks
    header, _ = read_om(om)
    assert header["version"] == 5 and header["host_size"] == 256
    assert header["memcpy_tasks"][0] == {"name": "t_offload", "direction": "d2h", "gm_offset": 128,
                                         "host_offset": 96, "nbytes": 32, "source": "", "tensor": "t"}
    a, b = simulate(prog, {"x": X, "y": Y}), simulate(loaded, {"x": X, "y": Y})
    np.testing.assert_array_equal(b.outputs["z"], X)
    assert [k.cycles for k in a.profile.kernels] == [k.cycles for k in b.profile.kernels]


def _rewrite(path, edit) -> None:
    header, arrays = read_om(path)
    edit(header)
    write_om(path, header, arrays)  # a valid checksum: only field validation can refuse it


def _copy0(h) -> dict:
    return h["memcpy_tasks"][0]


BAD_FIELDS = [
    (lambda h: _copy0(h).update(direction="sideways"),
     "memcpy_tasks[0] 't_offload'.direction: 'sideways' is not one of d2h, h2d"),
    (lambda h: _copy0(h).update(nbytes=0), "memcpy_tasks[0] 't_offload'.nbytes: 0 is outside [1, "),
    (lambda h: _copy0(h).update(nbytes="32"), "memcpy_tasks[0] 't_offload'.nbytes: expected an integer, got '32'"),
    (lambda h: _copy0(h).update(gm_offset=1000),
     "memcpy_tasks[0] 't_offload'.gm_offset: GM [1000, 1032) is outside gm_size 1024"),
    (lambda h: _copy0(h).update(host_offset=240),
     "memcpy_tasks[0] 't_offload'.host_offset: host [240, 272) is outside host_size 256"),
    (lambda h: h.update(host_size=0), "memcpy_tasks[0] 't_offload'.host_offset: host [96, 128) is outside host_size 0"),
    (lambda h: h.update(host_size=-1), "host_size: -1 is outside [0, "),
    (lambda h: _copy0(h).update(tensor=7), "memcpy_tasks[0] 't_offload'.tensor: expected a string, got 7"),
    (lambda h: _copy0(h).update(name="k0_x_to_t"),
     "memcpy_tasks[0] 'k0_x_to_t'.name: empty, or the name of an earlier kernel or task"),
    (lambda h: _copy0(h).pop("source"), "memcpy_tasks[0]: missing key 'source'"),
    (lambda h: _copy0(h).update(lanes=16), "memcpy_tasks[0]: unknown key 'lanes'"),
    (lambda h: h.pop("memcpy_tasks"), "header: missing key 'memcpy_tasks'"),
    (lambda h: h["schedule"][1].__setitem__(1, 2), "schedule[1] (memcpy).task: 2 is outside [0, 1]"),
    (lambda h: h["schedule"].append(["memcpy", 0, 0]), "memcpy_tasks[0] 't_offload': scheduled 2 times"),
    (lambda h: h["schedule"].pop(), "memcpy_tasks[1] 't_reload': scheduled 0 times"),
    (lambda h: h["schedule"][1].append(0), "schedule[1]: expected [launch"),
]


@pytest.mark.parametrize("edit,field", BAD_FIELDS, ids=[f for _, f in BAD_FIELDS])
def test_a_bad_copy_field_is_refused_with_one_line(om, edit, field):
    _rewrite(om, edit)
    with pytest.raises(AssemblyError) as info:
        Program.load(om)
    text = str(info.value)
    assert "\n" not in text and text.startswith(f"{om}: invalid offline model: "), text
    assert field in text, text


def test_an_h2d_copy_must_not_write_a_constant(tmp_path):
    pb = ProgramBuilder("c", gm_size=1024, host_size=64)
    pb.constant("w", 512, np.ones(16), "f16")
    pb.memcpy("c", "h2d", 0, 0, 32)
    prog = assemble(pb.module())
    prog.save(tmp_path / "c.om")
    _rewrite(tmp_path / "c.om", lambda h: _copy0(h).update(gm_offset=520))
    with pytest.raises(AssemblyError, match=r"memcpy_tasks\[0\] 'c': GM \[520, 552\) overlaps constants\[0\] 'w'"):
        Program.load(tmp_path / "c.om")


def test_a_version_4_file_loads_without_host_memory(tmp_path):
    """Version 5 added host memory and copies; a version-4 file has neither
    key and loads as a program without them."""
    pb = ProgramBuilder("v4", gm_size=1024)
    pb.input("x", 0, (16,), "f16")
    pb.output("t", 128, (16,), "f16")
    _copy_kernel(pb, "k0_x_to_t", 0, 128)
    pb.launch("k0_x_to_t")
    path = tmp_path / "v4.om"
    assemble(pb.module()).save(path)

    def as_version_4(h):
        h["version"] = 4
        del h["host_size"], h["memcpy_tasks"]

    _rewrite(path, as_version_4)
    loaded = Program.load(path)
    assert (loaded.host_size, loaded.memcpy_tasks) == (0, ())
    np.testing.assert_array_equal(simulate(loaded, {"x": X}).outputs["t"], X)
