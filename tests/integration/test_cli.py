"""The ``zarrlake`` command in-process: a missing repo is a clear error. The demo and the
dashboard commands are tested in tests/integration/ui/test_cli_dashboard.py, the other
commands as subprocesses in tests/integration/cli/."""

from __future__ import annotations

from pathlib import Path

import pytest

from zarrlake.cli import main


def test_log_of_a_missing_repo_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["log", str(tmp_path / "nothing")]) == 1
    err = capsys.readouterr().err
    assert err == (
        f"zarrlake: no lake at {tmp_path / 'nothing'}: create one with "
        f"`zarrlake init {tmp_path / 'nothing'}`, or name another with --lake PATH "
        "(or $ZARRLAKE_LAKE)\n"
    )
