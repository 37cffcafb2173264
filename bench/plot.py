"""Plot a run of bench/run.py (its --json output) for the documentation.

    .venv/bin/python bench/plot.py RESULTS.json OUTDIR

Writes OUTDIR/write_read.png, OUTDIR/history.png and OUTDIR/xarray.png from the medians in
the file; nothing is computed that the run did not measure. Needs matplotlib (the ``docs``
dependency group).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

SYSTEMS = ("zarr", "icechunk", "zarrlake", "zarrlake-pg")
COLORS = {"zarr": "#7f7f7f", "icechunk": "#1f77b4", "zarrlake": "#17a589", "zarrlake-pg": "#8e44ad"}


def medians(
    results: list[dict[str, Any]], workload: str, metric: str
) -> dict[str, dict[str, float]]:
    """case -> system -> median, for one workload (by its number) and metric."""
    out: dict[str, dict[str, float]] = {}
    for r in results:
        if r["workload"].startswith(workload) and r["metric"] == metric and r["median"] is not None:
            out.setdefault(r["case"], {})[r["system"]] = float(r["median"])
    return out


def bars(ax: Any, data: dict[str, dict[str, float]], title: str, unit: str = "s") -> None:
    cases = list(data)
    systems = [s for s in SYSTEMS if any(s in data[c] for c in cases)]
    width = 0.8 / max(len(systems), 1)
    for k, system in enumerate(systems):
        xs = [i + (k - (len(systems) - 1) / 2) * width for i in range(len(cases))]
        ys = [data[c].get(system, 0.0) for c in cases]
        ax.bar(xs, ys, width, label=system, color=COLORS[system])
    ax.set_xticks(
        range(len(cases)),
        [c.replace(" chunks (", "\nchunks (").replace(", ", ",\n") for c in cases],
        fontsize=8,
    )
    ax.set_ylabel(unit)
    ax.set_title(title, fontsize=10)
    ax.grid(axis="y", alpha=0.3)


def depth_lines(ax: Any, data: dict[str, dict[str, float]], title: str) -> None:
    depth = {}
    for c in data:
        numbers = [w.replace(",", "") for w in c.split() if w.replace(",", "").isdigit()]
        if numbers:
            depth[c] = int(numbers[0])
    for system in SYSTEMS:
        points = sorted((depth[c], data[c][system] * 1000) for c in depth if system in data[c])
        if points:
            ax.plot(*zip(*points, strict=True), marker="o", label=system, color=COLORS[system])
    ax.set_xscale("log")
    ax.set_xlabel("commits in the history")
    ax.set_ylabel("ms (median)")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)


def legend_above(ax: Any) -> None:
    """The legend in one row, in a band of its own above the highest bar or point, so that
    it hides none."""
    ax.set_ylim(top=ax.get_ylim()[1] * 1.2)
    ax.legend(fontsize=8, ncol=len(ax.get_legend_handles_labels()[0]), loc="upper center")


def main(argv: list[str]) -> int:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    source, outdir = Path(argv[0]), Path(argv[1])
    run = json.loads(source.read_text())
    results = run["results"]
    machine = run["machine"]
    load = ", ".join(f"{x:.1f}" for x in machine["load_average"])
    caption = (
        f"bench/run.py ({run['mode']}), {machine['cpus']} CPUs, load average at start {load} "
        "(shared machine): medians"
    )
    outdir.mkdir(parents=True, exist_ok=True)

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    bars(axes[0], medians(results, "1.", "write+commit"), "1. write + commit")
    bars(axes[1], medians(results, "1.", "full read"), "1. full read")
    legend_above(axes[0])
    fig.suptitle(caption, fontsize=8)
    fig.tight_layout()
    fig.savefig(outdir / "write_read.png", dpi=110)
    plt.close(fig)

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    depth_lines(axes[0], medians(results, "3.", "update"), "3. change 1 chunk and commit")
    depth_lines(
        axes[1], medians(results, "4.", "open+read 1 chunk"), "4. open an old commit, read 1 chunk"
    )
    legend_above(axes[0])
    fig.suptitle(caption, fontsize=8)
    fig.tight_layout()
    fig.savefig(outdir / "history.png", dpi=110)
    plt.close(fig)

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    bars(axes[0], medians(results, "2.", "to_zarr+commit"), "2. xarray to_zarr (+ commit)")
    bars(axes[1], medians(results, "2.", "open+mean"), "2. open_zarr + mean('time')")
    legend_above(axes[0])
    fig.suptitle(caption, fontsize=8)
    fig.tight_layout()
    fig.savefig(outdir / "xarray.png", dpi=110)
    plt.close(fig)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
