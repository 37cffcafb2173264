"""Kerchunk references (JSON and Parquet), read by VirtualiZarr's kerchunk parsers, committed
as virtual references; a diff says which of the chunks they list are references."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr

import zarrlake

pytest.importorskip("virtualizarr")


def _refs(tmp_path: Path) -> dict[str, Any]:
    """Kerchunk references: array ``x`` (40 float32 in 2 chunks) in ``archive/data.bin``."""
    (tmp_path / "archive").mkdir()
    data = tmp_path / "archive" / "data.bin"
    data.write_bytes(np.arange(40, dtype="<f4").tobytes())
    zarray = {"shape": [40], "chunks": [20], "dtype": "<f4", "compressor": None,
              "filters": None, "fill_value": 0.0, "order": "C", "zarr_format": 2}  # fmt: skip
    return {
        ".zgroup": json.dumps({"zarr_format": 2}),
        ".zattrs": json.dumps({"title": "from kerchunk"}),
        "x/.zarray": json.dumps(zarray),
        "x/.zattrs": json.dumps({"_ARRAY_DIMENSIONS": ["t"]}),
        "x/0": [f"file://{data}", 0, 80],
        "x/1": [f"file://{data}", 80, 80],
    }


def _kerchunk(tmp_path: Path) -> Path:
    """The references as a kerchunk JSON file."""
    path = tmp_path / "refs.json"
    path.write_text(json.dumps({"version": 1, "refs": _refs(tmp_path)}))
    return path


def _kerchunk_parquet(tmp_path: Path) -> Path:
    """The same references as a kerchunk Parquet directory (written by fsspec with kerchunk)."""
    import fsspec
    from fsspec.implementations.reference import LazyReferenceMapper

    pytest.importorskip("kerchunk")
    path = tmp_path / "refs.parq"
    # fastparquet, fsspec's default: VirtualiZarr's parser reads what it writes
    refs = LazyReferenceMapper.create(str(path), fs=fsspec.filesystem("file"), record_size=100)
    for key, value in _refs(tmp_path).items():
        refs[key] = value.encode() if isinstance(value, str) else value
    refs.flush()
    return path


def _open_kerchunk(path: Path):  # type: ignore[no-untyped-def]
    from obspec_utils.registry import ObjectStoreRegistry
    from obstore.store import LocalStore
    from virtualizarr import open_virtual_dataset
    from virtualizarr.parsers import KerchunkJSONParser, KerchunkParquetParser

    registry = ObjectStoreRegistry({"file://": LocalStore()})
    parser = KerchunkParquetParser() if path.suffix == ".parq" else KerchunkJSONParser()
    return open_virtual_dataset(f"file://{path}", registry=registry, parser=parser)


@pytest.mark.parametrize("form", [_kerchunk, _kerchunk_parquet], ids=["json", "parquet"])
def test_kerchunk_references_are_committed_as_references(
    make_repo, tmp_path: Path, form: Callable[[Path], Path]
) -> None:
    refs = form(tmp_path)
    repo = make_repo(virtual_sources={str(tmp_path / "archive"): {}})
    _open_kerchunk(refs).lake.commit("kerchunk refs", repo=repo, group="k")
    ds = zarrlake.open_dataset(repo, "main", group="k")
    np.testing.assert_array_equal(ds.x.values, np.arange(40, dtype="f4"))
    assert ds.attrs["title"] == "from kerchunk"
    assert repo.diff("main~1", "main")["k/x"].chunks_virtual == {(0,), (1,)}
    assert repo.fsck().sources_checked == 1


def test_a_diff_marks_the_chunks_that_are_references(make_repo, tmp_path: Path) -> None:
    refs = _kerchunk(tmp_path)
    repo = make_repo(virtual_sources={str(tmp_path / "archive"): {}})
    _open_kerchunk(refs).lake.commit("kerchunk refs", repo=repo, group="k")
    node = repo.diff("main~1", "main")["k/x"]
    assert node.chunks_added == {(0,), (1,)}
    assert node.chunks_virtual == {(0,), (1,)}
    s = repo.writable_session()
    zarr.open_array(s.store, path="k/x")[0:20] = 5  # chunk 0 now lives in the lake
    s.commit("overwrite one chunk")
    node = repo.diff("main~1", "main")["k/x"]
    assert (node.chunks_changed, node.chunks_virtual) == ({(0,)}, frozenset())
    back = repo.diff("main", "main~1")["k/x"]  # the other way round, chunk 0 is a reference
    assert (back.chunks_changed, back.chunks_virtual) == ({(0,)}, {(0,)})
    s = repo.writable_session()
    s.put_virtual_refs("k/x", [((0,), f"file://{tmp_path / 'archive' / 'data.bin'}", 0, 80)])
    s.commit("back to the reference")
    assert repo.diff("main~1", "main")["k/x"].chunks_virtual == {(0,)}
