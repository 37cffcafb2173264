"""The dashboard: pages as tabs, the page state in the URL, a template with a theme toggle."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import panel as pn
import param
from panel.viewable import Viewer

from zarrlake import Repo
from zarrlake.ui.dashboard.common import Writes, error_alert

__all__ = ["PAGES", "Dashboard"]

PAGES = ["overview", "history", "compare", "merge", "data", "sessions"]

RepoSource = Repo | Callable[[], Repo]


class Dashboard(Viewer):  # type: ignore[misc]
    """The commit browser of one repo.

    ``repo`` may be a :class:`zarrlake.Repo` or a function that opens one: then opening
    happens after the page appears, and a failure (no lake there, catalog unreachable) is a
    message on the page. Writes exist only with ``allow_writes``, and each needs ``token``.
    """

    page = param.Selector(default="overview", objects=PAGES)

    def __init__(
        self,
        repo: RepoSource,
        *,
        allow_writes: bool = False,
        token: str | None = None,
        **params: Any,
    ) -> None:
        super().__init__(**params)
        self._source = repo
        self.writes = Writes(allow_writes, token)
        self.views: dict[str, Any] = {}
        self.error: BaseException | None = None
        self.tabs = pn.Tabs(sizing_mode="stretch_width", dynamic=False)
        self.body = pn.Column(
            pn.indicators.LoadingSpinner(value=True, size=40, name="opening the lake…"),
            sizing_mode="stretch_width",
        )
        self._loaded = False

    # -- building ------------------------------------------------------------------------------

    def load(self) -> None:
        """Open the lake and build every page (slow catalog work: call after the page shows)."""
        if self._loaded:
            return
        self._loaded = True
        from zarrlake.ui.dashboard.compare import CompareView
        from zarrlake.ui.dashboard.context import Context
        from zarrlake.ui.dashboard.data import DataView
        from zarrlake.ui.dashboard.history import HistoryView
        from zarrlake.ui.dashboard.merge import MergeView
        from zarrlake.ui.dashboard.overview import OverviewView
        from zarrlake.ui.dashboard.sessions import SessionsView

        try:
            repo = self._source if isinstance(self._source, Repo) else self._source()
            ctx = Context(repo, self.writes)
            self.views = {
                "overview": OverviewView(ctx),
                "history": HistoryView(ctx),
                "compare": CompareView(ctx),
                "merge": MergeView(ctx),
                "data": DataView(ctx),
                "sessions": SessionsView(ctx),
            }
        except Exception as exc:  # noqa: BLE001 - a clear message on the page, not a trace
            self.error = exc
            self.body.objects = [error_alert(exc)]
            return
        self.tabs.objects = [
            pn.Column(v, name=name.capitalize(), sizing_mode="stretch_width")
            for name, v in self.views.items()
        ]
        self.tabs.active = PAGES.index(self.page)
        self.tabs.param.watch(self._on_tab, "active")
        self.body.objects = [self.tabs]

    def _on_tab(self, event: param.parameterized.Event) -> None:
        self.page = PAGES[event.new]

    @param.depends("page", watch=True)
    def _on_page(self) -> None:
        if self.tabs.objects:
            self.tabs.active = PAGES.index(self.page)

    def serve_session(self) -> None:
        """Hook this dashboard to the browser session: URL sync, polling, cleanup."""
        loc = pn.state.location
        if loc is not None:
            loc.sync(self, {"page": "page"})
        for v in self.views.values():
            sync = getattr(v, "url_params", None)
            if loc is not None and sync:
                loc.sync(v, sync)
            if hasattr(v, "start"):
                v.start()

        def stop(_: Any) -> None:
            for v in self.views.values():
                if hasattr(v, "stop"):
                    v.stop()

        pn.state.on_session_destroyed(stop)

    def __panel__(self) -> pn.viewable.Viewable:
        if pn.state.curdoc is not None and pn.state.curdoc.session_context is not None:
            def ready() -> None:
                self.load()
                self.serve_session()

            pn.state.onload(ready)
        else:
            self.load()
        return self.body

    def template(self) -> pn.template.base.BasicTemplate:
        """The page a server shows: this dashboard in a template with a theme toggle."""
        tpl = pn.template.FastListTemplate(
            title="zarrlake",
            main=[self],
            theme_toggle=True,
            header_background="#1f4e79",
            accent_base_color="#1f77b4",
            main_max_width="1500px",
            raw_css=[CSS],
        )
        return tpl


CSS = """
.zl-countdown { font-family: monospace; font-weight: bold; }
.zl-countdown[data-state="expired"] { color: #c62828; }
.zl-countdown[data-state="closed"] { color: #777; }
.zl-session { border-bottom: 1px solid rgba(128,128,128,0.3); align-items: center; }
"""
