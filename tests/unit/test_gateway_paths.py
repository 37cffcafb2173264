"""What a gateway path names, and every way one is refused before anything is opened."""

from __future__ import annotations

import pytest

from zarrlake.gateway.paths import MAX_PATH, BadPath, Target, href, parse_path


@pytest.mark.parametrize(
    ("raw", "target"),
    [
        ("/", Target(directory=True)),
        ("/default", Target("default", directory=True)),
        ("/default/", Target("default", directory=True)),
        ("/default/main", Target("default", "main", None, True)),
        ("/default/main/", Target("default", "main", None, True)),
        ("/default/v1/ocean/sst/c/0/1", Target("default", "v1", "ocean/sst/c/0/1")),
        ("/default/v1/ocean/", Target("default", "v1", "ocean", True)),
        ("/default/feature%2Fx/zarr.json", Target("default", "feature/x", "zarr.json")),
        ("/default/main~2/zarr.json", Target("default", "main~2", "zarr.json")),
        ("/default/main%40%7B1%7D/zarr.json", Target("default", "main@{1}", "zarr.json")),
        ("/my%20repo/main/a%20b/zarr.json", Target("my repo", "main", "a b/zarr.json")),
    ],
)
def test_parse(raw: str, target: Target) -> None:
    assert parse_path(raw) == target


@pytest.mark.parametrize(
    "raw",
    [
        "default/main/zarr.json",
        "/default/main/../zarr.json",
        "/default/main/./zarr.json",
        "/default/main/%2e%2e/zarr.json",
        "/default/main/%2E/zarr.json",
        "/default/main/a%2fb",
        "/default%2Fother/main/zarr.json",
        "/default/..%2F..%2Fetc/zarr.json",
        "/default/a%2F%2Fb/zarr.json",
        "/default//zarr.json",
        "/default/main//zarr.json",
        "//etc/passwd",
        "/default/main/a\\b",
        "/default/main/a%5Cb",
        "/default/main/a%00b",
        "/default/main/a\x01b",
        "/default/main/%ff",
        "/../default/main/zarr.json",
    ],
)
def test_refused(raw: str) -> None:
    with pytest.raises(BadPath) as info:
        parse_path(raw)
    assert info.value.status == 400


def test_over_long() -> None:
    with pytest.raises(BadPath) as info:
        parse_path("/d/m/" + "a" * MAX_PATH)
    assert info.value.status == 414


def test_links_parse_back() -> None:
    link = href("/zarr", "my repo", "feature/x", "ocean/a b", slash=False)
    assert link == "/zarr/my%20repo/feature%2Fx/ocean/a%20b"
    assert parse_path(link.removeprefix("/zarr")) == Target("my repo", "feature/x", "ocean/a b")
