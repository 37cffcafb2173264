"""Chunk objects as files under a local directory.

A new object goes to a temporary file that is renamed into place, so a crash never leaves a
partial object under its final name; an existing object is only touched (its mtime refreshed,
which tells garbage collection it is in use again). Durability overlaps the writing: a
:class:`~zarrlake.objects.flusher.Flusher` flushes the filesystem while writers go on, and
:meth:`LocalObjectStore.sync` waits only for the flush that covers the last write.
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

from zarrlake.errors import InvalidInputError, ObjectMissingError, StorageError
from zarrlake.model.hashing import SHA256_HASHER, ChunkHasher
from zarrlake.objects.base import ObjectInfo, ObjectStore, object_key
from zarrlake.objects.flusher import Flusher
from zarrlake.objects.openfiles import OpenFiles

__all__ = ["LocalObjectStore", "make_directory"]


class LocalObjectStore(ObjectStore):
    """Objects as files under a local directory."""

    def __init__(
        self, root: str | Path, *, verify: bool = True, hasher: ChunkHasher = SHA256_HASHER
    ) -> None:
        super().__init__(hasher)
        self.root = Path(root).absolute()
        self.url = str(self.root)
        self.verify = verify
        self._flusher = Flusher(self.url)
        self._fds = OpenFiles()
        try:
            (self.root / "chunks").mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StorageError(f"cannot use {self.root} for chunk objects: {exc}") from exc

    def _path(self, h: bytes) -> str:
        return os.path.join(self.url, object_key(h))

    def write(self, h: bytes, data: bytes | memoryview) -> bool:
        try:
            return self._write(h, data)
        except OSError as exc:
            raise StorageError(f"cannot write object {h.hex()} under {self.url}: {exc}") from exc

    def _write(self, h: bytes, data: bytes | memoryview) -> bool:
        path = self._path(h)
        try:
            os.utime(path)
        except FileNotFoundError:
            pass
        else:
            # present, but perhaps written by another process a moment ago and not durable
            # yet: it becomes durable with our next flush like the objects we write
            self._flusher.note()
            return False
        tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
        try:
            fd = os.open(tmp, _CREATE, 0o666)
        except FileNotFoundError:
            # the fan-out directories are made with the repo (:meth:`initialize`); one that
            # is missing (a repo made before that, or a directory removed) is made now
            os.makedirs(os.path.dirname(path), exist_ok=True)
            fd = os.open(tmp, _CREATE, 0o666)
        try:
            try:
                _write_all(fd, data)
            finally:
                os.close(fd)
            # The name appears only once the bytes are complete. Two writers of one content
            # address write identical bytes, so replacing a concurrent copy is harmless.
            os.replace(tmp, path)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        self._flusher.note()
        return True

    def initialize(self) -> None:
        """Make the 256 fan-out directories (``chunks/00`` to ``chunks/ff``) in one go, so
        that no write into the new repo has to: making them on first use cost the first
        write of 256 MiB in 1 MiB chunks a directory creation per object written."""
        base = self.root / "chunks"
        try:
            for i in range(256):
                (base / f"{i:02x}").mkdir(exist_ok=True)
        except OSError as exc:
            raise StorageError(f"cannot use {self.root} for chunk objects: {exc}") from exc

    def read_range(self, h: bytes, start: int | None = None, end: int | None = None) -> bytes:
        if start is not None and end is not None:
            return self._pread(h, start, end)
        try:
            if start is None and end is None:
                return _read_file(self._path(h))
            with open(self._path(h), "rb") as f:
                if start:
                    f.seek(start)
                return f.read(-1 if end is None else max(0, end - (start or 0)))
        except OSError as exc:
            raise self._read_error(h, exc) from exc

    def _pread(self, h: bytes, start: int, end: int) -> bytes:
        """A range read on a descriptor kept open (a pack is read a chunk at a time: opening
        it for each would cost more than the read). Objects never change once named, so a
        kept descriptor always reads the right bytes, even of an object deleted since."""
        try:
            with self._fds.open(h, self._path(h)) as fd:
                return os.pread(fd, max(0, end - start), start)
        except OSError as exc:
            raise self._read_error(h, exc) from exc

    def _read_error(self, h: bytes, exc: OSError) -> Exception:
        if isinstance(exc, FileNotFoundError):
            return ObjectMissingError(
                f"object {h.hex()} is missing from {self.url}; it was deleted outside zarrlake "
                "or by an unsafe garbage collection. Run repo.fsck()"
            )
        return StorageError(f"cannot read object {h.hex()} from {self.url}: {exc}")

    def _reopen(self, h: bytes) -> bool:
        return self._fds.forget(h)

    def exists(self, h: bytes) -> bool:
        return os.path.exists(self._path(h))

    def modified_at(self, h: bytes) -> float | None:
        try:
            return os.stat(self._path(h)).st_mtime
        except FileNotFoundError:
            return None

    def delete(self, h: bytes) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self._path(h))

    def iter_objects(self) -> Iterator[ObjectInfo]:
        """Every object: the regular files under ``chunks/`` named by a hash. Anything else
        there (a directory, a link to nowhere, a directory that cannot be read) is no object:
        fsck reports the object it replaces as missing, and gc leaves it alone."""
        base = self.root / "chunks"
        for d in sorted(base.iterdir()) if base.exists() else []:
            try:
                entries = list(os.scandir(d)) if d.is_dir() else []
            except OSError:
                continue
            for entry in entries:
                if entry.name.endswith(".tmp") or len(entry.name) != 64:
                    continue
                try:
                    h = bytes.fromhex(entry.name)
                    st = entry.stat()
                except (ValueError, OSError):
                    continue
                if stat.S_ISREG(st.st_mode):
                    yield ObjectInfo(h, st.st_size, st.st_mtime)

    def remove_stale_temporaries(self, older_than: float) -> int:
        removed = 0
        base = self.root / "chunks"
        for d in sorted(base.iterdir()) if base.exists() else []:
            if not d.is_dir():
                continue
            for entry in os.scandir(d):
                if not entry.name.endswith(".tmp"):
                    continue
                with contextlib.suppress(FileNotFoundError):
                    if entry.stat().st_mtime < older_than:
                        os.unlink(entry.path)
                        removed += 1
        return removed

    def _flush(self) -> None:
        # The flusher has been flushing while the objects were written: this waits only for
        # the flush that covers the last of them.
        self._flusher.wait()


_CREATE = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC


def _write_all(fd: int, data: bytes | memoryview) -> None:
    """All of ``data`` to ``fd`` without a buffered file object (open, write, close: a
    buffered ``open()`` adds a stat, a terminal check and a seek to every object)."""
    view = memoryview(data).cast("B")
    while view:
        view = view[os.write(fd, view) :]


def _read_file(path: str) -> bytes:
    """A whole file in as few system calls as it takes (open, stat, read, close: a buffered
    ``open().read()`` makes twice as many, which shows at thousands of chunks)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        size = os.fstat(fd).st_size
        data = os.read(fd, size)  # all of it in one call below 2 GiB
        if len(data) == size:
            return data
        parts, got = [data], len(data)
        while got < size and (part := os.read(fd, size - got)):
            parts.append(part)
            got += len(part)
        return b"".join(parts)
    finally:
        os.close(fd)


def make_directory(path: Path) -> None:
    """Create a lake's directory and its missing parents, or refuse with a clear error
    (:class:`InvalidInputError` when a file is in the way, else :class:`StorageError`) and
    nothing created."""
    missing: list[Path] = []
    probe = path
    while not probe.is_dir():
        if os.path.lexists(probe):
            where = "is a file" if probe == path else f"is under {probe}, which is a file"
            raise InvalidInputError(f"{path} {where}; choose a directory for the lake")
        missing.append(probe)
        probe = probe.parent
    try:
        for d in reversed(missing):
            d.mkdir(exist_ok=True)
    except OSError as exc:
        for d in missing:
            with contextlib.suppress(OSError):
                d.rmdir()
        raise StorageError(
            f"cannot create the lake directory {path} ({exc.strerror}); choose a place you "
            "can write to"
        ) from exc
