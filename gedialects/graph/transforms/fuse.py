"""graph-fuse: run the fusion-rule registry over the graph, with remarks.

Every registered rule (built-in and plugins, `gedialects.graph.fusion`) is
tried on the ops it anchors on, phase by phase, each phase to a fixpoint.
For every candidate the pass emits one remark (logger `gedialects.fuse`,
INFO, with the op attached):

    applied ConvBatchnormFusionPass at loc("conv1"): absorbed [conv1, bn1]
    missed ConvActivationFusionPass at loc("conv2"): intermediate has other users (...)

Applied remarks are emitted as the rewrites happen; missed ones at the end
(a rule looks at the op a rewrite creates again, so a miss on an op absorbed
by a rule of the same phase is dropped as stale; one of an earlier phase
stays: a GELU missed, then loop-fused, is reported). Options:

- `switch-file=FILE`: ATC's fusion switch file (JSON or `Name:off` lines);
- `disable=A,B`: rules switched off in addition;
- `report=FILE.json`: match/effect counts per rule (like ATC's fusion_result.json).

`ge-opt --fusion-switch-file` / `--fusion-report` set the first and last.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)
from xdsl.rewriter import InsertPoint
from xdsl.traits import ConstantLike
from xdsl.utils.exceptions import PassFailedException

from gedialects.graph import ops as g
from gedialects.graph.fusion import registry
from gedialects.graph.fusion.helpers import (
    ABSORBED,
    absorbed_attr,
    float_tensor,
    is_static,
)
from gedialects.graph.fusion.registry import (
    DYNAMIC_SHAPE,
    SWITCHED_OFF,
    UNSUPPORTED_ATTRIBUTE,
    UNSUPPORTED_DTYPE,
    FusionRule,
    Match,
    Miss,
    Rewrite,
    Switches,
)
from gedialects.graph.shapes import ShapeError
from gedialects.instrumentation import statistic
from gedialects.remarks import APPLIED, MISSED, Remark

log = logging.getLogger("gedialects.fuse")


@dataclass
class RuleStats:
    matched: int = 0
    applied: int = 0
    missed: Counter[str] = field(default_factory=Counter)


@dataclass
class FusionResult:
    """What one graph-fuse run did: its remarks (applied in order of
    application, then missed in the order found) and counts per rule."""

    rules: list[FusionRule]
    switches: Switches
    remarks: list[Remark] = field(default_factory=list)

    def stats(self) -> dict[str, RuleStats]:
        out = {r.name: RuleStats() for r in self.rules}
        for remark in self.remarks:
            s = out.setdefault(remark.rule, RuleStats())
            s.matched += 1
            if remark.kind == APPLIED:
                s.applied += 1
            else:
                s.missed[remark.reason] += 1
        return out

    def report(self) -> dict:
        """ATC's fusion_result.json shape: per category, per rule,
        `match_times` and `effect_times` (numbers, not strings), plus the
        switch state and the missed reasons."""
        stats = self.stats()
        sections = {registry.GRAPH_FUSION: "graph_fusion", registry.UB_FUSION: "ub_fusion"}
        out: dict[str, dict] = {"graph_fusion": {}, "ub_fusion": {}}
        for rule in self.rules:
            s = stats[rule.name]
            key = sections.get(rule.category, rule.category)
            out.setdefault(key, {})[rule.name] = {
                "match_times": s.matched,
                "effect_times": s.applied,
                "switch": "on" if self.switches.enabled(rule) else "off",
                "missed": dict(sorted(s.missed.items())),
            }
        return out


class _FusionDriver(RewritePattern):
    """Tries the rules of one phase on each op; applies the first match."""

    def __init__(self, rules: Sequence[FusionRule], run: _Run):
        self.rules = list(rules)
        self.run = run
        self._by_type: dict[type, list[FusionRule]] = {}

    def _rules_for(self, op: Operation) -> list[FusionRule]:
        t = type(op)
        found = self._by_type.get(t)
        if found is None:
            found = [r for r in self.rules if not r.anchors or isinstance(op, r.anchors)]
            self._by_type[t] = found
        return found

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if isinstance(op.parent_op(), g.FusionOp):
            return
        for rule in self._rules_for(op):
            key = (rule.name, id(op))
            result = rule.match(op)
            if result is None:
                self.run.misses.pop(key, None)
                continue
            if isinstance(result, Match):
                result = self.run.precheck(rule, result)
            if isinstance(result, Match):
                try:
                    rewrite = rule.rewrite(result)
                except ShapeError as e:  # the fused op would not verify
                    rewrite = Miss(op, UNSUPPORTED_ATTRIBUTE, str(e))
                if isinstance(rewrite, Rewrite):
                    self.run.misses.pop(key, None)
                    self.run.apply(rule, result, rewrite, rewriter)
                    return
                result = rewrite
            self.run.misses[key] = (rule, result)


class _Run:
    def __init__(self, rules: list[FusionRule], switches: Switches):
        self.result = FusionResult(rules, switches)
        self.switches = switches
        self.by_name = {r.name: r for r in rules}
        self.misses: dict[tuple[str, int], tuple[FusionRule, Miss]] = {}

    def precheck(self, rule: FusionRule, match: Match) -> Match | Miss:
        if not self.switches.enabled(rule):
            return Miss(match.anchor, SWITCHED_OFF)
        for name in rule.requires:
            needed = self.by_name.get(name)
            if needed is None or not self.switches.enabled(needed):
                return Miss(match.anchor, SWITCHED_OFF, f"it prepares {name}, which is off")
        for op in match.ops:
            for r in op.results:
                if not is_static(r):
                    return Miss(match.anchor, DYNAMIC_SHAPE, f"{op.name} result has type {r.type}")
        if rule.float_only:
            for op in match.ops:
                for r in op.results:
                    if not float_tensor(r):
                        return Miss(match.anchor, UNSUPPORTED_DTYPE, f"{op.name} result has type {r.type}")
        return match

    def apply(self, rule: FusionRule, match: Match, rewrite: Rewrite, rewriter: PatternRewriter) -> None:
        names = absorbed_attr(match.ops)
        remark = Remark(APPLIED, rule.name, match.anchor, absorbed=tuple(n.data for n in names.data))
        remark.emit(log)
        self.result.remarks.append(remark)

        self.forget_misses(match.ops, rule.phase)
        fused = rewrite.fused
        fused.attributes[ABSORBED] = names
        root = match.ops[-1]
        rewriter.insert(rewrite.ops, InsertPoint.before(rewrite.before or root))
        values = rewrite.values if rewrite.values is not None else dict(zip(root.results, fused.results))
        for old, new in values.items():
            rewriter.replace_all_uses_with(old, new)
        feeding = [o.owner for m in match.ops for o in m.operands if isinstance(o.owner, Operation)]
        pending = list(match.ops)
        while pending:
            dead = [m for m in pending if not any(r.uses for r in m.results)]
            if not dead:
                raise PassFailedException(
                    f"graph-fuse: rule {rule.name} left uses of "
                    + ", ".join(m.name for m in pending)
                    + " (a bug in the rule)"
                )
            for m in dead:
                pending.remove(m)
                rewriter.erase(m)
        # constants only the absorbed ops used (old weights, epsilons, ...)
        for op in dict.fromkeys(feeding):
            if (
                op.parent is not None
                and op.has_trait(ConstantLike)
                and not any(r.uses for r in op.results)
            ):
                rewriter.erase(op)

    def forget_misses(self, absorbed: list[Operation], phase: int) -> None:
        """An absorbed op's misses from rules of the running phase are stale:
        those rules look at the op that replaces it again. Misses from
        earlier phases stay (e.g. a GELU missed, then loop-fused)."""
        ids = {id(op) for op in absorbed}
        for key, (rule, _) in list(self.misses.items()):
            if key[1] in ids and rule.phase == phase:
                del self.misses[key]

    def finish(self) -> FusionResult:
        for rule, miss in self.misses.values():
            remark = Remark(MISSED, rule.name, miss.anchor, miss.reason, miss.detail)
            remark.emit(log)
            self.result.remarks.append(remark)
        self.misses.clear()
        return self.result


def fuse(
    module: builtin.ModuleOp,
    switches: Switches | None = None,
    disabled: Iterable[str] = (),
    rules: Sequence[FusionRule] | None = None,
) -> FusionResult:
    """Run the fusion rules (default: every registered rule) over `module`."""
    rules = list(rules) if rules is not None else registry.registered_rules()
    switches = Switches(dict(switches.by_name), dict(switches.by_category)) if switches else Switches()
    known = {r.name for r in rules}
    for name in disabled:
        if name not in known:
            raise PassFailedException(
                f"graph-fuse: unknown fusion rule '{name}' (known: {', '.join(sorted(known))})"
            )
        switches.by_name[name] = False
    for name in switches.unknown_names(known):
        log.warning("graph-fuse: the switch file names an unknown fusion rule '%s'; ignored", name)
    run = _Run(rules, switches)
    for phase in sorted({r.phase for r in rules}):
        driver = _FusionDriver([r for r in rules if r.phase == phase], run)
        PatternRewriteWalker(
            GreedyRewritePatternApplier([driver], dce_enabled=False)
        ).rewrite_module(module)
    result = run.finish()
    applied = sum(1 for r in result.remarks if r.kind == APPLIED)
    log.info("graph-fuse: %d fusions applied, %d candidates missed", applied, len(result.remarks) - applied)
    statistic("fusions-applied", applied, "fusion rules applied")
    statistic("fusions-missed", len(result.remarks) - applied, "candidates a rule found but could not fuse")
    return result


def write_report(result: FusionResult, path: str | Path) -> None:
    Path(path).write_text(json.dumps(result.report(), indent=2) + "\n")


@dataclass(frozen=True)
class GraphFusePass(ModulePass):
    """Fuse operators by the rules of the fusion registry (Conv+BN, epilogues,
    LayerNorm, GELU, Softmax+Reshape, loop fusion, plugins), with a remark for
    every candidate applied or missed."""

    name = "graph-fuse"

    switch_file: str = ""
    """ATC fusion switch file: JSON {"Switch": {"GraphFusion": {...}}} or `Name:off` lines."""
    report: str = ""
    """Write match/effect counts per rule to this JSON file."""
    disable: tuple[str, ...] = ()
    """Rule names to switch off: `disable=A` or `disable=A,B`."""

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        # folded weights may be new dense_resource blobs: the printer needs
        # the builtin dialect loaded to write them out
        ctx.get_optional_dialect("builtin")
        switches = None
        if self.switch_file:
            try:
                switches = registry.parse_switch_file(self.switch_file)
            except registry.SwitchFileError as e:
                raise PassFailedException(f"graph-fuse: {e}") from None
        names = (self.disable,) if isinstance(self.disable, str) else self.disable
        disabled = [n.strip() for n in names if n.strip()]
        result = fuse(op, switches, disabled)
        if self.report:
            try:
                write_report(result, self.report)
            except OSError as e:
                raise PassFailedException(
                    f"graph-fuse: cannot write the fusion report '{self.report}': {e.strerror}"
                ) from None
