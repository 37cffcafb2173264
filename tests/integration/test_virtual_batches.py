"""Virtual references staged a shard at a time, across processes and crashes: processes of one
session staging batches at the same shard positions all count, each call's batches land whole
or not at all when the process is killed, and bad columns are refused with nothing staged."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import zarr

import zarrlake
from tests.integration._workers import Child, run_children, stage_reference_rows

ROWS = 6


def _setup(
    make_repo: Callable[..., zarrlake.Repo], tmp_path: Path
) -> tuple[zarrlake.Repo, str, bytes]:
    archive = tmp_path / "archive"
    archive.mkdir()
    data = np.random.default_rng(5).bytes(16 * 4)
    (archive / "src.bin").write_bytes(data)
    repo = make_repo(virtual_sources={str(archive): {}})
    return repo, str(archive / "src.bin"), data


def _open_array(repo: zarrlake.Repo) -> zarrlake.WritableSession:
    s = repo.writable_session()
    zarr.create_array(
        s.store, name="v", shape=(2 * ROWS, 16), chunks=(2, 2), dtype="<i4", compressors=None,
        fill_value=0,
    )  # fmt: skip
    s.flush()
    return s


def _chunks(repo: zarrlake.Repo, ref: str) -> dict[tuple[int, int], bytes]:
    ro = repo.readonly_session(ref)
    out = {}
    for r in range(ROWS):
        for c in range(8):
            found = ro.locate(f"v/c/{r}/{c}")
            if found is not None:
                out[r, c] = ro.read_ref(found)
    return out


def test_processes_of_one_session_stage_batches_at_the_same_positions(
    make_repo: Callable[..., zarrlake.Repo], catalog_url: str, tmp_path: Path
) -> None:
    repo, source, data = _setup(make_repo, tmp_path)
    s = _open_array(repo)
    # the whole grid is one shard position: every call of every process writes over it
    start = time.time() + 5  # every process ready by then: their calls interleave
    calls = [
        (stage_reference_rows, (catalog_url, repo.name, s.id, source, rows, slot, "", start))
        for rows, slot in (([0, 2, 4] * 20, 1), ([1, 3, 5] * 20, 2), ([0, 1] * 20, 3))
    ]
    run_children(calls)
    s.commit("references from three processes")
    got = _chunks(repo, "main")
    want = {(r, c): data[16 * slot : 16 * slot + 16] for r, slot in
            [(0, 3), (1, 3), (2, 1), (3, 2), (4, 1), (5, 2)] for c in range(8)}  # fmt: skip
    # the third process wrote rows 0 and 1 after or before the others: the one that staged
    # last wins each of them, and nothing else was lost
    for r in (0, 1):
        assert got[r, 0] in (want[r, 0], data[16 * (1 if r == 0 else 2) :][:16])
        want.update({(r, c): got[r, 0] for c in range(8)})
    assert got == want
    assert repo.diff("main~1", "main").summary().chunks_added == ROWS * 8


@pytest.mark.slow
def test_a_process_killed_while_staging_leaves_each_call_whole_or_absent(
    make_repo: Callable[..., zarrlake.Repo], catalog_url: str, tmp_path: Path
) -> None:
    repo, source, data = _setup(make_repo, tmp_path)
    s = _open_array(repo)
    # three calls; the process dies inside the staging transaction of the second
    child = Child(
        stage_reference_rows, catalog_url, repo.name, s.id, source, [0, 1, 2], 1, "stage.in_tx:2"
    ).start()
    child.proc.join(timeout=120)
    assert child.proc.exitcode == -signal.SIGKILL
    s.commit("what was staged before the crash")
    got = _chunks(repo, "main")
    assert got == {(0, c): data[16:32] for c in range(8)}
    assert repo.fsck().ok


def test_bad_columns_are_refused_and_stage_nothing(
    make_repo: Callable[..., zarrlake.Repo], tmp_path: Path
) -> None:
    repo, source, _ = _setup(make_repo, tmp_path)
    s = _open_array(repo)
    before = s.status().summary()
    ok = (np.array([[0, 0], [0, 1]]), [source, source], np.array([0, 16]), np.array([16, 16]))
    bad: list[tuple[tuple[object, ...], type[Exception], str]] = [
        ((ok[0][:1], *ok[1:]), zarrlake.InvalidInputError, "2 URLs need 2 coordinates"),
        ((np.array([[0, 0, 0], [0, 1, 0]]), *ok[1:]), zarrlake.InvalidInputError, "of 2 numbers"),
        ((ok[0], ok[1], np.array(["a", "b"]), ok[3]), zarrlake.InvalidInputError, "offsets"),
        ((ok[0], ok[1], ok[2], np.array([16, 8])), zarrlake.InvalidInputError, "exactly 16"),
        ((ok[0], ok[1], np.array([0, 60]), ok[3]), zarrlake.VirtualSourceError, "only 64 bytes"),
        ((ok[0], ok[1], np.array([0, -16]), ok[3]), zarrlake.InvalidInputError, "negative"),
        ((np.array([[0, 0], [6, 0]]), *ok[1:]), zarrlake.InvalidKeyError, "outside the chunk grid"),
        (
            (np.array([[0, 0], [0, -1]]), *ok[1:]),
            zarrlake.InvalidKeyError,
            "outside the chunk grid",
        ),
        ((ok[0], [source, "/etc/passwd"], *ok[2:]), zarrlake.VirtualSourceError, "refused"),
    ]
    for args, error, words in bad:
        with pytest.raises(error, match=words):
            s.put_virtual_columns("v", *args)  # type: ignore[arg-type]
    with pytest.raises(zarrlake.InvalidInputError, match="no array at 'nope'"):
        s.put_virtual_columns("nope", *ok)
    assert s.status().summary() == before
    assert s.put_virtual_columns("v", *ok) == 2
    assert s.status().summary().chunks_added == 2
