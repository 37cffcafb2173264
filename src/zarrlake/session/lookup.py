"""Where a writable session finds keys among its staged changes: this process's own rows
first, then the catalog's (other processes of the session may have staged a key:
read-uncommitted inside a session), every key left over in one statement."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from zarrlake.catalog.interface import SessionStore, StagedAsk
from zarrlake.model import ChunkRef
from zarrlake.model.records import StagedEntry
from zarrlake.session.keys import Target
from zarrlake.session.local import LocalRows
from zarrlake.session.virtual import batch_position, staged_batch_ref

__all__ = ["Found", "staged_lookups"]

Found = tuple[bool, ChunkRef | None]
"""(whether the staged changes decide the key, what they hold for it: ``None`` for a key
they delete)."""


def staged_lookups(
    sessions: SessionStore,
    session_id: str,
    targets: Sequence[Target],
    local: LocalRows,
    dropped: Callable[[str], bool],
    guess: Callable[[Target], tuple[int, ...] | None],
    node: Callable[[str, Mapping[str, StagedEntry]], None],
) -> list[Found]:
    """What session ``session_id`` staged for each of ``targets`` (chunk or raw keys).
    ``local``: this process's rows; ``dropped(path)``: whether this process knows the node
    at ``path`` dropped; ``guess(t)``: the shard shape references to ``t`` are usually
    staged with (:func:`~zarrlake.session.virtual.staged_batch_ref`). A metadata key is
    always asked of the catalog, in the same statement, and what it found for the node
    (its ``meta`` and ``drop`` rows) handed to ``node(path, found)``."""
    out: list[Found] = [(False, None)] * len(targets)
    asks: list[StagedAsk] = []
    left: list[tuple[int, Target, tuple[int, ...] | None]] = []
    for i, t in enumerate(targets):
        if t.kind == "meta":
            asks.append((t.path, "meta", (), "", None, None))
            left.append((i, t, None))
            continue
        # a chunk may have been staged raw, written before its array existed
        raw_key = t.store_key if t.kind == "chunk" else None
        mine = local.get(t.slot)
        if mine is None and raw_key is not None:
            mine = local.get(("", "raw", (), raw_key))
        if mine is not None:
            out[i] = (True, mine.ref)
            continue
        shape = guess(t)
        asks.append((t.path, t.kind, t.coords, t.key, raw_key, batch_position(t.coords, shape)))
        left.append((i, t, shape))
    if asks:
        answers = sessions.get_staged_many(session_id, asks)
        for (i, t, shape), found in zip(left, answers, strict=True):
            if t.kind == "meta":
                node(t.path, found)
            else:
                out[i] = _decide(sessions, session_id, t, shape, found, dropped)
    return out


def _decide(
    sessions: SessionStore,
    session_id: str,
    t: Target,
    shape: tuple[int, ...] | None,
    found: Mapping[str, StagedEntry],
    dropped: Callable[[str], bool],
) -> Found:
    if t.kind in found:
        return True, found[t.kind].ref
    if (ref := staged_batch_ref(sessions, session_id, t.path, t.coords, shape, found)) is not None:
        return True, ref
    if "raw" in found:  # a raw row under a dropped node was staged after the drop
        return True, found["raw"].ref
    # a drop hides the node's base chunks; a raw key's path "" is no node's
    if t.kind != "raw" and ("drop" in found or dropped(t.path)):
        return True, None
    return False, None
