"""force_fp16 range scaling: every fp16 tensor is stored multiplied by a
power of two chosen at compile time, so that it stays inside fp16's range.

Why: fp16 ends at 65504. Trained networks mostly stay far below it, but not
all do (the bundled light models' placeholder weights take ResNet-50's
activations to 1e19), and a cube that writes inf makes every later number
meaningless. Keeping such tensors in fp32 would give them another C0 and
layout; scaling keeps one format and costs nothing at run time.

How:
* calibration: the graph runs once in the reference interpreter on
  calibration inputs (seeded standard normal unless given), recording the
  largest magnitude of every value (its convolutions accumulate in
  float32, not the oracle's float64: a magnitude is all it needs);
* ops that commute with a positive scale -- relu, max/avg pooling, concat,
  add/sub/max/min (with constants scaled along), multiplication by a
  constant, batch-norm, views, transdata, channel shuffles -- tie their
  operands and results to one class with one scale (union-find);
* conv and gemm absorb any change of scale into their weights and bias at
  compile time (w * s_in / s_out, b / s_out), so their results may start a
  new class (a residual, or a product's computed bias -- an attention mask
  graph-fuse made the scores' bias --, joins the output's class);
* graph inputs, softmax and LRN results, and whatever this module does not
  know are pinned at scale 1, as are the inputs of LRN (it squares them)
  and of unknown ops;
* values of magnitude MASK_SENTINEL and up (an attention mask's -3.4e38,
  torch's stand-in for -inf) do not count in a calibrated range;
* a free class gets the smallest power of two 2^e (e >= 0) that brings its
  largest calibrated value under TARGET = 2^8, which leaves a factor 2^8 of
  headroom for inputs larger than the calibration's;
* softmax multiplies its shifted input by its scale before exp (overflow
  there is -inf, and exp(-inf) = 0 is the right answer); graph outputs are
  multiplied back in fp32.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping

import numpy as np
from xdsl.dialects import func
from xdsl.ir import SSAValue
from xdsl.utils.exceptions import PassFailedException

from gedialects.graph import ops as g
from gedialects.graph.constants import constant_value
from gedialects.graph.interpreter import evaluate, input_names
from gedialects.graph.reference import conv_accumulation
from gedialects.graph.tensors import numpy_dtype

log = logging.getLogger("gedialects.fp16")

TARGET = 2.0**8
WEIGHT_LIMIT = 2.0**14
"""Largest |weight| after scaling (fp16 holds 65504; margin for the packing)."""
FP16_MAX = 65504.0
MASK_SENTINEL = float(np.finfo(np.float32).max) / 2
"""Magnitudes from here up stand for infinity: torch's attention masks add
finfo(float32).min (-3.4e38) where a score is masked out. Calibration
leaves them out of a value's range (fp16 stores them as -inf whatever the
scale); counted, they would give the scores a scale of 2^120 that flushes
them to 0."""
CALIBRATION_SEED = 20240229


def holds_mask_sentinel(values) -> bool:
    """Some of the values are finite stand-ins for infinity (torch's
    finfo(f32).min in a mask)."""
    a = np.asarray(values)
    a = a[tuple(0 if stride == 0 else slice(None) for stride in a.strides)]  # a broadcast's distinct values
    a = np.asarray(a, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        return bool((np.isfinite(a) & (np.abs(a) >= MASK_SENTINEL)).any())


def saturate_to_fp16(array: np.ndarray) -> np.ndarray:
    """fp16 storage of float values: finite values beyond fp16's range
    saturate at +-FP16_MAX instead of becoming infinities (infinities and
    NaN stay as they are). A mask's finfo(f32).min is then fp16's most
    negative finite value: a row it fills entirely stays a row of equal
    values, whose softmax is uniform as in fp32, where -inf - -inf would
    make it NaN."""
    return to_fp16(array, saturate=True)


FP16_SMALLEST_NORMAL = 2.0**-14
_CHUNK = 1 << 16
"""Elements converted at a time: the temporaries stay in cache and no
weight-sized one exists (VGG-19's fc6 is 411 MB in fp32)."""
SUBNORMAL_SHARE = 16
"""A chunk takes astype when at most 1/16 of it becomes fp16 subnormals
(or rounds to zero from nonzero): NumPy's ~20x cost on those is then below
the integer route's extra passes."""


def to_fp16(array, saturate: bool = False) -> np.ndarray:
    """`array.astype(np.float16)`, bit for bit, fast for values in fp16's
    subnormal range as well. NumPy converts a value that becomes an fp16
    subnormal (or rounds to zero) about 20x slower than a normal one, and
    weights scaled into fp16's range can be mostly such values (the light
    models' placeholder weights: VGG-19's classifier was 11 of its 13 s of
    compile). Those are m * 2^-24 with m = |x| * 2^24 rounded to nearest
    even (exact in x's own type, so one rounding, as astype's), stored as
    the bits m with the sign bit. Works on any layout (a transposed view
    of packed weights), in chunks of at most _CHUNK elements.
    `saturate`: finite values beyond fp16's range become +-FP16_MAX
    (saturate_to_fp16)."""
    array = np.asarray(array)
    if array.dtype == np.float16:
        return array
    if array.dtype.kind in "biu":  # exactly, then rounded once
        array = array.astype(np.float64)
    elif array.dtype.kind != "f":
        return array.astype(np.float16)
    if array.ndim == 0:
        return to_fp16(array.reshape(1), saturate).reshape(())
    out = np.empty(array.shape, np.float16)
    if array.flags.c_contiguous:  # runs of _CHUNK elements
        flat, flat_out = array.reshape(-1), out.reshape(-1)
        for start in range(0, flat.size, _CHUNK):
            flat_out[start : start + _CHUNK] = _chunk_to_fp16(flat[start : start + _CHUNK], saturate)
        return out
    # a strided view: runs of the last leading index whose trailing block is at most _CHUNK
    lead = 0
    while lead < array.ndim and math.prod(array.shape[lead:]) > _CHUNK:
        lead += 1
    if lead == 0:
        out[...] = _chunk_to_fp16(array, saturate)
        return out
    step = max(1, _CHUNK // max(1, math.prod(array.shape[lead:])))
    for index in np.ndindex(*array.shape[: lead - 1]):
        for start in range(0, array.shape[lead - 1], step):
            run = index + (slice(start, start + step),)
            out[run] = _chunk_to_fp16(array[run], saturate)
    return out


def _chunk_to_fp16(chunk: np.ndarray, saturate: bool) -> np.ndarray:
    magnitude = np.abs(chunk)
    if saturate:
        big = (magnitude > FP16_MAX) & (magnitude != np.inf)  # NaN is neither
        if big.any():
            chunk = np.where(big, np.copysign(FP16_MAX, chunk), chunk)
            magnitude = np.abs(chunk)
    small = magnitude < FP16_SMALLEST_NORMAL  # NaN is not
    # zeros convert at full speed; with few values bound for the subnormals, astype is the faster way
    if np.count_nonzero(small) - np.count_nonzero(magnitude == 0) <= small.size // SUBNORMAL_SHARE:
        return chunk.astype(np.float16)
    result = np.where(small, 0, chunk).astype(np.float16)
    m = np.rint(magnitude[small] * 2.0**24).astype(np.uint16)  # <= 1024: 2^-14 is the smallest normal's bits
    result.view(np.uint16)[small] = m | (np.signbit(chunk[small]).astype(np.uint16) << 15)
    return result


EQUIVARIANT = (
    g.ReluOp, g.MaxPoolOp, g.AvgPoolOp, g.GlobalAvgPoolOp, g.ConcatOp, g.AddOp, g.SubOp, g.SumOp,
    g.BatchNormOp, g.TransDataOp, g.TransposeOp, *g.VIEW_OPS,
)
ABSORBING = (g.ConvOp, g.GemmOp, g.MatMulOp)
SCALE_FREE_CONSUMERS = (g.SoftmaxOp,) + EQUIVARIANT + ABSORBING
"""Ops whose kernels accept a scaled operand (the others need scale 1)."""


def _is_constant(v: SSAValue) -> bool:
    return isinstance(v.owner, g.ConstantOp | g.FillOp)


def _maps(op) -> list[SSAValue]:
    return [v for v in op.operands if not _is_constant(v)]


def _fusion_is_equivariant(op: g.FusionOp) -> bool:
    """A loop-fusion body that commutes with a positive scale: relu and
    add/sub/max/min/sum of maps and constants, mul by a constant, division
    of a map by a constant."""
    block = op.body.block
    const = {a for a, x in zip(block.args, op.inputs) if _is_constant(x)}
    for o in block.ops:
        if isinstance(o, g.YieldOp):
            continue
        if isinstance(o, g.ConstantOp | g.FillOp):
            const.add(o.output)
            continue
        maps = [v for v in o.operands if v not in const]
        if isinstance(o, g.ReluOp | g.IdentityOp | g.AddOp | g.SubOp | g.SumOp | g.MaxOp | g.MinOp):
            continue
        if isinstance(o, g.MulOp) and len(maps) <= 1:
            continue
        if isinstance(o, g.DivOp) and o.operands[1] in const:
            continue
        return False
    return True


def calibrate(fn: func.FuncOp, inputs: Mapping[str, np.ndarray] | None = None) -> dict[SSAValue, float]:
    """Largest magnitude of every value of fn on calibration inputs."""
    rng = np.random.default_rng(CALIBRATION_SEED)
    env: dict[SSAValue, np.ndarray] = {}
    for name, arg in zip(input_names(fn), fn.args):
        dtype = numpy_dtype(arg.type.element_type)
        if inputs is not None:
            if name not in inputs:
                raise PassFailedException(f"calibration inputs lack graph input '{name}'")
            given = np.asarray(inputs[name])
            if tuple(given.shape) != tuple(arg.type.get_shape()):
                raise PassFailedException(
                    f"calibration input '{name}' has shape {list(given.shape)}, "
                    f"the graph takes {list(arg.type.get_shape())}")
            env[arg] = given.astype(dtype, copy=False)
        elif np.issubdtype(dtype, np.floating):
            env[arg] = rng.standard_normal(arg.type.get_shape()).astype(dtype)
        else:
            env[arg] = np.zeros(arg.type.get_shape(), dtype)
    ranges: dict[SSAValue, float] = {}
    uses_left = {}
    with np.errstate(all="ignore"), conv_accumulation(np.float32):
        for op in fn.body.block.ops:
            if isinstance(op, func.ReturnOp):
                break
            outs = evaluate(op, [env[v] for v in op.operands])
            for r, o in zip(op.results, outs):
                env[r] = o
                ranges[r] = _finite_range(o)
                uses_left[r] = sum(1 for _ in r.uses)
            for v in set(op.operands):  # free what nobody reads any more
                if v in uses_left:
                    uses_left[v] -= sum(1 for u in v.uses if u.operation is op)
                    if uses_left[v] <= 0 and not _is_constant(v):
                        env.pop(v, None)
    for arg in fn.args:
        ranges[arg] = float(np.max(np.abs(env[arg]))) if arg in env and env[arg].size else 0.0
    return ranges


def _finite_range(x: np.ndarray) -> float:
    """The largest magnitude of x below MASK_SENTINEL (0 when there is none)."""
    if not x.size or not np.issubdtype(x.dtype, np.floating):
        return 0.0
    # two reductions, no |x| array: VGG-19's maps made that most of calibration
    top = max(float(x.max()), -float(x.min()))
    if top >= MASK_SENTINEL:
        a = np.abs(x)
        kept = a[a < MASK_SENTINEL]
        top = float(np.max(kept)) if kept.size else 0.0
    return top


class _Classes:
    def __init__(self):
        self.parent: dict[SSAValue, SSAValue] = {}

    def find(self, v: SSAValue) -> SSAValue:
        self.parent.setdefault(v, v)
        while self.parent[v] is not v:
            self.parent[v] = self.parent[self.parent[v]]
            v = self.parent[v]
        return v

    def union(self, a: SSAValue, b: SSAValue) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra is not rb:
            self.parent[rb] = ra


def _activation_and_weight_max(op) -> tuple[SSAValue, float]:
    """The operand a conv or product scales through, and the largest |weight|
    it is multiplied by (0 for a product of two activations). The weight is
    the right operand, or the left one of a product with a constant left
    operand (graph-decompose's interpolation matrices)."""
    x, w = op.operands[0], constant_value(op.operands[1])
    if w is None and isinstance(op, g.MatMulOp) and (left := constant_value(op.operands[0])) is not None:
        x, w = op.operands[1], left
    if w is None or not w.size:
        return x, 0.0
    alpha = op.float_("alpha", 1.0) if isinstance(op, g.GemmOp) else 1.0
    # max |w| without a weight-sized |w| (zfnet512's fc6 is 300 MB in fp32); NaN propagates as np.abs's would
    return x, float(np.maximum(np.max(w), -np.min(w))) * abs(alpha)


def _fit_weights(fn: func.FuncOp, classes: _Classes, scale: dict, fixed: set) -> None:
    """A conv or gemm multiplies its weights by s_in / s_out: where that would
    take them past WEIGHT_LIMIT (the output class's scale was set by a larger
    member than this op's own result), raise the output class's scale.
    Raising a scale only lowers stored values; repeat until nothing moves."""
    absorbers = [(op, *_activation_and_weight_max(op)) for op in fn.body.block.ops if isinstance(op, ABSORBING)]
    for _ in range(len(absorbers) + 1):
        moved = False
        for op, x, weight_max in absorbers:
            rin, rout = classes.find(x), classes.find(op.results[0])
            need = scale[rin] * weight_max / WEIGHT_LIMIT
            if rin is not rout and rout not in fixed and need > scale[rout]:
                scale[rout] = 2.0 ** math.ceil(math.log2(need))
                moved = True
        if not moved:
            return


def plan_scales(fn: func.FuncOp, ranges: Mapping[SSAValue, float]) -> dict[SSAValue, float]:
    """The scale (a power of two) every non-constant value is stored divided by."""
    classes = _Classes()
    pinned: set[SSAValue] = set()
    for arg in fn.args:
        classes.find(arg)
        pinned.add(arg)
    for op in fn.body.block.ops:
        if isinstance(op, g.ConstantOp | g.FillOp):
            continue
        if isinstance(op, func.ReturnOp):
            continue
        for r in op.results:
            classes.find(r)
        maps = _maps(op)
        equivariant = isinstance(op, EQUIVARIANT) or isinstance(op, g.FusionOp) and _fusion_is_equivariant(op)
        if equivariant:
            for v in maps + list(op.results[1:]):  # a loop fusion may yield several values
                classes.union(op.results[0], v)
        elif isinstance(op, g.ConvOp) and op.residual is not None:
            classes.union(op.results[0], op.residual)
        elif isinstance(op, g.MatMulOp | g.GemmOp) and op.bias is not None and not _is_constant(op.bias):
            # a fused add of a computed value (an attention mask as the scores'
            # bias) keeps the class the add had: a mask's -3.4e38 must not set
            # the scores' scale (2^120 would flush them to 0), it pins it
            classes.union(op.results[0], op.bias)
        elif not isinstance(op, ABSORBING):
            pinned.update(op.results)  # softmax, LRN, anything unknown
        if not (equivariant or isinstance(op, SCALE_FREE_CONSUMERS)):
            pinned.update(maps)  # LRN and unknown ops read true values
    biggest: dict[SSAValue, float] = {}
    for v, root in ((v, classes.find(v)) for v in list(classes.parent)):
        biggest[root] = max(biggest.get(root, 0.0), ranges.get(v, 0.0))
    fixed = {classes.find(v) for v in pinned}
    scale: dict[SSAValue, float] = {}
    for root in biggest:
        top = biggest[root]
        ok = root in fixed or not math.isfinite(top) or top <= TARGET
        scale[root] = 1.0 if ok else 2.0 ** math.ceil(math.log2(top / TARGET))
    _fit_weights(fn, classes, scale, fixed)
    scales = {v: scale[classes.find(v)] for v in classes.parent}
    for root in fixed:
        if biggest.get(root, 0.0) > FP16_MAX:
            log.warning(
                "force_fp16: values reach %.3g (beyond fp16's 65504) at an op that needs them unscaled (%s)",
                biggest[root], root.owner.name if hasattr(root.owner, "name") else "graph input",
            )
    n = len({classes.find(v) for v, s in scales.items() if s != 1.0})
    if n:
        log.info("force_fp16: %d value classes scaled down, by up to 2^%d", n, int(math.log2(max(scales.values()))))
    return scales
