"""Virtual references staged a shard at a time mean exactly what staging each reference on its
own would mean, over generated sequences of sessions on both catalogs: references given as
columns, chunks written and deleted before and after them, references over references at the
same shard position, over chunks of the base commit, after the array's trailing dimension
grew (another shard shape), in sessions that commit or go on. Every chunk reads back as the
last thing staged for it, in the session and after its commit, and the commit's diff against
its parent (read from its change set) is the diff of the two manifests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import zarrlake
import zarrlake.model.manifest as manifest_module
from zarrlake.core.repo_core import open_core
from zarrlake.history.commits import commit_roots
from zarrlake.model.diff import diff_roots

ROWS, COLS = 6, 5  # the chunk grid; the array grows to 7 columns of chunks with "grow"
CHUNK = 16  # bytes of one chunk: 2 x 2 int32
SLOTS = 24  # chunk-sized spans of the source file

coord = st.tuples(st.integers(0, ROWS - 1), st.integers(0, COLS - 1))
op = st.one_of(
    st.tuples(
        st.just("refs"),
        st.lists(st.tuples(coord, st.integers(0, SLOTS - 1)), min_size=1, max_size=12),
        st.booleans(),  # as columns (else as a list of tuples)
    ),
    st.tuples(st.just("write"), coord, st.integers(1, 200)),
    st.tuples(st.just("delete"), coord),
    st.tuples(st.just("commit")),
    st.tuples(st.just("grow")),
)
Model = dict[tuple[int, int], tuple[str, int]]  # coords -> ("ref", slot) or ("chunk", value)


def _bytes(what: tuple[str, int], source: bytes) -> bytes:
    kind, n = what
    if kind == "ref":
        return source[n * CHUNK : (n + 1) * CHUNK]
    return np.full(4, n, "<i4").tobytes()


def _check(session: Any, model: Model, source: bytes, cols: int) -> None:
    for i in range(ROWS):
        for j in range(cols):
            ref = session.locate(f"a/c/{i}/{j}")
            got = None if ref is None else session.read_ref(ref)
            want = _bytes(model[i, j], source) if (i, j) in model else None
            assert got == want, (i, j)


def _shape(d: Any) -> object:
    return (d.nodes, d.keys_added, d.keys_changed, d.keys_removed)


def _check_diff(repo: zarrlake.Repo) -> None:
    log = repo.log("main")
    if len(log) < 2:
        return
    core = open_core(repo.config)
    (_, older), (_, newer) = commit_roots(core, log[1].id, log[0].id)
    assert _shape(repo.diff(log[1].id, log[0].id)) == _shape(diff_roots(older, newer, core.reader))


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=st.lists(op, min_size=1, max_size=8))
# a chunk written, then references over it, then a chunk over one of them
@example(
    steps=[
        ("write", (0, 0), 5),
        ("refs", [((0, 0), 1), ((0, 1), 2)], True),
        ("write", (0, 1), 7),
    ]
)
# references twice at one position, the second over part of the first
@example(steps=[("refs", [((1, 0), 1), ((1, 1), 2)], True), ("refs", [((1, 1), 3)], False)])
# references over the base commit's chunks at the same position
@example(steps=[("write", (2, 0), 9), ("commit",), ("refs", [((2, 1), 4)], True)])
# the trailing dimension grows between two batches: the second goes as chunks
@example(steps=[("refs", [((3, 0), 1)], True), ("grow",), ("refs", [((3, 0), 2)], True)])
# a reference deleted again, and one named twice in one call (the last counts)
@example(steps=[("refs", [((4, 4), 1), ((4, 4), 6)], True), ("delete", (4, 4))])
def test_batches_stage_what_references_one_by_one_would(
    make_repo: Callable[..., zarrlake.Repo],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    steps: list[tuple[Any, ...]],
) -> None:
    # small shards, so that the grid has many positions: (1, 5), then (1, 7) once it grew
    monkeypatch.setattr(manifest_module, "SHARD_TARGET", 8)
    archive = tmp_path / "archive"
    archive.mkdir(exist_ok=True)
    source_path = archive / f"src{len(list(archive.iterdir()))}.bin"
    source = np.random.default_rng(len(steps)).bytes(SLOTS * CHUNK)
    source_path.write_bytes(source)
    repo = make_repo(virtual_sources={str(archive): {}})
    s = repo.writable_session()
    zarr.create_array(
        s.store, name="a", shape=(2 * ROWS, 2 * COLS), chunks=(2, 2), dtype="<i4",
        compressors=None, fill_value=0,
    )  # fmt: skip
    model: Model = {}
    cols = COLS
    for o in steps:
        if o[0] == "refs":
            refs = [(c, str(source_path), n * CHUNK, CHUNK) for c, n in o[1]]
            if o[2]:
                s.put_virtual_columns(
                    "a",
                    np.array([c for c, *_ in refs]),
                    [u for _, u, _, _ in refs],
                    np.array([off for _, _, off, _ in refs]),
                    np.array([n for *_, n in refs]),
                )
            else:
                s.put_virtual_refs("a", refs)
            model.update((c, ("ref", n)) for c, n in o[1])
        elif o[0] == "write":
            s.write_sync(f"a/c/{o[1][0]}/{o[1][1]}", _bytes(("chunk", o[2]), source))
            model[o[1]] = ("chunk", o[2])
        elif o[0] == "delete":
            s.delete_sync(f"a/c/{o[1][0]}/{o[1][1]}")
            model.pop(o[1], None)
        elif o[0] == "grow" and cols == COLS:
            zarr.open_array(s.store, path="a", mode="r+").resize((2 * ROWS, 2 * (COLS + 2)))
            cols = COLS + 2
        elif o[0] == "commit":
            s.commit("step", allow_empty=True)
            _check_diff(repo)
            s = repo.writable_session()
        _check(s, model, source, cols)
    s.commit("last", allow_empty=True)
    _check(repo.readonly_session("main"), model, source, cols)
    _check_diff(repo)
