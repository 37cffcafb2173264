"""The text drawing of ``log --graph``, from the engine's lanes (``model.graph``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from zarrlake import CommitInfo, GraphRow
from zarrlake.cli._graph import graph_lines
from zarrlake.model.graph import lay_out, topo_order

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _draw(spec: list[tuple[str, tuple[str, ...]]], pin: str | None = None) -> list[str]:
    """Commits given oldest first as (id, parents); each one a minute after the previous."""
    infos = {
        cid: CommitInfo(cid, parents, "a", cid, {}, T0 + timedelta(minutes=i))
        for i, (cid, parents) in enumerate(spec)
    }
    dag = {c: (i.parents, i.created_at.timestamp()) for c, i in infos.items()}
    order = topo_order(dag)
    lanes = lay_out(order, dag, pin)
    rows = [
        GraphRow(infos[c], lane, edges, ()) for c, (lane, edges) in zip(order, lanes, strict=True)
    ]
    width = 1 + max(max((lane, *(b for _, b in e))) for lane, e in lanes)
    return graph_lines(rows, (), width, lambda c: c.id)


def test_a_line_of_commits_is_one_lane() -> None:
    assert _draw([("a", ()), ("b", ("a",)), ("c", ("b",))]) == ["*  c", "*  b", "*  a"]


def test_a_merge_forks_a_lane_and_the_fork_point_joins_it() -> None:
    spec = [("a", ()), ("b", ("a",)), ("d", ("a",)), ("c", ("b",)), ("m", ("c", "d"))]
    assert _draw(spec) == ["*  m", "|\\", "* |  c", "| *  d", "* |  b", "|/", "*  a"]


def test_two_merges_of_one_branch_share_its_lane() -> None:
    # a - b - m1 - m2 on main; a - d1 - d2 on dev, merged after d1 and after d2
    spec = [
        ("a", ()),
        ("b", ("a",)),
        ("d1", ("a",)),
        ("m1", ("b", "d1")),
        ("d2", ("d1",)),
        ("m2", ("m1", "d2")),
    ]
    assert _draw(spec, pin="m2") == [
        "*  m2",
        "|\\",
        "| *  d2",
        "* |  m1",
        "|\\|",
        "| *  d1",
        "* |  b",
        "|/",
        "*  a",
    ]


def test_a_branch_newer_than_main_takes_the_next_lane() -> None:
    spec = [("a", ()), ("m", ("a",)), ("f", ("a",))]
    assert _draw(spec, pin="m") == ["  *  f", "* |  m", "|/", "*  a"]
