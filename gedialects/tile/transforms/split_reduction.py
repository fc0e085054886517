"""tile-split-reduction: split a product's or a conv's K over the cores (split-K).

A product with few output tiles and a long K (BERT-base's FFN output: 128 x
768 from K = 3,072) gives each core its tile's whole K panel of both
operands to read, so the cores' own GM paths bound it, not the chip's.
Splitting K into R slices makes R times the tiles, each reading 1/R of
the panels. The kernel becomes two:

    partials  [R, M, N] fp32: slice r of A times slice r of B, for every r
              (a batched product over r: A's slices are a strided view of
              its rows, a FRACTAL_NZ b^T's slices contiguous runs), stored
              to a GM workspace `<kernel>_partials`;
    sum       the R partials added in slice order, then what followed the
              product in the kernel (bias, activation, the cast), as before.

This is split-K as CANN's deterministic matmul does it (a workspace of
partial products and a reduction kernel, no atomic adds): the result does
not depend on which core finishes first, and any epilogue still fuses.
Whether to split, and in how many slices, is the cost model's: the
tile-select-tiling cycles of the two kernels against those of the one; the
chosen kernels keep the tilings that were costed. Programs under a
device-memory limit are left alone (the workspace would take arena space
tile-fit-device-memory's plan did not count).

A conv kernel is split the same way, into a grouped conv over runs of its
input channels and an elementwise sum kernel (split_conv.py).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr, TensorType, f32, i64
from xdsl.ir import Block, Region
from xdsl.passes import ModulePass

from gedialects.graph.memory import attributes as mem
from gedialects.graph.tensors import tensor_nbytes
from gedialects.instrumentation import statistic
from gedialects.npu.isa import BLOCK_BYTES
from gedialects.npu.ops import SPLIT_K_SUM_KIND
from gedialects.tile import gm_arena, streams
from gedialects.tile import ops as t
from gedialects.tile import structured as st
from gedialects.tile.transforms.expand_structured import TilingError, elem_bytes
from gedialects.tile.transforms.select_tiling import choose_tiling
from gedialects.tile.transforms.split_conv import Split, plan_conv_split
from target.config import TargetConfig, load_target

WORKSPACE_ALIGNMENT = 512
"""Where a workspace starts when the program has no arena plan to place it."""

log = logging.getLogger("gedialects.lowering")

MAX_SLICES = 8
"""The most K slices tried: the sum kernel reads every slice's partials."""


def _product(kernel: t.KernelOp) -> st.BatchMatmulOp | None:
    """The kernel's one product, if split-K can rewrite it: operands loaded
    whole for it alone, one matrix (batch dims of 1), A row-major, b row-major
    or FRACTAL_NZ b^T."""
    ops = list(kernel.body.block.ops)
    products = [op for op in ops if isinstance(op, st.BatchMatmulOp)]
    if len(products) != 1 or any(isinstance(op, st.AttentionOp | st.GatherOp) for op in ops):
        return None
    product = products[0]
    for operand in (product.a, product.b):
        load = operand.owner
        if not isinstance(load, st.LoadOp) or len(list(operand.uses)) != 1:
            return None
        if any(p is not None for p in (load.perm, load.source, load.steps)):
            return None
    if product.a.owner.fractal_nz():  # type: ignore[union-attr]
        return None
    if product.b.owner.fractal_nz() and product.transpose_b is None:  # type: ignore[union-attr]
        return None  # a packed operand holds b^T (tile-expand-structured refuses it too)
    if any(d != 1 for d in st.shape_of(product.result)[:-2]):
        return None
    return product


def slice_counts(k: int, element_bytes: int) -> list[int]:
    """K slice counts to try: divisors of K whose slices are whole 32-byte blocks."""
    k0 = BLOCK_BYTES // element_bytes
    return [r for r in range(2, MAX_SLICES + 1) if k % r == 0 and (k // r) % k0 == 0]


def _sliced_loads(product: st.BatchMatmulOp, slices: int) -> tuple[st.LoadOp, st.LoadOp]:
    """A and b as [slices, ., .] batches of their K slices (views of the same GM bytes)."""
    m, n, k = product.contraction()
    ks = k // slices
    a, b = product.a.owner, product.b.owner
    assert isinstance(a, st.LoadOp) and isinstance(b, st.LoadOp)
    element = product.a.type.element_type  # type: ignore[attr-defined]
    # A [M, K] read as [M, R, Ks] permuted to [R, M, Ks]: slice r is every row's r-th run of Ks
    a_sliced = st.LoadOp(a.tensor.data, TensorType(element, [slices, m, ks]), perm=(1, 0, 2))
    if product.transpose_b is None:  # b [K, N]: slice r is rows r * Ks .. (contiguous)
        b_sliced = st.LoadOp(b.tensor.data, TensorType(element, [slices, ks, n]))
    elif b.fractal_nz():  # b^T [N, K] as K / c0 column blocks of N rows: slice r is a contiguous run of them
        b_sliced = st.LoadOp(b.tensor.data, TensorType(element, [slices, n, ks]), layout=st.FRACTAL_NZ)
    else:  # b^T [N, K] row-major: like A
        b_sliced = st.LoadOp(b.tensor.data, TensorType(element, [slices, n, ks]), perm=(1, 0, 2))
    return a_sliced, b_sliced


def _partials_kernel(kernel: t.KernelOp, product: st.BatchMatmulOp, slices: int, workspace: str) -> t.KernelOp:
    out = t.KernelOp(kernel.sym_name.data, 1)
    out.attributes.update(kernel.attributes)
    a, b = _sliced_loads(product, slices)
    partial = st.BatchMatmulOp(a.result, b.result, product.transpose_b is not None)
    out.body.block.add_ops([a, b, partial, st.StoreOp(partial.result, workspace)])
    return out


def _sum_kernel(kernel: t.KernelOp, product: st.BatchMatmulOp, slices: int, workspace: str) -> t.KernelOp:
    """The kernel with its product replaced by the sum of the workspace's slices."""
    position = list(kernel.body.block.ops).index(product)
    out = kernel.clone()
    out.sym_name = StringAttr(f"{kernel.sym_name.data}_sum")
    out.attributes["kind"] = StringAttr(SPLIT_K_SUM_KIND)
    old = list(out.body.block.ops)[position]
    assert isinstance(old, st.BatchMatmulOp)
    shape = st.shape_of(old.result)
    m = shape[-2]
    source = [*shape[:-2], slices * m, shape[-1]]  # the workspace [R, M, N] as R row blocks
    loads = [st.LoadOp(workspace, TensorType(f32, shape), window=(source, [0] * (len(shape) - 2) + [r * m, 0]))
             for r in range(slices)]
    body = Block(arg_types=[f32] * slices)
    total = body.args[0]
    for arg in body.args[1:]:  # slice order: the same sum on every run
        add = arith.AddfOp(total, arg)
        body.add_op(add)
        total = add.result
    body.add_op(st.YieldOp([total]))
    added = st.MapOp([load.result for load in loads], TensorType(f32, shape), Region(body))
    out.body.block.insert_ops_before([*loads, added], old)
    old.result.replace_all_uses_with(added.result)
    a_load, b_load = old.a.owner, old.b.owner
    old.detach()
    old.erase()
    for load in (a_load, b_load):
        load.detach()  # type: ignore[union-attr]
        load.erase()  # type: ignore[union-attr]
    return out


def plan_split(kernel: t.KernelOp, config: TargetConfig, taken: set[str]) -> Split | None:
    """The cheapest split of `kernel`'s K, if it beats the kernel whole."""
    product = _product(kernel)
    name = f"{kernel.sym_name.data}_partials"
    if product is None or name in taken:
        return None
    try:
        whole = choose_tiling(kernel, config).cycles.data
    except TilingError:
        return None  # tile-select-tiling reports it
    m, n, k = product.contraction()
    best: Split | None = None
    costs = [f"whole {whole}"]
    for slices in slice_counts(k, elem_bytes(product.a.type.element_type)):  # type: ignore[attr-defined]
        partials = _partials_kernel(kernel, product, slices, name)
        total = _sum_kernel(kernel, product, slices, name)
        try:
            tilings = [choose_tiling(part, config) for part in (partials, total)]
        except TilingError:
            continue
        cycles = sum(tiling.cycles.data for tiling in tilings)
        costs.append(f"{slices} slices {cycles}")
        if cycles < whole and (best is None or cycles < best.cycles):
            for part, tiling in zip((partials, total), tilings):
                part.attributes[st.TILING_ATTR] = tiling
            workspace = t.TensorOp(properties={
                "name": StringAttr(name), "kind": StringAttr("internal"), "offset": IntegerAttr(0, i64),
                "type": TensorType(f32, [slices, m, n]), "layout": StringAttr("ND")})
            best = Split(partials, total, workspace, cycles)
    log.debug("tile-split-reduction: @%s (M %d, N %d, K %d) predicted cycles: %s", kernel.sym_name.data, m, n, k,
              ", ".join(costs))
    return best


def kernels_with_peers(prog: t.ProgramOp) -> set[t.KernelOp]:
    """The kernels of `prog` that another AI-core kernel (not a memset) is
    independent of -- neither waits for the other, through GM -- so that
    tile-assign-streams may run the two side by side."""
    tasks = streams.tasks_of(prog)
    preds = streams.dependences([streams.access_of(task) for task in tasks])
    before: list[int] = []  # per task, its ancestors as a bitmask
    for j, ps in enumerate(preds):
        mask = 0
        for p in ps:
            mask |= before[p] | (1 << p)
        before.append(mask)
    kernels = [j for j, task in enumerate(tasks) if isinstance(task, t.KernelOp) and not _is_memset(task)]
    return {tasks[i] for i in kernels  # type: ignore[misc]
            if any(j != i and not (before[j] >> i) & 1 and not (before[i] >> j) & 1 for j in kernels)}


def _is_memset(kernel: t.KernelOp) -> bool:
    kind = kernel.attributes.get("kind")
    return isinstance(kind, StringAttr) and kind.data == streams.MEMSET


def split_program(prog: t.ProgramOp, config: TargetConfig) -> int:
    """Split every kernel of `prog` that gains by it; the number split. The
    workspaces are annotated for the arena plan (`gm_arena.replan` places
    them); without a plan each takes fresh GM after every tensor."""
    block = prog.body.block
    tensors = [op for op in block.ops if isinstance(op, t.TensorOp)]
    taken = {op.tensor_name.data for op in tensors}
    end = max((op.offset.value.data + gm_arena.slot(tensor_nbytes(op.type)) for op in tensors), default=0)
    count = 0
    sum_tilings: dict = {}  # conv splits' sum kernels priced so far (split_conv.plan_conv_split)
    peers = kernels_with_peers(prog)
    for kernel in [op for op in block.ops if isinstance(op, t.KernelOp)]:
        if st.TILING_ATTR in kernel.attributes:
            continue
        if st.is_structured(kernel):
            split = plan_split(kernel, config, taken)
        else:
            split = plan_conv_split(kernel, config, taken, sum_tilings, kernel in peers)
        if split is None:
            continue
        workspace = split.workspace
        taken.add(workspace.tensor_name.data)
        nbytes = tensor_nbytes(workspace.type)
        end = -(-end // WORKSPACE_ALIGNMENT) * WORKSPACE_ALIGNMENT
        workspace.properties["offset"] = IntegerAttr(end, i64)
        end += gm_arena.slot(nbytes)
        gm_arena.annotate(workspace, gm_arena.Request(workspace.tensor_name.data, nbytes))
        block.insert_op_after(workspace, tensors[-1])
        tensors.append(workspace)
        block.insert_ops_before([split.partials, split.total], kernel)
        kernel.detach()
        kernel.erase()
        count += 1
    return count


@dataclass(frozen=True)
class TileSplitReductionPass(ModulePass):
    """Split the K of products and convs whose cores would each read long K panels (split-K, by the cost models)."""

    name = "tile-split-reduction"
    target: str = "davinci-910"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        config = load_target(self.target)
        for prog in op.body.block.ops:
            if not isinstance(prog, t.ProgramOp):
                continue
            try:
                summary = mem.memory_summary(prog)  # type: ignore[arg-type]
            except mem.NoPlanError:
                summary = {}
            if "device_memory_limit" in summary:
                continue
            count = split_program(prog, config)
            statistic("split-k-kernels", count, "products whose K was split over the cores")
            if count and summary:  # a planned arena: plan it again with the workspaces
                gm_arena.replan_recorded(prog)
