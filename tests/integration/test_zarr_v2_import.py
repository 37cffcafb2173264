"""Importing an existing Zarr v2 store: its metadata converted to Zarr v3, its chunks
referenced where they are (or copied) byte for byte; what has no v3 form is refused."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import zarr

import zarrlake
from zarrlake.testing import LakeProbe


def _v2_store(path: Path) -> tuple[np.ndarray, np.ndarray]:
    temp = np.arange(12 * 10, dtype=">f4").reshape(12, 10)
    flags = np.arange(7, dtype="i2")
    g = zarr.open_group(str(path), mode="w", zarr_format=2)
    g.attrs["title"] = "a v2 archive"
    t = g.create_array(
        "grid/temp", shape=temp.shape, chunks=(5, 4), dtype=">f4", order="F",
        chunk_key_encoding={"name": "v2", "separator": "/"},
    )  # fmt: skip
    t[:] = temp
    t.attrs["_ARRAY_DIMENSIONS"] = ["y", "x"]
    t.attrs["units"] = "K"
    g.create_array("flags", shape=(7,), chunks=(3,), dtype="i2", fill_value=-1)[:3] = flags[:3]
    return temp, flags


@pytest.mark.parametrize("copy", [False, True])
def test_a_v2_store_is_imported_as_v3(make_repo, tmp_path: Path, copy: bool) -> None:
    temp, _flags = _v2_store(tmp_path / "v2.zarr")
    repo = make_repo(virtual_sources={str(tmp_path / "v2.zarr"): {}})
    commit = zarrlake.import_zarr(repo, str(tmp_path / "v2.zarr"), copy=copy, message="v2 in")
    assert repo.log()[0].message == "v2 in"
    assert repo.log()[0].metadata["zarr_format"] == 2
    g = zarr.open_group(repo.readonly_session(commit).store, mode="r")
    assert g.metadata.zarr_format == 3
    assert g.attrs["title"] == "a v2 archive"
    np.testing.assert_array_equal(g["grid/temp"][:], temp)  # type: ignore[index]
    assert g["grid/temp"].attrs.asdict() == {"units": "K"}
    assert g["grid/temp"].metadata.dimension_names == ("y", "x")  # type: ignore[union-attr]
    # the chunk never written reads as the fill value
    np.testing.assert_array_equal(g["flags"][:], [0, 1, 2, -1, -1, -1, -1])  # type: ignore[index]
    # 3 x 3 chunks of temp, 1 of flags: referenced where they are, or copied
    assert repo.fsck().sources_checked == (0 if copy else 10)
    ds = zarrlake.open_dataset(repo, "main", group="grid")
    assert ds.temp.dims == ("y", "x")
    assert float(ds.temp.sel(y=2, x=3)) == float(temp[2, 3])


def test_a_v2_store_written_by_xarray_is_imported(make_repo, tmp_path: Path) -> None:
    ds = xr.Dataset(
        {"rain": (("station", "day"), np.arange(60, dtype="f8").reshape(6, 10))},
        coords={"station": np.arange(6), "day": np.arange(10)},  # fill value null in v2
    )
    ds.to_zarr(tmp_path / "s.zarr", zarr_format=2, consolidated=True)
    repo = make_repo(virtual_sources={str(tmp_path / "s.zarr"): {}})
    zarrlake.import_zarr(repo, str(tmp_path / "s.zarr"))
    xr.testing.assert_identical(zarrlake.open_dataset(repo, "main").load(), ds)


def test_a_v2_array_at_the_store_root_is_imported(make_repo, tmp_path: Path) -> None:
    data = np.arange(10, dtype="u1")
    zarr.open_array(str(tmp_path / "a.zarr"), mode="w", shape=(10,), chunks=(4,), dtype="u1",
                    zarr_format=2)[:] = data  # fmt: skip
    repo = make_repo()
    zarrlake.import_zarr(repo, str(tmp_path / "a.zarr"), copy=True)
    arr = zarr.open_array(repo.readonly_session().store, mode="r")
    np.testing.assert_array_equal(arr[:], data)


@pytest.mark.parametrize(
    ("compressor", "words"),
    [({"id": "lzma", "preset": 1}, "cannot be converted|cannot read"),
     ({"id": "zlib", "level": 1}, "numcodecs.zlib")],
)  # fmt: skip
def test_a_v2_store_with_a_codec_of_no_v3_form_changes_nothing(
    make_repo, tmp_path: Path, compressor: dict[str, object], words: str
) -> None:
    _v2_store(tmp_path / "v2.zarr")
    zarray = tmp_path / "v2.zarr" / "flags" / ".zarray"
    zarray.write_text(json.dumps({**json.loads(zarray.read_text()), "compressor": compressor}))
    repo = make_repo(virtual_sources={str(tmp_path): {}})
    before = (repo.log(), repo.sessions())
    with pytest.raises(zarrlake.InvalidMetadataError, match=words):
        zarrlake.import_zarr(repo, str(tmp_path / "v2.zarr"))
    assert (repo.log(), repo.sessions()) == before


def test_an_import_shows_its_progress(make_repo, tmp_path: Path, capsys) -> None:
    _v2_store(tmp_path / "v2.zarr")
    repo = make_repo(virtual_sources={str(tmp_path): {}})
    zarrlake.import_zarr(repo, str(tmp_path / "v2.zarr"), progress=True)
    err = capsys.readouterr().err
    assert f"importing {tmp_path / 'v2.zarr'}" in err
    assert "/10 " in err  # the 10 chunks to import


def test_a_v2_store_on_s3_is_imported_by_reference(
    tmp_path: Path, s3_endpoint: str, s3_options: dict[str, object]
) -> None:
    import s3fs

    fs = s3fs.S3FileSystem(**s3_options)  # type: ignore[arg-type]
    temp, _ = _v2_store(tmp_path / "v2.zarr")
    prefix = f"lake/import-v2-{os.getpid()}-{tmp_path.name}"
    fs.put(str(tmp_path / "v2.zarr"), prefix, recursive=True)
    options = {k: v for k, v in s3_options.items() if k != "skip_instance_cache"}
    repo = zarrlake.Repo.create(tmp_path / "lake", virtual_sources={f"s3://{prefix}/": options})
    zarrlake.import_zarr(repo, f"s3://{prefix}", storage_options=options)
    ds = xr.open_zarr(repo.readonly_session().store, group="grid", consolidated=False)
    np.testing.assert_array_equal(ds.temp.values, temp)
    assert LakeProbe(repo).object_hashes() == set()
