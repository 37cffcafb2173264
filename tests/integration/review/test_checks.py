"""Checks gate commits and merges inside the commit protocol: a failure changes nothing and
says which check failed on which chunks; passed checks are recorded on the commit."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import zarr

import zarrlake
from tests.integration.review._lake import install_checks, with_temp, write
from zarrlake import checks

S = (slice(0, 4), slice(0, 4))  # chunk (0, 0)
T = (slice(4, 8), slice(4, 8))  # chunk (1, 1)


@pytest.fixture
def custom_checks(tmp_path: Path) -> Iterator[None]:
    yield from install_checks(tmp_path / "site")


def test_nan_in_a_changed_chunk_refuses_the_commit_and_changes_nothing(
    repo: zarrlake.Repo,
) -> None:
    head = with_temp(repo)
    repo.add_check("no-nan", checks.no_nan("temp"))
    s = write(repo, S, np.nan)
    with pytest.raises(zarrlake.CheckFailedError) as err:
        s.commit("nan")
    assert [(f.name, f.chunks) for f in err.value.failures] == [("no-nan", {"temp": ((0, 0),)})]
    assert "no-nan: NaN in 1 changed chunk (temp chunks (0, 0))" in str(err.value)
    assert repo.branches()["main"] == head
    # the session stays open: fixing the data lets it commit
    zarr.open_array(s.store, path="temp")[S] = 2.0
    fixed = s.commit("fixed")
    assert repo.branches()["main"] == fixed


def test_passed_checks_are_recorded_on_the_commit_and_in_the_log(repo: zarrlake.Repo) -> None:
    with_temp(repo)
    repo.add_check("no-nan", checks.no_nan("temp"))
    repo.add_check("range", checks.value_range("temp", min=0, max=10))
    write(repo, S, 5.0).commit("five")
    assert repo.log()[0].checks == {
        "no-nan": {"passed": True, "message": "no NaN in the changed chunks"},
        "range": {"passed": True, "message": "values within [0, 10]"},
    }


def test_every_failed_check_is_listed_with_its_chunks(repo: zarrlake.Repo) -> None:
    with_temp(repo)
    repo.add_check("no-nan", checks.no_nan("temp"))
    repo.add_check("range", checks.value_range("temp", min=0, max=10))
    s = write(repo, S, np.nan)
    zarr.open_array(s.store, path="temp")[T] = 20.0
    with pytest.raises(zarrlake.CheckFailedError) as err:
        s.commit("bad")
    assert {f.name: f.chunks for f in err.value.failures} == {
        "no-nan": {"temp": ((0, 0),)},
        "range": {"temp": ((1, 1),)},
    }


def test_required_attributes_refuse_an_array_without_them(repo: zarrlake.Repo) -> None:
    with_temp(repo)
    repo.add_check("cf", checks.required_attributes("units", "standard_name"))
    s = repo.writable_session()
    zarr.open_group(s.store, mode="a").create_array("wind", shape=(4,), dtype="f4")
    with pytest.raises(zarrlake.CheckFailedError, match="wind lacks units, standard_name"):
        s.commit("wind")


def test_frozen_schema_refuses_a_new_dtype_but_allows_growing(repo: zarrlake.Repo) -> None:
    with_temp(repo)
    repo.add_check("frozen", checks.frozen_schema("temp"))
    s = repo.writable_session()
    zarr.open_array(s.store, path="temp").resize((12, 8))
    s.commit("grow")
    s = repo.writable_session()
    zarr.open_group(s.store, mode="a").create_array(
        "temp", shape=(12, 8), chunks=(4, 4), dtype="f8", overwrite=True
    )
    with pytest.raises(zarrlake.CheckFailedError, match="temp changed data_type"):
        s.commit("retype")


def test_chunk_count_limit(repo: zarrlake.Repo) -> None:
    with_temp(repo)
    repo.add_check("small", checks.max_chunks(1, arrays=("temp",)))
    write(repo, S, 3.0).commit("one chunk")
    with pytest.raises(zarrlake.CheckFailedError, match=r"more than 1 changed chunks \(temp: 4\)"):
        write(repo, (slice(None), slice(None)), 4.0).commit("four chunks")


def test_checks_run_only_on_their_branches_and_events(repo: zarrlake.Repo) -> None:
    with_temp(repo)
    repo.create_branch("dev")
    repo.add_check("no-nan", checks.no_nan(), on="commit", branches=("main",))
    write(repo, S, np.nan, branch="dev").commit("nan on dev")  # not checked
    assert repo.log("dev")[0].checks == {}


def test_a_merge_runs_the_merge_checks_and_records_them_on_a_merge_commit(
    repo: zarrlake.Repo,
) -> None:
    with_temp(repo)
    repo.create_branch("dev")
    repo.add_check("no-nan", checks.no_nan("temp"), on="merge")
    write(repo, S, np.nan, branch="dev").commit("nan on dev")
    head = repo.branches()["main"]
    with pytest.raises(zarrlake.CheckFailedError, match="refused the merge"):
        repo.merge("dev", "main")
    assert repo.branches()["main"] == head
    write(repo, S, 7.0, branch="dev").commit("fixed on dev")
    merged = repo.merge("dev", "main")  # would be a fast-forward without checks
    info = repo.commit_info(merged)
    assert len(info.parents) == 2
    assert info.checks["no-nan"]["passed"] is True


def test_custom_check_by_entry_point_sees_only_changed_chunks(
    repo: zarrlake.Repo, custom_checks: None
) -> None:
    import zl_test_checks  # type: ignore[import-not-found]

    with_temp(repo)
    repo.add_check("small", "small_values")
    write(repo, T, 50.0).commit("fifty")
    assert zl_test_checks.SEEN == [("temp", (1, 1))]
    repo.add_check("tiny", checks.custom("small_values", limit=10))
    with pytest.raises(zarrlake.CheckFailedError) as err:
        write(repo, S, 60.0).commit("sixty")
    assert [(f.name, f.message, f.chunks) for f in err.value.failures] == [
        ("tiny", "too big", {"temp": ((0, 0),)})
    ]


def test_a_custom_check_saying_no_raising_or_hanging_fails(
    repo: zarrlake.Repo, custom_checks: None
) -> None:
    with_temp(repo)
    repo.add_check("steward", "says_no")
    repo.add_check("broken", "broken")
    repo.add_check("slow", checks.custom("hangs", seconds=30), timeout=0.3)
    head = repo.branches()["main"]
    with pytest.raises(zarrlake.CheckFailedError) as err:
        write(repo, S, 2.0).commit("two")
    assert {f.name: f.message for f in err.value.failures} == {
        "broken": "the check raised RuntimeError: boom in the check",
        "slow": "the check did not finish within 0.3 s",
        "steward": "the data steward says no",
    }
    assert repo.branches()["main"] == head


def test_unknown_entry_point_is_refused_when_added(repo: zarrlake.Repo) -> None:
    with pytest.raises(zarrlake.InvalidInputError, match="no check 'nope' is registered"):
        repo.add_check("x", "nope")
    assert repo.checks() == []


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"on": ("commit", "push")}, "on= must name one or more of commit, merge"),
        ({"on": ()}, "on= must name one or more"),
        ({"branches": ()}, "branches= must name at least one branch"),
        ({"timeout": 0}, "timeout must be seconds"),
    ],
)
def test_bad_check_options_are_refused(
    repo: zarrlake.Repo, kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(zarrlake.InvalidInputError, match=message):
        repo.add_check("x", checks.no_nan(), **kwargs)  # type: ignore[arg-type]
    assert repo.checks() == []


def test_bad_builtin_parameters_are_refused() -> None:
    with pytest.raises(zarrlake.InvalidInputError, match=r"min \(5\) is greater than max \(1\)"):
        checks.value_range("t", min=5, max=1)
    with pytest.raises(zarrlake.InvalidInputError, match="limit must be an int"):
        checks.max_chunks(-1)
    with pytest.raises(zarrlake.InvalidInputError, match="needs at least one attribute"):
        checks.required_attributes()


def test_add_list_and_remove_checks(repo: zarrlake.Repo) -> None:
    repo.add_check("no-nan", checks.no_nan("temp"), branches=("main", "release/*"))
    with pytest.raises(zarrlake.AlreadyExistsError):
        repo.add_check("no-nan", checks.no_nan())
    repo.add_check("no-nan", checks.no_nan("t2"), replace=True)
    assert [(c.name, c.describe(), c.branches) for c in repo.checks()] == [
        ("no-nan", "no NaN in changed chunks of t2", ("main",))
    ]
    repo.remove_check("no-nan")
    assert repo.checks() == []
    with pytest.raises(zarrlake.NotFoundError, match="no check named 'no-nan'"):
        repo.remove_check("no-nan")
