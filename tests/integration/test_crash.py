"""Crash safety (DESIGN.md, "Commit protocol" 5): a writer killed with SIGKILL at any point
leaves the repo valid: a commit is either fully visible or not at all."""

from __future__ import annotations

import os
import random
import re
import signal
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import zarr

import zarrlake
from tests.integration._workers import (
    CTX,
    commit_forever,
    create_arrays,
    fill_all,
    stage_and_hang,
    uniform_value,
)
from zarrlake.testing import LakeProbe

pytestmark = pytest.mark.slow


def _sqlite_ok(url: str) -> None:
    if not url.startswith("sqlite:///"):
        return
    con = sqlite3.connect(url[len("sqlite:///") :])
    try:
        assert con.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    finally:
        con.close()


def _check_chain(log: list[zarrlake.CommitInfo]) -> None:
    assert [c.parent for c in log[:-1]] == [c.id for c in log[1:]]
    assert log[-1].message == "Repository initialized"
    assert log[-1].parent is None


def test_writer_killed_before_commit_leaves_repo_valid(
    make_repo: Callable[..., zarrlake.Repo], catalog_url: str, tmp_path: Path
) -> None:
    repo = make_repo()
    paths = ["a", "b"]
    create_arrays(repo, paths, 4)
    s = repo.writable_session()
    fill_all(s.store, paths, 1)
    on_main = s.commit("k=1")
    repo.create_branch("dev")
    s = repo.writable_session("dev")
    fill_all(s.store, paths, 2)
    on_dev = s.commit("k=2 on dev")
    log_before = repo.log("main")

    ready = tmp_path / "ready"
    proc = CTX.Process(
        target=stage_and_hang, args=(catalog_url, repo.name, paths, 99, str(ready)), daemon=True
    )
    proc.start()
    deadline = time.monotonic() + 90
    while not ready.exists():
        assert proc.is_alive(), "the writer died before staging its chunks"
        assert time.monotonic() < deadline, "the writer never staged its chunks"
        time.sleep(0.02)
    killed_session = ready.read_text()
    assert proc.pid is not None
    os.kill(proc.pid, signal.SIGKILL)
    proc.join(timeout=30)
    assert proc.exitcode == -signal.SIGKILL

    # The killed writer did get as far as the object store and the staging table.
    probe = LakeProbe(repo)
    _, packed, _ = probe.catalog.gc.live_staged()  # 1 KiB chunks: packed
    packs = {pack for pack, *_ in packed}
    assert packs
    assert all(probe.objects.exists(p) for p in packs)
    assert killed_session in {i.id for i in repo.sessions()}

    _sqlite_ok(catalog_url)
    # Every branch opens and reads the last committed data.
    assert repo.branches() == {"main": on_main, "dev": on_dev}
    assert uniform_value(repo.readonly_session(branch="main").store, paths) == (1, [])
    assert uniform_value(repo.readonly_session(branch="dev").store, paths) == (2, [])
    assert repo.log("main") == log_before
    _check_chain(repo.log("dev"))

    # A new session commits, and nothing the killed writer staged leaks into it.
    s = repo.writable_session()
    zarr.open_array(s.store, path="a", mode="r+")[:] = 3
    c = s.commit("after the crash")
    main = repo.readonly_session(branch="main")
    assert main.base_commit == c
    assert uniform_value(main.store, ["a"]) == (3, [])
    assert uniform_value(main.store, ["b"]) == (1, [])
    _check_chain(repo.log("main"))


class _Writer:
    """A child committing k = start, start + 1, ... until killed; reports through a pipe."""

    def __init__(self, url: str, name: str, paths: list[str], start: int) -> None:
        self.recv, send = CTX.Pipe(duplex=False)
        self.proc = CTX.Process(
            target=commit_forever, args=(url, name, paths, start, send), daemon=True
        )
        self.proc.start()
        send.close()
        self.messages: list[tuple[Any, ...]] = []

    def next(self, timeout: float = 90) -> tuple[Any, ...]:
        if not self.recv.poll(timeout):
            raise AssertionError(
                f"writer {self.proc.pid} silent for {timeout} s (alive={self.proc.is_alive()})"
            )
        msg = self.recv.recv()
        self.messages.append(msg)
        return msg

    def kill(self) -> None:
        assert self.proc.pid is not None
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.join(timeout=30)
        assert self.proc.exitcode == -signal.SIGKILL
        # Whatever it managed to say before dying.
        try:
            while self.recv.poll(0.05):
                self.messages.append(self.recv.recv())
        except EOFError:
            pass
        self.recv.close()


def test_writer_killed_during_commit_leaves_repo_valid(
    make_repo: Callable[..., zarrlake.Repo], catalog_url: str, stress: bool
) -> None:
    # Kills timed by the clock; the deterministic kills at each named crash point are in
    # test_crash_points.py. This one runs with --stress.
    if not stress:
        pytest.skip("timed kills run with --stress (test_crash_points.py kills deterministically)")
    repo = make_repo()
    paths = ["a", "b"]
    create_arrays(repo, paths, 48)  # every commit rewrites 96 chunks (objects) in 2 arrays
    rng = random.Random(20240611)
    # Kill points, as a fraction of the writer's measured commit time after it says
    # "committing": from before the catalog transaction to after it (then into the next
    # session's writes).
    fractions = [0.0, 0.25, 0.4, 0.5, 0.6, 0.7, 0.85, 1.5]
    history: list[str] = []
    outcomes: list[str] = []
    writer: _Writer | None = _Writer(catalog_url, repo.name, paths, 1)
    try:
        for i, frac in enumerate(fractions):
            assert writer is not None
            msg = writer.next()
            assert msg[0] == "committing"
            msg = writer.next()
            assert msg[0] == "committed"
            duration = msg[3]
            msg = writer.next()
            assert msg[0] == "committing"
            delay = frac * duration * rng.uniform(0.8, 1.2)
            time.sleep(delay)
            writer.kill()
            # The commit in flight at the kill: the last one the writer announced.
            k = max(m[1] for m in writer.messages if m[0] == "committing")
            said_committed = any(m[0] == "committed" and m[1] == k for m in writer.messages)
            # Start the next writer now: its interpreter starts while this one is checked.
            writer = (
                _Writer(catalog_url, repo.name, paths, k + 1) if i + 1 < len(fractions) else None
            )

            where = (
                f"kill {i}, {delay * 1000:.0f} ms after 'committing k={msg[1]}' (k={k} in flight)"
            )
            _sqlite_ok(catalog_url)
            log = repo.log("main")
            _check_chain(log)
            head = log[0]
            m = re.fullmatch(r"k=(\d+)", head.message)
            assert m, where
            head_k = int(m.group(1))
            if said_committed:
                assert head_k == k, where
            else:
                assert head_k in (k - 1, k), where
            outcomes.append("reported" if said_committed else "landed" if head_k == k else "lost")
            assert repo.branches()["main"] == head.id, where
            # Every commit made since the last check (the head included) holds one whole k.
            new = [c for c in log if c.message.startswith("k=") and c.id not in history]
            for c in new:
                got = uniform_value(repo.readonly_session(commit=c.id).store, paths)
                assert got == (int(c.message[2:]), []), f"{where}: commit {c.id} {c.message}: {got}"
            history.extend(c.id for c in new)
            assert uniform_value(repo.readonly_session(branch="main").store, paths) == (
                head_k,
                [],
            ), where

    finally:
        if writer is not None and writer.proc.is_alive():
            writer.kill()

    # The early kills did stop a commit before its catalog transaction finished.
    assert "lost" in outcomes, outcomes
    # And the repo still takes commits.
    s = repo.writable_session()
    fill_all(s.store, paths, 10_000)
    c = s.commit("k=10000")
    assert uniform_value(repo.readonly_session(branch="main").store, paths) == (10_000, [])
    assert repo.log("main")[0].id == c
    _sqlite_ok(catalog_url)
