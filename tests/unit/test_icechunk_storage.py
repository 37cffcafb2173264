"""Where an Icechunk repository lies, from a URL and source options: what is refused, in
words, and what a local path becomes."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import zarrlake
from zarrlake.virtual.icechunk_storage import icechunk_storage

pytest.importorskip("icechunk")


@pytest.mark.parametrize(
    ("url", "options", "words"),
    [
        ("s3://lake/ice", {"bucket_region": "eu"}, "unknown source option(s) for an Icechunk"),
        ("s3://lake/ice", {"client_kwargs": {"verify": False}}, "only client_kwargs.region_name"),
        ("gs://lake/ice", {}, "from a directory or s3://bucket/prefix, not gs://"),
        ("s3://lake/ice", {"key": "k"}, "give both key and secret"),
        ("s3:///ice", {}, "names no bucket"),
        ("/data/ice", {"endpoint_url": "http://x"}, "a local Icechunk repository takes none"),
    ],
)
def test_what_cannot_name_a_repository_is_refused(
    url: str, options: dict[str, Any], words: str
) -> None:
    with pytest.raises(zarrlake.InvalidInputError, match=re.escape(words)):
        icechunk_storage(url, options)


def test_a_local_path_or_file_url_is_the_directory(tmp_path: Path) -> None:
    assert icechunk_storage(str(tmp_path / "ice")) == str(tmp_path / "ice")
    assert icechunk_storage(f"file://{tmp_path}/ice") == str(tmp_path / "ice")


def test_s3_options_make_an_s3_storage() -> None:
    import icechunk

    storage = icechunk_storage(
        "s3://lake/some/prefix/",
        {"endpoint_url": "http://127.0.0.1:9", "key": "k", "secret": "s", "region": "us-east-1"},
    )
    assert isinstance(storage, icechunk.Storage)
