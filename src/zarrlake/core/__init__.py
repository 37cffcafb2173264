"""The engine core: one internal object per open repo, and the commit transaction.

Sessions, history and maintenance operate on a :class:`RepoCore`; :class:`zarrlake.Repo` is a
thin public facade over one.
"""

from zarrlake.core.commit import BuiltCommit, publish_commit
from zarrlake.core.reader import CatalogReader
from zarrlake.core.repo_core import RepoCore, create_core, forget_cores, open_core

__all__ = [
    "BuiltCommit",
    "CatalogReader",
    "RepoCore",
    "create_core",
    "forget_cores",
    "open_core",
    "publish_commit",
]
