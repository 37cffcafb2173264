"""The commit graph of a repo, page by page: the engine's one answer to "what does the
history look like", drawn by the dashboard, the CLI and the widgets alike."""

from __future__ import annotations

import threading
from collections.abc import MutableMapping, Sequence
from typing import Any

import zarrlake.process as process
from zarrlake.core import RepoCore
from zarrlake.errors import InvalidInputError, NotFoundError
from zarrlake.history.refs import resolve_ref
from zarrlake.model.graph import CommitGraph, Edge, GraphRow, lay_out, topo_order
from zarrlake.types import check_limit

__all__ = ["graph"]


def _heads(core: RepoCore, refs: Sequence[str] | None) -> dict[str, str]:
    """Ref label -> commit: every branch and tag (``tag:<name>``), or the refs asked for."""
    branches = core.catalog.refs.all("branch")
    tags = {f"tag:{n}": c for n, c in core.catalog.refs.all("tag").items()}
    if refs is None:
        return {**branches, **tags}
    if isinstance(refs, str) or not all(isinstance(r, str) for r in refs):
        raise InvalidInputError("refs must be a list of ref names or expressions")
    out: dict[str, str] = {}
    for r in refs:
        label = f"tag:{r}" if f"tag:{r}" in tags and r not in branches else r
        out[label] = resolve_ref(core, r)
    return out


Layout = tuple[list[str], list[tuple[int, tuple[Edge, ...]]], int]
_CACHED = 8
_layouts: MutableMapping[tuple[Any, ...], Layout] = process.registry("graph layouts")
_lock = threading.Lock()


def _layout(core: RepoCore, heads: dict[str, str], pin: str | None) -> Layout:
    """The drawing order, lanes and width of the graph below ``heads``. The graph below a
    set of commits never changes (expiry only removes commits no ref reaches), so a layout
    is kept for the same heads: paging through a large history lays it out once."""
    key = (*core.key(), tuple(sorted(heads.items())), pin)
    with _lock:
        found = _layouts.get(key)
    if found is not None:
        return found
    dag = core.catalog.commits.graph(sorted(set(heads.values())))
    order = topo_order(dag)
    lanes = lay_out(order, dag, pin)
    width = 1 + max((max((lane, *(b for _, b in e))) for lane, e in lanes), default=-1)
    with _lock:
        while len(_layouts) >= _CACHED:
            del _layouts[next(iter(_layouts))]
        _layouts[key] = (order, lanes, width)
    return order, lanes, width


def graph(
    core: RepoCore, refs: Sequence[str] | None = None, offset: int = 0, limit: int | None = 100
) -> CommitGraph:
    """The commits reachable from ``refs`` (default: every branch and tag), in drawing order
    with their lanes; only rows ``offset`` to ``offset + limit`` are loaded in full."""
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise InvalidInputError(f"offset must be an integer >= 0, got {offset!r}")
    limit = check_limit(limit)
    heads = _heads(core, refs)
    pin = heads.get(refs[0]) if refs else heads.get("main")
    order, lanes, width = _layout(core, heads, pin)
    end = len(order) if limit is None else min(len(order), offset + limit)
    page = order[offset:end]
    rows = core.catalog.commits.by_id(page)
    at: dict[str, list[str]] = {}
    for label, commit in sorted(heads.items(), key=lambda kv: (kv[0] != "main", kv[0])):
        at.setdefault(commit, []).append(label)
    out: list[GraphRow] = []
    for i, cid in enumerate(page, start=offset):
        row = rows.get(cid)
        if row is None:
            raise NotFoundError(f"commit {cid} was expired while the graph was read; read it again")
        lane, edges = lanes[i]
        out.append(GraphRow(row.info(), lane, edges, tuple(at.get(cid, ()))))
    incoming = lanes[offset - 1][1] if 0 < offset <= len(lanes) else ()
    return CommitGraph(tuple(out), len(order), offset, width, incoming, heads)
