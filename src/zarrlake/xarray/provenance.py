"""Where a Dataset came from: its :class:`Provenance`, kept in ``ds.encoding``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import xarray as xr

from zarrlake._loading import load_module
from zarrlake.errors import (
    InvalidInputError,
)
from zarrlake.types import RepoConfig, validate_key

if TYPE_CHECKING:
    from zarrlake.repo import Repo

__all__ = [
    "ENCODING_KEY",
    "Provenance",
    "Region",
    "WriteMode",
    "find_provenance",
    "meta_key",
    "normalize_group",
    "provenance",
    "with_provenance",
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
        load_module("zarrlake.repo")  # the catalog: not loaded with xarray's list of engines
        from zarrlake.repo import Repo

        c = self.config
        return Repo.open(
            catalog=c.catalog,
            name=c.name,
            storage_options=c.storage_options,
            verify_reads=c.verify_reads,
            strict_metadata=c.strict_metadata,
        )


def with_provenance(ds: xr.Dataset, prov: Provenance) -> xr.Dataset:
    ds.encoding = {**ds.encoding, ENCODING_KEY: prov}
    return ds


def find_provenance(ds: xr.Dataset) -> Provenance | None:
    if not isinstance(ds, xr.Dataset):
        raise InvalidInputError(f"expected an xarray.Dataset, got {type(ds).__name__}")
    found = ds.encoding.get(ENCODING_KEY)
    return found if isinstance(found, Provenance) else None


def provenance(ds: xr.Dataset) -> Provenance:
    """The :class:`Provenance` of a Dataset opened from a lake.

    Raises :class:`InvalidInputError` (saying how to give a repo) if it has none.
    """
    found = find_provenance(ds)
    if found is None:
        raise InvalidInputError(
            "this Dataset was not opened from a zarrlake repo: its encoding has no "
            f"{ENCODING_KEY!r} provenance (xarray drops encoding in some operations, such as "
            "xr.merge). Open it with zarrlake.open_dataset(repo, ref, group=...), or pass the "
            "repo explicitly, e.g. ds.lake.commit('message', repo=zarrlake.Repo.open('my-lake'), "
            "group='...')"
        )
    return found


def normalize_group(group: str | None) -> str | None:
    if group is None:
        return None
    if not isinstance(group, str):
        raise InvalidInputError(f"group must be a string path, got {type(group).__name__}")
    group = group.strip("/")
    return validate_key(group) if group else None


def meta_key(group: str | None) -> str:
    return f"{group}/zarr.json" if group else "zarr.json"
