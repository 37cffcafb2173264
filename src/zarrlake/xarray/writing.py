"""Writing: a Dataset into a session, committed once."""

import contextlib
from collections.abc import Hashable, Mapping
from typing import Any

import xarray as xr

from zarrlake.errors import (
    AlreadyExistsError,
    ConflictError,
    InvalidInputError,
    ReadOnlyError,
    SessionClosedError,
    ZarrlakeError,
)
from zarrlake.repo import Repo
from zarrlake.session import Session, WritableSession
from zarrlake.xarray.alignment import check_aligned
from zarrlake.xarray.provenance import (
    Provenance,
    Region,
    WriteMode,
    find_provenance,
    meta_key,
    normalize_group,
    provenance,
    with_provenance,
)
from zarrlake.xarray.virtual import is_virtual, write_virtual

__all__ = ["commit"]


# -- writing ---------------------------------------------------------------------------------


def commit(
    ds: xr.Dataset,
    message: str | None = None,
    *,
    repo: Repo | None = None,
    branch: str | None = None,
    group: str | None = None,
    mode: WriteMode | None = None,
    region: Region | None = None,
    append_dim: Hashable | None = None,
    encoding: Mapping[Any, Mapping[str, Any]] | None = None,
    session: Session | None = None,
    metadata: Mapping[str, Any] | None = None,
    author: str | None = None,
    idempotency_key: str | None = None,
) -> str | None:
    """Write a Dataset to a group of a repo and commit it; return the new commit id.

    Without ``session=`` the write happens in a new session on ``branch``, committed at once
    (abandoned if the write fails, left open for ``rebase`` on a :class:`ConflictError`).
    With ``session=`` the write is staged in that open session (shared with other jobs, which
    may join it by id), durable when this returns, and nothing is committed: returns ``None``,
    and the session's owner commits once.

    After a commit the Dataset's :class:`Provenance` names the new commit (and the repo,
    group and branch it went to), so ``ds.lake.diff("main~1")`` right after
    ``ds.lake.commit(...)`` shows what that commit changed, and the next commit goes to the
    same place.

    A dask-backed Dataset is written by the dask workers: each task's writes are durable in
    the session when the task finishes, and the commit happens once, here.

    Parameters
    ----------
    ds
        The Dataset.
    message
        The commit message (not with ``session=``).
    repo, branch, group
        Where to write. Defaults come from the Dataset's :class:`Provenance`; else ``"main"``
        and the root group. ``repo`` is required for a Dataset not opened from a lake.
    mode, region, append_dim, encoding
        As in :meth:`xarray.Dataset.to_zarr`. ``mode`` defaults to ``"w-"`` (refuse to replace
        an existing group: :class:`AlreadyExistsError`), ``"a"`` with ``append_dim`` and
        ``"r+"`` with ``region``. ``mode="w"`` replaces the group; the old version stays in
        the history.
    session
        An open writable session to write into without committing.
    metadata, author
        Recorded with the commit.
    idempotency_key
        Commit at most once per branch with this key: if a commit with it is already on the
        branch, its id is returned and nothing is committed again (see
        :meth:`Session.commit`).

    Raises
    ------
    UnalignedWriteError
        A piece written in parallel (a dask chunk; with ``session=`` also the whole write)
        does not start and end on chunk boundaries. Nothing was written.
    """
    target_repo, target_branch, target_group = _target(ds, repo, branch, group, session)
    if session is not None:
        if (
            message is not None
            or metadata is not None
            or author is not None
            or idempotency_key is not None
        ):
            raise InvalidInputError(
                "with session= nothing is committed here, so message, metadata, author and "
                "idempotency_key do "
                "not apply; give them to session.commit(...)"
            )
        _write(ds, session, target_group, mode, region, append_dim, encoding, shared=True)
        if isinstance(session, WritableSession):
            session.flush()  # the caller may hand the session to another process next
        return None
    if not isinstance(message, str):
        raise InvalidInputError("commit needs a message: ds.lake.commit('what changed', ...)")
    s = target_repo.writable_session(target_branch, author=author)
    try:
        _write(ds, s, target_group, mode, region, append_dim, encoding, shared=False)
        new = s.commit(message, metadata=dict(metadata or {}), idempotency_key=idempotency_key)
    except ConflictError:
        raise  # the session stays open so that it can be rebased (its id is in the message)
    except BaseException:
        if not s.read_only:
            with contextlib.suppress(ZarrlakeError):  # the original error is the one to see
                s.abandon()
        raise
    with_provenance(ds, Provenance(target_repo.config, target_group, new, target_branch))
    return new


def _target(
    ds: xr.Dataset,
    repo: Repo | None,
    branch: str | None,
    group: str | None,
    session: Session | None,
) -> tuple[Repo, str, str | None]:
    prov = find_provenance(ds)
    if session is not None:
        if repo is not None and repo.config != session.config:
            raise InvalidInputError(f"session {session.id} belongs to another repo than repo=")
        if branch is not None and branch != session.branch:
            raise InvalidInputError(
                f"session {session.id} writes to branch {session.branch!r}, not {branch!r}"
            )
        repo = Repo.from_config(session.config)
    if repo is None:
        repo = (prov or provenance(ds)).repo  # provenance() raises, saying how to give a repo
    elif not isinstance(repo, Repo):
        raise InvalidInputError(f"repo= takes a zarrlake.Repo, got {type(repo).__name__}")
    same_repo = prov is not None and prov.config.key() == repo.config.key()
    if branch is None:
        branch = session.branch if session is not None else None
        branch = branch or (prov.branch if prov is not None and same_repo else None) or "main"
    if group is None and prov is not None:
        group = prov.group
    return repo, branch, normalize_group(group)


def _write(
    ds: xr.Dataset,
    session: Session,
    group: str | None,
    mode: WriteMode | None,
    region: Region | None,
    append_dim: Hashable | None,
    encoding: Mapping[Any, Mapping[str, Any]] | None,
    *,
    shared: bool,
) -> None:
    if not isinstance(session, WritableSession):
        raise ReadOnlyError(
            "cannot write through a read-only session; use repo.writable_session(branch)"
        )
    if session.closed is not None:
        raise SessionClosedError(f"session {session.id} is closed; open a new writable session")
    if mode is None:
        mode = "a" if append_dim is not None else "r+" if region is not None else "w-"
    if mode == "w-" and session.locate(meta_key(group)) is not None:
        raise AlreadyExistsError(
            f"group {group or '/'!r} already exists on branch {session.branch!r}: pass "
            "mode='w' to replace it (the previous version stays in the history), or "
            "mode='a', append_dim= or region= to update it"
        )
    if (region is not None or mode == "r+") and session.locate(meta_key(group)) is None:
        raise InvalidInputError(
            f"region= and mode='r+' update an existing group, and there is no group "
            f"{group or '/'!r} on branch {session.branch!r}; write the whole Dataset first "
            "(or pass group=)"
        )
    if any(is_virtual(v) for v in ds.variables.values()):
        return write_virtual(ds, session, group, mode, append_dim)
    # Dask tasks that run in other processes unpickle this store there and join the session:
    # their writes are durable when each task ends, so the commit (made here) sees every chunk.
    store = session.store
    check_aligned(
        ds,
        store,
        group=group,
        mode=mode,
        region=region,
        append_dim=append_dim,
        encoding=encoding,
        shared=shared,
    )
    try:
        ds.to_zarr(
            store,
            mode=mode,
            group=group,
            encoding=encoding,
            region=region,
            append_dim=append_dim,
            consolidated=False,
            zarr_format=3,
            compute=True,
        )
    except ZarrlakeError:
        raise
    except (ValueError, KeyError) as exc:
        raise InvalidInputError(
            f"xarray refused the write ({type(exc).__name__}: {exc}); nothing was committed"
        ) from exc
