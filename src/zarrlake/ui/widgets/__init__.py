"""Jupyter widgets (ipywidgets and anywidget): ``RepoBrowser`` for history and diffs,
``SessionWidget`` for a session's expiry, ``PullRequestWidget`` to approve and merge a pull
request, ``Countdown`` (the browser-side timer, shared with
the dashboard through ``ui/static/countdown.js``). Needs the ``ui`` extra."""

from zarrlake.ui.widgets.countdown import COUNTDOWN_JS, Countdown
from zarrlake.ui.widgets.pull import PullRequestWidget
from zarrlake.ui.widgets.repo_browser import RepoBrowser
from zarrlake.ui.widgets.session import SessionWidget

__all__ = ["COUNTDOWN_JS", "Countdown", "PullRequestWidget", "RepoBrowser", "SessionWidget"]
