"""``zarrlake demo`` and ``zarrlake ui``."""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.request
from datetime import timedelta
from pathlib import Path

import pytest

import zarrlake
from tests.integration.ui.conftest import wait_until
from zarrlake.cli import main
from zarrlake.demo import refresh_sessions


def test_demo_builds_the_lake_and_prints_what_it_made(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lake = tmp_path / "lake"
    assert main(["demo", str(lake), "--no-serve"]) == 0
    out = capsys.readouterr().out
    assert "main: merge experiment" in out
    assert "expired session" in out
    repo = zarrlake.Repo.open(lake)
    assert sorted(repo.branches()) == ["experiment", "main"]
    assert list(repo.tags()) == ["v1.0"]
    head = repo.resolve("main")

    # again: the lake is kept, not rebuilt, and nothing is served
    assert main(["demo", str(lake), "--no-serve"]) == 0
    out = capsys.readouterr().out
    assert out == f"{lake} already holds a lake (--force rebuilds the demo)\n"
    assert zarrlake.Repo.open(lake).resolve("main") == head

    # serving it again starts a new demo session once the last one is gone
    opened = [s for s in repo.sessions() if s.status == "open"]
    assert [s.author for s in opened] == ["ben"]
    assert refresh_sessions(repo) is None  # still open: nothing to do
    stale = repo.writable_session("main", author="ben", expires_in=timedelta(seconds=1))
    repo.session(opened[0].id).abandon()  # type: ignore[attr-defined]
    wait_until(lambda: stale.info().status == "expired", timeout=30)
    new = refresh_sessions(repo)
    assert [s.id for s in repo.sessions() if s.status == "open"] == [new]
    assert repo.session(str(new)).status().nodes  # it holds staged work to look at

    # --force rebuilds it in the same process
    assert main(["demo", str(lake), "--no-serve", "--force"]) == 0
    assert zarrlake.Repo.open(lake).resolve("main") != head


def test_demo_lake_is_not_the_readme_lake(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``zarrlake demo`` builds ./demo-lake, so the README's ``Repo.create("my-lake")`` runs
    beside it."""
    monkeypatch.chdir(tmp_path)
    assert main(["demo", "--no-serve"]) == 0
    assert capsys.readouterr().out.startswith("building the demo lake at demo-lake ...\n")
    assert (tmp_path / "demo-lake" / "catalog.db").is_file()
    zarrlake.Repo.create("my-lake")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["demo-lake", "my-lake"]


def test_demo_refuses_a_directory_that_is_not_a_lake(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    assert main(["demo", str(tmp_path), "--no-serve"]) == 2
    assert "not a zarrlake lake" in capsys.readouterr().err
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_ui_serves_and_prints_the_write_token(tmp_path: Path) -> None:
    repo = zarrlake.Repo.create(tmp_path / "lake")
    entry = "import sys; from zarrlake.cli import main; sys.exit(main())"
    cmd = [sys.executable, "-c", entry, "ui", str(tmp_path / "lake"), "--port", "0"]
    proc = subprocess.Popen(
        [*cmd, "--allow-writes"],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first.startswith("dashboard at http://127.0.0.1:")
        token_line = proc.stdout.readline()
        assert token_line.startswith("writes allowed; write token: ")
        assert len(token_line.split(": ", 1)[1].strip()) >= 16
        url = first.split()[2]

        def alive() -> bool:
            with urllib.request.urlopen(url + "liveness", timeout=5) as r:
                return bool(r.status == 200)

        wait_until(alive, timeout=30)
    finally:
        proc.terminate()
        proc.wait(20)
    assert repo.branches() == {"main": repo.resolve("main")}


def test_a_lake_not_built_by_the_demo_gets_no_demo_session(tmp_path: Path) -> None:
    from zarrlake.demo import opener

    repo = zarrlake.Repo.create(tmp_path / "plain")
    assert opener(tmp_path / "plain")() == repo
    assert repo.sessions() == []
