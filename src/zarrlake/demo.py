"""A demo lake that looks like real work: a gridded climate Dataset and its history.

``build_demo(path)`` makes, on the embedded default (SQLite + local directory), a monthly
temperature and precipitation grid (made in code, no download), then the history a small team
would leave: calibrations on ``main``, an ``experiment`` branch merged back, a bad commit and
its revert, a tag, one open session with staged work that expires in a few minutes and one
session that has already expired. :func:`refresh_sessions` starts a new open session when the
last one has expired, so a demo served again (or long) still shows a live countdown.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

import numpy as np

import zarrlake

if TYPE_CHECKING:
    import xarray as xr

__all__ = [
    "DEFAULT_PATH",
    "DemoReport",
    "build_demo",
    "climate_dataset",
    "is_demo_lake",
    "opener",
    "refresh_sessions",
]

N_TIME, N_LAT, N_LON = 12, 36, 72
CHUNKS = {"time": 1, "lat": 12, "lon": 24}
OPEN_SESSION_MINUTES = 5
OPEN_SESSION_AUTHOR = "ben"
DEFAULT_PATH = "demo-lake"  # not the README's my-lake, so that its example runs beside it
MARKER = "DEMO.txt"  # in a lake built by the demo: serving it may start demo sessions


@dataclass
class DemoReport:
    """What :func:`build_demo` made (printed by ``zarrlake demo``)."""

    path: Path
    repo: zarrlake.Repo
    commits: dict[str, str] = field(default_factory=dict)
    sessions: dict[str, str] = field(default_factory=dict)

    def lines(self) -> list[str]:
        out = [f"demo lake at {self.path}"]
        out += [f"  {what:<28} {cid[:10]}" for what, cid in self.commits.items()]
        out += [f"  {what:<28} {sid}" for what, sid in self.sessions.items()]
        return out


def climate_dataset() -> xr.Dataset:
    """A year of monthly surface temperature (K) and precipitation (mm/day) on a 5° grid."""
    import pandas as pd  # type: ignore[import-untyped, unused-ignore]
    import xarray as xr

    time_ = pd.date_range("2025-01-01", periods=N_TIME, freq="MS")
    lat = np.linspace(-87.5, 87.5, N_LAT)
    lon = np.linspace(-177.5, 177.5, N_LON)
    rng = np.random.default_rng(42)
    season = np.cos(2 * np.pi * (np.arange(N_TIME) - 6) / 12)[:, None, None]
    latr = np.deg2rad(lat)[None, :, None]
    lonr = np.deg2rad(lon)[None, None, :]
    temp = (
        288.0
        + 30.0 * np.cos(latr) ** 2
        - 20.0
        + 12.0 * season * np.sin(latr)
        + 3.0 * np.sin(3 * lonr) * np.cos(latr)
        + rng.normal(0, 0.5, (N_TIME, N_LAT, N_LON))
    ).astype("f4")
    precip = np.clip(
        6.0 * np.exp(-((np.rad2deg(latr) / 12.0) ** 2))
        + 1.5 * (1 + np.cos(2 * lonr)) * np.cos(latr)
        + rng.gamma(1.0, 0.4, (N_TIME, N_LAT, N_LON)),
        0,
        None,
    ).astype("f4")
    dims = ("time", "lat", "lon")
    ds = xr.Dataset(
        {
            "temperature": (dims, temp, {"units": "K", "long_name": "surface air temperature"}),
            "precipitation": (dims, precip, {"units": "mm/day", "long_name": "precipitation"}),
        },
        coords={
            "time": time_,
            "lat": ("lat", lat, {"units": "degrees_north"}),
            "lon": ("lon", lon, {"units": "degrees_east"}),
        },
        attrs={"title": "zarrlake demo climate grid", "source": "synthetic"},
    )
    for name in ("temperature", "precipitation"):
        ds[name].encoding["chunks"] = tuple(CHUNKS[d] for d in dims)
    return ds


def _fresh(path: Path, force: bool) -> zarrlake.Repo:
    if path.exists() and any(path.iterdir()):
        if not force:
            raise zarrlake.AlreadyExistsError(
                f"{path} is not empty; pass force=True (zarrlake demo --force) to rebuild it"
            )
        shutil.rmtree(path)
    repo = zarrlake.Repo.create(path, author="ana")
    (path / MARKER).write_text(
        "This lake was built by `zarrlake demo`. Serving it with `zarrlake demo` starts a new\n"
        "open session (with staged work that expires in a few minutes) whenever the last one\n"
        "has expired. Delete this file to stop that.\n"
    )
    return repo


def is_demo_lake(path: str | Path) -> bool:
    """Whether the lake at ``path`` was built by :func:`build_demo`."""
    return (Path(path) / MARKER).is_file()


def refresh_sessions(repo: zarrlake.Repo) -> str | None:
    """Start the demo's open session (staged work on ``main``, expiring in
    ``OPEN_SESSION_MINUTES``) unless one is still open. Returns the new session's id, or
    ``None`` if one was open. (Expired sessions stay listed, as expired: they can no longer
    be abandoned.)"""
    if any(s.status == "open" and s.author == OPEN_SESSION_AUTHOR for s in repo.sessions()):
        return None
    return _open_session(repo)


def opener(path: str | Path) -> Callable[[], zarrlake.Repo]:
    """A function that opens the lake at ``path`` for a dashboard page; for a demo lake it
    first starts a new demo session if the last one expired (:func:`refresh_sessions`), so
    every page shows a live countdown."""
    path = Path(path)
    demo = is_demo_lake(path)

    def open_() -> zarrlake.Repo:
        repo = zarrlake.Repo.open(path)
        if demo:
            refresh_sessions(repo)
        return repo

    return open_


def _open_session(repo: zarrlake.Repo) -> str:
    import zarr

    opened = repo.writable_session(
        "main",
        author=OPEN_SESSION_AUTHOR,
        expires_in=timedelta(minutes=OPEN_SESSION_MINUTES),
    )
    arr = zarr.open_array(opened.store, path="temperature")
    arr[5, 12:24, 24:48] = np.asarray(arr[5, 12:24, 24:48]) + 0.2
    opened.flush()  # staged in the catalog, so the dashboard's process sees the work
    return str(opened.id)


def _region(ds: xr.Dataset, **sel: slice) -> Any:
    return ds.isel(sel).drop_vars([c for c in ("time", "lat", "lon") if c not in sel])


def build_demo(path: str | Path, *, force: bool = False) -> zarrlake.Repo:
    """Build the demo lake at ``path`` and return it (see the module docstring).

    Raises :class:`zarrlake.AlreadyExistsError` if ``path`` is not empty, unless ``force``.
    """
    return build_demo_report(Path(path), force=force).repo


class _Steps(dict[str, str]):
    """The commits made so far, each announced as it is recorded."""

    def __init__(self, say: Callable[[str], None] | None) -> None:
        super().__init__()
        self.say = say

    def __setitem__(self, what: str, commit: str) -> None:
        super().__setitem__(what, commit)
        if self.say is not None:
            self.say(f"  {what:<28} {commit[:10]}")


def build_demo_report(
    path: Path, *, force: bool = False, progress: Callable[[str], None] | None = None
) -> DemoReport:
    """Like :func:`build_demo`, returning what was made; ``progress`` is called with a line
    for each commit as it is made."""
    import zarrlake.xarray as zx

    path = Path(path).expanduser().absolute()
    repo = _fresh(path, force)
    rep = DemoReport(path, repo, _Steps(progress))
    ds = climate_dataset()
    c = rep.commits
    c["main: initial grid"] = str(
        zx.commit(ds, "Initial climate grid 2025", repo=repo, mode="w", author="ana")
    )
    cur = zarrlake.open_dataset(repo, "main").load()

    # calibrate the first quarter's temperature: 3 time steps x 9 chunks change
    fixed = cur.copy()
    fixed["temperature"][0:3] = fixed["temperature"][0:3] + 0.35
    c["main: calibration"] = str(
        zx.commit(
            _region(fixed, time=slice(0, 3))[["temperature"]],
            "Calibrate Q1 temperature (+0.35 K sensor bias)",
            repo=repo,
            region={"time": slice(0, 3)},
            author="ana",
            metadata={"ticket": "CLIM-12"},
        )
    )
    repo.create_tag("v1.0", "main")

    _branch(repo, "experiment", "main")
    wet = cur.copy()
    wet["precipitation"][4:8, 12:24] = wet["precipitation"][4:8, 12:24] * 1.2
    c["experiment: tropics rescale"] = str(
        zx.commit(
            _region(wet, time=slice(4, 8), lat=slice(12, 24))[["precipitation"]],
            "Rescale tropical monsoon precipitation (+20%)",
            repo=repo,
            branch="experiment",
            region={"time": slice(4, 8), "lat": slice(12, 24)},
            author="ben",
        )
    )
    s = repo.writable_session("experiment", author="ben")
    import zarr

    zarr.open_group(s.store, mode="r+").attrs["history"] = "precipitation rescaled in the tropics"
    c["experiment: attributes"] = s.commit("Document the rescale in attributes")

    late = cur.copy()
    late["temperature"][9:12, 24:36] = late["temperature"][9:12, 24:36] - 0.5
    c["main: northern autumn fix"] = str(
        zx.commit(
            _region(late, time=slice(9, 12), lat=slice(24, 36))[["temperature"]],
            "Fix northern autumn temperature drift",
            repo=repo,
            region={"time": slice(9, 12), "lat": slice(24, 36)},
            author="ana",
        )
    )
    c["main: merge experiment"] = _merge(repo, "experiment", "main")

    bad = cur.copy()
    bad["precipitation"][6] = -1.0
    c["main: bad write"] = str(
        zx.commit(
            _region(bad, time=slice(6, 7))[["precipitation"]],
            "Overwrite July precipitation (bad units)",
            repo=repo,
            region={"time": slice(6, 7)},
            author="carl",
        )
    )
    c["main: revert"] = _revert(repo, c["main: bad write"], "main")

    # both branches touch December temperature: a merge preview shows conflicts
    dec = cur.copy()
    dec["temperature"][11, 0:12] = dec["temperature"][11, 0:12] + 1.0
    c["experiment: december"] = str(
        zx.commit(
            _region(dec, time=slice(11, 12), lat=slice(0, 12))[["temperature"]],
            "Warm southern December (model update)",
            repo=repo,
            branch="experiment",
            region={"time": slice(11, 12), "lat": slice(0, 12)},
            author="ben",
        )
    )
    dec["temperature"][11, 0:12] = dec["temperature"][11, 0:12] - 2.0
    c["main: december"] = str(
        zx.commit(
            _region(dec, time=slice(11, 12), lat=slice(0, 12))[["temperature"]],
            "Cool southern December (station data)",
            repo=repo,
            region={"time": slice(11, 12), "lat": slice(0, 12)},
            author="ana",
        )
    )

    expired = repo.writable_session("main", author="dora", expires_in=timedelta(seconds=1))
    zarr.open_array(expired.store, path="precipitation")[0, 0:12, 0:24] = 0.0
    rep.sessions[f"open session (expires {OPEN_SESSION_MINUTES} min)"] = _open_session(repo)
    rep.sessions["expired session"] = str(expired.id)
    if expired.expires_at is not None:  # let it lapse, so the lake shows an expired session
        time.sleep(max(0.0, expired.expires_at.timestamp() - time.time()) + 0.05)
    return rep


def _branch(repo: zarrlake.Repo, name: str, at: str) -> str:
    return repo.create_branch(name, at)


def _merge(repo: zarrlake.Repo, source: str, into: str) -> str:
    return repo.merge(source, branch=into, message=f"Merge {source} into {into}", author="ana")


def _revert(repo: zarrlake.Repo, commit: str, branch: str) -> str:
    return repo.revert(commit, branch=branch, author="carl")
