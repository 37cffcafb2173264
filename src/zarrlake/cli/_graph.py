"""The commit graph of ``zarrlake log --graph``, drawn in text from the engine's lanes
(``repo.graph()``): one line per commit, and a connector line where lines fork or join."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from zarrlake import CommitInfo, GraphRow

__all__ = ["graph_lines"]

Edge = tuple[int, int]


def _connector(edges: Sequence[Edge], width: int) -> str | None:
    """The line between two rows, or ``None`` when every line goes straight down."""
    if all(a == b for a, b in edges):
        return None
    chars = [" "] * (2 * width)
    for a, b in edges:
        if a < b:
            chars[2 * a + 1] = "\\"
            for k in range(2 * a + 2, 2 * b):
                chars[k] = "_" if chars[k] == " " else chars[k]
        elif a > b:
            chars[2 * a - 1] = "/"
            for k in range(2 * b + 1, 2 * a - 1):
                chars[k] = "_" if chars[k] == " " else chars[k]
    for a, b in edges:
        if a == b:
            chars[2 * a] = "|"
    return "".join(chars).rstrip()


def graph_lines(
    rows: Sequence[GraphRow],
    incoming: Sequence[Edge],
    width: int,
    describe: Callable[[CommitInfo], str],
) -> list[str]:
    """Text lines for ``rows`` (a page of ``repo.graph()``): ``*`` marks each commit in its
    lane, ``|`` a line passing by, ``\\`` and ``/`` a line forking to or joining another
    lane. ``incoming`` are the lines entering the first row from above."""
    out: list[str] = []
    above = [b for _, b in incoming]
    for i, row in enumerate(rows):
        chars = [" "] * (2 * width)
        for lane in above:
            chars[2 * lane] = "|"
        chars[2 * row.lane] = "*"
        out.append("".join(chars).rstrip() + "  " + describe(row.commit))
        if i + 1 < len(rows) and (line := _connector(row.edges, width)) is not None:
            out.append(line)
        above = [b for _, b in row.edges]
    return out
