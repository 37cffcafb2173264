"""Catalogs made by every catalog schema version the project has shipped, for upgrade tests.

``tests/data/schemas/v{N}.tar.gz`` holds the same small history written by the code of schema
version N (see ``make_schema_fixtures.py`` for how, and for the history itself):
``expected.json`` says what it holds, ``lake/`` is the embedded lake, ``pg/dump.sql`` and
``pg/chunks/`` the PostgreSQL variant. This module unpacks and restores them with SQLAlchemy,
psycopg and the standard library only (never zarrlake), so it works whatever the engine's
current API is. It holds no tests.

    lake = unpack_sqlite(3, tmp_path)                  # Repo.open(lake) on the v3 lake
    with restored_postgres(3, tmp_path) as url:        # Repo.open(catalog=url) on it
        ...
"""

from __future__ import annotations

import json
import sqlite3
import tarfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

import psycopg
import sqlalchemy as sa

__all__ = [
    "PLACEHOLDER",
    "VERSIONS",
    "archive",
    "drop_postgres",
    "expected",
    "restore_postgres",
    "restored_postgres",
    "unpack_sqlite",
]

VERSIONS = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)
DATA = Path(__file__).parent / "schemas"
PLACEHOLDER = "@@STORAGE@@"
ADMIN_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"


def archive(version: int) -> Path:
    """The archive of schema version ``version``."""
    if version not in VERSIONS:
        raise ValueError(f"no fixture for schema version {version!r}; there are {VERSIONS}")
    return DATA / f"v{version}.tar.gz"


@cache
def _expected(version: int) -> str:
    with tarfile.open(archive(version)) as tar:
        member = tar.extractfile("expected.json")
        assert member is not None
        return member.read().decode()


def expected(version: int) -> dict[str, Any]:
    """The fixture's manifest: ``schema_version``, ``source_commit``, ``repo``, ``features``
    (``merge``, ``idempotency_key``), ``arrays`` (path -> shape, chunks, dtype), and for each
    catalog (``"sqlite"``, ``"postgres"``): ``branches`` and ``tags`` (name -> commit id),
    ``commits`` (id, parents, message, metadata, author; oldest first), ``open_session`` (id,
    branch, base_commit, expires_in_seconds), ``merge`` and ``idempotency`` (the commit each
    made, or None), ``staged_rows`` (kind -> count), ``storage`` (as recorded, the placeholder
    where it was an absolute path), ``values`` (ref -> array path -> shape, dtype, sha256 of the
    C-order bytes of ``zarr.open_array(...)[...]``, for every branch head and tag) and
    ``session_values`` (the same, as the open session sees its arrays)."""
    manifest: dict[str, Any] = json.loads(_expected(version))
    return manifest


def _extract(version: int, prefix: str, dest: Path) -> Path:
    target = dest / prefix
    if target.exists():
        raise FileExistsError(f"{target} exists; unpack into an empty directory")
    with tarfile.open(archive(version)) as tar:
        members = [m for m in tar.getmembers() if m.name.split("/")[0] == prefix]
        tar.extractall(dest, members=members, filter="data")
    return target


def unpack_sqlite(version: int, dest: Path) -> Path:
    """Unpack the embedded lake of ``version`` into ``dest``; returns the lake directory
    (``dest / "lake"``). Versions 1 and 2 recorded the lake's absolute path as its storage:
    it is set to the unpacked directory, as if the lake had been made there."""
    lake = _extract(version, "lake", Path(dest))
    con = sqlite3.connect(lake / "catalog.db")
    try:
        with con:
            con.execute(
                "UPDATE zl_repos SET storage = ? WHERE storage = ?",
                (str(lake.resolve()), PLACEHOLDER),
            )
    finally:
        con.close()
    return lake


def _libpq(url: str | sa.URL) -> str:
    return sa.make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def restore_postgres(version: int, dest: Path, admin_url: str = ADMIN_URL) -> str:
    """Restore the PostgreSQL catalog of ``version`` into a new database on ``admin_url``'s
    server, its chunk directory unpacked into ``dest / "pg" / "chunks"``; returns the
    catalog's URL. Drop the database with :func:`drop_postgres` (or use
    :func:`restored_postgres`)."""
    pg = _extract(version, "pg", Path(dest))
    chunks = (pg / "chunks").resolve()
    dump = (pg / "dump.sql").read_text()
    if dump.count(PLACEHOLDER) != 1:
        raise ValueError(f"{archive(version)}: the dump names its storage other than once")
    dump = dump.replace(PLACEHOLDER, str(chunks).replace("'", "''"))
    name = f"zl_fixture_v{version}_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(_libpq(admin_url), autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    url = sa.make_url(admin_url).set(database=name)
    try:
        # one simple query: the whole dump in one implicit transaction
        with psycopg.connect(_libpq(url)) as conn:
            conn.execute(dump.encode())
    except BaseException:
        drop_postgres(url.render_as_string(hide_password=False), admin_url)
        raise
    return url.render_as_string(hide_password=False)


def drop_postgres(url: str, admin_url: str = ADMIN_URL) -> None:
    """Drop the database of a catalog made by :func:`restore_postgres`."""
    name = sa.make_url(url).database
    if not name or not name.startswith("zl_fixture_v"):
        raise ValueError(f"{name!r} is not a database restore_postgres made")
    with psycopg.connect(_libpq(admin_url), autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def restored_postgres(version: int, dest: Path, admin_url: str = ADMIN_URL) -> Iterator[str]:
    """:func:`restore_postgres`, the database dropped on exit."""
    url = restore_postgres(version, dest, admin_url)
    try:
        yield url
    finally:
        drop_postgres(url, admin_url)
