"""What tests need below the public API, in one supported place.

- :class:`LakeProbe`: a repo's catalog interface, node reader and object store, its catalog
  database for tests that inspect or damage rows, and small helpers (object and node hashes).
- :func:`live_sessions`: how many session objects this process's registry holds.
- :mod:`zarrlake.testing.memory`: an in-memory fake of the catalog interface, to run session
  and history logic without a database (:func:`memory_repo`).

Crash points for crash tests are :mod:`zarrlake.faults` (``ZARRLAKE_CRASH_AT``).
"""

from zarrlake.testing.memory import MemoryCatalog, memory_repo
from zarrlake.testing.probe import LakeProbe, live_sessions

__all__ = ["LakeProbe", "MemoryCatalog", "live_sessions", "memory_repo"]
