"""Cooperative writes: one session, many dask workers (real processes), one commit."""

from __future__ import annotations

import os
import pickle
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dask.array as da
import numpy as np
import pytest
import xarray as xr
import zarr

import zarrlake
from tests.integration._workers import Child
from tests.integration._xr import close_shared_client, not_in, ramp, shared_client

pytestmark = pytest.mark.slow

WIDTH = 4


@pytest.fixture(scope="session")
def client() -> Iterator[Any]:
    yield shared_client()
    close_shared_client()


@pytest.fixture
def repo(tmp_path: Path) -> zarrlake.Repo:
    return zarrlake.Repo.create(tmp_path / "lake")


def _ramp_block(
    block: np.ndarray,
    block_info: dict[Any, Any] | None = None,
    *,
    driver: int,
    log: str | None = None,
    kill_marker: str | None = None,
) -> np.ndarray:
    """The values of :func:`ramp` for this block, computed on a worker (never the driver).

    With ``log``, each computation is logged as ``start:pid``. With ``kill_marker`` too, the
    first worker to start its second block kills itself (SIGKILL, mid-task), once: it dies
    holding the results of the blocks it already wrote.
    """
    not_in(driver)
    assert block_info is not None
    (t0, t1), (x0, x1) = block_info[0]["array-location"]
    pid = os.getpid()
    if log is not None:
        earlier = Path(log).read_text().split() if Path(log).exists() else []
        with open(log, "a") as f:
            f.write(f"{t0}:{pid}\n")
        worked_before = any(e.endswith(f":{pid}") for e in earlier)
        if kill_marker is not None and worked_before and not os.path.exists(kill_marker):
            Path(kill_marker).write_text(f"{t0}:{pid}")
            os.kill(pid, signal.SIGKILL)
    t = np.arange(t0, t1, dtype="f8")[:, None]
    return t * WIDTH + np.arange(x0, x1, dtype="f8")[None, :]


def lazy_ramp(n: int, chunk: int, **kwargs: Any) -> xr.Dataset:
    """:func:`ramp` as a dask-backed Dataset whose blocks are computed by ``_ramp_block``."""
    src = da.zeros((n, WIDTH), chunks=(chunk, WIDTH), dtype="f8").map_blocks(
        _ramp_block, driver=os.getpid(), dtype="f8", **kwargs
    )
    return xr.Dataset({"v": (("t", "x"), src)}, coords={"t": np.arange(n)})


def test_cooperative_commit_writes_every_chunk_from_the_workers_and_commits_once(
    client: Any, repo: zarrlake.Repo
) -> None:
    ds = lazy_ramp(400, 50)
    with client.as_current():
        c = ds.lake.commit("from the workers", repo=repo)
    assert [e.message for e in repo.log()] == ["from the workers", "Repository initialized"]
    assert repo.sessions() == []
    xr.testing.assert_identical(zarrlake.open_dataset(repo, c).compute(), ramp(400))


def _write_through(store: zarrlake.LakeStore, start: int, value: float) -> int:
    arr = zarr.open_array(store, path="v", mode="r+")
    arr[start : start + 50] = value
    return os.getpid()


def test_a_shipped_store_write_is_in_the_session_when_the_task_ends(
    client: Any, repo: zarrlake.Repo
) -> None:
    ramp(100).lake.commit("template", repo=repo, encoding={"v": {"chunks": (50, WIDTH)}})
    s = repo.writable_session()
    worker_pid = client.submit(_write_through, s.store, 50, -1.0, pure=False).result()
    assert worker_pid != os.getpid()
    # Read at once, in this process, through the session: no flush anywhere.
    got = zarr.open_array(s.store, path="v", mode="r")[:]
    np.testing.assert_array_equal(got[50:], -1.0)
    np.testing.assert_array_equal(got[:50], ramp(100).v.values[:50])


def _joins_and_writes(store: Any) -> tuple[int, bool]:
    session = store.session
    return os.getpid(), session.durable


def test_a_store_pickled_to_another_process_joins_the_session_there(
    repo: zarrlake.Repo,
) -> None:
    s = repo.writable_session()
    back = pickle.loads(pickle.dumps(s.store))
    assert back == s.store
    assert back.session is s  # in this process: the same session object, write-behind
    assert not s.durable
    pid, durable = Child(_joins_and_writes, s.store).start().result()
    assert pid != os.getpid()
    assert durable  # joined in another process: every write durable when it returns


def _write_then_die(store: Any) -> None:
    _write_through(store, 0, 7.0)
    os.kill(os.getpid(), signal.SIGKILL)  # no flush, no clean exit: only durable writes remain


def test_a_shipped_store_write_survives_its_process_being_killed_right_after(
    repo: zarrlake.Repo,
) -> None:
    ramp(100).lake.commit("template", repo=repo, encoding={"v": {"chunks": (50, WIDTH)}})
    s = repo.writable_session()
    child = Child(_write_then_die, s.store).start()
    child.proc.join(timeout=120)
    assert child.proc.exitcode == -signal.SIGKILL
    c = s.commit("written by a killed process")
    got = zarrlake.open_dataset(repo, c).v.values
    np.testing.assert_array_equal(got[:50], 7.0)
    np.testing.assert_array_equal(got[50:], ramp(100).v.values[50:])


def _region_job(config: zarrlake.RepoConfig, session_id: str, start: int, stop: int) -> int:
    """An independent job: joins the session by id and writes its region of the full ramp."""
    repo = zarrlake.Repo.open(catalog=config.catalog, name=config.name)
    part = ramp(stop).isel(t=slice(start, stop))
    part.lake.commit(session=repo.session(session_id), region="auto")
    return os.getpid()


def test_region_jobs_on_the_cluster_write_one_session_then_one_commit(
    client: Any, repo: zarrlake.Repo
) -> None:
    template = xr.zeros_like(ramp(120))
    template.lake.commit("template", repo=repo, encoding={"v": {"chunks": (20, WIDTH)}})
    s = repo.writable_session()
    bounds = [(i, i + 40) for i in range(0, 120, 40)]
    futures = [client.submit(_region_job, repo.config, s.id, a, b, pure=False) for a, b in bounds]
    assert os.getpid() not in client.gather(futures)
    c = s.commit("three jobs")
    assert [e.message for e in repo.log(limit=2)] == ["three jobs", "template"]
    xr.testing.assert_identical(zarrlake.open_dataset(repo, c).compute(), ramp(120))


def test_dask_chunks_across_zarr_chunks_are_refused_before_any_task_runs(
    client: Any, repo: zarrlake.Repo, tmp_path: Path
) -> None:
    c1 = xr.zeros_like(ramp(100)).lake.commit(
        "template", repo=repo, encoding={"v": {"chunks": (20, WIDTH)}}
    )
    log = tmp_path / "blocks.log"
    ds = lazy_ramp(100, 30, log=str(log))  # pieces end at 30, 60, 90; 30 and 90 split chunks of 20
    with client.as_current(), pytest.raises(zarrlake.UnalignedWriteError) as exc:
        ds.lake.commit("misaligned", repo=repo, mode="a")
    message = str(exc.value)
    assert "variable 'v': along 't'" in message
    assert "at 30, 90," in message
    assert "every 20: 0, 20, 40, 60, 80, 100" in message
    assert not log.exists()  # no block was computed, so nothing was written
    assert repo.resolve("main") == c1
    assert repo.sessions() == []


def test_a_worker_killed_mid_task_is_retried_and_the_commit_is_exact(
    client: Any, repo: zarrlake.Repo, tmp_path: Path
) -> None:
    log, marker = tmp_path / "blocks.log", tmp_path / "killed"
    ds = lazy_ramp(400, 25, log=str(log), kill_marker=str(marker))
    with client.as_current():
        c = ds.lake.commit("survived a kill", repo=repo)
    block, killed_pid = marker.read_text().split(":")
    runs = log.read_text().split()
    assert f"{block}:{killed_pid}" in runs
    assert any(r.startswith(f"{block}:") and r != f"{block}:{killed_pid}" for r in runs)
    assert [e.message for e in repo.log()] == ["survived a kill", "Repository initialized"]
    xr.testing.assert_identical(zarrlake.open_dataset(repo, c).compute(), ramp(400))
