"""Small lakes for the review tests: an array ``temp`` (8 x 8 in 4 x 4 chunks, float32, with
``units``) on ``main``, and a package registering custom checks by entry point."""

from __future__ import annotations

import importlib
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import zarr

import zarrlake

CHECKS_MODULE = """
import time
from zarrlake import CheckFailure

SEEN = []

def small_values(p):
    for path in p.arrays():
        for coords, values in p.changed_chunks(path):
            SEEN.append((path, coords))
            if values.max() > p.params.get("limit", 100):
                return CheckFailure("small", "too big", (path,), {path: (coords,)})
    return None

def says_no(p):
    return "the data steward says no"

def broken(p):
    raise RuntimeError("boom in the check")

def hangs(p):
    time.sleep(p.params.get("seconds", 5))

def rendezvous(p):
    # every merging process waits here until all arrived: they all built their merge on the
    # same head, so their compare-and-swaps race
    import os, pathlib
    d = pathlib.Path(p.params["dir"])
    (d / str(os.getpid())).touch()
    deadline = time.monotonic() + 60
    while len(list(d.iterdir())) < p.params["n"] and time.monotonic() < deadline:
        time.sleep(0.01)
"""


def install_checks(root: Path) -> Iterator[None]:
    """Make ``zl_test_checks`` importable and registered in ``zarrlake.checks`` (a real
    distribution's metadata on ``sys.path``)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "zl_test_checks.py").write_text(CHECKS_MODULE)
    info = root / "zl_test_checks-1.0.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: zl-test-checks\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        textwrap.dedent(
            """\
            [zarrlake.checks]
            small_values = zl_test_checks:small_values
            says_no = zl_test_checks:says_no
            broken = zl_test_checks:broken
            hangs = zl_test_checks:hangs
            rendezvous = zl_test_checks:rendezvous
            """
        )
    )
    sys.path.insert(0, str(root))
    importlib.invalidate_caches()
    try:
        yield
    finally:
        sys.path.remove(str(root))
        sys.modules.pop("zl_test_checks", None)


def with_temp(repo: zarrlake.Repo, *, attrs: dict[str, Any] | None = None) -> str:
    s = repo.writable_session("main")
    g = zarr.open_group(s.store, mode="a")
    a = g.create_array(
        "temp", shape=(8, 8), chunks=(4, 4), dtype="f4", attributes=attrs or {"units": "K"}
    )
    a[:] = np.ones((8, 8), "f4")
    return s.commit("create temp")


def write(
    repo: zarrlake.Repo, region: tuple[slice, ...], value: float, branch: str = "main"
) -> zarrlake.WritableSession:
    """A session on ``branch`` that wrote ``value`` into ``temp[region]`` (not committed)."""
    s = repo.writable_session(branch)
    zarr.open_array(s.store, path="temp")[region] = value
    return s


def merge_pull(catalog: str, name: str, number: int) -> str:
    """Child body: merge pull request ``number``; ``merged <id>`` or the error's class name."""
    repo = zarrlake.Repo.open(catalog=catalog, name=name)
    try:
        return "merged " + repo.pull_request(number).merge(author="merger")
    except zarrlake.ZarrlakeError as exc:
        return type(exc).__name__
