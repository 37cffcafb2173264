"""A catalog the connection may only read refuses every write clearly and changes nothing."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
import zarr

import zarrlake
from tests.conftest import PG_URL, _need_postgres
from zarrlake import checks

WRITES: list[Callable[[zarrlake.Repo], object]] = [
    lambda r: r.writable_session(),
    lambda r: r.create_branch("dev2"),
    lambda r: r.create_tag("v9"),
    lambda r: r.reset_branch("main", "main"),
    lambda r: r.delete_branch("main"),
    lambda r: r.revert(r.resolve("main")),
    lambda r: r.add_check("no-nan", checks.no_nan()),
    lambda r: r.remove_check("gate"),
    lambda r: r.protect_branch("main"),
    lambda r: r.open_pull_request("main", "dev", title="t", author="a"),
    lambda r: r.pull_request(1).approve(by="reviewer"),
    lambda r: r.pull_request(1).comment("hi", author="reviewer"),
    lambda r: r.pull_request(1).close(by="reviewer"),
]


def _lake(repo: zarrlake.Repo) -> str:
    s = repo.writable_session()
    zarr.open_group(s.store, mode="w").create_array("a", shape=(4,), chunks=(2,), dtype="i8")
    head = s.commit("data")
    repo.create_branch("dev")
    repo.add_check("gate", checks.max_chunks(100), branches=("dev",))
    repo.open_pull_request("main", "dev", title="review me", author="author")
    return head


def _check_refused(reader: zarrlake.Repo, head: str) -> None:
    assert reader.resolve("main") == head  # reading works
    assert reader.log()[0].id == head
    assert [c.name for c in reader.checks()] == ["gate"]
    assert [p.title for p in reader.pull_requests()] == ["review me"]
    assert [r.name for r in reader.pull_request(1).checks()] == ["gate"]
    assert [e.commit.id for e in reader.changes(branch="main")][-1] == head
    for write in WRITES:
        with pytest.raises(zarrlake.PermissionDeniedError, match="refuses writes"):
            write(reader)
    assert reader.resolve("main") == head
    assert list(reader.branches()) == ["dev", "main"]
    assert [c.name for c in reader.checks()] == ["gate"]
    assert reader.protected_branches() == []
    assert [(p.state, p.events()) for p in reader.pull_requests()] == [("open", [])]


def test_a_read_only_sqlite_catalog(tmp_path: Path) -> None:
    repo = zarrlake.Repo.create(tmp_path / "lake")
    head = _lake(repo)
    url = f"sqlite:///file:{tmp_path / 'lake' / 'catalog.db'}?mode=ro&uri=true"
    reader = zarrlake.Repo.open(catalog=url)
    with pytest.raises(zarrlake.PermissionDeniedError, match="refuses writes"):
        reader.writable_session()
    _check_refused(reader, head)


@pytest.fixture
def reader_role() -> Iterator[str]:
    _need_postgres()
    role = f"zl_reader_{uuid.uuid4().hex[:8]}"
    admin = sa.create_engine(PG_URL)
    with admin.begin() as conn:
        conn.execute(sa.text(f"CREATE ROLE {role} LOGIN"))
        conn.execute(sa.text(f"GRANT USAGE ON SCHEMA public TO {role}"))
        conn.execute(sa.text(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}"))
    try:
        yield role
    finally:
        with admin.begin() as conn:
            conn.execute(sa.text(f"REVOKE ALL ON ALL TABLES IN SCHEMA public FROM {role}"))
            conn.execute(sa.text(f"REVOKE ALL ON SCHEMA public FROM {role}"))
            conn.execute(sa.text(f"DROP ROLE {role}"))
        admin.dispose()


@pytest.mark.postgres
def test_a_postgres_role_without_write_rights(reader_role: str, tmp_path: Path) -> None:
    name = f"acc-{uuid.uuid4().hex[:10]}"
    repo = zarrlake.Repo.create(catalog=PG_URL, storage=str(tmp_path / "o"), name=name)
    head = _lake(repo)
    admin = sa.create_engine(PG_URL)
    with admin.begin() as conn:  # the tables exist now, whichever test made them first
        conn.execute(sa.text(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {reader_role}"))
        # webhook secrets are for the roles that write (docs/checks.md)
        conn.execute(sa.text(f"REVOKE SELECT ON zl_webhooks FROM {reader_role}"))
    admin.dispose()
    url = sa.make_url(PG_URL).set(username=reader_role).render_as_string(hide_password=False)
    reader = zarrlake.Repo.open(catalog=url, name=name)
    with pytest.raises(zarrlake.PermissionDeniedError, match="refuses writes"):
        reader.create_branch("dev2")
    _check_refused(reader, head)
