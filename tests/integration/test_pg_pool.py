"""A pooled PostgreSQL connection is checked before use only after sitting idle (not on every
transaction); one that the server dropped meanwhile is replaced without an error."""

from __future__ import annotations

import time

import psycopg
import pytest
import sqlalchemy as sa

from tests.conftest import PG_URL, _need_postgres
from zarrlake.catalog import Catalog


@pytest.mark.postgres
def test_idle_connection_dropped_by_the_server_is_replaced() -> None:
    _need_postgres()
    cat = Catalog(PG_URL, create=True)  # the first test of a run may find no tables yet
    try:
        with cat.read() as conn:
            pid = conn.execute(sa.text("SELECT pg_backend_pid()")).scalar_one()
        admin = sa.make_url(PG_URL).set(drivername="postgresql").render_as_string(False)
        with psycopg.connect(admin, autocommit=True) as other:
            other.execute("SELECT pg_terminate_backend(%s)", (pid,))
        time.sleep(1.2)  # idle past the ping threshold
        with cat.read() as conn:
            assert conn.execute(sa.text("SELECT pg_backend_pid()")).scalar_one() != pid
        assert cat.clock() > 0
    finally:
        cat.engine.dispose()
