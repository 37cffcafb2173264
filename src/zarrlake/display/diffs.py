"""Reprs of a ``Diff``: its nodes, field changes, and a small chunk map per changed array."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from math import ceil
from typing import TYPE_CHECKING, Any

from zarrlake.display._base import esc, fmt_value, section, table, wrap

if TYPE_CHECKING:
    from zarrlake.display._protocols import DiffLike, NodeDiffLike

__all__ = ["chunk_grids", "chunk_map_svg", "chunk_map_text", "diff_html", "diff_text"]

Grids = Mapping[str, tuple[int, ...]]

MAX_NODES = 200  # nodes listed in a diff repr; the rest are counted
MAX_KEYS = 50  # non-Zarr keys listed per kind
MAP_COLS, MAP_ROWS = 48, 16  # the chunk map's size cap in cells
MAP_MAPS = 20  # arrays that get a chunk map
CELL = 9  # px per cell
_SIGN = {"added": "+", "removed": "-", "modified": "~"}


def _counts(n: NodeDiffLike) -> str:
    parts = [
        f"{sign}{len(s)}"
        for sign, s in (("+", n.chunks_added), ("~", n.chunks_changed), ("-", n.chunks_removed))
        if s
    ]
    return " ".join(parts)


def _title(d: DiffLike) -> str:
    a, b = (d.before or "?")[:10], (d.after or "?")[:10]
    nodes = list(d.nodes)
    by = {s: sum(1 for n in nodes if n.status == s) for s in ("added", "removed", "modified")}
    ca = sum(len(n.chunks_added) for n in nodes)
    cc = sum(len(n.chunks_changed) for n in nodes)
    cr = sum(len(n.chunks_removed) for n in nodes)
    return (
        f"Diff {a}..{b}: {by['added']} added, {by['removed']} removed, {by['modified']} modified;"
        f" chunks +{ca} ~{cc} -{cr}"
    )


def _changes(n: NodeDiffLike) -> list[str]:
    out = [f"{c.field}: {fmt_value(c.before)} -> {fmt_value(c.after)}" for c in n.metadata]
    out += [
        f"attributes[{c.field!r}]: {fmt_value(c.before)} -> {fmt_value(c.after)}"
        for c in n.attributes
    ]
    return out


# -- chunk map ---------------------------------------------------------------------------------


def _grid(
    n: NodeDiffLike, grid: tuple[int, ...] | None = None
) -> tuple[int, int, int, int, dict[tuple[int, int], str]] | None:
    """Project the changed chunk coords on the last two axes and bin them to the size cap.

    Returns (rows, cols, row_step, col_step, cell -> status); ``None`` when no chunk changed.
    ``grid`` is the array's chunk grid shape when the caller knows it (a diff does not hold
    it); without it the map spans the changed coords' extent.
    """
    marks: list[tuple[tuple[int, ...], str]] = [
        (c, status)
        for status, coords in (
            ("added", n.chunks_added),
            ("changed", n.chunks_changed),
            ("removed", n.chunks_removed),
        )
        for c in coords
    ]
    if not marks:
        return None

    def rc(c: tuple[int, ...]) -> tuple[int, int]:
        if len(c) == 0:
            return 0, 0
        if len(c) == 1:
            return 0, c[0]
        return c[-2], c[-1]

    extent_r = max(rc(c)[0] for c, _ in marks) + 1
    extent_c = max(rc(c)[1] for c, _ in marks) + 1
    if grid:
        extent_r = max(extent_r, grid[-2] if len(grid) > 1 else 1)
        extent_c = max(extent_c, grid[-1])
    step_r, step_c = ceil(extent_r / MAP_ROWS), ceil(extent_c / MAP_COLS)
    cells: dict[tuple[int, int], str] = {}
    for c, status in marks:
        r, col = rc(c)
        key = (r // step_r, col // step_c)
        prev = cells.get(key)
        cells[key] = status if prev in (None, status) else "mixed"
    return ceil(extent_r / step_r), ceil(extent_c / step_c), step_r, step_c, cells


def _axes_note(n: NodeDiffLike, step_r: int, step_c: int) -> str:
    ndim = next(
        (len(c) for s in (n.chunks_added, n.chunks_changed, n.chunks_removed) for c in s), 0
    )
    parts = []
    if ndim > 2:
        parts.append(f"last 2 of {ndim} chunk axes (the others folded in)")
    if step_r > 1 or step_c > 1:
        parts.append(f"one cell = {step_r}x{step_c} chunks")
    return "; ".join(parts)


def chunk_map_svg(n: NodeDiffLike, grid: tuple[int, ...] | None = None) -> str:
    """An inline SVG of the changed chunks of one array (empty string when none changed);
    ``grid``, the array's chunk grid shape, makes the map span the whole array."""
    g = _grid(n, grid)
    if g is None:
        return ""
    rows, cols, step_r, step_c, cells = g
    w, h = cols * CELL, rows * CELL
    rects = [f'<rect class="zl-cell-bg" x="0" y="0" width="{w}" height="{h}"/>']
    for (r, c), status in sorted(cells.items()):
        r0, c0 = r * step_r, c * step_c
        where = f"chunks [{r0}..{r0 + step_r - 1}, {c0}..{c0 + step_c - 1}]"
        if step_r == step_c == 1:
            where = f"chunk ({r0}, {c0})"
        rects.append(
            f'<rect class="zl-{status}" x="{c * CELL}" y="{r * CELL}" width="{CELL - 1}" '
            f'height="{CELL - 1}"><title>{esc(where)}: {status}</title></rect>'
        )
    note = _axes_note(n, step_r, step_c)
    caption = f'<div class="zl-muted">{esc(note)}</div>' if note else ""
    return (
        f'<svg class="zl-map" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" '
        f'aria-label="changed chunks of /{esc(n.path)}">{"".join(rects)}</svg>{caption}'
    )


def chunk_map_text(n: NodeDiffLike, grid: tuple[int, ...] | None = None) -> list[str]:
    """The same map in characters: ``+`` added, ``~`` changed, ``-`` removed, ``*`` mixed."""
    g = _grid(n, grid)
    if g is None:
        return []
    rows, cols, step_r, step_c, cells = g
    sym = {"added": "+", "changed": "~", "removed": "-", "mixed": "*"}
    lines = ["".join(sym.get(cells.get((r, c), ""), ".") for c in range(cols)) for r in range(rows)]
    note = _axes_note(n, step_r, step_c)
    return [*lines, f"({note})"] if note else lines


# -- the diff ----------------------------------------------------------------------------------


def _key_lines(d: DiffLike) -> Iterable[tuple[str, str]]:
    for status, keys in (
        ("added", d.keys_added),
        ("modified", d.keys_changed),
        ("removed", d.keys_removed),
    ):
        ordered = sorted(keys)
        for k in ordered[:MAX_KEYS]:
            yield status, k
        if len(ordered) > MAX_KEYS:
            yield status, f"... and {len(ordered) - MAX_KEYS} more"


def diff_text(d: DiffLike, *, maps: bool = False, grids: Grids | None = None) -> str:
    """A diff in plain text, one line per node (``maps`` adds each array's chunk map;
    ``grids``, path -> chunk grid shape, from :func:`chunk_grids`, sizes them)."""
    nodes = list(d.nodes)
    lines = [_title(d)]
    if not nodes and not (d.keys_added or d.keys_changed or d.keys_removed):
        lines.append("  no changes")
    for n in nodes[:MAX_NODES]:
        counts = _counts(n)
        lines.append(
            f"  {_SIGN.get(n.status, '?')} /{n.path} ({n.node_type})"
            + (f"  chunks {counts}" if counts else "")
        )
        lines += [f"      {c}" for c in _changes(n)]
        if maps:
            lines += [f"      {row}" for row in chunk_map_text(n, (grids or {}).get(n.path))]
    if len(nodes) > MAX_NODES:
        lines.append(f"  ... and {len(nodes) - MAX_NODES} more nodes")
    sign = {"added": "+", "modified": "~", "removed": "-"}
    lines += [f"  {sign[s]} key {k}" for s, k in _key_lines(d)]
    return "\n".join(lines)


def diff_html(d: DiffLike, *, grids: Grids | None = None) -> str:
    """HTML repr of a diff: a table of nodes, the changes of each, and chunk maps (sized by
    ``grids``, path -> chunk grid shape, from :func:`chunk_grids`, when given)."""
    nodes = list(d.nodes)
    shown = nodes[:MAX_NODES]
    rows = []
    for n in shown:
        changes = "<br>".join(esc(c) for c in _changes(n))
        rows.append(
            (
                f'<span class="zl-{esc(n.status)}">{esc(n.status)}</span>',
                f"<code>/{esc(n.path)}</code>",
                esc(n.node_type),
                changes,
                esc(_counts(n)),
            )
        )
    node_table = table(["status", "path", "type", "changes", "chunks"], rows, raw=True)
    if len(nodes) > len(shown):
        node_table += f'<div class="zl-muted">... and {len(nodes) - len(shown)} more nodes</div>'
    legend = (
        '<div class="zl-legend zl-muted"><span class="zl-added">&#9632; added</span>'
        '<span class="zl-changed">&#9632; changed</span>'
        '<span class="zl-removed">&#9632; removed</span>'
        '<span style="color:var(--zl-mix)">&#9632; mixed</span></div>'
    )
    mapped = [n for n in nodes if n.chunks_added or n.chunks_changed or n.chunks_removed]
    maps = "".join(
        f'<div style="margin:4px 0"><code>/{esc(n.path)}</code> '
        f'<span class="zl-muted">{esc(_counts(n))}</span><br>'
        f"{chunk_map_svg(n, (grids or {}).get(n.path))}</div>"
        for n in mapped[:MAP_MAPS]
    )
    if len(mapped) > MAP_MAPS:
        maps += f'<div class="zl-muted">... and {len(mapped) - MAP_MAPS} more arrays</div>'
    key_rows = [(s, f"<code>{esc(k)}</code>") for s, k in _key_lines(d)]
    n_keys = len(d.keys_added) + len(d.keys_changed) + len(d.keys_removed)
    sections = [
        section("Nodes", node_table if nodes else "", count=len(nodes)),
        section("Chunk maps", legend + maps if mapped else "", count=len(mapped)),
        section("Other keys", table(["status", "key"], key_rows, raw=True), count=n_keys),
    ]
    return wrap("diff", esc(_title(d)), sections, diff_text(d))


def chunk_grids(repo: Any, d: DiffLike) -> dict[str, tuple[int, ...]]:
    """The chunk grid shape of each array with changed chunks (at most the arrays that get a
    map), read with zarr at the diff's ``after`` commit (``before`` for removed arrays)."""
    import zarr

    out: dict[str, tuple[int, ...]] = {}
    changed = [n for n in d.nodes if n.chunks_added or n.chunks_changed or n.chunks_removed]
    for n in changed[:MAP_MAPS]:
        side = d.before if n.status == "removed" else d.after
        if not side or side == "staged":
            continue
        # Only a nicer map is at stake: an array that cannot be opened keeps the extent map.
        try:
            arr = zarr.open_array(repo.readonly_session(side).store, path=n.path, mode="r")
            out[n.path] = tuple(int(x) for x in arr.cdata_shape)
        except Exception:
            continue
    return out
