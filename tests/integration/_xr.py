"""Setups, sample data and the shared dask cluster for the xarray, dask and team-setup tests."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import zarrlake
import zarrlake.xarray  # registers ds.lake
from tests.conftest import PG_URL, _need_postgres, unique

if TYPE_CHECKING:
    from distributed import Client

# catalog-storage; every xarray round trip runs on each.
SETUPS = [
    pytest.param("sqlite-local", id="sqlite-local"),
    pytest.param("postgres-local", id="postgres-local", marks=pytest.mark.postgres),
    pytest.param("postgres-s3", id="postgres-s3", marks=[pytest.mark.postgres, pytest.mark.s3]),
    pytest.param("sqlite-s3", id="sqlite-s3", marks=pytest.mark.s3),
]


def make_lake(setup: str, request: pytest.FixtureRequest, tmp_path: Path) -> zarrlake.Repo:
    """A new repo on ``setup``: the embedded default, or a catalog URL plus object storage."""
    catalog, storage = setup.split("-")
    if setup == "sqlite-local":
        return zarrlake.Repo.create(tmp_path / "lake")
    name = unique("xr")
    if catalog == "postgres":
        _need_postgres()
        url = PG_URL
    else:
        url = f"sqlite:///{tmp_path / 'catalog.db'}"
    options: dict[str, Any] | None = None
    if storage == "s3":
        options = request.getfixturevalue("s3_options")
        location = f"s3://lake/{name}"
    else:
        location = str(tmp_path / "objects")
    return zarrlake.Repo.create(catalog=url, storage=location, name=name, storage_options=options)


def sample(n_time: int = 24) -> xr.Dataset:
    """Coordinates, attributes and several dtypes: float32 with NaNs, int16, bool,
    datetime64, strings, float64."""
    rng = np.random.default_rng(42)
    temp = rng.uniform(250, 300, (n_time, 6)).astype("f4")
    temp[3, 2] = temp[7, 0] = np.nan
    return xr.Dataset(
        {
            "temp": (("time", "x"), temp, {"units": "K", "long_name": "air temperature"}),
            "count": (("time",), np.arange(n_time, dtype="i2")),
            "valid": (("x",), np.array([True, False, True, True, False, True])),
            "observed": (("time",), pd.date_range("1999-12-31", periods=n_time, freq="D").values),
            "station": (("x",), np.array(["oslo", "bergen", "tromsø", "bodø", "ås", "vik"])),
            "depth": (("x",), np.array([0.5, np.nan, 2.0, 4.0, 8.0, 16.0])),
        },
        coords={
            "time": pd.date_range("2020-01-01", periods=n_time, freq="h"),
            "x": np.linspace(0.0, 7.5, 6),
            "region": ("x", np.array(["n", "w", "n", "n", "w", "s"])),
        },
        attrs={"title": "sample", "version": 3, "levels": [1.0, 2.5]},
    )


def ramp(n: int, width: int = 4, offset: float = 0.0) -> xr.Dataset:
    """A float64 Dataset whose values say where they are: v[t, x] = offset + t * width + x."""
    values = offset + np.arange(n * width, dtype="f8").reshape(n, width)
    return xr.Dataset({"v": (("t", "x"), values)}, coords={"t": np.arange(n)})


# -- one dask cluster for the whole test session ---------------------------------------------

_client: Client | None = None


def shared_client() -> Client:
    """A ``LocalCluster`` of two single-threaded worker processes, started once per session
    (startup costs seconds on a small machine) and shared by every module that needs it."""
    global _client
    if _client is None:
        from distributed import Client, LocalCluster

        cluster = LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        )
        _client = Client(cluster, set_as_default=False)
    _client.wait_for_workers(2, timeout=120)
    return _client


def close_shared_client() -> None:
    global _client
    if _client is not None:
        cluster = _client.cluster
        _client.close()
        if cluster is not None:
            cluster.close()
        _client = None


def not_in(pid: int) -> None:
    """Fail if called in process ``pid`` (the test process): the work must run on workers."""
    if os.getpid() == pid:
        raise AssertionError("this block was computed in the driver process")
