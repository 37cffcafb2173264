"""Scale: whether a one-chunk commit, a cold read and a diff cost what changed, not the array.

Run by hand (not part of the test suite)::

    .venv/bin/python bench/scale.py [--sizes 4,6,8] [--catalog sqlite,postgres,icechunk] [--repeat 15]

For each size 10^k chunks (a square 2-d array of 1 x 1 int8 chunks), it writes one chunk per
manifest shard, so that the number of populated shards grows with the array (about 10^5 at
10^8 chunks) while the build stays fast, then measures on each catalog:

- ``commit``: the median one-chunk commit (open a session, write one chunk, commit);
- ``bytes``: the catalog bytes (nodes) that commit wrote;
- ``cold``: opening the repo and reading one chunk in a fresh process (interpreter start and
  imports excluded), median;
- ``diff``: the diff of two versions that differ in 100 chunks spread over the array, with
  cold caches, median.

``icechunk`` in ``--catalog`` (it needs the ``bench`` group) runs Icechunk on the same array
with the same chunks written, measured the same way, for as far as it goes; it keeps every
chunk reference of an array in manifests that a commit rewrites, so its costs grow with the
written chunks. Each target is printed with PASS or MISS.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os

os.environ.setdefault("ICECHUNK_LOG", "error")
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import sqlalchemy as sa
import zarr
from zarr.core.buffer import default_buffer_prototype
from zarr.core.sync import sync

import zarrlake
from zarrlake.core import forget_cores

ROOT = Path(__file__).resolve().parent.parent
PG_DEFAULT = os.environ.get(
    "ZARRLAKE_BENCH_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)

COLD_SCRIPT = """
import sys, time, json
import numpy as np, zarr
import zarrlake
zarrlake.Repo  # loads the catalog's modules: imports are not timed
t0 = time.perf_counter()
repo = zarrlake.Repo.open(**json.loads(sys.argv[1]))
arr = zarr.open_array(repo.readonly_session("main").store, path="grid", mode="r")
v = arr[int(sys.argv[2]), int(sys.argv[3])]
t1 = time.perf_counter()
assert v == 1, v
print(json.dumps({"seconds": t1 - t0}))
"""


ICECHUNK_COLD_SCRIPT = """
import sys, time, json
import numpy as np, zarr
import icechunk
t0 = time.perf_counter()
repo = icechunk.Repository.open(icechunk.local_filesystem_storage(sys.argv[1]))
arr = zarr.open_array(repo.readonly_session(branch="main").store, path="grid", mode="r")
v = arr[int(sys.argv[2]), int(sys.argv[3])]
t1 = time.perf_counter()
assert v == 1, v
print(json.dumps({"seconds": t1 - t0}))
"""


def _cold(script: str, where: str, r: int, c: int) -> float:
    """Open and read one chunk in a fresh process; the seconds it took there."""
    out = subprocess.run(
        [sys.executable, "-c", script, where, str(r), str(c)],
        check=False,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "ICECHUNK_LOG": "error"},
    )
    if out.returncode:
        raise RuntimeError(f"the cold read failed:\n{out.stderr}")
    return float(json.loads(out.stdout.strip().splitlines()[-1])["seconds"])


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def blob_bytes(repo: zarrlake.Repo) -> int:
    """Total bytes of the repo's catalog nodes (a commit's own is the difference)."""
    engine = sa.create_engine(repo.config.catalog)
    try:
        with engine.connect() as conn:
            return int(
                conn.execute(
                    sa.text("SELECT COALESCE(SUM(LENGTH(data)), 0) FROM zl_blobs")
                ).scalar_one()
            )
    finally:
        engine.dispose()


def fill_store(store: Any, rows: np.ndarray, cols: np.ndarray, value: int) -> None:
    """Write the first chunk of every shard through the store (one 1-byte chunk each;
    through zarr's orthogonal indexing each chunk would first be read)."""
    data = default_buffer_prototype().buffer.from_bytes(bytes([value]))
    keys = [f"grid/c/{r}/{c}" for r in rows.tolist() for c in cols.tolist()]

    async def put_all() -> None:
        for i in range(0, len(keys), 2000):
            await asyncio.gather(*(store.set(k, data) for k in keys[i : i + 2000]))

    sync(put_all())


def shard_origins(side: int) -> tuple[np.ndarray, np.ndarray]:
    """The first row and column of every manifest shard of a ``side x side`` array."""
    from zarrlake.model.manifest import shard_shape_for

    rows, cols = shard_shape_for((side, side), 2)
    return np.arange(0, side, rows), np.arange(0, side, cols)


class Grid:
    """One repository (zarrlake's or Icechunk's: both have ``writable_session(branch)`` and
    ``commit(message)``) with one ``side x side`` array of 1 x 1 chunks, one chunk written
    per zarrlake manifest shard."""

    def __init__(self, repo: Any, side: int) -> None:
        self.repo = repo
        self.side = side
        s = repo.writable_session("main")
        zarr.open_group(s.store, mode="w").create_array(
            "grid", shape=(side, side), chunks=(1, 1), dtype="i1", fill_value=0, compressors=None
        )
        self.shard_rows, self.shard_cols = shard_origins(side)
        fill_store(s.store, self.shard_rows, self.shard_cols, 1)
        s.commit(f"{side * side:.0e} chunks, one written per shard")
        self.rng = np.random.default_rng(7)

    def head(self) -> str:
        """The commit (snapshot) ``main`` is at."""
        raise NotImplementedError

    @property
    def populated_shards(self) -> int:
        return len(self.shard_rows) * len(self.shard_cols)

    def some_chunk(self) -> tuple[int, int]:
        return int(self.rng.choice(self.shard_rows)), int(self.rng.choice(self.shard_cols))

    def one_chunk_commit(self) -> float:
        r, c = self.some_chunk()
        t = time.perf_counter()
        s = self.repo.writable_session("main")
        zarr.open_array(s.store, path="grid")[r, c] = int(self.rng.integers(2, 100))
        s.commit("one chunk")
        return time.perf_counter() - t

    def restore_ones(self) -> None:
        """Put the cold read's chunks back to 1 (the one-chunk commits changed some)."""
        s = self.repo.writable_session("main")
        fill_store(s.store, self.shard_rows, self.shard_cols, 1)
        s.commit("restore")

    def hundred_chunk_versions(self) -> tuple[str, str]:
        a = self.head()
        s = self.repo.writable_session("main")
        arr = zarr.open_array(s.store, path="grid")
        for r, c in hundred_chunks(self.rng, self.side):
            arr[r, c] = 42
        return a, str(s.commit("100 chunks"))


class IcechunkLake(Grid):
    """The same array in an Icechunk repository on the local filesystem, the same chunks written."""

    def __init__(self, where: Path, side: int) -> None:
        import icechunk

        self.where = where
        super().__init__(
            icechunk.Repository.create(icechunk.local_filesystem_storage(str(where))), side
        )

    def head(self) -> str:
        return str(self.repo.lookup_branch("main"))

    def written_bytes(self) -> int:
        return sum(f.stat().st_size for f in self.where.rglob("*") if f.is_file())

    def cold_read(self) -> float:
        r, c = self.some_chunk()
        return _cold(ICECHUNK_COLD_SCRIPT, str(self.where), r, c)

    def cold_diff(self, a: str, b: str) -> float:
        import icechunk

        repo = icechunk.Repository.open(icechunk.local_filesystem_storage(str(self.where)))
        t = time.perf_counter()
        d = repo.diff(from_snapshot_id=a, to_snapshot_id=b)
        took = time.perf_counter() - t
        changed = sum(len(v) for v in d.updated_chunks.values())
        assert changed == 100, d
        return took


class Lake(Grid):
    """The array in a zarrlake repo: a lake directory, or a catalog URL with storage beside."""

    def __init__(self, where: Path, side: int, catalog: str | None) -> None:
        if catalog is None:
            self.opener: dict[str, Any] = {"location": str(where)}
            repo = zarrlake.Repo.create(where)
        else:
            self.opener = {"catalog": catalog}
            repo = zarrlake.Repo.create(catalog=catalog, storage=str(where / "objects"))
        super().__init__(repo, side)

    def head(self) -> str:
        return str(self.repo.resolve("main"))

    def cold_read(self) -> float:
        r, c = self.some_chunk()
        return _cold(COLD_SCRIPT, json.dumps(self.opener), r, c)

    def cold_diff(self, a: str, b: str) -> float:
        forget_cores()
        repo = zarrlake.Repo.open(**self.opener)
        t = time.perf_counter()
        d = repo.diff(a, b)
        took = time.perf_counter() - t
        summary = d.summary()
        assert summary.chunks_added + summary.chunks_changed == 100, summary
        return took


def hundred_chunks(rng: np.random.Generator, side: int) -> list[tuple[int, int]]:
    """100 distinct chunks spread over the whole array (most in shards of their own)."""
    picked: set[tuple[int, int]] = set()
    while len(picked) < 100:
        picked.add((int(rng.integers(side)), int(rng.integers(side))))
    return sorted(picked)


def repeat(n: int, fn: Callable[[], float]) -> list[float]:
    return [fn() for _ in range(n)]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="4,6,8", help="powers of ten of the chunk counts (even)")
    p.add_argument("--catalog", default="sqlite,postgres", help="any of sqlite, postgres, icechunk")
    p.add_argument("--repeat", type=int, default=15, help="one-chunk commits per size")
    p.add_argument("--cold", type=int, default=5, help="fresh-process reads per size")
    p.add_argument("--pg-url", default=PG_DEFAULT)
    p.add_argument("--json", type=Path, help="also write the figures here")
    args = p.parse_args()
    sizes = [int(x) for x in args.sizes.split(",")]
    if any(k % 2 for k in sizes):
        p.error("--sizes must be even powers of ten (square arrays)")
    catalogs = [c.strip() for c in args.catalog.split(",")]
    unknown = set(catalogs) - {"sqlite", "postgres", "icechunk"}
    if unknown:
        p.error(f"unknown catalog(s): {', '.join(sorted(unknown))}")
    scratch = Path(tempfile.mkdtemp(prefix="zarrlake-scale-"))
    print(f"scale benchmark: sizes 10^{sizes}, catalogs {catalogs}; load {os.getloadavg()[0]:.2f}")
    results: dict[str, dict[int, dict[str, float]]] = {}
    try:
        for cat in catalogs:
            results[cat] = {}
            for k in sizes:
                side = 10 ** (k // 2)
                url = None
                db = None
                if cat == "postgres":
                    db = f"zl_scale_{uuid.uuid4().hex[:10]}"
                    _admin(args.pg_url, f'CREATE DATABASE "{db}"')
                    url = (
                        sa.make_url(args.pg_url)
                        .set(database=db)
                        .render_as_string(hide_password=False)
                    )
                try:
                    t = time.perf_counter()
                    lake: Grid
                    if cat == "icechunk":
                        lake = IcechunkLake(scratch / f"{cat}-{k}", side)
                        size_of: Callable[[], int] = lake.written_bytes
                    else:
                        lake = Lake(scratch / f"{cat}-{k}", side, url)
                        size_of = lambda repo=lake.repo: blob_bytes(repo)  # noqa: E731
                    build = time.perf_counter() - t
                    lake.one_chunk_commit()  # warm the process's caches like a live writer
                    before = size_of()
                    lake.one_chunk_commit()
                    written = size_of() - before
                    commits = repeat(args.repeat, lake.one_chunk_commit)
                    lake.restore_ones()
                    cold = repeat(args.cold, lake.cold_read)
                    row = {
                        "shards": lake.populated_shards,
                        "build_s": build,
                        "commit_ms": median_ms(commits),
                        "bytes": written,
                        "cold_ms": median_ms(cold),
                    }
                    a, b = lake.hundred_chunk_versions()
                    row["diff_ms"] = median_ms([lake.cold_diff(a, b) for _ in range(5)])
                    results[cat][k] = row
                    print(
                        f"  {cat:<8} 10^{k}: {row['shards']:>7,} shards  built in {build:6.1f} s  "
                        f"commit {row['commit_ms']:6.1f} ms  bytes {written / 1000:6.1f} KB  "
                        f"cold read {row['cold_ms']:6.1f} ms  diff(100) {row['diff_ms']:6.1f} ms"
                    )
                finally:
                    forget_cores()
                    if db is not None:
                        _admin(args.pg_url, f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
        print(targets(results, min(sizes), max(sizes)))
        if args.json:
            args.json.write_text(
                json.dumps(
                    {str(c): {str(k): v for k, v in r.items()} for c, r in results.items()},
                    indent=2,
                )
            )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


def targets(results: dict[str, dict[int, dict[str, float]]], lo: int, hi: int) -> str:
    lines = [f"\ntargets (10^{hi} against 10^{lo} chunks):"]

    def check(name: str, value: float, limit: float, unit: str) -> None:
        verdict = "PASS" if value <= limit else "MISS"
        lines.append(f"  {verdict}  {name:<52} {value:8.2f} {unit} (<= {limit:g})")

    for cat, rows in results.items():
        if lo == hi or lo not in rows or hi not in rows:
            continue
        a, b = rows[lo], rows[hi]
        if cat == "icechunk":  # no targets of its own: its figures, for comparison
            lines.append(
                f"  ----  icechunk: commit {b['commit_ms'] / a['commit_ms']:.2f}x, cold read "
                f"{b['cold_ms'] / a['cold_ms']:.2f}x, diff {b['diff_ms'] / a['diff_ms']:.2f}x, "
                f"{b['bytes'] / 1000:.1f} KB written by a one-chunk commit at 10^{hi}"
            )
            continue
        check(f"{cat}: one-chunk commit ratio", b["commit_ms"] / a["commit_ms"], 1.3, "x")
        check(f"{cat}: cold open + read ratio", b["cold_ms"] / a["cold_ms"], 1.3, "x")
        check(f"{cat}: diff of 100 chunks ratio", b["diff_ms"] / a["diff_ms"], 1.3, "x")
        check(f"{cat}: diff of 100 chunks", b["diff_ms"], 50, "ms")
        check(f"{cat}: catalog bytes of a one-chunk commit", b["bytes"] / 1000, 64, "KB")
    return "\n".join(lines)


def _admin(url: str, statement: str) -> None:
    engine = sa.create_engine(url, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            conn.execute(sa.text(statement))
    finally:
        engine.dispose()


if __name__ == "__main__":
    sys.exit(main())
