"""The commit graph of a repo, from its public history API, laid out in lanes.

``repo.log(ref)`` gives first-parent chains; following merge parents too gives the whole
graph reachable from branches and tags. Each branch gets a lane (``main`` first, so shared
history sits in its lane); commits reachable only through a merge parent get a lane of their own.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from zarrlake import CommitInfo, Repo

__all__ = ["Graph", "load_graph", "merge_base"]


@dataclass(frozen=True)
class Graph:
    """Commits by id, newest first, with a lane per commit and ref names per commit."""

    commits: dict[str, CommitInfo]
    order: list[str]
    lanes: dict[str, int]
    lane_names: list[str]
    refs: dict[str, list[str]] = field(default_factory=dict)

    def row(self, commit: str) -> int:
        return self.order.index(commit)

    def ancestors(self, commit: str) -> set[str]:
        """``commit`` and every commit reachable from it (both parents)."""
        seen: set[str] = set()
        todo = [commit]
        while todo:
            c = todo.pop()
            if c in seen or c not in self.commits:
                continue
            seen.add(c)
            todo.extend(self.commits[c].parents)
        return seen

    def generations(self) -> dict[str, int]:
        """Per commit, 1 + the longest parent chain below it (what orders common ancestors)."""
        memo: dict[str, int] = {}
        for c in reversed(self.order):  # oldest first: parents are done before children
            ps = [p for p in self.commits[c].parents if p in memo]
            memo[c] = 1 + max((memo[p] for p in ps), default=0)
        return memo


def load_graph(repo: Repo) -> Graph:
    """Every commit reachable from a branch or tag, with lanes (one per branch)."""
    branches = repo.branches()
    names = sorted(branches, key=lambda b: (b != "main", b))
    commits: dict[str, CommitInfo] = {}
    lanes: dict[str, int] = {}
    lane_names: list[str] = []

    def chain(ref: str, lane: int) -> None:
        for info in repo.log(ref):
            if info.id in commits:
                break  # the rest of this first-parent chain is known already
            commits[info.id] = info
            lanes[info.id] = lane

    for name in names:
        lane_names.append(name)
        chain(name, len(lane_names) - 1)
    tags = repo.tags()
    for name, commit in sorted(tags.items()):
        if commit not in commits:
            lane_names.append(f"tag {name}")
            chain(commit, len(lane_names) - 1)
    # Merge parents not on any branch's first-parent chain (branches merged, then deleted).
    todo = [p for c in list(commits.values()) for p in c.parents[1:] if p not in commits]
    while todo:
        p = todo.pop()
        if p in commits:
            continue
        if "(merged)" not in lane_names:
            lane_names.append("(merged)")
        before = set(commits)
        chain(p, lane_names.index("(merged)"))
        todo += [q for c in set(commits) - before for q in commits[c].parents[1:]]
    order = sorted(commits, key=lambda c: (commits[c].created_at, c), reverse=True)
    refs: dict[str, list[str]] = {}
    for name, commit in branches.items():
        refs.setdefault(commit, []).append(name)
    for name, commit in tags.items():
        refs.setdefault(commit, []).append(f"tag:{name}")
    return Graph(commits, order, lanes, lane_names, refs)


def merge_base(graph: Graph, a: str, b: str) -> str | None:
    """The best common ancestor of two commits in ``graph`` (highest generation), or None."""
    common = graph.ancestors(a) & graph.ancestors(b)
    if not common:
        return None
    gens = graph.generations()
    return max(common, key=lambda c: (gens[c], c))
