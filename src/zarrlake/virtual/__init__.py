"""Data where it already lives: where a repo's virtual chunk references may point, copying
referenced chunks into the lake (``materialize``), and importing existing Zarr stores."""

from zarrlake.virtual.repo_mixin import VirtualSourcesMixin, allow_sources, virtual_chunks

__all__ = ["VirtualSourcesMixin", "allow_sources", "virtual_chunks"]
