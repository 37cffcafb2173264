# mypy: disallow-untyped-calls=False
"""Sessions page: open sessions, their staged work, and a countdown ticking in the browser.

A periodic callback (started once the page is shown, stopped when the browser session ends)
adds sessions that open and drops ones that close, without reloading the page.
"""

from __future__ import annotations

from typing import Any

import panel as pn
import param
from panel.viewable import Viewer

from zarrlake import SessionInfo
from zarrlake.ui.dashboard.common import fmt_time, short
from zarrlake.ui.dashboard.context import Context
from zarrlake.ui.dashboard.countdown import Countdown
from zarrlake.ui.dashboard.markup import error_alert, html, html_pane
from zarrlake.ui.dashboard.words import plural

__all__ = ["SessionsView"]


class SessionsView(Viewer):
    """One row per open session; expired ones flagged."""

    poll_ms = param.Integer(default=2000, bounds=(200, None))
    session_ids = param.List(default=[], doc="ids shown, oldest first")

    def __init__(self, ctx: Context, **params: Any) -> None:
        super().__init__(**params)
        self.ctx = ctx
        self._rows: dict[str, tuple[pn.Row, Countdown, pn.pane.HTML]] = {}
        self._staged: dict[str, str] = {}
        self.list = pn.Column(sizing_mode="stretch_width", css_classes=["zl-sessions"])
        self.summary = html_pane("", css_classes=["zl-sessions-summary"])
        self.shown: list[Any] = [self.summary, self._header(), self.list]
        self.body = pn.Column(*self.shown, sizing_mode="stretch_width")
        self._callback: Any = None
        self.refresh()

    def staged(self, sid: str) -> str:
        """The staged change count of a session, read once (its writes rarely matter live)."""
        if sid not in self._staged:
            try:
                s = self.ctx.repo.session(sid).status().summary()
                nodes = s.nodes_added + s.nodes_removed + s.nodes_modified
                chunks = s.chunks_added + s.chunks_changed + s.chunks_removed
                self._staged[sid] = (
                    f"{plural(nodes, 'node')}, {plural(chunks, 'chunk')}"
                    + (
                        f" (+{s.chunks_added} ~{s.chunks_changed} -{s.chunks_removed})"
                        if chunks
                        else ""
                    )
                    if nodes
                    else "nothing staged"
                )
            except Exception:
                self._staged[sid] = "not readable"
        return self._staged[sid]

    def _row(self, info: SessionInfo) -> tuple[pn.Row, Countdown, pn.pane.HTML]:
        cd = Countdown(expires_at=info.expires_at.timestamp(), status=self._status(info), width=190)
        flag = html_pane(self._flag(info), width=80)
        cells = [
            html_pane(html("<code>{}</code>", info.id), width=215),
            html_pane(html("<b>{}</b>", info.branch), width=100),
            html_pane(html('<span class="zl-text">{}</span>', info.author), width=70),
            html_pane(html("<code>{}</code>", short(info.base_commit)), width=110),
            html_pane(html("{}", self.staged(info.id)), width=240),
            html_pane(html("{}", fmt_time(info.created_at)), width=190),
            cd,
            flag,
        ]
        row = pn.Row(*cells, css_classes=["zl-session"], sizing_mode="stretch_width")
        return row, cd, flag

    @staticmethod
    def _status(info: SessionInfo) -> str:
        return info.status  # the engine's status, read from the catalog's clock

    def flag(self, sid: str) -> str:
        """The flag shown at the end of a session's row (``EXPIRED`` or nothing)."""
        return str(self._rows[sid][2].object)

    def _flag(self, info: SessionInfo) -> str:
        if self._status(info) == "expired":
            # the text colour of the theme (readable in light and dark), a red frame
            return (
                '<span class="zl-flag-expired" style="font-weight:bold;border:2px solid '
                '#d62728;border-radius:4px;padding:0 4px">EXPIRED</span>'
            )
        return ""

    def refresh(self) -> None:
        try:
            infos = self.ctx.repo.sessions()
        except Exception as exc:
            self.body.objects = [error_alert(exc)]
            return
        if self.body.objects != self.shown:
            self.body.objects = list(self.shown)
        seen = {i.id for i in infos}
        for sid in [s for s in self._rows if s not in seen]:
            del self._rows[sid]
        for info in infos:
            if info.id not in self._rows:
                self._rows[info.id] = self._row(info)
            else:
                _, cd, flag = self._rows[info.id]
                cd.param.update(expires_at=info.expires_at.timestamp(), status=self._status(info))
                flag.object = self._flag(info)
        ids = [i.id for i in infos]
        if ids != list(self.session_ids) or len(self.list.objects) != len(ids):
            self.list.objects = [self._rows[i][0] for i in ids]
        self.session_ids = ids
        expired = sum(1 for i in infos if self._status(i) == "expired")
        self.summary.object = html(
            "<p><b>{}</b>, {} (refreshed every {} s)</p>",
            plural(len(infos) - expired, "open session"),
            f"{expired:,} expired",
            f"{self.poll_ms / 1000:g}",
        )

    def start(self) -> None:
        """Poll for new and closed sessions (call once the page is served)."""
        if self._callback is None:
            self._callback = pn.state.add_periodic_callback(self.refresh, period=self.poll_ms)

    def stop(self) -> None:
        if self._callback is not None:
            self._callback.stop()
            self._callback = None

    @staticmethod
    def _header() -> pn.Row:
        widths = (215, 100, 70, 110, 240, 190, 190)
        names = ("session", "branch", "author", "base", "staged", "opened", "expiry")
        return pn.Row(
            *(html_pane(html("<b>{}</b>", n), width=w) for n, w in zip(names, widths, strict=True)),
            sizing_mode="stretch_width",
        )

    def __panel__(self) -> pn.viewable.Viewable:
        return pn.Column("## Sessions", self.body, sizing_mode="stretch_width")
