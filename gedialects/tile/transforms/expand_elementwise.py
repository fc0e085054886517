"""Expansion of a tiled `tile.elementwise` (gedialects/tile/elementwise.py)
into its loop: tile-expand-structured runs it on every elementwise kernel
with a `#tile.elementwise_tiling`, and the tiling's cost model dry-runs it.

Tiles = (C1 slice, band of rows), contiguous runs per core, the loop
pipelined: each map input's band GM -> UB (its halo left behind; a run of
inputs viewing one tensor evenly apart, `input_runs`, in one copy), the body
on the vector unit over the band
(the map-body emitter: a per-channel operand broadcast along the pixels
with stride 0, scalars as immediates, a result written in place into an
operand that dies with it), each output UB -> GM. A per-channel input is
copied to UB whole, once, before the loop; a tile reads its slice's C0
values there. Loads and outputs are double-buffered; the body's temporaries
are single buffers of the kernel."""

from __future__ import annotations

from xdsl.ir import Block

from gedialects.npu.isa import BLOCK_BYTES
from gedialects.tile import ops as t
from gedialects.tile.builder import TileKernelBuilder
from gedialects.tile.conv import MapViewAttr
from gedialects.tile.elementwise import ElementwiseOp, ElementwiseTilingAttr
from gedialects.tile.transforms.map_body import MapBodyEmitter
from gedialects.tile.transforms.ub_buffers import Buffer, BufferPool, elem_bytes


def expand_elementwise(kernel_op: t.KernelOp, op: ElementwiseOp, tiling: ElementwiseTilingAttr) -> None:
    """Rewrite the body of `kernel_op` (which computes `op`) into its loop."""
    old = kernel_op.body.block  # the new body is built in a fresh block; the old one (the op) goes after
    kernel_op.body.detach_block(old)
    kernel_op.body.add_block(Block())
    build_elementwise(kernel_op, op, tiling.value("band_rows"), tiling.value("cores"))
    old.erase(safe_erase=False)


def build_elementwise(kernel_op: t.KernelOp, op: ElementwiseOp, band_rows: int, block_dim: int) -> None:
    """Write the loop of `op` with bands of `band_rows` rows over `block_dim`
    cores into `kernel_op`'s (empty) body."""
    elem = op.outputs[0].type.element  # type: ignore[attr-defined]
    es = elem_bytes(elem)
    c0 = BLOCK_BYTES // es
    _, C, H, W = op.map_shape()
    C1 = -(-C // c0)
    bands = H // band_rows
    pixels = band_rows * W
    kernel = TileKernelBuilder(kernel_op, elem)
    pool = BufferPool(lambda element, n, buffers: kernel.alloc_at_entry("ub", element, n, buffers))
    # a band or a per-channel block is rows of C0; a constant a compare or
    # select needs as a vector is a column of one, broadcast through brcb
    emitter = MapBodyEmitter(kernel, pool, lambda box: ("column", 1) if box[-1] == 1 else ("row", box[-1]))
    per_channel = [op.per_channel(k) for k in range(len(op.inputs))]
    gm_ins = [kernel.gm(t.gm_tensor_of(v)) for v in op.inputs]  # type: ignore[arg-type]
    gm_outs = [kernel.gm(t.gm_tensor_of(v)) for v in op.outputs]  # type: ignore[arg-type]
    # a per-channel input's C values go to UB once, before the tiles (a few
    # hundred bytes; per tile, each would pay the GM latency again)
    ins = []
    runs = input_runs(op)
    for k, (gm, view, chan) in enumerate(zip(gm_ins, op.views(), per_channel)):
        if chan:
            whole = kernel.alloc("ub", C1 * c0, "ND")
            kernel.copy(whole, kernel.at(gm, view.origin.data), [C1, c0], [c0, 1], [view.slice_stride.data, 1])
            ins.append(whole)
        elif runs[k][1] == 0:  # a run's first map holds the whole run's bands, one after another
            ins.append(kernel.alloc("ub", runs[k][0] * pixels * c0, "NC1HWC0", buffers=2))
        else:
            ins.append(ins[k - runs[k][1]])
    outs = [kernel.alloc("ub", pixels * c0, "NC1HWC0", buffers=2) for _ in op.outputs]

    def band_at(c1, band, view: MapViewAttr):
        return kernel.add(kernel.mul(c1, view.slice_stride.data), kernel.mul(band, band_rows * view.padded_w.data * c0))

    with kernel.tiles(C1 * bands, block_dim, pipeline=True) as tile:
        c1 = kernel.div(tile, bands)
        band = kernel.rem(tile, bands)
        args = []
        for k, (buf, gm, view, chan) in enumerate(zip(ins, gm_ins, op.views(), per_channel)):
            if chan:  # this slice's C0 values, broadcast over the band's pixels
                args.append(Buffer(kernel.at(buf, 0, kernel.mul(c1, c0)), (1, c0), elem, "row", c0))
                continue
            count, index, step = runs[k]
            src = kernel.at(gm, view.origin.data, band_at(c1, band, view))
            if count == 1:  # the band's rows, without the halo
                kernel.copy(buf, src, [band_rows, W * c0], [W * c0, 1], [view.padded_w.data * c0, 1])
            elif index == 0:  # of every map of the run: one copy
                kernel.copy(buf, src, [count, band_rows, W * c0], [pixels * c0, W * c0, 1],
                            [step, view.padded_w.data * c0, 1])
            args.append(Buffer(kernel.at(buf, index * pixels * c0) if count > 1 else buf, (pixels, c0), elem, "row", c0))
        results = [Buffer(buf, (pixels, c0), elem, "row", c0) for buf in outs]
        emitter.run_into(op.body.block, args, results, {a for a, chan in zip(args, per_channel) if not chan})
        for buf, gm, view in zip(outs, gm_outs, op.out_views()):
            kernel.copy(kernel.at(gm, view.origin.data, band_at(c1, band, view)), buf, [band_rows, W * c0],
                        [view.padded_w.data * c0, 1], [W * c0, 1])


def input_runs(op: ElementwiseOp) -> list[tuple[int, int, int]]:
    """Per input, (maps in its run, its index in the run, elements between
    the run's maps): consecutive map inputs that view one GM tensor alike
    but for origins evenly `step` apart (split-K's partials, runs of one
    workspace) are one run, loaded per tile in one copy; any other input is
    a run of one."""
    views, refs = op.views(), [t.gm_tensor_of(v) for v in op.inputs]
    out: list[tuple[int, int, int]] = []
    k = 0
    while k < len(views):
        end, step = k + 1, 0
        if not op.per_channel(k):
            while end < len(views) and refs[end] == refs[k] and not op.per_channel(end) and (
                    views[end].dims, views[end].slice_stride, views[end].padded_w) == (
                    views[k].dims, views[k].slice_stride, views[k].padded_w):
                gap = views[end].origin.data - views[end - 1].origin.data
                if gap <= 0 or (step and gap != step):
                    break
                step, end = gap, end + 1
        out.extend((end - k, i, step) for i in range(end - k))
        k = end
    return out
