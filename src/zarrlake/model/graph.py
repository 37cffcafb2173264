"""The commit graph: the merge base and reachability walk (fed by a callback that loads a window
of the graph), and the order and lanes the graph is drawn in. Logic only, no I/O."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from zarrlake.types import CommitInfo

__all__ = [
    "CommitGraph",
    "Dag",
    "Graph",
    "GraphLoader",
    "GraphRow",
    "lay_out",
    "merge_base",
    "reach",
    "topo_order",
]

# commit id -> (first parent, merge parent, generation)
Graph = Mapping[str, tuple[str | None, str | None, int]]
# (heads, lowest generation) -> every commit reachable from heads down to that generation
GraphLoader = Callable[[Sequence[str], int], Graph]


def reach(graph: Graph, start: str) -> set[str]:
    """The commits of ``graph`` reachable from ``start`` through both parents."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        c = todo.pop()
        if c in seen or c not in graph:
            continue
        seen.add(c)
        p, q, _ = graph[c]
        todo.extend(x for x in (p, q) if x)
    return seen


def merge_base(a: str, ga: int, b: str, gb: int, load: GraphLoader) -> str | None:
    """The best common ancestor of commits ``a`` and ``b`` (of generations ``ga``, ``gb``);
    ``None`` if they share no history.

    Walks back from both in widening windows of generations, so the cost follows the distance
    to the common ancestor, not the length of the history. With several best common ancestors
    (criss-cross merges), the one of highest generation is chosen.
    """
    if a == b:
        return a
    window = 64
    low = min(ga, gb) - window
    while True:
        graph = load([a, b], max(low, 0))
        common = reach(graph, a) & reach(graph, b)
        if common:
            # Generations strictly decrease along parents, so the common ancestor of highest
            # generation is not an ancestor of another one: it is a best common ancestor.
            return max(common, key=lambda c: (graph[c][2], c))
        if low <= 0:
            return None
        low -= window
        window *= 4


# -- the drawn graph: order and lanes ----------------------------------------------------------

# commit id -> (parents in the graph, creation time)
Dag = Mapping[str, tuple[tuple[str, ...], float]]
Edge = tuple[int, int]


def topo_order(dag: Dag) -> list[str]:
    """Children before parents; among the commits free to go next, the newest first (as
    ``git log --graph`` and GitHub's network view order them)."""
    waiting = dict.fromkeys(dag, 0)
    for parents, _ in dag.values():
        for p in parents:
            if p in waiting:
                waiting[p] += 1
    ready = [(-t, c) for c, (_, t) in dag.items() if waiting[c] == 0]
    heapq.heapify(ready)
    out: list[str] = []
    while ready:
        _, c = heapq.heappop(ready)
        out.append(c)
        for p in dag[c][0]:
            if p in waiting:
                waiting[p] -= 1
                if waiting[p] == 0:
                    heapq.heappush(ready, (-dag[p][1], p))
    return out


def lay_out(
    order: Sequence[str], dag: Dag, pin: str | None = None
) -> list[tuple[int, tuple[Edge, ...]]]:
    """Each commit's lane and the segments from its row to the next: ``(lane here, lane
    there)``, for every line that continues past the row (the commit's own lines to its
    parents start at its lane).

    A commit's first parent continues in its lane; each other parent gets a lane of its own,
    and lines that wait for the same commit meet at its row, in the lowest of their lanes.
    The first-parent line of ``pin`` (the head of ``main``) keeps lane 0 from top to bottom.
    Lanes are compact: a lane is free again once its line ends, and the lowest free lane is
    taken first, so a branch merged long ago leaves no empty column.
    """
    reserved = "\0pinned"  # lane 0 waits, undrawn, for the pinned head
    lanes: list[str | None] = [reserved] if pin is not None and pin in dag else []

    def free_lane() -> int:
        for i, x in enumerate(lanes):
            if x is None:
                return i
        lanes.append(None)
        return len(lanes) - 1

    placed: list[tuple[int, set[int], list[int], list[str | None]]] = []
    for c in order:
        mine = [j for j, x in enumerate(lanes) if x == c]
        lane = 0 if c == pin else (mine[0] if mine else free_lane())
        for j in mine:
            lanes[j] = None
        lanes[lane] = None
        started, joined = {lane}, list[int]()
        parents = [p for p in dag[c][0] if p in dag]
        if parents:
            lanes[lane] = parents[0]
            for p in parents[1:]:
                if p in lanes:  # a line already waits for it: bend into that line
                    joined.append(lanes.index(p))
                    continue
                t = free_lane()
                lanes[t] = p
                started.add(t)
        while lanes and lanes[-1] is None:
            lanes.pop()
        placed.append((lane, started, joined, list(lanes)))
    out: list[tuple[int, tuple[Edge, ...]]] = []
    for i, (lane, started, joined, after) in enumerate(placed):
        nxt = order[i + 1] if i + 1 < len(order) else None
        nxt_lane = placed[i + 1][0] if i + 1 < len(order) else -1

        def to(j: int) -> int:
            return nxt_lane if after[j] == nxt else j  # noqa: B023 - used in this iteration

        edges = [
            (lane if j in started else j, to(j))
            for j, x in enumerate(after)
            if x is not None and x != reserved
        ]
        edges += [(lane, to(k)) for k in joined]
        out.append((lane, tuple(edges)))
    return out


@dataclass(frozen=True, slots=True)
class GraphRow:
    """One commit of :class:`CommitGraph`: where it is drawn and what points at it."""

    commit: CommitInfo
    lane: int
    # segments from this row to the next one: (lane in this row, lane in the next row)
    edges: tuple[Edge, ...]
    refs: tuple[str, ...]  # branch names and ``tag:<name>`` of the refs at this commit


@dataclass(frozen=True)
class CommitGraph:
    """A page of the commit graph of a repo (``repo.graph()``): commits in drawing order
    (children before parents, newest first), each in a lane.

    ``rows`` are the commits ``offset`` to ``offset + len(rows)`` of ``total``;
    ``incoming`` are the segments that enter the page's first row from the row above it,
    and ``width`` is how many lanes the whole graph uses, so pages line up.
    """

    rows: tuple[GraphRow, ...]
    total: int
    offset: int
    width: int
    incoming: tuple[Edge, ...]
    refs: Mapping[str, str] = field(default_factory=dict)  # ref name (tag:<n> for tags) -> id

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[GraphRow]:
        return iter(self.rows)

    def __repr__(self) -> str:
        end = self.offset + len(self.rows)
        return (
            f"<CommitGraph commits {self.offset}-{end} of {self.total}, {self.width} lane"
            f"{'' if self.width == 1 else 's'}, {len(self.refs)} refs>"
        )
