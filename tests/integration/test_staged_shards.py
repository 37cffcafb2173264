"""A commit takes the batches of references its session staged as new shards without holding
them: the catalog copies the staged bytes into the commit's nodes in its own transaction. The
commit reads a batch back only where it must (a merge, a check), a batch staged over while
the commit ran fails it with nothing changed, and its memory stays below the batches'."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import sqlalchemy as sa
import zarr

import zarrlake
import zarrlake.core.commit as committing
import zarrlake.session.writable as writable
from zarrlake import checks
from zarrlake.model import ChunkRef, manifest
from zarrlake.model.batches import batch_entry, batch_shard
from zarrlake.model.records import StagedEntry
from zarrlake.testing import LakeProbe

ROWS = 64  # chunks of one row of 4 float32 each; a shard position holds 8 of them


@pytest.fixture(autouse=True)
def _small_shards(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(manifest, "SHARD_TARGET", 8)


def _archive(tmp_path: Path, files: int = 1, rows: int = ROWS) -> tuple[Path, np.ndarray]:
    """Float32 values 0, 1, 2, ... (``rows`` chunks of 4) in ``files`` files."""
    folder = tmp_path / "archive"
    folder.mkdir()
    data = np.arange(rows * 4, dtype="<f4").reshape(rows, 4)
    for i, part in enumerate(np.array_split(data, files)):
        (folder / f"f{i:05d}.bin").write_bytes(part.tobytes())
    return folder, data


def _open_array(repo: zarrlake.Repo, rows: int = ROWS) -> zarrlake.WritableSession:
    """A session holding a new array ``v`` of ``rows`` chunks of 4 float32 each."""
    s = repo.writable_session()
    zarr.create_array(s.store, name="v", shape=(rows, 4), chunks=(1, 4), dtype="<f4",
                      compressors=None, fill_value=0)  # fmt: skip
    return s


def _stage(
    repo: zarrlake.Repo, folder: Path, files: int = 1, rows: int = ROWS
) -> zarrlake.WritableSession:
    s = _open_array(repo, rows)
    per = rows // files
    refs = [((r, 0), str(folder / f"f{r // per:05d}.bin"), 16 * (r % per), 16) for r in range(rows)]
    s.put_virtual_refs("v", refs)
    s.flush()
    return s


def _staged_batches(probe: LakeProbe, session: str) -> dict[bytes, bytes]:
    st = probe.tables.staged
    with probe.sql() as conn:
        rows = conn.execute(
            sa.select(st.c.hash, st.c.inline).where(
                st.c.session_id == session, st.c.kind == "vrefs"
            )
        )
        return {bytes(h): bytes(b) for h, b in rows}


def _read(repo: zarrlake.Repo, ref: str = "main") -> np.ndarray:
    return zarr.open_array(repo.readonly_session(ref).store, path="v", mode="r")[:]  # type: ignore[return-value]


def _count_reads(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    reads: list[Any] = []
    read = writable.staged_batch

    def counted(*args: Any) -> Any:
        reads.append(args[-1])
        return read(*args)

    monkeypatch.setattr(writable, "staged_batch", counted)
    return reads


def test_a_commit_takes_its_staged_batches_as_shards_without_reading_them_back(
    make_repo: Callable[..., zarrlake.Repo], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, data = _archive(tmp_path)
    repo = make_repo(virtual_sources={str(folder): {}})
    s = _stage(repo, folder)
    probe = LakeProbe(repo)
    batches = _staged_batches(probe, s.id)
    assert len(batches) >= 8  # shard positions
    reads = _count_reads(monkeypatch)
    commit = s.commit("references")
    assert reads == []
    # every staged batch is a node of the commit, byte for byte
    for h, blob in batches.items():
        assert probe.catalog.nodes.get(h) == blob
    assert _staged_batches(probe, s.id) == {}  # the session's rows went with the commit
    np.testing.assert_array_equal(_read(repo, commit), data)
    assert len(repo.diff(repo.log()[1].id, commit)["v"].chunks_added) == ROWS


def test_two_positions_staged_alike_become_one_node(
    make_repo: Callable[..., zarrlake.Repo], tmp_path: Path
) -> None:
    folder, data = _archive(tmp_path)
    repo = make_repo(virtual_sources={str(folder): {}})
    s = _open_array(repo)
    shape = s.virtual_shard_shape("v")
    assert shape is not None
    assert shape[0] < ROWS
    # every shard position references the same bytes: the first position's rows
    source = str(folder / "f00000.bin")
    s.put_virtual_refs("v", [((r, 0), source, 16 * (r % shape[0]), 16) for r in range(ROWS)])
    s.flush()
    batches = list(_staged_batches(LakeProbe(repo), s.id))
    assert len(batches) == 1  # one hash for every position's batch
    commit = s.commit("the same references at every position")
    got = _read(repo, commit)
    np.testing.assert_array_equal(got, np.tile(data[: shape[0]], (ROWS // shape[0], 1)))


def test_a_commit_after_its_branch_moved_reads_its_batches_back_to_rebase(
    make_repo: Callable[..., zarrlake.Repo], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, data = _archive(tmp_path)
    repo = make_repo(virtual_sources={str(folder): {}})
    first = repo.writable_session()
    zarr.create_array(first.store, name="w", shape=(2,), chunks=(1,), dtype="i4")
    first.commit("an array of its own")
    s = _stage(repo, folder)
    other = repo.writable_session()
    zarr.open_array(other.store, path="w")[:] = [7, 8]
    other.commit("meanwhile")
    reads = _count_reads(monkeypatch)
    s.commit("references")
    assert reads  # the rebase looked at the staged chunks
    np.testing.assert_array_equal(_read(repo), data)
    g = zarr.open_group(repo.readonly_session().store, mode="r")
    assert g["w"][:].tolist() == [7, 8]  # type: ignore[index, union-attr]


def test_a_batch_staged_over_while_the_commit_ran_fails_it_and_changes_nothing(
    make_repo: Callable[..., zarrlake.Repo], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, data = _archive(tmp_path)
    repo = make_repo(virtual_sources={str(folder): {}})
    s = _stage(repo, folder)
    probe = LakeProbe(repo)
    head = repo.resolve("main")
    st = probe.tables.staged
    build = committing.build_snapshot

    def build_then_restage(*args: Any, **kwargs: Any) -> Any:
        built = build(*args, **kwargs)
        # another process of the session stages position (0, 0) again, without one chunk
        at = sa.and_(st.c.session_id == s.id, st.c.kind == "vrefs", st.c.key == "0,0")
        with probe.sql() as conn:
            row = conn.execute(sa.select(st.c.source, st.c.inline).where(at)).one()
            blob = bytes(row.inline)
            was = StagedEntry("v", "vrefs", (0, 0), row.source, ChunkRef(b"", len(blob), blob))
            e = batch_entry("v", (0, 0), row.source, batch_shard(was).apply({0: None}))
            assert e.ref is not None
            conn.execute(sa.update(st).where(at).values(hash=e.ref.hash, inline=e.ref.inline))
        return built

    monkeypatch.setattr(committing, "build_snapshot", build_then_restage)
    with pytest.raises(zarrlake.CatalogError, match="changed while it committed"):
        s.commit("references")
    assert repo.resolve("main") == head
    monkeypatch.undo()
    s.commit("references, again")  # the session stayed open with what it staged last
    got = _read(repo)
    assert got[0].tolist() == [0, 0, 0, 0]  # the chunk the second staging left out
    np.testing.assert_array_equal(got[1:], data[1:])


def test_a_check_reads_the_chunks_of_staged_batches(
    make_repo: Callable[..., zarrlake.Repo], tmp_path: Path
) -> None:
    folder, _ = _archive(tmp_path)
    repo = make_repo(virtual_sources={str(folder): {}})
    repo.add_check("range", checks.value_range("v", max=float(ROWS * 4 - 2)))
    head = repo.resolve("main")
    s = _stage(repo, folder)
    with pytest.raises(zarrlake.CheckFailedError) as err:
        s.commit("references")
    assert [f.chunks for f in err.value.failures] == [{"v": ((ROWS - 1, 0),)}]  # the last
    assert repo.resolve("main") == head


def test_a_commit_holds_less_memory_than_the_batches_it_takes(
    make_repo: Callable[..., zarrlake.Repo], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(manifest, "SHARD_TARGET", 256)
    # each chunk in a file of its own, as an import of a Zarr store has them
    rows = 8192
    folder, _ = _archive(tmp_path, files=rows, rows=rows)
    repo = make_repo(virtual_sources={str(folder): {}})
    s = _stage(repo, folder, files=rows, rows=rows)
    staged = sum(map(len, _staged_batches(LakeProbe(repo), s.id).values()))
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        s.commit("references")
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    assert peak < staged, (peak, staged)
