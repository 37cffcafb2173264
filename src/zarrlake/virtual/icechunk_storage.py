"""Where an Icechunk repository lies, from a URL and fsspec-style options: a local directory
or ``s3://bucket/prefix``. The options are the ones ``zarrlake import`` takes for a Zarr store
(``endpoint_url``, ``key``, ``secret``, ``token``, ``anon``, ``client_kwargs.region_name``),
mapped to Icechunk's S3 settings; anything else is refused, never guessed."""

from __future__ import annotations

import os
from typing import Any

from zarrlake.errors import InvalidInputError

__all__ = ["S3_OPTIONS", "icechunk_storage"]

S3_OPTIONS = ("endpoint_url", "key", "secret", "token", "anon", "region", "client_kwargs")
"""The source options an Icechunk repository on S3 takes."""


def icechunk_storage(url: str, options: dict[str, Any] | None = None) -> Any:
    """The ``icechunk.Storage`` of the repository at ``url`` (a local path, ``file://`` or
    ``s3://`` URL); credentials come from ``options`` or, without ``key``, from the
    environment as boto does."""
    import icechunk as ic

    options = dict(options or {})
    scheme, sep, rest = url.partition("://")
    if not sep or scheme == "file":
        if options:
            raise InvalidInputError(
                f"source options are for S3; a local Icechunk repository takes none "
                f"(got {', '.join(sorted(options))})"
            )
        return os.path.abspath(rest if sep else url)
    if scheme != "s3":
        raise InvalidInputError(
            f"an Icechunk repository is imported from a directory or s3://bucket/prefix, "
            f"not {scheme}://"
        )
    bucket, _, prefix = rest.partition("/")
    if not bucket:
        raise InvalidInputError(f"{url!r} names no bucket: expected s3://bucket/prefix")
    unknown = sorted(set(options) - set(S3_OPTIONS))
    region = options.pop("region", None)
    client_kwargs = options.pop("client_kwargs", None) or {}
    if not isinstance(client_kwargs, dict) or set(client_kwargs) - {"region_name"}:
        unknown.append("client_kwargs (only client_kwargs.region_name is taken)")
    if unknown:
        raise InvalidInputError(
            f"unknown source option(s) for an Icechunk repository on S3: {', '.join(unknown)}; "
            f"known: {', '.join(S3_OPTIONS)}. Nothing was imported"
        )
    endpoint = options.get("endpoint_url")
    key, secret = options.get("key"), options.get("secret")
    if (key is None) != (secret is None):
        raise InvalidInputError("give both key and secret, or neither (the environment's)")
    return ic.s3_storage(
        bucket=bucket,
        prefix=prefix.strip("/") or None,
        region=region or client_kwargs.get("region_name"),
        endpoint_url=endpoint,
        allow_http=bool(endpoint and str(endpoint).startswith("http://")),
        force_path_style=endpoint is not None,
        access_key_id=key,
        secret_access_key=secret,
        session_token=options.get("token"),
        anonymous=bool(options.get("anon")) or None,
        from_env=None if key is not None or options.get("anon") else True,
    )
