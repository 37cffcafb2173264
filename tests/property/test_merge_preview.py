"""``repo.merge(..., dry_run=True)`` is the merge stopped before publishing: over generated
histories (identical bytes written on both sides included), it reports exactly the conflicts
the merge raises, and exactly the changes the merge makes."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
import zarr
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import zarrlake
from zarrlake.model.diff import Diff

CHUNKS = 4  # array "a": 4 chunks of 2

# one side's changes: chunk index -> value written, attribute key -> value, whether the
# array "b" is created, whether "a" is deleted
side = st.fixed_dictionaries(
    {
        "chunks": st.dictionaries(st.integers(0, CHUNKS - 1), st.integers(0, 3), max_size=3),
        "attrs": st.dictionaries(st.sampled_from(["units", "note"]), st.integers(0, 2), max_size=2),
        "create_b": st.booleans(),
        "delete_a": st.booleans(),
    }
)


def _apply(repo: zarrlake.Repo, branch: str, change: dict[str, Any]) -> None:
    s = repo.writable_session(branch)
    g = zarr.open_group(s.store, mode="r+")
    if change["delete_a"]:
        del g["a"]
    else:
        a = g["a"]
        assert isinstance(a, zarr.Array)
        for i, v in change["chunks"].items():
            a[2 * i : 2 * i + 2] = v
        if change["attrs"]:
            a.attrs.update(change["attrs"])
    if change["create_b"]:
        g.create_array("b", shape=(2,), chunks=(2,), dtype="i4")[:] = 1
    s.commit(f"{branch} change", allow_empty=True)


def _shape(d: Diff | None) -> object:
    if d is None:
        return None
    return (d.nodes, d.keys_added, d.keys_changed, d.keys_removed)


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> str:
    return f"sqlite:///{tmp_path_factory.mktemp('preview') / 'catalog.db'}"


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    ours=side,
    theirs=side,
    solver=st.sampled_from(["fail", "ours", "theirs"]),
    ff=st.booleans(),
    commits=st.sampled_from(["both", "both", "both", "dev only", "main only"]),
)
def test_dry_run_agrees_with_the_merge(
    catalog: str,
    tmp_path: Path,
    ours: dict[str, Any],
    theirs: dict[str, Any],
    solver: str,
    ff: bool,
    commits: str,
) -> None:
    name = f"r{uuid.uuid4().hex[:12]}"
    repo = zarrlake.Repo.create(catalog=catalog, storage=str(tmp_path / name), name=name)
    s = repo.writable_session()
    zarr.open_group(s.store, mode="w").create_array(
        "a", shape=(2 * CHUNKS,), chunks=(2,), dtype="i4"
    )[:] = 0
    s.commit("base")
    repo.create_branch("dev")
    if commits != "main only":
        _apply(repo, "dev", theirs)
    if commits != "dev only":
        _apply(repo, "main", ours)
    before = repo.branches()["main"]

    preview = repo.merge("dev", "main", solver=solver, fast_forward=ff, dry_run=True)  # type: ignore[arg-type]
    assert repo.branches()["main"] == before  # a dry run writes nothing
    event(f"{preview.outcome}, {len(preview.conflicts)} conflicts, refused={preview.refused}")
    if preview.refused:
        with pytest.raises(zarrlake.ConflictError) as caught:
            repo.merge("dev", "main", solver=solver, fast_forward=ff)  # type: ignore[arg-type]
        assert caught.value.conflicts == list(preview.conflicts)
        assert repo.branches()["main"] == before
        return
    after = repo.merge("dev", "main", solver=solver, fast_forward=ff)  # type: ignore[arg-type]
    assert _shape(repo.diff(before, after)) == _shape(preview.changes)
    outcome = (
        "up-to-date"
        if after == before
        else ("fast-forward" if after == repo.resolve("dev") else "merge")
    )
    assert preview.outcome == outcome


def test_identical_bytes_on_both_sides_preview_no_conflict(sqlite_repo: zarrlake.Repo) -> None:
    repo = sqlite_repo
    s = repo.writable_session()
    zarr.open_group(s.store, mode="w").create_array("a", shape=(8,), chunks=(2,), dtype="i4")[:] = 0
    s.commit("base")
    repo.create_branch("dev")
    for branch in ("dev", "main"):
        s = repo.writable_session(branch)
        zarr.open_array(s.store, path="a", mode="r+")[0:2] = 7
        s.commit(f"7 on {branch}")
    preview = repo.merge("dev", "main", dry_run=True)
    assert preview.conflicts == ()
    assert not preview.refused
    assert preview.outcome == "merge"
    repo.merge("dev", "main")  # and the merge agrees
