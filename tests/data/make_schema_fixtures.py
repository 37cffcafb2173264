"""Build tests/data/schemas/v{N}.tar.gz: the same small history written by the code of every
catalog schema version the project has shipped, in SQLite and in PostgreSQL.

Run by hand from the repository root, with PostgreSQL on 127.0.0.1:5432 (user postgres, trust
auth) and ``pg_dump`` on the PATH:

    python3 -m uv run --no-sync python tests/data/make_schema_fixtures.py        # every version
    python3 -m uv run --no-sync python tests/data/make_schema_fixtures.py 3 4    # some of them

For each version, the script checks out the last commit at that version (``SOURCES``) into a
temporary ``git worktree add --detach``, and runs this file again in writer mode (``--write``)
with that commit's ``src`` first on ``PYTHONPATH``, so the history is written by that
version's own code. The writer feature-tests what its version has: merges from version 2,
idempotency keys from version 3. The history, in both catalogs (repo ``default``):

- ``main``: the repo's first commit, then "create group and arrays" (group ``grp`` with a
  float32 array ``grp/temp``, 40 x 48 in chunks of 16 x 16 without compression, so every chunk
  is a 1024-byte object, packed from version 4; and an int32 array ``grp/count`` of 12 in
  chunks of 4, every chunk inline), "first rows", then (after ``dev`` branched) "more rows",
  "batch 7" (idempotency key ``fixture-batch-0007`` where supported) and "merge dev" (a
  two-parent merge where supported);
- tag ``v1`` at "first rows"; branch ``dev`` from there with "dev experiment";
- one open session on ``main`` (expiring 7 days after it was made, the most every version
  allows) with staged writes: a 1024-byte chunk, an inline chunk, a chunk tombstone and new
  group attributes.

Each archive holds ``lake/`` (the embedded lake: ``catalog.db`` and its objects),
``pg/dump.sql`` (``pg_dump --no-owner --no-privileges --inserts`` of the ``zl_*`` tables, psql
meta-commands removed) with ``pg/chunks/`` (the PostgreSQL repo's storage root), and
``expected.json`` (what a test checks: see ``describe``). A recorded absolute storage path
is replaced by ``@@STORAGE@@`` (``zl_repos.storage`` of the PostgreSQL dump, and of the SQLite
catalog for versions 1 and 2, which recorded the lake's absolute path);
``tests/data/schemas.py`` puts the unpacked location back.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import inspect
import io
import json
import os
import sqlite3
import subprocess
import sys
import tarfile
import tempfile
from datetime import timedelta
from pathlib import Path
from typing import Any

# version -> the last commit at that catalog schema version
SOURCES = {
    1: "ef96802",
    2: "3521a6e",
    3: "150d615",
    4: "98874cf",
    5: "1397a38",
    6: "fb66550",
    7: "18f7ea3",
    8: "b4c21e8",
    9: "9a2f56f",
    10: "a1006e5",
    11: "716d72a",
}
PLACEHOLDER = "@@STORAGE@@"
PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/test"
PG_SERVER = "postgresql+psycopg://postgres@127.0.0.1:5432"
AUTHOR = "fixture"
IDEMPOTENCY_KEY = "fixture-batch-0007"
ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "data" / "schemas"


# -- writer mode: runs with one old version's code -------------------------------------------


def _block(rows: int, cols: int, start: float) -> Any:
    import numpy as np

    return (np.arange(rows * cols, dtype="f4").reshape(rows, cols) * 0.25 + start).astype("f4")


def _write_history(repo: Any, version: int) -> dict[str, Any]:
    """The fixture's history in ``repo``; returns what the catalog alone does not say."""
    import numpy as np
    import zarr

    s = repo.writable_session("main", author=AUTHOR)
    g = zarr.open_group(s.store, mode="w").create_group("grp")
    g.attrs.update({"title": "schema fixture", "schema_version": version})
    temp = g.create_array(
        "temp", shape=(40, 48), chunks=(16, 16), dtype="f4", fill_value=0, compressors=None
    )
    temp[0:16, :] = _block(16, 48, 1.0)
    count = g.create_array("count", shape=(12,), chunks=(4,), dtype="i4", fill_value=0)
    count[:] = np.arange(1, 13, dtype="i4")
    s.commit("create group and arrays", metadata={"step": 1})

    s = repo.writable_session("main", author=AUTHOR)
    zarr.open_array(s.store, path="grp/temp")[16:32, 0:16] = _block(16, 16, 100.0)
    s.commit("first rows", metadata={"step": 2, "source": "station-a"})
    repo.create_tag("v1", "main", author=AUTHOR)
    repo.create_branch("dev", "main", author=AUTHOR)

    s = repo.writable_session("dev", author=AUTHOR)
    zarr.open_array(s.store, path="grp/temp")[16:32, 32:48] = _block(16, 16, -50.0)
    zarr.open_array(s.store, path="grp/count")[8:12] = [-9, -10, -11, -12]
    s.commit("dev experiment", metadata={"branch": "dev"})

    s = repo.writable_session("main", author=AUTHOR)
    zarr.open_array(s.store, path="grp/temp")[32:40, :] = _block(8, 48, 1000.0)
    s.commit("more rows", metadata={"step": 3})

    idempotency = None
    keyed = "idempotency_key" in inspect.signature(type(s).commit).parameters
    s = repo.writable_session("main", author=AUTHOR)
    zarr.open_array(s.store, path="grp/count")[0:4] = [101, 102, 103, 104]
    if keyed:
        batch = s.commit(
            "batch 7", metadata={"step": 4, "batch": 7}, idempotency_key=IDEMPOTENCY_KEY
        )
        # the same batch again commits nothing and returns the recorded commit
        again = repo.writable_session("main", author=AUTHOR)
        zarr.open_array(again.store, path="grp/count")[0:4] = [101, 102, 103, 104]
        retried = again.commit(
            "batch 7", metadata={"step": 4, "batch": 7}, idempotency_key=IDEMPOTENCY_KEY
        )
        assert retried == batch, (retried, batch)
        idempotency = {"branch": "main", "key": IDEMPOTENCY_KEY, "commit": batch}
    else:
        s.commit("batch 7", metadata={"step": 4, "batch": 7})

    merge = None
    if callable(getattr(repo, "merge", None)):
        # positional: the target's keyword was "into" in version 2, "branch" later
        head = repo.merge("dev", "main", message="merge dev", metadata={"step": 5}, author=AUTHOR)
        merge = {"branch": "main", "source": "dev", "commit": head}

    s = repo.writable_session("main", author=AUTHOR, expires_in=timedelta(days=7))
    g = zarr.open_group(s.store, path="grp", mode="r+")
    g.attrs.update({"title": "schema fixture, staged"})
    zarr.open_array(s.store, path="grp/temp")[0:16, 16:32] = _block(16, 16, 7.0)
    zarr.open_array(s.store, path="grp/temp")[32:40, 32:48] = 0  # the fill value: a tombstone
    zarr.open_array(s.store, path="grp/count")[4:8] = [7, 7, 7, 7]
    s.flush()
    return {
        "session": s,
        "features": {"merge": merge is not None, "idempotency_key": idempotency is not None},
        "merge": merge,
        "idempotency": idempotency,
    }


def _values(store: Any) -> dict[str, Any]:
    import numpy as np
    import zarr

    out = {}
    for path in ("grp/count", "grp/temp"):
        a = zarr.open_array(store, path=path, mode="r")
        data = np.ascontiguousarray(a[...])
        out[path] = {
            "shape": list(data.shape),
            "dtype": str(data.dtype),
            "sha256": hashlib.sha256(data.tobytes()).hexdigest(),
        }
    return out


def _catalog_facts(url: str, repo_name: str) -> dict[str, Any]:
    import sqlalchemy as sa

    engine = sa.create_engine(url)
    with engine.connect() as conn:
        repo_id, storage = conn.execute(
            sa.text("SELECT id, storage FROM zl_repos WHERE name = :n"), {"n": repo_name}
        ).one()
        commits = conn.execute(
            sa.text(
                "SELECT id, parent_id, merge_parent_id, message, meta, author FROM zl_commits "
                "WHERE repo_id = :r ORDER BY generation, created_at"
            ),
            {"r": repo_id},
        ).all()
        sessions = conn.execute(
            sa.text(
                "SELECT id, branch, base_commit, status, expires_at, created_at FROM zl_sessions "
                "WHERE repo_id = :r AND status = 'open'"
            ),
            {"r": repo_id},
        ).all()
        staged = conn.execute(
            sa.text(
                "SELECT s.kind, COUNT(*) FROM zl_staged s JOIN zl_sessions z "
                "ON z.id = s.session_id WHERE z.repo_id = :r AND z.status = 'open' "
                "GROUP BY s.kind ORDER BY s.kind"
            ),
            {"r": repo_id},
        ).all()
        version = conn.execute(
            sa.text("SELECT value FROM zl_info WHERE key = 'schema_version'")
        ).scalar_one()
    engine.dispose()
    return {
        "storage": storage,
        "schema_version": int(version),
        "commits": [
            {
                "id": c.id,
                "parents": [p for p in (c.parent_id, c.merge_parent_id) if p],
                "message": c.message,
                "metadata": json.loads(c.meta),
                "author": c.author,
            }
            for c in commits
        ],
        "open_sessions": [
            {
                "id": s.id,
                "branch": s.branch,
                "base_commit": s.base_commit,
                "expires_in_seconds": round(s.expires_at - s.created_at),
            }
            for s in sessions
        ],
        "staged_rows": dict(staged),
    }


def describe(repo: Any, url: str, written: dict[str, Any], storage: str) -> dict[str, Any]:
    """What one catalog holds, in the terms of ``expected.json``; ``storage``, the absolute
    path of the repo's objects, is said as the placeholder the archive has in its place."""
    facts = _catalog_facts(url, repo.name)
    if facts["storage"] == storage:
        facts["storage"] = PLACEHOLDER
    (session,) = facts.pop("open_sessions")
    assert session["id"] == written["session"].id, (session, written["session"].id)
    branches = dict(sorted(repo.branches().items()))
    tags = dict(sorted(repo.tags().items()))
    values = {name: _values(repo.readonly_session(branch=name).store) for name in branches}
    values.update({name: _values(repo.readonly_session(tag=name).store) for name in tags})
    return {
        **facts,
        "branches": branches,
        "tags": tags,
        "open_session": session,
        "merge": written["merge"],
        "idempotency": written["idempotency"],
        "values": values,
        "session_values": _values(written["session"].store),
    }


def write(args: argparse.Namespace) -> None:
    import zarr

    import zarrlake
    from zarrlake.catalog.schema import SCHEMA_VERSION

    here = Path(zarrlake.__file__).resolve()
    assert here.is_relative_to(Path(args.code).resolve()), f"imported {here}, not the old code"
    assert args.version == SCHEMA_VERSION, (args.version, SCHEMA_VERSION)
    lake = Path(args.lake).resolve()
    embedded = zarrlake.Repo.create(lake, author=AUTHOR)
    written = _write_history(embedded, args.version)
    sqlite_facts = describe(embedded, f"sqlite:///{lake / 'catalog.db'}", written, str(lake))

    storage = str(Path(args.pg_storage).resolve())
    team = zarrlake.Repo.create(catalog=args.pg_url, storage=storage, author=AUTHOR)
    written = _write_history(team, args.version)
    pg_facts = describe(team, args.pg_url, written, storage)
    assert sqlite_facts["values"] == pg_facts["values"]
    assert sqlite_facts["session_values"] == pg_facts["session_values"]

    arrays = {}
    for path in ("grp/count", "grp/temp"):
        a = zarr.open_array(embedded.readonly_session(branch="main").store, path=path, mode="r")
        arrays[path] = {"shape": list(a.shape), "chunks": list(a.chunks), "dtype": str(a.dtype)}
    expected = {
        "schema_version": SCHEMA_VERSION,
        "source_commit": args.source,
        "repo": embedded.name,
        "features": written["features"],
        "arrays": arrays,
        "hash": "sha256 of the C-order bytes of zarr.open_array(...)[...]",
        "sqlite": sqlite_facts,
        "postgres": pg_facts,
    }
    Path(args.expected).write_text(json.dumps(expected, indent=1, sort_keys=True) + "\n")


# -- driver mode: runs with today's environment ----------------------------------------------


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(ROOT), *args], check=True, capture_output=True, text=True
    ).stdout.strip()


def _admin(sql: str) -> None:
    import psycopg

    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(sql)


def _checkpoint(lake: Path, absolute: str) -> None:
    """Fold the WAL into catalog.db, and put the placeholder where the lake's absolute path
    was recorded (versions 1 and 2)."""
    con = sqlite3.connect(lake / "catalog.db")
    with con:
        con.execute("UPDATE zl_repos SET storage = ? WHERE storage = ?", (PLACEHOLDER, absolute))
    con.execute("VACUUM")  # no copy of the old path left in a free page
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    leftover = sorted(p.name for p in lake.iterdir() if p.name.startswith("catalog.db-"))
    assert not leftover, leftover
    assert absolute.encode() not in (lake / "catalog.db").read_bytes(), "a path is left"


def _dump(database: str, storage: str, dest: Path) -> None:
    text = subprocess.run(
        [
            "pg_dump",
            "--no-owner",
            "--no-privileges",
            "--inserts",
            "--table=public.zl_*",
            f"postgresql://postgres@127.0.0.1:5432/{database}",
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    # psql meta-commands (\restrict, \unrestrict) are not SQL; a test replays the dump without psql
    lines = [line for line in text.splitlines() if not line.startswith("\\")]
    text = "\n".join(lines) + "\n"
    if text.count(storage) != 1 or text.count(f"'{storage}'") != 1:
        raise SystemExit(f"the dump names the storage path {storage} other than once")
    dest.write_text(text.replace(storage, PLACEHOLDER))


def _archive(src: Path, dest: Path) -> None:
    """A tar.gz of ``src``'s contents, the same bytes for the same files."""

    def clean(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        info.mtime = 0
        return info

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(src.rglob("*")):
            tar.add(path, arcname=str(path.relative_to(src)), recursive=False, filter=clean)
    with dest.open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
        gz.write(buffer.getvalue())


def build(version: int) -> Path:
    source = _git("rev-parse", f"{SOURCES[version]}^{{commit}}")
    database = f"zl_fixture_v{version}"
    with tempfile.TemporaryDirectory(prefix=f"zl-schema-v{version}-") as tmp:
        work, tree = Path(tmp) / "out", Path(tmp) / "code"
        (work / "pg" / "chunks").mkdir(parents=True)
        _git("worktree", "add", "--detach", str(tree), source)
        _admin(f"DROP DATABASE IF EXISTS {database}")
        _admin(f"CREATE DATABASE {database}")
        try:
            subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--write",
                    f"--version={version}",
                    f"--source={source}",
                    f"--code={tree / 'src'}",
                    f"--lake={work / 'lake'}",
                    f"--pg-url={PG_SERVER}/{database}",
                    f"--pg-storage={work / 'pg' / 'chunks'}",
                    f"--expected={work / 'expected.json'}",
                ],
                check=True,
                env={**os.environ, "PYTHONPATH": str(tree / "src")},
            )
            _checkpoint(work / "lake", str((work / "lake").resolve()))
            _dump(database, str((work / "pg" / "chunks").resolve()), work / "pg" / "dump.sql")
        finally:
            _admin(f"DROP DATABASE IF EXISTS {database}")
            _git("worktree", "remove", "--force", str(tree))
        OUT.mkdir(parents=True, exist_ok=True)
        dest = OUT / f"v{version}.tar.gz"
        _archive(work, dest)
    return dest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("versions", nargs="*", type=int, help="default: every version")
    parser.add_argument("--write", action="store_true", help=argparse.SUPPRESS)
    for name in ("version", "source", "code", "lake", "pg-url", "pg-storage", "expected"):
        parser.add_argument(f"--{name}", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.write:
        args.version = int(args.version)
        write(args)
        return
    for version in args.versions or sorted(SOURCES):
        dest = build(version)
        print(f"v{version}: {dest.relative_to(ROOT)} ({dest.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
