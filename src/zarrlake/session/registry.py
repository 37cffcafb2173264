"""Sessions by id in this process, and the picklable opener that finds them in any process.

One session object per process and id, so every store over a session in one process shares
its state (its write-behind queue above all).
"""

from __future__ import annotations

import os
import threading
from datetime import timedelta
from typing import Any

from zarrlake.core import RepoCore, open_core
from zarrlake.errors import InvalidInputError, NotFoundError
from zarrlake.session.base import Session
from zarrlake.session.opener import SessionOpener, install
from zarrlake.session.readonly import ReadonlySession
from zarrlake.session.writable import WritableSession
from zarrlake.types import Isolation, new_session_id

__all__ = ["join_session", "start_session"]

_sessions: dict[tuple[Any, ...], WritableSession] = {}
# the same sessions by repo configuration and id: what a shipped store's opener asks for
_joined: dict[tuple[Any, ...], WritableSession] = {}
_lock = threading.Lock()


def _key(core: RepoCore, session_id: str) -> tuple[Any, ...]:
    return (os.getpid(), *core.key(), session_id)


def start_session(
    core: RepoCore, branch: str, author: str, isolation: Isolation, expires_in: timedelta
) -> WritableSession:
    """Open a new writable session on the head of ``branch``."""
    row, base = core.catalog.create_session(
        core.repo_id, new_session_id(), branch, author, isolation, expires_in.total_seconds()
    )
    session = WritableSession(core, row, base=base, created_here=True)
    with _lock:
        _sessions[_key(core, session.id)] = session
        _joined[_config_key(core, session.id)] = session
    return session


def join_session(core: RepoCore, session_id: str) -> Session:
    """The session with this id: this process's object for it, or a new one that joins it.

    A session already committed is opened read-only at its commit.
    """
    if not isinstance(session_id, str) or not session_id:
        raise InvalidInputError("session id must be a non-empty string")
    key = _key(core, session_id)
    with _lock:
        found = _sessions.get(key)
    if found is not None:
        return found
    row = core.catalog.get_session(session_id)
    if row.repo_id != core.repo_id:
        raise NotFoundError(f"session {session_id} belongs to another repo")
    if row.status == "committed" and row.commit_id:
        return ReadonlySession(core, row.commit_id, branch=row.branch)
    session = WritableSession(core, row, created_here=False)
    with _lock:
        session = _sessions.setdefault(key, session)
        _joined[_config_key(core, session_id)] = session
        return session


def _config_key(core: RepoCore, session_id: str) -> tuple[Any, ...]:
    return (os.getpid(), *core.config.key(), session_id)


def _find(opener: SessionOpener) -> Session:
    """What an opener opens. A session this process has already joined (or created) and not
    closed is returned as it is, without asking the catalog again: each dask task unpickles
    its own store, and every write stages in a transaction that checks the session is open
    anyway (and, on SQLite, that the catalog file is the same)."""
    if opener.session_id is not None:
        with _lock:
            known = _joined.get((os.getpid(), *opener.config.key(), opener.session_id))
        if known is not None and known.closed is None:
            return known
        return join_session(open_core(opener.config), opener.session_id)
    return ReadonlySession(open_core(opener.config), opener.commit or "")


install(_find)
