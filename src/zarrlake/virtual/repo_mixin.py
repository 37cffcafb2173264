"""The :class:`~zarrlake.Repo` methods about virtual chunk references."""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from zarrlake.core import RepoCore
from zarrlake.errors import EmptyCommitError, InvalidInputError
from zarrlake.model import ChunkRef, iter_manifest
from zarrlake.model.metadata import format_chunk_key
from zarrlake.model.virtual import normalize_prefix
from zarrlake.objects.sources import split_secrets
from zarrlake.types import default_author, validate_text

if TYPE_CHECKING:
    from zarrlake.session import WritableSession
    from zarrlake.virtual.icechunk_import import IcechunkImport

__all__ = ["VirtualSourcesMixin", "allow_sources", "virtual_chunks"]


def allow_sources(core: RepoCore, sources: dict[str, dict[str, Any]]) -> None:
    """Record allowed prefixes with their non-secret options; secret ones stay in this
    process (give them again with ``source_options=`` when opening the repo elsewhere)."""
    for prefix, options in sources.items():
        if not isinstance(options, dict):
            raise InvalidInputError(f"options of virtual source {prefix!r} must be a dict")
        norm = normalize_prefix(prefix)
        public, secret = split_secrets(options)
        try:
            json.dumps(public)
        except (TypeError, ValueError) as exc:
            raise InvalidInputError(
                f"options of virtual source {prefix!r} must be JSON values "
                f"(strings, numbers, booleans, lists, dicts): {exc}"
            ) from None
        core.catalog.sources.allow(norm, public)
        core.sources.add_secrets(norm, secret)


def virtual_chunks(core: RepoCore, commit: str) -> Iterator[tuple[str, str, ChunkRef]]:
    """(array path, store key, ref) of every virtual chunk of a commit."""
    reader = core.reader
    root = reader.root(core.catalog.commits.get(commit).root_hash)
    for path, node in sorted(root.nodes.items()):
        if node.manifest is None:
            continue
        nm = reader.node_meta(node.meta)
        prefix = f"{path}/" if path else ""
        for coords, ref in iter_manifest(reader.index(node.manifest), reader):
            if ref.source is not None:
                yield path, prefix + format_chunk_key(coords, nm.encoding), ref


class VirtualSourcesMixin:
    """Where virtual references may point, and copying their chunks into the lake."""

    _core: RepoCore

    if TYPE_CHECKING:

        def writable_session(
            self, branch: str = "main", *, author: str | None = None
        ) -> WritableSession: ...

    def allow_virtual_source(self, prefix: str, **options: Any) -> None:
        """Allow virtual chunk references under ``prefix`` (``s3://bucket/archive/``,
        ``https://host/data/``, ``file:///abs/dir/`` or ``/abs/dir``), read with ``options``
        (for S3: s3fs's, e.g. ``endpoint_url``, ``anon``, ``key``/``secret``). Options that
        are not secrets are recorded in the catalog for every client; credentials (keys,
        secrets, tokens, passwords, headers) never are: they serve this process, and other
        processes give them with ``Repo.open(..., source_options={prefix: {...}})``. Allowing
        a prefix again replaces its recorded options."""
        allow_sources(self._core, {prefix: options})

    def virtual_sources(self) -> dict[str, dict[str, Any]]:
        """Allowed prefix -> its recorded (non-secret) options."""
        return self._core.sources.prefixes(refresh=True)

    def materialize(
        self,
        branch: str = "main",
        *,
        message: str = "Materialize virtual chunks",
        author: str | None = None,
        workers: int = 16,
    ) -> str:
        """Copy every virtual chunk of ``branch``'s head into the lake, in one commit (the
        chunks become ordinary, content-addressed chunks; the references' sources can then be
        retired). Each source is read through the usual checks: a changed source fails the
        materialization and commits nothing. Returns the new commit's id."""
        session = self.writable_session(branch, author=author)
        refs = list(virtual_chunks(self._core, session.base_commit))
        if not refs:
            session.abandon()
            raise EmptyCommitError(f"branch {branch!r} has no virtual chunks to materialize")

        def copy(item: tuple[str, str, ChunkRef]) -> None:
            _, key, ref = item
            session.write_sync(key, self._core.read_chunk(ref))

        try:
            with ThreadPoolExecutor(max(1, workers)) as pool:
                list(pool.map(copy, refs))
            return session.commit(message, metadata={"materialized": len(refs)})
        except BaseException:
            session.abandon()
            raise

    def import_icechunk(
        self, storage_or_path: Any, *, ref_prefix: str = "", author: str | None = None
    ) -> IcechunkImport:
        """Import an Icechunk repository with its history (see
        :func:`zarrlake.import_icechunk`)."""
        from zarrlake.virtual.icechunk_import import import_history

        who = default_author() if author is None else validate_text(author, "author")
        return import_history(self._core, storage_or_path, author=who, ref_prefix=ref_prefix)
