"""Entry points into optional layers (the ``ui`` extra) from the public objects.

``repo.widget()``, ``repo.dashboard()`` and ``session.widget()`` are conveniences on objects of
lower layers; the layers they open import the public API themselves. So they are looked up by
name, on first use, and a missing extra is reported as what to install, not an ImportError.
"""

from __future__ import annotations

from typing import Any

from zarrlake._loading import load_module
from zarrlake.errors import ZarrlakeError

__all__ = ["MissingExtraError", "load"]


class MissingExtraError(ZarrlakeError, ImportError):
    """An optional part of zarrlake needs packages that are not installed."""

    kind = "missing_extra"


def load(module: str, name: str, extra: str) -> Any:
    """``module.name``, imported now; :class:`MissingExtraError` names the extra to install."""
    try:
        return getattr(load_module(module), name)
    except ImportError as exc:
        raise MissingExtraError(
            f"{module}.{name} needs the {extra!r} extra: pip install 'zarrlake[{extra}]' ({exc})"
        ) from exc
