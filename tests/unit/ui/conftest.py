"""A demo lake shared by the Viewer logic tests of a module (no browser)."""

from __future__ import annotations

import pytest

import zarrlake


@pytest.fixture(scope="module")
def demo_lake(tmp_path_factory: pytest.TempPathFactory) -> zarrlake.Repo:
    from zarrlake.demo import build_demo

    return build_demo(tmp_path_factory.mktemp("demo") / "lake")


def commit_by_message(repo: zarrlake.Repo, prefix: str) -> str:
    for ref in ("main", "experiment"):
        for c in repo.log(ref):
            if c.message.startswith(prefix):
                return c.id
    raise AssertionError(prefix)
