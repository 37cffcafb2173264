"""``zarrlake checks``, ``protect``, ``pr`` and ``watch`` as a user types them."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import zarr

from tests.integration.cli.conftest import Lake, run


def _seed(lake: Lake) -> None:
    """``temp`` on main; ``dev`` writes NaN into chunk (0, 0)."""
    repo = lake.open()
    s = repo.writable_session()
    a = zarr.open_group(s.store, mode="a").create_array(
        "temp", shape=(8, 8), chunks=(4, 4), dtype="f4"
    )
    a[:] = 1.0
    s.commit("create temp")
    repo.create_branch("dev")
    s = repo.writable_session("dev")
    zarr.open_array(s.store, path="temp")[0:4, 0:4] = np.nan
    s.commit("nan on dev")


def test_checks_add_list_remove(lake: Lake) -> None:
    p = run("checks", "add", *lake.loc, "no-nan", "no-nan", "--arrays", "temp", "--on", "merge")
    assert p.returncode == 0, p.stderr
    assert p.stdout == "check no-nan: no NaN in changed chunks of temp (on merge to main)\n"
    listed = json.loads(run("checks", "list", *lake.loc, "--json").stdout)
    assert [(c["name"], c["on"], c["branches"]) for c in listed["checks"]] == [
        ("no-nan", ["merge"], ["main"])
    ]
    assert run("checks", "remove", *lake.loc, "no-nan").returncode == 0
    assert json.loads(run("checks", "list", *lake.loc, "--json").stdout) == {"checks": []}


def test_unknown_check_kind_and_entry_point_are_refused(lake: Lake) -> None:
    p = run("checks", "add", *lake.loc, "x", "bogus")
    assert p.returncode == 2
    assert "unknown check kind 'bogus'; kinds: no-nan, value-range" in p.stderr
    p = run("checks", "add", *lake.loc, "x", "custom", "--entry-point", "nope")
    assert p.returncode == 2
    assert "no check 'nope' is registered in the 'zarrlake.checks' entry point group" in p.stderr
    assert lake.open().checks() == []


def test_protected_branch_pull_request_flow(lake: Lake) -> None:
    _seed(lake)
    assert run("checks", "add", *lake.loc, "no-nan", "no-nan").returncode == 0
    p = run("protect", *lake.loc, "main", "--require-checks", "no-nan", "--approvals", "1")
    assert p.returncode == 0, p.stderr
    opened = json.loads(
        run("pr", "open", *lake.loc, "dev", "--title", "Fix", "--author", "ana", "--json").stdout
    )
    assert (opened["number"], opened["state"]) == (1, "open")
    p = run("pr", "approve", *lake.loc, "1", "--by", "ana")
    assert p.returncode == 4
    assert "'ana' opened pull request #1 and cannot approve it" in p.stderr
    assert run("pr", "approve", *lake.loc, "#1", "--by", "bo").returncode == 0
    shown = json.loads(run("pr", "show", *lake.loc, "1", "--json").stdout)
    assert shown["approvals"] == ["bo"]
    assert shown["checks"]["no-nan"]["passed"] is False
    p = run("pr", "merge", *lake.loc, "1", "--json")
    assert p.returncode == 4
    assert json.loads(p.stderr)["error"]["kind"] == "check_failed"
    repo = lake.open()
    s = repo.writable_session("dev")
    zarr.open_array(s.store, path="temp")[0:4, 0:4] = 2.0
    s.commit("fix on dev")
    assert run("pr", "approve", *lake.loc, "1", "--by", "bo").returncode == 0
    merged = json.loads(run("pr", "merge", *lake.loc, "1", "--author", "bo", "--json").stdout)
    assert merged["state"] == "merged"
    assert repo.commit_info("main").pull_request == 1
    listed = run("pr", "list", *lake.loc, "--state", "merged")
    assert listed.stdout == "#1\tmerged\tdev -> main\tana\tFix\n"


def test_a_direct_commit_to_a_protected_branch_names_the_pull_request(lake: Lake) -> None:
    _seed(lake)
    assert run("protect", *lake.loc, "main").returncode == 0
    p = run("merge", *lake.loc, "dev")
    assert p.returncode == 4
    assert "branch 'main' is protected" in p.stderr
    assert "zarrlake pr open" in p.stderr
    assert json.loads(run("protect", *lake.loc, "--json").stdout)["protected"][0]["branch"] == (
        "main"
    )


def test_watch_prints_commits_as_they_land(lake: Lake) -> None:
    _seed(lake)
    head = lake.open().branches()["dev"]
    watcher = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "zarrlake.cli",
            "watch",
            *lake.loc,
            "--branch",
            "dev",
            "--since",
            head,
            "--json",
            "--count",
            "1",
            "--interval",
            "0.1",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert watcher.stdout is not None
        repo = lake.open()
        s = repo.writable_session("dev")
        zarr.open_array(s.store, path="temp")[4:8, :] = 3.0
        landed = s.commit("two chunks")
        line = watcher.stdout.readline()
        assert watcher.wait(timeout=60) == 0, watcher.stderr.read() if watcher.stderr else ""
    finally:
        if watcher.poll() is None:
            watcher.kill()
    doc = json.loads(line)
    assert (doc["commit"], doc["branch"], doc["message"]) == (landed, "dev", "two chunks")
    assert doc["arrays"] == {"temp": 2}


def test_watch_once_since_a_ref_prints_text(lake: Lake) -> None:
    _seed(lake)
    p = run("watch", *lake.loc, "--branch", "dev", "--since", "dev~1", "--once")
    assert p.returncode == 0, p.stderr
    assert p.stdout.endswith(" nan on dev [temp (1 chunks)]\n")
