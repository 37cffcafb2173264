"""Repacking: gc copies the live chunks of mostly dead packs into new packs, so that the old
ones become garbage. Manifests are immutable and shared by history, so they keep naming the old
locations; a catalog row per moved chunk (``zl_moved``) tells readers where it went, and the
live set follows those rows. See docs/architecture.md, "Packs"."""

from __future__ import annotations

from zarrlake.core import RepoCore
from zarrlake.errors import ZarrlakeError
from zarrlake.faults import crash_point
from zarrlake.maintenance.progress import progress_bar
from zarrlake.maintenance.reach import Reach
from zarrlake.objects import ObjectInfo

__all__ = ["REPACK_BELOW", "repack"]

REPACK_BELOW = 0.5
"""A pack whose live chunks fill less than this share of it is repacked."""


def mostly_dead(
    live: Reach, listing: dict[bytes, ObjectInfo], written_before: float
) -> list[bytes]:
    """The packs worth repacking: some chunk in them is live, but less than
    :data:`REPACK_BELOW` of their bytes, and they were written before ``written_before`` (a
    pack written within the grace period may hold chunks whose rows are not staged yet)."""
    out = []
    for pack, chunks in sorted(live.packed.items()):
        info = listing.get(pack)
        if info is None or info.mtime >= written_before:
            continue
        if sum(n for n, _ in chunks.values()) < REPACK_BELOW * info.size:
            out.append(pack)
    return out


def repack(core: RepoCore, live: Reach, packs: list[bytes], progress: bool | None) -> int:
    """Copy the live chunks of ``packs`` into new packs, make those durable, then record the
    moves in one transaction. Returns how many packs were emptied of live chunks."""
    objects = core.objects
    moves: list[tuple[bytes, int, bytes, int]] = []
    emptied = 0
    with progress_bar(progress, len(packs), "gc: repacking") as bar:
        for pack in packs:
            try:
                data = objects.read_range(pack)
            except ZarrlakeError:
                bar.update(1)
                continue  # missing or unreadable: fsck reports it; nothing to move
            moved_all = True
            for offset, (length, h) in sorted(live.packed[pack].items()):
                chunk = data[offset : offset + length]
                if len(chunk) != length or not core.hasher.matches(chunk, h):
                    moved_all = False  # a damaged chunk stays where fsck will find it
                    continue
                new_pack, new_offset = objects.write_packed(h, chunk)
                moves.append((pack, offset, new_pack, new_offset))
            emptied += moved_all
            bar.update(1)
    if not moves:
        return 0
    objects.sync()  # the new packs are durable before any row points to them
    crash_point("gc.repacked")
    core.catalog.gc.record_moves(moves)
    return emptied
