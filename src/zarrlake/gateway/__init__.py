"""A read-only Zarr v3 gateway over HTTP: ``/<repo>/<ref>/<zarr key>`` for every branch, tag
and commit of a lake, so that any Zarr reader (zarr-python's FsspecStore, zarr.js, R, Julia,
browser viewers) reads exactly one version.

``zarrlake serve LAKE`` runs it alone; the dashboard's server mounts it under ``/zarr``.
Needs the ``gateway`` extra (tornado). See ``docs/reach.md``.
"""

from zarrlake.gateway.app import Served, make_app, routes, serve
from zarrlake.gateway.versions import Lake, Version

__all__ = ["Lake", "Served", "Version", "make_app", "routes", "serve"]
