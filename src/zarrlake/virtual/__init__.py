"""Data where it already lives: where a repo's virtual chunk references may point, copying
referenced chunks into the lake (``materialize``), and importing existing Zarr stores and Icechunk repositories."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from zarrlake._loading import lazy_names

if TYPE_CHECKING:
    from zarrlake.repo import Repo
    from zarrlake.virtual.icechunk_import import IcechunkImport
    from zarrlake.virtual.repo_mixin import VirtualSourcesMixin as VirtualSourcesMixin
    from zarrlake.virtual.repo_mixin import allow_sources as allow_sources
    from zarrlake.virtual.repo_mixin import virtual_chunks as virtual_chunks
    from zarrlake.virtual.zarr_import import import_zarr as import_zarr

__all__ = [
    "VirtualSourcesMixin",
    "allow_sources",
    "import_icechunk",
    "import_zarr",
    "virtual_chunks",
]


def import_icechunk(
    repo: Repo, storage_or_path: Any, *, ref_prefix: str = "", author: str | None = None
) -> IcechunkImport:
    """Import the Icechunk repository in ``storage_or_path`` (an ``icechunk.Storage`` or a
    local directory) into ``repo`` with its history, and return an
    :class:`~zarrlake.virtual.icechunk_import.IcechunkImport` saying what it brought.

    Every snapshot reachable from its branches and tags becomes a commit (its message, time,
    parent and metadata, plus the key ``icechunk_snapshot`` naming it), its branches and tags
    become the lake's (named with ``ref_prefix`` in front), virtual chunks stay references
    (their locations must be allowed: ``repo.allow_virtual_source``) and native chunks are
    copied. Run again, it imports only the snapshots that are new. A lake branch that went
    elsewhere, a format version this zarrlake does not read, or anything else refused
    changes nothing; so does a crash: everything lands in one transaction at the end."""
    return repo.import_icechunk(storage_or_path, ref_prefix=ref_prefix, author=author)


# Each name loads its module on first use, so importing one submodule loads none of the others
# (``Repo`` needs the mixin, not the importers).
__getattr__, __dir__ = lazy_names(
    __name__,
    {
        "zarrlake.virtual.repo_mixin": ("VirtualSourcesMixin", "allow_sources", "virtual_chunks"),
        "zarrlake.virtual.zarr_import": ("import_zarr",),
    },
)
