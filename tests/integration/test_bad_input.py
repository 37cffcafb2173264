"""Bad input gets a clear error of our own tree, on both catalogs, and changes nothing."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
import zarr

import zarrlake
from tests.conftest import PG_URL, _need_postgres, unique
from tests.integration._workers import (
    CTX,
    create_branch_racing,
    create_repo_racing,
    run_children,
)


def _session_with_change(repo: zarrlake.Repo) -> zarrlake.WritableSession:
    s = repo.writable_session()
    zarr.open_group(s.store, mode="w").create_array("a", shape=(4,), chunks=(4,), dtype="i8")
    return s


@pytest.mark.parametrize(
    ("message", "metadata"),
    [
        ("nul \x00 inside", None),
        ("lone surrogate \ud800", None),
        (b"bytes", None),
        ("ok", {"when": datetime(2026, 1, 1)}),
        ("ok", {"nan": float("nan")}),
        ("ok", {"set": {1, 2}}),
        ("ok", {1: "non-string key"}),
        ("ok", ["not", "a", "dict"]),
    ],
)
def test_commit_arguments_both_catalogs_cannot_store_are_refused(
    make_repo: Callable[..., zarrlake.Repo], message: object, metadata: object
) -> None:
    repo = make_repo()
    head = repo.resolve("main")
    s = _session_with_change(repo)
    with pytest.raises(zarrlake.InvalidInputError):
        s.commit(message, metadata=metadata)  # type: ignore[arg-type]
    assert repo.resolve("main") == head
    assert s.closed is None
    assert s.commit("fine") == repo.resolve("main")


@pytest.mark.parametrize(
    "call",
    [
        lambda repo, s: repo.log(limit="3"),
        lambda repo, s: repo.log(limit=-1),
        lambda repo, s: repo.reflog("main", limit=1.5),
        lambda repo, s: s.commit("x", timeout="soon"),
        lambda repo, s: s.commit("x", timeout=-1),
        lambda repo, s: s.extend("1h"),
        lambda repo, s: s.extend(timedelta(0)),
        lambda repo, s: repo.readonly_session(branch="main", as_of="yesterday"),
        lambda repo, s: repo.writable_session(expires_in=3600),
        lambda repo, s: repo.writable_session(author="a\x00b"),
        lambda repo, s: repo.merge("main", "main", message="m\x00"),
    ],
)
def test_wrong_argument_types_are_refused(
    make_repo: Callable[..., zarrlake.Repo], call: Callable[..., object]
) -> None:
    repo = make_repo()
    s = _session_with_change(repo)
    with pytest.raises(zarrlake.InvalidInputError):
        call(repo, s)
    assert s.closed is None


@pytest.mark.parametrize("when", [datetime.min, datetime.max, datetime(1, 1, 1, tzinfo=UTC)])
def test_times_at_the_limits_of_the_calendar(
    make_repo: Callable[..., zarrlake.Repo], when: datetime
) -> None:
    repo = make_repo()
    try:
        found = repo.commit_at("main", when)
    except zarrlake.NotFoundError:
        assert when.year == 1  # before the repo existed
    else:
        assert found == repo.resolve("main")


def test_opening_an_empty_catalog_file_creates_nothing(tmp_path: Path) -> None:
    empty = tmp_path / "empty.db"
    empty.touch()
    with pytest.raises(zarrlake.NotFoundError, match="no zarrlake catalog"):
        zarrlake.Repo.open(catalog=f"sqlite:///{empty}")
    assert empty.read_bytes() == b""  # no SQLite header written into it
    with pytest.raises(zarrlake.NotFoundError, match="empty"):
        zarrlake.Repo.create(catalog=f"sqlite:///{empty}", storage=str(tmp_path / "objects"))
    assert empty.read_bytes() == b""


def test_a_file_of_another_program_is_refused_unchanged(tmp_path: Path) -> None:
    foreign = tmp_path / "notes.db"
    foreign.write_bytes(b"my notes\n")
    for call in (
        lambda: zarrlake.Repo.open(catalog=f"sqlite:///{foreign}"),
        lambda: zarrlake.Repo.create(catalog=f"sqlite:///{foreign}", storage=str(tmp_path)),
    ):
        with pytest.raises(zarrlake.CatalogError, match="not a SQLite database"):
            call()
    assert foreign.read_bytes() == b"my notes\n"


def test_a_missing_catalog_file_is_not_created_by_open(tmp_path: Path) -> None:
    with pytest.raises(zarrlake.NotFoundError):
        zarrlake.Repo.open(catalog=f"sqlite:///{tmp_path / 'nothing.db'}")
    assert not (tmp_path / "nothing.db").exists()


def test_a_database_of_another_program_is_left_alone(tmp_path: Path) -> None:
    other = tmp_path / "app.db"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
    with pytest.raises(zarrlake.CatalogError, match="another program"):
        zarrlake.Repo.create(catalog=f"sqlite:///{other}", storage=str(tmp_path / "o"))
    with sqlite3.connect(other) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    assert tables == ["users"]


def test_a_schema_version_that_is_not_a_number(tmp_path: Path) -> None:
    zarrlake.Repo.create(tmp_path / "lake")
    with sqlite3.connect(tmp_path / "lake" / "catalog.db") as conn:
        conn.execute("UPDATE zl_info SET value = 'three' WHERE key = 'schema_version'")
    zarrlake.catalog.forget_catalog(f"sqlite:///{tmp_path / 'lake' / 'catalog.db'}")
    with pytest.raises(zarrlake.SchemaVersionError, match="not a version zarrlake ever wrote"):
        zarrlake.Repo.open(tmp_path / "lake")


def test_secrets_never_show(tmp_path: Path) -> None:
    url = "postgresql+psycopg://alice:hunter2@127.0.0.1:1/db?password=hunter3&sslkey=k1"
    config = zarrlake.RepoConfig(url, "r", {"key": "AKIA-SECRET", "secret": "s3cr3t"})
    shown = repr(config)
    for secret in ("hunter2", "hunter3", "AKIA-SECRET", "s3cr3t", "k1"):
        assert secret not in shown
    with pytest.raises(zarrlake.CatalogError) as err:
        zarrlake.Repo.open(catalog=url, name="r")
    assert "hunter2" not in str(err.value)
    assert "hunter3" not in str(err.value)


@pytest.mark.postgres
@pytest.mark.slow
def test_processes_creating_one_repo_at_once(tmp_path: Path) -> None:
    # PostgreSQL runs the two inserts concurrently (SQLite serializes writers)
    _need_postgres()
    catalog_url = PG_URL
    name = unique("race")
    barrier = CTX.Barrier(4)
    outcomes = run_children(
        [(create_repo_racing, (catalog_url, name, str(tmp_path / "o"), barrier))] * 4
    )
    assert sorted(outcomes) == ["created", "exists", "exists", "exists"]
    barrier = CTX.Barrier(4)
    outcomes = run_children([(create_branch_racing, (catalog_url, name, "dev", barrier))] * 4)
    assert sorted(outcomes) == ["created", "exists", "exists", "exists"]


ARRAY = {
    "zarr_format": 3,
    "node_type": "array",
    "shape": [10],
    "data_type": "int64",
    "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [5]}},
    "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
    "fill_value": 0,
    "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
}


def _doc(**change: object) -> bytes:
    return json.dumps({**ARRAY, **change}).encode()


@pytest.mark.parametrize(
    "document",
    [
        _doc(shape=[True]),
        _doc(shape=[2**70]),
        _doc(codecs=[{"name": "no-such-codec"}]),
        _doc(data_type="int128"),
        _doc(chunk_grid={"name": "regular", "configuration": [5]}),
        _doc(chunk_key_encoding={"name": "default", "configuration": "/"}),
        b"\xff\xfe not utf-8",
        ("[" * 100_000 + "]" * 100_000).encode(),
        json.dumps(ARRAY).encode("utf-16"),
        json.dumps(ARRAY).encode("utf-8-sig"),
    ],
    ids=[
        "bool-shape",
        "huge-shape",
        "unknown-codec",
        "unknown-dtype",
        "grid-config-list",
        "cke-config-string",
        "not-utf8",
        "deep-json",
        "utf-16",
        "utf-8-bom",
    ],
)
def test_bad_metadata_is_refused_and_stages_nothing(
    make_repo: Callable[..., zarrlake.Repo], document: bytes
) -> None:
    from zarr.core.buffer import cpu

    repo = make_repo()
    s = repo.writable_session()
    with pytest.raises(zarrlake.InvalidMetadataError):
        s.store.set_sync("x/zarr.json", cpu.Buffer.from_bytes(document))
    assert not s.has_changes


@pytest.mark.parametrize(
    ("key", "size", "error"),
    [
        (f"a/c/{2**70}", 40, zarrlake.InvalidKeyError),
        ("a/c/2", 40, zarrlake.InvalidKeyError),  # the grid is 2 chunks
        ("a/c/0", 39, zarrlake.InvalidInputError),  # uncompressed chunks are 40 bytes
    ],
)
def test_bad_chunk_writes_are_refused(
    make_repo: Callable[..., zarrlake.Repo], key: str, size: int, error: type[Exception]
) -> None:
    from zarr.core.buffer import cpu

    repo = make_repo()
    s = repo.writable_session()
    s.store.set_sync("a/zarr.json", cpu.Buffer.from_bytes(_doc()))
    s.flush()
    with pytest.raises(error):
        s.store.set_sync(key, cpu.Buffer.from_bytes(b"\0" * size))
    s.store.set_sync("a/c/1", cpu.Buffer.from_bytes(bytes(range(40))))
    commit = s.commit("one good chunk")
    assert [n.chunks_added for n in repo.diff(repo.resolve("main~1"), commit).nodes] == [
        frozenset({(1,)})
    ]


def test_storage_that_is_a_file_is_refused_before_the_catalog_records_anything(
    tmp_path: Path,
) -> None:
    (tmp_path / "file").write_text("x")
    url = f"sqlite:///{tmp_path / 'c.db'}"
    with pytest.raises(zarrlake.StorageError):
        zarrlake.Repo.create(catalog=url, storage=str(tmp_path / "file"), name="r")
    with pytest.raises(zarrlake.NotFoundError):
        zarrlake.Repo.open(catalog=url, name="r")


def test_an_unreachable_s3_endpoint_is_refused_before_the_catalog_records_anything(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'c.db'}"
    options = {
        "endpoint_url": "http://127.0.0.1:9",  # discard port: nothing listens
        "key": "k",
        "secret": "very-secret",
        "config_kwargs": {"connect_timeout": 1, "retries": {"max_attempts": 1}},
    }
    with pytest.raises(zarrlake.StorageError) as err:
        zarrlake.Repo.create(catalog=url, storage="s3://lake/x", name="r", storage_options=options)
    assert "very-secret" not in str(err.value)
    with pytest.raises(zarrlake.NotFoundError):
        zarrlake.Repo.open(catalog=url, name="r")


def test_an_unreachable_postgresql_server_is_one_clear_line(tmp_path: Path) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"postgresql+psycopg://postgres@127.0.0.1:{port}/test"
    with pytest.raises(zarrlake.CatalogError) as caught:
        zarrlake.Repo.open(catalog=url)
    message = str(caught.value)
    assert "\n" not in message
    assert f"port {port} failed" in message
    p = subprocess.run(
        [sys.executable, "-m", "zarrlake.cli", "log", "--catalog", url],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 4
    assert len(p.stderr.strip().splitlines()) == 1


def _tree(root: Path) -> list[tuple[str, bytes | None]]:
    return sorted(
        (str(p.relative_to(root)), p.read_bytes() if p.is_file() else None) for p in root.rglob("*")
    )


@pytest.mark.parametrize("where", ["file", "file/lake", "file/a/b"])
def test_a_lake_in_or_under_a_file_is_refused_and_nothing_is_created(
    tmp_path: Path, where: str
) -> None:
    (tmp_path / "file").write_text("not a directory")
    before = _tree(tmp_path)
    with pytest.raises(zarrlake.InvalidInputError, match="is a file; choose a directory"):
        zarrlake.Repo.create(tmp_path / where)
    assert _tree(tmp_path) == before


@pytest.mark.parametrize("where", ["/proc/zarrlake-lake", "/proc/zarrlake-a/b"])
def test_a_lake_where_nothing_can_be_written_is_refused(where: str) -> None:
    # /proc refuses new entries even to root, which file permissions would not
    with pytest.raises(zarrlake.StorageError, match="choose a place you can write to"):
        zarrlake.Repo.create(where)
    assert not os.path.lexists(where)


@pytest.mark.parametrize(
    "url",
    [
        "postgresql+psycopg://u:hunter2@h:abc/db",
        "postgresql+psycopg://u:hunter2@h:/db",
        "postgresql+psycopg://u:hunter2@h:99999/db",
        "postgresql+psycopg://u:hunter2@h:0/db",
    ],
)
def test_a_catalog_url_whose_port_is_not_a_port_is_refused(tmp_path: Path, url: str) -> None:
    with pytest.raises(zarrlake.InvalidInputError, match="port") as err:
        zarrlake.Repo.open(catalog=url, name="r")
    assert "hunter2" not in str(err.value)
    with pytest.raises(zarrlake.InvalidInputError, match="port"):
        zarrlake.Repo.create(catalog=url, storage=str(tmp_path / "objects"), name="r")
    assert list(tmp_path.iterdir()) == []  # the storage was not created either


def test_a_catalog_url_that_is_not_a_url_is_refused(tmp_path: Path) -> None:
    with pytest.raises(zarrlake.InvalidInputError, match="cannot read the catalog URL"):
        zarrlake.Repo.open(catalog="catalog.db", name="r")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "older_than",
    [
        datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=1))),  # year 0 in UTC
        datetime(9999, 12, 31, 23, tzinfo=timezone(timedelta(hours=-5))),  # year 10000 in UTC
        timedelta(days=999_999_999),
    ],
)
def test_expire_at_times_outside_the_calendar_is_refused(
    make_repo: Callable[..., zarrlake.Repo], older_than: datetime | timedelta
) -> None:
    repo = make_repo()
    _session_with_change(repo).commit("one")
    history = [c.id for c in repo.log("main")]
    with pytest.raises(zarrlake.InvalidInputError, match="outside the calendar"):
        repo.expire(older_than)
    assert [c.id for c in repo.log("main")] == history
    assert repo.expire(datetime(1, 1, 1, tzinfo=UTC)).cutoff == datetime(1, 1, 1, tzinfo=UTC)
