"""The ``zarrlake`` command on a lake in a directory (SQLite) or in the shared PostgreSQL
catalog.

:func:`run` calls the command's ``main`` in this process, with stdin, stdout and stderr
replaced by text buffers (none a terminal, as in a pipeline) and the exit status the script
would give: every table, JSON document, message and status the tests read comes from the same
code a shell runs, without an interpreter's start for each call. What only a process shows
(the console script and ``python -m``, an interrupt, a reader that goes away, a server that
keeps running) is tested with real processes: :func:`run_process` and the tests that start
their own.
"""

from __future__ import annotations

import contextlib
import io
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
from zarrlake.cli import main


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """``zarrlake ARGS`` with stdin not a terminal (empty unless given), in this process."""
    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdin
    sys.stdin = io.StringIO(stdin if stdin is not None else "")
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code: Any = main(list(args))
            except SystemExit as stop:  # argparse: --help, --version, usage errors
                code = stop.code
    finally:
        sys.stdin = saved
    if code is None:
        code = 0
    elif not isinstance(code, int):  # sys.exit("message"), as the interpreter reports it
        err.write(f"{code}\n")
        code = 1
    return subprocess.CompletedProcess(["zarrlake", *args], code, out.getvalue(), err.getvalue())


def run_process(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m zarrlake.cli ARGS`` as a process of its own, stdin not a terminal."""
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
