"""The AI CPU: what an AI-CPU task (`npu.aicpu`) computes, what it costs, and
how its body travels in the offline model.

The AI CPU is the set of ARM cores beside the AI cores on the SoC. GE places
there the ops that have no AI-core kernel; its kernel library is the graph
dialect's reference kernels (`gedialects.graph.interpreter.evaluate`), so an
AI-CPU task computes exactly what the reference interpreter computes.

Deliberate exception (docs/NPU.md, "AI CPU"): `target/` imports only the npu
dialect, except this module, which imports the graph dialect (ops, kernels,
parser context) to run task bodies. Keep every graph import here.

* `task_from_op(op)`: an `npu.aicpu` -> `AicpuTask` (body printed in generic
  form as a `func.func` in a module, so the .om can carry it as text).
* `parse_body(text, name)`: the body text back (AssemblyError if it does not
  parse, verify or match the task).
* `execute(task, gm)`: read inputs from GM, evaluate, write outputs.
* `op_work(op)` / `body_work(fn)`: the work the cost model charges
  (`TargetConfig.aicpu_cycles(bytes, work)`).
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Sequence

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, Builtin, FunctionType, ModuleOp, StringAttr, TensorType
from xdsl.ir import Operation, Region
from xdsl.printer import Printer
from xdsl.rewriter import Rewriter
from xdsl.utils.exceptions import ParseError

from gedialects.graph import ops as g
from gedialects.graph.interpreter import KERNELS, evaluate
from gedialects.graph.tensors import numpy_dtype as element_dtype
from gedialects.location import describe_op
from gedialects.npu import ops as npu
from gedialects.textual import GeParser
from target.errors import AssemblyError, SimulationError
from target.program import AicpuTask, TaskTensor

# ---------------------------------------------------------------------------
# Body text
# ---------------------------------------------------------------------------


def body_dialects():
    """The dialects a task body uses (for contexts that parse npu programs)."""
    return [Builtin, func.Func, g.Graph]


def body_context() -> Context:
    ctx = Context()
    for dialect in body_dialects():
        ctx.load_dialect(dialect)
    return ctx


def _body_module(op: npu.AicpuOp) -> ModuleOp:
    """The task body as `func.func @<task>(logical inputs) -> logical outputs`."""
    region: Region = op.body.clone()
    block = region.block
    ret = block.last_op
    assert isinstance(ret, npu.AicpuReturnOp)
    Rewriter.replace_op(ret, func.ReturnOp(*ret.values))
    fn = func.FuncOp(
        op.task_name,
        FunctionType.from_lists([a.type for a in block.args], [v.type for v in block.last_op.operands]),
        region,
    )
    return ModuleOp([fn])


def _print_generic(module: ModuleOp) -> str:
    out = io.StringIO()
    printer = Printer(stream=out, print_generic_format=True, print_debuginfo=True)
    printer.print_op(module)
    printer.print_metadata([Builtin])  # dense_resource blobs the body uses
    out.write("\n")
    return out.getvalue()


def _one_line(e: BaseException) -> str:
    """The message of an exception, one line (no source excerpt or op dump)."""
    if isinstance(e, ParseError):
        loc = e.span.get_location()
        msg = e.msg.strip().splitlines()[0] if e.msg.strip() else "parse error"
        return f"line {loc.line}:{loc.col}: {msg}"
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    return lines[0] if lines else type(e).__name__


def parse_body(text: str, name: str) -> func.FuncOp:
    """Parse a task body back from the .om; AssemblyError (one line) naming the
    task if it does not parse, does not verify, or is not one func.func."""
    try:
        module = GeParser(body_context(), text, f"<AI-CPU task '{name}'>").parse_module()
        module.verify()
    except Exception as e:  # whatever is wrong with the text: one line naming the task
        raise AssemblyError(f"AI-CPU task '{name}': the body does not parse or verify: {_one_line(e)}") from None
    fns = [op for op in module.ops if isinstance(op, func.FuncOp)]
    if len(fns) != 1 or len(list(module.ops)) != 1:
        raise AssemblyError(f"AI-CPU task '{name}': the body must be a module holding one func.func")
    return fns[0]


def check_body(fn: func.FuncOp, name: str, ins: Sequence[TaskTensor], outs: Sequence[TaskTensor]) -> None:
    """The body matches the task's operands, and the AI CPU can run every op."""
    where = f"AI-CPU task '{name}'"
    args = list(fn.body.block.args)
    ret = fn.body.block.last_op
    if not isinstance(ret, func.ReturnOp):
        raise AssemblyError(f"{where}: the body does not end with func.return")
    for kind, slots, values in (("input", ins, args), ("output", outs, list(ret.arguments))):
        if len(slots) != len(values):
            raise AssemblyError(f"{where}: the body has {len(values)} {kind}(s), the task {len(slots)}")
        for i, (slot, v) in enumerate(zip(slots, values)):
            t = v.type
            if not isinstance(t, TensorType) or tuple(t.get_shape()) != slot.shape:
                raise AssemblyError(f"{where}: {kind} #{i} of the body is {t}, the task stores shape {list(slot.shape)}")
            logical = element_dtype(t.get_element_type())
            stored = np.dtype(slot.dtype)
            if logical != stored and not (logical.kind == stored.kind == "f"):
                raise AssemblyError(f"{where}: {kind} #{i} of the body is {logical.name}, stored as {stored.name}")
    for op in fn.walk():
        if op is fn or isinstance(op, (func.ReturnOp, g.YieldOp)):
            continue
        if type(op) not in KERNELS:
            raise AssemblyError(
                f"{where}: {describe_op(op)} has no AI-CPU kernel (the graph reference "
                f"interpreter cannot evaluate it)"
            )


def _slots(slots) -> tuple[TaskTensor, ...]:
    out = []
    for offset, t, scale in slots:
        dtype = element_dtype(t.get_element_type())
        out.append(TaskTensor(offset, dtype.name, tuple(t.get_shape()), scale))
    return tuple(out)


def _str_attr(op: Operation, key: str) -> str:
    a = op.attributes.get(key)
    return a.data if isinstance(a, StringAttr) else ""


def _strs_attr(op: Operation, key: str) -> tuple[str, ...]:
    a = op.attributes.get(key)
    if not isinstance(a, ArrayAttr):
        return ()
    return tuple(x.data for x in a.data if isinstance(x, StringAttr))


def task_from_op(op: npu.AicpuOp) -> AicpuTask:
    """Assemble one `npu.aicpu` (already verified)."""
    module = _body_module(op)
    fn = next(iter(module.ops))
    assert isinstance(fn, func.FuncOp)
    ins, outs = _slots(op.ins()), _slots(op.outs())
    check_body(fn, op.task_name, ins, outs)
    return AicpuTask(
        name=op.task_name,
        ins=ins,
        outs=outs,
        body=_print_generic(module),
        kind=_str_attr(op, "ge.kind") or "aicpu",
        absorbed=_strs_attr(op, "ge.absorbed"),
        source=_str_attr(op, "ge.source"),
        reason=_str_attr(op, "ge.reason"),
        func=fn,
        work=body_work(fn),
    )


def reload_task(task: AicpuTask) -> AicpuTask:
    """A task read from an .om: parse and check its body (AssemblyError if bad)."""
    fn = parse_body(task.body, task.name)
    check_body(fn, task.name, task.ins, task.outs)
    return AicpuTask(
        name=task.name,
        ins=task.ins,
        outs=task.outs,
        body=task.body,
        kind=task.kind,
        absorbed=task.absorbed,
        source=task.source,
        reason=task.reason,
        func=fn,
        work=body_work(fn),
    )


# ---------------------------------------------------------------------------
# Work: what the cost model charges per body op
# ---------------------------------------------------------------------------

# Multiply-accumulates.
MAC_OPS = frozenset({"graph.matmul", "graph.gemm", "graph.einsum", "graph.conv", "graph.conv_transpose"})
# Every input element is read and combined: reductions, softmax, normalisations, scans.
INPUT_OPS = frozenset(
    {
        "graph.softmax",
        "graph.log_softmax",
        "graph.layer_norm",
        "graph.batch_norm",
        "graph.instance_norm",
        "graph.group_norm",
        "graph.lrn",
        "graph.global_avg_pool",
        "graph.global_max_pool",
        "graph.cumsum",
        "graph.argmax",
        "graph.argmin",
        "graph.topk",
    }
)
# Windowed reductions: output elements x window size.
WINDOW_OPS = frozenset({"graph.max_pool", "graph.avg_pool"})
# Nothing to compute: constants are part of the task's binary, shapes are static.
FREE_OPS = frozenset({"graph.constant", "graph.fill", "graph.shape"})


def work_rule(op: Operation) -> str:
    """Which rule charges `op`: "macs", "input", "window", "free", "region" or
    "output" (elementwise and data movement: transpose, gather, pad, concat,
    slice, reshape, cast, ...: one unit per output element)."""
    name = op.name
    if name in MAC_OPS:
        return "macs"
    if name in INPUT_OPS or name.startswith("graph.reduce_"):
        return "input"
    if name in WINDOW_OPS:
        return "window"
    if name in FREE_OPS:
        return "free"
    if isinstance(op, g.FusionOp):
        return "region"
    return "output"


def _shape(value) -> tuple[int, ...]:
    t = value.type
    if not isinstance(t, TensorType):
        return ()
    return tuple(max(int(d), 1) for d in t.get_shape())  # a dynamic dim counts as 1


def _count(value) -> int:
    return math.prod(_shape(value))


def _ints(op: Operation, key: str) -> tuple[int, ...]:
    attr = op.properties.get(key) or op.attributes.get(key)
    if attr is None or not hasattr(attr, "get_values"):
        return ()
    return tuple(int(v) for v in attr.get_values())


def _int(op: Operation, key: str, default: int) -> int:
    attr = op.properties.get(key) or op.attributes.get(key)
    value = getattr(attr, "value", None)
    return int(value.data) if value is not None else default


def _einsum_macs(op: Operation) -> int | None:
    attr = op.properties.get("equation") or op.attributes.get("equation")
    if not isinstance(attr, StringAttr):
        return None
    lhs = attr.data.replace(" ", "").split("->")[0]
    terms = lhs.split(",")
    if len(terms) != len(op.operands):
        return None
    sizes: dict[str, int] = {}
    for term, value in zip(terms, op.operands):
        shape = _shape(value)
        if "..." in term:
            head, tail = term.split("...")
            n_ell = len(shape) - len(head) - len(tail)
            labels = list(head) + [f"...{i}" for i in range(n_ell)] + list(tail)
        else:
            labels = list(term)
        if len(labels) != len(shape) or any(not (re.fullmatch(r"[a-zA-Z]", x) or x.startswith("...")) for x in labels):
            return None
        for label, d in zip(labels, shape):
            sizes[label] = max(sizes.get(label, 1), d)
    return math.prod(sizes.values())


def _macs(op: Operation) -> int:
    out = _count(op.results[0]) if op.results else 0
    name = op.name
    if name == "graph.matmul":
        a = _shape(op.operands[0])
        return out * (a[-1] if a else 1)
    if name == "graph.gemm":
        a = _shape(op.operands[0])
        k = a[0] if _int(op, "trans_a", 0) else a[-1]
        return out * k
    if name == "graph.conv":
        return out * math.prod(_shape(op.operands[1])[1:])
    if name == "graph.conv_transpose":
        return _count(op.operands[0]) * math.prod(_shape(op.operands[1])[1:])
    macs = _einsum_macs(op)
    return macs if macs is not None else out


def op_work(op: Operation) -> int:
    """Work units of one body op (see `work_rule`)."""
    rule = work_rule(op)
    if rule == "free":
        return 0
    if rule == "macs":
        return _macs(op)
    if rule == "input":
        return _count(op.operands[0]) if op.operands else 0
    if rule == "window":
        kernel = _ints(op, "kernel_shape")
        return sum(_count(r) for r in op.results) * math.prod(kernel or (1,))
    if rule == "region":
        return sum(op_work(inner) for inner in op.regions[0].block.ops)
    return sum(_count(r) for r in op.results)


def body_work(fn: func.FuncOp) -> int:
    return sum(op_work(op) for op in fn.body.block.ops)


# ---------------------------------------------------------------------------
# Execution
# ---------------------------------------------------------------------------


def execute(task: AicpuTask, gm: np.ndarray, gm_size: int) -> None:
    """Run `task` on the GM byte array: inputs read as stored, converted to the
    body's types and scaled; the body evaluated op by op with the reference
    kernels; results divided by their scale and cast to the stored type (fp16
    overflow gives inf, as in the vector unit)."""
    fn = task.func
    assert isinstance(fn, func.FuncOp), "an AicpuTask must be assembled or reloaded before it runs"
    where = f"AI-CPU task '{task.name}'"
    block = fn.body.block
    env = {}
    for i, (slot, arg) in enumerate(zip(task.ins, block.args)):
        _check_range(where, f"input #{i}", slot, gm_size)
        raw = gm[slot.offset : slot.offset + slot.nbytes]
        stored = raw.view(slot.dtype).reshape(slot.shape)
        logical = element_dtype(arg.type.element_type)  # type: ignore[attr-defined]
        x = stored.astype(logical)
        if slot.scale != 1.0:
            x = (x * logical.type(slot.scale)).astype(logical, copy=False)
        env[arg] = x
    results = None
    for op in block.ops:
        if isinstance(op, func.ReturnOp):
            results = [env[v] for v in op.arguments]
            break
        try:
            values = evaluate(op, [env[v] for v in op.operands])
        except Exception as e:  # a kernel refusing its inputs: one line, naming the op
            raise SimulationError(f"{where}: {describe_op(op)}: {_one_line(e)}") from None
        env.update(zip(op.results, values))
    assert results is not None
    for i, (slot, value) in enumerate(zip(task.outs, results)):
        _check_range(where, f"output #{i}", slot, gm_size)
        y = np.asarray(value)
        if tuple(y.shape) != slot.shape:
            raise SimulationError(f"{where}: output #{i} has shape {list(y.shape)}, the task stores {list(slot.shape)}")
        if slot.scale != 1.0:
            y = y / y.dtype.type(slot.scale)
        data = np.ascontiguousarray(y.astype(slot.dtype, copy=False))
        gm[slot.offset : slot.offset + slot.nbytes] = data.view(np.uint8).ravel()


def _check_range(where: str, what: str, slot: TaskTensor, gm_size: int) -> None:
    if slot.offset < 0 or slot.offset + slot.nbytes > gm_size:
        raise SimulationError(
            f"{where}: {what} gm [{slot.offset}, {slot.offset + slot.nbytes}) is out of "
            f"bounds (gm_size {gm_size} bytes)"
        )
