"""A lake written before the manifest index tree (flat JSON indexes) keeps working.

``tests/data/lake_flat_index.tar.gz`` was made by the code before the tree (see
``tests/data/make_flat_index_lake.py``): three commits on two branches and a tag.
"""

from __future__ import annotations

import tarfile
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
import zarr

import zarrlake
from zarrlake.testing import LakeProbe

DATA = Path(__file__).parent.parent / "data" / "lake_flat_index.tar.gz"


def expected_temp() -> np.ndarray:
    return (np.arange(40 * 1024) % 120).astype("i1").reshape(40, 1024)


@pytest.fixture
def old_lake(tmp_path: Path) -> zarrlake.Repo:
    with tarfile.open(DATA) as tar:
        tar.extractall(tmp_path, filter="data")
    zarrlake.upgrade_catalog(tmp_path / "lake")  # made by an earlier schema version
    return zarrlake.Repo.open(tmp_path / "lake")


def index_of(repo: zarrlake.Repo, ref: str, path: str) -> zarrlake.model.ManifestIndex:
    probe = LakeProbe(repo)
    manifest = probe.root(ref).nodes[path].manifest
    assert manifest is not None
    return probe.reader.index(manifest)


def test_every_version_reads_as_written(old_lake: zarrlake.Repo) -> None:
    assert not index_of(old_lake, "main", "temp").is_tree
    v1 = zarr.open_group(old_lake.readonly_session("v1").store, mode="r")
    np.testing.assert_array_equal(v1["temp"][:], expected_temp())
    exp = zarr.open_group(old_lake.readonly_session("exp").store, mode="r")
    assert (exp["temp"][0:8, 0:64] == -1).all()
    np.testing.assert_array_equal(exp["big"][1], np.full(1024, 0.5))
    main = zarr.open_group(old_lake.readonly_session("main").store, mode="r")
    assert (main["temp"][36:40, 1000:1024] == 7).all()
    assert main["temp"][0, 0] == 0


def test_diff_between_old_versions_names_the_chunks(old_lake: zarrlake.Repo) -> None:
    d = old_lake.diff("v1", "main")
    (node,) = d.nodes
    assert node.path == "temp"
    assert node.chunks_changed == {(r, c) for r in range(36, 40) for c in (62, 63)}


def test_next_commit_rewrites_the_index_as_a_tree(old_lake: zarrlake.Repo) -> None:
    reader = LakeProbe(old_lake).reader
    before = index_of(old_lake, "main", "temp").shard_map(reader)
    s = old_lake.writable_session()
    zarr.open_array(s.store, path="temp")[20, 0:16] = 5
    s.commit("one chunk")
    index = index_of(old_lake, "main", "temp")
    assert index.is_tree
    after = index.shard_map(reader)
    assert set(after) == set(before)
    assert [p for p in before if before[p] != after[p]] == [(1, 0)]  # row 20 is in shard row 1
    assert not index_of(old_lake, "main", "big").is_tree  # untouched arrays keep their index
    d = old_lake.diff("main~1", "main")
    assert d.nodes[0].chunks_changed == {(20, 0)}
    data = zarr.open_group(old_lake.readonly_session("main").store, mode="r")["temp"][:]
    want = expected_temp()
    want[36:40, 1000:1024] = 7
    want[20, 0:16] = 5
    np.testing.assert_array_equal(data, want)


def test_merge_gc_and_fsck_across_the_two_formats(old_lake: zarrlake.Repo) -> None:
    s = old_lake.writable_session()
    zarr.open_array(s.store, path="temp")[39, 0:16] = 9
    s.commit("tree on main")
    old_lake.merge("exp", branch="main")
    main = zarr.open_group(old_lake.readonly_session("main").store, mode="r")
    assert (main["temp"][0:8, 0:64] == -1).all()
    assert (main["temp"][39, 0:16] == 9).all()
    old_lake.gc(timedelta(0), progress=False)
    report = old_lake.fsck(verify=True, progress=False)
    assert report.ok, report
    v1 = zarr.open_group(old_lake.readonly_session("v1").store, mode="r")
    np.testing.assert_array_equal(v1["temp"][:], expected_temp())
