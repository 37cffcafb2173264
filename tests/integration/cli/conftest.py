"""The ``zarrlake`` command as a subprocess, on a lake in a directory (SQLite) or in the
shared PostgreSQL catalog."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import zarrlake
from tests.conftest import PG_URL, _need_postgres, unique


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m zarrlake.cli ARGS`` with stdin not a terminal (empty unless given)."""
    return subprocess.run(
        [sys.executable, "-m", "zarrlake.cli", *args],
        input=stdin if stdin is not None else "",
        capture_output=True,
        text=True,
        timeout=120,
    )


@dataclass
class Lake:
    """A lake and how to name it on the command line (``loc``)."""

    loc: list[str]
    open: Callable[[], zarrlake.Repo]
    storage: Path

    def run(
        self, command: str, *args: str, stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        return run(command, *self.loc, *args, stdin=stdin)

    def json(self, command: str, *args: str) -> Any:
        p = self.run(command, *args, "--json")
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def lake(request: pytest.FixtureRequest, tmp_path: Path) -> Lake:
    """A lake created by ``zarrlake init``."""
    if request.param == "sqlite":
        path = tmp_path / "lake"
        p = run("init", str(path))
        assert p.returncode == 0, p.stderr
        return Lake(["-C", str(path)], lambda: zarrlake.Repo.open(path), path / "chunks")
    _need_postgres()
    name = unique("cli")
    storage = tmp_path / "objects"
    p = run("init", "--catalog", PG_URL, "--name", name, "--storage", str(storage))
    assert p.returncode == 0, p.stderr
    return Lake(
        ["--catalog", PG_URL, "--name", name],
        lambda: zarrlake.Repo.open(catalog=PG_URL, name=name),
        storage,
    )
