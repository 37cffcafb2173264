"""Catalog transactions on the driver's connection (zarrlake.catalog.driver): a prepared
statement returns what SQLAlchemy would, both paths share one transaction, and errors roll
the whole of it back; on SQLite and on PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa

from tests.conftest import unique
from zarrlake.catalog import catalog_for
from zarrlake.catalog.db import CatalogDb
from zarrlake.catalog.driver import Prepared
from zarrlake.errors import AlreadyExistsError, CatalogError


@pytest.fixture
def scratch(catalog_url: str) -> Iterator[tuple[CatalogDb, sa.Table]]:
    """A catalog and a table of this test's own (dropped at the end)."""
    db = CatalogDb(catalog_url, create=True)
    table = sa.Table(
        unique("zl_test_"),
        sa.MetaData(),
        sa.Column("k", sa.String(32), primary_key=True),
        sa.Column("n", sa.Integer, nullable=False),
        sa.Column("f", sa.Float),
        sa.Column("b", sa.Boolean),
        sa.Column("data", sa.LargeBinary),
    )
    with db.tx(write=True) as conn:
        table.create(conn.sa)
    try:
        yield db, table
    finally:
        with db.tx(write=True) as conn:
            table.drop(conn.sa)
        db.engine.dispose()


ROWS = [
    {"k": "a", "n": 1, "f": 0.5, "b": True, "data": b"\x00\x01"},
    {"k": "b", "n": 2, "f": None, "b": False, "data": None},
    {"k": "c", "n": 3, "f": 1e-300, "b": None, "data": bytes(range(256))},
]


def _keys(db: CatalogDb, table: sa.Table) -> list[str]:
    with db.read() as conn:
        return [r.k for r in conn.sa.execute(sa.select(table.c.k).order_by(table.c.k))]


def test_prepared_rows_are_sqlalchemys_rows(scratch: tuple[CatalogDb, sa.Table]) -> None:
    db, table = scratch
    insert = Prepared(sa.insert(table))
    select = sa.select(table).where(table.c.n >= sa.bindparam("low")).order_by(table.c.k)
    with db.tx(write=True) as conn:
        conn.execute(insert, ROWS)
    with db.read() as conn:
        fast = conn.execute(Prepared(select), {"low": 1}).all()
    with db.read() as conn:
        slow = conn.sa.execute(select, {"low": 1}).all()
    assert [tuple(r) for r in fast] == [tuple(r) for r in slow]
    assert [[type(v) for v in r] for r in fast] == [[type(v) for v in r] for r in slow]
    assert [(r.k, r.b, r.data) for r in fast] == [(d["k"], d["b"], d["data"]) for d in ROWS]
    assert type(fast[0].b) is bool
    assert type(fast[0].data) is bytes


def test_an_insert_sets_the_columns_its_values_name(scratch: tuple[CatalogDb, sa.Table]) -> None:
    """One prepared INSERT, given different columns each time, sets those (the others take
    their defaults), as SQLAlchemy's would."""
    db, table = scratch
    insert = Prepared(sa.insert(table))
    with db.tx(write=True) as conn:
        conn.execute(insert, {"k": "x", "n": 1})
        conn.execute(insert, {"k": "y", "n": 2, "f": 2.5})
    with db.read() as conn:
        got = conn.execute(Prepared(sa.select(table.c.k, table.c.f).order_by(table.c.k))).all()
    assert [tuple(r) for r in got] == [("x", None), ("y", 2.5)]


def test_both_paths_share_one_transaction(scratch: tuple[CatalogDb, sa.Table]) -> None:
    db, table = scratch
    insert = Prepared(sa.insert(table))
    seen = []

    def fail() -> None:
        with db.tx(write=True) as conn:
            conn.execute(insert, ROWS[0])
            conn.execute(sa.insert(table), ROWS[1])  # through SQLAlchemy
            count = Prepared(sa.select(sa.func.count()).select_from(table))
            seen.append(conn.execute(count).scalar())
            raise RuntimeError("the caller fails")

    with pytest.raises(RuntimeError):
        fail()
    assert seen == [2]
    assert _keys(db, table) == []
    with db.tx(write=True) as conn:
        conn.execute(sa.insert(table), ROWS[0])
        conn.execute(insert, ROWS[1])
    assert _keys(db, table) == ["a", "b"]


def test_a_failing_statement_rolls_back_and_is_ours(scratch: tuple[CatalogDb, sa.Table]) -> None:
    db, table = scratch
    insert = Prepared(sa.insert(table))
    with db.tx(write=True) as conn:
        conn.execute(insert, ROWS[0])

    def two(second: dict[str, Any]) -> None:
        with db.tx(write=True) as conn:
            conn.execute(insert, ROWS[1])
            conn.execute(insert, second)

    with pytest.raises(AlreadyExistsError):
        two({**ROWS[2], "k": "a"})  # the key exists
    assert _keys(db, table) == ["a"]
    with pytest.raises(CatalogError, match="failed"):
        two({"k": "d", "n": None})  # n may not be NULL
    assert _keys(db, table) == ["a"]
    with db.tx(write=True) as conn:  # the pooled connection is usable after both
        conn.execute(insert, ROWS[1])
    assert _keys(db, table) == ["a", "b"]


def test_watch_sees_the_statements_of_both_paths(scratch: tuple[CatalogDb, sa.Table]) -> None:
    db, table = scratch
    sent: list[tuple[str, Any]] = []
    with db.watch(lambda sql, params: sent.append((sql, params))), db.tx(write=True) as conn:
        conn.execute(Prepared(sa.insert(table)), ROWS[0])
        conn.execute(sa.update(table).values(n=5))
    with db.tx(write=True) as conn:
        conn.execute(sa.delete(table))
    kinds = [sql.split()[0] for sql, _ in sent if sql.split()[0] in ("INSERT", "UPDATE")]
    assert kinds == ["INSERT", "UPDATE"]
    assert not any(sql.startswith("DELETE") for sql, _ in sent)  # after the watch


def test_a_read_stopped_early_keeps_no_snapshot(
    scratch: tuple[CatalogDb, sa.Table], catalog_url: str
) -> None:
    """A read abandoned before its last row leaves the pooled connection free of it: the
    next read on it sees what another connection committed since (SQLite would otherwise
    keep the old read open on that connection)."""
    db, table = scratch
    rows = [{"k": f"{i:04d}", "n": i} for i in range(1200)]
    with db.tx(write=True) as conn:
        conn.execute(sa.insert(table), rows)
    select = Prepared(sa.select(table.c.k, table.c.n).order_by(table.c.k))
    with db.read() as conn:
        first = next(iter(conn.execute(select)))
    assert first.k == "0000"
    other = CatalogDb(catalog_url)
    try:
        with other.tx(write=True) as conn:
            conn.execute(sa.update(table).where(table.c.k == "1199").values(n=-1))
    finally:
        other.engine.dispose()
    with db.read() as conn:
        last = conn.execute(Prepared(sa.select(table.c.n).where(table.c.k == "1199"))).scalar()
    assert last == -1


def test_a_statement_with_a_list_goes_through_sqlalchemy(
    scratch: tuple[CatalogDb, sa.Table],
) -> None:
    """``IN (...)`` of a list is expanded at execution: such a statement is not compiled for
    the driver, and still runs, through SQLAlchemy."""
    db, table = scratch
    select = Prepared(sa.select(table.c.k).where(table.c.k.in_(["a", "c"])).order_by(table.c.k))
    assert select.form(db.engine.dialect) is None
    with db.tx(write=True) as conn:
        conn.execute(sa.insert(table), ROWS)
    with db.read() as conn:
        assert [r.k for r in conn.execute(select)] == ["a", "c"]


@pytest.mark.postgres
def test_a_session_opens_without_the_wals_flush_and_nothing_after_it_does(
    make_repo: Any, catalog_url: str
) -> None:
    """Opening a session on PostgreSQL skips the wait for the WAL's flush for its own
    transaction only: the session is committed (another connection sees it), and the pooled
    connection it used runs the next transactions (staging, the commit) with the server's
    setting."""
    if not catalog_url.startswith("postgresql"):
        pytest.skip("PostgreSQL's synchronous_commit")
    repo = make_repo()
    db = CatalogDb(catalog_url)
    settings: list[str] = []
    try:
        with db.read() as conn:
            server = conn.sa.execute(sa.text("SHOW synchronous_commit")).scalar()
        s = repo.writable_session("main")
        other = CatalogDb(catalog_url)
        try:
            with other.read() as conn:
                seen = conn.sa.execute(
                    sa.text("SELECT status FROM zl_sessions WHERE id = :s"), {"s": s.id}
                ).scalar()
        finally:
            other.engine.dispose()
        assert seen == "open"
        cat = catalog_for(repo.config.catalog)
        for _ in range(3):  # the pool hands out the connection returned last
            with cat.read() as conn:
                settings.append(conn.sa.execute(sa.text("SHOW synchronous_commit")).scalar())
    finally:
        db.engine.dispose()
    assert server == "on"
    assert settings == ["on", "on", "on"]
