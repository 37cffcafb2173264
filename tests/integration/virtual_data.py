"""Real NetCDF4 files for the virtual-reference tests, and VirtualiZarr datasets of them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr


def make_netcdf(path: Path, day: int, *, steps: int = 2, seed: int = 0) -> xr.Dataset:
    """A small NetCDF4 (HDF5) file of ``steps`` time steps from ``day``, chunked and
    compressed as archives are; returns what it holds."""
    rng = np.random.default_rng(seed + day)
    ds = xr.Dataset(
        {"temp": (("time", "y", "x"), rng.random((steps, 4, 6), dtype="f4"))},
        coords={"time": np.arange(day, day + steps), "y": np.arange(4), "x": np.arange(6)},
        attrs={"title": "test archive"},
    )
    ds.temp.attrs["units"] = "K"
    encoding = {"temp": {"chunksizes": (1, 2, 6), "zlib": True}}
    ds.to_netcdf(path, engine="h5netcdf", encoding=encoding)
    return ds


def open_virtual(url: str, local: Path | None = None) -> Any:
    """VirtualiZarr's dataset of a local NetCDF file; with ``local``, parsed from that file
    and its references renamed to ``url`` (the same bytes uploaded there)."""
    from obspec_utils.registry import ObjectStoreRegistry
    from obstore.store import LocalStore
    from virtualizarr import open_virtual_dataset
    from virtualizarr.parsers import HDFParser

    source = f"file://{local}" if local is not None else url
    registry = ObjectStoreRegistry({"file://": LocalStore()})
    vds = open_virtual_dataset(
        source, registry=registry, parser=HDFParser(), loadable_variables=["time", "y", "x"]
    )
    if local is not None:
        vds = vds.vz.rename_paths(lambda _old: url)
    return vds
