"""``repo.graph()``: the engine's commit graph, page by page, on both catalogs."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest
import zarr

import zarrlake


def _history(repo: zarrlake.Repo) -> None:
    """main with 3 feature branches, two merged back, one tag; 20-odd commits."""
    s = repo.writable_session()
    zarr.open_group(s.store, mode="w").create_array("a", shape=(8,), chunks=(2,), dtype="i4")
    s.commit("create a")
    for b in ("f1", "f2", "f3"):
        repo.create_branch(b)
        for i in range(3):
            s = repo.writable_session(b)
            s.commit(f"{b} {i}", allow_empty=True)
        s = repo.writable_session()
        s.commit(f"main after {b}", allow_empty=True)
    repo.merge("f1", "main")
    repo.merge("f2", "main")
    repo.create_tag("v1", "main")


def test_pages_line_up_with_the_whole_graph(make_repo: Callable[..., zarrlake.Repo]) -> None:
    repo = make_repo()
    _history(repo)
    whole = repo.graph(limit=None)
    assert whole.total == len(whole.rows) == 1 + 1 + 9 + 3 + 2  # init, a, f*, main, merges
    pages = [repo.graph(offset=o, limit=4) for o in range(0, whole.total, 4)]
    assert [r for p in pages for r in p.rows] == list(whole.rows)
    assert all(p.width == whole.width for p in pages)
    for before, page in itertools.pairwise(pages):
        assert page.incoming == before.rows[-1].edges
    assert pages[0].incoming == ()


def test_rows_are_children_before_parents_with_their_refs(
    make_repo: Callable[..., zarrlake.Repo],
) -> None:
    repo = make_repo()
    _history(repo)
    g = repo.graph(limit=None)
    pos = {r.commit.id: i for i, r in enumerate(g.rows)}
    assert all(pos[p] > pos[r.commit.id] for r in g.rows for p in r.commit.parents)
    heads = repo.branches()
    by_id = {r.commit.id: r for r in g.rows}
    assert by_id[heads["main"]].refs == ("main", "tag:v1")
    assert by_id[heads["f3"]].refs == ("f3",)
    assert g.refs == {**heads, "tag:v1": repo.tags()["v1"]}
    main_line = [r for r in g.rows if r.commit.id in {c.id for c in repo.log("main")}]
    assert {r.lane for r in main_line} == {0}  # main's first-parent line is lane 0


def test_refs_restrict_the_graph(make_repo: Callable[..., zarrlake.Repo]) -> None:
    repo = make_repo()
    _history(repo)
    g = repo.graph(["f3"], limit=None)
    assert [r.commit.message for r in g.rows[:4]] == ["f3 2", "f3 1", "f3 0", "main after f2"]
    assert g.total == len(repo.log("f3"))  # no merges on f3: its log is its graph
    assert {r.lane for r in g.rows} == {0}


@pytest.mark.parametrize(
    "kwargs",
    [{"offset": -1}, {"offset": "2"}, {"limit": -5}, {"limit": 1.5}, {"refs": "main"}],
)
def test_bad_arguments_are_refused(
    make_repo: Callable[..., zarrlake.Repo], kwargs: dict[str, object]
) -> None:
    repo = make_repo()
    with pytest.raises(zarrlake.InvalidInputError):
        repo.graph(**kwargs)  # type: ignore[arg-type]


def test_an_unknown_ref_is_not_found(make_repo: Callable[..., zarrlake.Repo]) -> None:
    with pytest.raises(zarrlake.NotFoundError):
        make_repo().graph(["nope"])
