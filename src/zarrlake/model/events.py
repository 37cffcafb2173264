"""The events a repo's rules are about: what a check runs on, and what a webhook is told of.

Apart from :mod:`zarrlake.model.rules` (which re-exports them) so that ``Repo``'s method
signatures name them without loading the rules.
"""

from __future__ import annotations

__all__ = ["EVENTS", "HOOK_EVENTS"]

EVENTS = ("commit", "merge")
"""What a check may run before: a commit, a merge."""
HOOK_EVENTS = ("commit", "merge", "pull_request")
"""What a webhook may be told of."""
