"""xarray on zarrlake: :func:`open_dataset`, :func:`commit`, and the ``ds.lake`` accessor.

Importing this module registers the accessor, so ``import zarrlake.xarray`` (or the first use
of ``zarrlake.open_dataset``) enables ``ds.lake`` on every Dataset::

    ds = zarrlake.open_dataset(repo, "main", group="ocean")
    new = ds.assign(sst=ds.sst + 0.1)
    new.lake.commit("calibrate sst", mode="w")   # same repo, group and branch
    old = new.lake.checkout("v1")                # the same group at tag v1

A Dataset opened from a lake carries its :class:`Provenance` (repo, group, commit, branch,
session) in ``ds.encoding["zarrlake"]``: xarray keeps it through selection, copies, ``load``,
``chunk``, arithmetic and most reductions, and drops it in ``xr.merge``, ``where`` or
``map``. Pass ``repo=`` (and ``group=``) to write a Dataset that has none.

Every accessor method is a one-line delegation to the function of the same name here.
"""

from __future__ import annotations

import contextlib
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import xarray as xr
import zarr

from zarrlake.errors import (
    AlreadyExistsError,
    ConflictError,
    InvalidInputError,
    NotFoundError,
    ReadOnlyError,
    SessionClosedError,
    UnalignedWriteError,
    ZarrlakeError,
)
from zarrlake.model.diff import Diff
from zarrlake.repo import Repo, RepoConfig
from zarrlake.store import LakeStore
from zarrlake.types import CommitInfo, validate_key

if TYPE_CHECKING:
    from zarrlake.session import Session

__all__ = [
    "ENCODING_KEY",
    "LakeAccessor",
    "Provenance",
    "branch",
    "check_aligned",
    "checkout",
    "commit",
    "diff",
    "log",
    "open_dataset",
    "provenance",
    "status",
]

ENCODING_KEY = "zarrlake"
"""The key of ``ds.encoding`` that holds a Dataset's :class:`Provenance`."""

WriteMode = Literal["w", "w-", "a", "a-", "r+"]
Region = Mapping[str, slice | Literal["auto"]] | Literal["auto"]


@dataclass(frozen=True, slots=True)
class Provenance:
    """Where a Dataset was read from. Kept in ``ds.encoding["zarrlake"]``.

    Attributes
    ----------
    config
        How to open the repo (catalog URL, repo name, storage options); no open handles.
    group
        The group path the Dataset was read from (``None`` is the root group).
    commit
        The commit read (for a Dataset read through a writable session: its base commit).
    branch
        The branch it was read from, if it was read from a branch; :func:`commit` writes there
        by default.
    session
        The writable session it was read through, if any (its staged writes were visible).
    """

    config: RepoConfig
    group: str | None
    commit: str
    branch: str | None = None
    session: str | None = None

    @property
    def repo(self) -> Repo:
        """The repo, opened in this process."""
        c = self.config
        return Repo.open(
            catalog=c.catalog,
            name=c.name,
            storage_options=c.storage_options,
            verify_reads=c.verify_reads,
            strict_metadata=c.strict_metadata,
        )


def _with_provenance(ds: xr.Dataset, prov: Provenance) -> xr.Dataset:
    ds.encoding = {**ds.encoding, ENCODING_KEY: prov}
    return ds


def _find_provenance(ds: xr.Dataset) -> Provenance | None:
    if not isinstance(ds, xr.Dataset):
        raise InvalidInputError(f"expected an xarray.Dataset, got {type(ds).__name__}")
    found = ds.encoding.get(ENCODING_KEY)
    return found if isinstance(found, Provenance) else None


def provenance(ds: xr.Dataset) -> Provenance:
    """The :class:`Provenance` of a Dataset opened from a lake.

    Raises :class:`InvalidInputError` (saying how to give a repo) if it has none.
    """
    found = _find_provenance(ds)
    if found is None:
        raise InvalidInputError(
            "this Dataset was not opened from a zarrlake repo: its encoding has no "
            f"{ENCODING_KEY!r} provenance (xarray drops encoding in some operations, such as "
            "xr.merge). Open it with zarrlake.open_dataset(repo, ref, group=...), or pass the "
            "repo explicitly, e.g. ds.lake.commit('message', repo=zarrlake.Repo.open('my-lake'), "
            "group='...')"
        )
    return found


def _group(group: str | None) -> str | None:
    if group is None:
        return None
    if not isinstance(group, str):
        raise InvalidInputError(f"group must be a string path, got {type(group).__name__}")
    group = group.strip("/")
    return validate_key(group) if group else None


def _meta_key(group: str | None) -> str:
    return f"{group}/zarr.json" if group else "zarr.json"


# -- reading ---------------------------------------------------------------------------------


def open_dataset(
    repo: Repo,
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
        The repo.
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
    if not isinstance(repo, Repo):
        raise InvalidInputError(
            f"open_dataset takes a zarrlake.Repo, got {type(repo).__name__}; "
            "open one with zarrlake.Repo.open(...)"
        )
    group = _group(group)
    if session is not None:
        if ref is not None or branch is not None:
            raise InvalidInputError("give either session= or a ref/branch, not both")
        if session.repo != repo:
            raise InvalidInputError(f"session {session.id} belongs to another repo")
        s = session
    elif isinstance(ref, datetime):
        branch = branch or "main"
        s = repo.readonly_session(branch=branch, as_of=ref)
    elif ref is not None and branch is not None:
        raise InvalidInputError("give either ref= or branch=, not both")
    else:
        name = branch or ref or "main"
        if name in repo.branches():
            branch = name
            s = repo.readonly_session(branch=name)
        else:
            s = repo.readonly_session(name)
    if s.locate(_meta_key(group)) is None:
        where = f"session {s.id}" if session is not None else f"commit {s.base_commit[:10]}"
        raise NotFoundError(f"no group {group or '/'!r} in {where} of repo {repo.name!r}")
    writable = not s.read_only
    store = s.store.with_read_only(True)
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
    return _with_provenance(ds, prov)


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
    return _with_provenance(ds.copy(deep=False), replace(prov, branch=name, session=None))


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
        session.flush()  # the caller may hand the session to another process next
        return None
    if not isinstance(message, str):
        raise InvalidInputError("commit needs a message: ds.lake.commit('what changed', ...)")
    s = target_repo.writable_session(target_branch, author=author)
    try:
        _write(ds, s, target_group, mode, region, append_dim, encoding, shared=False)
        return s.commit(message, metadata=dict(metadata or {}), idempotency_key=idempotency_key)
    except ConflictError:
        raise  # the session stays open so that it can be rebased (its id is in the message)
    except BaseException:
        if not s.read_only:
            with contextlib.suppress(ZarrlakeError):  # the original error is the one to see
                s.abandon()
        raise


def _target(
    ds: xr.Dataset,
    repo: Repo | None,
    branch: str | None,
    group: str | None,
    session: Session | None,
) -> tuple[Repo, str, str | None]:
    prov = _find_provenance(ds)
    if session is not None:
        if repo is not None and repo != session.repo:
            raise InvalidInputError(f"session {session.id} belongs to another repo than repo=")
        if branch is not None and branch != session.branch:
            raise InvalidInputError(
                f"session {session.id} writes to branch {session.branch!r}, not {branch!r}"
            )
        repo = session.repo
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
    return repo, branch, _group(group)


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
    if session.read_only:
        if session.id is None:
            raise ReadOnlyError(
                "cannot write through a read-only session; use repo.writable_session(branch)"
            )
        raise SessionClosedError(f"session {session.id} is closed; open a new writable session")
    if mode is None:
        mode = "a" if append_dim is not None else "r+" if region is not None else "w-"
    if mode == "w-" and session.locate(_meta_key(group)) is not None:
        raise AlreadyExistsError(
            f"group {group or '/'!r} already exists on branch {session.branch!r}: pass "
            "mode='w' to replace it (the previous version stays in the history), or "
            "mode='a', append_dim= or region= to update it"
        )
    if (region is not None or mode == "r+") and session.locate(_meta_key(group)) is None:
        raise InvalidInputError(
            f"region= and mode='r+' update an existing group, and there is no group "
            f"{group or '/'!r} on branch {session.branch!r}; write the whole Dataset first "
            "(or pass group=)"
        )
    dask_backed = any(v.chunks is not None for v in ds.variables.values())
    # Tasks may run in other processes: each write must be in the catalog when its task ends,
    # so that the commit (made here) sees every chunk.
    store = LakeStore(session.repo, session_id=session.id, durable=dask_backed)
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


# -- the alignment rule ----------------------------------------------------------------------


def check_aligned(
    ds: xr.Dataset,
    store: LakeStore,
    *,
    group: str | None = None,
    mode: WriteMode = "w-",
    region: Region | None = None,
    append_dim: Hashable | None = None,
    encoding: Mapping[Any, Mapping[str, Any]] | None = None,
    shared: bool = False,
) -> None:
    """Refuse a write whose parallel pieces would share a chunk, before anything is written.

    The pieces are the dask chunks of each variable and, when the session is ``shared`` with
    other jobs, the whole write. Every edge between pieces must fall on a chunk boundary of the
    target array (a shard boundary when it is sharded); the end of the array counts as one.
    A dask region write (``mode="r+"``) must also start and end on boundaries, as xarray
    requires.

    Raises
    ------
    UnalignedWriteError
        Naming the variable, the dimension, the offending positions and the chunk boundaries.
    """
    existing = _existing_arrays(store, group) if mode != "w" else {}
    slices = _resolve_region(ds, store, group, region) if region is not None else {}
    encoding = encoding or {}
    for name, var in ds.variables.items():
        if region is not None and name in ds.indexes:
            continue  # xarray does not write indexes in region writes
        pieces = var.chunks
        strict_edges = shared or (pieces is not None and mode == "r+")
        if pieces is None and not strict_edges:
            continue  # one piece written by this process, merged with what the chunk holds
        key = str(name)
        if key in existing:
            shape, grid = existing[key]
            if len(shape) != var.ndim:
                continue  # xarray refuses this write with its own message
            starts, ends = [], []
            for size, n, d in zip(shape, var.shape, var.dims, strict=True):
                if d == append_dim:  # the new rows go after the current ones
                    starts.append(size)
                    ends.append(size + n)
                else:
                    starts.append((slices[d].start or 0) if d in slices else 0)
                    ends.append(size)
        else:
            found = _new_grid(var, encoding.get(name, {}))
            if found is None:
                continue  # zarr chooses the chunks of a new numpy variable: one piece
            grid, starts, ends = found, [0] * var.ndim, list(var.shape)
        sizes = pieces if pieces is not None else tuple((n,) for n in var.shape)
        for axis, dim in enumerate(var.dims):
            _check_axis(
                key, str(dim), grid[axis], starts[axis], ends[axis], sizes[axis], strict_edges
            )


def _check_axis(
    name: str,
    dim: str,
    grid: int,
    start: int,
    end: int,
    sizes: tuple[int, ...],
    strict_edges: bool,
) -> None:
    edges = [start]
    for n in sizes:
        edges.append(edges[-1] + n)
    checked = edges if strict_edges else edges[1:-1]
    bad = [e for e in checked if e % grid and e != end]
    if not bad:
        return
    bounds = [*range(0, end, grid), end]
    shown = ", ".join(map(str, bounds[:6])) + (f", ..., {bounds[-1]}" if len(bounds) > 6 else "")
    raise UnalignedWriteError(
        f"cannot write variable {name!r}: along {dim!r} its pieces start or end at "
        f"{', '.join(map(str, bad[:10]))}, inside zarr chunks (chunk boundaries along {dim!r} "
        f"are every {grid}: {shown}). Two tasks or jobs writing parts of one chunk would each "
        "write the whole chunk and one would silently replace the other. Align the pieces: "
        f"rechunk with ds.chunk({{{dim!r}: {grid}}}) (or a multiple of {grid}), start and end "
        "regions on chunk boundaries, or choose other zarr chunks in the encoding. "
        "Nothing was written."
    )


def _existing_arrays(
    store: LakeStore, group: str | None
) -> dict[str, tuple[tuple[int, ...], tuple[int, ...]]]:
    """name -> (shape, write grid) of the arrays already in the target group."""
    try:
        g = zarr.open_group(store.with_read_only(True), path=group or "", mode="r")
    except FileNotFoundError:
        return {}
    out: dict[str, tuple[tuple[int, ...], tuple[int, ...]]] = {}
    for name, arr in g.arrays():
        out[name] = (tuple(arr.shape), tuple(arr.shards or arr.chunks))
    return out


def _new_grid(var: xr.Variable, enc: Mapping[str, Any]) -> tuple[int, ...] | None:
    """The write grid xarray will give a new array: shards or chunks from the encoding, else
    the first dask chunk along each dimension; ``None`` when zarr picks (numpy data)."""
    for key in ("shards", "chunks"):
        for source in (enc, var.encoding):
            value = source.get(key)
            if isinstance(value, int):
                return (value,) * var.ndim
            if (
                isinstance(value, tuple | list)
                and len(value) == var.ndim
                and all(isinstance(v, int) for v in value)
            ):
                return tuple(value)
    if var.chunks is not None:
        return tuple(c[0] if c else 1 for c in var.chunks)
    return None


def _resolve_region(
    ds: xr.Dataset, store: LakeStore, group: str | None, region: Region
) -> dict[Hashable, slice]:
    """``region=`` with every ``"auto"`` replaced by the slice xarray will find."""
    wanted: dict[Hashable, slice | str] = {}
    wanted.update(dict.fromkeys(ds.dims, "auto") if region == "auto" else region)
    out: dict[Hashable, slice] = {}
    target: xr.Dataset | None = None
    for dim, value in wanted.items():
        if isinstance(value, slice):
            out[dim] = value
            continue
        if dim not in ds.indexes:
            out[dim] = slice(0, ds.sizes[dim])
            continue
        if target is None:
            target = xr.open_zarr(
                store.with_read_only(True),
                group=group,
                consolidated=False,
                zarr_format=3,
                chunks=None,
            )
        if dim not in target.indexes:
            raise InvalidInputError(
                f"region='auto' finds the rows to write by the {dim!r} coordinate, and group "
                f"{group or '/'!r} has none; give region={{{dim!r}: slice(start, stop)}}"
            )
        idx = target.indexes[dim].get_indexer(ds.indexes[dim])
        if len(idx) and (idx >= 0).all() and (np.diff(idx) == 1).all():
            out[dim] = slice(int(idx[0]), int(idx[-1]) + 1)
    return out


# -- the accessor ----------------------------------------------------------------------------


@xr.register_dataset_accessor("lake")  # type: ignore[no-untyped-call]
class LakeAccessor:
    """``ds.lake``: version control for a Dataset. See :mod:`zarrlake.xarray`."""

    def __init__(self, ds: xr.Dataset) -> None:
        # Nothing here may fail: an AttributeError raised while the accessor is built would
        # be reported by xarray as "Dataset has no attribute 'lake'".
        self._ds = ds

    @property
    def provenance(self) -> Provenance:
        """Where the Dataset was read from (see :func:`provenance`)."""
        return provenance(self._ds)

    def commit(
        self,
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
        """Write the Dataset and commit it; with ``session=`` only write (see :func:`commit`)."""
        return commit(
            self._ds,
            message,
            repo=repo,
            branch=branch,
            group=group,
            mode=mode,
            region=region,
            append_dim=append_dim,
            encoding=encoding,
            session=session,
            metadata=metadata,
            author=author,
            idempotency_key=idempotency_key,
        )

    def checkout(self, ref: str | datetime, **kwargs: Any) -> xr.Dataset:
        """The same group at another commit, branch, tag or time (see :func:`checkout`)."""
        return checkout(self._ds, ref, **kwargs)

    def log(self, ref: str | None = None, *, limit: int | None = None) -> list[CommitInfo]:
        """The history of the Dataset's data (see :func:`log`)."""
        return log(self._ds, ref, limit=limit)

    def diff(self, other: xr.Dataset | str) -> Diff:
        """What changed from the Dataset's commit to ``other`` (see :func:`diff`)."""
        return diff(self._ds, other)

    def status(self) -> Diff:
        """The changes staged in the Dataset's session (see :func:`status`)."""
        return status(self._ds)

    def branch(self, name: str) -> xr.Dataset:
        """Create a branch at the Dataset's commit (see :func:`branch`)."""
        return branch(self._ds, name)
