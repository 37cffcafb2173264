"""The diff of two commits along first parents (a commit and its parent, or a few apart), read
from the change sets of the commits between, is exactly the diff of the two manifests, both
ways round, over generated histories: chunks written,
rewritten with the same bytes, deleted (fill value), arrays resized, deleted, recreated with
another number of dimensions, replaced by a group, attributes, and merges."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
import zarr
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st
from zarr.core.buffer import default_buffer_prototype
from zarr.core.sync import sync

import zarrlake
from zarrlake.core.repo_core import open_core
from zarrlake.history.commits import commit_roots
from zarrlake.model.diff import Diff, diff_roots

op = st.one_of(
    st.tuples(st.just("write"), st.integers(0, 5), st.integers(0, 3)),
    st.tuples(st.just("write2"), st.integers(0, 1), st.integers(0, 3)),
    st.tuples(st.just("resize"), st.sampled_from([4, 8, 12])),
    st.tuples(st.just("attrs"), st.integers(0, 2)),
    st.tuples(st.just("delete")),
    st.tuples(st.just("recreate_2d")),
    st.tuples(st.just("as_group")),
    st.tuples(st.just("doc_2d")),
    st.tuples(st.just("doc_group")),
    st.tuples(st.just("merge"), st.integers(0, 5), st.integers(1, 3)),
)
# metadata documents written over "a" in place (no delete first): its chunks are then keys
# of another shape, or of a group
DOCS = {
    "doc_2d": {
        "zarr_format": 3,
        "node_type": "array",
        "shape": [4, 4],
        "data_type": "int32",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2, 2]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0,
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
    },
    "doc_group": {"zarr_format": 3, "node_type": "group"},
}
history = st.lists(st.lists(op, min_size=1, max_size=3), min_size=1, max_size=5)


def _a(g: zarr.Group) -> zarr.Array:
    """Array "a" as a 1-d array of 2-element chunks (made again if a step took it away)."""
    a = g.get("a")
    if not isinstance(a, zarr.Array) or a.ndim != 1:
        a = g.create_array("a", shape=(12,), chunks=(2,), dtype="i4", fill_value=0, overwrite=True)
    return a


def _apply(repo: zarrlake.Repo, step: list[tuple[Any, ...]], n: int) -> None:
    for i, o in enumerate(step):
        if o[0] == "merge":  # a commit on a branch of its own, merged back
            name = f"dev{n}-{i}"
            repo.create_branch(name, "main")
            s = repo.writable_session(name)
            _a(zarr.open_group(s.store, mode="r+"))[2 * o[1] : 2 * o[1] + 2] = o[2]
            s.commit("on dev", allow_empty=True)
            repo.merge(name, "main", solver="theirs")
    s = repo.writable_session("main")
    g = zarr.open_group(s.store, mode="r+")
    for o in step:
        kind = o[0]
        if kind == "write":
            _a(g)[2 * o[1] : 2 * o[1] + 2] = o[2]  # 0 is the fill value: the chunk goes
        elif kind == "write2":
            b = g.get("b")
            if not isinstance(b, zarr.Array):
                b = g.create_array("b", shape=(4, 4), chunks=(2, 2), dtype="f8", fill_value=0)
            b[2 * o[1] : 2 * o[1] + 2, :] = o[2]
        elif kind == "resize":
            _a(g).resize((o[1],))
        elif kind == "attrs":
            _a(g).attrs["k"] = o[1]
        elif kind == "delete" and "a" in g:
            del g["a"]
        elif kind == "recreate_2d":
            a2 = g.create_array("a", shape=(4, 4), chunks=(2, 2), dtype="i4", overwrite=True)
            a2[:] = np.arange(16, dtype="i4").reshape(4, 4)
        elif kind == "as_group":
            g.create_group("a", overwrite=True)
        elif kind in DOCS:
            doc = json.dumps(DOCS[kind]).encode()
            sync(s.store.set("a/zarr.json", default_buffer_prototype().buffer.from_bytes(doc)))
            g = zarr.open_group(s.store, mode="r+")
    s.commit(f"step {n}", allow_empty=True)


def _shape(d: Diff) -> object:
    return (d.nodes, d.keys_added, d.keys_changed, d.keys_removed)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=history)
@example(steps=[[("doc_2d",)]])  # the chunks of another rank are gone
@example(steps=[[("doc_group",)]])  # an array became a group
@example(steps=[[("write", 0, 0), ("write", 1, 1)]])  # a chunk removed, one rewritten as it was
@example(steps=[[("delete",)], [("write", 2, 3)]])  # an array deleted, then made again
# a chunk back as it was, and one added then removed, while another chunk changed
@example(steps=[[("write", 0, 2)], [("write", 0, 3), ("write", 1, 1)], [("write", 0, 2)]])
@example(steps=[[("write", 3, 0)], [("write", 3, 1), ("write", 4, 1)], [("write", 3, 0)]])
def test_a_commit_against_its_parent_diffs_as_its_manifests_do(
    tmp_path_factory: pytest.TempPathFactory, steps: list[list[tuple[Any, ...]]]
) -> None:
    repo = zarrlake.Repo.create(tmp_path_factory.mktemp("lake"))
    s = repo.writable_session("main")
    g = zarr.open_group(s.store, mode="w")
    _a(g)[:] = np.arange(12, dtype="i4")
    s.commit("start")
    for n, step in enumerate(steps):
        _apply(repo, step, n)
    core = open_core(repo.config)
    chain = [info.id for info in repo.log("main")]  # first parents, newest first
    for i, newer in enumerate(chain):
        for older in chain[i + 1 : i + 5]:
            (_, ro), (_, rn) = commit_roots(core, older, newer)
            forward = diff_roots(ro, rn, core.reader)
            backward = diff_roots(rn, ro, core.reader)
            assert _shape(repo.diff(older, newer)) == _shape(forward)
            assert _shape(repo.diff(newer, older)) == _shape(backward)
            event(f"chunks in the diff: {min(sum(n.n_chunks for n in forward), 3)}+")
