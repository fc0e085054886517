"""ge-sweep --plot: each metric against each swept parameter, one line per
model (and per combination of the other swept parameters), as PNG files.
Needs matplotlib (`pip install 'gedialects[plot]'`)."""

from __future__ import annotations

import csv
from collections import defaultdict
from pathlib import Path

from gedialects.tools.cli import UserError

PLOTTED = ("cycles", "time_us", "gm_bytes", "cube_utilisation", "peak_device_bytes")


def swept_parameters(rows: list[dict], spec: dict) -> list[str]:
    """Override fields and options with more than one value in the results."""
    names = [*sorted(spec.get("overrides", {})), *sorted(spec.get("options", {}))]
    return [n for n in names if len({r[n] for r in rows}) > 1]


def _number(text: str):
    try:
        return float(text)
    except ValueError:
        return text


def plot_results(csv_path: str, spec: dict, directory: str) -> list[str]:
    """The PNG paths written (none when nothing varies)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise UserError("--plot needs matplotlib: pip install 'gedialects[plot]'") from None
    with open(csv_path, newline="") as f:
        # measured rows: a mismatch or an overflow is still a run with cycles
        rows = [r for r in csv.DictReader(f) if r["cycles"] != ""]
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    params = swept_parameters(rows, spec)
    for param in params:
        others = [p for p in params if p != param]
        for metric in PLOTTED:
            lines: dict[str, list[tuple]] = defaultdict(list)
            for r in rows:
                label = " ".join([r["model"], *(f"{o}={r[o]}" for o in others)])
                if r["target"] not in label and len({x["target"] for x in rows}) > 1:
                    label += f" {r['target']}"
                lines[label].append((_number(r[param]), float(r[metric])))
            fig, ax = plt.subplots(figsize=(9, 4.5))
            for label, points in sorted(lines.items()):
                points.sort(key=lambda p: (isinstance(p[0], str), p[0]))
                ax.plot([str(p[0]) if isinstance(p[0], str) else p[0] for p in points],
                        [p[1] for p in points], marker="o", label=label)
            xs = [p[0] for points in lines.values() for p in points]
            if all(isinstance(x, float) and x > 0 for x in xs) and max(xs) >= 4 * min(xs):
                ax.set_xscale("log", base=2)  # sizes swept by doubling
            ax.set_xlabel(param)
            ax.set_ylabel(metric)
            ax.set_title(f"{metric} vs {param}")
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
            fig.tight_layout()
            path = out / f"{metric}-vs-{param}.png"
            fig.savefig(path, dpi=100)
            plt.close(fig)
            written.append(str(path))
    return written


