"""Options of the ``zarrlake`` Spark data source: parsed and checked once, refused when unknown.

Spark hands options over as a case-insensitive map of strings; everything here turns that map
into typed values or raises :class:`~zarrlake.errors.InvalidInputError` naming the option.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from zarrlake.errors import InvalidInputError
from zarrlake.repo import Repo
from zarrlake.types import validate_key, validate_name

__all__ = ["LakeOptions", "ReadOptions", "WriteOptions", "parse_read", "parse_write"]

_LAKE = {"path", "catalog", "name", "storage", "storage_options"}
_WRITE = _LAKE | {
    "branch",
    "array",
    "group",
    "dims",
    "coords",
    "chunks",
    "idempotency_key",
    "message",
    "append_dim",
    "test_fail",
}
_READ = _LAKE | {
    "ref",
    "array",
    "group",
    "arrays",
    "chunks_per_partition",
    "include_fill",
    "filter_pushdown",
}
# Options that Spark itself adds to the map.
_SPARK = {"checkpointlocation"}
TEST_FAIL = ("once", "always")


def _lower(options: Mapping[str, str]) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in options.items()}


def _check_known(opts: dict[str, str], known: set[str], what: str) -> None:
    unknown = sorted(set(opts) - known - _SPARK)
    if unknown:
        raise InvalidInputError(
            f"unknown option(s) for zarrlake {what}: {', '.join(unknown)}; "
            f"known options are {', '.join(sorted(known))}"
        )


def _json(opts: dict[str, str], key: str) -> Any:
    raw = opts.get(key)
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"option {key!r} must be JSON: {exc}") from exc


@dataclass(frozen=True, slots=True)
class LakeOptions:
    """Where the lake is: an embedded ``path``, or a ``catalog`` URL with repo ``name``."""

    path: str | None = None
    catalog: str | None = None
    name: str = "default"
    storage: str | None = None
    storage_options: dict[str, Any] = field(default_factory=dict)

    def open(self, *, create: bool = False) -> Repo:
        """Open the repo (in this process; repos are cached per process)."""
        if self.path is not None:
            if create:
                return Repo.open_or_create(self.path, name=self.name)
            return Repo.open(self.path, name=self.name)
        if create and self.storage is not None:
            return Repo.open_or_create(
                catalog=self.catalog,
                name=self.name,
                storage=self.storage,
                storage_options=self.storage_options,
            )
        return Repo.open(catalog=self.catalog, name=self.name, storage_options=self.storage_options)


def parse_lake(opts: dict[str, str]) -> LakeOptions:
    path, catalog = opts.get("path"), opts.get("catalog")
    if (path is None) == (catalog is None):
        raise InvalidInputError(
            "give the lake as option 'path' (a local directory: the embedded default) or as "
            "'catalog' (a SQLAlchemy URL) with 'name' and 'storage', not both and not neither"
        )
    so = _json(opts, "storage_options") or {}
    if not isinstance(so, dict):
        raise InvalidInputError("option 'storage_options' must be a JSON object")
    name = validate_name(opts.get("name", "default"), "repo name")
    if path is not None and ("storage" in opts or so):
        raise InvalidInputError("options 'storage' and 'storage_options' go with 'catalog'")
    return LakeOptions(path, catalog, name, opts.get("storage"), so)


def _target(opts: dict[str, str]) -> tuple[str, str | None]:
    """(group path, array name or None) from ``array`` or ``group``."""
    array, group = opts.get("array"), opts.get("group")
    if array is not None and group is not None:
        raise InvalidInputError("give option 'array' (a path) or 'group', not both")
    if array is not None:
        path = validate_key(array.strip("/"))
        parent, _, name = path.rpartition("/")
        return parent, name
    if group is None:
        raise InvalidInputError(
            "give option 'array' (the target array's path) or 'group' (a group whose arrays are "
            "named after the value columns)"
        )
    group = group.strip("/")
    return (validate_key(group) if group else ""), None


@dataclass(frozen=True, slots=True)
class WriteOptions:
    lake: LakeOptions
    branch: str
    group: str
    array: str | None
    dims: tuple[str, ...]
    coords: dict[str, Any]
    chunks: dict[str, int] | None
    idempotency_key: str | None
    message: str
    append_dim: str | None
    test_fail: str | None


def _chunks(raw: Any, dims: tuple[str, ...]) -> dict[str, int] | None:
    if raw is None:
        return None
    if isinstance(raw, int) and not isinstance(raw, bool):
        raw = [raw] * len(dims)
    if isinstance(raw, list):
        if len(raw) != len(dims):
            raise InvalidInputError(f"option 'chunks' has {len(raw)} sizes for {len(dims)} dims")
        raw = dict(zip(dims, raw, strict=True))
    if not isinstance(raw, dict) or set(raw) != set(dims):
        raise InvalidInputError(
            f"option 'chunks' must give a chunk size for each of the dims {list(dims)}, "
            'e.g. {"time": 24, "lat": 45}'
        )
    for d, v in raw.items():
        if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
            raise InvalidInputError(f"chunk size of {d!r} must be a positive integer, got {v!r}")
    return {d: int(raw[d]) for d in dims}


def parse_write(options: Mapping[str, str]) -> WriteOptions:
    """Check the options of ``df.write.format("zarrlake")`` / ``writeStream``."""
    opts = _lower(options)
    _check_known(opts, _WRITE, "writes")
    lake = parse_lake(opts)
    group, array = _target(opts)
    dims = tuple(d.strip() for d in opts.get("dims", "").split(",") if d.strip())
    if not dims:
        raise InvalidInputError(
            "option 'dims' is required: the dimension columns in array order, e.g. 'time,lat,lon'"
        )
    if len(set(dims)) != len(dims):
        raise InvalidInputError(f"option 'dims' repeats a column: {opts['dims']!r}")
    coords = _json(opts, "coords") or {}
    if not isinstance(coords, dict) or not set(coords) <= set(dims):
        raise InvalidInputError(
            f"option 'coords' must be a JSON object keyed by dims {list(dims)}, e.g. "
            '{"lat": {"start": -89.5, "step": 1.0, "size": 180}}'
        )
    append_dim = opts.get("append_dim")
    if append_dim is not None and append_dim not in dims:
        raise InvalidInputError(f"option 'append_dim' must be one of the dims {list(dims)}")
    key = opts.get("idempotency_key")
    if key is not None and not key.strip():
        raise InvalidInputError("option 'idempotency_key' must not be empty")
    fail = opts.get("test_fail")
    if fail is not None and fail not in TEST_FAIL:
        raise InvalidInputError(f"option 'test_fail' must be one of {TEST_FAIL}")
    return WriteOptions(
        lake=lake,
        branch=validate_name(opts.get("branch", "main"), "branch name"),
        group=group,
        array=array,
        dims=dims,
        coords=coords,
        chunks=_chunks(_json(opts, "chunks"), dims),
        idempotency_key=key,
        message=opts.get("message", "spark write"),
        append_dim=append_dim,
        test_fail=fail,
    )


@dataclass(frozen=True, slots=True)
class ReadOptions:
    lake: LakeOptions
    ref: str
    group: str
    arrays: tuple[str, ...] | None
    chunks_per_partition: int | None
    include_fill: bool
    filter_pushdown: bool


def _bool(opts: dict[str, str], key: str) -> bool:
    raw = opts.get(key, "false").lower()
    if raw not in ("true", "false"):
        raise InvalidInputError(f"option {key!r} must be 'true' or 'false', got {raw!r}")
    return raw == "true"


def parse_read(options: Mapping[str, str]) -> ReadOptions:
    """Check the options of ``spark.read.format("zarrlake")``."""
    opts = _lower(options)
    _check_known(opts, _READ, "reads")
    lake = parse_lake(opts)
    if "array" in opts and "arrays" in opts:
        raise InvalidInputError("give option 'array' (one path) or 'group' with 'arrays'")
    if "group" not in opts and "array" not in opts:
        opts["group"] = ""
    group, array = _target(opts)
    arrays: tuple[str, ...] | None = (array,) if array else None
    if "arrays" in opts:
        arrays = tuple(a.strip() for a in opts["arrays"].split(",") if a.strip())
        if not arrays:
            raise InvalidInputError("option 'arrays' must name at least one array")
    cpp: int | None = None
    if "chunks_per_partition" in opts:
        try:
            cpp = int(opts["chunks_per_partition"])
        except ValueError:
            cpp = 0
        if cpp <= 0:
            raise InvalidInputError("option 'chunks_per_partition' must be a positive integer")
    ref = opts.get("ref", "main")
    if not ref.strip():
        raise InvalidInputError("option 'ref' must not be empty")
    return ReadOptions(
        lake, ref, group, arrays, cpp, _bool(opts, "include_fill"), _bool(opts, "filter_pushdown")
    )
