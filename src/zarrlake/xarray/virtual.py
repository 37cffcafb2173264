"""Committing a VirtualiZarr dataset: its ``ManifestArray`` variables become arrays whose
chunks are virtual references (the bytes stay in the archive files), its loaded variables
(coordinates, usually) ordinary chunks.

    vds = virtualizarr.open_virtual_dataset(url, registry=registry, parser=HDFParser())
    vds.lake.commit("add 2024", repo=repo, group="g")
    vds2.lake.commit("one more day", repo=repo, group="g", append_dim="time")

VirtualiZarr is not imported here: a virtual variable is recognized by what it has (a
``manifest`` whose ``dict()`` lists the chunks, and the Zarr v3 ``metadata`` of the array).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Iterator, Mapping
from typing import Any

import numpy as np
import xarray as xr
import zarr
from zarr.core.buffer import default_buffer_prototype

from zarrlake.errors import InvalidInputError, UnalignedWriteError
from zarrlake.session import WritableSession
from zarrlake.xarray.provenance import WriteMode

__all__ = ["is_virtual", "write_virtual"]

_INLINED = "__inlined__"  # VirtualiZarr's path of a chunk whose bytes it holds in memory


def is_virtual(var: xr.Variable) -> bool:
    """Whether a variable is backed by a VirtualiZarr ``ManifestArray``."""
    data = var.data
    return (
        hasattr(data, "manifest") and hasattr(data, "metadata") and hasattr(data.manifest, "dict")
    )


def _attr(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    if isinstance(value, list | tuple):
        return [_attr(v) for v in value]
    return value


def _attrs(attrs: Mapping[Hashable, Any]) -> dict[str, Any]:
    return {str(k): _attr(v) for k, v in attrs.items()}


def _meta_doc(var: xr.Variable) -> bytes:
    """The zarr.json of a virtual variable: the array's own metadata (codecs as in the
    archive), with xarray's dimension names and the variable's attributes."""
    md = dataclasses.replace(
        var.data.metadata,
        dimension_names=tuple(str(d) for d in var.dims),
        attributes=_attrs(var.attrs),
    )
    return bytes(md.to_buffer_dict(default_buffer_prototype())["zarr.json"].to_bytes())


def _appended(arr: zarr.Array[Any], var: xr.Variable, axis: int, name: str) -> int:
    """Grow ``arr`` along ``axis`` for ``var``'s chunks; the chunk index they start at."""
    md = var.data.metadata
    if tuple(arr.chunks) != tuple(md.chunks) or arr.ndim != len(md.shape):
        raise InvalidInputError(
            f"cannot append to {name!r}: its chunks are {arr.chunks}, the new references' "
            f"{tuple(md.chunks)}"
        )
    if str(arr.dtype) != str(md.data_type.to_native_dtype()):
        raise InvalidInputError(
            f"cannot append to {name!r}: its dtype is {arr.dtype}, the new references' "
            f"{md.data_type.to_native_dtype()}"
        )
    if arr.shape[axis] % arr.chunks[axis]:
        raise UnalignedWriteError(
            f"cannot append virtual chunks to {name!r}: its length {arr.shape[axis]} along "
            f"axis {axis} is not a whole number of chunks of {arr.chunks[axis]}"
        )
    start = arr.shape[axis] // arr.chunks[axis]
    shape = list(arr.shape)
    shape[axis] += md.shape[axis]
    arr.resize(tuple(shape))
    return start


def _entries(manifest: Any) -> Iterator[tuple[tuple[int, ...], Mapping[str, Any]]]:
    """(chunk grid indices, entry) of every chunk of a manifest: through ``iter_refs``
    where VirtualiZarr has it (no chunk key written and parsed again per chunk), with an
    inlined chunk's bytes from ``dict()``; else from ``dict()``."""
    iter_refs = getattr(manifest, "iter_refs", None)
    if iter_refs is None:
        for key, entry in manifest.dict().items():
            yield tuple(int(i) for i in str(key).split(".")), entry
        return
    inlined: dict[str, Any] | None = None
    for idx, entry in iter_refs():
        if entry["path"] == _INLINED:
            if inlined is None:
                inlined = manifest.dict()
            entry = inlined[".".join(map(str, idx))]
        yield idx, entry


Columns = tuple[np.ndarray, list[str], np.ndarray, np.ndarray]


def _columns(manifest: Any) -> tuple[Columns | None, bool]:
    """(the references of a VirtualiZarr ``ChunkManifest`` as columns (coordinates, URLs,
    offsets, lengths), read from the arrays it keeps them in without an object per chunk,
    or ``None`` if it keeps them otherwise; whether it holds chunks in memory)."""
    paths = getattr(manifest, "_paths", None)
    offsets = getattr(manifest, "_offsets", None)
    lengths = getattr(manifest, "_lengths", None)
    if not (
        isinstance(paths, np.ndarray)
        and isinstance(offsets, np.ndarray)
        and isinstance(lengths, np.ndarray)
        and paths.shape == offsets.shape == lengths.shape
    ):
        return None, True
    inlined = paths == _INLINED
    mask = (paths != "") & ~inlined
    coords = np.stack(np.nonzero(mask), 1) if paths.ndim else np.zeros((int(mask), 0))
    columns = (
        coords.astype(np.int64),
        [str(u) for u in paths[mask].tolist()],
        offsets[mask].astype(np.int64),
        lengths[mask].astype(np.int64),
    )
    return columns, bool(inlined.any())


def _stage_refs(session: WritableSession, path: str, var: xr.Variable, offsets: list[int]) -> None:
    """Stage the references of virtual variable ``var`` as the array at ``path``, its chunk
    indices moved by ``offsets``; chunks VirtualiZarr holds in memory are written as such."""
    manifest = var.data.manifest
    columns, inlined = _columns(manifest)
    refs: list[tuple[tuple[int, ...], str, int, int]] = []
    for idx, entry in _entries(manifest) if inlined else ():
        if columns is not None and entry["path"] != _INLINED:
            continue  # in the columns
        idx = tuple(i + o for i, o in zip(idx, offsets, strict=True))
        if entry["path"] == _INLINED:
            chunk_key = var.data.metadata.chunk_key_encoding.encode_chunk_key(idx)
            session.write_sync(f"{path}/{chunk_key}", entry["data"])
            continue
        refs.append((idx, str(entry["path"]), int(entry["offset"]), int(entry["length"])))
    if columns is None:
        session.put_virtual_refs(path, refs)
        return
    coords, urls, starts, lengths = columns
    session.put_virtual_columns(path, coords + np.array(offsets, np.int64), urls, starts, lengths)


def write_virtual(
    ds: xr.Dataset,
    session: WritableSession,
    group: str | None,
    mode: WriteMode,
    append_dim: Hashable | None,
) -> None:
    """Stage ``ds`` (some of whose variables are virtual) into ``group`` of ``session``."""
    if mode not in ("w", "w-", "a"):
        raise InvalidInputError(
            f"a virtual dataset is written with mode 'w-', 'w' or 'a', not {mode!r}"
        )
    virtual = {str(n): v for n, v in ds.variables.items() if is_virtual(v)}
    loadable = ds.drop_vars(list(virtual))
    store = session.store
    loaded_append = append_dim if append_dim in loadable.dims else None
    loaded_mode: WriteMode = "a" if loaded_append is not None else mode
    loadable.to_zarr(
        store,
        mode=loaded_mode,
        group=group,
        append_dim=loaded_append,
        consolidated=False,
        zarr_format=3,
    )
    g = zarr.open_group(store, path=group or "", mode="a", zarr_format=3)
    prefix = f"{group}/" if group else ""
    for name, var in virtual.items():
        offsets = [0] * var.ndim
        existing = g.get(name)
        if append_dim is not None and append_dim in var.dims and isinstance(existing, zarr.Array):
            axis = var.dims.index(append_dim)
            offsets[axis] = _appended(existing, var, axis, name)
        else:
            session.write_sync(f"{prefix}{name}/zarr.json", _meta_doc(var))
        _stage_refs(session, f"{prefix}{name}", var, offsets)
    attrs = _attrs(ds.attrs)
    coords = [str(c) for c in ds.coords if str(c) in virtual]
    if coords:
        known = g.attrs.get("coordinates", "")
        attrs["coordinates"] = " ".join(dict.fromkeys([*str(known).split(), *coords]))
    if attrs:
        g.update_attributes(attrs)
