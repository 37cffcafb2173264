"""The ``zarrlake`` engine of xarray and version URLs: found by entry point, lazy, on both
catalogs, and every way of naming a version."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import zarrlake
from zarrlake import InvalidInputError, NotFoundError, version_url

CHUNK = (1, 256, 512)  # 512 KiB of float32: each chunk an object file of its own


def grid(version: int) -> xr.Dataset:
    rng = np.random.default_rng(version)  # random bytes do not compress: chunks stay large
    values = rng.random((4, 256, 512), dtype=np.float32) + version
    return xr.Dataset(
        {"sst": (("time", "y", "x"), values)},
        attrs={"version": version},
    )


def build(repo: zarrlake.Repo) -> tuple[str, str]:
    """Tag v1 (sst ~ 1), then main at v2 (sst ~ 2); both in group ocean."""
    grid(1).lake.commit(
        "v1", repo=repo, group="ocean", mode="w", encoding={"sst": {"chunks": CHUNK}}
    )
    v1 = repo.create_tag("v1")
    ds = zarrlake.open_dataset(repo, group="ocean")
    v2 = ds.assign(sst=ds.sst + 1).assign_attrs(version=2).lake.commit("v2", mode="w")
    return v1, v2


@pytest.fixture
def lake(tmp_path: Path) -> zarrlake.Repo:
    repo = zarrlake.Repo.create(tmp_path / "lake")
    build(repo)
    return repo


class ChunkOpens:
    """Counts the chunk files opened under a directory: every real object read opens one
    (objects over 256 KiB are files of their own, read whole), counted by Python's audit
    hook on ``open``/``os.open``, not by replacing any of our code."""

    hooked: list[ChunkOpens] = []
    installed = False

    def __init__(self, root: Path) -> None:
        self.root = str(root)
        self.paths: list[str] = []

    def __call__(self, event: str, args: tuple[object, ...]) -> None:
        if event == "open" and isinstance(args[0], str) and args[0].startswith(self.root):
            self.paths.append(args[0])


@pytest.fixture
def chunk_opens(lake: zarrlake.Repo, tmp_path: Path) -> Iterator[ChunkOpens]:
    counter = ChunkOpens(tmp_path / "lake" / "chunks")
    if not ChunkOpens.installed:  # an audit hook cannot be removed: one per process
        sys.addaudithook(lambda e, a: [c(e, a) for c in ChunkOpens.hooked])
        ChunkOpens.installed = True
    ChunkOpens.hooked.append(counter)
    try:
        yield counter
    finally:
        ChunkOpens.hooked.remove(counter)


# -- the engine --------------------------------------------------------------------------------


def test_the_engine_is_registered_by_its_entry_point() -> None:
    # a fresh interpreter: the entry point of the installed package, not an import of ours
    code = (
        "import xarray as xr; e = xr.backends.list_engines()['zarrlake']; "
        "print(type(e).__module__, type(e).__name__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["zarrlake.xarray.backend", "ZarrlakeBackendEntrypoint"]


def test_open_dataset_reads_the_version_asked_for(lake: zarrlake.Repo, tmp_path: Path) -> None:
    v1 = xr.open_dataset(tmp_path / "lake", engine="zarrlake", ref="v1", group="ocean")
    head = xr.open_dataset(str(tmp_path / "lake"), engine="zarrlake", group="/ocean/")
    assert (v1.attrs["version"], head.attrs["version"]) == (1, 2)
    np.testing.assert_array_equal(head.sst.values, v1.sst.values + 1)
    prov = v1.encoding["zarrlake"]
    assert (prov.commit, prov.group, prov.branch) == (lake.resolve("v1"), "ocean", None)
    assert head.encoding["zarrlake"].branch == "main"


def test_open_dataset_is_lazy(lake: zarrlake.Repo, tmp_path: Path, chunk_opens: ChunkOpens) -> None:
    ds = xr.open_dataset(tmp_path / "lake", engine="zarrlake", ref="v1", group="ocean")
    assert chunk_opens.paths == []
    first = ds.sst[0].values
    assert len(chunk_opens.paths) == 1  # one chunk of four, when its values were asked for
    assert float(first.min()) >= 1.0


def test_chunks_give_lazy_dask_arrays(
    lake: zarrlake.Repo, tmp_path: Path, chunk_opens: ChunkOpens
) -> None:
    import dask.array as da

    ds = xr.open_dataset(tmp_path / "lake", engine="zarrlake", group="ocean", chunks={})
    assert isinstance(ds.sst.data, da.Array)
    assert ds.sst.data.chunksize == CHUNK
    assert chunk_opens.paths == []
    total = float(ds.sst.sum())
    assert len(chunk_opens.paths) == 4
    assert total == pytest.approx(float(grid(1).sst.sum()) + 4 * 256 * 512, rel=1e-5)


def test_open_datatree(lake: zarrlake.Repo, tmp_path: Path) -> None:
    tree = xr.open_datatree(tmp_path / "lake", engine="zarrlake", ref="v1")
    assert tree["ocean"].attrs["version"] == 1
    ocean = tree["ocean"].to_dataset()
    assert ocean.encoding["zarrlake"].group == "ocean"
    assert ocean.encoding["zarrlake"].commit == lake.resolve("v1")
    sub = xr.open_datatree(tmp_path / "lake", engine="zarrlake", group="ocean")
    assert sub.attrs["version"] == 2


def test_open_mfdataset_over_two_refs(lake: zarrlake.Repo) -> None:
    urls = [version_url(lake, "v1", "ocean"), version_url(lake, "main", "ocean")]
    both = xr.open_mfdataset(urls, engine="zarrlake", combine="nested", concat_dim="version")
    assert both.sst.shape == (2, 4, 256, 512)
    first = both.sst.isel(time=0, y=0, x=0).values
    assert first[1] == pytest.approx(first[0] + 1)


def test_open_mfdataset_from_another_directory(lake: zarrlake.Repo, tmp_path: Path) -> None:
    # xarray makes each string an absolute path of the working directory: the URL survives
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    here = os.getcwd()
    os.chdir(elsewhere)
    try:
        urls = [version_url(lake, "v1", "ocean"), version_url(lake, "v1", "ocean")]
        both = xr.open_mfdataset(urls, engine="zarrlake", combine="nested", concat_dim="n")
    finally:
        os.chdir(here)
    assert both.attrs["version"] == 1


# -- version URLs everywhere a lake is named ---------------------------------------------------


def test_a_version_url_names_the_version(lake: zarrlake.Repo) -> None:
    url = version_url(lake, "v1", "ocean")
    assert url.startswith("zarrlake+file:///")
    assert url.endswith("#ref=v1&group=ocean")
    by_engine = xr.open_dataset(url)  # no engine=: the URL is recognised
    by_function = zarrlake.open_dataset(url)
    assert by_engine.attrs["version"] == by_function.attrs["version"] == 1
    assert by_function.encoding["zarrlake"].commit == lake.resolve("v1")


def test_a_url_and_an_argument_must_agree(lake: zarrlake.Repo) -> None:
    url = version_url(lake, "v1", "ocean")
    assert xr.open_dataset(url, engine="zarrlake", ref="v1").attrs["version"] == 1
    with pytest.raises(InvalidInputError, match="names ref 'v1' and ref= says 'main'"):
        xr.open_dataset(url, engine="zarrlake", ref="main")
    with pytest.raises(InvalidInputError, match="drop catalog= and name="):
        xr.open_dataset(url, engine="zarrlake", name="default")
    with pytest.raises(InvalidInputError, match="drop ref=, branch="):
        zarrlake.open_dataset(version_url(lake, "v1"), branch="main", group="ocean")


def test_unknown_things_are_clear_errors(lake: zarrlake.Repo, tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match="no group 'land'"):
        xr.open_dataset(tmp_path / "lake", engine="zarrlake", group="land")
    with pytest.raises(NotFoundError):
        xr.open_dataset(tmp_path / "lake", engine="zarrlake", ref="nope", group="ocean")
    with pytest.raises(NotFoundError, match="no zarrlake repo"):
        xr.open_dataset(tmp_path / "nowhere", engine="zarrlake")
    with pytest.raises(InvalidInputError, match="does not take consolidated"):
        xr.open_dataset(tmp_path / "lake", engine="zarrlake", group="ocean", consolidated=True)


@pytest.fixture
def team(make_repo: Callable[..., zarrlake.Repo]) -> zarrlake.Repo:
    repo = make_repo()
    build(repo)
    return repo


def test_catalog_and_name_for_team_setups(team: zarrlake.Repo) -> None:
    cat = team.config.catalog
    by_name = xr.open_dataset(team.name, engine="zarrlake", catalog=cat, ref="v1", group="ocean")
    by_kwarg = xr.open_dataset(None, engine="zarrlake", catalog=cat, name=team.name, group="ocean")
    assert (by_name.attrs["version"], by_kwarg.attrs["version"]) == (1, 2)
    url = version_url(team, "v1", "ocean")
    assert url.startswith(("zarrlake+sqlite:////", "zarrlake+postgresql://"))
    assert f"repo={team.name}" in url
    assert xr.open_dataset(url, engine="zarrlake").attrs["version"] == 1
    with pytest.raises(InvalidInputError, match="name the repo once"):
        xr.open_dataset("a", engine="zarrlake", catalog=cat, name="b")
