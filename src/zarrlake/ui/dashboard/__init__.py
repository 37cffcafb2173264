"""The zarrlake dashboard (Panel): ``Dashboard(repo)`` in a notebook, ``serve(repo)`` standalone.

Pages: overview, history, compare (with the chunk map), merge preview, data, sessions.
See ``docs/dashboard.md``.
"""

from zarrlake.ui.dashboard.app import PAGES, Dashboard
from zarrlake.ui.dashboard.serve import Served, serve

__all__ = ["PAGES", "Dashboard", "Served", "serve"]
