"""``zarrlake log`` and ``show`` say which checks judged a commit and which pull request it
merged."""

from __future__ import annotations

import json

import zarr

from tests.integration.cli.conftest import Lake, run


def _merged_pull(lake: Lake) -> str:
    """``temp`` on main, protected by ``no-nan``; ``dev`` writes 2.0 and pull request #1
    merges it. The merge's id."""
    repo = lake.open()
    s = repo.writable_session()
    zarr.open_group(s.store, mode="a").create_array(
        "temp", shape=(8, 8), chunks=(4, 4), dtype="f4"
    )[:] = 1.0
    s.commit("create temp")
    repo.create_branch("dev")
    s = repo.writable_session("dev")
    zarr.open_array(s.store, path="temp")[0:4, 0:4] = 2.0
    s.commit("twos on dev")
    assert run("checks", "add", *lake.loc, "no-nan", "no-nan").returncode == 0
    assert run("protect", *lake.loc, "main", "--require-checks", "no-nan").returncode == 0
    assert run("pr", "open", *lake.loc, "dev", "--title", "Twos").returncode == 0
    p = run("pr", "merge", *lake.loc, "1", "--author", "bo")
    assert p.returncode == 0, p.stderr
    return repo.branches()["main"]


def test_log_shows_the_pull_request_and_its_checks(lake: Lake) -> None:
    merge = _merged_pull(lake)
    lines = run("log", *lake.loc).stdout.splitlines()
    assert lines[0].startswith(merge)
    assert lines[0].endswith("(merge)  [pull request #1, checks: 1 passed]")
    assert lines[1].endswith("\tcreate temp")  # the first commit: no checks ran
    graph = run("log", *lake.loc, "--graph").stdout.splitlines()
    assert graph[0].endswith("  [pull request #1, checks: 1 passed]")


def test_show_prints_the_checks_and_json_carries_them(lake: Lake) -> None:
    _merged_pull(lake)
    out = run("show", *lake.loc, "main").stdout
    assert "\npull request #1\nchecks: 1 passed\n" in out
    doc = json.loads(run("show", *lake.loc, "main", "--json").stdout)["commit"]
    assert doc["pull_request"] == 1
    assert doc["checks"]["no-nan"]["passed"] is True
    assert doc["checks"]["no-nan"]["message"] == "no NaN in the changed chunks"
    logged = json.loads(run("log", *lake.loc, "--json").stdout)["commits"]
    assert [(c["pull_request"], sorted(c["checks"])) for c in logged] == [
        (1, ["no-nan"]),
        (None, []),
        (None, []),
    ]
