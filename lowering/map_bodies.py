"""The scalar computation of each elementwise graph op, as the body of a tile.map.

`ELEMENTWISE[type(op)](builder, op, *args)` emits arith/math ops on fp32
scalars and returns the result. Bools are i1 values (a comparison's result,
0/1 in the vector unit's buffers) or fp32 numbers read as `!= 0` (a loaded
bool constant); integers arrive as fp32 (the kernel converts them on load:
exact below 2^24). Ops the vector unit has no instruction for
(tanh, erf, powf) are left as math ops: tile-legalize-math expands them.
Adding an elementwise op to the AI core costs one entry here (and, if the
vector unit lacks an instruction for it, a rewrite in tile-legalize-math).
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, IntegerType, f32, i1
from xdsl.ir import Attribute, Block, Operation, SSAValue

from gedialects.graph import ops as g
from gedialects.graph.tensors import attr_array
from gedialects.tile.structured import YieldOp
from gedialects.tile.transforms.legalize_math import erfc_of_nonnegative


class ScalarBuilder:
    """Appends scalar ops to a map body (constants of type `element`)."""

    def __init__(self, block: Block, element: Attribute = f32):
        self.block = block
        self.element = element

    def emit(self, op: Operation) -> SSAValue:
        self.block.add_op(op)
        return op.results[0]

    def const(self, value: float) -> SSAValue:
        return self.emit(arith.ConstantOp(FloatAttr(float(value), self.element)))

    def add(self, a, b):
        return self.emit(arith.AddfOp(a, b))

    def sub(self, a, b):
        return self.emit(arith.SubfOp(a, b))

    def mul(self, a, b):
        return self.emit(arith.MulfOp(a, b))

    def div(self, a, b):
        return self.emit(arith.DivfOp(a, b))

    def max(self, a, b):
        return self.emit(arith.MaximumfOp(a, b))

    def min(self, a, b):
        return self.emit(arith.MinimumfOp(a, b))

    def neg(self, a):
        return self.emit(arith.NegfOp(a))

    def exp(self, a):
        return self.emit(mathd.ExpOp(a))

    def log(self, a):
        return self.emit(mathd.LogOp(a))

    def sqrt(self, a):
        return self.emit(mathd.SqrtOp(a))

    def rsqrt(self, a):
        return self.emit(mathd.RsqrtOp(a))

    def abs(self, a):
        return self.emit(mathd.AbsFOp(a))

    def tanh(self, a):
        return self.emit(mathd.TanhOp(a))

    def erf(self, a):
        return self.emit(mathd.ErfOp(a))

    def pow(self, a, b):
        return self.emit(mathd.PowFOp(a, b))

    def compare(self, predicate: str, a, b):
        return self.emit(arith.CmpfOp(a, b, predicate))

    def select(self, condition, a, b):
        return self.emit(arith.SelectOp(condition, a, b))

    def true(self):
        return self.emit(arith.ConstantOp(IntegerAttr(1, i1)))

    def as_bool(self, x):
        """x as an i1: a comparison's i1 as it is, a number as `x != 0`."""
        if _is_bool(x.type):
            return x
        return self.compare("une", x, self.const(0.0))

    # composites used by several ops
    def sigmoid(self, a):
        return self.div(self.const(1.0), self.add(self.exp(self.neg(a)), self.const(1.0)))

    def hard_sigmoid(self, a, alpha: float, beta: float):
        return self.max(self.min(self.add(self.mul(a, self.const(alpha)), self.const(beta)), self.const(1.0)),
                        self.const(0.0))

    def hard_swish(self, a):
        return self.mul(a, self.hard_sigmoid(a, 1 / 6, 0.5))


def _gelu(sb: ScalarBuilder, op: g.GeluOp, x):
    return _gelu_of(sb, x, op.str_("approximate", "none"))


def _gelu_of(sb: ScalarBuilder, x, approximate: str):
    """GELU; the exact one as max(x, 0) - 0.5 |x| erfc(|x| / sqrt(2)), the same
    function as 0.5 x (1 + erf(x / sqrt(2))) (erf is odd) in four vector
    instructions fewer (no sign select, no 1 + erf) and without the
    cancellation of 1 + erf for negative x."""
    if approximate == "tanh":
        half_x = sb.mul(x, sb.const(0.5))
        inner = sb.mul(sb.add(x, sb.mul(sb.mul(sb.mul(x, x), x), sb.const(0.044715))), sb.const(math.sqrt(2 / math.pi)))
        return sb.mul(half_x, sb.add(sb.tanh(inner), sb.const(1.0)))
    # 0.5 |x| = z / sqrt(2) for z = |x| / sqrt(2): no |x| kept alive beside z
    # (a fused epilogue's temporaries fill UB: one more would shrink its tile)
    z = sb.mul(sb.abs(x), sb.const(1 / math.sqrt(2)))
    tail = erfc_of_nonnegative(sb, z)
    return sb.sub(sb.max(x, sb.const(0.0)), sb.mul(z, sb.mul(tail, sb.const(1 / math.sqrt(2)))))


def _leaky_relu(sb: ScalarBuilder, op, x):
    return activation_body(sb, "leaky_relu", [op.float_("alpha", 0.01)], x)


def _clip(sb: ScalarBuilder, op, x):
    if op.min is not None:
        x = sb.max(x, sb.const(op.float_("min", 0.0)))
    if op.max is not None:
        x = sb.min(x, sb.const(op.float_("max", 0.0)))
    return x


LOG1P_SERIES_LIMIT = 0.01
"""Below it log(1 + y) is y - y^2/2 + y^3/3 - y^4/4 (error < 2e-11 relative):
1 + y would round away y's low bits."""


def _log1p(sb: ScalarBuilder, y):
    series = sb.mul(y, sb.add(sb.mul(y, sb.add(sb.mul(y, sb.add(sb.mul(y, sb.const(-0.25)), sb.const(1 / 3))),
                                               sb.const(-0.5))), sb.const(1.0)))
    return sb.select(sb.compare("olt", y, sb.const(LOG1P_SERIES_LIMIT)), series, sb.log(sb.add(y, sb.const(1.0))))


def _softplus(sb: ScalarBuilder, op, x):
    # max(x, 0) + log(1 + exp(-|x|)): no overflow for large |x|, exact for very negative x
    return sb.add(sb.max(x, sb.const(0.0)), _log1p(sb, sb.exp(sb.neg(sb.abs(x)))))


def _sum(sb: ScalarBuilder, op, *xs):
    acc = xs[0]
    for x in xs[1:]:
        acc = sb.add(acc, x)
    return acc


def _is_bool(t: Attribute) -> bool:
    return isinstance(t, IntegerType) and t.width.data == 1


def _cast(sb: ScalarBuilder, op: g.CastOp, x):
    """To a bool: `!= 0`; to f32: the value (an integer arrives as its fp32
    value). The legality rules admit no other cast: results are f32, and
    bool operands exist only inside a mask fusion, where casts make bools."""
    if _is_bool(op.output.type.element_type):  # type: ignore[attr-defined]
        return sb.as_bool(x)
    return x


def _logic(cls):
    return lambda sb, op, a, b: sb.emit(cls(sb.as_bool(a), sb.as_bool(b)))


def _where(sb: ScalarBuilder, op, c, x, y):
    if not isinstance(c.type, type(f32)):  # a comparison's i1 inside a fusion
        return sb.select(c, x, y)
    return sb.select(sb.compare("one", c, sb.const(0.0)), x, y)


ELEMENTWISE = {
    g.AddOp: lambda sb, op, a, b: sb.add(a, b),
    g.SubOp: lambda sb, op, a, b: sb.sub(a, b),
    g.MulOp: lambda sb, op, a, b: sb.mul(a, b),
    g.DivOp: lambda sb, op, a, b: sb.div(a, b),
    g.MaxOp: lambda sb, op, a, b: sb.max(a, b),
    g.MinOp: lambda sb, op, a, b: sb.min(a, b),
    g.PowOp: lambda sb, op, a, b: sb.pow(a, b),
    g.SumOp: _sum,
    g.ReluOp: lambda sb, op, a: sb.max(a, sb.const(0.0)),
    g.LeakyReluOp: _leaky_relu,
    g.ClipOp: _clip,
    g.SigmoidOp: lambda sb, op, a: sb.sigmoid(a),
    g.TanhOp: lambda sb, op, a: sb.tanh(a),
    g.ErfOp: lambda sb, op, a: sb.erf(a),
    g.GeluOp: _gelu,
    g.SqrtOp: lambda sb, op, a: sb.sqrt(a),
    g.ExpOp: lambda sb, op, a: sb.exp(a),
    g.LogOp: lambda sb, op, a: sb.log(a),
    g.NegOp: lambda sb, op, a: sb.neg(a),
    g.AbsOp: lambda sb, op, a: sb.abs(a),
    g.ReciprocalOp: lambda sb, op, a: sb.div(sb.const(1.0), a),
    g.IdentityOp: lambda sb, op, a: a,
    g.HardSigmoidOp: lambda sb, op, a: sb.hard_sigmoid(a, op.float_("alpha", 0.2), op.float_("beta", 0.5)),
    g.HardSwishOp: lambda sb, op, a: sb.hard_swish(a),
    g.SoftplusOp: _softplus,
    g.WhereOp: _where,
    g.EqualOp: lambda sb, op, a, b: sb.compare("oeq", a, b),
    g.LessOp: lambda sb, op, a, b: sb.compare("olt", a, b),
    g.LessEqualOp: lambda sb, op, a, b: sb.compare("ole", a, b),
    g.GreaterOp: lambda sb, op, a, b: sb.compare("ogt", a, b),
    g.GreaterEqualOp: lambda sb, op, a, b: sb.compare("oge", a, b),
    g.CastOp: _cast,
    g.AndOp: _logic(arith.AndIOp),
    g.OrOp: _logic(arith.OrIOp),
    g.XorOp: _logic(arith.XOrIOp),
    g.NotOp: lambda sb, op, a: sb.emit(arith.XOrIOp(sb.as_bool(a), sb.true())),
    g.IsNanOp: lambda sb, op, a: sb.compare("une", a, a),  # only NaN is unequal to itself
}
"""Graph op -> its scalar body; the vector family lowers exactly these (and fusions of them)."""


def scalar_value(v: SSAValue) -> float | None:
    """The value of a constant that is one number (broadcast everywhere), else None."""
    op = v.owner
    if isinstance(op, g.FillOp):
        return float(op.value.value.data)
    if not isinstance(op, g.ConstantOp):
        return None
    flat = np.asarray(attr_array(op.value)).reshape(-1)
    if flat.size and np.all(flat == flat[0]):
        return float(flat[0])
    return None


def activation_body(sb: ScalarBuilder, kind: str, params, x: SSAValue) -> SSAValue:
    """A fused conv/matmul/gemm epilogue (graph.ops.ACTIVATIONS) on x."""
    if not kind:
        return x
    if kind == "relu":
        return sb.max(x, sb.const(0.0))
    if kind == "leaky_relu":
        alpha = params[0] if params else 0.01
        return sb.select(sb.compare("olt", x, sb.const(0.0)), sb.mul(x, sb.const(alpha)), x)
    if kind == "clip":
        return sb.min(sb.max(x, sb.const(params[0])), sb.const(params[1]))
    if kind == "sigmoid":
        return sb.sigmoid(x)
    if kind == "tanh":
        return sb.tanh(x)
    if kind == "gelu":
        return _gelu_of(sb, x, "tanh" if params and params[0] else "none")
    if kind == "hard_sigmoid":
        return sb.hard_sigmoid(x, *params)
    if kind == "hard_swish":
        return sb.hard_swish(x)
    raise ValueError(f"unknown activation {kind}")


SCALE_EQUIVARIANT_ACTIVATIONS = ("", "relu", "leaky_relu")
"""Activations that commute with a positive scale: f(x s) = f(x) s."""
STORAGE_PRECISION_ACTIVATIONS = ("", "relu", "leaky_relu", "clip")
"""Activations as exact in fp16 as in fp32 (max/min/select, one product);
the others (sigmoid, tanh, gelu: several rounded steps) run in fp32."""


def activation_block(kind: str, params, element: Attribute = f32, scale: float = 1.0) -> Block:
    """A detached map body of one argument of type `element`: the activation,
    yielded in `element`. `scale`: the argument and the result are stored
    divided by it (force_fp16 range scaling), so the body is
    f(x * scale) / scale unless f commutes with it. On fp16, activations of
    several rounded steps are computed in fp32 between two casts."""
    rescale = scale != 1.0 and kind not in SCALE_EQUIVARIANT_ACTIVATIONS

    def build(sb: ScalarBuilder, x: SSAValue) -> SSAValue:
        y = activation_body(sb, kind, params, sb.mul(x, sb.const(scale)) if rescale else x)
        return sb.mul(y, sb.const(1.0 / scale)) if rescale else y

    return _storage_block(element, element != f32 and kind not in STORAGE_PRECISION_ACTIVATIONS, build)


def lrn_blocks(bias: float, beta: float, element: Attribute = f32) -> tuple[Block, Block]:
    """LRN's two map steps around its channel-window sum: x * x (in the
    storage precision, as the sum's operand is stored) and
    (bias + sum)^-beta (exp(-beta ln(.)), in fp32 on fp16 storage)."""
    square = _storage_block(element, False, lambda sb, x: sb.mul(x, x))
    power = _storage_block(element, element != f32,
                           lambda sb, s: sb.exp(sb.mul(sb.log(sb.add(s, sb.const(bias))), sb.const(-beta))))
    return square, power


def unary_value(block: Block, op: Operation, x: SSAValue, element: Attribute = f32) -> SSAValue:
    """The unary elementwise graph op `op` (its ELEMENTWISE body) on x, an
    element of type `element`, appended to `block`: computed in fp32."""
    return _in_storage_type(block, element, element != f32, lambda sb, v: ELEMENTWISE[type(op)](sb, op, v), x)


def _storage_block(element: Attribute, wide: bool, build) -> Block:
    """A one-argument body in `element`; `wide`: computed in fp32 between two casts."""
    block = Block(arg_types=[element])
    block.add_op(YieldOp([_in_storage_type(block, element, wide, build, block.args[0])]))
    return block


def _in_storage_type(block: Block, element: Attribute, wide: bool, build, x: SSAValue) -> SSAValue:
    """build(builder, x) appended to `block` for x of type `element`, the
    result in `element`; `wide`: computed in fp32 between two casts."""
    sb = ScalarBuilder(block, f32 if wide else element)
    y = build(sb, sb.emit(arith.ExtFOp(x, f32)) if wide else x)
    return sb.emit(arith.TruncFOp(y, element)) if wide else y


def fusion_tensor_constants(op: Operation) -> list[SSAValue]:
    """The constants of a graph.fusion body that are not one number (graph-fuse
    clones small constants into the body): the kernel loads them like operands."""
    if not isinstance(op, g.FusionOp):
        return []
    return [inner.results[0] for inner in op.body.block.ops
            if isinstance(inner, g.ConstantOp) and scalar_value(inner.results[0]) is None]
