# mypy: disallow-untyped-calls=False
"""Compare page: two refs (or a branch and a session's staged work), node by node, field by
field, and for one array the chunk map beside the values of both sides and their difference for one slice."""

from __future__ import annotations

from typing import Any

import holoviews as hv  # type: ignore[import-untyped]
import numpy as np
import pandas as pd  # type: ignore[import-untyped, unused-ignore]
import panel as pn
import param
from panel.viewable import Viewer

from zarrlake import Diff, DiffSummary, NodeDiff
from zarrlake.model.diff import ABSENT
from zarrlake.ui.dashboard.chunkmap import ChunkMap, chunk_map
from zarrlake.ui.dashboard.chunkplot import (
    VIRTUAL_OUTLINE,
    VIRTUAL_WORDS,
    chunkmap_plot,
    chunkmap_state_html,
)
from zarrlake.ui.dashboard.common import short
from zarrlake.ui.dashboard.context import Context
from zarrlake.ui.dashboard.markup import error_alert, html, html_pane
from zarrlake.ui.dashboard.reader import ArrayInfo, LakeReader
from zarrlake.ui.dashboard.slices import (
    dim_slider,
    format_slice,
    parse_slice,
    read_slice,
    selection,
)
from zarrlake.ui.dashboard.words import field_sentence, plural, value_text

__all__ = ["SESSION_PREFIX", "CompareView"]

SESSION_PREFIX = "session:"
LEGEND = (
    '<span style="color:#2ca02c">■ added</span> &nbsp; '
    '<span style="color:#ff7f0e">■ changed</span> &nbsp; '
    '<span style="color:#d62728">■ removed</span> &nbsp; '
    '<span style="color:#999">■ unchanged</span> &nbsp; '
    '<span class="zl-legend-virtual"><span style="display:inline-block;width:0.9em;'
    f"height:0.9em;border:3px solid {VIRTUAL_OUTLINE};background:#d9d9d9;"
    'vertical-align:middle;box-sizing:border-box"></span> '
    f"{VIRTUAL_WORDS}</span>"
)


def _v(x: Any, field: str) -> str:
    return "—" if x is ABSENT else value_text(x, field)  # a field missing on one side


def _said(s: DiffSummary) -> str:
    """``3 nodes modified; 24 chunks: +0 ~24 -0`` (or ``no change``)."""
    nodes = [
        (k, verb)
        for k, verb in (
            (s.nodes_added, "added"),
            (s.nodes_removed, "removed"),
            (s.nodes_modified, "modified"),
        )
        if k
    ]
    words = [
        f"{plural(k, 'node')} {verb}" if i == 0 else f"{k:,} {verb}"
        for i, (k, verb) in enumerate(nodes)
    ]
    chunks = s.chunks_added + s.chunks_changed + s.chunks_removed
    if chunks:
        words.append(
            f"{plural(chunks, 'chunk')}: +{s.chunks_added} ~{s.chunks_changed} -{s.chunks_removed}"
        )
    return "; ".join(words) if words else "no change"


class CompareView(Viewer):
    """``a`` -> ``b``: ``b`` may be ``session:<id>`` (its staged changes against its base)."""

    a = param.String(default="main~1")
    b = param.String(default="main")
    array = param.String(default="", allow_None=True, doc="array path for the chunk map")
    slice = param.String(default="", doc="element index of the axes not shown: dim=i,...")
    rows = param.String(default="", allow_None=True, doc="dim shown as rows")
    cols = param.String(default="", allow_None=True, doc="dim shown as columns")

    url_params = {"a": "a", "b": "b", "array": "array", "slice": "slice"}

    def __init__(self, ctx: Context, **params: Any) -> None:
        super().__init__(**params)
        self.ctx = ctx
        self.diff: Diff | None = None
        self.info: ArrayInfo | None = None
        self.map: ChunkMap | None = None
        refs = ctx.refs()
        sessions = [f"{SESSION_PREFIX}{s.id}" for s in ctx.repo.sessions()]
        self.w_a = pn.widgets.AutocompleteInput(
            label="A (before)", options=refs, restrict=False, width=220, min_characters=0
        )
        self.w_b = pn.widgets.AutocompleteInput(
            label="B (after, or session:<id>)",
            options=refs + sessions,
            restrict=False,
            width=300,
            min_characters=0,
        )
        self.w_array = pn.widgets.Select(label="Array", options=[], width=200)
        self.w_rows = pn.widgets.Select(label="Rows", options=[], width=110)
        self.w_cols = pn.widgets.Select(label="Columns", options=[], width=110)
        for w, p in (
            (self.w_a, "a"),
            (self.w_b, "b"),
            (self.w_array, "array"),
            (self.w_rows, "rows"),
            (self.w_cols, "cols"),
        ):
            w.value = getattr(self, p)
            w.link(self, value=p, bidirectional=True)
        self.sliders = pn.Row()
        self.message = pn.Column()
        self.summary = html_pane("", css_classes=["zl-diff-summary"])
        self.nodes = pn.widgets.Tabulator(
            pd.DataFrame(),
            disabled=True,
            selectable=1,
            show_index=False,
            sizing_mode="stretch_width",
            css_classes=["zl-diff-nodes"],
        )
        self.fields = pn.widgets.Tabulator(
            pd.DataFrame(),
            disabled=True,
            show_index=False,
            sizing_mode="stretch_width",
            css_classes=["zl-diff-fields"],
        )
        self.map_plot = pn.pane.HoloViews(sizing_mode="stretch_width", min_height=300)
        self.map_state = pn.pane.HTML("", css_classes=["zl-chunkmap"], sizing_mode="stretch_width")
        self.values = pn.pane.HoloViews(sizing_mode="stretch_width", css_classes=["zl-values"])
        self.values_msg = pn.Column()
        self.nodes.param.watch(self._on_node, "selection")
        self.param.watch(self._on_axes, ["rows", "cols"])
        self._compute()

    # -- the diff ------------------------------------------------------------------------------

    def _sides(self) -> tuple[str, Any, Any]:
        """(label, A reader, B reader): a reader maps an array path to a zarr array or None."""
        if self.b.startswith(SESSION_PREFIX):
            s = self.ctx.repo.session(self.b[len(SESSION_PREFIX) :])
            base = s.status().before or ""
            return base, self._opener(base), self._opener(None, session=s)
        return self.a, self._opener(self.a), self._opener(self.b)

    def _opener(self, ref: str | None, session: Any = None) -> Any:
        def open_(path: str) -> Any:
            import zarr

            try:
                if session is not None:
                    return zarr.open_array(session.store, path=path, mode="r")
                return self.ctx.reader.array(ref or "", path)
            except Exception:
                return None

        return open_

    def compute_diff(self) -> Diff:
        if self.b.startswith(SESSION_PREFIX):
            return self.ctx.repo.session(self.b[len(SESSION_PREFIX) :]).status()
        return self.ctx.repo.diff(self.a, self.b)

    @param.depends("a", "b", watch=True)
    def _compute(self) -> None:
        try:
            self.diff = self.compute_diff()
        except Exception as exc:
            self.diff = None
            self.message.objects = [error_alert(exc)]
            self.summary.object = ""
            self.nodes.value = pd.DataFrame()
            self.fields.value = pd.DataFrame()
            self.map_plot.object, self.map_state.object, self.values.object = None, "", None
            return
        self.message.objects = []
        d = self.diff
        if self.b.startswith(SESSION_PREFIX) and d.before and self.a != d.before:
            # a session is compared with its base, whatever A said: A shows that commit
            with param.parameterized.discard_events(self):
                self.a = d.before
            self.w_a.value = d.before
        s = d.summary()
        n_virtual = sum(len(n.chunks_virtual) for n in d)
        said = _said(s) + (f" ({plural(n_virtual, VIRTUAL_WORDS)})" if n_virtual else "")
        self.summary.object = html(
            "<p><b>{} → {}</b>: {}</p>", short(d.before), short(d.after) or "staged", said
        )
        self.nodes.value = pd.DataFrame(
            [
                {
                    "path": "/" + n.path,
                    "status": n.status,
                    "type": n.node_type,
                    "metadata": "; ".join(field_sentence(f) for f in n.metadata),
                    "attributes": ", ".join(c.field for c in n.attributes),
                    "chunks +": len(n.chunks_added),
                    "chunks ~": len(n.chunks_changed),
                    "chunks -": len(n.chunks_removed),
                    VIRTUAL_WORDS + "s": len(n.chunks_virtual),
                }
                for n in d
            ]
        )
        self.fields.value = pd.DataFrame(
            [
                {
                    "path": "/" + n.path,
                    "kind": kind,
                    "field": f.field,
                    "before": _v(f.before, f.field),
                    "after": _v(f.after, f.field),
                }
                for n in d
                for kind, fs in (("metadata", n.metadata), ("attribute", n.attributes))
                for f in fs
            ],
            columns=["path", "kind", "field", "before", "after"],
        )
        arrays = [n.path for n in d if n.node_type == "array"]
        new = self.array if self.array in arrays else None
        if new is None:
            new = next((p for p in arrays if d[p].n_chunks), arrays[0] if arrays else "")
        with param.parameterized.discard_events(self):
            if new != self.array:
                self.slice = ""  # another array: open on its first change
            self.array = new
        # Options first, then the value: a Select whose value left its options picks the
        # first option, which would redraw with the old slice.
        self.w_array.options = arrays
        self.w_array.value = new or None
        self._on_array()

    # -- one array -----------------------------------------------------------------------------

    def node(self) -> NodeDiff | None:
        return (
            self.diff[self.array]
            if self.diff is not None and self.array and self.array in self.diff
            else None
        )

    @param.depends("array", watch=True)
    def _on_array(self) -> None:
        self.info = None
        if not self.array or self.diff is None:
            self.map_plot.object, self.map_state.object, self.values.object = None, "", None
            return
        try:
            _, open_a, open_b = self._sides()
            arr = open_b(self.array) or open_a(self.array)
            if arr is None:
                raise FileNotFoundError(self.array)
            in_b = open_b(self.array) is not None
            if self.b.startswith(SESSION_PREFIX):
                session = self.ctx.repo.session(self.b[len(SESSION_PREFIX) :])
                self.info = (
                    LakeReader.info_in(session.store, self.array, arr)
                    if in_b
                    else self.ctx.reader.info(session.status().before or "", self.array)
                )
            else:
                self.info = self.ctx.reader.info(self.b if in_b else self.a, self.array)
        except Exception as exc:
            self.map_state.object = ""
            self.message.objects = [error_alert(exc)]
            return
        dims = list(self.info.dims)
        self.w_rows.options = dims
        self.w_cols.options = dims
        with param.parameterized.discard_events(self):
            if self.rows not in dims or self.cols not in dims or self.rows == self.cols:
                self.rows = dims[-2] if len(dims) >= 2 else ""
                self.cols = dims[-1] if dims else ""
        self.w_rows.value, self.w_cols.value = self.rows, self.cols
        if not self.slice:
            with param.parameterized.discard_events(self):
                self.slice = self._first_change()
        self._build_sliders()
        self._redraw()

    def _first_change(self) -> str:
        """A slice through the first changed chunk, so the map opens on something."""
        assert self.info is not None
        n = self.node()
        marked = sorted(n.chunks_changed | n.chunks_added | n.chunks_removed) if n else []
        if not marked:
            return ""
        r, c = self.axes()
        return format_slice(
            {
                d: marked[0][a] * self.info.chunks[a]
                for a, d in enumerate(self.info.dims)
                if a not in (r, c)
            }
        )

    def axes(self) -> tuple[int | None, int | None]:
        assert self.info is not None
        dims = list(self.info.dims)
        r = dims.index(self.rows) if self.rows in dims else None
        c = dims.index(self.cols) if self.cols in dims else None
        return r, c

    def _build_sliders(self) -> None:
        assert self.info is not None
        fixed = parse_slice(self.slice) if self.slice else {}
        r, c = self.axes()
        sliders = []
        for a, (dim, n) in enumerate(zip(self.info.dims, self.info.shape, strict=True)):
            if a in (r, c) or n <= 1:
                continue
            s = dim_slider(self.info, dim, fixed.get(dim, 0))
            s.param.watch(self._on_slider, "value_throttled")
            sliders.append(s)
        self.sliders.objects = sliders

    def _on_slider(self, _: Any) -> None:
        self.slice = format_slice({s.label: int(s.value) for s in self.sliders.objects})

    def _on_axes(self, *events: param.parameterized.Event) -> None:
        """Rows or columns changed: a slider for each dim no longer shown, none for the
        ones shown (picking the other axis's dim swaps the two)."""
        if self.info is None:
            return
        for e in events:
            other = "cols" if e.name == "rows" else "rows"
            if e.new == getattr(self, other) and e.old in self.info.dims:
                with param.parameterized.discard_events(self):
                    setattr(self, other, e.old)
                getattr(self, f"w_{other}").value = e.old
        self._build_sliders()
        with param.parameterized.discard_events(self):
            self.slice = format_slice({s.label: int(s.value) for s in self.sliders.objects})
        self._redraw()

    def _on_node(self, event: param.parameterized.Event) -> None:
        """A row of the node table picked: its array's chunk map."""
        if not event.new or self.diff is None:
            return
        nodes = list(self.diff)
        i = event.new[0]
        if i < len(nodes) and nodes[i].node_type == "array" and nodes[i].path != self.array:
            with param.parameterized.discard_events(self):
                self.slice = ""  # open on the array's first change
            self.array = nodes[i].path

    @param.depends("slice", watch=True)
    def _redraw(self) -> None:
        if self.info is None:
            return
        try:
            fixed = parse_slice(self.slice)
            r, c = self.axes()
            chunk_fixed = {
                a: fixed.get(d, 0) // max(self.info.chunks[a], 1)
                for a, d in enumerate(self.info.dims)
                if a not in (r, c)
            }
            self.map = chunk_map(self.node(), self.info.grid, r, c, chunk_fixed)
            self.map_plot.object = chunkmap_plot(self.map, self.info)
            self.map_state.object = chunkmap_state_html(self.map, self.info)
            self._values(r, c, fixed)
        except Exception as exc:
            self.message.objects = [error_alert(exc)]

    def side_titles(self) -> tuple[str, str]:
        """The value plots' titles: each side's ref and short commit id."""
        d = self.diff
        a = f"{self.a} ({short(d.before)})" if d is not None and d.before else self.a
        if self.b.startswith(SESSION_PREFIX):
            base = f"its base ({short(d.before)})" if d is not None else "its base"
            return base, f"session {self.b[len(SESSION_PREFIX) :][:12]} (staged)"
        b = f"{self.b} ({short(d.after)})" if d is not None and d.after else self.b
        return a, b

    def _axis(self, axis: int | None, n: int) -> tuple[np.ndarray, str]:
        """Positions and label of a value plot's axis: coordinates when the array has them."""
        assert self.info is not None
        if axis is None:
            return np.arange(n, dtype=float), ""
        dim = self.info.dims[axis]
        values = self.info.coords.get(dim)
        if values is not None and values.dtype.kind in "iuf" and len(values) >= n:
            return np.asarray(values[:n], dtype=float), dim
        return np.arange(n, dtype=float), f"{dim} (index)"

    def _values(self, r: int | None, c: int | None, fixed: dict[str, int]) -> None:
        assert self.info is not None
        _, open_a, open_b = self._sides()
        sel = selection(self.info, r, c, fixed)
        title_a, title_b = self.side_titles()
        data: dict[str, np.ndarray] = {}
        for label, opener in ((title_a, open_a), (title_b, open_b)):
            arr = opener(self.array)
            if arr is not None and tuple(arr.shape) == self.info.shape:
                data[label] = read_slice(arr, sel).astype(float)
        if len(data) == 2:
            data[f"{self.a} - {self.b}"] = data[title_a] - data[title_b]
        units = f" ({self.info.units})" if self.info.units else ""
        imgs = []
        for i, (label, v) in enumerate(data.items()):
            ys, ylabel = self._axis(r, v.shape[0])
            xs, xlabel = self._axis(c, v.shape[1])
            diff = i == 2
            lim = float(np.nanmax(np.abs(v))) if diff and v.size else None
            value = self.array.rsplit("/", 1)[-1] if self.array else "value"
            imgs.append(
                hv.QuadMesh((xs, ys, v), ["x", "y"], [f"v{i}"]).opts(
                    cmap="RdBu_r" if diff else "viridis",
                    colorbar=True,
                    clabel=("difference" if diff else value) + units,
                    responsive=True,
                    height=230,
                    title=label,
                    clim=(-lim, lim) if lim else (None, None),
                    tools=["hover"],
                    hover_tooltips=[("column", "@x"), ("row", "@y"), ("value", f"@v{i}")],
                    xlabel=xlabel,
                    ylabel=ylabel,
                )
            )
        self.values.object = hv.Layout(imgs).cols(2) if imgs else None

    def __panel__(self) -> pn.viewable.Viewable:
        return pn.Column(
            "## Compare",
            pn.Row(self.w_a, self.w_b),
            self.message,
            self.summary,
            pn.Tabs(("Nodes", self.nodes), ("Fields", self.fields), sizing_mode="stretch_width"),
            "### Chunk map",
            pn.Row(self.w_array, self.w_rows, self.w_cols, self.sliders),
            pn.pane.HTML(LEGEND, css_classes=["zl-chunkmap-legend"]),
            self.map_state,
            pn.Row(
                pn.Column("#### Chunks", self.map_plot, sizing_mode="stretch_width"),
                pn.Column(
                    "#### Values of this slice: A, B and their difference",
                    self.values,
                    sizing_mode="stretch_width",
                ),
                sizing_mode="stretch_width",
            ),
            sizing_mode="stretch_width",
        )
