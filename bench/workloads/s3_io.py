"""Workload 8: write+commit, then full read, over S3: a moto server on loopback (its own
process, so its work does not share the benchmark's interpreter).

Cases: 256 KiB and 16 KiB chunks of one 8 MiB float32 array, uncompressed. Systems: plain
Zarr through ``FsspecStore`` (s3fs), Icechunk's S3 storage, zarrlake with a SQLite catalog
and its objects in the same bucket. Each repeat writes under a fresh prefix; the read opens
a fresh handle on the commit just made.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import zarr
import zarr.storage

from bench.common import (
    ICECHUNK,
    LAKE,
    ZARR,
    MiB,
    Repeats,
    Result,
    Settings,
    clock,
    field_data,
    ratio_target,
)

NAME = "s3"
TITLE = "8. write+commit, then full read, over S3 (moto server on loopback)"
CHUNKS = (("256 KiB chunks", 256 * 1024), ("16 KiB chunks", 16 * 1024))
BUCKET = "bench"


class MotoServer:
    """``moto_server`` in a child process, with one bucket."""

    def __init__(self) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        exe = Path(sys.executable).with_name("moto_server")
        self.proc = subprocess.Popen(
            [str(exe), "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.endpoint = f"http://127.0.0.1:{self.port}"
        for k, v in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing")):
            os.environ.setdefault(k, v)
        os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
        import boto3

        client = boto3.client("s3", endpoint_url=self.endpoint, region_name="us-east-1")
        for _ in range(200):
            try:
                client.create_bucket(Bucket=BUCKET)
                return
            except Exception:
                time.sleep(0.05)
        raise RuntimeError("moto_server did not start")

    def options(self) -> dict[str, Any]:
        return {
            "endpoint_url": self.endpoint,
            "key": "testing",
            "secret": "testing",
            "client_kwargs": {"region_name": "us-east-1"},
            "skip_instance_cache": True,
        }

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


def _create(store: Any, data: np.ndarray, chunk: int) -> zarr.Array:
    return zarr.create_array(
        store, name="a", shape=data.shape, chunks=(chunk,), dtype="f4",
        compressors=None, fill_value=0.0,
    )  # fmt: skip


def _zarr(server: MotoServer, data: np.ndarray, chunk: int) -> tuple[float, float]:
    url = f"s3://{BUCKET}/zarr-{uuid.uuid4().hex[:8]}"
    t0 = clock()
    store = zarr.storage.FsspecStore.from_url(url, storage_options=server.options())
    _create(store, data, chunk)[:] = data
    write = clock() - t0
    t0 = clock()
    store = zarr.storage.FsspecStore.from_url(url, storage_options=server.options(), read_only=True)
    out = zarr.open_array(store, path="a", mode="r")[:]
    read = clock() - t0
    assert np.array_equal(out, data)
    return write, read


def _icechunk(server: MotoServer, data: np.ndarray, chunk: int) -> tuple[float, float]:
    import icechunk

    def storage(prefix: str) -> Any:
        return icechunk.s3_storage(
            bucket=BUCKET, prefix=prefix, region="us-east-1", endpoint_url=server.endpoint,
            allow_http=True, access_key_id="testing", secret_access_key="testing",
            force_path_style=True,
        )  # fmt: skip

    prefix = f"ice-{uuid.uuid4().hex[:8]}"
    repo = icechunk.Repository.create(storage(prefix))
    t0 = clock()
    session = repo.writable_session("main")
    _create(session.store, data, chunk)[:] = data
    snap = session.commit("write")
    write = clock() - t0
    t0 = clock()
    again = icechunk.Repository.open(storage(prefix))
    out = zarr.open_array(again.readonly_session(snapshot_id=snap).store, path="a", mode="r")[:]
    read = clock() - t0
    assert np.array_equal(out, data)
    return write, read


def _lake(
    settings: Settings, server: MotoServer, data: np.ndarray, chunk: int
) -> tuple[float, float]:
    import zarrlake
    from zarrlake.core import forget_cores

    name = f"s3{uuid.uuid4().hex[:8]}"
    catalog = f"sqlite:///{settings.dir('s3', 'catalog')}.db"
    repo = zarrlake.Repo.create(
        catalog=catalog, storage=f"s3://{BUCKET}/{name}", name=name,
        storage_options=server.options(),
    )  # fmt: skip
    t0 = clock()
    session = repo.writable_session("main")
    _create(session.store, data, chunk)[:] = data
    commit = session.commit("write")
    write = clock() - t0
    forget_cores()
    t0 = clock()
    again = zarrlake.Repo.open(catalog=catalog, name=name, storage_options=server.options())
    out = zarr.open_array(again.readonly_session(commit=commit).store, path="a", mode="r")[:]
    read = clock() - t0
    assert np.array_equal(out, data)
    return write, read


def run(settings: Settings) -> list[Result]:
    data = field_data(8 * MiB // 4)
    repeats = Repeats(3, 3, 0.0) if settings.quick else Repeats(3, 5, 120.0)
    server = MotoServer()
    results: list[Result] = []
    try:
        for label, nbytes in CHUNKS:
            chunk = nbytes // 4
            case = f"{label} ({data.size // chunk:,}), uncompressed, 8 MiB"
            times: dict[str, tuple[list[float], list[float]]] = {
                s: ([], []) for s in (ZARR, ICECHUNK, LAKE)
            }
            for _ in repeats:
                for system in (ZARR, ICECHUNK, LAKE):
                    if system == ZARR:
                        w, r = _zarr(server, data, chunk)
                    elif system == ICECHUNK:
                        w, r = _icechunk(server, data, chunk)
                    else:
                        w, r = _lake(settings, server, data, chunk)
                    times[system][0].append(w)
                    times[system][1].append(r)
            for system, (w, r) in times.items():
                results.append(Result(TITLE, case, "write+commit", system, w))
                results.append(Result(TITLE, case, "full read", system, r))
    finally:
        server.stop()
    ratio_target(results, vs_zarr=1.0, vs_icechunk=1.0)
    return results
