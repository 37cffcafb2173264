"""The commit graph walk: merge base and reachability, fed by a callback that loads a window
of the graph, so this module holds the logic and no I/O."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

__all__ = ["Graph", "GraphLoader", "merge_base", "reach"]

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
