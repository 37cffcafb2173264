"""Workload 11: a one-chunk update+commit on a small array, quiet and under the load of 4
concurrent writers.

A 1,000-chunk array (int8, chunks of 1) is created on ``main`` and four branches are made from
it. The foreground process times one-chunk commits on ``main`` (open a writable session, write
one chunk, commit): first with nothing else running (quiet), then while 4 worker processes
(spawned once, reused for every system) each commit one-chunk updates to a branch of their own
as fast as they can. For zarrlake the writers use the same repository (its catalog serializes
their commits with the measured one); Icechunk 2 keeps all of a repository's branches in one
object, which its local-filesystem storage cannot update from several processes at once (its
commits fail, even to different branches), so each Icechunk writer has a repository of its
own, of the same array on the same disk: the load on the machine is alike, the contention on
one repository is zarrlake's alone. Reported: the median commit in each case, the load's
commits per second, and the ratio to Icechunk's median in the same case.

The systems take turns: each round times a few quiet commits and then a few under load on every
system, in an order that reverses from one round to the next, so that a change of the machine's
state during the run (the disk's write-back of an earlier system's files, another process)
falls on every system alike, and the disk is synced before each system's quiet commits, so that
they do not pay for the write-back of the load before them. Timing one system to the end before
the next made the ratio move between 0.8x and 1.6x from one run to the next on one machine.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import time
import traceback
from typing import Any

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

NAME = "loaded_commit"
TITLE = "11. one-chunk update+commit, quiet and under 4 concurrent writers"
WORKERS = 4
CHUNKS = 1000
LIMITS = {"zarrlake": 1.0, "zarrlake-pg": 1.5}  # x Icechunk's median, in each case
WARM = 3  # commits a writer makes before the timed ones begin


def worker(wid: int, tasks: Any, results: Any, stop: Any, started: Any) -> None:
    """Process body: for each task, commit to branch ``load<wid>`` until ``stop`` is set.

    A repository is opened once and kept for the tasks that name it again (the rounds of the
    run), and ``started`` is released only after the first commits of a task, so that the
    timed commits meet writers in their stride rather than opening their repository."""
    opened: dict[str, Any] = {}
    count = 0  # commits so far by this process: each writes the next chunk
    while True:
        task = tasks.get()
        if task is None:
            return
        done, errors = 0, []
        try:
            key = repr(sorted(task["spec"].items()))
            handle = opened.get(key) or opened.setdefault(key, open_spec(task["spec"]))
            t0 = time.perf_counter()
            while not stop.is_set() or done < WARM:
                txn = handle.writable(f"load{wid}")
                zarr.open_array(txn.store, path="a", mode="r+")[count % CHUNKS] = _value(count)
                txn.commit(f"load {wid}")
                done += 1
                count += 1
                if done == WARM:
                    started.release()
            elapsed = time.perf_counter() - t0
        except Exception:
            if done < WARM:
                started.release()
            errors.append(traceback.format_exc(limit=3))
            elapsed = 1.0
        results.put({"wid": wid, "rate": done / elapsed, "errors": errors})


class Load:
    """Four long-lived writer processes, started together on request."""

    def __init__(self) -> None:
        ctx = mp.get_context("spawn")
        self.stop = ctx.Event()
        self.started = ctx.Semaphore(0)
        self.results = ctx.Queue()
        self.tasks = [ctx.Queue() for _ in range(WORKERS)]
        self.procs = [
            ctx.Process(
                target=worker,
                args=(w, self.tasks[w], self.results, self.stop, self.started),
                daemon=True,
            )
            for w in range(WORKERS)
        ]
        for p in self.procs:
            p.start()

    def start(self, specs: list[dict[str, Any]]) -> None:
        self.stop.clear()
        for q, spec in zip(self.tasks, specs, strict=True):
            q.put({"spec": spec})
        for _ in range(WORKERS):
            self.started.acquire(timeout=120)  # every writer past its first commits

    def finish(self) -> tuple[float, list[str]]:
        self.stop.set()
        out = [self.results.get(timeout=300) for _ in range(WORKERS)]
        return sum(r["rate"] for r in out), [e for r in out for e in r["errors"]]

    def close(self) -> None:
        for q in self.tasks:
            q.put(None)
        for p in self.procs:
            p.join(timeout=30)
            if p.is_alive():
                p.terminate()


def _repo(settings: Settings, system: str, name: str) -> Any:
    """A repository holding the array on ``main`` and a branch per writer."""
    handle = create_handle(settings, system, name)
    txn = handle.writable()
    a = zarr.create_array(
        txn.store, name="a", shape=(CHUNKS,), chunks=(1,), dtype="i1", fill_value=0
    )
    a[:] = 1
    txn.commit("create array")
    for w in range(WORKERS):
        handle.make_branch(f"load{w}")
    return handle


def _value(i: int) -> int:
    """What the ``i``-th commit of a writer writes into chunk ``i % CHUNKS``: never what the
    chunk held before (1 at first), so that no commit is empty."""
    return (i // CHUNKS) % 100 + 2


def _commits(handle: Any, first: int, n: int) -> list[float]:
    out = []
    for i in range(first, first + n):
        t = time.perf_counter()
        txn = handle.writable("main")
        zarr.open_array(txn.store, path="a", mode="r+")[i % CHUNKS] = _value(i)
        txn.commit("one chunk")
        out.append(time.perf_counter() - t)
    return out


def run(settings: Settings) -> list[Result]:
    rounds, per_round = (2, 10) if settings.quick else (6, 10)
    load = Load()
    handles: dict[str, tuple[Any, list[Any]]] = {}
    try:
        for system in systems_for(settings, plain=False):
            handle = _repo(settings, system, "w11")
            others = (
                [_repo(settings, system, f"w11-load{w}") for w in range(WORKERS)]
                if system == ICECHUNK
                else [handle] * WORKERS
            )
            handles[system] = (handle, others)
            _commits(handle, 0, 3)  # warm the process's caches like a live writer
        quiet: dict[str, list[float]] = {s: [] for s in handles}
        loaded: dict[str, list[float]] = {s: [] for s in handles}
        rates: dict[str, list[float]] = {s: [] for s in handles}
        errors: dict[str, list[str]] = {s: [] for s in handles}
        done = dict.fromkeys(handles, 3)
        for r in range(rounds):
            order = list(handles) if r % 2 == 0 else list(reversed(handles))
            for system in order:
                handle, others = handles[system]
                os.sync()  # the load before left dirty pages: written back now, not in here
                quiet[system] += _commits(handle, done[system], per_round)
                load.start([h.spec() for h in others])
                loaded[system] += _commits(handle, done[system] + per_round, per_round)
                rate, errs = load.finish()
                rates[system].append(rate)
                errors[system] += errs
                done[system] += 2 * per_round
        results: list[Result] = []
        for system in handles:
            note = (
                f"load: {sum(rates[system]) / len(rates[system]):.0f} commits/s by 4 other "
                f"writers; {rounds} rounds, systems in turn"
            )
            if errors[system]:
                first = errors[system][0].strip().splitlines()[-1]
                note += f"; {len(errors[system])} load errors, first: {first}"
            for case, samples in (("quiet", quiet[system]), ("under 4 writers", loaded[system])):
                results.append(Result(TITLE, case, "commit", system, samples, unit="s", note=note))
    finally:
        load.close()
        for handle, others in handles.values():
            for h in {id(h): h for h in [handle, *others]}.values():
                remove(h)
    _targets(results)
    return results


def _targets(results: list[Result]) -> None:
    """Each zarrlake median against Icechunk's in the same case."""
    ice = {r.case: r.median for r in results if r.system == ICECHUNK}
    for r in results:
        limit = LIMITS.get(r.system)
        if limit is None or r.case not in ice:
            continue
        ratio = r.median / ice[r.case]
        r.target = f"<={limit:g}x icechunk"
        r.passed = ratio <= limit
        r.note = f"{ratio:.2f}x icechunk; {r.note}"
