"""The printed report: machine info, one table per workload, and the target summary."""

from __future__ import annotations

import math
import os
import platform
import sqlite3
from importlib import metadata
from typing import Any

from bench.common import Result

PACKAGES = (
    "zarrlake",
    "zarr",
    "icechunk",
    "numpy",
    "numcodecs",
    "sqlalchemy",
    "psycopg",
    "xarray",
    "dask",
)


def machine_info(pg_version: str | None) -> dict[str, Any]:
    import psutil

    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(
                (ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), cpu
            )
    except OSError:
        pass
    versions: dict[str, str] = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    versions["sqlite"] = sqlite3.sqlite_version
    if pg_version:
        versions["postgresql"] = pg_version
    return {
        "cpus": os.cpu_count(),
        "cpu": cpu,
        "memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "versions": versions,
        "load_average": os.getloadavg(),
    }


def print_machine(info: dict[str, Any]) -> None:
    print(
        f"machine: {info['cpus']} CPUs ({info['cpu']}), {info['memory_gib']} GiB, {info['platform']}"
    )
    print(f"python {info['python']}; " + ", ".join(f"{k} {v}" for k, v in info["versions"].items()))
    load = ", ".join(f"{x:.2f}" for x in info["load_average"])
    print(f"load average at start: {load} (other work on the machine adds noise)")


def fmt(value: float, unit: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if unit == "s":
        if value < 1e-3:
            return f"{value * 1e6:.0f} us"
        if value < 1.0:
            return f"{value * 1e3:.1f} ms"
        return f"{value:.2f} s"
    if unit == "x":
        return f"{value:.2f}x"
    if unit == "commits/s":
        return f"{value:.1f}/s"
    if unit == "count":
        return f"{value:.0f}"
    return f"{value:g}"


def cells(r: Result) -> list[str]:
    if not r.samples:
        return ["n/a", "", "", "", "", "", r.target, "n/a" if r.target else "", r.note]
    spread = ""
    if len(r.samples) > 1 and r.median > 0:
        spread = f"{(r.max - r.min) / r.median * 100:.0f}%"
    status = "" if r.passed is None else ("PASS" if r.passed else "MISS")
    return [
        fmt(r.median, r.unit),
        fmt(r.min, r.unit) if len(r.samples) > 1 else "",
        str(len(r.samples)),
        spread,
        "" if r.ratio_zarr is None else f"{r.ratio_zarr:.2f}",
        "" if r.ratio_icechunk is None else f"{r.ratio_icechunk:.2f}",
        r.target,
        status,
        r.note,
    ]


HEADER = [
    "case",
    "metric",
    "system",
    "median",
    "min",
    "n",
    "spread",
    "zl/zarr",
    "zl/ice",
    "target",
    "status",
    "note",
]
RIGHT = {3, 4, 5, 6, 7, 8}
NOTE_WIDTH = 70


def print_table(title: str, rows: list[Result]) -> None:
    print()
    print(f"== {title} ==")
    body: list[list[str]] = []
    last_case = last_metric = None
    for r in rows:
        case = r.case if r.case != last_case else ""
        metric = r.metric if (r.case, r.metric) != (last_case, last_metric) else ""
        last_case, last_metric = r.case, r.metric
        note = cells(r)[-1]
        if len(note) > NOTE_WIDTH:
            note = note[: NOTE_WIDTH - 3] + "..."
        body.append([case, metric, r.system, *cells(r)[:-1], note])
    widths = [max(len(row[i]) for row in [HEADER, *body]) for i in range(len(HEADER))]
    for row in [HEADER, *body]:
        parts = [
            c.rjust(w) if i in RIGHT else c.ljust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ]
        print("  ".join(parts).rstrip())


def print_report(results: list[Result]) -> None:
    titles: list[str] = []
    for r in results:
        if r.workload not in titles:
            titles.append(r.workload)
    for title in titles:
        print_table(title, [r for r in results if r.workload == title])
    print_summary(results)


def print_summary(results: list[Result]) -> None:
    checked = [r for r in results if r.target]
    if not checked:
        return
    print()
    print("== targets (zarrlake) ==")
    for r in checked:
        status = "n/a " if r.passed is None else ("PASS" if r.passed else "MISS")
        value = fmt(r.median, r.unit) if r.samples else "n/a"
        if r.ratio_zarr is not None or r.ratio_icechunk is not None:
            value = f"x{r.ratio_zarr or float('nan'):.2f} zarr, x{r.ratio_icechunk or float('nan'):.2f} icechunk"
        print(
            f"  {status}  {r.workload.split('.')[0]}. {r.case} / {r.metric} [{r.system}]: {value} (target {r.target})"
        )
    passed = sum(1 for r in checked if r.passed)
    missed = sum(1 for r in checked if r.passed is False)
    print(f"  {passed} PASS, {missed} MISS, {len(checked) - passed - missed} n/a")
