"""Throwaway services for the operations tutorial: a PostgreSQL server of its own.

``postgres()`` yields a SQLAlchemy URL. With ``ZARRLAKE_PG_URL`` set, that server is used (the
test suite points it at its own PostgreSQL). Otherwise a private server is started with the
PostgreSQL binaries found on the machine (Binder installs them from ``binder/apt.txt``), in a
temporary directory, on a free port of the loopback interface, and removed afterwards.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["free_port", "postgres"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _pg_bin(name: str) -> str:
    found = shutil.which(name) or next(
        iter(sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True)), None
    )
    if found is None:
        raise RuntimeError(
            f"PostgreSQL's {name} was not found: install the server (apt: postgresql), "
            "or set ZARRLAKE_PG_URL to a database you may use"
        )
    return found


@contextmanager
def postgres() -> Iterator[str]:
    """A PostgreSQL URL for the tutorial: ``ZARRLAKE_PG_URL``, or a private server."""
    if url := os.environ.get("ZARRLAKE_PG_URL"):
        yield url
        return
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        raise RuntimeError("PostgreSQL refuses to run as root: set ZARRLAKE_PG_URL instead")
    home = Path(tempfile.mkdtemp(prefix="zarrlake-pg-"))
    data, port = home / "data", free_port()
    subprocess.run(
        [_pg_bin("initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8"],
        check=True,
        capture_output=True,
    )
    opts = f"-k {home} -h 127.0.0.1 -p {port} -c fsync=off"
    subprocess.run(
        [_pg_bin("pg_ctl"), "-D", str(data), "-o", opts, "-l", str(home / "log"), "-w", "start"],
        check=True,
        capture_output=True,
    )
    try:
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(
            [_pg_bin("pg_ctl"), "-D", str(data), "-m", "fast", "stop"], capture_output=True
        )
        shutil.rmtree(home, ignore_errors=True)
