"""The rows the History page shows: one page of the engine's commit graph (``repo.graph``),
or, with a filter, one page of the commits that match it. Only what is shown is loaded in
full: an unfiltered page asks the engine for exactly its rows."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from zarrlake import GraphRow, Repo

__all__ = ["PAGE_SIZE", "Filter", "Page", "find_row", "load_page"]

PAGE_SIZE = 30
SCAN = 2000  # rows read at a time while filtering or looking for a commit

Edge = tuple[int, int]


@dataclass(frozen=True)
class Filter:
    """What the History page keeps: commits reachable from ``ref`` (all refs when empty)
    whose author and message contain the given text, merges or not."""

    ref: str = ""
    author: str = ""
    text: str = ""
    hide_merges: bool = False

    @property
    def narrows(self) -> bool:
        """Whether rows are dropped from the graph (then they are no longer adjacent)."""
        return bool(self.author or self.text or self.hide_merges)

    def refs(self) -> list[str] | None:
        return [self.ref] if self.ref else None

    def keeps(self, row: GraphRow) -> bool:
        c = row.commit
        return (
            (not self.author or self.author.lower() in c.author.lower())
            and (not self.text or self.text.lower() in c.message.lower())
            and not (self.hide_merges and len(c.parents) > 1)
        )


@dataclass(frozen=True)
class Page:
    """Rows ``start`` to ``start + len(rows)`` of ``total`` kept rows; ``adjacent`` when they
    are consecutive rows of the graph (then ``incoming`` and the rows' edges draw lines)."""

    rows: Sequence[GraphRow]
    start: int
    total: int
    lanes: int
    incoming: Sequence[Edge]
    adjacent: bool


def load_page(repo: Repo, f: Filter, start: int, cache: dict[Filter, Page]) -> Page:
    """The page of rows from ``start`` (a multiple of :data:`PAGE_SIZE`). With a narrowing
    filter, the matching rows are found once per filter (``cache``) by reading the graph in
    blocks; without one, only the page is read."""
    if not f.narrows:
        g = repo.graph(f.refs(), offset=start, limit=PAGE_SIZE)
        return Page(g.rows, start, g.total, g.width, g.incoming, True)
    if f not in cache:
        kept: list[GraphRow] = []
        offset, total, lanes = 0, 1, 1
        while offset < total:
            g = repo.graph(f.refs(), offset=offset, limit=SCAN)
            total, lanes = g.total, g.width
            kept += [r for r in g.rows if f.keeps(r)]
            offset += SCAN
        cache.clear()  # one filter at a time is enough to page through it
        cache[f] = Page(tuple(kept), 0, len(kept), lanes, (), False)
    every = cache[f]
    rows = every.rows[start : start + PAGE_SIZE]
    return Page(rows, start, every.total, every.lanes, (), False)


def find_row(repo: Repo, f: Filter, commit: str, cache: dict[Filter, Page]) -> int | None:
    """The index of ``commit`` among the rows the filter keeps, or None."""
    if f.narrows:
        every = load_page(repo, f, 0, cache)
        kept = cache[f].rows if f in cache else every.rows
        return next((i for i, r in enumerate(kept) if r.commit.id == commit), None)
    offset, total = 0, 1
    while offset < total:
        g = repo.graph(f.refs(), offset=offset, limit=SCAN)
        total = g.total
        for i, r in enumerate(g.rows, start=offset):
            if r.commit.id == commit:
                return i
        offset += SCAN
    return None
