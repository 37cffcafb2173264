"""Workload 2: xarray round trip of a dask-chunked Dataset.

``to_zarr`` (and commit) of three float32 variables on (time, lat, lon), then ``open_zarr`` and
``.mean("time").compute()``. Plain Zarr and zarrlake use ``ds.to_zarr(store, zarr_format=3,
consolidated=False)``; Icechunk uses its own ``icechunk.xarray.to_icechunk`` (its documented
way to write dask-backed data; same dask graph). Dask's default threaded scheduler everywhere.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from bench.common import (
    ICECHUNK,
    MiB,
    Result,
    Settings,
    add_ratios,
    clock,
    create_handle,
    field_data,
    na,
    remove,
    systems_for,
)

NAME = "xarray"
TITLE = "2. xarray: to_zarr of a 3-variable Dataset, open_zarr + mean('time')"

VARIABLES = ("tas", "pr", "hurs")


def shape(settings: Settings) -> tuple[tuple[int, int, int], int]:
    """(time, lat, lon) and the dask chunk length along time (lat/lon whole per chunk)."""
    return ((48, 180, 360), 8) if settings.quick else ((360, 180, 360), 30)


def make_dataset(settings: Settings):  # type: ignore[no-untyped-def]
    import xarray as xr

    (nt, ny, nx), tchunk = shape(settings)
    coords = {
        "time": pd.date_range("2000-01-01", periods=nt, freq="D"),
        "lat": np.linspace(-89.5, 89.5, ny),
        "lon": np.linspace(-179.5, 179.5, nx),
    }
    variables = {
        name: (("time", "lat", "lon"), field_data(nt * ny * nx, seed=i).reshape(nt, ny, nx))
        for i, name in enumerate(VARIABLES)
    }
    return xr.Dataset(variables, coords=coords).chunk({"time": tchunk, "lat": ny, "lon": nx})


def run(settings: Settings) -> list[Result]:
    try:
        import dask  # noqa: F401
        import xarray as xr
    except ImportError as exc:
        return [na(TITLE, "-", "-", "-", f"skipped: {exc.name} is not installed")]
    import icechunk.xarray

    ds = make_dataset(settings)
    expected = ds.mean("time").compute()
    repeats = 3
    (nt, ny, nx), tchunk = shape(settings)
    mib = len(VARIABLES) * nt * ny * nx * 4 / MiB
    nchunks = len(VARIABLES) * (nt // tchunk)
    case = f"{nt}x{ny}x{nx} x3 vars, {mib:.0f} MiB, {nchunks} dask chunks"
    systems = systems_for(settings, postgres=False)
    writes: dict[str, list[float]] = {s: [] for s in systems}
    reads: dict[str, list[float]] = {s: [] for s in systems}
    for _ in range(repeats):
        for system in systems:
            handle = create_handle(settings, system, "w2")
            t0 = clock()
            txn = handle.writable()
            if system == ICECHUNK:
                icechunk.xarray.to_icechunk(ds, txn.session, mode="w")
            else:
                ds.to_zarr(txn.store, zarr_format=3, consolidated=False, mode="w")
            version = txn.commit("write dataset")
            writes[system].append(clock() - t0)

            reader = handle.fresh()
            t0 = clock()
            opened = xr.open_zarr(reader.readonly_store(version), consolidated=False)
            mean = opened.mean("time").compute()
            reads[system].append(clock() - t0)
            xr.testing.assert_allclose(mean, expected)
            remove(handle)
    results: list[Result] = []
    for system in systems:
        results.append(Result(TITLE, case, "to_zarr+commit", system, writes[system]))
        results.append(Result(TITLE, case, "open+mean", system, reads[system]))
    add_ratios(results)
    return results
