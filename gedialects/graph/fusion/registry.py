"""The fusion-rule registry: what a rule is, which rules exist, which are on.

A rule (`FusionRule`) has an ATC-style name (`ConvBatchnormFusionPass`), a
one-line summary, the op types it anchors on, and two methods:

- `match(op)` looks at one op and answers `None` (no candidate here), a
  `Miss` (the anchor pattern is present but a precondition fails; the reason
  becomes a `missed` remark) or a `Match` (the source ops to absorb);
- `rewrite(match)` builds the replacement and returns a `Rewrite` (the new ops
  and which old values they replace). It never touches the IR: the
  `graph-fuse` driver inserts the new ops, redirects the uses, erases the
  absorbed ops, records their names in the fused op's `absorbed` attribute
  and emits the remark.

Rules run in phases (`Phase`), each to a fixpoint, so that e.g. Conv+BN has
folded before Conv+Relu looks for its Relu.

Users add rules from their own package through the entry-point group
`gedialects.fusion_rules` (value: a FusionRule subclass, an instance, or a
list of them), or at run time with `register_rule`. Rules are switched on and
off by ATC's fusion switch file (`parse_switch_file`).
"""

from __future__ import annotations

import json
import logging
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from importlib import metadata
from pathlib import Path
from typing import Any, ClassVar

from xdsl.ir import Operation, SSAValue

log = logging.getLogger("gedialects.fuse")

PLUGIN_GROUP = "gedialects.fusion_rules"
"""Entry-point group through which installed packages contribute rules."""

# ------------------------------------------------------------ missed reasons

DYNAMIC_SHAPE = "dynamic shape"
UNKNOWN_OP = "unknown/custom op"
OTHER_USERS = "intermediate has other users"
SWITCHED_OFF = "rule switched off"
UNSUPPORTED_DTYPE = "unsupported dtype"
UNSUPPORTED_ATTRIBUTE = "unsupported attribute"
NOT_CONSTANT = "operand not constant"
REASONS = (
    DYNAMIC_SHAPE,
    UNKNOWN_OP,
    OTHER_USERS,
    SWITCHED_OFF,
    UNSUPPORTED_DTYPE,
    UNSUPPORTED_ATTRIBUTE,
    NOT_CONSTANT,
)
"""The reason categories a `Miss` may give (the report counts by these)."""

GRAPH_FUSION = "GraphFusion"
UB_FUSION = "UBFusion"
"""Rule categories, as the sections of ATC's switch file and fusion report."""


class Phase(IntEnum):
    """When a rule runs; each phase runs to a fixpoint before the next."""

    RECOGNIZE = 0
    """Rebuild decomposed operators (LayerNorm, GELU, Softmax+Reshape)."""
    FOLD = 1
    """Fold constants into weights (Conv+BN, Conv+Mul/Add)."""
    ATTENTION = 2
    """Recognise scaled dot-product attention (before epilogues take its scale and mask)."""
    EPILOGUE = 3
    """Attach bias/residual/activation epilogues to heavy ops."""
    LOOP = 4
    """Group what is left of elementwise chains (loop fusion)."""
    HORIZONTAL = 5
    """Merge products that read one input (their epilogues are final by now)."""


# -------------------------------------------------------- match and rewrite


@dataclass
class Match:
    """A candidate that satisfies every precondition of its rule.

    `ops` are the source ops the fused op replaces (the anchor among them),
    each either used only inside the match or replaced by `Rewrite.values`.
    `data` is whatever the rule wants to hand from `match` to `rewrite`.
    """

    anchor: Operation
    ops: list[Operation]
    data: Any = None


@dataclass
class Miss:
    """A candidate that fails a precondition: `reason` is one of `REASONS`."""

    anchor: Operation
    reason: str
    detail: str = ""


@dataclass
class Rewrite:
    """The replacement of a match: `ops` are inserted (in order) before the
    last matched op, or before `before`; `fused` is the op that records what
    it absorbed; `values` maps old values to their replacements (default:
    the results of the last matched op to the results of `fused`)."""

    ops: list[Operation]
    fused: Operation
    values: Mapping[SSAValue, SSAValue] | None = None
    before: Operation | None = None
    """Where the new ops go when that is not before the last matched op (a
    horizontal fusion's: before the first, which every reader follows)."""


class FusionRule(ABC):
    """A named, switchable fusion rule (see the module docstring)."""

    name: ClassVar[str]
    """ATC-style CamelCase name, e.g. `ConvBatchnormFusionPass`."""
    summary: ClassVar[str] = ""
    """One line for `--help`-like listings and the docs."""
    anchors: ClassVar[tuple[type[Operation], ...]] = ()
    """Op types `match` is called on; empty means every op."""
    phase: ClassVar[Phase] = Phase.EPILOGUE
    category: ClassVar[str] = GRAPH_FUSION
    float_only: ClassVar[bool] = True
    """Refuse (missed: unsupported dtype) matches on non-float tensors."""
    requires: ClassVar[tuple[str, ...]] = ()
    """Rules (by name) this one only prepares the ground for: it is off
    (missed: rule switched off) whenever one of them is."""

    @abstractmethod
    def match(self, op: Operation) -> Match | Miss | None: ...

    @abstractmethod
    def rewrite(self, match: Match) -> Rewrite | Miss: ...

    def __repr__(self) -> str:
        return f"<fusion rule {self.name}>"


# ------------------------------------------------------------------ registry

_RULES: dict[str, FusionRule] = {}
_builtins_loaded = False
_plugins_loaded: dict[str, list[str]] = {}
"""Entry points loaded so far (`name=value`) and the rules each gave."""


def register_rule(rule: FusionRule | type[FusionRule], *, replace: bool = False) -> FusionRule:
    """Add a rule (a FusionRule subclass or instance) to the registry.

    A second rule of the same name is an error unless `replace` is true.
    Returns the registered instance.
    """
    instance = rule() if isinstance(rule, type) else rule
    if not isinstance(instance, FusionRule):
        raise TypeError(f"{rule!r} is not a FusionRule")
    name = getattr(instance, "name", "")
    if not name or not isinstance(name, str):
        raise ValueError(f"fusion rule {type(instance).__name__} has no name")
    _load_builtins()
    if name in _RULES and not replace and _RULES[name] is not instance:
        raise ValueError(f"a fusion rule named {name} is already registered")
    _RULES[name] = instance
    return instance


def unregister_rule(name: str) -> None:
    """Remove a rule; a plugin entry point that provided it may load again."""
    _RULES.pop(name, None)
    for key, names in list(_plugins_loaded.items()):
        if name in names:
            del _plugins_loaded[key]


def _load_builtins() -> None:
    global _builtins_loaded
    if _builtins_loaded:
        return
    _builtins_loaded = True
    from gedialects.graph.fusion.rules import BUILTIN_RULES

    for rule in BUILTIN_RULES:
        _RULES.setdefault(rule.name, rule())


def _rules_of(obj: Any) -> list[FusionRule]:
    if isinstance(obj, FusionRule) or (isinstance(obj, type) and issubclass(obj, FusionRule)):
        return [obj() if isinstance(obj, type) else obj]
    if isinstance(obj, Iterable) and not isinstance(obj, str | bytes):
        return [r for item in obj for r in _rules_of(item)]
    if callable(obj):
        return _rules_of(obj())
    raise TypeError(f"{obj!r} is neither a FusionRule nor a list of them")


def load_plugins(entry_points: Sequence[metadata.EntryPoint] | None = None) -> list[str]:
    """Register the rules of every installed `gedialects.fusion_rules` entry
    point not loaded yet; return the names of the rules added.

    An entry point's value may be a FusionRule subclass, an instance, a list
    of them, or a function returning one of these. A broken plugin is
    reported (log warning) and skipped, not fatal.
    """
    _load_builtins()
    if entry_points is None:
        entry_points = list(metadata.entry_points(group=PLUGIN_GROUP))
    added: list[str] = []
    for ep in entry_points:
        key = f"{ep.name}={ep.value}"
        if key in _plugins_loaded:
            continue
        _plugins_loaded[key] = []
        try:
            rules = _rules_of(ep.load())
            for rule in rules:
                register_rule(rule)
                added.append(rule.name)
                _plugins_loaded[key].append(rule.name)
        except Exception as e:  # noqa: BLE001 (a plugin must not break the compiler)
            log.warning("fusion rule plugin '%s' (%s) not loaded: %s", ep.name, ep.value, e)
    return added


def registered_rules() -> list[FusionRule]:
    """Every rule (built-in and plugins), in the order they are tried:
    by phase, then in registration order."""
    load_plugins()
    return sorted(_RULES.values(), key=lambda r: int(r.phase))


def get_rule(name: str) -> FusionRule:
    load_plugins()
    return _RULES[name]


# ------------------------------------------------------------------ switches


@dataclass
class Switches:
    """Which rules are on: explicit per-name settings win over a section's
    `ALL`; everything is on by default."""

    by_name: dict[str, bool] = field(default_factory=dict)
    by_category: dict[str, bool] = field(default_factory=dict)

    def enabled(self, rule: FusionRule) -> bool:
        if rule.name in self.by_name:
            return self.by_name[rule.name]
        return self.by_category.get(rule.category, True)

    def unknown_names(self, known: Iterable[str]) -> list[str]:
        names = set(known)
        return [n for n in self.by_name if n not in names]


class SwitchFileError(ValueError):
    pass


def _on_off(value: Any, where: str) -> bool:
    text = str(value).strip().lower()
    if text not in ("on", "off"):
        raise SwitchFileError(f"{where}: expected 'on' or 'off', got '{value}'")
    return text == "on"


def parse_switch_text(text: str, source: str = "<switch file>") -> Switches:
    """Parse ATC's fusion switch file, in either of its forms:

    - JSON: `{"Switch": {"GraphFusion": {"ALL": "on", "ConvBatchnormFusionPass": "off"},
      "UBFusion": {...}}}`;
    - lines `Name:on` / `Name:off` (`ALL:off` too), `#` comments and blank lines ignored.
    """
    switches = Switches()
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            data = json.loads(stripped)
        except json.JSONDecodeError as e:
            raise SwitchFileError(f"{source}:{e.lineno}:{e.colno}: invalid JSON: {e.msg}") from None
        sections = data.get("Switch") if isinstance(data, dict) else None
        if not isinstance(sections, dict):
            raise SwitchFileError(f'{source}: expected {{"Switch": {{"GraphFusion": {{...}}}}}}')
        for category, entries in sections.items():
            if not isinstance(entries, dict):
                raise SwitchFileError(f"{source}: section '{category}' must map names to on/off")
            for name, value in entries.items():
                on = _on_off(value, f"{source}: {category}.{name}")
                if name == "ALL":
                    switches.by_category[category] = on
                else:
                    switches.by_name[name] = on
        return switches
    for lineno, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name, colon, value = line.partition(":")
        if not colon or not name.strip():
            raise SwitchFileError(f"{source}:{lineno}: expected 'Name:on' or 'Name:off', got '{line}'")
        on = _on_off(value, f"{source}:{lineno}")
        if name.strip() == "ALL":
            for category in (GRAPH_FUSION, UB_FUSION):
                switches.by_category[category] = on
        else:
            switches.by_name[name.strip()] = on
    return switches


def parse_switch_file(path: str | Path) -> Switches:
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise SwitchFileError(f"cannot read fusion switch file '{path}': {e.strerror}") from None
    return parse_switch_text(text, str(path))
