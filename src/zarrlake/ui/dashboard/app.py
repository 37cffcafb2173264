# mypy: disallow-untyped-calls=False
"""The dashboard: pages as tabs, the page state in the URL, a template with a theme toggle."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import panel as pn
import param
from panel.theme.fast import Fast
from panel.viewable import Viewer

from zarrlake import Repo
from zarrlake.ui.dashboard.common import Writes
from zarrlake.ui.dashboard.markup import error_alert

__all__ = ["PAGES", "Dashboard"]

PAGES = ["overview", "history", "compare", "merge", "data", "sessions", "pulls"]

RepoSource = Repo | Callable[[], Repo]
FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif"


class Dashboard(Viewer):
    """The commit browser of one repo.

    ``repo`` may be a :class:`zarrlake.Repo` or a function that opens one: then opening
    happens after the page appears, and a failure (no lake there, catalog unreachable) is a
    message on the page. Writes exist only with ``allow_writes``, and each needs ``token``.
    ``gateway`` is the path where the server runs the Zarr gateway, if it does.
    """

    page = param.Selector(default="overview", objects=PAGES)  # type: ignore[var-annotated]

    def __init__(
        self,
        repo: RepoSource,
        *,
        allow_writes: bool = False,
        token: str | None = None,
        gateway: str | None = None,
        **params: Any,
    ) -> None:
        super().__init__(**params)
        self._source = repo
        self.gateway = gateway
        self.writes = Writes(allow_writes, token)
        self.views: dict[str, Any] = {}
        self.error: BaseException | None = None
        self.tabs = pn.Tabs(sizing_mode="stretch_width", dynamic=False)
        self.body = pn.Column(
            pn.indicators.LoadingSpinner(value=True, size=40, name="opening the lake…"),
            sizing_mode="stretch_width",
        )
        self._loaded = False
        self._served = False
        self._in_url: Any = None  # the page view whose parameters are in the URL

    # -- building ------------------------------------------------------------------------------

    def load(self) -> None:
        """Open the lake and build the page shown (slow catalog work: call after the page
        appears). The other pages are built when first shown."""
        if self._loaded:
            return
        self._loaded = True
        from zarrlake.ui.dashboard.context import Context

        try:
            repo = self._source if isinstance(self._source, Repo) else self._source()
            self.ctx = Context(repo, self.writes, self.gateway)
            repo.branches()  # reach the catalog now: an unreachable one fails here, clearly
        except Exception as exc:
            self.error = exc
            self.body.objects = [error_alert(exc)]
            return
        self.tabs.objects = [
            pn.Column(name=name.capitalize(), sizing_mode="stretch_width") for name in PAGES
        ]
        self.tabs.active = PAGES.index(self.page)
        self.tabs.param.watch(self._on_tab, "active")
        self.body.objects = [self.tabs]
        self.view(self.page)

    def view(self, name: str) -> Any:
        """The page ``name``, built on first use."""
        if name not in self.views:
            # the page modules themselves, not the package (which imports this module)
            import zarrlake.ui.dashboard.compare as compare
            import zarrlake.ui.dashboard.data as data
            import zarrlake.ui.dashboard.history as history
            import zarrlake.ui.dashboard.merge as merge
            import zarrlake.ui.dashboard.overview as overview
            import zarrlake.ui.dashboard.pulls as pulls
            import zarrlake.ui.dashboard.sessions as sessions

            cls = {
                "overview": overview.OverviewView,
                "history": history.HistoryView,
                "compare": compare.CompareView,
                "merge": merge.MergeView,
                "data": data.DataView,
                "sessions": sessions.SessionsView,
                "pulls": pulls.PullsView,
            }[name]
            holder = self.tabs.objects[PAGES.index(name)]
            try:
                v = self.views[name] = cls(self.ctx, **_url_values(cls))
            except Exception as exc:
                holder.objects = [error_alert(exc)]
                return None
            if self._served:
                self._hook(v)
            holder.objects = [v]
        return self.views[name]

    def _on_tab(self, event: param.parameterized.Event) -> None:
        self.page = PAGES[event.new]

    @param.depends("page", watch=True)
    def _on_page(self) -> None:
        if self.tabs.objects:
            self.tabs.active = PAGES.index(self.page)
            self.view(self.page)
            doc = pn.state.curdoc
            if self._served and doc is not None and doc.session_context is not None:
                # after the location has written the new page into the URL
                doc.add_next_tick_callback(self._sync_url)

    def _hook(self, v: Any) -> None:
        if hasattr(v, "start"):
            v.start()
        self._sync_url()

    def _sync_url(self) -> None:
        """Only the page shown keeps its parameters in the URL: the link names what is on
        screen, not every page visited before."""
        loc = pn.state.location
        v = self.views.get(self.page)
        if loc is None or v is self._in_url:
            return
        if self._in_url is not None:
            loc.unsync(self._in_url)
            self._in_url = None
        sync = getattr(v, "url_params", None)
        if v is not None and sync:
            loc.sync(v, sync)
            self._in_url = v

    def serve_session(self) -> None:
        """Hook this dashboard to the browser session: URL sync, polling, cleanup."""
        self._served = True
        if pn.state.location is not None:
            pn.state.location.sync(self, {"page": "page"})
        for v in self.views.values():
            self._hook(v)

        def stop(_: Any) -> None:
            for v in self.views.values():
                if hasattr(v, "stop"):
                    v.stop()

        pn.state.on_session_destroyed(stop)

    def __panel__(self) -> pn.viewable.Viewable:
        if pn.state.curdoc is not None and pn.state.curdoc.session_context is not None:

            def ready() -> None:
                self.page = _page_from_url(self.page)
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
            design=OfflineFast,
            font_url="",  # no web font: the page loads with no request leaving the machine
            font=FONT,
            main=[self],
            theme_toggle=True,
            header_background="#1f4e79",
            accent_base_color="#1f77b4",
            main_max_width="1500px",
            raw_css=[CSS],
            # Panel keeps a template's busy spinner in a process-wide list until its session
            # is destroyed, which a stopped server never does: a later server in the same
            # process (a notebook serving twice) then fails every event on the dead one
            busy_indicator=None,
        )
        return tpl


def _without_web_font(cls: type[Fast]) -> type[Fast]:
    """Panel's Fast design without its web font (fetched from the internet otherwise).

    A design declares its files in ``_resources``, Panel's documented way to extend one; the
    subclass is named ``Fast`` too, since Panel finds a design's bundled files by its name.
    """
    return type("Fast", (cls,), {"_resources": {**cls._resources, "font": {}}})


OfflineFast = _without_web_font(Fast)


def _url_values(cls: Any) -> dict[str, Any]:
    """A page's parameters given in the URL, so a deep link is computed once, not twice."""
    args = pn.state.session_args or {}
    out: dict[str, Any] = {}
    for p, q in getattr(cls, "url_params", {}).items():
        if q in args:
            raw = args[q][0]
            text = raw.decode() if isinstance(raw, bytes) else str(raw)
            kind = cls.param[p]
            if isinstance(kind, param.Boolean):
                out[p] = text.lower() in ("true", "1", "yes")
            elif isinstance(kind, param.Selector):
                if text in kind.objects:
                    out[p] = text
            elif isinstance(kind, param.Integer):
                if text.isdigit():
                    out[p] = int(text)
            else:
                out[p] = text
    return out


def _page_from_url(default: str) -> str:
    """The ``page`` query argument, so the first page built is the one the link names."""
    args = pn.state.session_args or {}
    raw = args.get("page", [b""])[0]
    name = raw.decode() if isinstance(raw, bytes) else str(raw)
    return name if name in PAGES else default


CSS = """
.zl-countdown { font-family: monospace; font-weight: bold; }
.zl-countdown[data-state="expired"] { color: #fff; background: #c62828; border-radius: 3px;
  padding: 0 4px; }
.zl-countdown[data-state="closed"] { color: #777; }
.zl-session { border-bottom: 1px solid rgba(128,128,128,0.3); align-items: center; }
"""
