"""Importing an existing Zarr v3 store (local or S3) in one commit: its metadata documents as
they are, its chunks as virtual references to the existing chunk objects (``copy=False``) or
copied into the lake (``copy=True``). Nothing of the lake changes until that commit lands: a
failure (or a crash) leaves the lake exactly as it was."""

from __future__ import annotations

import json
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from zarrlake.errors import InvalidInputError, InvalidMetadataError, VirtualSourceError
from zarrlake.maintenance.progress import progress_bar
from zarrlake.model.metadata import NodeMeta, parse_chunk_key, parse_node_meta
from zarrlake.model.virtual import normalize_url

if TYPE_CHECKING:
    from zarrlake.repo import Repo

__all__ = ["import_zarr"]

_SUPPORTED_CODECS = frozenset(
    {"bytes", "blosc", "gzip", "zstd", "crc32c", "transpose", "sharding_indexed", "vlen-utf8",
     "vlen-bytes"}
)  # fmt: skip


def _check_codecs(path: str, doc: dict[str, Any]) -> None:
    """Refuse an array whose codecs zarr cannot decode here (the lake could not read it)."""
    pending = list(doc.get("codecs", []))
    while pending:
        codec = pending.pop()
        name = codec.get("name") if isinstance(codec, dict) else codec
        if name not in _SUPPORTED_CODECS:
            raise InvalidMetadataError(
                f"array {path or '/'!r} of the store uses codec {name!r}, which this zarrlake "
                f"cannot read (it reads {', '.join(sorted(_SUPPORTED_CODECS))}); nothing was "
                "imported"
            )
        if isinstance(codec, dict):
            config = codec.get("configuration", {}) or {}
            pending += list(config.get("codecs", [])) + list(config.get("index_codecs", []))


def import_zarr(
    repo: Repo,
    source: str,
    *,
    branch: str = "main",
    message: str | None = None,
    copy: bool = False,
    storage_options: dict[str, Any] | None = None,
    progress: bool | None = None,
) -> str:
    """Import the Zarr store at ``source`` (a local directory or ``s3://`` URL) into
    ``branch`` in one commit; return the commit id.

    With ``copy=False`` (the default) every chunk is a virtual reference to the store's own
    chunk object, so ``source`` must be under a prefix the repo allows
    (``repo.allow_virtual_source``); with ``copy=True`` the chunks are copied into the lake.
    Only Zarr v3 stores are imported; a Zarr v2 store (``.zarray``), an array with a codec
    this zarrlake cannot read, or anything else refused leaves the lake unchanged.
    """
    import fsspec

    url = normalize_url(source if "://" in source else source.rstrip("/") or "/")
    fs, root = fsspec.core.url_to_fs(url, **(storage_options or {}))
    root = root.rstrip("/")
    found = fs.find(root, detail=True)
    if not found:
        raise InvalidInputError(f"there is no Zarr store at {source!r} (no files found)")
    files = {str(p)[len(root) + 1 :]: int(info.get("size", 0)) for p, info in found.items()}
    if any(k.rsplit("/", 1)[-1] in (".zarray", ".zgroup") for k in files):
        raise InvalidMetadataError(
            f"{source!r} is a Zarr v2 store; this zarrlake imports Zarr v3 stores only (convert "
            "it with zarr's migration tools first). Nothing was imported"
        )
    metas: dict[str, NodeMeta] = {}
    docs: dict[str, bytes] = {}
    for key in sorted(k for k in files if k == "zarr.json" or k.endswith("/zarr.json")):
        path = key[: -len("zarr.json")].rstrip("/")
        raw = fs.cat_file(f"{root}/{key}")
        nm = parse_node_meta(raw)
        if nm.is_array:
            _check_codecs(path, json.loads(raw))
        metas[path], docs[path] = nm, raw
    if "" not in metas:
        raise InvalidInputError(f"{source!r} has no zarr.json at its root: not a Zarr v3 store")
    chunks: dict[str, list[tuple[tuple[int, ...], str, int]]] = defaultdict(list)
    for key, size in files.items():
        if key.endswith("zarr.json"):
            continue
        parent = key
        while True:
            cut = parent.rfind("/")
            parent = parent[:cut] if cut >= 0 else ""
            owner = metas.get(parent)
            if owner is not None and owner.is_array:
                rel = key[len(parent) + 1 :] if parent else key
                coords = parse_chunk_key(rel, owner.encoding, owner.ndim)
                if coords is not None:
                    chunks[parent].append((coords, key, size))
                break
            if cut < 0:
                break
    if not copy:
        prefixes = repo.virtual_sources()
        if not any(url.rstrip("/") + "/" == p or url.startswith(p) for p in prefixes):
            raise VirtualSourceError(
                f"importing {source!r} by reference needs its location allowed: call "
                f"repo.allow_virtual_source({url.rstrip('/') + '/'!r}) first (or import with "
                "copy=True). Nothing was imported",
                url=url,
            )
    session = repo.writable_session(branch)
    try:
        for path in sorted(docs):
            session.write_sync(f"{path}/zarr.json" if path else "zarr.json", docs[path])
        total = sum(len(v) for v in chunks.values())
        with progress_bar(progress, total, f"importing {source}") as bar:
            for path, items in sorted(chunks.items()):
                if copy:
                    with ThreadPoolExecutor(8) as pool:
                        list(
                            pool.map(
                                lambda item: session.write_sync(
                                    item[1], fs.cat_file(f"{root}/{item[1]}")
                                ),
                                items,
                            )
                        )
                else:
                    session.put_virtual_refs(
                        path,
                        [(c, f"{url.rstrip('/')}/{key}", 0, size) for c, key, size in items],
                    )
                bar.update(len(items))
        meta = {"imported_from": url, "copied": copy}
        return session.commit(message or f"Import {source}", metadata=meta)
    except BaseException:
        session.abandon()
        raise
