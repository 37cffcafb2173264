"""Every command of ``zarrlake``: tables, --json shapes, exit codes."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import zarr

import zarrlake
from tests.integration.cli.conftest import Lake, run


def _write(
    repo: zarrlake.Repo, branch: str, region: tuple[slice, slice], value: float, msg: str
) -> str:
    s = repo.writable_session(branch)
    g = zarr.open_group(s.store, mode="a")
    if "temp" not in g:
        g.create_array("temp", shape=(80, 80), chunks=(20, 20), dtype="f4", fill_value=0)
    g["temp"][region] = np.random.default_rng(int(value)).random((20, 20)).astype("f4") + value  # type: ignore[index]
    return s.commit(msg, metadata={"value": value})


def _history(lake: Lake) -> tuple[zarrlake.Repo, str, str]:
    repo = lake.open()
    c1 = _write(repo, "main", (slice(0, 20), slice(0, 20)), 1.0, "first <b>write</b>")
    c2 = _write(repo, "main", (slice(20, 40), slice(0, 20)), 2.0, "second write")
    return repo, c1, c2


def test_log_show_and_their_json(lake: Lake) -> None:
    _, c1, c2 = _history(lake)
    p = lake.run("log")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert len(lines) == 3  # two commits and the repo's first
    assert lines[0].split("\t")[0] == c2
    assert lines[0].endswith("second write")
    doc = lake.json("log", "main", "-n", "2")
    assert doc["ref"] == "main"
    assert [c["id"] for c in doc["commits"]] == [c2, c1]
    assert set(doc["commits"][0]) == {
        "id",
        "parents",
        "author",
        "message",
        "metadata",
        "created_at",
        "checks",
        "pull_request",
    }
    assert doc["commits"][0]["parents"] == [c1]
    assert doc["commits"][1]["metadata"] == {"value": 1.0}
    show = lake.json("show", c2[:8])
    assert show["commit"]["id"] == c2
    assert show["diff"]["summary"]["chunks_added"] == 1
    assert show["diff"]["nodes"][0]["path"] == "temp"
    text = lake.run("show", c1, "--map").stdout
    assert f"commit {c1}" in text
    assert "first <b>write</b>" in text
    assert "  + /temp (array)  chunks +1" in text


def test_diff_counts_and_chunk_coordinates(lake: Lake) -> None:
    _, c1, c2 = _history(lake)
    doc = lake.json("diff", c1, c2, "--chunks")
    assert doc["before"] == c1
    assert doc["after"] == c2
    assert doc["summary"]["chunks_added"] == 1
    (node,) = doc["nodes"]
    assert node["chunks"] == {"added": [[1, 0]], "changed": [], "removed": []}
    assert set(doc["keys"]) == {"added", "changed", "removed"}
    p = lake.run("diff", c1, c2, "--chunks")
    assert p.stdout.splitlines()[-1] == "temp\tadded\t1,0"


def test_branch_and_tag_create_list_delete(lake: Lake) -> None:
    _, c1, c2 = _history(lake)
    assert lake.run("branch", "dev", c1).returncode == 0
    assert lake.run("tag", "v1", c1).returncode == 0
    branches = lake.json("branch")["branches"]
    assert [(b["name"], b["commit"]) for b in branches] == [("dev", c1), ("main", c2)]
    assert lake.json("tag")["tags"][0]["name"] == "v1"
    listing = lake.run("branch").stdout.splitlines()
    assert listing[0].startswith(f"dev\t{c1}\t")
    refused = lake.run("branch", "-d", "dev")
    assert refused.returncode == 5
    assert "refused without --yes" in refused.stderr
    assert "dev" in lake.open().branches()
    assert lake.run("branch", "-d", "dev", "--yes").returncode == 0
    assert lake.run("tag", "-d", "v1").returncode == 5
    assert lake.json("tag", "-d", "v1", "--yes") == {"action": "deleted", "tag": "v1", "commit": c1}
    assert "dev" not in lake.open().branches()
    assert not lake.open().tags()


def test_log_graph_draws_a_merge(lake: Lake) -> None:
    repo, c1, _ = _history(lake)
    assert lake.run("branch", "dev", c1).returncode == 0
    _write(repo, "dev", (slice(60, 80), slice(60, 80)), 3.0, "on dev")
    merged = lake.json("merge", "dev", "--into", "main")
    assert merged["result"] == "merge"
    graph = lake.run("log", "--graph").stdout.splitlines()
    assert graph[0].startswith("*  ")
    assert graph[0].endswith("Merge dev into main")
    assert graph[1] == "|\\"
    assert any(line.startswith("| *  ") and line.endswith("on dev") for line in graph)
    assert "|/" in graph
    assert graph[-1].endswith("Repository initialized")


def test_merge_conflict_exits_3_and_lists_the_conflicts(lake: Lake) -> None:
    repo, c1, _ = _history(lake)
    lake.run("branch", "dev", c1)
    _write(repo, "dev", (slice(20, 40), slice(0, 20)), 4.0, "dev writes the same chunk")
    p = lake.run("merge", "dev")
    assert p.returncode == 3
    assert p.stderr.startswith("zarrlake: cannot merge 'dev' into 'main'")
    assert "\n  - chunk conflict at temp chunk (1, 0)" in p.stderr
    p = lake.run("merge", "dev", "--json")
    assert p.returncode == 3
    err = json.loads(p.stderr)["error"]
    assert err["kind"] == "conflict"
    assert err["exit_code"] == 3
    assert err["conflicts"][0]["path"] == "temp"
    assert err["conflicts"][0]["chunk"] == [1, 0]
    solved = lake.json("merge", "dev", "--solver", "theirs")
    assert solved["result"] == "merge"
    assert solved["branch"] == "main"


def test_merge_dry_run_says_what_the_merge_would_do_and_writes_nothing(lake: Lake) -> None:
    repo, c1, _ = _history(lake)
    lake.run("branch", "dev", c1)
    _write(repo, "dev", (slice(20, 40), slice(0, 20)), 4.0, "dev writes the same chunk")
    before = repo.branches()["main"]
    p = lake.run("merge", "dev", "--dry-run")
    assert p.returncode == 3
    assert p.stdout.splitlines()[0] == "dry run: dev into main: refused, 1 conflict (solver 'fail')"
    assert "chunk conflict at /temp chunk (1, 0)" in p.stdout
    doc = json.loads(lake.run("merge", "dev", "--dry-run", "--json").stdout)
    assert doc["result"] == "merge"
    assert doc["refused"] is True
    assert [(c["path"], c["chunk"]) for c in doc["conflicts"]] == [("temp", [1, 0])]
    assert doc["changes"] is None
    ok = lake.json("merge", "dev", "--dry-run", "--solver", "theirs")
    assert ok["refused"] is False
    assert ok["changes"]["nodes"][0]["chunks_changed"] == 1  # chunk (1, 0) takes dev's bytes
    assert repo.branches()["main"] == before  # nothing was written


def test_sessions_show_an_expired_session_as_expired(lake: Lake) -> None:
    repo = lake.open()
    s = repo.writable_session(expires_in=timedelta(seconds=1))
    time.sleep(1.2)
    (row,) = [r for r in lake.json("sessions")["sessions"] if r["id"] == s.id]
    assert row["status"] == "expired"
    line = next(ln for ln in lake.run("sessions").stdout.splitlines() if s.id in ln)
    assert "expired" in line
    assert "open" not in line


def test_revert_and_a_conflicting_revert(lake: Lake) -> None:
    repo, c1, c2 = _history(lake)
    doc = lake.json("revert", c2)
    assert doc["reverted"] == c2
    assert doc["branch"] == "main"
    assert repo.diff(c1, "main").is_empty()
    _write(repo, "main", (slice(0, 20), slice(0, 20)), 5.0, "rewrite the first chunk")
    p = lake.run("revert", c1)
    assert p.returncode == 3, p.stderr


def test_reset_asks_and_moves_by_compare_and_swap(lake: Lake) -> None:
    repo, c1, c2 = _history(lake)
    assert lake.run("reset", "main", c1).returncode == 5
    assert repo.branches()["main"] == c2
    moved = lake.run("reset", "main", c1, "--expected", c1, "--yes")
    assert moved.returncode == 3  # main is at c2, not c1: the compare-and-swap fails
    assert f"zarrlake: branch 'main' is not at {c1[:10]} any more" in moved.stderr
    assert lake.json("reset", "main", c1, "--yes") == {
        "action": "reset",
        "branch": "main",
        "from": c2,
        "to": c1,
    }
    assert repo.branches()["main"] == c1


def test_sessions_lists_and_abandons(lake: Lake) -> None:
    repo = lake.open()
    s = repo.writable_session(author="alice")
    doc = lake.json("sessions")["sessions"]
    (row,) = [r for r in doc if r["id"] == s.id]
    assert row["branch"] == "main"
    assert row["author"] == "alice"
    assert row["status"] == "open"
    assert set(row) == {
        "id",
        "branch",
        "base_commit",
        "author",
        "isolation",
        "status",
        "created_at",
        "expires_at",
        "commit_id",
    }
    assert s.id in lake.run("sessions").stdout
    assert lake.run("sessions", "--abandon", s.id).returncode == 0
    assert s.id not in lake.run("sessions").stdout
    again = lake.run("sessions", "--abandon", s.id)
    assert again.returncode == 4  # a session error: neither input nor missing nor conflict
    assert again.stderr == (f"zarrlake: session {s.id} is abandoned: there is nothing to abandon\n")


def test_gc_and_expire_ask_unless_dry_run_and_stay_silent_off_a_tty(lake: Lake) -> None:
    _repo, c1, _ = _history(lake)
    lake.run("reset", "main", c1, "--yes")
    dry = lake.json("gc", "--dry-run", "--grace", "0")
    assert dry["report"] == "gc"
    assert dry["dry_run"] is True
    assert lake.run("gc", "--grace", "0").returncode == 5
    p = lake.run("gc", "--grace", "0", "--yes", "--json")
    assert p.returncode == 0
    assert p.stderr == ""
    gc = json.loads(p.stdout)
    assert gc["dry_run"] is False
    assert {"objects_deleted", "bytes_freed"} <= set(gc)
    assert lake.run("expire", "--older-than", "0").returncode == 5
    exp = lake.json("expire", "--older-than", "0", "--dry-run")
    assert exp["report"] == "expire"
    assert exp["dry_run"] is True
    assert isinstance(exp["expired"], list)
    assert "cutoff" in exp
    done = lake.json("expire", "--older-than", "2000-01-01T00:00", "--yes")
    assert done["expired"] == []
    cutoff = datetime.fromisoformat(done["cutoff"])
    assert abs((cutoff - datetime(2000, 1, 1, tzinfo=UTC)).total_seconds()) < 1


def test_export_and_fsck_which_exits_6_on_a_missing_object(lake: Lake, tmp_path: Path) -> None:
    _, _, c2 = _history(lake)
    p = lake.run("export", "main", str(tmp_path / "copy"), "--json")
    assert p.returncode == 0
    assert p.stderr == ""
    out = json.loads(p.stdout)
    assert out["report"] == "export"
    assert out["commit"] == c2
    assert out["chunks"] == 2
    assert zarr.open_array(str(tmp_path / "copy"), path="temp", mode="r")[25, 5] >= 2.0
    ok = lake.json("fsck", "--verify")
    assert ok["ok"] is True
    assert ok["issues"] == []
    assert ok["verified"] is True
    objects = [f for f in lake.storage.rglob("*") if f.is_file()]
    assert objects
    for f in objects:
        f.unlink()
    p = lake.run("fsck", "--json")
    assert p.returncode == 6
    bad = json.loads(p.stdout)
    assert bad["ok"] is False
    assert bad["issues"][0]["kind"] == "missing_object"
    text = lake.run("fsck").stdout
    assert text.startswith(f"fsck: {len(bad['issues'])} issues found\n")
    assert "\n  objects checked  " in text


def test_exit_codes_for_missing_things_and_bad_input(lake: Lake) -> None:
    p = lake.run("log", "no-such-branch")
    assert p.returncode == 1
    assert p.stderr == (
        f"zarrlake: no branch, tag or commit 'no-such-branch' in repo {lake.open().name!r} "
        "(branches: main; tags: none)\n"
    )
    p = lake.run("branch", "bad..name")
    assert p.returncode == 2
    assert "zarrlake: branch name 'bad..name' is not allowed" in p.stderr
    p = lake.run("branch", "main")
    assert p.returncode == 2
    assert "zarrlake: a branch named 'main' already exists" in p.stderr
    p = lake.run("gc", "--grace", "soon")
    assert p.returncode == 2
    assert "not a duration" in p.stderr
    p = lake.run("diff")
    assert p.returncode == 2
    assert "missing A" in p.stderr
    p = lake.run("log", "-o", "novalue")
    assert p.returncode == 2
    assert "expected KEY=VALUE" in p.stderr
    p = lake.run("log", "--json", "main~99")
    assert p.returncode == 1
    assert json.loads(p.stderr)["error"]["kind"] == "not_found"


def test_a_missing_lake_directory_is_not_found(tmp_path: Path) -> None:
    p = run("log", str(tmp_path / "nothing"))
    assert p.returncode == 1
    assert f"zarrlake: no lake at {tmp_path / 'nothing'}: create one with `zarrlake init" in (
        p.stderr
    )


def test_help_lists_every_command_and_the_exit_codes() -> None:
    p = run("--help")
    assert p.returncode == 0
    for command in [
        "init",
        "log",
        "show",
        "diff",
        "branch",
        "tag",
        "merge",
        "revert",
        "reset",
        "sessions",
        "gc",
        "expire",
        "export",
        "fsck",
        "demo",
    ]:
        assert re.search(rf"^    {command}\b", p.stdout, re.M), command
    for code in ("0", "1", "2", "3", "4", "5", "6"):
        assert re.search(rf"^\s+{code}  \w", p.stdout, re.M)


def test_python_dash_m_zarrlake_is_the_command_line() -> None:
    p = subprocess.run(
        [sys.executable, "-m", "zarrlake", "--version"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("zarrlake ")
