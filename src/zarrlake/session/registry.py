"""Sessions by id in this process, and the picklable opener that finds them in any process.

One session object per process and id, so every store over a session in one process shares
its state (its write-behind queue above all). A session leaves the registry when it is
committed or abandoned, when it is found expired, or when nothing uses it any more (the
registry holds it weakly), so a long-running process keeps only the sessions it still uses.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import MutableMapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import zarrlake.process as process
from zarrlake.core import RepoCore, open_core
from zarrlake.errors import InvalidInputError
from zarrlake.session.base import Session
from zarrlake.session.opener import SessionOpener, install
from zarrlake.session.readonly import ReadonlySession
from zarrlake.types import Isolation, SessionInfo, new_session_id

if TYPE_CHECKING:  # loaded with the first writable session: reading needs none
    from zarrlake.session.writable import WritableSession

__all__ = ["join_session", "list_sessions", "registered_sessions", "start_session"]

# by (repo incarnation, session id); weakly: an unused session is released
_sessions: MutableMapping[tuple[Any, ...], WritableSession] = process.registry(
    "sessions", weakref.WeakValueDictionary
)
# the same sessions by repo configuration and id: what a shipped store's opener asks for
_joined: MutableMapping[tuple[Any, ...], WritableSession] = process.registry(
    "joined sessions", weakref.WeakValueDictionary
)
_lock = threading.Lock()


def _key(core: RepoCore, session_id: str) -> tuple[Any, ...]:
    return (*core.key(), session_id)


def _config_key(core: RepoCore, session_id: str) -> tuple[Any, ...]:
    return (*core.config.key(), session_id)


def _register(core: RepoCore, session: WritableSession) -> WritableSession:
    """Record ``session`` (or return the one already recorded for its id), and drop sessions
    that are closed or expired."""
    with _lock:
        for registry in (_sessions, _joined):
            for k, s in list(registry.items()):
                if s.state != "open":
                    registry.pop(k, None)
        session = _sessions.setdefault(_key(core, session.id), session)
        _joined[_config_key(core, session.id)] = session
    session.on_close(lambda s: _release(core, s))
    return session


def _release(core: RepoCore, session: WritableSession) -> None:
    with _lock:
        for registry, key in (
            (_sessions, _key(core, session.id)),
            (_joined, _config_key(core, session.id)),
        ):
            if registry.get(key) is session:
                del registry[key]


def registered_sessions() -> int:
    """How many writable sessions this process holds (tests check that they are released)."""
    with _lock:
        return len({id(s) for s in (*_sessions.values(), *_joined.values())})


def list_sessions(core: RepoCore, include_closed: bool) -> list[SessionInfo]:
    """The repo's sessions, each with its status by the catalog's clock."""
    return core.catalog.sessions.infos(include_closed)


def start_session(
    core: RepoCore, branch: str, author: str, isolation: Isolation, expires_in: timedelta
) -> WritableSession:
    """Open a new writable session on the head of ``branch``."""
    from zarrlake.session.writable import WritableSession

    row, base = core.catalog.sessions.create(
        new_session_id(), branch, author, isolation, expires_in.total_seconds()
    )
    return _register(core, WritableSession(core, row, base=base, created_here=True))


def join_session(core: RepoCore, session_id: str) -> Session:
    """The session with this id: this process's object for it, or a new one that joins it.

    A session already committed is opened read-only at its commit.
    """
    if not isinstance(session_id, str) or not session_id:
        raise InvalidInputError("session id must be a non-empty string")
    with _lock:
        found = _sessions.get(_key(core, session_id))
    if found is not None and found.closed is None:
        return found
    row = core.catalog.sessions.get(session_id)
    if row.status == "committed" and row.commit_id:
        return ReadonlySession(core, row.commit_id, branch=row.branch)
    from zarrlake.session.writable import WritableSession

    return _register(core, WritableSession(core, row, created_here=False))


def _find(opener: SessionOpener) -> Session:
    """What an opener opens. A session this process has already joined (or created) and not
    closed is returned as it is, without asking the catalog again: each dask task unpickles
    its own store, and every write stages in a transaction that checks the session is open
    anyway (and, on SQLite, that the catalog file is the same)."""
    if opener.session_id is not None:
        with _lock:
            known = _joined.get((*opener.config.key(), opener.session_id))
        if known is not None and known.closed is None:
            return known
        return join_session(open_core(opener.config), opener.session_id)
    return ReadonlySession(open_core(opener.config), opener.commit or "")


install(_find)
