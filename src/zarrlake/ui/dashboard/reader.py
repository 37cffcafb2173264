"""Reading arrays of a lake at a ref for the dashboard: listing, shape, dims, coordinates."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np
import zarr

from zarrlake import NotFoundError, Repo, Session

__all__ = ["ArrayInfo", "LakeReader", "coord_label"]

_CACHE = 16


@dataclass(frozen=True)
class ArrayInfo:
    """One array at one commit: its shape, chunk shape, dimension names and coordinates."""

    path: str
    shape: tuple[int, ...]
    chunks: tuple[int, ...]
    dtype: str
    dims: tuple[str, ...]
    coords: dict[str, np.ndarray]  # dim -> coordinate values, when the group has them
    units: str = ""  # the array's ``units`` attribute

    @property
    def grid(self) -> tuple[int, ...]:
        """The chunk grid's shape."""
        return tuple(-(-s // c) if c else 0 for s, c in zip(self.shape, self.chunks, strict=True))


def coord_label(values: np.ndarray, start: int, stop: int) -> str:
    """``first … last`` of ``values[start:stop]`` (dates without their time of day)."""
    part = values[start:stop]
    if len(part) == 0:
        return ""

    def fmt(v: Any) -> str:
        if isinstance(v, np.datetime64):
            return str(np.datetime_as_string(v, unit="D"))
        if isinstance(v, (float, np.floating)):
            return f"{float(v):.4g}"
        return str(v)

    a, b = fmt(part[0]), fmt(part[-1])
    return a if a == b else f"{a} … {b}"


class LakeReader:
    """Read-only sessions per commit (a few cached), and what the dashboard reads through them."""

    def __init__(self, repo: Repo) -> None:
        self.repo = repo
        self._sessions: OrderedDict[str, Session] = OrderedDict()

    def session(self, ref: str) -> Session:
        commit = self.repo.resolve(ref)
        s = self._sessions.pop(commit, None) or self.repo.readonly_session(commit=commit)
        self._sessions[commit] = s
        while len(self._sessions) > _CACHE:
            self._sessions.popitem(last=False)
        return s

    def arrays(self, ref: str) -> list[str]:
        """Paths of every array at ``ref``, sorted."""
        root = zarr.open_group(self.session(ref).store, mode="r")
        return sorted(p for p, _ in root.arrays()) + sorted(
            f"{g}/{p}" for g, grp in root.groups() for p, _ in _walk(grp)
        )

    def array(self, ref: str, path: str) -> Any:
        try:
            return zarr.open_array(self.session(ref).store, path=path, mode="r")
        except (FileNotFoundError, KeyError, zarr.errors.NodeTypeValidationError) as exc:
            raise NotFoundError(f"no array {path!r} at {ref!r}") from exc

    def info(self, ref: str, path: str) -> ArrayInfo:
        return self.info_in(self.session(ref).store, path, self.array(ref, path))

    @staticmethod
    def info_in(store: Any, path: str, arr: Any) -> ArrayInfo:
        """The info of ``arr`` at ``path`` in ``store`` (a commit's or a session's), with the
        coordinates beside it and its units."""
        dims = tuple(getattr(arr.metadata, "dimension_names", None) or ())
        if len(dims) != arr.ndim or not all(dims):
            dims = tuple(f"dim_{i}" for i in range(arr.ndim))
        dims = tuple(map(str, dims))
        coords = _coords(store, path, dims, arr.shape)
        units = arr.attrs.get("units")
        return ArrayInfo(
            path,
            tuple(arr.shape),
            tuple(arr.chunks),
            str(arr.dtype),
            dims,
            coords,
            units if isinstance(units, str) else "",
        )


def _coords(
    store: Any, path: str, dims: tuple[str, ...], shape: tuple[int, ...]
) -> dict[str, np.ndarray]:
    """1-D arrays named after the dims, next to the array (an xarray Dataset's coordinates),
    CF-decoded (times). Opened by path: listing a group would walk every chunk key of every
    array in it."""
    import xarray as xr

    group, _, name = path.rpartition("/")
    out: dict[str, np.ndarray] = {}
    for dim, n in zip(dims, shape, strict=True):
        if dim == name:
            continue
        try:
            c = zarr.open_array(store, path=f"{group}/{dim}" if group else dim, mode="r")
        except Exception:  # no coordinate array there: label the axis by index
            continue
        if c.ndim != 1 or c.shape[0] != n:
            continue
        values = np.asarray(c[:])
        try:
            ds = xr.decode_cf(xr.Dataset({dim: (dim, values, dict(c.attrs))}))
            out[dim] = np.asarray(ds[dim].values)
        except Exception:  # undecodable units: keep the raw values
            out[dim] = values
    return out


def _walk(group: zarr.Group) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = list(group.arrays())
    for g, sub in group.groups():
        out += [(f"{g}/{p}", a) for p, a in _walk(sub)]
    return out
