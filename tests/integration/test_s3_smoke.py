from __future__ import annotations

import numpy as np
import zarr

import zarrlake
from tests.conftest import unique


def test_repo_on_s3_roundtrip(catalog_url: str, s3_options: dict[str, object]) -> None:
    name = unique()
    repo = zarrlake.Repo.create(
        catalog=catalog_url, storage=f"s3://lake/{name}", name=name, storage_options=s3_options
    )
    s = repo.writable_session()
    arr = zarr.open_group(s.store, mode="w").create_array(
        "x", shape=(64,), chunks=(16,), dtype="i8"
    )
    arr[:] = np.arange(64)
    c = s.commit("on s3")
    again = zarrlake.Repo.open(catalog=catalog_url, name=name, storage_options=s3_options)
    got = zarr.open_group(again.readonly_session(commit=c).store, mode="r")["x"][:]
    np.testing.assert_array_equal(got, np.arange(64))
