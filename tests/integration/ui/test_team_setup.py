"""The overview against the team setup: PostgreSQL catalog, chunks in S3 (moto server)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import zarr

import zarrlake
from tests.conftest import PG_URL, _need_postgres, unique
from tests.integration.ui.conftest import Server
from tests.integration.ui.pages import OverviewPage

pytestmark = [pytest.mark.browser, pytest.mark.postgres, pytest.mark.s3]


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A database of its own on the shared server: its catalog schema is this checkout's,
    whatever version other checkouts left in the shared ``test`` database."""
    _need_postgres()
    import psycopg

    db = unique("zl_ui").replace("-", "_")
    admin = PG_URL.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{db}"')
    try:
        yield PG_URL.rsplit("/", 1)[0] + f"/{db}"
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')


@pytest.fixture
def pg_s3_repo(pg_url: str, s3_options: dict[str, Any]) -> zarrlake.Repo:
    name = unique("ui")
    repo = zarrlake.Repo.create(
        catalog=pg_url, storage=f"s3://lake/{name}", name=name, storage_options=s3_options
    )
    s = repo.writable_session("main")
    zarr.open_group(s.store, mode="w").create_array("sst", shape=(8, 8), chunks=(4, 4), dtype="f4")
    s.commit("create sst")
    repo.create_branch("calibration", "main")
    repo.create_tag("v1", "main")
    return repo


@pytest.fixture
def server(pg_s3_repo: zarrlake.Repo, browser: Any) -> Iterator[Server]:
    srv = Server(pg_s3_repo)
    yield srv
    srv.stop()


def test_overview_on_postgres_and_s3(server: Server, pg_s3_repo: zarrlake.Repo, page: Any) -> None:
    p = OverviewPage(page, server.url).open()
    names = sorted(r.split()[0] for r in p.refs())
    assert names == ["calibration", "main", "v1"]
    assert "s3://lake/" in p.text(".zl-overview-header")
    p.screenshot("overview-postgres-s3")
