# mypy: disallow-untyped-calls=False
"""The session countdown in the dashboard: the shared ES module as a Panel component."""

from __future__ import annotations

from pathlib import Path

import panel as pn
import param

__all__ = ["ESM_PATH", "Countdown"]

ESM_PATH = Path(__file__).resolve().parent.parent / "static" / "countdown.js"


class Countdown(pn.custom.AnyWidgetComponent):
    """Ticks in the browser; the server only sends ``expires_at`` and ``status`` changes."""

    _esm = ESM_PATH
    # The component renders in a shadow root: page-wide CSS does not reach it.
    _stylesheets = [
        ".zl-countdown { font-family: monospace; font-weight: bold; }"
        # white on red reads at WCAG AA (5.6:1) on the light and the dark theme alike
        ' .zl-countdown[data-state="expired"] { color: #fff; background: #c62828;'
        " border-radius: 3px; padding: 0 4px; }"
        ' .zl-countdown[data-state="closed"] { color: #888; }'
    ]
    expires_at = param.Number(default=0.0, doc="epoch seconds, UTC")
    status = param.String(default="open")
