"""Reading: open a group of a repo as a Dataset, and the history of a Dataset's data."""

from __future__ import annotations

import os
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

import xarray as xr

from zarrlake.errors import (
    InvalidInputError,
    NotFoundError,
)
from zarrlake.repo import Repo
from zarrlake.session import Session
from zarrlake.store import LakeStore
from zarrlake.types import CommitInfo
from zarrlake.urls import VersionURL, open_version
from zarrlake.xarray.provenance import (
    Provenance,
    meta_key,
    normalize_group,
    provenance,
    with_provenance,
)

if TYPE_CHECKING:
    from zarrlake.model.diff import Diff

__all__ = ["branch", "checkout", "diff", "log", "open_dataset", "status"]


# -- reading ---------------------------------------------------------------------------------


def open_dataset(
    repo: Repo | str | os.PathLike[str] | VersionURL,
    ref: str | datetime | None = None,
    *,
    group: str | None = None,
    branch: str | None = None,
    session: Session | None = None,
    **kwargs: Any,
) -> xr.Dataset:
    """Open one group of a repo as an xarray Dataset that remembers where it came from.

    Parameters
    ----------
    repo
        The repo; or a version URL (``"zarrlake+file:///data/lake#ref=v1&group=ocean"``,
        whose ref and group apply unless given here as well, where they must agree) or a
        lake directory, opened here.
    ref
        A branch, tag, commit id (or unique prefix), or a ``datetime``: the head ``branch``
        had at that time. Default: the head of ``branch`` (default ``"main"``).
    group
        The group path (default: the root group).
    branch
        The branch to read (instead of ``ref``), or the branch a ``datetime`` refers to.
    session
        Read through an open session instead (a writable one shows its staged writes).
    **kwargs
        Passed to :func:`xarray.open_zarr` (``chunks=``, ``decode_times=``, ...). By default
        variables are lazy dask arrays with the stored chunks, as with ``open_zarr``.

    Returns
    -------
    xarray.Dataset
        With its :class:`Provenance` in ``ds.encoding["zarrlake"]``.
    """
    if not isinstance(repo, Repo | str | os.PathLike | VersionURL):
        raise InvalidInputError(
            f"open_dataset takes a zarrlake.Repo, a version URL or a lake directory, got "
            f"{type(repo).__name__}"
        )
    if not isinstance(repo, Repo):
        named = ref if isinstance(ref, str) else None
        repo, found, group = open_version(repo, ref=named, group=group)
        if found is not None and named is None:
            if ref is not None or branch is not None or session is not None:
                raise InvalidInputError(
                    "the version URL names a ref: drop ref=, branch= and session=, "
                    "or the URL's #ref="
                )
            ref = found
    group = normalize_group(group)
    if session is not None:
        if ref is not None or branch is not None:
            raise InvalidInputError("give either session= or a ref/branch, not both")
        if session.config != repo.config:
            raise InvalidInputError(f"session {session.id} belongs to another repo")
        s = session
    elif isinstance(ref, datetime):
        branch = branch or "main"
        s = repo.readonly_session(branch=branch, as_of=ref)
    elif ref is not None and branch is not None:
        raise InvalidInputError("give either ref= or branch=, not both")
    else:
        s = read_session(repo, branch or ref)
    check_group(s, group, repo.name)
    writable = not s.read_only
    # zarr is loaded with this module, not by this first store: loaded here, after the session
    # was open, it made the cold open of a dataset about 35 ms slower (measured, not explained)
    store: LakeStore = s.store.with_read_only(True)
    kwargs.setdefault("consolidated", False)
    kwargs.setdefault("zarr_format", 3)
    ds = xr.open_zarr(store, group=group, **kwargs)
    prov = Provenance(
        config=repo.config,
        group=group,
        commit=s.base_commit,
        branch=s.branch,
        session=s.id if writable else None,
    )
    return with_provenance(ds, prov)


def read_session(repo: Repo, ref: str | None = None) -> Session:
    """A read-only session of ``ref`` (default ``main``); a branch named as such is
    remembered as the session's branch (where ``ds.lake.commit`` writes)."""
    name = ref or "main"
    if name in repo.branches():
        return repo.readonly_session(branch=name)
    return repo.readonly_session(name)


def check_group(s: Session, group: str | None, repo_name: str) -> None:
    """Raise :class:`NotFoundError` unless ``group`` is a node of the session's view."""
    if s.locate(meta_key(group)) is None:
        where = f"session {s.id}" if s.id is not None else f"commit {s.base_commit[:10]}"
        raise NotFoundError(f"no group {group or '/'!r} in {where} of repo {repo_name!r}")


def checkout(ds: xr.Dataset, ref: str | datetime, **kwargs: Any) -> xr.Dataset:
    """The same group as ``ds`` at another commit, branch, tag or point in time.

    A ``datetime`` means the head that the Dataset's branch (default ``"main"``) had then.
    ``kwargs`` go to :func:`open_dataset`.
    """
    prov = provenance(ds)
    if isinstance(ref, datetime):
        kwargs.setdefault("branch", prov.branch or "main")
    return open_dataset(prov.repo, ref, group=prov.group, **kwargs)


def log(ds: xr.Dataset, ref: str | None = None, *, limit: int | None = None) -> list[CommitInfo]:
    """The history of the Dataset's data: commits reachable from the commit it was read at
    (or from ``ref``), newest first."""
    prov = provenance(ds)
    return prov.repo.log(ref or prov.commit, limit)


def branch(ds: xr.Dataset, name: str) -> xr.Dataset:
    """Create branch ``name`` at the Dataset's commit; return the Dataset, now on that branch
    (its next :func:`commit` goes there)."""
    prov = provenance(ds)
    prov.repo.create_branch(name, prov.commit)
    return with_provenance(ds.copy(deep=False), replace(prov, branch=name, session=None))


def diff(ds: xr.Dataset, other: xr.Dataset | str) -> Diff:
    """What changed in the Dataset's group (and below) from the commit it was read at to
    ``other``: a Dataset of the same repo, or a branch, tag or commit."""
    prov = provenance(ds)
    if isinstance(other, xr.Dataset):
        theirs = provenance(other)
        if theirs.config.key() != prov.config.key():
            raise InvalidInputError("diff compares two Datasets of the same repo")
        other = theirs.commit
    return _in_group(prov.repo.diff(prov.commit, other), prov.group)


def status(ds: xr.Dataset) -> Diff:
    """The changes staged in the Dataset's group (and below) by the writable session it was
    read through."""
    prov = provenance(ds)
    if prov.session is None:
        raise InvalidInputError(
            "status() needs a Dataset read through a writable session: "
            "zarrlake.open_dataset(repo, session=repo.writable_session(branch))"
        )
    return _in_group(prov.repo.session(prov.session).status(), prov.group)


def _in_group(d: Diff, group: str | None) -> Diff:
    if group is None:
        return d
    from zarrlake.model.diff import Diff  # loaded with the first diff: opening needs none

    prefix = group + "/"

    def keep(path: str) -> bool:
        return path == group or path.startswith(prefix)

    return Diff(
        nodes=tuple(n for n in d.nodes if keep(n.path)),
        keys_added=frozenset(k for k in d.keys_added if keep(k)),
        keys_changed=frozenset(k for k in d.keys_changed if keep(k)),
        keys_removed=frozenset(k for k in d.keys_removed if keep(k)),
        before=d.before,
        after=d.after,
    )
