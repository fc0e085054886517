"""tile-share-alike-kernels (gedialects/tile/transforms/share_alike.py):
kernels that differ only in their GM tensors take an earlier kernel's
expansion and npu code, GM pointers moved; the program assembled is the one
each kernel's own lowering builds, and it runs as onnxruntime does."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from gedialects.frontend.onnx_import import import_model
from gedialects.npu import ops as npu
from gedialects.numerics import CRITERIA
from gedialects.tile.transforms import share_alike
from gedialects.walk import outermost
from gedialects.zoo import onnxruntime_outputs, random_inputs
from lowering.pipeline import compile_module
from target.assembler import assemble
from target.simulator import simulate
from test_gm_inplace import _bottlenecks  # ResNet-style blocks: alike convs writing over their residuals


def _dense_block(layers: int = 3):
    """A DenseNet-style block: each layer a 1x1 conv over everything so far
    (its input grows), then a 3x3 conv of 16 channels (the same shape in
    every layer) written into the block's concat at its own channels."""
    rng = np.random.default_rng(3)
    nodes, inits, feats = [], [], ["x"]
    channels = 32
    for i in range(layers):
        source = feats[0] if len(feats) == 1 else f"cat{i}"
        if len(feats) > 1:
            nodes.append(helper.make_node("Concat", list(feats), [source], axis=1))
        for name, shape in ((f"w{i}a", (32, channels, 1, 1)), (f"w{i}b", (16, 32, 3, 3))):
            w = (rng.standard_normal(shape) / np.sqrt(np.prod(shape[1:]))).astype(np.float32)
            inits.append(helper.make_tensor(name, TensorProto.FLOAT, w.shape, w.ravel()))
        nodes += [
            helper.make_node("Conv", [source, f"w{i}a"], [f"b{i}"]),
            helper.make_node("Relu", [f"b{i}"], [f"r{i}"]),
            helper.make_node("Conv", [f"r{i}", f"w{i}b"], [f"f{i}"], pads=[1, 1, 1, 1]),
        ]
        feats.append(f"f{i}")
        channels += 16
    nodes.append(helper.make_node("Concat", feats, ["out"], axis=1))
    graph = helper.make_graph(
        nodes, "dense_block", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32, 12, 12])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, channels, 12, 12])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _program(model, precision):
    compiled = compile_module(import_model(model, {}, source=model.graph.name), precision)
    return compiled, assemble(compiled.module)


def _code(program) -> list:
    """What the simulator runs of each kernel, and the launch schedule."""
    return [(k.name, k.code, k.init_regs, sorted(k.info.items())) for k in program.kernels] + [program.schedule]


@pytest.mark.parametrize("precision", ["must_keep_origin_dtype", "force_fp16"])
@pytest.mark.parametrize("make", [_dense_block, _bottlenecks])
def test_shared_code_is_each_kernels_own(make, precision, monkeypatch):
    model = make()
    marked: list[int] = []
    mark = share_alike.share_alike_kernels
    monkeypatch.setattr(share_alike, "share_alike_kernels", lambda prog: marked.append(mark(prog)) or marked[-1])
    shared, program = _program(model, precision)
    assert marked and marked[0] >= 2  # the layers after the first take its kernels' code
    # each kernel lowered on its own: the same program, instruction for instruction
    monkeypatch.setattr(share_alike, "share_alike_kernels", lambda prog: 0)
    apart, own = _program(model, precision)
    assert _code(program) == _code(own)
    # and it computes the model
    inputs = random_inputs(model)
    res = simulate(program, inputs, races="error")
    ((name, ref),) = onnxruntime_outputs(model, inputs).items()
    assert CRITERIA[precision].check(res.outputs[name].reshape(ref.shape), ref).ok


def test_views_shifted_into_a_concat(monkeypatch):
    """The dense block's 3x3 convs write the concat at other channels: the
    kernels alike the first layer's carry a non-zero origin shift for the
    concat (test_shared_code_is_each_kernels_own: their pointers move by
    it); the marks stay at the tile level."""
    shifts: list[int] = []
    mark = share_alike.share_alike_kernels

    def record(prog):
        n = mark(prog)
        for kernel in prog.body.block.ops:
            pairs = kernel.attributes.get(share_alike.ALIKE_TENSORS_ATTR)
            if pairs is not None:
                shifts.extend(pair.data[1].value.data for pair in pairs.data.values())
        return n

    monkeypatch.setattr(share_alike, "share_alike_kernels", record)
    compiled = compile_module(import_model(_dense_block(), {}, source="dense_block"), "force_fp16")
    assert any(shifts)
    assert not any(name.startswith("ge.alike") for k in outermost(compiled.module, npu.KernelOp) for name in k.attributes)


_ALIKE_PROGRAM = """
npu.program @p gm_size 8192 {{
  npu.input "x" at 0 : tensor<128xf16>
  npu.output "y" at 4096 : tensor<128xf16>
  npu.kernel @first {{
    %g = npu.ptr gm 0 {tag}
    %u = npu.ptr ub 0
    npu.dma mte2 %u, %g len 256 : !npu.ptr<ub>, !npu.ptr<gm>
    npu.set_flag mte2 -> mte3 event 0
    npu.wait_flag mte2 -> mte3 event 0
    %o = npu.ptr gm 4096 {{ge.tensor = "y"}}
    npu.dma mte3 %o, %u len 256 : !npu.ptr<gm>, !npu.ptr<ub>
  }}
  npu.kernel @second alike @first moves {{x = 4096 : i64}}
  npu.launch @first block_dim 1 stream 0
}}
"""


def test_an_alike_kernel_runs_the_moved_code():
    """The assembler builds an alike kernel's code from its source's, each
    GM pointer into a moved tensor that many bytes further; a pointer that
    does not name its tensor cannot be moved: an error naming it."""
    from target.errors import AssemblyError
    from target.run import parse_npu_mlir

    program = assemble(parse_npu_mlir(_ALIKE_PROGRAM.format(tag='{ge.tensor = "x"}')))
    first, second = program.kernels
    assert second.name == "second" and len(second.code) == len(first.code)
    moved = [(a, b) for a, b in zip(first.code, second.code) if a != b]
    assert len(moved) == 1  # the load from x, now 4,096 bytes on; the store (its tensor not moved) as it was
    assert 4096 in moved[0][1] and 4096 not in moved[0][0]
    with pytest.raises(AssemblyError, match="does not name its tensor"):
        assemble(parse_npu_mlir(_ALIKE_PROGRAM.format(tag="")))


def test_an_alike_kernels_errors_say_whose_code_runs():
    """A simulation error in an alike kernel names the kernel and says the
    instruction is its source's code (the locations are the source's)."""
    from target.errors import SimulationError
    from target.run import parse_npu_mlir

    text = _ALIKE_PROGRAM.format(tag='{ge.tensor = "x"}').replace("moves {x = 4096 : i64}", "moves {x = 8192 : i64}")
    text = text.replace("  npu.launch @first block_dim 1 stream 0\n",
                        "  npu.launch @first block_dim 1 stream 0\n  npu.launch @second block_dim 1 stream 0\n")
    program = assemble(parse_npu_mlir(text))
    with pytest.raises(SimulationError, match=r"kernel 'second'.*@first's code"):
        simulate(program, {"x": np.zeros(128, np.float16)}, races="off")
