"""Workload 6: 8 processes commit to disjoint chunks of one branch at the same time.

Eight worker processes (multiprocessing, spawn) are started once and reused for every system.
For each system, each worker opens the repository, waits at a barrier, then makes 20 commits,
each a new session that changes one chunk of its own (worker w, commit i writes chunk
``20 * w + i`` with ``w + 1``). Reported: commits per second from the barrier to the last
worker's end; how many commits ``main``'s history gained (should be 160); and how many of the
160 chunks hold what their commit wrote. zarrlake rebases a commit that lost the race on its
own; Icechunk is asked to with ``rebase_with=ConflictDetector()``. Icechunk's local-filesystem
storage is documented as unsafe for concurrent commits: its row is for reference only.
"""

from __future__ import annotations

import multiprocessing as mp
import time
import traceback
from typing import Any

import numpy as np
import zarr

from bench.common import (
    ICECHUNK,
    Result,
    Settings,
    create_handle,
    open_spec,
    remove,
    systems_for,
)

NAME = "contention"
TITLE = "6. contention: 8 processes x 20 commits to disjoint chunks of one branch"

WORKERS = 8
COMMITS = 20


def worker(wid: int, tasks: Any, results: Any, barrier: Any) -> None:
    """Process body: one task per system, until told to stop (``None``)."""
    while True:
        task = tasks.get()
        if task is None:
            return
        errors: list[str] = []
        done = 0
        t0 = t1 = time.time()
        try:
            handle = open_spec(task["spec"])
        except Exception:
            errors.append(traceback.format_exc(limit=2))
            handle = None
        barrier.wait()
        if handle is not None:
            t0 = time.time()
            for i in range(task["commits"]):
                index = wid * task["commits"] + i
                try:
                    txn = handle.writable()
                    arr = zarr.open_array(txn.store, path="a", mode="r+")
                    arr[index] = wid + 1
                    txn.commit(f"worker {wid} commit {i}")
                    done += 1
                except Exception as exc:
                    errors.append(f"{type(exc).__name__}: {exc}"[:300])
            t1 = time.time()
        results.put({"wid": wid, "t0": t0, "t1": t1, "done": done, "errors": errors})


class Pool:
    """Long-lived worker processes, so each system's round times commits, not start-up."""

    def __init__(self) -> None:
        ctx = mp.get_context("spawn")
        self.barrier = ctx.Barrier(WORKERS)
        self.results = ctx.Queue()
        self.tasks = [ctx.Queue() for _ in range(WORKERS)]
        self.procs = [
            ctx.Process(
                target=worker, args=(w, self.tasks[w], self.results, self.barrier), daemon=True
            )
            for w in range(WORKERS)
        ]
        for proc in self.procs:
            proc.start()

    def round(self, spec: dict[str, Any]) -> list[dict[str, Any]]:
        for q in self.tasks:
            q.put({"spec": spec, "commits": COMMITS})
        return [self.results.get(timeout=600) for _ in range(WORKERS)]

    def close(self) -> None:
        for q in self.tasks:
            q.put(None)
        for proc in self.procs:
            proc.join(timeout=30)
            if proc.is_alive():
                proc.terminate()


def run(settings: Settings) -> list[Result]:
    systems = systems_for(settings, plain=False)
    total = WORKERS * COMMITS
    expected = np.repeat(np.arange(1, WORKERS + 1, dtype="i1"), COMMITS)
    results: list[Result] = []
    pool = Pool()
    try:
        for system in systems:
            handle = create_handle(settings, system, "w6")
            txn = handle.writable()
            zarr.create_array(
                txn.store, name="a", shape=(total,), chunks=(1,), dtype="i1", fill_value=0
            )
            txn.commit("create array")
            before = handle.history_length()
            rounds = pool.round(handle.spec())
            wall = max(r["t1"] for r in rounds) - min(r["t0"] for r in rounds)
            done = sum(r["done"] for r in rounds)
            errors = [e for r in rounds for e in r["errors"]]
            reader = handle.fresh()
            gained = reader.history_length() - before
            data = zarr.open_array(reader.readonly_store(reader.head()), path="a", mode="r")[:]
            correct = int(np.sum(data == expected))
            note = f"{len(errors)} errors" + (f"; first: {errors[0]}" if errors else "")
            if system == ICECHUNK:
                note = "reference only (local fs unsafe for concurrent commits); " + note
            results.append(
                Result(
                    TITLE,
                    f"{total} commits",
                    "commits/s",
                    system,
                    [done / wall if wall > 0 else 0.0],
                    unit="commits/s",
                )
            )
            survived = Result(
                TITLE, f"{total} commits", "commits in log / chunks correct", system,
                [float(gained)], unit="count", note=f"{correct}/{total} chunks correct; {note}",
            )  # fmt: skip
            if system != ICECHUNK:
                survived.target = f"all {total} survive"
                survived.passed = gained == total and correct == total and not errors
            results.append(survived)
            remove(handle)
    finally:
        pool.close()
    return results
