"""The ``zarrlake`` engine of xarray: ``xr.open_dataset(lake, engine="zarrlake", ref="v1")``.

Registered through the ``xarray.backends`` entry point, so ``xr.open_dataset``,
``xr.open_datatree`` and ``xr.open_mfdataset`` find it by name (and, for a version URL or a
lake directory, without one). It opens a read-only session of the version asked for and hands
its store to xarray's own Zarr backend, so reading is what ``engine="zarr"`` does: lazy (no
chunk is read until values are asked for), with ``chunks=`` giving dask arrays.

xarray loads every installed engine's entry point when it opens any file (to list them), so
this module loads neither the catalog nor zarr: opening a version does.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import xarray as xr
from xarray.backends import BackendEntrypoint
from xarray.backends.zarr import ZarrBackendEntrypoint

from zarrlake._loading import load_module
from zarrlake.errors import InvalidInputError
from zarrlake.urls import PREFIX, VersionURL, is_version_url, open_version
from zarrlake.xarray.provenance import Provenance, normalize_group, with_provenance

if TYPE_CHECKING:
    from zarrlake.session import Session

__all__ = ["ZarrlakeBackendEntrypoint"]

# What xarray's Zarr backend takes besides the store, passed on unchanged.
_DECODERS = (
    "mask_and_scale",
    "decode_times",
    "concat_characters",
    "decode_coords",
    "use_cftime",
    "decode_timedelta",
)


class ZarrlakeBackendEntrypoint(BackendEntrypoint):
    """Open a version of a zarrlake repo with xarray.

    The first argument is a version URL (``"zarrlake+file:///data/lake#ref=v1&group=ocean"``),
    a lake directory, a :class:`zarrlake.Repo`, or, with ``catalog=``, the repo's name in that
    catalog. ``ref=`` (a branch, tag, commit id or ref expression; default ``main``) and
    ``group=`` say which version and group, unless the URL says it (then they must agree).
    """

    description = "Open a version of a zarrlake repo (a transactional, versioned Zarr v3 store)"
    url = "https://github.com/zarrlake/zarrlake/blob/main/docs/reach.md"
    supports_groups = True
    open_dataset_parameters = (
        "filename_or_obj",
        "drop_variables",
        *_DECODERS,
        "ref",
        "group",
        "catalog",
        "name",
        "storage_options",
        "use_zarr_fill_value_as_mask",
    )

    def guess_can_open(self, filename_or_obj: Any) -> bool:
        repo = sys.modules.get("zarrlake.repo")  # no object is a Repo before it is loaded
        if repo is not None and isinstance(filename_or_obj, repo.Repo):
            return True
        if isinstance(filename_or_obj, VersionURL) or is_version_url(filename_or_obj):
            return True
        if isinstance(filename_or_obj, str | os.PathLike):
            try:
                return os.path.isfile(os.path.join(filename_or_obj, "catalog.db"))
            except (OSError, ValueError):
                return False
        return False

    def open_dataset(
        self,
        filename_or_obj: Any,
        *,
        drop_variables: str | Iterable[str] | None = None,
        ref: str | None = None,
        group: str | None = None,
        catalog: str | None = None,
        name: str | None = None,
        storage_options: dict[str, Any] | None = None,
        use_zarr_fill_value_as_mask: bool | None = None,
        **decoders: Any,
    ) -> xr.Dataset:
        session, prov = _open(filename_or_obj, ref, group, catalog, name, storage_options)
        ds = ZarrBackendEntrypoint().open_dataset(
            session.store,  # type: ignore[arg-type]  # a zarr Store, which it opens as such
            drop_variables=drop_variables,
            group=prov.group,
            mode="r",
            consolidated=False,
            zarr_format=3,
            use_zarr_fill_value_as_mask=use_zarr_fill_value_as_mask,
            **_decoders(decoders),
        )
        return with_provenance(ds, prov)

    def open_datatree(
        self,
        filename_or_obj: Any,
        *,
        drop_variables: str | Iterable[str] | None = None,
        ref: str | None = None,
        group: str | None = None,
        catalog: str | None = None,
        name: str | None = None,
        storage_options: dict[str, Any] | None = None,
        **decoders: Any,
    ) -> xr.DataTree:
        session, prov = _open(filename_or_obj, ref, group, catalog, name, storage_options)
        tree = ZarrBackendEntrypoint().open_datatree(
            session.store,  # type: ignore[arg-type]  # a zarr Store, which it opens as such
            drop_variables=drop_variables,
            group=prov.group,
            mode="r",
            consolidated=False,
            zarr_format=3,
            **_decoders(decoders),
        )
        for node in tree.subtree:
            path = node.relative_to(tree)
            sub = prov.group if path == "." else "/".join(p for p in (prov.group, path) if p)
            node.dataset = with_provenance(node.to_dataset(inherit=False), replace(prov, group=sub))
        return tree

    def open_groups_as_dict(self, filename_or_obj: Any, **kwargs: Any) -> dict[str, xr.Dataset]:
        tree = self.open_datatree(filename_or_obj, **kwargs)
        return {node.path: node.to_dataset(inherit=False) for node in tree.subtree}


def _decoders(given: dict[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(given) - set(_DECODERS))
    if unknown:
        raise InvalidInputError(
            f"the zarrlake engine does not take {', '.join(unknown)}; it takes ref=, group=, "
            "catalog=, name=, storage_options= and xarray's decoding options"
        )
    return given


def _open(
    target: Any,
    ref: str | None,
    group: str | None,
    catalog: str | None,
    name: str | None,
    storage_options: dict[str, Any] | None,
) -> tuple[Session, Provenance]:
    load_module("zarrlake.xarray.reading")  # the catalog, loaded by the first version opened
    from zarrlake.xarray.reading import check_group, read_session

    repo, ref, group = open_version(
        _unmangled(target),
        ref=ref,
        group=group,
        catalog=catalog,
        name=name,
        storage_options=storage_options,
    )
    group = normalize_group(group)
    session = read_session(repo, ref)
    check_group(session, group, repo.name)
    return session, Provenance(repo.config, group, session.base_commit, session.branch)


def _unmangled(target: Any) -> Any:
    """A version URL as the user wrote it, even after ``xr.open_mfdataset`` made it a path.

    ``open_mfdataset`` passes every string of its list through ``os.path.abspath`` unless it
    starts with ``scheme://`` (a ``+`` in the scheme does not count), which turns
    ``zarrlake+file:///data/lake`` into ``<cwd>/zarrlake+file:/data/lake``: undo exactly that.
    """
    if not isinstance(target, str):
        return target
    cwd = os.path.join(os.getcwd(), "")
    if not target.startswith(cwd + PREFIX):
        return target
    rest = target[len(cwd) :]
    scheme, sep, tail = rest.partition(":/")
    if not sep or tail.startswith("/"):
        return target
    if scheme.lower() in (PREFIX + "file", PREFIX + "sqlite"):
        return f"{scheme}:///{tail}" if scheme.lower().endswith("file") else f"{scheme}:////{tail}"
    return f"{scheme}://{tail}"
