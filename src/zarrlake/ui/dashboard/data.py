# mypy: disallow-untyped-calls=False
"""Data page: any array at any ref as an image or a line, with a slider per other dim."""

from __future__ import annotations

from typing import Any

import hvplot.xarray  # type: ignore[import-untyped]  # noqa: F401 - registers .hvplot
import numpy as np
import panel as pn
import param
import xarray as xr
from panel.viewable import Viewer

from zarrlake.ui.dashboard.context import Context
from zarrlake.ui.dashboard.links import VersionLinks
from zarrlake.ui.dashboard.markup import error_alert, html, html_pane
from zarrlake.ui.dashboard.reader import ArrayInfo
from zarrlake.ui.dashboard.slices import (
    MAX_VALUES,
    dim_slider,
    format_slice,
    parse_slice,
    slider_text,
)

__all__ = ["DataView"]


class DataView(Viewer):
    """``ref`` + ``array`` + ``slice`` -> a plot of one 2-D (image) or 1-D (line) slice."""

    ref = param.String(default="main")
    array = param.String(default="", allow_None=True)
    kind = param.Selector(default="image", objects=["image", "line"])  # type: ignore[var-annotated]
    slice = param.String(default="")

    url_params = {"ref": "ref", "array": "var", "kind": "kind", "slice": "at"}

    def __init__(self, ctx: Context, **params: Any) -> None:
        super().__init__(**params)
        self.ctx = ctx
        self.info: ArrayInfo | None = None
        self.w_ref = pn.widgets.AutocompleteInput(
            label="Ref", options=ctx.refs(), restrict=False, width=200, min_characters=0
        )
        self.w_array = pn.widgets.Select(label="Array", options=[], width=200)
        self.w_kind = pn.widgets.RadioButtonGroup(options=["image", "line"])
        for w, p in ((self.w_ref, "ref"), (self.w_array, "array"), (self.w_kind, "kind")):
            w.value = getattr(self, p)
            w.link(self, value=p, bidirectional=True)
        self.sliders = pn.Row()
        self.plot = pn.pane.HoloViews(sizing_mode="stretch_width", css_classes=["zl-data-plot"])
        self.message = pn.Column()
        self.caption = html_pane("", css_classes=["zl-data-caption"])
        self.links = VersionLinks(ctx)
        self._on_ref()

    @param.depends("ref", watch=True)
    def _on_ref(self) -> None:
        try:
            arrays = self.ctx.reader.arrays(self.ref)
        except Exception as exc:
            self.message.objects = [error_alert(exc)]
            self.plot.object, self.caption.object = None, ""
            return
        self.message.objects = []
        big = [a for a in arrays if self._ndim(a) >= 2]
        self.w_array.options = arrays
        if self.array not in arrays:
            self.array = (big or arrays or [""])[0]
        else:
            self._on_array()

    def _ndim(self, path: str) -> int:
        try:
            return int(self.ctx.reader.array(self.ref, path).ndim)
        except Exception:
            return 0

    @param.depends("array", watch=True)
    def _on_array(self) -> None:
        self.links.point(self.ref, self.array)
        if not self.array:
            return
        try:
            self.info = self.ctx.reader.info(self.ref, self.array)
        except Exception as exc:
            self.message.objects = [error_alert(exc)]
            return
        fixed = parse_slice(self.slice) if self.slice else {}
        shown = self._shown_axes()
        sliders = []
        for a, (dim, n) in enumerate(zip(self.info.dims, self.info.shape, strict=True)):
            if a in shown or n <= 1:
                continue
            s = dim_slider(self.info, dim, fixed.get(dim, 0))
            s.param.watch(self._on_slider, "value_throttled")
            sliders.append(s)
        self.sliders.objects = sliders
        self._draw()

    def _shown_axes(self) -> tuple[int, ...]:
        assert self.info is not None
        n = len(self.info.dims)
        k = 2 if self.kind == "image" and n >= 2 else 1
        return tuple(range(n - k, n))

    def _on_slider(self, _: Any) -> None:
        self.slice = format_slice({s.label: int(s.value) for s in self.sliders.objects})

    @param.depends("kind", watch=True)
    def _on_kind(self) -> None:
        self._on_array()

    @param.depends("slice", watch=True)
    def _draw(self) -> None:
        if self.info is None:
            return
        try:
            self.plot.object = self.figure()
            self.message.objects = []
        except Exception as exc:
            self.message.objects = [error_alert(exc)]

    def data_slice(self) -> xr.DataArray:
        """The slice shown, as a labelled DataArray (only its chunks are read)."""
        assert self.info is not None
        info, fixed = self.info, parse_slice(self.slice)
        shown = self._shown_axes()
        sel: list[Any] = []
        dims, coords = [], {}
        for a, (dim, n) in enumerate(zip(info.dims, info.shape, strict=True)):
            if a in shown:
                sel.append(slice(0, min(n, MAX_VALUES * 4)))
                dims.append(dim)
                if dim in info.coords:
                    coords[dim] = info.coords[dim][: min(n, MAX_VALUES * 4)]
            else:
                sel.append(int(min(max(fixed.get(dim, 0), 0), n - 1)))
        values = np.asarray(self.ctx.reader.array(self.ref, self.array or "")[tuple(sel)])
        return xr.DataArray(values, dims=dims, coords=coords, name=info.path.rsplit("/", 1)[-1])

    def figure(self) -> Any:
        da = self.data_slice()
        assert self.info is not None
        at = ", ".join(slider_text(self.info, s.label, int(s.value)) for s in self.sliders.objects)
        self.caption.object = html(
            "<p><code>{}</code> at <code>{}</code>{}</p>",
            self.array,
            self.ref,
            f", {at}" if at else "",
        )
        if da.ndim == 2:
            return da.hvplot.image(
                x=da.dims[1], y=da.dims[0], cmap="viridis", responsive=True, height=460
            )
        if da.ndim == 1:
            return da.hvplot.line(responsive=True, height=360)
        return da.expand_dims("i").hvplot.scatter(responsive=True, height=200)

    def __panel__(self) -> pn.viewable.Viewable:
        return pn.Column(
            "## Data",
            pn.Row(self.w_ref, self.w_array, pn.Column("plot as", self.w_kind)),
            self.sliders,
            self.message,
            self.caption,
            self.plot,
            self.links,
            sizing_mode="stretch_width",
        )
