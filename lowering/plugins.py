"""Kernel plugins: packages that bring their own ops to the AI core.

A package declares an entry point in the group `gedialects.kernels` whose
value is a function taking no arguments; it is called once, before the
first partition or lowering, and registers what the package brings with the
same calls the built-in kernels use:

* `lowering.map_bodies.ELEMENTWISE[MyOp] = body` — the scalar body of an
  elementwise op; with it the vector family's legality rule and pattern
  accept the op (`lowering.graph_to_tile.vector.elementwise`);
* `lowering.graph_to_tile.registry.lowers(MyOp, family=...)` — a pattern of
  its own; `lowering.legality.vector_rule(MyOp)` — its legality rule;
* `gedialects.graph.interpreter.kernel(MyOp)` — its reference kernel (the
  oracle, and the AI-CPU implementation).

Its dialect reaches ge-opt through xDSL's own `xdsl.universe` entry point and
its fusion rules through `gedialects.fusion_rules`. examples/custom_dialect is
a complete one. A broken plugin is a log warning, not a crash.
"""

from __future__ import annotations

import logging
from importlib import metadata

log = logging.getLogger("gedialects.plugins")

PLUGIN_GROUP = "gedialects.kernels"
_loaded: set[str] = set()


def load_kernel_plugins() -> list[str]:
    """Call every installed `gedialects.kernels` entry point not called yet;
    returns the names of those called now."""
    called = []
    for ep in metadata.entry_points(group=PLUGIN_GROUP):
        key = f"{ep.name}={ep.value}"
        if key in _loaded:
            continue
        _loaded.add(key)
        try:
            ep.load()()
            called.append(ep.name)
        except Exception as e:  # noqa: BLE001 (a plugin must not break the compiler)
            log.warning("kernel plugin '%s' (%s) not loaded: %s", ep.name, ep.value, e)
    return called
