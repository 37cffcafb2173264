"""Durability of local objects, overlapped with writing: a flusher thread makes the filesystem
durable over and over while writers go on writing, and a waiter blocks only until a flush that
started after its own writes has finished (group commit).

Each write is counted (``note``); a flush records the count before it starts and, once the
filesystem is flushed, declares every write up to that count durable. ``wait`` blocks until
the writes counted before the call are durable: while the writers were busy the flusher has
already made most of them so, and the waiter pays only for the tail.

A failed flush fails the waiters of that flush, not later ones: each ``wait`` has the
filesystem flushed again (a disk that was full or unmounted may be back), so a commit that
failed can be retried.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading
from typing import Any

from zarrlake.errors import StorageError

__all__ = ["Flusher", "syncfs"]

_libc: Any = None


def syncfs(path: str) -> None:
    """Flush the filesystem holding ``path`` (one syscall instead of one fsync per object)."""
    global _libc
    if _libc is None:
        name = ctypes.util.find_library("c")
        _libc = ctypes.CDLL(name, use_errno=True) if name else False
    fd = os.open(path, os.O_RDONLY)
    try:
        if _libc and hasattr(_libc, "syncfs") and _libc.syncfs(fd) == 0:
            return
        os.sync()
    finally:
        os.close(fd)


class Flusher:
    """Counts the writes under ``path`` and flushes its filesystem in a background thread."""

    IDLE = 1.0  # seconds with nothing to flush before the thread ends (a new write restarts it)

    def __init__(self, path: str) -> None:
        self.path = path
        self.cond = threading.Condition()
        self.written = 0  # writes counted so far
        self.durable = 0  # writes known durable
        self.error: BaseException | None = None  # of the last flush, if it failed
        self.failures = 0  # flushes failed so far
        self.thread: threading.Thread | None = None

    def note(self) -> None:
        """Count one write whose bytes are in the filesystem (not yet known durable)."""
        with self.cond:
            self.written += 1
            self._start()
            self.cond.notify_all()

    def wait(self) -> None:
        """Block until every write counted before this call is durable; a flush that fails
        meanwhile raises :class:`StorageError` here (a failure from before the call does not:
        the flush is tried again)."""
        with self.cond:
            target = self.written
            failures = self.failures
            while self.durable < target:
                if self.failures != failures and self.error is not None:
                    raise StorageError(
                        f"cannot make objects under {self.path} durable: {self.error}"
                    ) from self.error
                self._start()
                self.cond.wait(timeout=1.0)

    def _start(self) -> None:
        # under self.cond; a thread inherited through fork() is not alive in the child
        if self.thread is None or not self.thread.is_alive():
            self.thread = threading.Thread(target=self._run, name="zarrlake-flusher", daemon=True)
            self.thread.start()

    def _run(self) -> None:
        while True:
            with self.cond:
                if self.durable >= self.written:
                    self.cond.wait(timeout=self.IDLE)
                    if self.durable >= self.written:
                        self.thread = None  # decided under the lock note() takes
                        return
                target = self.written
            try:
                syncfs(self.path)  # ctypes releases the GIL: writers go on meanwhile
            except OSError as exc:
                with self.cond:
                    self.error = exc
                    self.failures += 1
                    self.thread = None
                    self.cond.notify_all()
                return
            with self.cond:
                self.error = None
                self.durable = max(self.durable, target)
                self.cond.notify_all()
