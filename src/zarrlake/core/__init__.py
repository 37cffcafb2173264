"""The engine core: one internal object per open repo, and the commit transaction.

Sessions, history and maintenance operate on a :class:`RepoCore`; :class:`zarrlake.Repo` is a
thin public facade over one.
"""

from typing import TYPE_CHECKING

from zarrlake._loading import lazy_names

if TYPE_CHECKING:
    from zarrlake.core.commit import BuiltCommit as BuiltCommit
    from zarrlake.core.commit import publish_commit as publish_commit
    from zarrlake.core.reader import CatalogReader as CatalogReader
    from zarrlake.core.repo_core import RepoCore as RepoCore
    from zarrlake.core.repo_core import create_core as create_core
    from zarrlake.core.repo_core import forget_cores as forget_cores
    from zarrlake.core.repo_core import open_core as open_core

__all__ = [
    "BuiltCommit",
    "CatalogReader",
    "RepoCore",
    "create_core",
    "forget_cores",
    "open_core",
    "publish_commit",
]

# Each name loads its module on first use, so importing one submodule loads none of the others
# (reading needs the core, not the commit transaction and its gate).
__getattr__, __dir__ = lazy_names(
    __name__,
    {
        "zarrlake.core.commit": ("BuiltCommit", "publish_commit"),
        "zarrlake.core.reader": ("CatalogReader",),
        "zarrlake.core.repo_core": ("RepoCore", "create_core", "forget_cores", "open_core"),
    },
)
