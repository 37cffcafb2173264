"""Workload 10: commit latency and catalog statements, zarrlake on SQLite and PostgreSQL.

One array of 100,000 chunks (shape (100_000,), chunks (1,), int8, all chunks written), then
1,000 one-chunk commits on ``main`` (``--quick``: 2,000 chunks, 100 commits). Then, each
repeated (50 times; 15 with ``--quick``), medians reported:

- one-chunk commit: open a writable session, write one chunk, commit;
- open a commit and read one chunk: a fresh handle (empty node caches, the catalog's connection
  pool kept, as a long-running process has it), open the head commit read-only, open the array,
  read one chunk.

Each operation's catalog statements are counted (SQLAlchemy's ``before_cursor_execute``: every
statement sent, ``BEGIN`` included on SQLite, where it is a statement; PostgreSQL's ``BEGIN`` and
``COMMIT`` are sent by the driver and are not counted).

    python bench/run.py --commit-latency [--quick] [--catalog sqlite,postgres]
"""

from __future__ import annotations

import statistics
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

import zarr

import zarrlake
from bench.common import LAKE, LAKE_PG, Result, Settings, clock, set_raw, upper_target
from zarrlake.catalog import catalog_for
from zarrlake.core import forget_cores

NAMES = ("commit_latency",)
TITLE = "10. commit latency: 1-chunk commit and open+read of a commit, with catalog statements"

# (commit, open+read) median limits per catalog
LIMITS = {LAKE: (0.008, 0.005), LAKE_PG: (0.012, 0.008)}


@dataclass
class Params:
    chunks: int
    depth: int
    repeats: int


def params(settings: Settings) -> Params:
    if settings.quick:
        return Params(2_000, 100, 15)
    return Params(100_000, 1_000, 50)


class StatementCounter:
    """Counts the statements a catalog sends while :meth:`counting` is active."""

    def __init__(self, catalog: Any) -> None:
        self._watching = ExitStack()
        self._watching.enter_context(catalog.watch(self._seen))
        self.n = 0
        self.active = False
        self.last: list[str] = []

    def _seen(self, statement: str, _params: Any) -> None:
        if self.active:
            self.n += 1
            self.last.append(" ".join(statement.split())[:100])

    @contextmanager
    def counting(self) -> Iterator[None]:
        self.n, self.last, self.active = 0, [], True
        try:
            yield
        finally:
            self.active = False

    def close(self) -> None:
        self._watching.close()


def create_repo(settings: Settings, system: str) -> zarrlake.Repo:
    path = settings.dir(system, "latency")
    if system == LAKE:
        return zarrlake.Repo.create(path)
    assert settings.pg_url is not None
    name = f"bench_latency_{uuid.uuid4().hex[:12]}"
    return zarrlake.Repo.create(catalog=settings.pg_url, storage=str(path), name=name)


def build(repo: zarrlake.Repo, p: Params) -> float:
    """The array with every chunk written, then ``p.depth`` one-chunk commits."""
    t0 = clock()
    s = repo.writable_session("main")
    arr = zarr.create_array(
        s.store,
        name="a",
        shape=(p.chunks,),
        chunks=(1,),
        dtype="i1",
        compressors=None,
        fill_value=0,
    )
    arr[:] = 1
    s.commit(f"write {p.chunks} chunks")
    for i in range(p.depth - 1):
        one_chunk_commit(repo, (i * 7919) % p.chunks, 2 + i % 100)
    return clock() - t0


def one_chunk_commit(repo: zarrlake.Repo, index: int, value: int) -> str:
    s = repo.writable_session("main")
    set_raw(s.store, f"a/c/{index}", bytes([value]))
    return s.commit(f"chunk {index} = {value}")


def open_and_read(repo: zarrlake.Repo, commit: str, index: int) -> int:
    store = repo.readonly_session(commit=commit).store
    return int(zarr.open_array(store, path="a", mode="r")[index])


def timed(fn: Callable[[], Any], counter: StatementCounter) -> tuple[float, int]:
    with counter.counting():
        t0 = clock()
        fn()
        elapsed = clock() - t0
    return elapsed, counter.n


def measure(settings: Settings, system: str, p: Params) -> list[Result]:
    repo = create_repo(settings, system)
    try:
        setup = build(repo, p)
        counter = StatementCounter(catalog_for(repo.config.catalog))
        commit_s: list[float] = []
        commit_n: list[float] = []
        read_s: list[float] = []
        read_n: list[float] = []
        for rep in range(p.repeats):
            index = (rep * 104_729 + 17) % p.chunks
            value = 102 + rep % 26  # int8, and never a value the history wrote
            dt, n = timed(lambda: one_chunk_commit(repo, index, value), counter)  # noqa: B023
            commit_s.append(dt)
            commit_n.append(n)
            head = repo.resolve("main")
            forget_cores()  # a fresh handle: empty node caches
            fresh = zarrlake.Repo.from_config(repo.config)
            got: list[int] = []
            dt, n = timed(lambda: got.append(open_and_read(fresh, head, index)), counter)  # noqa: B023
            if got != [value]:
                raise AssertionError(f"{system}: read {got} at chunk {index}, wrote {value}")
            read_s.append(dt)
            read_n.append(n)
            time.sleep(0.005)  # let the other processes of the machine in between
        counter.close()
    finally:
        repo_cleanup(repo, system)
    commit_limit, read_limit = LIMITS[system]
    case = f"{p.chunks:,} chunks, {p.depth:,} commits deep"
    return [
        Result(
            TITLE, "set-up", f"write {p.chunks:,} chunks + {p.depth:,} commits", system, [setup]
        ),
        upper_target(
            Result(TITLE, case, "1-chunk commit", system, commit_s),
            commit_limit,
            f"<={commit_limit * 1000:g} ms",
        ),
        Result(TITLE, case, "1-chunk commit: statements", system, commit_n, unit="count"),
        upper_target(
            Result(TITLE, case, "open commit+read 1 chunk", system, read_s),
            read_limit,
            f"<={read_limit * 1000:g} ms",
        ),
        Result(TITLE, case, "open+read: statements", system, read_n, unit="count"),
    ]


def repo_cleanup(repo: zarrlake.Repo, system: str) -> None:
    """A SQLite repo goes with the scratch directory; a PostgreSQL one with the run's database
    (dropped by ``bench/run.py``); its chunk objects are in scratch too."""
    del repo, system


def run(settings: Settings) -> list[Result]:
    p = params(settings)
    results: list[Result] = []
    for system in settings.lakes():
        results.extend(measure(settings, system, p))
    for r in results:
        if r.unit == "count":
            r.note = f"median of {len(r.samples)}; max {max(r.samples):g}"
        elif r.samples and len(r.samples) > 1:
            r.note = f"mean {statistics.mean(r.samples) * 1000:.1f} ms"
    return results
