"""The commit graph of ``log --graph`` (pure: commits in, lines out)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from zarrlake import CommitInfo
from zarrlake.cli._graph import graph_lines, topo_order

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _commits(spec: list[tuple[str, tuple[str, ...]]]) -> dict[str, CommitInfo]:
    """Commits given oldest first as (id, parents); each one a minute after the previous."""
    return {
        cid: CommitInfo(cid, parents, "a", cid, {}, T0 + timedelta(minutes=i))
        for i, (cid, parents) in enumerate(spec)
    }


def _draw(spec: list[tuple[str, tuple[str, ...]]]) -> list[str]:
    return graph_lines(topo_order(_commits(spec)), lambda c: c.id)


def test_a_line_of_commits_is_one_lane() -> None:
    assert _draw([("a", ()), ("b", ("a",)), ("c", ("b",))]) == ["*  c", "*  b", "*  a"]


def test_a_merge_forks_a_lane_and_the_fork_point_joins_it() -> None:
    spec = [("a", ()), ("b", ("a",)), ("d", ("a",)), ("c", ("b",)), ("m", ("c", "d"))]
    assert _draw(spec) == ["*  m", "|\\", "* |  c", "| *  d", "* |  b", "|/", "*  a"]


def test_two_merges_of_one_branch() -> None:
    # a - b - m1 - m2 on main; a - d1 - d2 on dev, merged after d1 and after d2
    spec = [
        ("a", ()),
        ("b", ("a",)),
        ("d1", ("a",)),
        ("m1", ("b", "d1")),
        ("d2", ("d1",)),
        ("m2", ("m1", "d2")),
    ]
    assert _draw(spec) == [
        "*  m2",
        "|\\",
        "| *  d2",
        "* |  m1",
        "|\\ \\",
        "| |/",
        "| *  d1",
        "* |  b",
        "|/",
        "*  a",
    ]


def test_parents_outside_the_listing_end_their_lane() -> None:
    full = _commits([("a", ()), ("b", ("a",)), ("d", ("a",)), ("m", ("b", "d"))])
    cut = topo_order({k: v for k, v in full.items() if k != "a"})
    assert graph_lines(cut, lambda c: c.id) == ["*  m", "|\\", "| *  d", "*  b"]
