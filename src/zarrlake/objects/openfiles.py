"""Read-only file descriptors kept open, least recently used first out."""

from __future__ import annotations

import contextlib
import os
import threading
from collections import OrderedDict
from collections.abc import Iterator

import zarrlake.process as process

__all__ = ["OpenFiles"]


class OpenFiles:
    """At most about ``limit`` read-only descriptors, by key. A descriptor is closed once it is
    evicted and no reader is using it (a closed number could be reused by another file)."""

    def __init__(self, limit: int = 64) -> None:
        self.limit = limit
        self.lock = threading.Lock()
        self.fds: OrderedDict[bytes, int] = OrderedDict()
        self.users: dict[int, int] = {}  # descriptor -> readers using it now
        self.evicted: set[int] = set()
        self.epoch = process.epoch()

    @contextlib.contextmanager
    def open(self, key: bytes, path: str) -> Iterator[int]:
        fd = self._acquire(key, path)
        try:
            yield fd
        finally:
            with self.lock:
                self.users[fd] -= 1
                if not self.users[fd]:
                    del self.users[fd]
                    if fd in self.evicted:
                        self.evicted.discard(fd)
                        os.close(fd)

    def _acquire(self, key: bytes, path: str) -> int:
        with self.lock:
            if self.epoch != process.epoch():  # a forked child opens its own
                self._forget()
            fd = self.fds.get(key)
            if fd is not None:
                self.fds.move_to_end(key)
                self.users[fd] = self.users.get(fd, 0) + 1
                return fd
        new = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        with self.lock:
            fd = self.fds.get(key)
            if fd is not None:  # another thread opened it meanwhile
                os.close(new)
            else:
                fd = self.fds[key] = new
                while len(self.fds) > self.limit:
                    _, old = self.fds.popitem(last=False)
                    if old in self.users:
                        self.evicted.add(old)
                    else:
                        os.close(old)
            self.users[fd] = self.users.get(fd, 0) + 1
            return fd

    def forget(self, key: bytes) -> bool:
        """Stop keeping ``key``'s descriptor (the file was replaced); whether one was kept."""
        with self.lock:
            fd = self.fds.pop(key, None)
            if fd is None:
                return False
            if fd in self.users:
                self.evicted.add(fd)
            else:
                os.close(fd)
            return True

    def _forget(self) -> None:
        for fd in self.fds.values():
            with contextlib.suppress(OSError):
                os.close(fd)  # the child's copies: the parent's stay open
        self.fds.clear()
        self.users.clear()
        self.evicted.clear()
        self.epoch = process.epoch()

    def __del__(self) -> None:
        for fd in [*self.fds.values(), *self.evicted]:
            with contextlib.suppress(OSError):
                os.close(fd)
