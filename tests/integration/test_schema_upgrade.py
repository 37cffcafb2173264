"""Opening a version-1 catalog (before garbage collection's table) upgrades it in place."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
import sqlalchemy as sa
import zarr

import zarrlake
from tests.conftest import PG_URL, _need_postgres
from zarrlake.catalog import SCHEMA_VERSION, Catalog
from zarrlake.catalog.schema import info


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def private_catalog(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A catalog URL of our own: a SQLite file, or a private PostgreSQL schema (the shared
    test database's tables must not be downgraded under other tests)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'catalog.db'}"
        return
    _need_postgres()
    schema = f"zl_upgrade_{uuid.uuid4().hex[:10]}"
    admin = sa.create_engine(PG_URL)
    with admin.begin() as conn:
        conn.execute(sa.text(f"CREATE SCHEMA {schema}"))
    try:
        yield f"{PG_URL}?options=-csearch_path%3D{schema}"
    finally:
        with admin.begin() as conn:
            conn.execute(sa.text(f"DROP SCHEMA {schema} CASCADE"))
        admin.dispose()


def _downgrade_to_v1(url: str) -> None:
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(sa.text("DROP TABLE zl_gc_marks"))
        conn.execute(sa.text("DROP TABLE zl_commit_keys"))
        conn.execute(sa.text("ALTER TABLE zl_staged DROP COLUMN pack"))
        conn.execute(sa.text("ALTER TABLE zl_staged DROP COLUMN pack_offset"))
        conn.execute(sa.text("ALTER TABLE zl_staged DROP COLUMN crc"))
        conn.execute(sa.update(info).where(info.c.key == "schema_version").values(value="1"))
    engine.dispose()


@pytest.mark.usefixtures("packs_by_size")
def test_v1_catalog_is_upgraded_and_keeps_its_data(private_catalog: str, tmp_path: Path) -> None:
    assert SCHEMA_VERSION == 5
    repo = zarrlake.Repo.create(catalog=private_catalog, storage=str(tmp_path / "objects"))
    s = repo.writable_session()
    arr = zarr.open_group(s.store).create_array(
        "a", shape=(256,), chunks=(128,), dtype="i8", compressors=None
    )
    arr[:] = np.arange(256)
    commit = s.commit("v1 data")
    _downgrade_to_v1(private_catalog)

    upgraded = Catalog(private_catalog)  # a fresh connection sees version 1 and migrates
    with upgraded.engine.connect() as conn:
        assert sa.inspect(conn).has_table("zl_gc_marks")
        assert sa.inspect(conn).has_table("zl_commit_keys")
        columns = {c["name"] for c in sa.inspect(conn).get_columns("zl_staged")}
        assert {"pack", "pack_offset", "crc"} <= columns
        assert (
            conn.execute(sa.select(info.c.value).where(info.c.key == "schema_version")).scalar()
            == "5"
        )
    assert upgraded.migrate() == 5  # idempotent
    upgraded.engine.dispose()

    again = zarrlake.Repo.open(catalog=private_catalog, name=repo.name)
    np.testing.assert_array_equal(
        zarr.open_array(again.readonly_session(ref=commit).store, path="a")[:], np.arange(256)
    )
    stale = again.writable_session()
    zarr.open_array(stale.store, path="a", mode="r+")[:] = 1
    stale.flush()
    stale.abandon()
    assert again.gc(timedelta(0)).objects_deleted == 1  # the abandoned session's pack
    assert again.fsck(verify=True).ok
    keyed = again.writable_session()
    zarr.open_array(keyed.store, path="a", mode="r+")[:128] = 2
    first = keyed.commit("keyed", idempotency_key="k")  # the v3 table works after upgrade
    retry = again.writable_session()
    zarr.open_array(retry.store, path="a", mode="r+")[:128] = 2
    assert retry.commit("keyed", idempotency_key="k") == first


def test_postgresql_compresses_catalog_nodes_with_lz4(private_catalog: str, tmp_path: Path) -> None:
    if not private_catalog.startswith("postgresql"):
        pytest.skip("a PostgreSQL column setting")
    zarrlake.Repo.create(catalog=private_catalog, storage=str(tmp_path / "objects"))
    engine = sa.create_engine(private_catalog)
    with engine.connect() as conn:
        method = conn.execute(
            sa.text(
                "SELECT attcompression FROM pg_attribute "
                "WHERE attrelid = 'zl_blobs'::regclass AND attname = 'data'"
            )
        ).scalar()
    engine.dispose()
    assert method == "l"  # lz4: pglz cost about 3.5 ms of a one-chunk commit
