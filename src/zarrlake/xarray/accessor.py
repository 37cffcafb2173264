"""``ds.lake``: version control for a Dataset; each method a one-line delegation.

Registered whenever xarray and zarrlake are both imported, so this module loads only what its
``repr`` needs: each method imports the function it delegates to (and with it the catalog and
zarr) when first called.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

import xarray as xr

from zarrlake._optional import load
from zarrlake.types import safe_url
from zarrlake.xarray.provenance import Provenance, Region, WriteMode, find_provenance, provenance

if TYPE_CHECKING:
    from zarrlake.model.diff import Diff
    from zarrlake.repo import Repo
    from zarrlake.session import Session
    from zarrlake.types import CommitInfo

__all__ = ["LakeAccessor"]


# -- the accessor ----------------------------------------------------------------------------


@xr.register_dataset_accessor("lake")  # type: ignore[no-untyped-call]
class LakeAccessor:
    """``ds.lake``: version control for a Dataset. See :mod:`zarrlake.xarray`."""

    def __init__(self, ds: xr.Dataset) -> None:
        # Nothing here may fail: an AttributeError raised while the accessor is built would
        # be reported by xarray as "Dataset has no attribute 'lake'".
        self._ds = ds

    def __repr__(self) -> str:
        prov = find_provenance(self._ds)
        if prov is None:
            return (
                "<ds.lake: not from a lake; open it with zarrlake.open_dataset(repo, ref, "
                "group=...) or commit it with ds.lake.commit(message, repo=repo)>"
            )
        ref = f"session {prov.session}" if prov.session else prov.branch or "(a fixed commit)"
        return "\n".join(
            [
                f"<ds.lake: repo {prov.config.name!r} at {safe_url(prov.config.catalog)}",
                f"  ref:    {ref}",
                f"  commit: {prov.commit[:12]}",
                f"  group:  /{prov.group or ''}>",
            ]
        )

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
        from zarrlake.xarray.writing import commit

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
        from zarrlake.xarray.reading import checkout

        return checkout(self._ds, ref, **kwargs)

    def log(self, ref: str | None = None, *, limit: int | None = None) -> list[CommitInfo]:
        """The history of the Dataset's data (see :func:`log`)."""
        from zarrlake.xarray.reading import log

        return log(self._ds, ref, limit=limit)

    def widget(self) -> Any:
        """A Jupyter widget browsing the history of this Dataset's data (see
        :meth:`zarrlake.Repo.widget`); ``widget.selected_dataset()`` opens a chosen commit."""
        return load("zarrlake.ui.widgets", "RepoBrowser", "ui").for_dataset(self._ds)

    def diff(self, other: xr.Dataset | str) -> Diff:
        """What changed from the Dataset's commit to ``other`` (see :func:`diff`)."""
        from zarrlake.xarray.reading import diff

        return diff(self._ds, other)

    def status(self) -> Diff:
        """The changes staged in the Dataset's session (see :func:`status`)."""
        from zarrlake.xarray.reading import status

        return status(self._ds)

    def branch(self, name: str) -> xr.Dataset:
        """Create a branch at the Dataset's commit (see :func:`branch`)."""
        from zarrlake.xarray.reading import branch

        return branch(self._ds, name)
