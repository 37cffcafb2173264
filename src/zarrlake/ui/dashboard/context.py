"""What every page of one dashboard shares: the repo, a reader, the write guard, the graph."""

from __future__ import annotations

from zarrlake import Repo
from zarrlake.ui.dashboard.common import Writes
from zarrlake.ui.dashboard.graph import Graph, load_graph
from zarrlake.ui.dashboard.reader import LakeReader

__all__ = ["Context"]


class Context:
    """Per browser session (never a module global): pages read the lake through this."""

    def __init__(
        self, repo: Repo, writes: Writes | None = None, gateway: str | None = None
    ) -> None:
        self.repo = repo
        self.gateway = gateway  # the path the server's Zarr gateway answers at, if it runs one
        self.reader = LakeReader(repo)
        self.writes = writes or Writes()
        self._graph: Graph | None = None
        self.listeners: list[object] = []

    def graph(self, refresh: bool = False) -> Graph:
        if self._graph is None or refresh:
            self._graph = load_graph(self.repo)
        return self._graph

    def refs(self) -> list[str]:
        """Branch names (main first), then tag names."""
        b = sorted(self.repo.branches(), key=lambda n: (n != "main", n))
        return b + sorted(self.repo.tags())
