"""Named crash points, for the crash tests: ``ZARRLAKE_CRASH_AT=point[:n]`` kills this process
with SIGKILL (no cleanup, no flush) the ``n``-th time it reaches ``point`` (default: the first).

Unset, a crash point costs one environment lookup. The points, in the order a write reaches
them, are listed in :data:`POINTS` and in ``docs/guarantees.md``.
"""

from __future__ import annotations

import os
import signal
import threading

__all__ = ["ENV", "POINTS", "crash_point"]

ENV = "ZARRLAKE_CRASH_AT"

POINTS = (
    # a write
    "object.written",  # a chunk object is in the object store, its row not staged yet
    "pack.written",  # a pack of small chunks is in the object store, its rows not staged yet
    "stage.before",  # a batch of staged rows is about to be recorded
    "stage.in_tx",  # inside the staging transaction, before it commits
    # a commit
    "commit.synced",  # objects made durable, the commit transaction not started
    "commit.in_tx",  # inside the commit transaction: rows written, branch moved, not committed
    "commit.done",  # the commit transaction committed, the caller not told yet
    # a rebase
    "rebase.in_tx",  # inside the transaction that records a rebased session
    # garbage collection
    "gc.repacked",  # live chunks copied into new durable packs, the moves not recorded yet
    "gc.marked",
    "gc.claimed",
    "gc.delete",  # a batch of claimed objects deleted, its tombstones not written yet
    "gc.deleted",
)

_seen: dict[str, int] = {}
_lock = threading.Lock()


def crash_point(point: str) -> None:
    """SIGKILL this process here if ``ZARRLAKE_CRASH_AT`` names ``point`` (and its count)."""
    want = os.environ.get(ENV)
    if not want:
        return
    name, _, n = want.partition(":")
    if name != point:
        return
    with _lock:
        _seen[point] = _seen.get(point, 0) + 1
        hit = _seen[point] >= int(n or 1)
    if hit:
        os.kill(os.getpid(), signal.SIGKILL)
