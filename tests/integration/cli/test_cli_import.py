"""``zarrlake import SOURCE``: a Zarr store brought into a lake in one commit, by reference
or copied; a store that cannot be imported changes nothing and says why."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import zarr

import zarrlake
from tests.integration.cli.conftest import run


def _store(path: Path, zarr_format: int) -> np.ndarray:
    data = np.arange(40, dtype="i4").reshape(4, 10)
    g = zarr.open_group(str(path), mode="w", zarr_format=zarr_format)  # type: ignore[arg-type]
    g.create_array("x", shape=data.shape, chunks=(2, 5), dtype="i4")[:] = data
    return data


def test_import_a_v2_store_by_reference(tmp_path: Path) -> None:
    data = _store(tmp_path / "old.zarr", 2)
    assert run("init", str(tmp_path / "lake")).returncode == 0
    p = run("import", str(tmp_path / "old.zarr"), "--lake", str(tmp_path / "lake"), "--allow",
            "-m", "bring the archive")  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert f"Imported {tmp_path / 'old.zarr'} (Zarr v2) into branch 'main'" in p.stdout
    assert "4 chunks referenced where they are." in p.stdout
    repo = zarrlake.Repo.open(tmp_path / "lake")
    assert repo.log()[0].message == "bring the archive"
    assert repo.virtual_sources() == {f"file://{tmp_path / 'old.zarr'}/": {}}
    arr = zarr.open_array(repo.readonly_session().store, path="x", mode="r")
    np.testing.assert_array_equal(arr[:], data)


def test_import_copies_into_a_branch_as_json(tmp_path: Path) -> None:
    _store(tmp_path / "new.zarr", 3)
    assert run("init", str(tmp_path / "lake")).returncode == 0
    repo = zarrlake.Repo.open(tmp_path / "lake")
    repo.create_branch("imports")
    p = run("import", str(tmp_path / "new.zarr"), "--lake", str(tmp_path / "lake"), "--copy",
            "--branch", "imports", "--json")  # fmt: skip
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert (doc["branch"], doc["chunks"], doc["copied"], doc["zarr_format"]) == (
        "imports", 4, True, 3,
    )  # fmt: skip
    assert repo.resolve("imports") == doc["commit"]
    assert repo.virtual_sources() == {}


def test_import_of_a_location_not_allowed_exits_2_and_changes_nothing(tmp_path: Path) -> None:
    _store(tmp_path / "new.zarr", 3)
    assert run("init", str(tmp_path / "lake")).returncode == 0
    before = zarrlake.Repo.open(tmp_path / "lake").log()
    p = run("import", str(tmp_path / "new.zarr"), "--lake", str(tmp_path / "lake"))
    assert p.returncode == 2
    assert "needs its location allowed" in p.stderr
    assert "--allow" not in p.stdout
    assert zarrlake.Repo.open(tmp_path / "lake").log() == before


def test_import_an_icechunk_repository_with_its_history(tmp_path: Path) -> None:
    icechunk = pytest.importorskip("icechunk")
    ic_repo = icechunk.Repository.create(icechunk.local_filesystem_storage(str(tmp_path / "ice")))
    s = ic_repo.writable_session("main")
    zarr.create_array(s.store, name="x", shape=(4,), chunks=(2,), dtype="i4")[:] = 3
    first = s.commit("first")
    ic_repo.create_tag("v1", first)
    assert run("init", str(tmp_path / "lake")).returncode == 0
    p = run("import", str(tmp_path / "ice"), "--lake", str(tmp_path / "lake"),
            "--ref-prefix", "ic/")  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == (
        f"Imported Icechunk repository {tmp_path / 'ice'}: 1 new commit, 2 chunks copied, "
        "0 referenced; set ic/main, tag ic/v1."
    )
    repo = zarrlake.Repo.open(tmp_path / "lake")
    assert repo.log("ic/v1")[0].message == "first"


def test_import_an_icechunk_repository_on_s3(tmp_path: Path, s3_endpoint: str) -> None:
    icechunk = pytest.importorskip("icechunk")
    prefix = f"ice-cli-{tmp_path.name}"
    storage = icechunk.s3_storage(
        bucket="lake", prefix=prefix, endpoint_url=s3_endpoint, allow_http=True,
        region="us-east-1", access_key_id="testing", secret_access_key="testing",
    )  # fmt: skip
    s = icechunk.Repository.create(storage).writable_session("main")
    zarr.create_array(s.store, name="x", shape=(6,), chunks=(2,), dtype="i4")[:] = 7
    snapshot = s.commit("on s3")
    assert run("init", str(tmp_path / "lake")).returncode == 0
    p = run("import", f"s3://lake/{prefix}", "--icechunk", "--lake", str(tmp_path / "lake"),
            "--source-option", f"endpoint_url={s3_endpoint}", "--source-option", "key=testing",
            "--source-option", "secret=testing", "--source-option", "region=us-east-1",
            "--json")  # fmt: skip
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert (list(doc["commits"]), list(doc["branches"]), doc["copied"]) == ([snapshot], ["main"], 3)
    assert "testing" not in p.stdout + p.stderr
    repo = zarrlake.Repo.open(tmp_path / "lake")
    np.testing.assert_array_equal(
        zarr.open_array(repo.readonly_session().store, path="x", mode="r")[:], [7] * 6
    )


def test_an_icechunk_source_it_cannot_read_exits_2_and_changes_nothing(tmp_path: Path) -> None:
    pytest.importorskip("icechunk")
    assert run("init", str(tmp_path / "lake")).returncode == 0
    before = zarrlake.Repo.open(tmp_path / "lake").log()
    p = run("import", "s3://lake/ice", "--icechunk", "--lake", str(tmp_path / "lake"),
            "--source-option", "key=only-a-key")  # fmt: skip
    assert p.returncode == 2, p.stderr
    assert "give both key and secret" in p.stderr
    assert "only-a-key" not in p.stderr
    assert zarrlake.Repo.open(tmp_path / "lake").log() == before
