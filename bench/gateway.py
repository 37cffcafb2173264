"""Reading a 256 MiB array over HTTP: through the zarrlake gateway, against the same array
exported to plain Zarr files and served by a static HTTP server. Same reader (zarr-python's
FsspecStore over HTTP, aiohttp), same machine, servers in processes of their own.

Run by hand (not part of the test suite)::

    .venv/bin/python bench/gateway.py [--quick] [--repeat N] [--json PATH]

Servers, each started once per case and read ``--repeat`` times after one warm-up read:

- ``gateway``: ``zarrlake serve LAKE``, the array read at its commit id;
- ``static-tornado``: tornado's ``StaticFileHandler`` on the exported files (the gateway's
  own HTTP framework, so the ratio is what the gateway adds to serving files);
- ``static-http.server``: Python's ``http.server`` (threading, HTTP/1.0) on the same files.

Two cases: 1 MiB chunks (objects of their own in the lake) and 128 KiB chunks (packed). The
servers take turns in every repeat. The goal is gateway / static-tornado <= 1.0.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import zarr

import zarrlake

MiB = 1024 * 1024

STATIC_TORNADO = """
import sys, tornado.ioloop, tornado.web
root, port = sys.argv[1], int(sys.argv[2])
app = tornado.web.Application([(r"/(.*)", tornado.web.StaticFileHandler, {"path": root})],
                              log_function=lambda h: None)
app.listen(port, "127.0.0.1")
print("ready", flush=True)
tornado.ioloop.IOLoop.current().start()
"""

HTTP_SERVER = """
import functools, http.server, sys
root, port = sys.argv[1], int(sys.argv[2])
class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a): pass
h = functools.partial(Quiet, directory=root)
s = http.server.ThreadingHTTPServer(("127.0.0.1", port), h)
print("ready", flush=True)
s.serve_forever()
"""


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """A server process; ``url`` once it is ready."""

    def __init__(self, cmd: list[str], url: str | None = None) -> None:
        self.proc = subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        m = re.search(r"(http://127\.0\.0\.1:\d+/)", line)
        if url is None and m is None:
            raise RuntimeError(f"server did not start: {line!r}")
        self.url = url or (m.group(1) if m else "")

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def build(root: Path, chunk_mib: float, total_mib: int) -> tuple[zarrlake.Repo, str, Path]:
    """A lake holding one float32 array of ``total_mib``, uncompressed, and its export."""
    side = 1024
    rows = total_mib * MiB // (side * 4)
    chunk_rows = max(1, int(chunk_mib * MiB) // (side * 4))
    repo = zarrlake.Repo.create(root / f"lake-{chunk_mib}")
    s = repo.writable_session()
    a = zarr.open_group(s.store, mode="w").create_array(
        "data", shape=(rows, side), chunks=(chunk_rows, side), dtype="f4", compressors=None
    )
    rng = np.random.default_rng(0)
    for start in range(0, rows, chunk_rows * 16):
        stop = min(rows, start + chunk_rows * 16)
        a[start:stop] = rng.random((stop - start, side), dtype=np.float32)
    commit = s.commit("data")
    plain = root / f"plain-{chunk_mib}"
    repo.export(commit, str(plain))
    return repo, commit, plain


def read(url: str) -> float:
    t = time.perf_counter()
    arr = zarr.open_array(url, mode="r")
    arr[:]
    return time.perf_counter() - t


def latency(url: str, chunks: int, n: int = 64) -> float:
    """Median seconds of one whole-chunk GET, sequential on one kept-alive connection."""
    import http.client
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    times = []
    try:
        for i in range(n):
            t = time.perf_counter()
            conn.request("GET", f"{parts.path}/c/{i % chunks}/0")
            response = conn.getresponse()
            response.read()
            assert response.status == 200, response.status
            times.append(time.perf_counter() - t)
    finally:
        conn.close()
    return statistics.median(times)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def server_cpu(server: Server, url: str, reads: int = 3) -> float:
    """CPU seconds the server spends per full read: unlike wall time, not moved by load."""
    before = cpu_seconds(server.proc.pid)
    for _ in range(reads):
        read(url)
    return (cpu_seconds(server.proc.pid) - before) / reads


def measure(urls: dict[str, str], repeat: int) -> dict[str, list[float]]:
    """Samples per server, the servers taking turns in each repeat (so that a change of load
    on the machine falls on all of them), after one warm-up read each."""
    for url in urls.values():
        read(url)  # warm: page cache, connections, caches of either server
    samples: dict[str, list[float]] = {name: [] for name in urls}
    for _ in range(repeat):
        for name, url in urls.items():
            samples[name].append(read(url))
    return samples


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="32 MiB instead of 256 MiB")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--json", type=Path, help="write every sample here")
    args = p.parse_args()
    total = 32 if args.quick else 256
    scratch = Path(tempfile.mkdtemp(prefix="zl-gateway-bench-"))
    results: dict[str, Any] = {
        "machine": f"{os.cpu_count()} CPUs, {platform.system()} {platform.machine()}",
        "python": sys.version.split()[0],
        "zarr": zarr.__version__,
        "total_mib": total,
        "repeat": args.repeat,
        "cases": {},
        "load_start": os.getloadavg()[0],
    }
    print(f"reading {total} MiB over HTTP with zarr {zarr.__version__} (median of {args.repeat})")
    try:
        for chunk_mib in (1, 0.125):
            repo, commit, plain = build(scratch, chunk_mib, total)
            expected = zarr.open_array(repo.readonly_session(commit).store, path="data")[:]
            gw = Server(
                [sys.executable, "-m", "zarrlake.cli", "serve", str(repo_path(repo)), "--port", "0"]
            )
            servers = {
                "gateway": (gw, f"{gw.url}default/{commit}/data"),
            }
            for name, code in (
                ("static-tornado", STATIC_TORNADO),
                ("static-http.server", HTTP_SERVER),
            ):
                port = free_port()
                srv = Server(
                    [sys.executable, "-c", code, str(plain), str(port)],
                    url=f"http://127.0.0.1:{port}/",
                )
                servers[name] = (srv, f"{srv.url}data")
            try:
                urls = {name: url for name, (_, url) in servers.items()}
                for name, url in urls.items():
                    got = zarr.open_array(url, mode="r")[:]
                    assert np.array_equal(got, expected), name
                case = measure(urls, args.repeat)
                chunks = int(total / chunk_mib)
                for name, url in urls.items():
                    one = latency(url, chunks)
                    used = server_cpu(servers[name][0], url)
                    case[f"{name} latency"] = [one]
                    case[f"{name} server cpu"] = [used]
                    print(
                        f"  {chunk_mib:>5} MiB chunks  {name:<20} one request {one * 1000:.2f} ms,"
                        f" server CPU per full read {used:.2f} s"
                    )
                for name, samples in list(case.items()):
                    if name.endswith(("latency", "cpu")):
                        continue
                    med = statistics.median(samples)
                    print(
                        f"  {chunk_mib:>5} MiB chunks  {name:<20} median {med * 1000:8.1f} ms"
                        f"  ({total / med:6.1f} MiB/s; min {min(samples) * 1000:.1f})"
                    )
            finally:
                for srv, _ in servers.values():
                    srv.stop()
            ratio = statistics.median(case["gateway"]) / statistics.median(case["static-tornado"])
            ratio2 = statistics.median(case["gateway"]) / statistics.median(
                case["static-http.server"]
            )
            print(
                f"  {chunk_mib:>5} MiB chunks  gateway / static-tornado {ratio:.2f}x, "
                f"gateway / http.server {ratio2:.2f}x"
            )
            results["cases"][f"{chunk_mib} MiB chunks"] = case
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    results["load_end"] = os.getloadavg()[0]
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


def repo_path(repo: zarrlake.Repo) -> Path:
    return Path(repo.config.catalog.removeprefix("sqlite:///")).parent


if __name__ == "__main__":
    main()
