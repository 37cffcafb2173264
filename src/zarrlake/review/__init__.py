"""Review: checks that gate commits and merges, protected branches, data pull requests and
the change feed (exposed by :class:`zarrlake.Repo` through :class:`ReviewMixin`)."""

from zarrlake.review.feed import ChangeEvent
from zarrlake.review.pulls import PullRequest
from zarrlake.review.repo_mixin import ReviewMixin

__all__ = ["ChangeEvent", "PullRequest", "ReviewMixin"]
