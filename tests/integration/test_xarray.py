"""xarray on zarrlake: round trips on every setup, provenance, the accessor and its errors."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr
import zarr

import zarrlake
from tests.integration._xr import SETUPS, make_lake, ramp, sample
from zarrlake.xarray import Provenance


@pytest.fixture(params=SETUPS)
def lake(request: pytest.FixtureRequest, tmp_path: Path) -> zarrlake.Repo:
    """A fresh repo on each setup: SQLite or PostgreSQL catalog, local or S3 storage."""
    return make_lake(request.param, request, tmp_path)


@pytest.fixture
def repo(tmp_path: Path) -> zarrlake.Repo:
    """The embedded default, for behaviour that does not depend on the setup."""
    return zarrlake.Repo.create(tmp_path / "lake")


# -- round trips on every setup --------------------------------------------------------------


def test_round_trip_is_identical(lake: zarrlake.Repo) -> None:
    ds = sample()
    c = ds.lake.commit("sample", repo=lake)
    out = zarrlake.open_dataset(lake, c).compute()
    xr.testing.assert_identical(out, ds)
    assert np.isnan(out.temp.values[3, 2])
    assert out.observed.dtype == np.dtype("datetime64[ns]")


def test_round_trip_keeps_encodings(lake: zarrlake.Repo) -> None:
    temp = np.round(np.random.default_rng(1).uniform(250, 300, (24, 6)), 1)
    temp[5, 1] = np.nan
    ds = xr.Dataset(
        {"temp": (("time", "x"), temp)},
        coords={"time": pd.date_range("2020-01-01", periods=24, freq="h")},
    )
    encoding = {
        "temp": {
            "dtype": "int16",
            "scale_factor": 0.1,
            "add_offset": 273.0,
            "_FillValue": -9999,
            "chunks": (12, 3),
        },
        "time": {"units": "hours since 2020-01-01", "dtype": "int32"},
    }
    c = ds.lake.commit("packed", repo=lake, encoding=encoding)
    out = zarrlake.open_dataset(lake, c)
    np.testing.assert_allclose(out.temp.values, temp, atol=1e-9)  # NaN where NaN
    enc = out.temp.encoding
    assert (enc["dtype"], enc["scale_factor"], enc["add_offset"], enc["_FillValue"]) == (
        np.dtype("int16"),
        0.1,
        273.0,
        -9999,
    )
    assert enc["chunks"] == (12, 3)
    assert out.time.encoding["units"] == "hours since 2020-01-01"
    assert out.time.encoding["dtype"] == np.dtype("int32")


def test_groups_round_trip_independently(lake: zarrlake.Repo) -> None:
    a, b = sample(), ramp(10)
    a.lake.commit("a", repo=lake, group="obs/a")
    c2 = b.lake.commit("b", repo=lake, group="model/b")
    xr.testing.assert_identical(zarrlake.open_dataset(lake, c2, group="obs/a").compute(), a)
    xr.testing.assert_identical(zarrlake.open_dataset(lake, c2, group="model/b").compute(), b)
    root = zarr.open_group(lake.readonly_session(commit=c2).store, mode="r")
    assert sorted(root.group_keys()) == ["model", "obs"]


def test_checkout_by_commit_tag_and_time_returns_the_exact_earlier_data(
    lake: zarrlake.Repo,
) -> None:
    v1 = ramp(20)
    c1 = v1.lake.commit("v1", repo=lake, encoding={"v": {"chunks": (5, 4)}})
    lake.create_tag("v1", c1)
    opened = zarrlake.open_dataset(lake)
    c2 = opened.assign(v=opened.v * -1).lake.commit("v2", mode="w")
    t1, t2 = (lake.commit_info(c).created_at for c in (c1, c2))
    assert t1 < t2
    # Commit times are shown rounded to the microsecond; ask about moments clear of them.
    between, after = t1 + (t2 - t1) / 2, t2 + timedelta(seconds=1)
    latest = zarrlake.open_dataset(lake)
    xr.testing.assert_identical(latest.compute(), ramp(20).assign(v=-ramp(20).v))
    for ref in (c1, "v1", between):
        back = latest.lake.checkout(ref)
        xr.testing.assert_identical(back.compute(), v1)
        assert back.lake.provenance.commit == c1
    assert latest.lake.checkout(after).lake.provenance.commit == c2


def test_region_writes_from_jobs_in_one_session_then_one_commit(lake: zarrlake.Repo) -> None:
    template = xr.zeros_like(ramp(40))
    template.lake.commit("template", repo=lake, encoding={"v": {"chunks": (10, 4)}})
    before = len(lake.log())
    s = lake.writable_session()
    full = ramp(40, offset=1000.0)
    for start in (20, 0, 30, 10):  # each job joins the session by id
        job = lake.session(s.id or "")
        part = full.isel(t=slice(start, start + 10)).drop_vars("t")
        assert part.lake.commit(session=job, region={"t": slice(start, start + 10)}) is None
    assert lake.resolve("main") == lake.log()[0].id  # nothing committed yet
    c = s.commit("four regions")
    assert len(lake.log()) == before + 1
    xr.testing.assert_identical(zarrlake.open_dataset(lake, c).compute(), full)


def test_append_extends_and_the_earlier_commit_keeps_its_data(lake: zarrlake.Repo) -> None:
    first = ramp(20)
    c1 = first.lake.commit("first", repo=lake, encoding={"v": {"chunks": (10, 4)}})
    more = ramp(30).isel(t=slice(20, 30))
    c2 = more.lake.commit("more", repo=lake, append_dim="t")
    xr.testing.assert_identical(zarrlake.open_dataset(lake, c2).compute(), ramp(30))
    xr.testing.assert_identical(zarrlake.open_dataset(lake, c1).compute(), first)


# -- provenance ------------------------------------------------------------------------------


def test_open_dataset_records_provenance(repo: zarrlake.Repo) -> None:
    c = ramp(4).lake.commit("x", repo=repo, group="g")
    ds = zarrlake.open_dataset(repo, group="g")
    assert ds.lake.provenance == Provenance(repo.config, "g", c, "main", None)
    by_commit = zarrlake.open_dataset(repo, c, group="g").lake.provenance
    assert (by_commit.commit, by_commit.branch) == (c, None)


@pytest.mark.parametrize(
    "derive",
    [
        lambda d: d.isel(t=slice(0, 2)),
        lambda d: d.sel(t=[0, 1]),
        lambda d: d[["v"]],
        lambda d: d.copy(deep=True),
        lambda d: d.compute(),
        lambda d: d.chunk(t=2),
        lambda d: d + 1,
        lambda d: d.assign(w=d.v * 2),
    ],
    ids=["isel", "sel", "subset", "deepcopy", "compute", "chunk", "arithmetic", "assign"],
)
def test_provenance_travels_to_derived_datasets(
    repo: zarrlake.Repo, derive: Callable[[xr.Dataset], xr.Dataset]
) -> None:
    c = ramp(4).lake.commit("x", repo=repo, group="g")
    derived = derive(zarrlake.open_dataset(repo, group="g"))
    assert derived.lake.provenance.commit == c
    assert derived.lake.provenance.group == "g"


def test_derived_dataset_commits_to_its_group_and_branch(repo: zarrlake.Repo) -> None:
    ramp(4).lake.commit("x", repo=repo, group="g")
    repo.create_branch("dev")
    ds = zarrlake.open_dataset(repo, branch="dev", group="g")
    c = ds.assign(v=ds.v + 100).lake.commit("+100", mode="w")
    assert repo.resolve("dev") == c
    assert repo.log("main")[0].message == "x"
    got = zarrlake.open_dataset(repo, "dev", group="g").v.values
    np.testing.assert_array_equal(got, ramp(4).v.values + 100)


def test_branch_puts_the_dataset_on_a_new_branch(repo: zarrlake.Repo) -> None:
    c1 = ramp(4).lake.commit("x", repo=repo)
    ds = zarrlake.open_dataset(repo).lake.branch("exp")
    assert repo.resolve("exp") == c1
    assert ds.lake.provenance.branch == "exp"
    c2 = (ds * 2).lake.commit("doubled", mode="w")
    assert (repo.resolve("exp"), repo.resolve("main")) == (c2, c1)


def test_log_is_the_history_of_the_data(repo: zarrlake.Repo) -> None:
    c1 = ramp(4).lake.commit("one", repo=repo)
    ds = zarrlake.open_dataset(repo)
    (ds + 1).lake.commit("two", mode="w")
    assert [e.message for e in ds.lake.log()] == ["one", "Repository initialized"]
    assert ds.lake.log()[0].id == c1
    assert [e.message for e in ds.lake.log("main", limit=1)] == ["two"]


def test_open_dataset_through_a_writable_session_sees_its_staged_writes(
    repo: zarrlake.Repo,
) -> None:
    s = repo.writable_session()
    assert ramp(4).lake.commit(session=s) is None
    ds = zarrlake.open_dataset(repo, session=s)
    xr.testing.assert_identical(ds.compute(), ramp(4))
    assert ds.lake.provenance.session == s.id
    with pytest.raises(zarrlake.NotFoundError, match="no group '/'"):
        zarrlake.open_dataset(repo)  # main has no root group yet


def test_diff_names_the_chunks_and_attributes_that_changed(repo: zarrlake.Repo) -> None:
    ramp(20).lake.commit("v1", repo=repo, group="g", encoding={"v": {"chunks": (5, 4)}})
    v1 = zarrlake.open_dataset(repo, group="g")
    s = repo.writable_session()
    ramp(20, offset=-1.0).isel(t=slice(0, 5)).lake.commit(session=s, group="g", region="auto")
    c2 = s.commit("first rows")
    v2 = zarrlake.open_dataset(repo, group="g")
    d = v1.lake.diff(v2)
    assert (d.before, d.after) == (v1.lake.provenance.commit, c2)
    assert [(n.path, n.status) for n in d] == [("g/v", "modified")]
    assert d["g/v"].chunks_changed == {(0, 0)}
    assert v1.lake.diff("main").nodes == d.nodes
    assert not v2.lake.diff(c2)


def test_diff_is_restricted_to_the_datasets_group(repo: zarrlake.Repo) -> None:
    ramp(4).lake.commit("a", repo=repo, group="a")
    a = zarrlake.open_dataset(repo, group="a")
    ramp(8).lake.commit("b", repo=repo, group="b")
    assert not a.lake.diff("main")
    assert "b" in repo.diff(a.lake.provenance.commit, "main")  # the repo's diff has it


def test_status_shows_what_the_session_staged_in_the_group(repo: zarrlake.Repo) -> None:
    ramp(20).lake.commit("v1", repo=repo, encoding={"v": {"chunks": (5, 4)}})
    s = repo.writable_session()
    ds = zarrlake.open_dataset(repo, session=s)
    assert not ds.lake.status()
    ramp(20, offset=1.0).isel(t=slice(5, 15)).lake.commit(session=s, region="auto")
    st = ds.lake.status()
    assert [(n.path, n.status) for n in st] == [("v", "modified")]
    assert st["v"].chunks_changed == {(1, 0), (2, 0)}


def test_status_needs_a_dataset_read_through_a_writable_session(repo: zarrlake.Repo) -> None:
    ramp(4).lake.commit("x", repo=repo)
    with pytest.raises(zarrlake.InvalidInputError, match="writable_session"):
        zarrlake.open_dataset(repo).lake.status()


def test_import_zarrlake_does_not_import_xarray_and_open_dataset_enables_the_accessor() -> None:
    code = (
        "import sys, zarrlake\n"
        "assert 'xarray' not in sys.modules, 'import zarrlake imported xarray'\n"
        "assert 'dask' not in sys.modules, 'import zarrlake imported dask'\n"
        "zarrlake.open_dataset\n"
        "import xarray\n"
        "assert hasattr(xarray.Dataset(), 'lake')\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# -- errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        lambda ds: ds.lake.commit("m"),
        lambda ds: ds.lake.checkout("main"),
        lambda ds: ds.lake.log(),
        lambda ds: ds.lake.branch("b"),
    ],
    ids=["commit", "checkout", "log", "branch"],
)
def test_dataset_not_from_a_lake_is_told_how_to_give_a_repo(
    call: Callable[[xr.Dataset], object],
) -> None:
    with pytest.raises(zarrlake.InvalidInputError, match=r"repo=.*zarrlake\.Repo\.open") as exc:
        call(ramp(4))
    assert "zarrlake.open_dataset(repo" in str(exc.value)
    assert not isinstance(exc.value, AttributeError)


def test_commit_without_a_message_is_refused(repo: zarrlake.Repo) -> None:
    with pytest.raises(zarrlake.InvalidInputError, match="message"):
        ramp(4).lake.commit(repo=repo)
    assert repo.sessions() == []


def test_existing_group_is_not_replaced_without_mode_w(repo: zarrlake.Repo) -> None:
    c1 = ramp(4).lake.commit("x", repo=repo)
    with pytest.raises(zarrlake.AlreadyExistsError, match="mode='w'"):
        ramp(4, offset=9.0).lake.commit("again", repo=repo)
    assert repo.resolve("main") == c1
    assert repo.sessions() == []


def test_region_not_on_chunk_boundaries_is_refused_and_stages_nothing(
    repo: zarrlake.Repo,
) -> None:
    template = xr.zeros_like(ramp(40))
    c1 = template.lake.commit("template", repo=repo, encoding={"v": {"chunks": (10, 4)}})
    s = repo.writable_session()
    part = ramp(40, offset=5.0).isel(t=slice(5, 15)).drop_vars("t")
    with pytest.raises(zarrlake.UnalignedWriteError) as exc:
        part.lake.commit(session=s, region={"t": slice(5, 15)})
    assert "at 5, 15" in str(exc.value)
    assert "every 10: 0, 10, 20, 30, 40" in str(exc.value)
    assert exc.value.kind == "unaligned_write"
    assert not s.has_changes
    assert repo.resolve("main") == c1


def test_region_write_into_a_missing_group_is_refused(repo: zarrlake.Repo) -> None:
    ramp(10).lake.commit("x", repo=repo, group="a")
    s = repo.writable_session()
    with pytest.raises(zarrlake.InvalidInputError, match="no group 'b'"):
        ramp(10).lake.commit(session=s, group="b", region="auto")
    assert not s.has_changes


def test_dask_append_is_checked_at_its_place_in_the_array(repo: zarrlake.Repo) -> None:
    c1 = ramp(25).lake.commit("25 rows", repo=repo, encoding={"v": {"chunks": (10, 4)}})
    more = ramp(45).isel(t=slice(25, 45))
    with pytest.raises(zarrlake.UnalignedWriteError, match="at 35,"):
        more.chunk(t=10).lake.commit("rows 25-45", repo=repo, append_dim="t")
    assert repo.resolve("main") == c1
    c2 = more.chunk(t=(5, 10, 5)).lake.commit("rows 25-45", repo=repo, append_dim="t")
    xr.testing.assert_identical(zarrlake.open_dataset(repo, c2).compute(), ramp(45))


def test_sharded_arrays_align_to_shards(repo: zarrlake.Repo) -> None:
    enc = {"v": {"chunks": (5, 4), "shards": (10, 4)}}
    with pytest.raises(zarrlake.UnalignedWriteError, match="every 10"):
        ramp(40).chunk(t=5).lake.commit("by chunk", repo=repo, encoding=enc)
    c = ramp(40).chunk(t=20).lake.commit("by shard", repo=repo, encoding=enc)
    out = zarrlake.open_dataset(repo, c)
    assert out.v.encoding["shards"] == (10, 4)
    xr.testing.assert_identical(out.compute(), ramp(40))


def test_write_refused_by_xarray_commits_nothing_and_closes_its_session(
    repo: zarrlake.Repo,
) -> None:
    c1 = xr.zeros_like(ramp(10)).lake.commit("template", repo=repo)
    with pytest.raises(zarrlake.InvalidInputError, match="region"):
        ramp(10).lake.commit("bad", repo=repo, region={"nope": slice(0, 1)})
    assert repo.resolve("main") == c1
    assert repo.sessions() == []


def test_session_and_message_together_are_refused(repo: zarrlake.Repo) -> None:
    s = repo.writable_session()
    with pytest.raises(zarrlake.InvalidInputError, match=r"session\.commit"):
        ramp(4).lake.commit("m", session=s)
    assert not s.has_changes


def test_after_a_commit_the_dataset_points_at_the_new_commit(repo: zarrlake.Repo) -> None:
    """So ``diff("main~1")`` right after a commit shows that commit's chunks."""
    ramp(20).lake.commit("v1", repo=repo, group="g", encoding={"v": {"chunks": (5, 4)}})
    ds = zarrlake.open_dataset(repo, group="g")
    calibrated = ds.assign(v=ds.v + 1)
    c2 = calibrated.lake.commit("calibrate", mode="w")
    assert calibrated.lake.provenance == Provenance(repo.config, "g", c2, "main", None)
    d = calibrated.lake.diff("main~1")
    assert len(d["g/v"].chunks_changed) == 4  # 20 rows in chunks of 5: every chunk changed
    assert ds.lake.provenance.commit != c2  # the Dataset it was derived from is unchanged


def test_a_new_dataset_points_at_the_commit_that_stored_it(repo: zarrlake.Repo) -> None:
    ds = ramp(4)
    c = ds.lake.commit("first", repo=repo, group="g")
    assert ds.lake.provenance == Provenance(repo.config, "g", c, "main", None)


def test_the_accessor_repr_names_repo_ref_commit_and_group(repo: zarrlake.Repo) -> None:
    c = ramp(4).lake.commit("first", repo=repo, group="g")
    text = repr(zarrlake.open_dataset(repo, group="g").lake)
    assert text.startswith("<ds.lake: repo 'default' at sqlite:///")
    assert "\n  ref:    main\n" in text
    assert f"\n  commit: {c[:12]}\n" in text
    assert text.endswith("\n  group:  /g>")
    assert " object at 0x" not in text
    assert repr(ramp(4).lake).startswith("<ds.lake: not from a lake;")
