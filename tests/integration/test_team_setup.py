"""The team setup, for real: a PostgreSQL catalog and S3 object storage (s3fs against moto's
server on loopback), used from several processes and a dask cluster. The same scenarios run
on the embedded default (SQLite + local directory), side by side."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import xarray as xr

import zarrlake
from tests.integration._workers import CTX, run_children
from tests.integration._xr import (
    close_shared_client,
    make_lake,
    not_in,
    ramp,
    sample,
    shared_client,
)

pytestmark = pytest.mark.slow

TEAM = pytest.param("postgres-s3", id="team", marks=[pytest.mark.postgres, pytest.mark.s3])
EMBEDDED = pytest.param("sqlite-local", id="embedded")


@pytest.fixture(scope="session")
def client() -> Iterator[Any]:
    yield shared_client()
    close_shared_client()


@pytest.fixture(params=[TEAM, EMBEDDED])
def team(request: pytest.FixtureRequest, tmp_path: Path) -> zarrlake.Repo:
    """The team setup, and the embedded default for comparison."""
    return make_lake(request.param, request, tmp_path)


def _open(config: zarrlake.RepoConfig) -> zarrlake.Repo:
    """What every other machine does: open the repo by catalog URL, name and options."""
    return zarrlake.Repo.open(
        catalog=config.catalog, name=config.name, storage_options=config.storage_options
    )


def _read_elsewhere(config: zarrlake.RepoConfig, ref: str) -> xr.Dataset:
    return zarrlake.open_dataset(_open(config), ref).compute()


def test_a_dataset_committed_here_reads_back_identical_in_another_process(
    team: zarrlake.Repo,
) -> None:
    ds = sample()
    c = ds.lake.commit("sample", repo=team, metadata={"source": "test"})
    (seen,) = run_children([(_read_elsewhere, (team.config, c))])
    xr.testing.assert_identical(seen, ds)
    assert team.commit_info(c).metadata == {"source": "test"}


def _block(block: np.ndarray, block_info: dict[Any, Any] | None = None, *, driver: int) -> Any:
    not_in(driver)
    assert block_info is not None
    (t0, t1), (x0, x1) = block_info[0]["array-location"]
    return (np.arange(t0, t1)[:, None] * 4 + np.arange(x0, x1)[None, :]).astype("f8")


@pytest.mark.parametrize("team", [TEAM], indirect=True)  # test_dask.py covers the embedded one
def test_cooperative_dask_write_to_postgres_and_s3(client: Any, team: zarrlake.Repo) -> None:
    import dask.array as da

    src = da.zeros((200, 4), chunks=(25, 4)).map_blocks(_block, driver=os.getpid(), dtype="f8")
    ds = xr.Dataset({"v": (("t", "x"), src)}, coords={"t": np.arange(200)})
    with client.as_current():
        c = ds.lake.commit("from the workers", repo=team)
    assert [e.message for e in team.log()] == ["from the workers", "Repository initialized"]
    xr.testing.assert_identical(_read_elsewhere(team.config, c), ramp(200))


def _commit_region(config: zarrlake.RepoConfig, start: int, stop: int, barrier: Any) -> str:
    """An independent process: write its region of the ramp in its own session and commit,
    after meeting the other process, so that both commits race."""
    repo = _open(config)
    part = ramp(stop, offset=1000.0).isel(t=slice(start, stop))
    barrier.wait(timeout=60)
    return part.lake.commit(f"rows {start}-{stop}", repo=repo, region="auto")


def test_two_processes_commit_disjoint_regions_concurrently(team: zarrlake.Repo) -> None:
    template = xr.zeros_like(ramp(80))
    c0 = template.lake.commit("template", repo=team, encoding={"v": {"chunks": (20, 4)}})
    barrier = CTX.Barrier(2)
    first, second = run_children(
        [
            (_commit_region, (team.config, 0, 40, barrier)),
            (_commit_region, (team.config, 40, 80, barrier)),
        ]
    )
    log = team.log()
    assert {log[0].id, log[1].id} == {first, second}
    assert log[2].id == c0
    xr.testing.assert_identical(_read_elsewhere(team.config, "main"), ramp(80, offset=1000.0))
