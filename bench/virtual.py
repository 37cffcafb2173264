"""Virtual references against Icechunk + VirtualiZarr, on the same NetCDF files, and the import
of a Zarr store by reference.

Run by hand (not part of the test suite; needs the ``bench`` group for Icechunk)::

    .venv-bench/bin/python bench/virtual.py [--files 1000] [--chunks 100] [--store-chunks 100000]

1. ``--files`` NetCDF4 files of ``--chunks`` time steps each (one chunk per step), parsed once
   by VirtualiZarr; the same virtual dataset is then committed as references by
   ``vds.lake.commit`` and by ``vds.vz.to_icechunk`` + ``session.commit`` (the parsing, common
   to both, is not timed), each ``--repeat`` times into a fresh repo, the order alternating
   (the median is shown);
2. a point time series read through every file (one chunk of each step) with xarray, from
   each system;
3. cold open: a fresh process opens the repository and the virtual dataset (lazily), timed
   inside that process; modules load from their compiled bytecode, as in an installed
   environment (one untimed run of each system first writes it, whatever
   ``PYTHONDONTWRITEBYTECODE`` says), so the figure is not the interpreter compiling sources;
4. ``import_zarr`` by reference of a Zarr v3 store of ``--store-chunks`` chunks, and of one
   a tenth of that size (and ten times, with ``--large-store``), each in a fresh process:
   time, the process's peak RSS, and how much the import added to it (beyond an untimed
   import of ten chunks first, which loads the modules).
"""

from __future__ import annotations

import os

os.environ.setdefault("ICECHUNK_LOG", "error")

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr
import zarr

import zarrlake

NY, NX = 8, 16


def timed(fn: Callable[[], Any], repeat: int = 1) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def make_files(folder: Path, files: int, chunks: int) -> list[Path]:
    folder.mkdir(parents=True)
    paths = []
    for f in range(files):
        t0 = f * chunks
        ds = xr.Dataset(
            {"temp": (("time", "y", "x"), np.full((chunks, NY, NX), 0, "f4") + t0 + np.arange(
                chunks, dtype="f4")[:, None, None])},
            coords={"time": np.arange(t0, t0 + chunks), "y": np.arange(NY), "x": np.arange(NX)},
        )  # fmt: skip
        path = folder / f"f{f:05d}.nc"
        ds.to_netcdf(path, engine="h5netcdf", encoding={"temp": {"chunksizes": (1, NY, NX)}})
        paths.append(path)
    return paths


def virtual_dataset(paths: list[Path]) -> xr.Dataset:
    from obspec_utils.registry import ObjectStoreRegistry
    from obstore.store import LocalStore
    from virtualizarr import open_virtual_dataset
    from virtualizarr.parsers import HDFParser

    registry = ObjectStoreRegistry({"file://": LocalStore()})
    vdss = [
        open_virtual_dataset(f"file://{p}", registry=registry, parser=HDFParser(),
                             loadable_variables=["time", "y", "x"])
        for p in paths
    ]  # fmt: skip
    return xr.concat(vdss, dim="time", coords="minimal", compat="override")


def icechunk_repo(path: Path, folder: Path) -> Any:
    import icechunk

    prefix = f"file://{folder}/"
    config = icechunk.RepositoryConfig.default()
    config.set_virtual_chunk_container(
        icechunk.VirtualChunkContainer(prefix, icechunk.local_filesystem_store(str(folder)))
    )
    return icechunk.Repository.open_or_create(
        icechunk.local_filesystem_storage(str(path)), config=config,
        authorize_virtual_chunk_access={prefix: icechunk.credentials.LocalFileSystemAccess},
    )  # fmt: skip


COLD_LAKE = """
import time, sys
t = time.perf_counter()
import zarrlake
repo = zarrlake.Repo.open(sys.argv[1])
ds = zarrlake.open_dataset(repo, "main", group="obs")
print(time.perf_counter() - t)
"""

COLD_ICECHUNK = """
import os, time, sys
os.environ.setdefault("ICECHUNK_LOG", "error")
t = time.perf_counter()
import icechunk, xarray as xr
prefix = f"file://{sys.argv[2]}/"
access = {prefix: icechunk.credentials.LocalFileSystemAccess}
repo = icechunk.Repository.open(icechunk.local_filesystem_storage(sys.argv[1]),
                                authorize_virtual_chunk_access=access)
ds = xr.open_zarr(repo.readonly_session("main").store, group="obs", consolidated=False,
                  zarr_format=3)
print(time.perf_counter() - t)
"""


def cold(code: str, *args: str, repeat: int = 3) -> float:
    """Median seconds ``code`` reports in fresh processes, after one untimed run that leaves
    every module it loads compiled (``__pycache__``), as installers leave them."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    out = []
    for _ in range(repeat + 1):
        p = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                           check=True, env=env)  # fmt: skip
        out.append(float(p.stdout.strip().splitlines()[-1]))
    return statistics.median(out[1:])


def zarr_store(path: Path, chunks: int) -> None:
    arr = zarr.create_array(str(path), shape=(chunks, 4), chunks=(1, 4), dtype="f4",
                            compressors=None, fill_value=-1)  # fmt: skip
    arr[:] = np.arange(chunks * 4, dtype="f4").reshape(chunks, 4)


IMPORT = """
import sys, time
import zarrlake

def peak():  # KiB; VmHWM, not ru_maxrss, which keeps the forking parent's peak
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM"))

# a first import of a store of ten chunks loads what an import loads, so that what the
# import below adds is its own data (zarrlake loads its modules on first use)
zarrlake.import_zarr(zarrlake.Repo.open(sys.argv[3]), sys.argv[4], progress=False)
repo = zarrlake.Repo.open(sys.argv[1])
before = peak()
t = time.perf_counter()
zarrlake.import_zarr(repo, sys.argv[2], progress=False)
seconds = time.perf_counter() - t
print(seconds, before, peak())
"""


def import_run(scratch: Path, chunks: int) -> tuple[float, float, float]:
    """Seconds of an import by reference in a fresh process, that process's peak RSS
    (MiB), and how much of it the import added to what the process had reached after
    opening the lake and importing a store of ten chunks into another."""
    store = scratch / f"store-{chunks}.zarr"
    zarr_store(store, chunks)
    lake = scratch / f"import-{chunks}"
    zarrlake.Repo.create(lake, virtual_sources={str(store): {}})
    tiny, tiny_lake = scratch / f"store-10-{chunks}.zarr", scratch / f"import-10-{chunks}"
    zarr_store(tiny, 10)
    zarrlake.Repo.create(tiny_lake, virtual_sources={str(tiny): {}})
    p = subprocess.run([sys.executable, "-c", IMPORT, str(lake), str(store), str(tiny_lake),
                        str(tiny)], capture_output=True, text=True, check=True)  # fmt: skip
    seconds, before, peak = (float(x) for x in p.stdout.split())
    return seconds, peak / 1024, (peak - before) / 1024


def imports(scratch: Path, sizes: list[int]) -> None:
    for n in sizes:
        seconds, peak, added = import_run(scratch, n)
        print(f"import_zarr by ref  {n:7d} chunks {seconds:8.3f} s   "
              f"peak RSS {peak:7.1f} MiB (+{added:.1f} MiB for the import)")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--chunks", type=int, default=100, help="time steps (chunks) per file")
    ap.add_argument("--store-chunks", type=int, default=100_000)
    ap.add_argument("--keep", type=Path, default=None, help="keep the data in this directory")
    ap.add_argument("--large-store", action="store_true", help="also import 10x --store-chunks")
    ap.add_argument("--imports-only", action="store_true", help="only the import_zarr part")
    ap.add_argument("--no-reads", action="store_true", help="leave out the reads (2. and 3.)")
    ap.add_argument("--repeat", type=int, default=3, help="commits of each system (median)")
    args = ap.parse_args()
    scratch = args.keep or Path(tempfile.mkdtemp(prefix="zarrlake-bench-virtual-"))
    try:
        sizes = [args.store_chunks // 10, args.store_chunks] + (
            [args.store_chunks * 10] if args.large_store else []
        )
        if args.imports_only:
            imports(scratch, sizes)
            return
        folder = scratch / "archive"
        print(f"{args.files} files x {args.chunks} chunks = {args.files * args.chunks} refs")
        paths = make_files(folder, args.files, args.chunks)
        vds = virtual_dataset(paths)

        # each repeat commits into a fresh repo of each system, the order alternating, so
        # that neither pays the process's first commit (warm-up) in every repeat
        lakes: list[float] = []
        ices: list[float] = []
        for i in range(args.repeat):
            for system in ("lake", "ice") if i % 2 == 0 else ("ice", "lake"):
                if system == "lake":
                    shutil.rmtree(scratch / "lake", ignore_errors=True)
                    lake = zarrlake.Repo.create(scratch / "lake", virtual_sources={str(folder): {}})
                    t = time.perf_counter()
                    vds.lake.commit("references", repo=lake, group="obs")
                    lakes.append(time.perf_counter() - t)
                else:
                    shutil.rmtree(scratch / "ice", ignore_errors=True)
                    ic = icechunk_repo(scratch / "ice", folder)
                    t = time.perf_counter()
                    s = ic.writable_session("main")
                    vds.vz.to_icechunk(s.store, group="obs")
                    s.commit("references")
                    ices.append(time.perf_counter() - t)
        t_lake, t_ic = statistics.median(lakes), statistics.median(ices)
        print(f"commit references   zarrlake {t_lake:8.3f} s   icechunk {t_ic:8.3f} s   "
              f"ratio {t_lake / t_ic:5.2f}x   (median of {args.repeat}; zarrlake "
              f"{', '.join(f'{x:.3f}' for x in lakes)}; icechunk "
              f"{', '.join(f'{x:.3f}' for x in ices)})")  # fmt: skip

        if args.no_reads:  # one chunk checked instead of the reads
            ds = zarrlake.open_dataset(lake, "main", group="obs")
            assert float(ds.temp[7, 3, 5]) == 7.0
            imports(scratch, sizes)
            return

        def lake_read() -> np.ndarray:
            ds = zarrlake.open_dataset(lake, "main", group="obs")
            return ds.temp[:, 3, 5].values

        def ic_read() -> np.ndarray:
            ds = xr.open_zarr(ic.readonly_session("main").store, group="obs",
                              consolidated=False, zarr_format=3)  # fmt: skip
            return ds.temp[:, 3, 5].values

        r_lake, a = timed(lake_read, repeat=3)
        r_ic, b = timed(ic_read, repeat=3)
        np.testing.assert_array_equal(a, b)
        assert a[7] == 7.0
        print(f"point time series   zarrlake {r_lake:8.3f} s   icechunk {r_ic:8.3f} s   "
              f"ratio {r_lake / r_ic:5.2f}x")  # fmt: skip

        c_lake = cold(COLD_LAKE, str(scratch / "lake"))
        c_ic = cold(COLD_ICECHUNK, str(scratch / "ice"), str(folder))
        print(f"cold open           zarrlake {c_lake:8.3f} s   icechunk {c_ic:8.3f} s   "
              f"ratio {c_lake / c_ic:5.2f}x")  # fmt: skip

        imports(scratch, sizes)
    finally:
        if args.keep is None:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
