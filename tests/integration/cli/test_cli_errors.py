"""Bad places and values on the command line: one clear error of the exception tree (in
words, with the exit status of its group), and nothing created or written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import zarr

import zarrlake
from tests.integration.cli.conftest import Lake, run, run_process


@pytest.mark.parametrize("where", ["file", "file/lake"])
def test_init_in_or_under_a_file_is_bad_input_and_creates_nothing(
    tmp_path: Path, where: str
) -> None:
    (tmp_path / "file").write_text("mine")
    p = run("init", str(tmp_path / where))
    assert p.returncode == 2, p.stderr
    assert p.stderr.startswith("zarrlake: /")
    assert "choose a directory for the lake" in p.stderr
    assert [(f.name, f.read_text()) for f in tmp_path.iterdir()] == [("file", "mine")]


def test_init_where_nothing_can_be_written_is_a_storage_error() -> None:
    p = run("init", "/proc/zarrlake-lake", "--json")
    assert p.returncode == 4, p.stderr
    error = json.loads(p.stderr)["error"]
    assert error["kind"] == "storage"
    assert "choose a place you can write to" in error["message"]
    assert not os.path.lexists("/proc/zarrlake-lake")


def test_a_catalog_url_with_a_port_that_is_not_a_number_is_bad_input(tmp_path: Path) -> None:
    url = "postgresql+psycopg://u:hunter2@h:abc/db"
    p = run("log", "--catalog", url, "--name", "r")
    assert p.returncode == 2, p.stderr
    assert "zarrlake: the port of the catalog URL" in p.stderr
    assert "hunter2" not in p.stderr
    p = run("init", "--catalog", url, "--name", "r", "--storage", str(tmp_path / "objects"))
    assert p.returncode == 2, p.stderr
    assert list(tmp_path.iterdir()) == []


def test_export_onto_a_file_is_bad_input_and_writes_nothing(lake: Lake, tmp_path: Path) -> None:
    target = tmp_path / "copy.zarr"
    target.write_text("mine")
    for extra in ([], ["--overwrite"]):
        p = lake.run("export", "main", str(target), *extra)
        assert p.returncode == 2, p.stderr
        assert f"zarrlake: export target {target} is a file" in p.stderr
    assert target.read_text() == "mine"


def test_expire_before_the_year_1_is_bad_input(lake: Lake) -> None:
    p = lake.run("expire", "--older-than", "0001-01-01T00:00+01:00", "--yes")
    assert p.returncode == 2, p.stderr
    assert "is outside the calendar" in p.stderr
    assert len(lake.json("log")["commits"]) == 1


def test_init_records_the_content_hash_asked_for_and_refuses_an_unknown_one(
    tmp_path: Path,
) -> None:
    p = run("init", str(tmp_path / "old-style"), "--content-hash", "sha256")
    assert p.returncode == 0, p.stderr
    assert zarrlake.Repo.open(tmp_path / "old-style").content_hash == "sha256"
    p = run("init", str(tmp_path / "bad"), "--content-hash", "md5")
    assert p.returncode == 2
    assert "unknown content hash 'md5'; choose one of blake3, sha256" in p.stderr
    assert not (tmp_path / "bad").exists()


def test_a_reader_that_stops_reading_ends_the_command_quietly(tmp_path: Path) -> None:
    """``zarrlake log --json | head -c 1000``: more output than a pipe holds (one commit with
    200 KB of metadata), the reader gone after 1,000 bytes; the command exits 0 and says
    nothing on stderr."""
    repo = zarrlake.Repo.create(tmp_path / "lake")
    s = repo.writable_session()
    zarr.create_array(s.store, name="a", shape=(4,), chunks=(1,), dtype="i2")
    s.commit("create", metadata={"note": "a long note " * 20_000})
    proc = subprocess.Popen(
        [sys.executable, "-m", "zarrlake.cli", "log", "--json", "-C", str(tmp_path / "lake")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    assert proc.stderr is not None
    first = proc.stdout.read(1000)
    proc.stdout.close()  # the reader goes away with most of the output unread
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 0, err
    assert first.startswith(b"{")
    assert err == b""


@pytest.mark.parametrize(
    "argv",
    [
        ["log", "--json"],
        ["branch", "--json"],
        ["show", "no-such-ref"],
        ["show", "no-such-ref", "--json"],
        ["log", "--no-such-option"],
        ["no-such-command"],
        ["gc", "--yes", "--dry-run"],
    ],
    ids=lambda argv: " ".join(argv),
)
def test_a_process_prints_what_the_in_process_runs_read(lake: Lake, argv: list[str]) -> None:
    """The tests call the command in their own process (:func:`run`); a process of its own
    prints the same words on the same streams and exits with the same status."""
    args = [argv[0], *lake.loc, *argv[1:]] if argv[0] != "no-such-command" else argv
    here, there = run(*args), run_process(*args)
    assert (here.returncode, here.stdout, here.stderr) == (
        there.returncode,
        there.stdout,
        there.stderr,
    )
    assert here.stdout or here.stderr
