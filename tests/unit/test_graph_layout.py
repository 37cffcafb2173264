"""The drawn commit graph (``model.graph``): every line from a commit reaches exactly its
parents, lines never run through another commit, the pinned branch keeps lane 0, and lanes
are reused once free."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from zarrlake.model.graph import Dag, lay_out, topo_order


@st.composite
def dags(draw: st.DrawFn) -> Dag:
    """A commit DAG: each commit has up to two parents among the older ones."""
    n = draw(st.integers(1, 40))
    out: dict[str, tuple[tuple[str, ...], float]] = {}
    for i in range(n):
        older = [f"c{j}" for j in range(i)]
        parents: tuple[str, ...] = ()
        if (older and draw(st.booleans())) or (i and i % 7 == 0):
            first = draw(st.sampled_from(older))
            parents = (first,)
            if len(older) > 1 and draw(st.integers(0, 3)) == 0:
                second = draw(st.sampled_from([c for c in older if c != first]))
                parents = (first, second)
        out[f"c{i}"] = (parents, float(i) + draw(st.floats(0, 0.5)))
    return out


def _reached(
    order: list[str], rows: list[tuple[int, tuple[tuple[int, int], ...]]], i: int
) -> set[str]:
    """The commits the lines leaving row ``i``'s commit end at."""
    found: set[str] = set()
    todo = [(i, rows[i][0])]
    seen: set[tuple[int, int]] = set()
    while todo:
        r, lane = todo.pop()
        if (r, lane) in seen or r + 1 >= len(rows):
            continue
        seen.add((r, lane))
        for a, b in rows[r][1]:
            if a != lane:
                continue
            if rows[r + 1][0] == b:
                found.add(order[r + 1])  # the line ends at the next row's commit
            else:
                todo.append((r + 1, b))
    return found


@settings(max_examples=300)
@given(dags())
def test_lines_connect_each_commit_to_its_parents_and_nothing_else(dag: Dag) -> None:
    order = topo_order(dag)
    assert sorted(order) == sorted(dag)
    pos = {c: i for i, c in enumerate(order)}
    assert all(pos[p] > pos[c] for c in dag for p in dag[c][0])  # children first
    rows = lay_out(order, dag)
    for i, c in enumerate(order):
        assert _reached(order, rows, i) == set(dag[c][0])


@settings(max_examples=200)
@given(dags())
def test_every_line_entering_a_row_goes_on_or_ends_at_its_commit(dag: Dag) -> None:
    order = topo_order(dag)
    rows = lay_out(order, dag)
    for i in range(1, len(rows)):
        entering = {b for _, b in rows[i - 1][1]}
        lane = rows[i][0]
        leaving_from = {a for a, _ in rows[i][1]}
        assert entering - {lane} <= leaving_from  # a passing line continues
        assert leaving_from <= entering | {lane}  # nothing starts out of nowhere


@settings(max_examples=200)
@given(dags(), st.data())
def test_the_pinned_first_parent_line_keeps_lane_zero(dag: Dag, data: st.DataObject) -> None:
    order = topo_order(dag)
    pin = data.draw(st.sampled_from(order))
    rows = lay_out(order, dag, pin)
    c: str | None = pin
    while c is not None:
        assert rows[order.index(c)][0] == 0
        c = dag[c][0][0] if dag[c][0] else None


def test_a_merged_branch_frees_its_lane_for_the_next_one() -> None:
    # main: m0 - m1 (merge of a1) - m2 (merge of b1); a1 and b1 branch off m0
    dag: Dag = {
        "m0": ((), 0.0),
        "a1": (("m0",), 1.0),
        "m1": (("m0", "a1"), 2.0),
        "b1": (("m1",), 3.0),
        "m2": (("m1", "b1"), 4.0),
    }
    order = topo_order(dag)
    assert order == ["m2", "b1", "m1", "a1", "m0"]
    rows = lay_out(order, dag, "m2")
    lanes = {c: rows[i][0] for i, c in enumerate(order)}
    assert lanes == {"m2": 0, "b1": 1, "m1": 0, "a1": 1, "m0": 0}
    assert max(b for _, e in rows for _, b in e) == 1  # two lanes for two branches in turn
