"""The ``zarrlake`` command: the README's main job (``zarrlake demo``) and the read commands."""

from __future__ import annotations

from pathlib import Path

import pytest

from zarrlake.cli import main


def test_demo_runs_the_main_job_on_the_embedded_default(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["demo", str(tmp_path / "lake")]) == 0
    out = capsys.readouterr().out
    assert (tmp_path / "lake" / "catalog.db").is_file()
    assert "still sees sum=10000; main now has sum=10400" in out
    assert "concurrent writer refused: chunk conflict at temp chunk (5, 5)" in out
    assert "/temp (array); chunks ~3" in out  # the diff v1..main: three chunks rewritten


def test_demo_refuses_to_replace_a_repo_unless_forced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["demo", str(tmp_path / "lake")]) == 0
    assert main(["demo", str(tmp_path / "lake")]) == 2
    assert "--force" in capsys.readouterr().err
    assert main(["demo", str(tmp_path / "lake"), "--force"]) == 0


def test_log_lists_the_demo_commits_newest_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main(["demo", str(tmp_path / "lake")])
    capsys.readouterr()
    assert main(["log", str(tmp_path / "lake"), "-n", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2
    assert "writer b, rebased" in lines[0]
    assert "writer a" in lines[1]


def test_log_of_a_missing_repo_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["log", str(tmp_path / "nothing")]) == 1
    assert "zarrlake: error [not_found]" in capsys.readouterr().err
