"""Review: checks that gate commits and merges, protected branches, data pull requests and
the change feed (exposed by :class:`zarrlake.Repo` through :class:`ReviewMixin`)."""

from typing import TYPE_CHECKING

from zarrlake._loading import lazy_names

if TYPE_CHECKING:
    from zarrlake.review.feed import ChangeEvent as ChangeEvent
    from zarrlake.review.pulls import PullRequest as PullRequest
    from zarrlake.review.repo_mixin import ReviewMixin as ReviewMixin

__all__ = ["ChangeEvent", "PullRequest", "ReviewMixin"]

# Each name loads its module on first use, so importing one submodule loads none of the others
# (``Repo`` needs only ``ReviewMixin``).
__getattr__, __dir__ = lazy_names(
    __name__,
    {
        "zarrlake.review.feed": ("ChangeEvent",),
        "zarrlake.review.pulls": ("PullRequest",),
        "zarrlake.review.repo_mixin": ("ReviewMixin",),
    },
)
