"""A commit's new catalog nodes reach PostgreSQL as a binary array, and come back byte for
byte. (As a text array literal, every byte is escaped by the client and parsed again by the
server: a one-chunk commit's statement, carrying a 65 KB shard, took 3.1 ms that way and 1.1
ms in binary.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr
from psycopg import pq
from psycopg.adapt import PyFormat

import zarrlake
from tests.conftest import PG_URL, _need_postgres, unique
from zarrlake.catalog import catalog_for
from zarrlake.catalog.pg_arrays import BinaryList
from zarrlake.testing import LakeProbe


class _Capture:
    """The parameters of each publish statement, with the format the catalog's connections
    dump them in."""

    def __init__(self, adapters: Any) -> None:
        self.adapters = adapters
        self.formats: list[dict[str, pq.Format]] = []

    def __call__(self, statement: str, params: Any) -> None:
        if not statement.startswith("WITH zl_w0"):
            return
        adapters = self.adapters
        self.formats.append(
            {
                name: adapters.get_dumper(type(params[name]), PyFormat.AUTO).format
                for name in ("b_hashes", "b_datas")
            }
        )


@pytest.mark.postgres
def test_commit_sends_its_nodes_as_binary_arrays(tmp_path: Path) -> None:
    _need_postgres()
    repo = zarrlake.Repo.create(catalog=PG_URL, storage=str(tmp_path / "o"), name=unique())
    with LakeProbe(repo).sql() as conn:
        capture = _Capture(conn.connection.driver_connection.adapters)
    with catalog_for(repo.config.catalog).watch(capture):
        s = repo.writable_session("main")
        zarr.create_array(s.store, name="a", shape=(8,), chunks=(2,), dtype="i4")[:] = 7
        s.commit("nodes")
    assert capture.formats == [{"b_hashes": pq.Format.BINARY, "b_datas": pq.Format.BINARY}]


@pytest.mark.postgres
def test_other_lists_keep_psycopgs_text_format(tmp_path: Path) -> None:
    """The catalog's connections dump its own list class in binary, every other list as
    psycopg does by default (text: binary needs every element's type)."""
    _need_postgres()
    repo = zarrlake.Repo.create(catalog=PG_URL, storage=str(tmp_path / "o"), name=unique())
    with LakeProbe(repo).sql() as conn:
        adapters = conn.connection.driver_connection.adapters
        assert adapters.get_dumper(BinaryList, PyFormat.AUTO).format == pq.Format.BINARY
        assert adapters.get_dumper(list, PyFormat.AUTO).format == pq.Format.TEXT


@pytest.mark.postgres
def test_every_byte_value_survives_the_binary_array(tmp_path: Path) -> None:
    """Inline chunks (kept in the manifest shard) holding every byte value, NUL, quote and
    backslash included, read back unchanged in a fresh process's view of the catalog."""
    _need_postgres()
    name = unique()
    repo = zarrlake.Repo.create(catalog=PG_URL, storage=str(tmp_path / "o"), name=name)
    data = np.arange(256, dtype="u1")
    s = repo.writable_session("main")
    arr = zarr.create_array(
        s.store, name="b", shape=(256,), chunks=(256,), dtype="u1", compressors=None
    )
    arr[:] = data
    commit = s.commit("every byte")
    again = zarrlake.Repo.open(catalog=PG_URL, name=name)
    got = zarr.open_array(again.readonly_session(commit).store, path="b", mode="r")[:]
    np.testing.assert_array_equal(got, data)
