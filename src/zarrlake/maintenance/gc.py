"""Garbage collection: two-phase (mark, then sweep after a grace period), safe against
sessions that write, or deduplicate against, the objects it is about to delete. The argument
is written down in ``docs/history.md`` ("Garbage collection"); each step below names the part
of it that it implements."""

from __future__ import annotations

import secrets
import time
from datetime import timedelta

from zarrlake.core import RepoCore
from zarrlake.errors import InvalidInputError
from zarrlake.faults import crash_point
from zarrlake.maintenance.progress import progress_bar
from zarrlake.maintenance.reach import live_set
from zarrlake.maintenance.repack import mostly_dead, repack
from zarrlake.maintenance.reports import GCReport
from zarrlake.objects import ObjectInfo, ObjectStore

__all__ = ["gc"]


def _recently_touched(objects: ObjectStore, h: bytes, grace: float) -> bool:
    """On local disk a write of an existing object refreshes its mtime: such an object was
    just deduplicated against, and is kept (S3 skips the write and leaves no such trace)."""
    if grace <= 0:
        return False
    touched = objects.modified_at(h)
    return touched is not None and touched > time.time() - grace


# -- gc ----------------------------------------------------------------------------------------


_TEMP_FILE_AGE = 3600.0


def gc(core: RepoCore, grace: timedelta, *, dry_run: bool, progress: bool | None) -> GCReport:
    """Delete chunk objects and catalog nodes that no commit or open session reaches and that
    were found unreachable at least ``grace`` ago (see ``Repo.gc``)."""
    if not isinstance(grace, timedelta) or grace < timedelta(0):
        raise InvalidInputError("grace must be a timedelta >= 0")
    g = grace.total_seconds()
    cat, objects = core.catalog, core.objects

    # Phase 1, mark: record what is unreachable now, with the catalog's clock. Mostly dead
    # packs are repacked first, so that the packs they leave are found unreachable here.
    live = live_set(core, progress)
    with progress_bar(progress, None, "listing objects") as bar:
        infos: dict[bytes, ObjectInfo] = {}
        for info in objects.iter_objects():
            infos[info.hash] = info
            bar.update(1)
    listing = {h: info.size for h, info in infos.items()}
    to_repack = mostly_dead(live, infos, time.time() - g)
    repacked = 0
    if to_repack and not dry_run:
        repacked = repack(core, live, to_repack, progress)
        live = live_set(core, progress)
    nodes = cat.gc.blob_index()
    dead_objects = {h: n for h, n in listing.items() if h not in live.objects}
    dead_nodes = {h: n for h, (_, n) in nodes.items() if h not in live.nodes}
    marks = {h: (state, at) for h, state, _, at in cat.gc.marks("object")}
    node_marks = {h: at for h, _, _, at in cat.gc.marks("blob")}
    if dry_run:
        return _dry_run(core, g, dead_objects, dead_nodes, marks, node_marks, len(to_repack))
    cat.gc.mark(
        [("object", h, n) for h, n in dead_objects.items() if h not in marks]
        + [("blob", h, n) for h, n in dead_nodes.items() if h not in node_marks],
    )
    cat.gc.unmark(
        "object",
        [
            h
            for h, (s, _) in marks.items()
            if s == "marked" and (h in live.objects or h not in listing)
        ],
    )
    cat.gc.unmark("blob", [h for h in node_marks if h in live.nodes or h not in nodes])
    crash_point("gc.marked")

    # Phase 2, sweep objects: claim ripe marks (fenced against commits), then check liveness
    # again, release what is in use, delete the rest and leave tombstones.
    ripe = [h for h, _ in cat.gc.eligible("object", g) if not _recently_touched(objects, h, g)]
    ripe_nodes = [h for h, _ in cat.gc.eligible("blob", g)]
    run_id = "gc-" + secrets.token_hex(8)
    claimed, taken = cat.gc.claim(run_id, ripe, g)
    crash_point("gc.claimed")
    freed_objects = freed_object_bytes = 0
    deleted_nodes: list[bytes] = []
    if claimed or taken or ripe_nodes:
        now_live = live_set(core, progress)
        # Our own claims were made before now_live was read: anything in use shows in it. A
        # claim taken over from another run may have been deleted by that run already, unless
        # a commit uses it (commits after a claim are refused, so that commit predates it).
        in_use = {h for h, _ in claimed if h in now_live.objects}
        in_use |= {h for h, _ in taken if h in now_live.committed}
        cat.gc.release(run_id, sorted(in_use))
        doomed = [(h, n) for h, n in claimed + taken if h not in in_use]
        with progress_bar(progress, len(doomed), "gc: deleting objects") as bar:
            for i in range(0, len(doomed), 256):
                batch = doomed[i : i + 256]
                objects.delete_many([h for h, _ in batch])  # one request per batch on S3
                crash_point("gc.delete")  # a batch deleted, its tombstones not written
                for h, n in batch:
                    if h in listing:
                        freed_objects += 1
                        freed_object_bytes += n
                    bar.update(1)
                cat.gc.tombstone([h for h, _ in batch])
        crash_point("gc.deleted")
        # Catalog nodes: deleted only if not written again since marked (one statement).
        cat.gc.unmark("blob", [h for h in ripe_nodes if h in now_live.nodes])
        deleted_nodes = cat.gc.delete_nodes([h for h in ripe_nodes if h not in now_live.nodes], g)
    cat.gc.purge_tombstones()
    # Moves out of packs that no ref names any more will never be followed again.
    cat.gc.forget_moves(sorted({p for p, _ in live.moves} - live.named_packs))
    # A writer writes a temporary file and renames it in milliseconds: one that is an hour old
    # (or older than the grace) was left by a killed process.
    objects.remove_stale_temporaries(time.time() - max(g, _TEMP_FILE_AGE))
    node_bytes = sum(nodes.get(h, ("", 0))[1] for h in deleted_nodes)
    return GCReport(
        objects_deleted=freed_objects,
        object_bytes_freed=freed_object_bytes,
        nodes_deleted=len(deleted_nodes),
        node_bytes_freed=node_bytes,
        objects_pending=max(0, len(dead_objects) - freed_objects),
        nodes_pending=max(0, len(dead_nodes) - len(deleted_nodes)),
        packs_repacked=repacked,
    )


def _dry_run(
    core: RepoCore,
    g: float,
    dead_objects: dict[bytes, int],
    dead_nodes: dict[bytes, int],
    marks: dict[bytes, tuple[str, float]],
    node_marks: dict[bytes, float],
    repackable: int,
) -> GCReport:
    cutoff = core.catalog.clock() - g

    def ripe(at: float | None) -> bool:
        return g == 0 or (at is not None and at <= cutoff)

    objs = {
        h: n
        for h, n in dead_objects.items()
        if ripe(marks[h][1] if h in marks and marks[h][0] == "marked" else None)
        and not _recently_touched(core.objects, h, g)
    }
    nodes = {h: n for h, n in dead_nodes.items() if ripe(node_marks.get(h))}
    return GCReport(
        objects_deleted=len(objs),
        object_bytes_freed=sum(objs.values()),
        nodes_deleted=len(nodes),
        node_bytes_freed=sum(nodes.values()),
        objects_pending=len(dead_objects) - len(objs),
        nodes_pending=len(dead_nodes) - len(nodes),
        packs_repacked=repackable,
        dry_run=True,
    )


# -- expire ------------------------------------------------------------------------------------
