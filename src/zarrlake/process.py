"""Process-wide state, in one place: every per-process registry of zarrlake (open catalogs,
repo cores, sessions) lives here, and a forked child starts with all of them empty.

Handles that outlive a fork inside other objects (open file descriptors, a store's session)
compare :func:`epoch` with the one they were made in: it changes in every forked child.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, MutableMapping
from typing import Any

__all__ = ["epoch", "on_fork", "registry"]

_lock = threading.Lock()
_registries: dict[str, MutableMapping[Any, Any]] = {}
_on_fork: list[Callable[[], None]] = []
_epoch = [0]


def registry(
    name: str, factory: Callable[[], MutableMapping[Any, Any]] = dict
) -> MutableMapping[Any, Any]:
    """This process's registry called ``name`` (made by ``factory`` on first use, emptied in
    a forked child). Callers guard it with their own lock."""
    with _lock:
        found = _registries.get(name)
        if found is None:
            found = _registries[name] = factory()
        return found


def on_fork(callback: Callable[[], None]) -> None:
    """Run ``callback`` in a forked child before the registries are emptied (to release what
    belongs to the parent, e.g. pooled database connections)."""
    with _lock:
        _on_fork.append(callback)


def epoch() -> int:
    """Changes in every forked child: a handle made in another epoch is the parent's."""
    return _epoch[0]


def _after_fork_in_child() -> None:
    global _lock
    _lock = threading.Lock()  # the parent's may have been held by another thread at the fork
    _epoch[0] += 1
    for callback in list(_on_fork):
        callback()
    for found in _registries.values():
        found.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
