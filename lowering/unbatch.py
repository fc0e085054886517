"""map-unbatch: a CNN region of batch N > 1 as N batch-1 regions.

The CNN patterns lower batch-1 maps only (NC1HWC0 storages have no N;
convolution tiling, halos and in-place concats are per map). A batch of N
images is N independent maps, so this pass rewrites every op of the map
kernels (conv, pools, LRN, batch norm, the elementwise ops and fusions the
map kernels run, channel concat) whose result has batch N > 1 into N ops
of batch 1, one per image:

    y = conv(x)  ->  y_i = conv(slice_i(x)) for i < N;  y = concat_0(y_0 .. y_N-1)

Each result is also recorded as its N items, so the next such op reads the
items themselves: inside a region the slices and concats never appear, and
the concat that rejoins a result is erased when only rewritten ops read it.
What remains is a slice per image where a region begins (a graph input's
batch: a copy kernel each) and a concat along the batch where it ends (e.g.
before a classifier's gemm, which multiplies any M).

An elementwise op is rewritten only when one of its operands already is
items (a transformer's 4-D tensors with a batch stay as they are), and an op
only when its first item has an AI-core kernel (the legality table): an op
the AI CPU would run anyway stays one task, not N.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, TensorType, i64
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from gedialects.graph import ops as g
from gedialects.instrumentation import statistic
from lowering.graph_to_tile.precision import DEFAULT_PRECISION, check_precision_mode
from lowering.legality import MAP_ELEMENTWISE, MAP_OPS, Context as LegalityContext, ai_core_refusal, is_constant, nonnegative_values



def _batch(op: Operation) -> int:
    s = g.shape_of(op.results[0]) if op.results and isinstance(op.results[0].type, TensorType) else ()
    return s[0] if len(s) == 4 else 1


def _candidate(op: Operation, items: dict[SSAValue, list[SSAValue]]) -> bool:
    if _batch(op) <= 1:
        return False
    if isinstance(op, MAP_OPS):  # only the map kernels run them: rewritten whenever their batch is above 1
        return True
    if isinstance(op, g.ConcatOp) and op.int_("axis", 0) % 4 == 1:
        return True
    return isinstance(op, MAP_ELEMENTWISE) and any(v in items for v in op.operands)


class Unbatcher:
    def __init__(self, fn: func.FuncOp, precision: str):
        self.fn = fn
        self.block: Block = fn.body.block
        self.legality = LegalityContext(fn, precision)
        self.items: dict[SSAValue, list[SSAValue]] = {}
        self.rejoined: list[Operation] = []
        self.rewritten = 0

    def run(self) -> None:
        for op in list(self.block.ops):
            if _candidate(op, self.items):
                self.rewrite(op)
        for concat in self.rejoined:  # rejoined results that only rewritten ops read
            if not concat.results[0].uses:
                self.block.erase_op(concat)

    def item_operands(self, op: Operation, n: int) -> list[list[SSAValue]] | None:
        """Per operand, its n items (a broadcast operand: itself n times)."""
        out = []
        for v in op.operands:
            s = g.shape_of(v)
            if is_constant(v) or len(s) != 4 or s[0] == 1:
                out.append([v] * n)
            elif v in self.items:
                out.append(self.items[v])
            elif s[0] == n:
                out.append(None)  # sliced once the op is known to be rewritten
            else:
                return None
        return out

    def rewrite(self, op: Operation) -> None:
        n = _batch(op)
        per_operand = self.item_operands(op, n)
        if per_operand is None:
            return
        sliced = [self.slices(v, n) if items is None else items for v, items in zip(op.operands, per_operand)]
        first = item_clone(op, [items[0] for items in sliced], n)
        self.block.insert_op_before(first, op)
        self.legality.nonneg = nonnegative_values(self.block)  # (the items' facts: a relu's items are >= 0 too)
        if ai_core_refusal(first, self.legality) is not None:  # the AI CPU would run each item: keep one task
            self.block.erase_op(first)
            for v, items in zip(op.operands, per_operand):
                if items is None and all(not s.uses for s in self.items[v]):
                    for s in self.items.pop(v):
                        self.block.erase_op(s.owner)
            return
        clones = [first] + [item_clone(op, [items[i] for items in sliced], n) for i in range(1, n)]
        for c in clones[1:]:
            self.block.insert_op_before(c, op)
        for k, r in enumerate(op.results):
            parts = [c.results[k] for c in clones]
            concat = g.ConcatOp.build(operands=[parts], result_types=[r.type], properties={"axis": IntegerAttr(0, i64)})
            concat.location = op.location
            self.block.insert_op_before(concat, op)
            r.replace_all_uses_with(concat.results[0])
            self.items[concat.results[0]] = parts
            self.rejoined.append(concat)
        self.block.erase_op(op)
        self.rewritten += 1

    def slices(self, v: SSAValue, n: int) -> list[SSAValue]:
        """v's n images, sliced once right after v is defined."""
        t = v.type
        assert isinstance(t, TensorType)
        s = tuple(t.get_shape())
        owner = v.owner
        at = owner if isinstance(owner, Operation) else None
        out = []
        for i in range(n):
            op = g.SliceOp.build(operands=[v], result_types=[TensorType(t.element_type, (1, *s[1:]))],
                                 properties={"starts": g.int_array([i]), "ends": g.int_array([i + 1]),
                                             "axes": g.int_array([0])})
            if at is None:
                self.block.insert_op_before(op, self.block.first_op)
            else:
                self.block.insert_op_after(op, at)
            at = op
            out.append(op.results[0])
        self.items[v] = out
        return out


def _item_type(t: Attribute, n: int, constant: bool) -> Attribute:
    """t of one image: a 4-D tensor of batch n (not a constant's) gets batch 1."""
    if constant or not isinstance(t, TensorType):
        return t
    s = tuple(t.get_shape())
    return TensorType(t.element_type, (1, *s[1:])) if len(s) == 4 and s[0] == n else t


def item_clone(op: Operation, operands: list[SSAValue], n: int, values: dict | None = None) -> Operation:
    """op for one image: these operands, batch-1 result types, its regions
    (a fusion's body) cloned with their values retyped the same way."""
    values = {} if values is None else values
    constant = isinstance(op, g.ConstantOp | g.FillOp)
    regions = []
    for region in op.regions:
        new_region = Region()
        for block in region.blocks:
            new_block = Block(arg_types=[_item_type(a.type, n, False) for a in block.args])
            values.update(zip(block.args, new_block.args))
            for inner in block.ops:
                new_block.add_op(item_clone(inner, [values.get(v, v) for v in inner.operands], n, values))
            new_region.add_block(new_block)
        regions.append(new_region)
    clone = type(op).create(operands=operands, result_types=[_item_type(r.type, n, constant) for r in op.results],
                            properties=dict(op.properties), attributes=dict(op.attributes), regions=regions)
    clone.location = op.location
    values.update(zip(op.results, clone.results))
    return clone


@dataclass(frozen=True)
class MapUnbatchPass(ModulePass):
    """Rewrite the map kernels' ops of batch N > 1 as N batch-1 ops."""

    name = "map-unbatch"
    precision_mode: str = DEFAULT_PRECISION

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        check_precision_mode(self.precision_mode)
        for fn in op.body.block.ops:
            if isinstance(fn, func.FuncOp) and not fn.is_declaration:
                unbatcher = Unbatcher(fn, self.precision_mode)
                unbatcher.run()
                statistic("ops-unbatched", unbatcher.rewritten, "batched map ops rewritten as one op per image")
