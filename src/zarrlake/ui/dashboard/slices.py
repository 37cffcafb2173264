# mypy: disallow-untyped-calls=False
"""Slices of N-D arrays: the ``dim=index`` text kept in the URL, and reading one 2-D slice."""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

import numpy as np

from zarrlake import InvalidInputError
from zarrlake.ui.dashboard.reader import ArrayInfo, coord_label

__all__ = [
    "MAX_VALUES",
    "dim_slider",
    "format_slice",
    "parse_slice",
    "read_slice",
    "selection",
    "slider_text",
]

MAX_VALUES = 512  # elements a side read for the value plots
MAX_CHUNKS_READ = 32  # chunks a side read for them (small chunks: a smaller window)


def parse_slice(text: str) -> dict[str, int]:
    """``"time=3,depth=0"`` -> ``{"time": 3, "depth": 0}`` (dim names percent-encoded, as
    :func:`format_slice` writes them)."""
    out: dict[str, int] = {}
    for part in filter(None, (p.strip() for p in (text or "").split(","))):
        dim, sep, idx = part.rpartition("=")
        try:
            out[unquote(dim.strip())] = int(idx)
        except ValueError:
            raise InvalidInputError(f"slice {text!r}: expected dim=index, got {part!r}") from None
        if not sep:
            raise InvalidInputError(f"slice {text!r}: expected dim=index, got {part!r}")
    return out


def format_slice(sel: dict[str, int]) -> str:
    """``{"time": 3}`` -> ``"time=3"``; a dim name is percent-encoded where it holds ``,``,
    ``=`` or ``%`` (any text may name a dimension)."""
    return ",".join(f"{_quote(k)}={v}" for k, v in sel.items())


def _quote(dim: str) -> str:
    return dim.replace("%", "%25").replace(",", "%2C").replace("=", "%3D")


def selection(
    info: ArrayInfo, rows: int | None, cols: int | None, fixed: dict[str, int]
) -> tuple[Any, ...]:
    """Index tuple: whole (capped) shown axes, one element of each other axis (clamped)."""
    sel: list[Any] = []
    for a, (dim, n) in enumerate(zip(info.dims, info.shape, strict=True)):
        if a in (rows, cols):
            sel.append(slice(0, min(n, MAX_VALUES, MAX_CHUNKS_READ * info.chunks[a])))
        else:
            sel.append(int(min(max(fixed.get(dim, 0), 0), max(n - 1, 0))))
    return tuple(sel)


def read_slice(arr: Any, sel: tuple[Any, ...]) -> np.ndarray:
    """Read only the chunks the selection touches; 1-D results become one row."""
    out = np.asarray(arr[sel])
    return (
        out.reshape(1, -1)
        if out.ndim == 1
        else out.reshape(out.shape[-2:])
        if out.ndim
        else out.reshape(1, 1)
    )


MAX_LABELLED = 2000  # above this many steps a slider shows indices, not coordinate labels


def dim_slider(info: ArrayInfo, dim: str, value: int) -> Any:
    """A slider over one dim's elements, labelled by its coordinate values when the array
    has them (``time: 2025-04-01``, not ``time: 3``); its value is the element index."""
    import panel as pn

    n = info.shape[info.dims.index(dim)]
    value = int(min(max(value, 0), n - 1))
    values = info.coords.get(dim)
    if values is None or n > MAX_LABELLED:
        return pn.widgets.IntSlider(label=dim, start=0, end=n - 1, value=value, width=260)
    labels = [coord_label(values, i, i + 1) for i in range(n)]
    if len(set(labels)) != n:  # labels must tell the steps apart
        labels = [f"{t} ({i})" for i, t in enumerate(labels)]
    return pn.widgets.DiscreteSlider(
        label=dim, options=dict(zip(labels, range(n), strict=True)), value=value, width=260
    )


def slider_text(info: ArrayInfo, dim: str, index: int) -> str:
    """``time 2025-04-01`` (coordinates) or ``time=3`` (no coordinates)."""
    values = info.coords.get(dim)
    if values is None or not 0 <= index < len(values):
        return f"{dim}={index}"
    return f"{dim} {coord_label(values, index, index + 1)}"
