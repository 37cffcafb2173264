"""Workloads 3, 4 and 5: small updates, checkout and diff on a long history.

One array of 1,000,000 chunks (shape (1_000_000,), chunks (1,), int8) per system. Writing all
of its chunks would take minutes per system (Zarr handles a chunk in about 0.5 ms even on a
plain local directory), so the array is created with the full 1M-chunk grid and a realistic
working set of chunks is written once before any history is made: 2,000 chunks with
``--quick``, 100,000 otherwise (one tenth of the grid). Every history commit rewrites one of
those chunks, so the manifests hold that many refs throughout.

3. Small update: open a writable session, open the array, change one chunk, commit. Timed
   when the branch already holds N commits, for N in the depth list; reported whole and as
   the ``commit()`` call alone. Plain Zarr has no commit: it reports the write alone.
4. Checkout: with the full history in place, open the commit N commits behind the head of
   ``main`` through a fresh handle (no warm node cache), open the array, read one chunk.
5. Diff: two commits that differ in 100 chunks spread over the whole grid.

History commits are made through the store API with pre-encoded bytes (one session, one
``store.set``, one commit each) to keep set-up time down; the timed updates go through Zarr.
"""

from __future__ import annotations

import multiprocessing as mp
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

import numpy as np
import zarr

from bench.common import (
    ZARR,
    Handle,
    NotAvailable,
    Result,
    Settings,
    add_ratios,
    clock,
    create_handle,
    na,
    open_spec,
    remove,
    set_raw,
    systems_for,
    upper_target,
)

NAMES = ("small_update", "checkout", "diff")
TITLE_UPDATE = "3. small update: change 1 chunk of a 1M-chunk array and commit"
TITLE_CHECKOUT = "4. checkout a commit N deep and read one chunk"
TITLE_DIFF = "5. diff two commits differing in 100 chunks of a 1M-chunk array"

GRID = 1_000_000
DIFF_CHUNKS = 100
UPDATE_LIMIT = 0.020
FLAT_LIMIT = 1.5
CHECKOUT_LIMIT = 0.010
DIFF_LIMIT = 0.050


@dataclass
class Params:
    depths: tuple[int, ...]
    populated: int
    repeats: int


def params(settings: Settings) -> Params:
    if settings.quick:
        return Params((10, 100, 1_000), 2_000, 5)
    return Params((10, 1_000, 10_000), 100_000, 11)


@dataclass
class Subject:
    """One system's repository and the commits made on its ``main`` so far (oldest first)."""

    handle: Handle
    commits: list[str] = field(default_factory=list)
    visits: int = 0  # history commits made, to vary the bytes written

    @property
    def system(self) -> str:
        return self.handle.system


def setup(settings: Settings, system: str, p: Params) -> tuple[Subject, float]:
    handle = create_handle(settings, system, "hist")
    subject = Subject(handle)
    if handle.versioned:
        head = handle.head()
        subject.commits.append(head or "")
    t0 = clock()
    txn = handle.writable()
    arr = zarr.create_array(
        txn.store, name="a", shape=(GRID,), chunks=(1,), dtype="i1", compressors=None, fill_value=0
    )
    arr[: p.populated] = 1
    version = txn.commit(f"write {p.populated} chunks")
    elapsed = clock() - t0
    if version is not None:
        subject.commits.append(version)
    return subject, elapsed


def history_commit(handle: Handle, i: int, populated: int) -> str:
    """The ``i``-th history commit: one session, one pre-encoded chunk, one commit."""
    index = (i * 7919) % populated
    value = 2 + (i // populated) % 100  # differs from what the chunk held before
    txn = handle.writable()
    set_raw(txn.store, f"a/c/{index}", bytes([value]))
    return txn.commit(f"history {i}") or ""


def builder(spec: dict[str, Any], conn: Connection) -> None:
    """Process body: make the history commits asked for, answer with their ids."""
    handle = open_spec(spec)
    while (job := conn.recv()) is not None:
        start, count, populated = job
        conn.send([history_commit(handle, i, populated) for i in range(start, start + count)])


class Builders:
    """One process per versioned system grows its history; the systems build in parallel,
    and nothing is timed meanwhile."""

    def __init__(self, subjects: list[Subject]) -> None:
        ctx = mp.get_context("spawn")
        self.subjects = [s for s in subjects if s.handle.versioned]
        self.conns: list[Connection] = []
        self.procs = []
        for subject in self.subjects:
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=builder, args=(subject.handle.spec(), child), daemon=True)
            proc.start()
            self.conns.append(parent)
            self.procs.append(proc)

    def advance(self, depth: int, populated: int) -> None:
        """Make one-chunk commits until every ``main`` holds ``depth`` commits."""
        jobs = []
        for subject, conn in zip(self.subjects, self.conns, strict=True):
            count = max(0, depth - len(subject.commits))
            conn.send((subject.visits, count, populated))
            jobs.append(count)
        for subject, conn, count in zip(self.subjects, self.conns, jobs, strict=True):
            subject.commits.extend(conn.recv())
            subject.visits += count

    def close(self) -> None:
        for conn in self.conns:
            conn.send(None)
        for proc in self.procs:
            proc.join(timeout=30)
            if proc.is_alive():
                proc.terminate()


def timed_update(subject: Subject, index: int, value: int) -> tuple[float, float | None]:
    """(whole update, commit alone) seconds of one Zarr-level small update."""
    t0 = clock()
    txn = subject.handle.writable()
    arr = zarr.open_array(txn.store, path="a", mode="r+")
    arr[index] = value
    t1 = clock()
    version = txn.commit(f"update chunk {index}")
    t2 = clock()
    if version is None:
        return t1 - t0, None
    subject.commits.append(version)
    return t2 - t0, t2 - t1


def timed_checkout(subject: Subject, depth: int, index: int) -> float:
    reader = subject.handle.fresh()
    version = subject.commits[-1 - depth] if subject.handle.versioned else None
    t0 = clock()
    store = reader.readonly_store(version)
    value = zarr.open_array(store, path="a", mode="r")[index]
    elapsed = clock() - t0
    if int(value) == 0:
        raise AssertionError(f"{subject.system}: chunk {index} read back empty")
    return elapsed


def run(settings: Settings, names: set[str]) -> list[Result]:
    p = params(settings)
    rng = random.Random(0)
    systems = systems_for(settings)
    subjects: list[Subject] = []
    results: list[Result] = []
    for system in systems:
        subject, elapsed = setup(settings, system, p)
        subjects.append(subject)
        results.append(
            Result(
                TITLE_UPDATE, "set-up", f"write {p.populated:,} chunks+commit", system, [elapsed]
            )
        )

    # Timed updates each hit a chunk of their own with a value no history commit writes, so
    # every one of them is a real change.
    picks = iter(rng.sample(range(p.populated), len(p.depths) * p.repeats))
    update_rows: dict[tuple[str, int], tuple[list[float], list[float]]] = {}
    builders = Builders(subjects)
    try:
        measure(subjects, builders, p, names, picks, update_rows)
    finally:
        builders.close()
    settings.analyze()  # before the reads of the history just built
    if "small_update" in names:
        results.extend(update_results(subjects, p, update_rows))
    if "checkout" in names:
        results.extend(checkout_results(subjects, p, rng))
    if "diff" in names:
        results.extend(diff_results(subjects, p))
    for subject in subjects:
        remove(subject.handle)
    add_ratios(results)
    return results


def measure(
    subjects: list[Subject],
    builders: Builders,
    p: Params,
    names: set[str],
    picks: Iterator[int],
    update_rows: dict[tuple[str, int], tuple[list[float], list[float]]],
) -> None:
    for depth in p.depths:
        builders.advance(depth, p.populated)
        if "small_update" not in names:
            continue
        for s in subjects:
            update_rows[s.system, depth] = ([], [])
        for rep in range(p.repeats):
            index = next(picks)
            for subject in subjects:
                whole, commit = timed_update(subject, index, 110 + rep)
                update_rows[subject.system, depth][0].append(whole)
                if commit is not None:
                    update_rows[subject.system, depth][1].append(commit)
    if "checkout" in names:  # the deepest checkout must still see the array
        builders.advance(p.depths[-1] + 2, p.populated)


def update_results(
    subjects: list[Subject],
    p: Params,
    rows: dict[tuple[str, int], tuple[list[float], list[float]]],
) -> list[Result]:
    out: list[Result] = []
    for depth in p.depths:
        case = f"after {depth:,} commits"
        for subject in subjects:
            whole, commit = rows[subject.system, depth]
            if not subject.handle.versioned:
                out.append(
                    Result(TITLE_UPDATE, case, "update", subject.system, whole, note="no commit")
                )
                continue
            r = Result(TITLE_UPDATE, case, "update", subject.system, whole)
            if r.system.startswith("zarrlake"):
                upper_target(r, UPDATE_LIMIT, "<=20 ms")
            out.append(r)
            out.append(Result(TITLE_UPDATE, case, "commit() alone", subject.system, commit))
    for subject in subjects:
        if not subject.handle.versioned:
            continue
        first = np.median(rows[subject.system, p.depths[0]][0])
        last = np.median(rows[subject.system, p.depths[-1]][0])
        r = Result(
            TITLE_UPDATE,
            f"flatness: {p.depths[-1]:,} vs {p.depths[0]:,} commits",
            "update median ratio",
            subject.system,
            [float(last / first)],
            unit="x",
        )
        if r.system.startswith("zarrlake"):
            upper_target(r, FLAT_LIMIT, f"<={FLAT_LIMIT:g} (flat)")
        out.append(r)
    return out


def checkout_results(subjects: list[Subject], p: Params, rng: random.Random) -> list[Result]:
    out: list[Result] = []
    for depth in p.depths:
        case = f"{depth:,} commits behind head"
        samples: dict[str, list[float]] = {s.system: [] for s in subjects}
        for _ in range(p.repeats):
            index = rng.randrange(p.populated)
            for subject in subjects:
                samples[subject.system].append(timed_checkout(subject, depth, index))
        for subject in subjects:
            note = "no versions: open + read" if subject.system == ZARR else ""
            r = Result(
                TITLE_CHECKOUT,
                case,
                "open+read 1 chunk",
                subject.system,
                samples[subject.system],
                note=note,
            )
            if r.system.startswith("zarrlake"):
                upper_target(r, CHECKOUT_LIMIT, "<=10 ms")
            out.append(r)
    return out


def diff_results(subjects: list[Subject], p: Params) -> list[Result]:
    out: list[Result] = []
    case = f"{DIFF_CHUNKS} chunks changed, history {len(subjects[-1].commits):,} deep"
    indices = np.linspace(0, GRID - 1, DIFF_CHUNKS).astype(int)
    for subject in subjects:
        handle = subject.handle
        target = "<=50 ms" if subject.system.startswith("zarrlake") else ""
        if not handle.versioned:
            out.append(na(TITLE_DIFF, case, "diff", subject.system, "no versions"))
            continue
        before = subject.commits[-1]
        txn = handle.writable()
        arr = zarr.open_array(txn.store, path="a", mode="r+")
        arr.set_coordinate_selection(indices, np.full(DIFF_CHUNKS, -1, dtype="i1"))
        after = txn.commit("change 100 chunks")
        assert after is not None
        subject.commits.append(after)
        samples: list[float] = []
        note = ""
        try:
            for _ in range(p.repeats):
                reader = handle.fresh()
                t0 = clock()
                found = reader.diff(before, after)
                samples.append(clock() - t0)
            note = describe_diff(found)
        except NotAvailable as exc:
            out.append(na(TITLE_DIFF, case, "diff", subject.system, str(exc), target))
            continue
        r = Result(TITLE_DIFF, case, "diff", subject.system, samples, note=note)
        if target:
            upper_target(r, DIFF_LIMIT, target)
        out.append(r)
    return out


def describe_diff(found: object) -> str:
    summary = getattr(found, "summary", None)
    if callable(summary):  # zarrlake.Diff
        counts = summary()
        n = counts.chunks_added + counts.chunks_changed + counts.chunks_removed
        return f"{n} chunks reported"
    chunks = getattr(found, "updated_chunks", None)  # icechunk's Diff
    if isinstance(chunks, dict):
        n = sum(len(list(v)) for v in chunks.values())
        return f"{n} chunks reported"
    return ""
