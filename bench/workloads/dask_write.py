"""Workload 9: a cooperative dask write from 2 worker processes into one session, against
plain Zarr's ``to_zarr`` from the same cluster.

One float32 variable, 1 MiB dask chunks (= Zarr chunks), uncompressed, into a fresh
directory (plain Zarr) or a fresh repo (zarrlake: ``ds.lake.commit``, whose tasks join the
session in the workers and whose driver commits once). Reported: seconds and throughput.
"""

from __future__ import annotations

from bench.common import (
    LAKE,
    ZARR,
    MiB,
    Repeats,
    Result,
    Settings,
    clock,
    create_handle,
    remove,
)

NAME = "dask"
TITLE = "9. cooperative dask write, 2 worker processes"
LIMIT = 1.2


def run(settings: Settings) -> list[Result]:
    import dask.array as da
    import xarray as xr
    from dask.distributed import Client, LocalCluster

    import zarrlake.xarray  # noqa: F401 - registers ds.lake

    nbytes = (128 if settings.quick else 1024) * MiB
    chunk = MiB // 4
    n = nbytes // 4
    data = da.random.random(n, chunks=chunk).astype("f4")
    ds = xr.Dataset({"v": ("x", data)})
    enc = {"v": {"chunks": (chunk,), "compressors": None}}
    repeats = Repeats(3, 3, 0.0) if settings.quick else Repeats(3, 5, 300.0)
    times: dict[str, list[float]] = {ZARR: [], LAKE: []}
    with (
        LocalCluster(n_workers=2, threads_per_worker=2, processes=True) as cluster,
        Client(cluster),
    ):
        for _ in repeats:
            for system in (ZARR, LAKE):
                handle = create_handle(settings, system, "dask")
                t0 = clock()
                if system == ZARR:
                    ds.to_zarr(str(handle.path), mode="w", encoding=enc, consolidated=False)
                else:
                    ds.lake.commit("dask write", repo=handle.repo, encoding=enc)  # type: ignore[attr-defined]
                times[system].append(clock() - t0)
                remove(handle)
    case = f"{nbytes // MiB} MiB, 1 MiB chunks, uncompressed"
    results = [Result(TITLE, case, "write+commit", s, t) for s, t in times.items()]
    lake, plain = results[1], results[0]
    lake.ratio_zarr = lake.median / plain.median
    lake.target = f"/zarr<={LIMIT:g}"
    lake.passed = lake.ratio_zarr <= LIMIT
    return results
