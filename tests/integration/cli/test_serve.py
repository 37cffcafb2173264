"""``zarrlake serve`` and version URLs where the command line takes a lake."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
import zarr

import zarrlake
from tests.conftest import PG_URL, _need_postgres, unique
from tests.integration.cli.conftest import run


def fill(repo: zarrlake.Repo) -> str:
    s = repo.writable_session()
    a = zarr.open_group(s.store, mode="w").create_array("a", shape=(6,), chunks=(3,), dtype="i4")
    a[:] = np.arange(6)
    commit = s.commit("first")
    repo.create_tag("v1")
    return commit


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


@contextmanager
def serving(*args: str) -> Iterator[str]:
    """``zarrlake serve ARGS --port 0`` in a process of its own; yields the URL it prints."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "zarrlake.cli", "serve", *args, "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        # Ctrl-C must reach the server even if something in this test process left SIGINT
        # ignored or blocked (both are inherited through exec: Ctrl-C would never stop it)
        preexec_fn=_default_sigint,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        m = re.match(r"zarr gateway at (http://127\.0\.0\.1:\d+/)", first)
        assert m, first + (proc.stderr.read() if proc.stderr and proc.poll() is not None else "")
        yield m.group(1)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            code = proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()  # say what the server was doing instead of only that it did not stop
            _, err = proc.communicate()
            pytest.fail(
                f"zarrlake serve did not stop within 30 s of Ctrl-C; stderr:\n{err[-3000:]}"
            )
        assert code == 0


def test_serve_a_directory(tmp_path: Path) -> None:
    repo = zarrlake.Repo.create(tmp_path / "lake")
    commit = fill(repo)
    with serving(str(tmp_path / "lake")) as url:
        assert url.startswith("http://127.0.0.1:")  # loopback unless told otherwise
        assert zarr.open_group(f"{url}default/v1", mode="r")["a"][:].tolist() == list(range(6))
        assert zarr.open_group(f"{url}default/{commit}", mode="r")["a"][1] == 1


@pytest.mark.postgres
def test_serve_a_version_url_of_a_team_catalog(tmp_path: Path) -> None:
    _need_postgres()
    name = unique("serve")
    repo = zarrlake.Repo.create(catalog=PG_URL, storage=str(tmp_path / "o"), name=name)
    fill(repo)
    lake = zarrlake.version_url(repo)
    assert lake.startswith("zarrlake+postgresql://")
    assert f"repo={name}" in lake
    with serving(lake) as url:
        assert zarr.open_group(f"{url}{name}/main", mode="r")["a"][5] == 5


def test_serve_refuses_a_version_and_a_missing_lake(tmp_path: Path) -> None:
    zarrlake.Repo.create(tmp_path / "lake")
    p = run("serve", f"zarrlake+file://{tmp_path / 'lake'}#ref=v1", "--port", "0")
    assert p.returncode == 2
    assert "serves a lake, not one version" in p.stderr
    p = run("serve", str(tmp_path / "nowhere"), "--port", "0")
    assert p.returncode == 1
    assert "no zarrlake repo" in p.stderr
    p = run("serve", f"zarrlake+https://{tmp_path}", "--port", "0")
    assert p.returncode == 2
    assert "unknown scheme 'https'" in p.stderr


def test_version_urls_name_the_lake_everywhere(tmp_path: Path) -> None:
    repo = zarrlake.Repo.create(tmp_path / "lake")
    first = fill(repo)
    s = repo.writable_session()
    zarr.open_array(s.store, path="a")[0] = 9
    s.commit("second")
    lake = f"zarrlake+file://{tmp_path / 'lake'}"
    shown = run("log", lake)
    assert shown.returncode == 0
    assert "second" in shown.stdout
    at_v1 = run("log", f"{lake}#ref=v1")  # the URL's ref is log's default REF
    assert at_v1.returncode == 0
    assert "second" not in at_v1.stdout
    assert first in at_v1.stdout
    assert run("show", f"{lake}#ref=v1").stdout.count(first[:10]) >= 1
    branches = run("branch", lake)
    assert branches.returncode == 0
    assert "main" in branches.stdout
    refused = run("gc", f"{lake}#ref=v1", "--dry-run")
    assert refused.returncode == 2
    assert "takes no #ref=" in refused.stderr
    other = run("log", f"{lake}?repo=default", "--name", "other")
    assert other.returncode == 2
    assert "name it once" in other.stderr
