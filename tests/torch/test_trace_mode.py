"""Trace mode: torch programs imported directly (torch.export -> graph dialect),
`torch.compile(backend="gedialects")` and `gedialects.compile`, on the zoo's
families written in torch (families.py), checked against eager torch."""

from __future__ import annotations

import collections
import io
import logging

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import families  # noqa: E402  (tests/torch/, on sys.path as the test's directory)

import gedialects  # noqa: E402
from gedialects.api import CompileError  # noqa: E402
from gedialects.numerics import assert_close  # noqa: E402

FP32 = "must_keep_origin_dtype"

# torch's own deprecations and the legacy ONNX exporter's tracer notes
pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
    pytest.mark.filterwarnings("ignore::torch.jit.TracerWarning"),
]


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def _as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _eager(model, inputs):
    with torch.no_grad():
        return _as_tuple(model(*inputs))


@pytest.mark.parametrize("name", families.FAMILIES)
def test_torch_compile_matches_eager(name):
    """Every family through the registered backend (by name: the entry point),
    on the simulated NPU, in fp32: eager torch's outputs."""
    model, inputs = families.build(name)
    want = _eager(model, inputs)
    compiled = torch.compile(model, backend="gedialects", options={"precision_mode": FP32})
    with torch.no_grad():
        got = _as_tuple(compiled(*inputs))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert isinstance(g, torch.Tensor) and g.shape == w.shape and g.dtype == w.dtype
        assert_close(g.numpy(), w.numpy(), FP32, err_msg=name)
        assert float(w.std()) > 0.05  # meaningful activations, not a constant


@pytest.mark.parametrize("name", ["resnet", "bert"])
def test_torch_compile_force_fp16(name):
    """force_fp16 (the default precision), calibrated on the call's inputs:
    the documented normwise criterion."""
    model, inputs = families.build(name)
    want = _eager(model, inputs)
    compiled = torch.compile(model, backend="gedialects")
    with torch.no_grad():
        got = _as_tuple(compiled(*inputs))
    for g, w in zip(got, want):
        assert_close(g.numpy(), w.numpy(), "force_fp16", err_msg=name)


def _fusion_remarks(compiled) -> collections.Counter:
    return collections.Counter((r.kind, r.rule) for r in compiled.remarks if r.rule.endswith("FusionPass"))


@pytest.mark.parametrize("name", families.FAMILIES)
def test_trace_and_parse_mode_agree(name):
    """The same model traced (torch.export) and parsed (ONNX, exported without
    the exporter's own folding, opset 20 so GELU is one op in both) gets the
    same fusions and the same kernels."""
    import onnx

    model, inputs = families.build(name)
    traced = gedialects.compile(model, inputs, precision_mode=FP32)
    buffer = io.BytesIO()
    torch.onnx.export(model, inputs, buffer, dynamo=False, opset_version=20, do_constant_folding=False,
                      input_names=traced.input_names)
    parsed = gedialects.compile(onnx.load_from_string(buffer.getvalue()), precision_mode=FP32)
    assert _fusion_remarks(traced) == _fusion_remarks(parsed)
    assert sum(_fusion_remarks(traced).values()) > 0
    assert traced.kernels == parsed.kernels
    assert traced.compiled.kernel_kinds == parsed.compiled.kernel_kinds
    assert traced.aicpu == parsed.aicpu == 0  # every family entirely on the AI core


def test_locations_are_module_paths():
    model, inputs = families.build("resnet")
    compiled = gedialects.compile(model, inputs, precision_mode=FP32)
    applied = [r for r in compiled.remarks if r.rule == "ConvBatchnormFusionPass" and r.kind == "applied"]
    assert {r.where for r in applied} >= {'loc("conv1")', 'loc("layer1.conv1")', 'loc("layer2.downsample.0")'}
    assert any("layer2.downsample.1" in name for r in applied for name in r.absorbed)


def test_python_api_run_save_profile(tmp_path):
    """gedialects.compile: numpy in gives numpy out, torch in gives torch out;
    the program saves as an .om that ge-run simulates to the same outputs."""
    from gedialects.tools.ge_run import main as ge_run

    model, inputs = families.build("mobilenet_v2")
    compiled = gedialects.compile(model, inputs, precision_mode=FP32)
    want = _eager(model, inputs)[0].numpy()
    out = compiled(inputs[0].numpy())
    assert isinstance(out, np.ndarray)
    assert_close(out, want, FP32)
    assert "conv" in compiled.profile_table()
    om = tmp_path / "m.om"
    compiled.save(str(om))
    np.savez(tmp_path / "in.npz", **{compiled.input_names[0]: inputs[0].numpy()})
    assert ge_run([str(om), "--inputs", str(tmp_path / "in.npz"), "--output", str(tmp_path / "out.npz")]) == 0
    np.testing.assert_array_equal(np.load(tmp_path / "out.npz")[compiled.output_names[0]], out)


def test_reference_backend():
    model, inputs = families.build("gpt")
    compiled = torch.compile(model, backend="gedialects", options={"backend": "reference"})
    with torch.no_grad():
        got = compiled(*inputs)
    assert_close(got.numpy(), _eager(model, inputs)[0].numpy(), FP32)


class _WithBreak(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc1, self.fc2 = torch.nn.Linear(8, 16), torch.nn.Linear(16, 4)

    def forward(self, x):
        y = torch.relu(self.fc1(x))
        torch._dynamo.graph_break()
        return self.fc2(y)


def test_graph_break_compiles_subgraphs_with_remarks(caplog):
    model = _WithBreak().eval()
    x = torch.randn(2, 8)
    compiled = torch.compile(model, backend="gedialects", options={"precision_mode": FP32})
    with caplog.at_level(logging.INFO, logger="gedialects.torch"), torch.no_grad():
        got = compiled(x)
    compiling = [r.getMessage() for r in caplog.records if "compiling" in r.getMessage()]
    assert len(compiling) == 2, compiling
    assert_close(got.numpy(), _eager(model, (x,))[0].numpy(), FP32)


def test_new_shape_respecialises_with_a_remark(caplog):
    model = _WithBreak().eval()
    compiled = torch.compile(model, backend="gedialects", options={"precision_mode": FP32})
    with caplog.at_level(logging.INFO, logger="gedialects.torch"), torch.no_grad():
        for batch in (2, 3, 2):
            x = torch.randn(batch, 8)
            assert_close(compiled(x).numpy(), _eager(model, (x,))[0].numpy(), FP32)
    messages = [r.getMessage() for r in caplog.records]
    assert any("re-specialising" in m and "[3, 8]" in m for m in messages), messages


def test_weight_changed_in_place_respecialises(caplog):
    model = _WithBreak().eval()
    x = torch.randn(2, 8)
    compiled = torch.compile(model, backend="gedialects", options={"precision_mode": FP32})
    with torch.no_grad():
        compiled(x)
        model.fc2.weight.mul_(2.0)
        with caplog.at_level(logging.INFO, logger="gedialects.torch"):
            got = compiled(x)
    assert any("weight changed" in r.getMessage() for r in caplog.records)
    assert_close(got.numpy(), _eager(model, (x,))[0].numpy(), FP32)


def test_unknown_option_is_one_line():
    compiled = torch.compile(_WithBreak().eval(), backend="gedialects", options={"precison_mode": FP32})
    with pytest.raises(Exception, match="unknown torch.compile option.*precison_mode"):
        compiled(torch.randn(2, 8))


class _Sorts(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(5, 5)

    def forward(self, x):
        return torch.sort(self.proj(x), dim=-1).values


def test_unsupported_aten_op_names_op_and_module():
    with pytest.raises(CompileError) as e:
        gedialects.compile(_Sorts().eval(), (torch.randn(2, 5),))
    message = str(e.value)
    assert "\n" not in message
    assert "unsupported ATen operator 'aten.sort.default'" in message and "node 'sort'" in message


class _MaskedAttention(torch.nn.Module):
    """SDPA with a boolean mask that hides every key from the last query:
    torch's safe softmax makes that row 0, where a plain softmax gives NaN."""

    def forward(self, q, k, v):
        mask = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool)
        mask[-1] = False
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)


@pytest.mark.parametrize("backend", ["reference", "npu"])
def test_safe_softmax_of_fully_masked_rows_is_zero(backend):
    gen = torch.Generator().manual_seed(11)
    q, k, v = (torch.randn(1, 2, 8, 16, generator=gen) for _ in range(3))
    model = _MaskedAttention().eval()
    want = _eager(model, (q, k, v))[0].numpy()
    assert np.all(want[..., -1, :] == 0) and np.all(np.isfinite(want))
    compiled = gedialects.compile(model, (q, k, v), backend=backend, precision_mode=FP32)
    assert_close(compiled(q, k, v).numpy(), want, FP32)
    assert compiled.aicpu == 0


def test_floor_division_is_refused():
    with pytest.raises(CompileError, match="division with rounding_mode='floor' is not supported"):
        gedialects.compile(_Lambda(lambda x: x // 2).eval(), (torch.randn(2, 3),), backend="reference")


def test_training_mode_batch_norm_is_refused():
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4)).train()
    program = torch.export.export(model, (torch.randn(1, 3, 8, 8),))
    with pytest.raises(CompileError, match="mutates .*running_mean.*model.eval"):
        gedialects.compile(program)


def test_dynamic_shapes_are_refused():
    model = torch.nn.Linear(4, 4).eval()
    batch = torch.export.Dim("batch", min=2)
    program = torch.export.export(model, (torch.randn(3, 4),), dynamic_shapes=({0: batch},))
    with pytest.raises(CompileError, match="dynamic dim.*static shapes"):
        gedialects.compile(program)


def test_module_without_example_inputs():
    with pytest.raises(CompileError, match="needs example_inputs"):
        gedialects.compile(torch.nn.ReLU())


def test_wrong_input_shape_is_one_line():
    model, inputs = families.build("resnet")
    compiled = gedialects.compile(model, inputs, backend="reference")
    with pytest.raises(CompileError, match=r"compiled for \[1, 3, 32, 32\]"):
        compiled(torch.randn(1, 3, 16, 16))


ELEMENTWISE_CASES = {
    "hardswish_hardsigmoid": (lambda x: torch.nn.functional.hardswish(x) + torch.nn.functional.hardsigmoid(x), (2, 8)),
    "clamp_leaky": (lambda x: torch.nn.functional.leaky_relu(x.clamp(-0.5, 2.0), 0.2), (2, 8)),
    "rsqrt_pow": (lambda x: torch.rsqrt(x.abs() + 1) * x.pow(2), (3, 5)),
    "where_compare": (lambda x: torch.where(x > 0.1, x, -x) + (x != 0).float(), (4, 4)),
    "softmax_log_softmax": (lambda x: torch.softmax(x, 1) + torch.log_softmax(x, -1), (2, 7)),
    "reductions": (lambda x: x.sum(-1, keepdim=True) + x.amax(-1, keepdim=True) + x.mean(), (3, 6)),
    "slice_cat_split": (lambda x: torch.cat([x[:, 1:3], *x.split([2, 2], dim=1)], dim=1), (2, 4)),
    "pad_avg_pool": (lambda x: torch.nn.functional.avg_pool2d(torch.nn.functional.pad(x, (1, 1, 1, 1), value=0.5), 2), (1, 2, 6, 6)),
    "upsample": (lambda x: torch.nn.functional.interpolate(x, scale_factor=2, mode="nearest"), (1, 2, 3, 3)),
    "squeeze_unsqueeze_permute": (lambda x: x.unsqueeze(0).permute(0, 2, 1).squeeze(0) * 2, (3, 4)),
    "argmax_cumsum": (lambda x: x.argmax(-1, keepdim=True).float() + x.cumsum(1), (3, 5)),
    "triu_tril": (lambda x: torch.triu(x, 1) - torch.tril(x), (4, 4)),
    "index_select_gather": (lambda x: x.index_select(1, torch.tensor([2, 0])).sum() + x.gather(1, torch.tensor([[1], [0], [2]])), (3, 4)),
    "any_masked_fill": (lambda x: x.masked_fill(x < 0, -1.0) + (x > 1).any(-1, keepdim=True).float(), (3, 4)),
    "prod_clamp_tensor_rsub": (lambda x: x.prod(1, keepdim=True) + 1 - x.clamp(min=torch.zeros(4), max=torch.ones(4)), (3, 4)),
    "bilinear": (lambda x: torch.nn.functional.interpolate(x, size=(5, 7), mode="bilinear", align_corners=False)
                 + torch.nn.functional.interpolate(x, size=(5, 7), mode="bilinear", align_corners=True), (1, 2, 3, 4)),
    "max_pool_ceil_adaptive": (lambda x: torch.nn.functional.max_pool2d(x, 2, 2, ceil_mode=True).sum()
                               + torch.nn.functional.adaptive_avg_pool2d(x, (2, 3)), (1, 2, 4, 6)),
    "group_norm": (lambda x: torch.nn.functional.group_norm(x, 2, torch.linspace(0.5, 1.5, 4), torch.linspace(-1, 1, 4)), (1, 4, 3, 3)),
    "conv1d_conv_transpose": (lambda x: torch.nn.functional.conv_transpose1d(
        torch.nn.functional.conv1d(x, torch.ones(3, 2, 3) / 6, padding=1), torch.ones(3, 2, 2) / 4, stride=2), (1, 2, 6)),
    "int_arithmetic": (lambda x: (x * 4).to(torch.int64) * 3 - (x > 0).to(torch.int64), (2, 3)),
    "index_broadcast_aranges": (lambda x: x[torch.arange(1)[:, None, None, None], torch.arange(4)[None, None, None, :]]
                                * 2, (1, 4)),
    "index_one_tensor": (lambda x: x[:, torch.tensor([3, 0, 1])] + 1, (2, 4)),
    "as_strided_view": (lambda x: torch.as_strided(x.mean((2, 3), keepdim=True), (1, 3, 1, 1), (3, 1, 3, 3)), (1, 3, 4, 4)),
}


class _Lambda(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


@pytest.mark.parametrize("case", sorted(ELEMENTWISE_CASES))
def test_aten_ops_on_the_reference_interpreter(case):
    """The importers of the ATen ops beyond the families, against eager torch
    (the reference interpreter: the import is what is tested here)."""
    fn, shape = ELEMENTWISE_CASES[case]
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(7))
    compiled = gedialects.compile(_Lambda(fn).eval(), (x,), backend="reference")
    assert_close(compiled(x).numpy(), fn(x).numpy(), FP32, err_msg=case)


def test_docs_list_the_supported_aten_ops():
    from pathlib import Path

    from gedialects.frontend.torch_import import supported_ops

    text = (Path(__file__).resolve().parents[2] / "docs" / "trace-mode.md").read_text()
    listed = text.split("<!-- supported-aten-ops -->")[1].split("<!-- /supported-aten-ops -->")[0]
    assert sorted(item.strip(" `\n") for item in listed.split(",")) == [o.removeprefix("aten.") for o in supported_ops()]


def test_backend_is_registered_by_installation_alone():
    """No import of gedialects: torch finds the backend by its entry point."""
    import subprocess
    import sys

    code = (
        "import sys, torch\n"
        "assert 'gedialects' not in sys.modules\n"
        "assert 'gedialects' in torch._dynamo.list_backends(exclude_tags=())\n"
        "f = torch.compile(torch.nn.ReLU(), backend='gedialects', options={'backend': 'reference'})\n"
        "print(f(torch.tensor([-1.0, 2.0])).tolist())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[0.0, 2.0]"


def test_profile_option(tmp_path, capsys):
    model = _WithBreak().eval()
    x = torch.randn(2, 8)
    trace = tmp_path / "trace.json"
    with torch.no_grad():
        torch.compile(model, backend="gedialects", options={"precision_mode": FP32, "profile": str(trace)})(x)
    import json

    assert json.loads(trace.read_text())["traceEvents"]
    assert json.loads((tmp_path / "trace-1.json").read_text())["traceEvents"]  # the subgraph after the break
    torch._dynamo.reset()
    with torch.no_grad():
        torch.compile(model, backend="gedialects", options={"precision_mode": FP32, "profile": True})(x)
    assert "op name" in capsys.readouterr().err
