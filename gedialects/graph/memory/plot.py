"""A PNG of the arena: each tensor a rectangle over its lifetime (x, steps)
and its bytes (y, addresses), one panel per function.

matplotlib is an optional extra (`pip install gedialects[plot]`); it is
imported only here, when a plot is asked for.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import func

from gedialects.graph.memory.attributes import memory_summary
from gedialects.graph.memory.report import summary_line, tensor_table


class PlotError(Exception):
    """No plot can be drawn (matplotlib missing, nothing planned); one line."""


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise PlotError(
            "the arena plot needs matplotlib: pip install 'gedialects[plot]' (or matplotlib)"
        ) from None
    return plt


def plot_arena(functions: Sequence[func.FuncOp], path: str) -> None:
    """Draw the planned arenas of `functions` into the PNG file `path`."""
    if not functions:
        raise PlotError("no function has a memory plan to plot")
    plt = _pyplot()
    fig, axes = plt.subplots(len(functions), 1, figsize=(12, 4 * len(functions)), squeeze=False)
    for ax, fn in zip(axes[:, 0], functions):
        size = int(memory_summary(fn)["arena_size"])
        rows = [r for r in tensor_table(fn) if r["offset"] >= 0 and r["size"] > 0]
        cmap = plt.get_cmap("tab20")
        for i, r in enumerate(rows):
            first, last = r["lifetime"]
            ax.add_patch(
                plt.Rectangle(
                    (first - 0.45, r["offset"]), last - first + 0.9, r["size"],
                    facecolor=cmap(i % 20), edgecolor="black", linewidth=0.3, alpha=0.8,
                )
            )
        steps = max((r["lifetime"][1] for r in rows), default=0)
        ax.set_xlim(-1, steps + 1)
        ax.set_ylim(0, max(size, 1))
        ax.axhline(size, color="red", linewidth=0.8)
        ax.set_xlabel("step")
        ax.set_ylabel("arena offset (bytes)")
        ax.set_title(summary_line(fn), fontsize=8)
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=120)
    except OSError as e:
        raise PlotError(f"cannot write '{path}': {e.strerror}") from None
    finally:
        plt.close(fig)
