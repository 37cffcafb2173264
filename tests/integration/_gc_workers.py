"""Child-process bodies for the garbage collection tests (see ``_workers.py`` for the pattern:
picklable arguments only, the repo opened in the child, the ``spawn`` context)."""

from __future__ import annotations

import os
import time
from datetime import timedelta
from typing import Any

import zarrlake
from tests.integration._workers import fill_all, open_repo


def gc_with_fault(url: str, name: str, fault: str) -> None:
    """Run ``gc(grace=0)`` with fault injection set: the process kills itself at ``fault``."""
    os.environ["ZARRLAKE_CRASH_AT"] = f"gc.{fault}"
    open_repo(url, name).gc(timedelta(0), progress=False)
    raise AssertionError(f"gc was not killed at {fault!r}")


def gc_until(url: str, name: str, start: Any, stop: Any, runs: Any) -> dict[str, int]:
    """Run ``gc(grace=0)`` again and again until ``stop`` is set, counting finished runs in
    the shared ``runs``; report what it deleted."""
    repo = open_repo(url, name)
    start.wait(timeout=60)
    deleted = 0
    while not stop.is_set():
        report = repo.gc(timedelta(0), progress=False)
        with runs.get_lock():
            runs.value += 1
        deleted += report.objects_deleted
    return {"runs": runs.value, "deleted": deleted}


def _wait_for_gc(runs: Any) -> None:
    """Wait until a gc run that started after this call has finished."""
    target = runs.value + 2
    deadline = time.monotonic() + 120
    while runs.value < target:
        if time.monotonic() > deadline:
            raise AssertionError("gc made no progress in 120 s")
        time.sleep(0.005)


def write_garbage_then_dedup(
    url: str, name: str, paths: list[str], rounds: int, start: Any, stop: Any, runs: Any
) -> dict[str, Any]:
    """Each round k: a session writes k into every chunk and is abandoned (its objects become
    garbage), then another writes the same bytes (deduplicating against that garbage, which gc
    is deleting meanwhile) and commits. Every third round first waits for a whole gc run, so
    that gc surely deletes some garbage; the other rounds race it. A commit refused because gc
    took an object is retried in a new session. Returns the commits made and the refusals."""
    repo = open_repo(url, name)
    start.wait(timeout=60)
    commits: list[tuple[int, str]] = []
    refused = 0
    try:
        for k in range(1, rounds + 1):
            garbage = repo.writable_session()
            fill_all(garbage.store, paths, k)
            garbage.flush()
            garbage.abandon()
            if k % 3 == 0:
                _wait_for_gc(runs)
            while True:
                s = repo.writable_session()
                fill_all(s.store, paths, k)
                try:
                    commits.append((k, s.commit(f"k={k}")))
                    break
                except zarrlake.ObjectMissingError:
                    refused += 1
                    s.abandon()
    finally:
        stop.set()
    return {"commits": commits, "refused": refused}
