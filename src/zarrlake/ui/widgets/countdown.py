"""The session countdown as an anywidget: the browser ticks, the kernel only sends changes."""

from __future__ import annotations

from pathlib import Path

import anywidget
import traitlets

__all__ = ["COUNTDOWN_JS", "Countdown"]

COUNTDOWN_JS = Path(__file__).resolve().parent.parent / "static" / "countdown.js"


class Countdown(anywidget.AnyWidget):
    """``expires in 4 min 12 s`` until ``expires_at``, then ``expired``; ``committed`` or
    ``abandoned`` once the session closed.

    Attributes
    ----------
    expires_at
        Epoch seconds (UTC).
    status
        ``open``, ``committed``, ``abandoned`` or ``expired``.
    """

    _esm = COUNTDOWN_JS
    _css = """
    .zl-countdown { font-family: var(--jp-ui-font-family, sans-serif); }
    .zl-countdown[data-state="open"] { color: var(--jp-success-color1, #2e7d32); }
    .zl-countdown[data-state="expired"] { color: var(--jp-error-color1, #c62828); font-weight: 600; }
    .zl-countdown[data-state="closed"] { color: var(--jp-content-font-color2, #777); }
    """
    expires_at = traitlets.Float(0.0).tag(sync=True)
    status = traitlets.Unicode("open").tag(sync=True)
