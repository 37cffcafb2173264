"""What every page of one dashboard shares: the repo, a reader, the write guard."""

from __future__ import annotations

from zarrlake import Repo
from zarrlake.ui.dashboard.common import Writes
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

    def branches(self) -> list[str]:
        """Branch names, main first."""
        return sorted(self.repo.branches(), key=lambda n: (n != "main", n))

    def refs(self) -> list[str]:
        """Branch names (main first), then tag names."""
        return self.branches() + sorted(self.repo.tags())
