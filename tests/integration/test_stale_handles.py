"""Per-process caches never serve a repo that is gone or was replaced, and a handle held
across a replacement refuses to write instead of reporting success into a dead catalog."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import sqlalchemy as sa
import zarr

import zarrlake
from tests.conftest import PG_URL, _need_postgres
from tests.integration._workers import Child


def _write(repo: zarrlake.Repo, value: int) -> str:
    s = repo.writable_session()
    g = zarr.open_group(s.store, mode="a")
    if "a" not in g:
        g.create_array("a", shape=(4,), chunks=(4,), dtype="i8", fill_value=0)
    zarr.open_array(s.store, path="a", mode="r+")[:] = value
    return s.commit(f"value {value}")


def _value(repo: zarrlake.Repo) -> int:
    arr = zarr.open_array(repo.readonly_session().store, path="a", mode="r")
    return int(np.asarray(arr[:])[0])


def test_create_delete_create_at_one_path_in_one_process(tmp_path: Path) -> None:
    path = tmp_path / "lake"
    first = zarrlake.Repo.create(path)
    _write(first, 1)
    shutil.rmtree(path)
    with pytest.raises(zarrlake.NotFoundError):
        zarrlake.Repo.open(path)
    second = zarrlake.Repo.create(path)
    assert [c.message for c in second.log()] == ["Repository initialized"]
    _write(second, 2)
    assert _value(zarrlake.Repo.open(path)) == 2


def test_open_or_create_after_the_lake_was_removed(tmp_path: Path) -> None:
    path = tmp_path / "lake"
    _write(zarrlake.Repo.open_or_create(path), 1)
    shutil.rmtree(path)
    again = zarrlake.Repo.open_or_create(path)
    assert len(again.log()) == 1


def test_a_handle_on_a_removed_lake_refuses_to_commit(tmp_path: Path) -> None:
    path = tmp_path / "lake"
    repo = zarrlake.Repo.create(path)
    _write(repo, 1)
    s = repo.writable_session()
    zarr.open_array(s.store, path="a", mode="r+")[:] = 5
    shutil.rmtree(path)
    with pytest.raises(zarrlake.CatalogError, match="removed or replaced"):
        s.commit("into a lake that is gone")
    assert not (path / "catalog.db").exists()  # nothing was recreated behind the user's back


def _replace(path: str) -> str:
    shutil.rmtree(path)
    repo = zarrlake.Repo.create(path)
    return _write(repo, 7)


def test_open_after_another_process_replaced_the_lake(tmp_path: Path) -> None:
    path = tmp_path / "lake"
    old = zarrlake.Repo.create(path)
    _write(old, 1)
    new_head = Child(_replace, str(path)).start().result()
    reopened = zarrlake.Repo.open(path)
    assert reopened.resolve("main") == new_head
    assert _value(reopened) == 7
    with pytest.raises(zarrlake.CatalogError, match="removed or replaced"):
        old.branches()  # the old handle says what happened, instead of reading a dead file


@pytest.fixture
def private_schema() -> Iterator[str]:
    """A catalog URL in a PostgreSQL schema of its own, which the test drops and recreates."""
    _need_postgres()
    schema = f"zl_stale_{uuid.uuid4().hex[:10]}"
    admin = sa.create_engine(PG_URL)
    with admin.begin() as conn:
        conn.execute(sa.text(f"CREATE SCHEMA {schema}"))
    try:
        yield schema
    finally:
        with admin.begin() as conn:
            conn.execute(sa.text(f"DROP SCHEMA IF EXISTS {schema} CASCADE"))
        admin.dispose()


@pytest.mark.postgres
def test_postgres_catalog_dropped_and_recreated(private_schema: str, tmp_path: Path) -> None:
    url = f"{PG_URL}?options=-csearch_path%3D{private_schema}"
    repo = zarrlake.Repo.create(catalog=url, storage=str(tmp_path / "o1"), name="lake")
    _write(repo, 1)
    s = repo.writable_session()
    zarr.open_array(s.store, path="a", mode="r+")[:] = 3
    s.flush()
    admin = sa.create_engine(PG_URL)
    with admin.begin() as conn:
        conn.execute(sa.text(f"DROP SCHEMA {private_schema} CASCADE"))
        conn.execute(sa.text(f"CREATE SCHEMA {private_schema}"))
    admin.dispose()
    fresh = zarrlake.Repo.create(catalog=url, storage=str(tmp_path / "o2"), name="lake")
    assert len(fresh.log()) == 1
    with pytest.raises(zarrlake.ZarrlakeError):
        s.commit("into the catalog that was dropped")
    assert len(zarrlake.Repo.open(catalog=url, name="lake").log()) == 1
