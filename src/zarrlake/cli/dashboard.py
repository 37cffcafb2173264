"""``zarrlake demo`` and ``zarrlake ui``: the demo lake and the dashboard."""

from __future__ import annotations

import argparse
import sys
from datetime import timedelta
from pathlib import Path

import zarrlake

__all__ = ["register"]


def _cmd_demo(args: argparse.Namespace) -> int:
    """Walk through the main job on the embedded default (SQLite + local directory)."""
    import numpy as np
    import zarr

    path = Path(args.path)
    if (path / "catalog.db").exists():
        if not args.force:
            print(
                f"{path} already holds a zarrlake repo; pass --force to start it afresh",
                file=sys.stderr,
            )
            return 2
        import shutil

        shutil.rmtree(path)
    repo = zarrlake.Repo.create(path)
    print(f"created {repo!r}")

    s = repo.writable_session("main", expires_in=timedelta(hours=2))
    g = zarr.open_group(s.store, mode="w")
    temp = g.create_array("temp", shape=(100, 100), chunks=(10, 10), dtype="f4")
    temp[:] = 1.0
    c1 = s.commit("first write", metadata={"source": "station-a"})
    print(f"commit {c1[:10]}: wrote temp (100 chunks)")

    reader = repo.readonly_session(branch="main")  # a snapshot that will not move

    s = repo.writable_session("main")
    zarr.open_array(s.store, path="temp")[0:10, 0:10] = 5.0
    c2 = s.commit("update one chunk")
    print(f"commit {c2[:10]}: changed 1 chunk")
    old = np.asarray(zarr.open_array(reader.store, path="temp", mode="r")[:]).sum()
    new = np.asarray(zarr.open_array(repo.readonly_session().store, path="temp", mode="r")[:]).sum()
    print(f"reader opened before the update still sees sum={old:.0f}; main now has sum={new:.0f}")

    a, b = repo.writable_session(), repo.writable_session()
    zarr.open_array(a.store, path="temp")[50:60, 50:60] = 7.0
    zarr.open_array(b.store, path="temp")[50:60, 50:60] = 9.0
    zarr.open_array(b.store, path="temp")[90:100, 90:100] = 3.0
    a.commit("writer a")
    try:
        b.commit("writer b")
    except zarrlake.ConflictError as exc:
        print(f"concurrent writer refused: {exc.conflicts[0]}")
        b.rebase("theirs")  # keep a's chunk, keep b's other change
        print(f"after rebase('theirs'), writer b commits {b.commit('writer b, rebased')[:10]}")

    repo.create_tag("v1", c1)
    v1 = zarr.open_array(repo.readonly_session(tag="v1").store, path="temp", mode="r")
    print(f"tag v1 -> {c1[:10]}: temp[0, 0] = {v1[0, 0]!r} (the data of the first commit, forever)")
    final = np.asarray(zarr.open_array(repo.readonly_session().store, path="temp", mode="r")[:])
    assert np.all(final[50:60, 50:60] == 7.0)
    assert np.all(final[90:100, 90:100] == 3.0)
    print(f"\nwhat changed since v1 (repo.diff('v1', 'main')):\n{repo.diff('v1', 'main')!r}")
    print("\nlog main:")
    for info in repo.log("main"):
        print(
            f"  {info.id[:10]}  {info.created_at:%Y-%m-%d %H:%M:%S}  {info.author:<10} {info.message}"
        )
    print(f"\nrepo kept at {path.absolute()}  (zarrlake log {path})")
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    demo = sub.add_parser(
        "demo", help="create a repo and walk through commits, snapshots, conflicts, tags"
    )
    demo.add_argument("path", nargs="?", default="my-lake")
    demo.add_argument("--force", action="store_true", help="replace an existing repo at PATH")
    demo.set_defaults(func=_cmd_demo)
