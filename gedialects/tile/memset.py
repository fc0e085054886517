"""Memset kernels: zero a GM tensor before its first writer, so that a
tensor relying on zeros no kernel writes (a zero halo, channels padded up to
a whole fractal) can take storage another tensor used before (GE's
AtomicAddrClean task). The GM arena plan says which tensors need one
(`gedialects.tile.gm_arena.plan_arena(clear=True)`); convert-graph-to-tile
and tile-fit-device-memory insert them (`insert_memsets`).

A memset is a structured vector kernel, a constant map stored over the
tensor's whole stored shape, so the tile passes tile and distribute it like
any other; `kind = "memset"` tells the stream scheduler it must stay ordered
with the tensor's other writers (gedialects/tile/streams.py)."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import arith
from xdsl.dialects.builtin import FloatAttr, StringAttr, TensorType
from xdsl.ir import Block, Region

from gedialects.tile import ops as t
from gedialects.tile import structured as st
from gedialects.tile import streams
from gedialects.tile.streams import MEMSET as KIND


def memset_kernel(name: str, tensor: str, ttype: TensorType) -> t.KernelOp:
    """A kernel `name` writing zeros over GM tensor `tensor` of stored type `ttype`."""
    element = ttype.element_type  # a map's: f16 or f32
    body = Block()
    constant = arith.ConstantOp(FloatAttr(0.0, element))
    body.add_ops([constant, st.YieldOp([constant.result])])
    kernel = t.KernelOp(name, 1)
    fill = st.MapOp([], TensorType(element, ttype.get_shape()), Region(body))
    kernel.body.block.add_ops([fill, st.StoreOp(fill.result, tensor)])
    kernel.attributes["kind"] = StringAttr(KIND)
    kernel.attributes["op_type"] = StringAttr(KIND)
    kernel.attributes["source"] = StringAttr(f"memset of {tensor}")
    return kernel


def insert_memsets(prog: t.ProgramOp, names: list[str], stored_type: Callable[[str], TensorType],
                   kernel_name: Callable[[], str]) -> None:
    """A memset kernel (named by `kernel_name()`) right before the first task
    that accesses each tensor of `names` (its stored type `stored_type(name)`)."""
    first: dict[str, object] = {}
    for task in streams.tasks_of(prog):
        for tensor in streams.access_of(task).tensors:
            first.setdefault(tensor, task)
    for name in names:
        prog.body.block.insert_op_before(memset_kernel(kernel_name(), name, stored_type(name)), first[name])
