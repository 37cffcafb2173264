"""What checks cost: a one-chunk commit to a 1,000,000-chunk array with and without a no-NaN
check, and merging a pull request of 100 changed chunks with three checks, on SQLite.

Run by hand (not part of the test suite)::

    .venv/bin/python bench/checks.py [--repeat N] [--json PATH]

Targets (docs/checks.md): the check adds under 5 ms to the one-chunk commit; the pull request
merges in under 0.5 s.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import zarr

import zarrlake
from zarrlake import checks


def _one_chunk_commits(repo: zarrlake.Repo, n: int, start: int) -> list[float]:
    times = []
    for i in range(n):
        t = time.perf_counter()
        s = repo.writable_session()
        zarr.open_array(s.store, path="big")[start + i, 0] = float(i + 1)
        s.commit(f"one chunk {i}")
        times.append(time.perf_counter() - t)
    return times


def commit_overhead(root: Path, repeat: int) -> dict[str, Any]:
    repo = zarrlake.Repo.create(root / "commit")
    s = repo.writable_session()
    zarr.open_group(s.store, mode="w").create_array(
        "big", shape=(1000, 1000), chunks=(1, 1), dtype="f4", fill_value=0.0
    )
    s.commit("a 1,000,000-chunk array")
    _one_chunk_commits(repo, 5, 0)  # warm
    plain = _one_chunk_commits(repo, repeat, 10)
    repo.add_check("no-nan", checks.no_nan("big"))
    _one_chunk_commits(repo, 5, 500)
    checked = _one_chunk_commits(repo, repeat, 510)
    a, b = statistics.median(plain), statistics.median(checked)
    return {"plain_ms": a * 1e3, "no_nan_ms": b * 1e3, "added_ms": (b - a) * 1e3}


def pull_merge(root: Path, repeat: int) -> dict[str, Any]:
    samples = []
    for r in range(repeat):
        repo = zarrlake.Repo.create(root / f"pull-{r}")
        s = repo.writable_session()
        a = zarr.open_group(s.store, mode="w").create_array(
            "temp", shape=(1000, 1000), chunks=(100, 10), dtype="f4",
            attributes={"units": "K"},
        )  # fmt: skip
        a[:] = np.float32(280.0)
        s.commit("1,000 chunks")
        repo.create_branch("dev")
        s = repo.writable_session("dev")
        zarr.open_array(s.store, path="temp")[:, :100] = np.float32(281.0)  # 100 chunks
        s.commit("100 chunks")
        repo.add_check("no-nan", checks.no_nan("temp"))
        repo.add_check("range", checks.value_range("temp", min=150, max=350))
        repo.add_check("cf", checks.required_attributes("units"))
        repo.protect_branch("main", required_approvals=1)
        pr = repo.open_pull_request("dev", "main", title="100 chunks", author="ana")
        pr.approve(by="bo")
        t = time.perf_counter()
        pr.merge(author="bo")
        samples.append(time.perf_counter() - t)
    return {"merge_s": statistics.median(samples), "samples_s": samples}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=30)
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as d:
        out = {
            "one_chunk_commit": commit_overhead(Path(d), args.repeat),
            "pull_request_merge": pull_merge(Path(d), max(3, args.repeat // 10)),
        }
    print(json.dumps(out, indent=2))
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
