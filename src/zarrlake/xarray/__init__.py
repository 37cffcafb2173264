"""xarray on zarrlake: :func:`open_dataset`, :func:`commit`, and the ``ds.lake`` accessor.

Importing this module registers the accessor, so ``import zarrlake.xarray`` (or the first use
of ``zarrlake.open_dataset``, or importing xarray and zarrlake in either order) enables
``ds.lake`` on every Dataset::

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

from typing import TYPE_CHECKING

from zarrlake._loading import lazy_names
from zarrlake.xarray.accessor import LakeAccessor
from zarrlake.xarray.provenance import ENCODING_KEY, Provenance, provenance

if TYPE_CHECKING:
    from zarrlake.xarray.alignment import check_aligned
    from zarrlake.xarray.reading import branch, checkout, diff, log, open_dataset, status
    from zarrlake.xarray.writing import commit

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

# Loaded on first use: xarray lists every installed engine (importing this package) when it
# opens any file, and registering ``ds.lake`` needs neither the catalog nor zarr.
_LAZY = {
    "zarrlake.xarray.alignment": ("check_aligned",),
    "zarrlake.xarray.reading": ("branch", "checkout", "diff", "log", "open_dataset", "status"),
    "zarrlake.xarray.writing": ("commit",),
}


__getattr__, __dir__ = lazy_names(__name__, _LAZY)
