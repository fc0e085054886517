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


def plot_arena(functions: Sequence[func.FuncOp], path: str) -> list[str]:
    """Draw the planned arenas of `functions` into the PNG file `path`: a
    rectangle per tensor (steps x arena offsets, named where it fits), the
    arena size (red) and the step where the most bytes are live (dashed).
    Returns the texts drawn."""
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
            if r["size"] >= size / 25 and last - first >= 1:  # a name where it fits
                ax.text(first - 0.4, r["offset"] + r["size"] / 2, r["name"], fontsize=6, va="center",
                        clip_on=True)
        steps = max((r["lifetime"][1] for r in rows), default=0)
        ax.set_xlim(-1, steps + 1)
        ax.set_ylim(0, max(size, 1) * 1.08)
        ax.axhline(size, color="red", linewidth=0.8)
        ax.text(steps + 0.9, size, f"arena {size} B", color="red", fontsize=7, ha="right", va="bottom")
        live = [sum(r["size"] for r in rows if r["lifetime"][0] <= t <= r["lifetime"][1]) for t in range(steps + 1)]
        if live:  # the step holding the most bytes: the lower bound any plan needs
            peak = max(range(len(live)), key=live.__getitem__)
            ax.axvline(peak, color="black", linestyle="--", linewidth=0.8)
            ax.annotate(f"peak: {live[peak]} B live at step {peak}", (peak, size), xytext=(4, 4),
                        textcoords="offset points", fontsize=7)
        ax.set_xlabel("step")
        ax.set_ylabel("arena offset (bytes)")
        ax.set_title(summary_line(fn), fontsize=8)
    fig.tight_layout()
    drawn = [t.get_text() for ax in axes[:, 0] for t in ax.texts]
    try:
        fig.savefig(path, dpi=120)
    except OSError as e:
        raise PlotError(f"cannot write '{path}': {e.strerror}") from None
    finally:
        plt.close(fig)
    return drawn
