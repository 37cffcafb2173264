"""Reprs of a ``Diff``: its nodes, field changes, and a small chunk map per changed array."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from zarrlake.display._base import esc, fmt_value, section, table, wrap
from zarrlake.display.chunkmap import MAP_MAPS, Grid, chunk_map_svg, chunk_map_text

if TYPE_CHECKING:
    from zarrlake.display._protocols import DiffLike, NodeDiffLike

__all__ = ["chunk_grids", "diff_html", "diff_text"]

Grids = Mapping[str, Grid]  # path -> chunk grid shape, or ChunkAxes (grid, dims, coordinates)

MAX_NODES = 200  # nodes listed in a diff repr; the rest are counted
MAX_KEYS = 50  # non-Zarr keys listed per kind
_SIGN = {"added": "+", "removed": "-", "modified": "~"}


def _counts(n: NodeDiffLike) -> str:
    parts = [
        f"{sign}{len(s)}"
        for sign, s in (("+", n.chunks_added), ("~", n.chunks_changed), ("-", n.chunks_removed))
        if s
    ]
    if n.chunks_virtual:
        parts.append(f"({len(n.chunks_virtual)} virtual)")
    return " ".join(parts)


def _title(d: DiffLike) -> str:
    a, b = (d.before or "?")[:10], (d.after or "?")[:10]
    nodes = list(d.nodes)
    by = {s: sum(1 for n in nodes if n.status == s) for s in ("added", "removed", "modified")}
    ca = sum(len(n.chunks_added) for n in nodes)
    cc = sum(len(n.chunks_changed) for n in nodes)
    cr = sum(len(n.chunks_removed) for n in nodes)
    cv = sum(len(n.chunks_virtual) for n in nodes)
    return (
        f"Diff {a}..{b}: {by['added']} added, {by['removed']} removed, {by['modified']} modified;"
        f" chunks +{ca} ~{cc} -{cr}" + (f" ({cv} virtual)" if cv else "")
    )


def _changes(n: NodeDiffLike) -> list[str]:
    out = [f"{c.field}: {fmt_value(c.before)} -> {fmt_value(c.after)}" for c in n.metadata]
    out += [
        f"attributes[{c.field!r}]: {fmt_value(c.before)} -> {fmt_value(c.after)}"
        for c in n.attributes
    ]
    return out


def _virtual_legend(nodes: list[NodeDiffLike]) -> str:
    """The legend's entry for virtual references, with their count (none: no entry)."""
    n = sum(len(x.chunks_virtual) for x in nodes)
    if not n:
        return ""
    return f'<span class="zl-legend-virtual">&#9585; virtual reference ({n:,})</span>'


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
    ``grids``, from :func:`~zarrlake.display.chunk_axes`, labels them in coordinates)."""
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
    """HTML repr of a diff: a table of nodes, the changes of each, and chunk maps (labelled
    in coordinates by ``grids``, from :func:`~zarrlake.display.chunk_axes`, when given)."""
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
        '<span style="color:var(--zl-mix)">&#9632; mixed</span>' + _virtual_legend(nodes) + "</div>"
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
