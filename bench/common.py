"""Shared pieces of the benchmark: settings, timing, results, and the three systems under test.

Every system is driven through the same small interface (:class:`Handle`), so a workload is
written once and run against plain Zarr (``LocalStore``), Icechunk (local filesystem) and
zarrlake (SQLite + local directory, and optionally PostgreSQL + local directory).
"""

from __future__ import annotations

import os

os.environ.setdefault("ICECHUNK_LOG", "error")  # icechunk warns on stderr about local storage

import shutil
import statistics
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import icechunk
import numpy as np
import zarr
import zarr.storage
from zarr.abc.store import Store
from zarr.core.buffer import default_buffer_prototype
from zarr.core.sync import sync

import zarrlake

ZARR = "zarr"
ICECHUNK = "icechunk"
LAKE = "zarrlake"
LAKE_PG = "zarrlake-pg"
SYSTEMS = (ZARR, ICECHUNK, LAKE, LAKE_PG)
LAKES = (LAKE, LAKE_PG)

MiB = 1024 * 1024


# -- settings ------------------------------------------------------------------------------------


@dataclass
class Settings:
    """What one run measures, and where it keeps its data."""

    quick: bool
    scratch: Path
    pg_url: str | None  # a database of this run's own, or None when PostgreSQL is not used
    sqlite: bool = True
    shared: dict[str, Any] = field(default_factory=dict)  # artifacts handed between workloads

    def lakes(self) -> list[str]:
        """The zarrlake variants this run measures (catalog backends)."""
        out = []
        if self.sqlite:
            out.append(LAKE)
        if self.pg_url:
            out.append(LAKE_PG)
        return out

    def analyze(self) -> None:
        """Refresh PostgreSQL's planner statistics, as autovacuum does on a live database
        once a tenth of a table has changed: the run's tables are minutes old and grew from
        empty, and a plan made for a table of one row walks every commit of a long history."""
        if self.pg_url:
            import sqlalchemy as sa

            engine = sa.create_engine(self.pg_url, isolation_level="AUTOCOMMIT")
            try:
                with engine.connect() as conn:
                    conn.exec_driver_sql("ANALYZE")
            finally:
                engine.dispose()

    def dir(self, *parts: str) -> Path:
        """A fresh, unique directory under the run's scratch space."""
        path = self.scratch.joinpath(*parts[:-1], f"{parts[-1]}-{uuid.uuid4().hex[:8]}")
        path.parent.mkdir(parents=True, exist_ok=True)
        return path


# -- timing --------------------------------------------------------------------------------------


def clock() -> float:
    return time.perf_counter()


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """(seconds, result) of one call."""
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


class Repeats:
    """Repeat indices: at least ``minimum``, then more while under ``budget`` seconds in all,
    up to ``maximum`` (cheap cases get more repeats, expensive ones fewer)."""

    def __init__(self, minimum: int, maximum: int, budget: float) -> None:
        self.minimum, self.maximum, self.budget = minimum, maximum, budget

    def __iter__(self):  # type: ignore[no-untyped-def]
        t0 = time.perf_counter()
        rep = 0
        while rep < self.minimum or (rep < self.maximum and time.perf_counter() - t0 < self.budget):
            yield rep
            rep += 1


# -- results -------------------------------------------------------------------------------------


@dataclass
class Result:
    """One row of the report: the samples of one metric of one system in one case."""

    workload: str
    case: str
    metric: str
    system: str
    samples: list[float]
    unit: str = "s"  # "s", "x" (multiple), "commits/s", "count"
    target: str = ""
    passed: bool | None = None
    note: str = ""
    ratio_zarr: float | None = None
    ratio_icechunk: float | None = None

    @property
    def median(self) -> float:
        return statistics.median(self.samples) if self.samples else float("nan")

    @property
    def min(self) -> float:
        return min(self.samples) if self.samples else float("nan")

    @property
    def max(self) -> float:
        return max(self.samples) if self.samples else float("nan")

    def as_dict(self) -> dict[str, Any]:
        return {
            "workload": self.workload,
            "case": self.case,
            "metric": self.metric,
            "system": self.system,
            "unit": self.unit,
            "median": self.median if self.samples else None,
            "min": self.min if self.samples else None,
            "samples": self.samples,
            "ratio_zarr": self.ratio_zarr,
            "ratio_icechunk": self.ratio_icechunk,
            "target": self.target,
            "passed": self.passed,
            "note": self.note,
        }


def na(workload: str, case: str, metric: str, system: str, note: str, target: str = "") -> Result:
    """A row for something a system cannot do (reported, never silently dropped)."""
    return Result(workload, case, metric, system, [], unit="n/a", target=target, note=note)


def add_ratios(results: list[Result]) -> None:
    """Fill zarrlake/zarr and zarrlake/icechunk (medians) on zarrlake rows of time metrics."""
    by_key = {(r.workload, r.case, r.metric, r.system): r for r in results}
    for r in results:
        if r.system not in LAKES or r.unit != "s" or not r.samples:
            continue
        for other, attr in ((ZARR, "ratio_zarr"), (ICECHUNK, "ratio_icechunk")):
            o = by_key.get((r.workload, r.case, r.metric, other))
            if o is not None and o.samples and o.median > 0:
                setattr(r, attr, r.median / o.median)


def ratio_target(results: list[Result], vs_zarr: float, vs_icechunk: float) -> None:
    """Mark zarrlake rows against ratio targets (after :func:`add_ratios`)."""
    add_ratios(results)
    for r in results:
        if r.system not in LAKES or not r.samples:
            continue
        r.target = f"/zarr<={vs_zarr:g}, /ice<={vs_icechunk:g}"
        checks = [
            x <= limit
            for x, limit in ((r.ratio_zarr, vs_zarr), (r.ratio_icechunk, vs_icechunk))
            if x is not None
        ]
        r.passed = bool(checks) and all(checks)


def upper_target(r: Result, limit: float, label: str) -> Result:
    """Mark a row PASS when its median is at most ``limit`` (in the row's unit)."""
    r.target = label
    r.passed = bool(r.samples) and r.median <= limit
    return r


# -- systems -------------------------------------------------------------------------------------


class Txn:
    """A unit of work: a writable store and how to commit it."""

    def __init__(
        self, store: Store, commit: Callable[[str], str | None], session: Any = None
    ) -> None:
        self.store = store
        self.session = session  # the system's own session object (None for plain Zarr)
        self._commit = commit

    def commit(self, message: str) -> str | None:
        return self._commit(message)


class NotAvailable(Exception):
    """The system has no such operation."""


class Handle:
    """A repository of one system (for plain Zarr: a directory)."""

    system: str
    path: Path
    versioned = True

    def writable(self, branch: str = "main") -> Txn:
        raise NotImplementedError

    def make_branch(self, name: str) -> None:
        """A new branch at ``main``'s head."""
        raise NotAvailable

    def readonly_store(self, version: str | None) -> Store:
        raise NotImplementedError

    def head(self) -> str | None:
        raise NotImplementedError

    def history_length(self) -> int:
        raise NotImplementedError

    def fresh(self) -> Handle:
        """Another handle on the same repository, with no warm caches of its own."""
        raise NotImplementedError

    def diff(self, a: str, b: str) -> Any:
        raise NotAvailable

    def spec(self) -> dict[str, Any]:
        """Picklable description, for :func:`open_spec` in another process."""
        raise NotImplementedError


class ZarrHandle(Handle):
    system = ZARR
    versioned = False

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def writable(self, branch: str = "main") -> Txn:
        return Txn(zarr.storage.LocalStore(self.path), lambda _msg: None)

    def readonly_store(self, version: str | None) -> Store:
        return zarr.storage.LocalStore(self.path, read_only=True)

    def head(self) -> str | None:
        return None

    def history_length(self) -> int:
        return 0

    def fresh(self) -> Handle:
        return ZarrHandle(self.path)

    def spec(self) -> dict[str, Any]:
        return {"system": ZARR, "path": str(self.path)}


class IcechunkHandle(Handle):
    system = ICECHUNK

    def __init__(self, path: Path, *, create: bool = False) -> None:
        self.path = Path(path)
        storage = icechunk.local_filesystem_storage(str(self.path))
        if create:
            self.repo = icechunk.Repository.create(storage)
        else:
            self.repo = icechunk.Repository.open(storage)

    def writable(self, branch: str = "main") -> Txn:
        session = self.repo.writable_session(branch)

        def commit(message: str) -> str:
            # Rebase on concurrent commits as zarrlake does (no-op when nothing else landed).
            return session.commit(message, rebase_with=icechunk.ConflictDetector())

        return Txn(session.store, commit, session)

    def make_branch(self, name: str) -> None:
        self.repo.create_branch(name, self.head())

    def readonly_store(self, version: str | None) -> Store:
        if version is None:
            return self.repo.readonly_session("main").store
        return self.repo.readonly_session(snapshot_id=version).store

    def head(self) -> str:
        return self.repo.lookup_branch("main")

    def history_length(self) -> int:
        return sum(1 for _ in self.repo.ancestry(branch="main"))

    def fresh(self) -> Handle:
        return IcechunkHandle(self.path)

    def diff(self, a: str, b: str) -> Any:
        return self.repo.diff(from_snapshot_id=a, to_snapshot_id=b)

    def spec(self) -> dict[str, Any]:
        return {"system": ICECHUNK, "path": str(self.path)}


class LakeHandle(Handle):
    def __init__(self, repo: zarrlake.Repo, system: str, path: Path | None = None) -> None:
        self.repo = repo
        self.system = system
        self.path = Path(path if path is not None else repo.storage)

    @classmethod
    def create(cls, settings: Settings, system: str, path: Path) -> LakeHandle:
        if system == LAKE:
            return cls(zarrlake.Repo.create(path), system, path)
        if settings.pg_url is None:
            raise NotAvailable("PostgreSQL is not configured for this run")
        name = f"bench_{uuid.uuid4().hex[:12]}"
        repo = zarrlake.Repo.create(catalog=settings.pg_url, storage=str(path), name=name)
        return cls(repo, system, path)

    def writable(self, branch: str = "main") -> Txn:
        session = self.repo.writable_session(branch)
        return Txn(session.store, session.commit, session)

    def make_branch(self, name: str) -> None:
        self.repo.create_branch(name)

    def readonly_store(self, version: str | None) -> Store:
        if version is None:
            return self.repo.readonly_session(branch="main").store
        return self.repo.readonly_session(commit=version).store

    def head(self) -> str:
        return self.repo.resolve("main")

    def history_length(self) -> int:
        return len(self.repo.log("main"))

    def fresh(self) -> Handle:
        # Cold caches: drop this process's cached repo cores, so the next open builds a new
        # one with empty node caches.
        from zarrlake.core import forget_cores

        forget_cores()
        return LakeHandle(zarrlake.Repo.from_config(self.repo.config), self.system, self.path)

    def diff(self, a: str, b: str) -> Any:
        fn = getattr(self.repo, "diff", None)
        if fn is None:
            raise NotAvailable("zarrlake has no Repo.diff yet")
        return fn(a, b)

    def spec(self) -> dict[str, Any]:
        return {"system": self.system, "catalog": self.repo.config.catalog, "name": self.repo.name}


def create_handle(settings: Settings, system: str, label: str) -> Handle:
    """A new, empty repository of ``system`` in a fresh scratch directory."""
    path = settings.dir(system, label)
    if system == ZARR:
        return ZarrHandle(path)
    if system == ICECHUNK:
        return IcechunkHandle(path, create=True)
    return LakeHandle.create(settings, system, path)


def open_spec(spec: dict[str, Any]) -> Handle:
    """Reopen a handle described by :meth:`Handle.spec` (in any process)."""
    system = spec["system"]
    if system == ZARR:
        return ZarrHandle(Path(spec["path"]))
    if system == ICECHUNK:
        return IcechunkHandle(Path(spec["path"]))
    return LakeHandle(zarrlake.Repo.open(catalog=spec["catalog"], name=spec["name"]), system)


def remove(handle: Handle) -> None:
    """Delete a repository's files (a PostgreSQL catalog goes with the run's database)."""
    shutil.rmtree(handle.path, ignore_errors=True)


def systems_for(settings: Settings, *, postgres: bool = True, plain: bool = True) -> list[str]:
    """The systems a workload runs against in this run.

    ``postgres=False``: zarrlake on its embedded default only (on PostgreSQL only when that is
    the one catalog selected).
    """
    out = [ZARR] if plain else []
    out.append(ICECHUNK)
    lakes = settings.lakes()
    out.extend(lakes if postgres else lakes[:1])
    return out


# -- small helpers -------------------------------------------------------------------------------


def set_raw(store: Store, key: str, data: bytes) -> None:
    """Write already-encoded chunk bytes straight to a store (used to build history fast)."""
    sync(store.set(key, default_buffer_prototype().buffer.from_bytes(data)))


def field_data(n: int, seed: int = 0) -> np.ndarray:
    """A float32 signal that compresses about like real measurements (smooth + noise)."""
    rng = np.random.default_rng(seed)
    out = np.empty(n, dtype="f4")
    step = 1 << 22
    for start in range(0, n, step):
        stop = min(n, start + step)
        i = np.arange(start, stop, dtype="f8")
        noise = rng.normal(0.0, 0.5, stop - start)
        out[start:stop] = np.round(15.0 + 10.0 * np.sin(i / 5000.0) + noise, 2)
    return out
