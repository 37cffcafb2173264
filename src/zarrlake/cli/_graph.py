"""The commit graph of ``zarrlake log --graph``: merges drawn with lanes, as ``git log --graph``.

Pure: takes commits (id, parents, time) and returns lines; the walk that collects them is in
the ``log`` command.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from zarrlake import CommitInfo

__all__ = ["graph_lines", "topo_order"]


def topo_order(commits: Mapping[str, CommitInfo]) -> list[CommitInfo]:
    """Children before parents; among commits free to go next, the newest first."""
    waiting = dict.fromkeys(commits, 0)
    for c in commits.values():
        for p in c.parents:
            if p in waiting:
                waiting[p] += 1
    ready = [(-c.created_at.timestamp(), c.id) for c in commits.values() if waiting[c.id] == 0]
    heapq.heapify(ready)
    out: list[CommitInfo] = []
    while ready:
        _, cid = heapq.heappop(ready)
        c = commits[cid]
        out.append(c)
        for p in c.parents:
            if p in waiting:
                waiting[p] -= 1
                if waiting[p] == 0:
                    heapq.heappush(ready, (-commits[p].created_at.timestamp(), p))
    return out


def _row(lanes: Sequence[str | None]) -> list[str]:
    chars: list[str] = []
    for lane in lanes:
        chars += ["|" if lane else " ", " "]
    return chars


def graph_lines(ordered: Sequence[CommitInfo], describe: Callable[[CommitInfo], str]) -> list[str]:
    """One ``*`` line per commit with its lane, and connector lines where lanes fork and join.

    A merge opens a lane for its second parent (``|\\``), even if another lane already waits
    for that commit; lanes that wait for the same commit close into the leftmost one (``|/``)
    before it is drawn. Parents outside ``ordered`` (the
    walk was cut by ``-n``) end their lane.
    """
    known = {c.id for c in ordered}
    lanes: list[str | None] = []
    out: list[str] = []
    for c in ordered:
        mine = [i for i, lane in enumerate(lanes) if lane == c.id]
        if not mine:
            col = lanes.index(None) if None in lanes else len(lanes)
            if col == len(lanes):
                lanes.append(c.id)
            else:
                lanes[col] = c.id
        else:
            col = mine[0]
            for k in reversed(mine[1:]):  # join the other lanes waiting for c into col
                chars = _row(lanes)
                chars[2 * k] = " "
                chars[2 * k - 1] = "/"
                for j in range(2 * col + 1, 2 * k - 1):
                    if chars[j] == " ":
                        chars[j] = "_"
                for j in range(k + 1, len(lanes)):
                    if lanes[j]:
                        chars[2 * j], chars[2 * j - 1] = " ", "/"
                out.append("".join(chars).rstrip())
                del lanes[k]
        chars = _row(lanes)
        chars[2 * col] = "*"
        out.append("".join(chars).rstrip() + "  " + describe(c))
        parents = [p for p in c.parents if p in known]
        lanes[col] = parents[0] if parents else None
        for p in parents[1:]:
            old = list(lanes)
            lanes.insert(col + 1, p)
            chars = _row(old)
            chars[2 * col + 1] = "\\"
            for j in range(col + 1, len(old)):
                if old[j]:
                    chars[2 * j], chars[2 * j + 1] = " ", "\\"
            out.append("".join(chars).rstrip())
        while lanes and lanes[-1] is None:
            lanes.pop()
    return out
