"""The schema fixtures (``tests/data/schemas``) are what they claim: each catalog has its
version's tables and columns, and the refs, commits and open session its manifest names.

Read with plain SQL only: opening them with the engine is the upgrade tests' business.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from tests.conftest import PG_URL, _need_postgres
from tests.data.schemas import (
    PLACEHOLDER,
    VERSIONS,
    expected,
    restored_postgres,
    unpack_sqlite,
)

TABLES = {
    "zl_info",
    "zl_repos",
    "zl_blobs",
    "zl_commits",
    "zl_refs",
    "zl_reflog",
    "zl_sessions",
    "zl_staged",
    "zl_reads",
}
STAGED = {"session_id", "path", "kind", "key", "hash", "length", "inline"}
# what each version added
ADDED_TABLES = {
    2: {"zl_gc_marks"},
    3: {"zl_commit_keys"},
    4: {"zl_moved"},
    6: {"zl_virtual_sources"},
    7: {"zl_checks", "zl_branch_rules", "zl_pulls", "zl_pull_events"},
    8: {"zl_webhooks"},
}
ADDED_STAGED = {4: {"pack", "pack_offset"}, 5: {"crc"}, 6: {"source"}}
REPOS = {"id", "name", "storage", "config", "created_at"}
ADDED_REPOS = {9: {"content_hash"}, 11: {"virtual_identity"}}


def _since(added: dict[int, set[str]], version: int) -> set[str]:
    return set().union(*(names for v, names in added.items() if v <= version))


def check_catalog(conn: sa.Connection, version: int, facts: dict[str, Any], storage: str) -> None:
    inspector = sa.inspect(conn)
    tables = {t for t in inspector.get_table_names() if t.startswith("zl_")}
    assert tables == TABLES | _since(ADDED_TABLES, version)
    staged = {c["name"] for c in inspector.get_columns("zl_staged")}
    assert staged == STAGED | _since(ADDED_STAGED, version)
    columns = {c["name"] for c in inspector.get_columns("zl_repos")}
    assert columns == REPOS | _since(ADDED_REPOS, version)
    found = conn.execute(sa.text("SELECT value FROM zl_info WHERE key = 'schema_version'"))
    assert found.scalar_one() == str(version)

    repo_id, recorded = conn.execute(
        sa.text("SELECT id, storage FROM zl_repos WHERE name = 'default'")
    ).one()
    assert recorded == (storage if facts["storage"] == PLACEHOLDER else facts["storage"])
    refs = conn.execute(
        sa.text("SELECT name, kind, commit_id FROM zl_refs WHERE repo_id = :r"), {"r": repo_id}
    ).all()
    assert {name: c for name, kind, c in refs if kind == "branch"} == facts["branches"]
    assert {name: c for name, kind, c in refs if kind == "tag"} == facts["tags"]
    commits = conn.execute(
        sa.text(
            "SELECT id, parent_id, merge_parent_id, message FROM zl_commits WHERE repo_id = :r"
        ),
        {"r": repo_id},
    ).all()
    assert {
        c.id: ([p for p in (c.parent_id, c.merge_parent_id) if p], c.message) for c in commits
    } == {c["id"]: (c["parents"], c["message"]) for c in facts["commits"]}
    session = facts["open_session"]
    status, branch = conn.execute(
        sa.text("SELECT status, branch FROM zl_sessions WHERE id = :s"), {"s": session["id"]}
    ).one()
    assert (status, branch) == ("open", session["branch"])
    if facts["idempotency"] is not None:
        key = facts["idempotency"]
        assert (
            conn.execute(
                sa.text("SELECT commit_id FROM zl_commit_keys WHERE branch = :b AND key = :k"),
                {"b": key["branch"], "k": key["key"]},
            ).scalar_one()
            == key["commit"]
        )


@pytest.mark.parametrize("version", VERSIONS)
def test_sqlite_fixture_is_a_catalog_of_its_version(version: int, tmp_path: Path) -> None:
    manifest = expected(version)
    assert manifest["schema_version"] == manifest["sqlite"]["schema_version"] == version
    lake = unpack_sqlite(version, tmp_path)
    engine = sa.create_engine(f"sqlite:///{lake / 'catalog.db'}")
    try:
        with engine.connect() as conn:
            check_catalog(conn, version, manifest["sqlite"], str(lake.resolve()))
    finally:
        engine.dispose()


@pytest.mark.postgres
@pytest.mark.parametrize("version", VERSIONS)
def test_postgres_fixture_restores_a_catalog_of_its_version(version: int, tmp_path: Path) -> None:
    _need_postgres()
    manifest = expected(version)
    assert manifest["postgres"]["schema_version"] == version
    with restored_postgres(version, tmp_path, PG_URL) as url:
        engine = sa.create_engine(url)
        try:
            with engine.connect() as conn:
                chunks = str((tmp_path / "pg" / "chunks").resolve())
                check_catalog(conn, version, manifest["postgres"], chunks)
        finally:
            engine.dispose()
    admin = sa.create_engine(PG_URL)
    try:
        with admin.connect() as conn:
            left = conn.execute(
                sa.text("SELECT 1 FROM pg_database WHERE datname = :d"),
                {"d": sa.make_url(url).database},
            ).first()
    finally:
        admin.dispose()
    assert left is None
