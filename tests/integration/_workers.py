"""Child-process bodies for the guarantee tests, and the parent-side helpers that run them.

Every function here that runs in a child takes only picklable configuration (catalog URL, repo
name, session id, paths, numbers, multiprocessing primitives) and opens the repo itself with
``zarrlake.Repo.open``. Children are started with the ``spawn`` context: a fresh interpreter,
no state inherited from the test process (no pooled connections, no caches).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import zarr

import zarrlake

CTX = mp.get_context("spawn")

# Chunks of CHUNK int64 values, stored uncompressed: 1 KiB each, above the 512 B inline limit,
# so chunk bytes go to the object store (not inline in the catalog).
CHUNK = 128


# -- parent side -----------------------------------------------------------------------------


def _run(q: Any, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
    try:
        q.put(("ok", fn(*args)))
    except BaseException as exc:
        q.put(("error", f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"))


class Child:
    """One spawned child running ``fn(*args)``; its return value comes back through a queue."""

    def __init__(self, fn: Callable[..., Any], *args: Any) -> None:
        self.q = CTX.Queue()
        self.proc = CTX.Process(target=_run, args=(self.q, fn, args), daemon=True)

    def start(self) -> Child:
        self.proc.start()
        return self

    @property
    def pid(self) -> int:
        assert self.proc.pid is not None
        return self.proc.pid

    def result(self, timeout: float = 120.0) -> Any:
        try:
            status, value = self.q.get(timeout=timeout)
        except queue.Empty:
            self.proc.kill()
            raise AssertionError(f"child {self.proc.pid} gave no result in {timeout} s") from None
        self.proc.join(timeout=30)
        if status != "ok":
            raise AssertionError(f"child {self.proc.pid} failed:\n{value}")
        return value


def run_children(
    calls: Sequence[tuple[Callable[..., Any], tuple[Any, ...]]], timeout: float = 120.0
) -> list[Any]:
    """Start every call in its own process at once; return their results in order."""
    children = [Child(fn, *args).start() for fn, args in calls]
    try:
        return [c.result(timeout) for c in children]
    finally:
        for c in children:
            if c.proc.is_alive():
                c.proc.kill()
            c.proc.join(timeout=10)


# -- shared helpers --------------------------------------------------------------------------


def open_repo(url: str, name: str) -> zarrlake.Repo:
    return zarrlake.Repo.open(catalog=url, name=name)


def create_arrays(
    repo: zarrlake.Repo, paths: Sequence[str], n_chunks: int, chunk: int = CHUNK, fill: int = -1
) -> str:
    """Create 1-d int64 arrays of ``n_chunks`` uncompressed chunks; commit; return the commit."""
    s = repo.writable_session()
    g = zarr.open_group(s.store, mode="w", zarr_format=3)
    for p in paths:
        g.create_array(
            p,
            shape=(n_chunks * chunk,),
            chunks=(chunk,),
            dtype="i8",
            fill_value=fill,
            compressors=None,
        )
    return s.commit(f"create {', '.join(paths)}")


def fill_all(store: Any, paths: Sequence[str], k: int) -> None:
    """Write the value ``k`` into every chunk of every array in ``paths``."""
    g = zarr.open_group(store, mode="r+", zarr_format=3)
    for p in paths:
        g[p][:] = k


def uniform_value(store: Any, paths: Sequence[str]) -> tuple[int | None, list[str]]:
    """The single value every element of every array holds, or (None, what differed)."""
    g = zarr.open_group(store, mode="r", zarr_format=3)
    seen: set[int] = set()
    problems: list[str] = []
    for p in paths:
        data = g[p][:]
        vals = np.unique(data)
        if len(vals) != 1:
            problems.append(f"{p} holds several values {vals.tolist()[:10]}")
        seen.update(int(v) for v in vals)
    if len(seen) != 1:
        problems.append(f"arrays disagree: {sorted(seen)[:10]}")
        return None, problems
    return seen.pop(), problems


def conflict_tuples(exc: zarrlake.ConflictError) -> list[tuple[Any, ...]]:
    return [(c.kind, c.path, c.chunk, c.commit) for c in exc.conflicts]


# -- children: concurrency -------------------------------------------------------------------


def commit_disjoint(url: str, name: str, proc: int, n_commits: int, chunk: int) -> list[str]:
    """Commit ``n_commits`` times, each in its own session, into this process's own chunk."""
    repo = open_repo(url, name)
    ids = []
    for j in range(n_commits):
        s = repo.writable_session()
        arr = zarr.open_array(s.store, path="data", mode="r+", zarr_format=3)
        arr[proc * chunk : (proc + 1) * chunk] = proc * 1000 + j
        ids.append(s.commit(f"proc {proc} commit {j}", metadata={"proc": proc, "j": j}))
    return ids


def stage_and_commit(
    url: str, name: str, ops: list[tuple[Any, ...]], barrier: Any
) -> dict[str, Any]:
    """Stage ``ops`` in a new session, meet the others at ``barrier``, then commit.

    ops: ("write", path, start, stop, value) | ("resize", path, new_len) |
    ("attr", path, key, value). On ConflictError, also report what the session still reads
    at the first written range (it must stay readable).
    """
    repo = open_repo(url, name)
    s = repo.writable_session()
    first_write = None
    for op in ops:
        arr = zarr.open_array(s.store, path=op[1], mode="r+", zarr_format=3)
        if op[0] == "write":
            arr[op[2] : op[3]] = op[4]
            first_write = first_write or op
        elif op[0] == "resize":
            arr.resize((op[2],))
        elif op[0] == "attr":
            arr.attrs[op[2]] = op[3]
    barrier.wait(timeout=60)
    try:
        cid = s.commit(f"ops {ops}")
    except zarrlake.ConflictError as exc:
        out: dict[str, Any] = {"won": False, "session": s.id, "conflicts": conflict_tuples(exc)}
        out["error_type"] = type(exc).__name__
        if first_write is not None:
            arr = zarr.open_array(s.store, path=first_write[1], mode="r", zarr_format=3)
            out["still_reads"] = arr[first_write[2] : first_write[3]].tolist()
        return out
    return {"won": True, "session": s.id, "commit": cid}


def commit_ops(url: str, name: str, ops: list[tuple[Any, ...]]) -> str:
    """Stage ``ops`` (as in :func:`stage_and_commit`) in a new session and commit at once."""
    repo = open_repo(url, name)
    s = repo.writable_session()
    for op in ops:
        arr = zarr.open_array(s.store, path=op[1], mode="r+", zarr_format=3)
        if op[0] == "write":
            arr[op[2] : op[3]] = op[4]
        elif op[0] == "attr":
            arr.attrs[op[2]] = op[3]
    return s.commit(f"ops {ops}")


# -- children: isolation ---------------------------------------------------------------------


def commit_values(
    url: str, name: str, paths: list[str], values: list[int], ready: Any = None, pause: float = 0.0
) -> list[str]:
    """For each k in ``values``: one session writing k into every chunk of ``paths``, committed."""
    repo = open_repo(url, name)
    if ready is not None:
        ready.wait(timeout=60)
    ids = []
    for k in values:
        s = repo.writable_session()
        fill_all(s.store, paths, k)
        ids.append(s.commit(f"k={k}"))
        if pause:
            time.sleep(pause)
    return ids


def commit_n(url: str, name: str, paths: list[str], ready: Any, n: int, seen: Any) -> list[int]:
    """Commit k = 1..n (every chunk of ``paths`` := k); before each commit, wait until the
    reader has seen the previous one (``seen``, a shared int), so every commit is observed."""
    repo = open_repo(url, name)
    ready.wait(timeout=60)
    done = []
    for k in range(1, n + 1):
        deadline = time.monotonic() + 60
        while seen.value < k - 1:  # the reader has seen the previous commit
            if time.monotonic() > deadline:
                raise AssertionError(f"the reader never saw k={k - 1}")
            time.sleep(0.002)
        s = repo.writable_session()
        fill_all(s.store, paths, k)
        s.commit(f"k={k}")
        done.append(k)
    return done


def read_until_seen(
    url: str, name: str, paths: list[str], ready: Any, n: int, seen: Any
) -> dict[str, Any]:
    """Open a fresh read-only session on main again and again, until k = n; check each sees
    one whole commit (every chunk of every array holds the same k) and that k never goes
    down. Publishes the highest k seen in ``seen``."""
    repo = open_repo(url, name)
    ready.wait(timeout=60)
    last, ks, violations, reads = -1, [], [], 0
    deadline = time.monotonic() + 120
    while last < n and time.monotonic() < deadline:
        s = repo.readonly_session(branch="main")
        k, problems = uniform_value(s.store, paths)
        reads += 1
        if problems:
            violations.append(f"commit {s.base_commit}: {problems}")
        elif k is not None:
            if k < last:
                violations.append(f"read regressed from k={last} to k={k} (commit {s.base_commit})")
            last = max(last, k)
            if not ks or ks[-1] != k:
                ks.append(k)
            seen.value = last
    return {"reads": reads, "ks": ks, "violations": violations}


def join_session_and_write(
    url: str, name: str, how: str, session_ref: Any, chunk: int
) -> dict[str, Any]:
    """Join a writable session (by id, or from an unpickled store), read chunk 0 (written by
    the other process), write chunk 1 := 7; also look through a different session."""
    repo = open_repo(url, name)
    if how == "by_id":
        store = repo.session(session_ref).store
    else:
        store = session_ref  # a LakeStore, rebuilt from its pickled configuration
    arr = zarr.open_array(store, path="data", mode="r+", zarr_format=3)
    seen_chunk0 = arr[0:chunk].tolist()
    arr[chunk : 2 * chunk] = 7
    own_chunk1 = arr[chunk : 2 * chunk].tolist()
    store.session.flush()  # write-behind: make this process's writes visible to the others
    other = repo.writable_session()
    other_arr = zarr.open_array(other.store, path="data", mode="r", zarr_format=3)
    other_sees = other_arr[0 : 2 * chunk].tolist()
    other.abandon()
    ro = zarr.open_array(
        repo.readonly_session(branch="main").store, path="data", mode="r", zarr_format=3
    )
    return {
        "seen_chunk0": seen_chunk0,
        "own_chunk1": own_chunk1,
        "other_sees": other_sees,
        "readonly_sees": ro[0 : 2 * chunk].tolist(),
    }


def join_session_and_set_attr(url: str, name: str, session_id: str, key: str, value: Any) -> None:
    repo = open_repo(url, name)
    s = repo.session(session_id)
    arr = zarr.open_array(s.store, path="data", mode="r+", zarr_format=3)
    arr.attrs[key] = value
    s.flush()  # write-behind: make the write visible to the other processes of the session


# -- children: crashes -----------------------------------------------------------------------


def stage_and_hang(url: str, name: str, paths: list[str], value: int, ready_file: str) -> None:
    """Write ``value`` into every chunk of ``paths`` (objects + staged rows), say so, then hang
    until killed."""
    repo = open_repo(url, name)
    s = repo.writable_session()
    fill_all(s.store, paths, value)
    s.flush()  # the staged rows are in the catalog, not only queued in this process
    tmp = ready_file + ".tmp"
    Path(tmp).write_text(s.id or "")
    os.replace(tmp, ready_file)
    time.sleep(600)


def commit_forever(url: str, name: str, paths: list[str], start_k: int, conn: Any) -> None:
    """Commit k = start_k, start_k + 1, ... (every chunk := k) until killed, telling the parent
    ("committing", k) just before each commit and ("committed", k, id, seconds) after."""
    repo = open_repo(url, name)
    k = start_k
    while True:
        s = repo.writable_session()
        fill_all(s.store, paths, k)
        conn.send(("committing", k))
        t = time.monotonic()
        cid = s.commit(f"k={k}")
        conn.send(("committed", k, cid, time.monotonic() - t))
        k += 1


# -- children: expiry ------------------------------------------------------------------------


def join_then_write(url: str, name: str, conn: Any) -> str:
    """Say "ready", receive a session id, join that session (taking its expiry as of now) and
    read through it, say "joined", wait for "go", then write chunk 0 := 11.

    Returns "ok" or the class name of the error the write raised."""
    repo = open_repo(url, name)
    conn.send("ready")
    s = repo.session(conn.recv())
    arr = zarr.open_array(s.store, path="data", mode="r+", zarr_format=3)
    arr[0:CHUNK]  # a read: the joined session is loaded and usable
    conn.send("joined")
    assert conn.recv() == "go"
    try:
        arr[0:CHUNK] = 11
        s.flush()  # write-behind: a refused write may surface here instead
    except zarrlake.ZarrlakeError as exc:
        return type(exc).__name__
    return "ok"


# -- children: idempotent commits --------------------------------------------------------------


def commit_with_key(
    url: str, name: str, start: int, value: int, key: str, barrier: Any
) -> dict[str, Any]:
    """Write ``value`` into one chunk at ``start``, meet the others, commit with ``key``."""
    repo = open_repo(url, name)
    s = repo.writable_session()
    zarr.open_array(s.store, path="data", mode="r+", zarr_format=3)[start : start + CHUNK] = value
    barrier.wait(timeout=60)
    return {"commit": s.commit(f"keyed write of {value}", idempotency_key=key), "session": s.id}


# -- children: racing creation -------------------------------------------------------------


def create_repo_racing(url: str, name: str, storage: str, barrier: Any) -> str:
    """Meet the others, then create the same repo; report what happened."""
    barrier.wait(timeout=60)
    try:
        zarrlake.Repo.create(catalog=url, storage=storage, name=name)
    except zarrlake.AlreadyExistsError:
        return "exists"
    return "created"


def create_branch_racing(url: str, name: str, branch: str, barrier: Any) -> str:
    repo = open_repo(url, name)
    barrier.wait(timeout=60)
    try:
        repo.create_branch(branch)
    except zarrlake.AlreadyExistsError:
        return "exists"
    return "created"


# -- children: crash points ----------------------------------------------------------------


def write_and_crash(url: str, name: str, point: str) -> None:
    """Write 2 into every chunk of ``a`` (small chunks, packed) and ``big`` (a chunk too large
    for a pack) and commit, with ``point`` armed: the process is SIGKILLed there. For
    ``rebase.in_tx`` another commit lands first and the session rebases."""
    os.environ["ZARRLAKE_CRASH_AT"] = point
    repo = open_repo(url, name)
    s = repo.writable_session()
    zarr.open_array(s.store, path="big", mode="r+", zarr_format=3)[:] = 2
    zarr.open_array(s.store, path="a", mode="r+", zarr_format=3)[:] = 2
    s.flush()
    if point == "rebase.in_tx":
        other = repo.writable_session()
        zarr.open_array(other.store, path="b", mode="r+", zarr_format=3)[:] = 5
        other.commit("another writer")
        s.rebase()
    s.commit("twos")


# -- children: stress ----------------------------------------------------------------------


def random_commits(
    url: str, name: str, proc: int, n_commits: int, n_chunks: int, seed: int
) -> dict[str, Any]:
    """Commit ``n_commits`` random writes (1-3 chunks, value proc*1000+j); conflicts abandon
    the session. Returns {commit id: {chunk: value}} and the refusals by exception type."""
    import random

    rng = random.Random(seed)
    repo = open_repo(url, name)
    done: dict[str, dict[int, int]] = {}
    refused: dict[str, int] = {}
    for j in range(n_commits):
        value = proc * 1000 + j
        chunks = rng.sample(range(n_chunks), rng.randint(1, 3))
        s = repo.writable_session()
        arr = zarr.open_array(s.store, path="data", mode="r+", zarr_format=3)
        for c in chunks:
            arr[c * CHUNK : (c + 1) * CHUNK] = value
        try:
            cid = s.commit(f"proc {proc} commit {j}")
        except Exception as exc:
            refused[type(exc).__name__] = refused.get(type(exc).__name__, 0) + 1
            if isinstance(exc, zarrlake.ConflictError):
                s.abandon()
            continue
        done[cid] = dict.fromkeys(chunks, value)
    return {"done": done, "refused": refused}


def serializable_increments(url: str, name: str, n: int) -> int:
    """Add 1 to the counter ``n`` times through serializable sessions; count the commits."""
    repo = open_repo(url, name)
    made = 0
    while made < n:
        s = repo.writable_session(isolation="serializable")
        arr = zarr.open_array(s.store, path="counter", mode="r+", zarr_format=3)
        arr[0] = int(arr[0]) + 1
        try:
            s.commit("increment")
        except zarrlake.ConflictError:
            s.abandon()
            continue
        made += 1
    return made


# -- children: virtual references staged a shard at a time -------------------------------------


def stage_reference_rows(
    url: str,
    name: str,
    session_id: str,
    source: str,
    rows: list[int],
    slot: int,
    crash: str,
    start_at: float = 0.0,
) -> None:
    """Join session ``session_id`` and stage, with one ``put_virtual_columns`` call per row of
    chunks, references of array ``v``'s chunks ``(row, 0..7)`` to span ``slot`` of ``source``
    (16-byte chunks), from wall-clock time ``start_at`` on; with ``crash`` armed
    (``point:n``), die there."""
    if crash:
        os.environ["ZARRLAKE_CRASH_AT"] = crash
    s = open_repo(url, name).session(session_id)
    s.put_virtual_columns("v", np.empty((0, 2), int), [], np.empty(0, int), np.empty(0, int))
    time.sleep(max(0.0, start_at - time.time()))
    for r in rows:
        coords = np.array([(r, c) for c in range(8)])
        offsets = np.full(8, slot * 16)
        s.put_virtual_columns("v", coords, [source] * 8, offsets, np.full(8, 16))


def stage_for_lookups(url: str, name: str, session_id: str, source: str) -> None:
    """Join session ``session_id`` and stage one row of each kind a lookup can find: chunk
    ``a/c/2 := 11``, raw key ``notes/readme``, references of ``v``'s chunks 0..3 to
    ``source`` (4 bytes each, at offsets 0, 4, 8, 12) and the drop of node ``old``."""
    s = open_repo(url, name).session(session_id)
    zarr.open_array(s.store, path="a", mode="r+")[2] = 11
    s.write_sync("notes/readme", b"staged by another process")
    s.put_virtual_refs("v", [((i,), source, 4 * i, 4) for i in range(4)])
    s.delete_sync("old/zarr.json")
    s.flush()
