# mypy: disallow-untyped-calls=False
"""Links to the version a page shows: its version URL (for ``zarrlake.open_dataset``, xarray's
``engine="zarrlake"`` and the command line) and, where the dashboard's server runs the
gateway, its HTTP address for any Zarr v3 reader. Each with a copy button."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import panel as pn
from panel.viewable import Viewer

from zarrlake import version_url
from zarrlake.ui.dashboard.context import Context
from zarrlake.ui.dashboard.markup import error_text

__all__ = ["VersionLinks"]

# the browser copies what the field shows; clipboard access needs a secure context
# (https, or this machine), so a failure says so in the field's title
_COPY = """
const field = source === copy_url ? url : http;
navigator.clipboard.writeText(field.value).then(
  () => { source.label = 'Copied'; setTimeout(() => { source.label = 'Copy'; }, 1500); },
  () => { source.label = 'Select and copy'; });
"""


class VersionLinks(Viewer):
    """The version URL and the gateway address of ``ref`` and an array path."""

    def __init__(self, ctx: Context, **params: Any) -> None:
        super().__init__(**params)
        self.ctx = ctx
        self.url = pn.widgets.TextInput(
            label="Version URL", width=560, css_classes=["zl-version-url"]
        )
        self.http = pn.widgets.TextInput(
            label="Zarr v3 over HTTP", width=560, css_classes=["zl-http-url"]
        )
        self.copy_url = pn.widgets.Button(label="Copy", width=90, css_classes=["zl-copy-url"])
        self.copy_http = pn.widgets.Button(label="Copy", width=90, css_classes=["zl-copy-http"])
        for b in (self.copy_url, self.copy_http):
            b.js_on_click(
                args={
                    "url": self.url,
                    "http": self.http,
                    "copy_url": self.copy_url,
                    "source": b,
                },
                code=_COPY,
            )

    def point(self, ref: str, array: str | None) -> None:
        """Point the links at ``array`` (its group, for the version URL) at ``ref``."""
        group = array.rpartition("/")[0] if array else ""
        try:
            self.url.value = version_url(self.ctx.repo, ref, group or None)
        except Exception as exc:
            self.url.value = error_text(exc)
        self.http.value = self.address(ref, array or "")

    def address(self, ref: str, path: str) -> str:
        """The gateway's URL of ``path`` at ``ref`` ("" without a gateway)."""
        if self.ctx.gateway is None:
            return ""
        parts = [self.ctx.gateway, quote(self.ctx.repo.name, safe=""), quote(ref, safe="")]
        parts += [quote(p, safe="") for p in path.split("/") if p]
        return _origin() + "/".join(parts)

    def __panel__(self) -> pn.viewable.Viewable:
        rows = [pn.Row(self.url, pn.Column(pn.Spacer(height=18), self.copy_url))]
        if self.ctx.gateway is not None:
            rows.append(pn.Row(self.http, pn.Column(pn.Spacer(height=18), self.copy_http)))
        return pn.Column(*rows, css_classes=["zl-links"])


def _origin() -> str:
    loc = pn.state.location
    if loc is None or not loc.hostname:
        return ""
    port = f":{loc.port}" if loc.port else ""
    return f"{loc.protocol}//{loc.hostname}{port}"
