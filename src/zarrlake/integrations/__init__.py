"""Integrations with compute frameworks, built on zarrlake's public API only.

* :mod:`zarrlake.integrations.spark`: the ``zarrlake`` PySpark data source (exactly-once
  batch and streaming writes, reads of any version); ``register(spark)`` installs it.

Dask needs no module of its own: ship ``session.store`` to the tasks (see docs/xarray.md).
Each submodule imports its framework; ``import zarrlake`` imports none of them.
"""
