"""Sessions: the unit of work, and what a store sees through one.

A :class:`WritableSession` reads its base commit plus its staged changes (its own and those of
the other processes cooperating on it), stages writes in the catalog, and commits them
atomically with compare-and-swap on its branch, rebasing automatically when commits landed
meanwhile and nothing conflicts. A :class:`ReadonlySession` reads one commit, forever.
"""

from typing import TYPE_CHECKING

from zarrlake._loading import lazy_names

# The registry installs the finder through which a shipped store's opener (a store unpickled
# in a dask worker, say) opens its session: it loads with the package, whatever is imported.
from zarrlake.session import registry as _registry  # noqa: F401

if TYPE_CHECKING:
    from zarrlake.model.lifecycle import DEFAULT_EXPIRY as DEFAULT_EXPIRY
    from zarrlake.model.lifecycle import MAX_EXPIRY as MAX_EXPIRY
    from zarrlake.session.base import Session as Session
    from zarrlake.session.opener import SessionOpener as SessionOpener
    from zarrlake.session.readonly import ReadonlySession as ReadonlySession
    from zarrlake.session.registry import join_session as join_session
    from zarrlake.session.registry import list_sessions as list_sessions
    from zarrlake.session.registry import start_session as start_session
    from zarrlake.session.writable import WritableSession as WritableSession

__all__ = [
    "DEFAULT_EXPIRY",
    "MAX_EXPIRY",
    "ReadonlySession",
    "Session",
    "SessionOpener",
    "WritableSession",
    "join_session",
    "list_sessions",
    "start_session",
]

# Each name loads its module on first use, so importing one submodule loads none of the others
# (a read-only session needs none of the writing machinery).
__getattr__, __dir__ = lazy_names(
    __name__,
    {
        "zarrlake.session.base": ("Session",),
        "zarrlake.session.opener": ("SessionOpener",),
        "zarrlake.session.readonly": ("ReadonlySession",),
        "zarrlake.session.registry": ("join_session", "list_sessions", "start_session"),
        "zarrlake.model.lifecycle": ("DEFAULT_EXPIRY", "MAX_EXPIRY"),
        "zarrlake.session.writable": ("WritableSession",),
    },
)
