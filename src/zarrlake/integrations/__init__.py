"""Integrations with compute frameworks, built on zarrlake's public API only.

* :mod:`zarrlake.integrations.dask`: stores for dask (and ``dask.distributed``) tasks that
  write into one session from many processes.

Each submodule imports its framework; ``import zarrlake`` imports none of them.
"""
