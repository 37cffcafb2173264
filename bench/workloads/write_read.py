"""Workload 1: write+commit, then full read, of one float32 array.

Cases: 1 MiB and 16 KiB chunks, each uncompressed and with Zarr's default compressor. Each
repeat writes into a new, empty repository; the systems take turns within a repeat so that
drift on a shared machine hits them alike. The read uses a fresh handle on the commit just
made, so no system reads from a cache its writer warmed (the OS page cache is warm for all).

The disk is flushed before each system writes (untimed), so that no system's flush writes
back another's data. Each write is timed twice: up to the commit's return (what each system
promises by then differs: zarrlake's committed chunks are on disk, plain Zarr's and Icechunk's
local writes are in the page cache), and up to a filesystem flush after it (``syncfs``), when
every system's data survives a power loss.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import zarr

from bench.common import (
    MiB,
    Repeats,
    Result,
    Settings,
    clock,
    create_handle,
    field_data,
    ratio_target,
    remove,
    systems_for,
)
from zarrlake.objects.flusher import syncfs

NAME = "write_read"
TITLE = "1. write+commit, then full read of one float32 array"

CHUNKS = (("1 MiB chunks", MiB), ("16 KiB chunks", 16 * 1024))
COMPRESSORS: tuple[tuple[str, Any], ...] = (("uncompressed", None), ("default compressor", "auto"))
DURABLE = "write+commit+flush"  # the same write, timed until the disk holds it
MEMORY_CASE = ("16 KiB chunks", "uncompressed")  # kept on disk for the memory workload


def size_bytes(settings: Settings) -> int:
    return (32 if settings.quick else 256) * MiB


def run(settings: Settings) -> list[Result]:
    nbytes = size_bytes(settings)
    repeats = Repeats(1, 3, 3.0) if settings.quick else Repeats(3, 5, 120.0)
    data = field_data(nbytes // 4)
    systems = systems_for(settings, postgres=False)
    results: list[Result] = []
    for chunk_label, chunk_bytes in CHUNKS:
        chunk = chunk_bytes // 4
        for comp_label, compressors in COMPRESSORS:
            case = f"{chunk_label} ({data.size // chunk:,}), {comp_label}"
            writes: dict[str, list[float]] = {s: [] for s in systems}
            durable: dict[str, list[float]] = {s: [] for s in systems}
            reads: dict[str, list[float]] = {s: [] for s in systems}
            keep = (chunk_label, comp_label) == MEMORY_CASE
            for rep in repeats:
                for system in systems:
                    handle = create_handle(settings, system, "w1")
                    os.sync()  # the systems before left dirty pages: written back now
                    t0 = clock()
                    txn = handle.writable()
                    arr = zarr.create_array(
                        txn.store, name="a", shape=data.shape, chunks=(chunk,), dtype="f4",
                        compressors=compressors, fill_value=0.0,
                    )  # fmt: skip
                    arr[:] = data
                    version = txn.commit("write")
                    writes[system].append(clock() - t0)
                    syncfs(str(handle.path))
                    durable[system].append(clock() - t0)

                    reader = handle.fresh()
                    t0 = clock()
                    store = reader.readonly_store(version)
                    out = zarr.open_array(store, path="a", mode="r")[:]
                    reads[system].append(clock() - t0)
                    if not np.array_equal(out, data):
                        raise AssertionError(f"{system}: data read back differs from data written")
                    del out
                    if keep and rep == 0:
                        settings.shared.setdefault("w1b", {})[system] = {
                            "spec": handle.spec(),
                            "version": version,
                            "nbytes": nbytes,
                            "path": str(handle.path),
                        }
                    else:
                        remove(handle)
            for system in systems:
                results.append(Result(TITLE, case, "write+commit", system, writes[system]))
                results.append(Result(TITLE, case, DURABLE, system, durable[system]))
                results.append(Result(TITLE, case, "full read", system, reads[system]))
    ratio_target([r for r in results if r.metric == "write+commit"], vs_zarr=1.1, vs_icechunk=1.0)
    ratio_target([r for r in results if r.metric == DURABLE], vs_zarr=1.0, vs_icechunk=1.0)
    ratio_target([r for r in results if r.metric == "full read"], vs_zarr=1.0, vs_icechunk=1.0)
    return results
