"""Data where it already lives: where a repo's virtual chunk references may point, copying
referenced chunks into the lake (``materialize``), and importing existing Zarr stores."""

from zarrlake.virtual.repo_mixin import VirtualSourcesMixin, allow_sources, virtual_chunks
from zarrlake.virtual.zarr_import import import_zarr

__all__ = ["VirtualSourcesMixin", "allow_sources", "import_zarr", "virtual_chunks"]
