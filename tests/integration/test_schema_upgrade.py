"""Catalogs made by every schema version the project shipped (``tests/data/schemas``): opening
one never changes it, ``zarrlake catalog upgrade`` (or ``zarrlake.upgrade_catalog``) upgrades
it in one transaction, and afterwards every branch, tag, commit and array value is as the old
release wrote it, and the lake takes new commits."""

from __future__ import annotations

import hashlib
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import sqlalchemy as sa
import zarr

import zarrlake
from tests.conftest import PG_URL, _need_postgres
from tests.data.schemas import VERSIONS, expected, restored_postgres, unpack_sqlite
from zarrlake.catalog import SCHEMA_VERSION
from zarrlake.model import ChunkRef, virtual_hash
from zarrlake.testing import LakeProbe

CURRENT = SCHEMA_VERSION


def _values(repo: zarrlake.Repo, ref: str) -> dict[str, dict[str, Any]]:
    g = zarr.open_group(repo.readonly_session(ref).store, mode="r")
    out = {}
    for path in ("grp/temp", "grp/count"):
        a = np.ascontiguousarray(g[path][...])  # type: ignore[index]
        out[path] = {
            "dtype": str(a.dtype),
            "sha256": hashlib.sha256(a.tobytes()).hexdigest(),
            "shape": list(a.shape),
        }
    return out


def _same_history(repo: zarrlake.Repo, want: dict[str, Any]) -> None:
    assert repo.branches() == want["branches"]
    assert repo.tags() == want["tags"]
    for c in want["commits"]:
        info = repo.commit_info(c["id"])
        assert (list(info.parents), info.message, info.metadata) == (
            c["parents"],
            c["message"],
            c["metadata"],
        )
    for ref, values in want["values"].items():
        assert _values(repo, ref) == values


def _snapshot(url: str) -> dict[str, Any]:
    """Every zl_ table's columns and rows (to prove an open changed nothing)."""
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            meta = sa.MetaData()
            meta.reflect(conn, only=lambda name, _: name.startswith("zl_"))
            return {
                t.name: ([c.name for c in t.columns], sorted(map(repr, conn.execute(t.select()))))
                for t in meta.sorted_tables
            }
    finally:
        engine.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def kind(request: pytest.FixtureRequest) -> str:
    if request.param == "postgres":
        _need_postgres()
    return str(request.param)


@pytest.fixture
def old_catalog(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[str]:
    """The catalog URL of the fixture of the version the test is parametrized with."""
    version = request.param
    if kind == "sqlite":
        lake = unpack_sqlite(version, tmp_path)
        yield f"sqlite:///{lake / 'catalog.db'}"
        return
    with restored_postgres(version, tmp_path) as url:
        yield url


def _old(version: int) -> Any:
    return pytest.mark.parametrize("old_catalog", [version], indirect=True, ids=[f"v{version}"])


@pytest.mark.parametrize(
    "old_catalog",
    [v for v in VERSIONS if v < CURRENT],
    indirect=True,
    ids=[f"v{v}" for v in VERSIONS if v < CURRENT],
)
def test_an_older_catalog_is_refused_unchanged_until_upgraded(old_catalog: str, kind: str) -> None:
    before = _snapshot(old_catalog)
    with pytest.raises(zarrlake.SchemaVersionError, match="zarrlake catalog upgrade"):
        zarrlake.Repo.open(catalog=old_catalog)
    assert _snapshot(old_catalog) == before
    version = int(next(r for r in before["zl_info"][1] if "schema_version" in r).split("'")[3])

    done = zarrlake.upgrade_catalog(catalog=old_catalog)
    assert (done.before, done.after) == (version, CURRENT)
    assert done.applied == list(range(version + 1, CURRENT + 1))
    repo = zarrlake.Repo.open(catalog=old_catalog)
    # its objects keep their names: SHA-256 before version 9, the default since; and so do
    # its virtual chunks (SHA-256 before version 11)
    assert repo.content_hash == ("sha256" if version < 9 else "blake3")
    assert repo.virtual_identity == "sha256"
    _same_history(repo, expected(version)[kind])  # inline chunks verified by SHA-256 too

    s = repo.writable_session()  # the upgraded lake takes new commits, keyed ones too
    zarr.open_array(s.store, path="grp/count", mode="r+")[0:4] = 99
    commit = s.commit("after the upgrade", idempotency_key="after-upgrade")
    assert zarr.open_array(repo.readonly_session(commit).store, path="grp/count")[0] == 99
    assert repo.fsck(verify=True).ok


@pytest.mark.parametrize("old_catalog", [8], indirect=True, ids=["v8"])
def test_an_upgraded_repo_names_new_objects_by_sha256(old_catalog: str, kind: str) -> None:
    zarrlake.upgrade_catalog(catalog=old_catalog)
    repo = zarrlake.Repo.open(catalog=old_catalog)
    chunk = np.random.default_rng(8).random(40_000)  # 320,000 bytes: an object of its own
    before = LakeProbe(repo).object_hashes()
    s = repo.writable_session()
    for name in ("x", "y"):  # the same bytes twice: stored once
        zarr.open_group(s.store, path="grp").create_array(
            name, shape=chunk.shape, chunks=chunk.shape, dtype="f8", compressors=None
        )[:] = chunk
    s.commit("big chunks")
    after = LakeProbe(repo).object_hashes()
    assert after - before == {hashlib.sha256(chunk.tobytes()).digest()}
    assert repo.fsck(verify=True).ok


@pytest.mark.parametrize("old_catalog", [10], indirect=True, ids=["v10"])
def test_an_upgraded_repo_names_virtual_chunks_by_sha256(
    old_catalog: str, kind: str, tmp_path: Path
) -> None:
    """References an older release committed are named by SHA-256: the same references staged
    after the upgrade must be named the same, or every diff and merge would see them change."""
    zarrlake.upgrade_catalog(catalog=old_catalog)
    repo = zarrlake.Repo.open(catalog=old_catalog)
    source = tmp_path / "archive" / "a.bin"
    source.parent.mkdir()
    source.write_bytes(bytes(range(64)))
    repo.allow_virtual_source(str(source.parent))
    s = repo.writable_session()
    zarr.create_array(s.store, name="v", shape=(16,), chunks=(8,), dtype="u1", compressors=None)
    refs = [((0,), str(source), 8, 8), ((1,), str(source), 40, 8)]
    s.put_virtual_refs("v", refs)
    first = s.commit("references")
    committed = repo.readonly_session(first).locate("v/c/1")
    assert isinstance(committed, ChunkRef)
    assert committed.source is not None
    assert committed.hash == virtual_hash(committed.source, 40, 8, "sha256")

    s = repo.writable_session()
    s.put_virtual_refs("v", refs)  # the same references again: the same chunks
    with pytest.raises(zarrlake.EmptyCommitError, match="changes nothing"):
        s.commit("the same references")
    got = zarr.open_array(repo.readonly_session(first).store, path="v", mode="r")[:]
    assert got.tolist() == list(range(8, 16)) + list(range(40, 48))


@pytest.mark.parametrize("old_catalog", [CURRENT], indirect=True, ids=[f"v{CURRENT}"])
def test_a_current_catalog_opens_and_upgrade_has_nothing_to_do(old_catalog: str, kind: str) -> None:
    repo = zarrlake.Repo.open(catalog=old_catalog)
    assert repo.content_hash == "blake3"  # made at this version, with the defaults
    assert repo.virtual_identity == "span"
    _same_history(repo, expected(CURRENT)[kind])
    before = _snapshot(old_catalog)
    done = zarrlake.upgrade_catalog(catalog=old_catalog)
    assert (done.before, done.applied) == (CURRENT, [])
    assert _snapshot(old_catalog) == before


@pytest.mark.parametrize("old_catalog", [1], indirect=True, ids=["v1"])
def test_the_cli_upgrades_a_lake_directory(old_catalog: str, kind: str) -> None:
    if kind != "sqlite":
        pytest.skip("a lake directory is the embedded default")
    lake = Path(old_catalog.removeprefix("sqlite:///")).parent
    p = subprocess.run(
        [sys.executable, "-m", "zarrlake.cli", "catalog", "upgrade", str(lake)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == (
        f"upgraded catalog {old_catalog} from schema version 1 to {CURRENT} "
        f"(applied {', '.join(str(v) for v in range(2, CURRENT + 1))})"
    )
    _same_history(zarrlake.Repo.open(lake), expected(1)["sqlite"])
    again = subprocess.run(
        [sys.executable, "-m", "zarrlake.cli", "catalog", "upgrade", str(lake), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert '"applied": []' in again.stdout


@pytest.mark.parametrize("value", ["0", "-1", "abc", "", None, str(CURRENT + 1)])
def test_a_damaged_or_newer_version_record_is_refused_unchanged(
    tmp_path: Path, value: str | None
) -> None:
    zarrlake.Repo.create(tmp_path / "lake")
    db = tmp_path / "lake" / "catalog.db"
    con = sqlite3.connect(db)
    with con:
        if value is None:
            con.execute("DELETE FROM zl_info WHERE key = 'schema_version'")
        else:
            con.execute("UPDATE zl_info SET value = ? WHERE key = 'schema_version'", (value,))
    con.close()
    zarrlake.catalog.forget_catalog(f"sqlite:///{db}")
    before = _snapshot(f"sqlite:///{db}")
    word = "newer" if value == str(CURRENT + 1) else "damaged"
    with pytest.raises(zarrlake.SchemaVersionError, match=word):
        zarrlake.Repo.open(tmp_path / "lake")
    with pytest.raises(zarrlake.SchemaVersionError, match=word):
        zarrlake.upgrade_catalog(tmp_path / "lake")
    assert _snapshot(f"sqlite:///{db}") == before


@pytest.fixture
def private_pg(tmp_path: Path) -> Iterator[str]:
    """A catalog URL in a private PostgreSQL schema."""
    _need_postgres()
    schema = f"zl_lz4_{uuid.uuid4().hex[:10]}"
    admin = sa.create_engine(PG_URL)
    with admin.begin() as conn:
        conn.execute(sa.text(f"CREATE SCHEMA {schema}"))
    try:
        yield f"{PG_URL}?options=-csearch_path%3D{schema}"
    finally:
        with admin.begin() as conn:
            conn.execute(sa.text(f"DROP SCHEMA {schema} CASCADE"))
        admin.dispose()


@pytest.mark.postgres
def test_postgresql_compresses_catalog_nodes_with_lz4(private_pg: str, tmp_path: Path) -> None:
    zarrlake.Repo.create(catalog=private_pg, storage=str(tmp_path / "objects"))
    engine = sa.create_engine(private_pg)
    with engine.connect() as conn:
        method = conn.execute(
            sa.text(
                "SELECT attcompression FROM pg_attribute "
                "WHERE attrelid = 'zl_blobs'::regclass AND attname = 'data'"
            )
        ).scalar()
    engine.dispose()
    assert method == "l"  # lz4: pglz cost about 3.5 ms of a one-chunk commit
