"""Version URLs: the one parser, its canonical form, and what it refuses."""

from __future__ import annotations

import pytest

from zarrlake import InvalidInputError, VersionURL, parse_url


@pytest.mark.parametrize(
    ("text", "catalog", "repo", "ref", "group", "location"),
    [
        (
            "zarrlake+file:///data/lake",
            "sqlite:////data/lake/catalog.db",
            "default",
            None,
            None,
            "/data/lake",
        ),
        (
            "zarrlake+file:///data/lake?repo=other#ref=v1&group=ocean",
            "sqlite:////data/lake/catalog.db",
            "other",
            "v1",
            "ocean",
            "/data/lake",
        ),
        (
            "zarrlake+file://localhost/data/my%20lake/#group=/ocean/deep/",
            "sqlite:////data/my lake/catalog.db",
            "default",
            None,
            "ocean/deep",
            "/data/my lake",
        ),
        (
            "zarrlake+sqlite:////srv/cat.db?repo=climate#ref=main~2",
            "sqlite:////srv/cat.db",
            "climate",
            "main~2",
            None,
            None,
        ),
        (
            "zarrlake+postgresql://alice@db.example:5432/lakes?repo=climate#ref=v1",
            "postgresql+psycopg://alice@db.example:5432/lakes",
            "climate",
            "v1",
            None,
            None,
        ),
        (
            "zarrlake+postgresql+psycopg://h/db?sslmode=require#ref=main%40%7B2%7D",
            "postgresql+psycopg://h/db?sslmode=require",
            "default",
            "main@{2}",
            None,
            None,
        ),
        (
            "ZARRLAKE+FILE:///data/lake#ref=feature/x",
            "sqlite:////data/lake/catalog.db",
            "default",
            "feature/x",
            None,
            "/data/lake",
        ),
    ],
)
def test_parse(
    text: str, catalog: str, repo: str, ref: str | None, group: str | None, location: str | None
) -> None:
    url = parse_url(text)
    assert (url.catalog, url.repo, url.ref, url.group, url.location) == (
        catalog,
        repo,
        ref,
        group,
        location,
    )
    # the canonical text parses back to the same URL
    assert parse_url(str(url)) == url


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("file:///data/lake", "no 'zarrlake+' prefix"),
        ("zarrlake+http://host/lake", "unknown scheme 'http'"),
        ("zarrlake+s3://bucket/lake", "unknown scheme 's3'"),
        ("zarrlake+file://otherhost/data/lake", "names no host"),
        ("zarrlake+file:data/lake", "must be absolute"),
        ("zarrlake+file:///data/../etc", "'..' segment"),
        ("zarrlake+file:///data/lake?ref=v1", "unknown query parameter 'ref'"),
        ("zarrlake+file:///data/lake#rev=v1", "unknown fragment parameter 'rev'"),
        ("zarrlake+file:///data/lake#ref=v1&ref=v2", "given twice"),
        ("zarrlake+file:///data/lake#ref=", "is empty"),
        ("zarrlake+file:///data/lake#ref", "not KEY=VALUE"),
        ("zarrlake+file:///data/lake#group=a/../b", "'..' segment"),
        ("zarrlake+file:///data/lake?repo=..bad", "repo name"),
        ("zarrlake+file:///data/lake#ref=a%0Ab", "control characters"),
        ("zarrlake+sqlite:///relative.db", "must be absolute"),
        ("zarrlake+postgresql:///db", "no host"),
        ("zarrlake+postgresql://host/", "one database name"),
        ("zarrlake+postgresql://host/db/extra", "one database name"),
        ("zarrlake+postgresql://host/db?sslmod=require", "unknown query parameter 'sslmod'"),
        ("zarrlake+file:///" + "a" * 5000, "the limit is 4096"),
    ],
)
def test_refused(text: str, says: str) -> None:
    with pytest.raises(InvalidInputError, match="version URL") as info:
        parse_url(text)
    assert says in str(info.value)


def test_a_password_is_never_shown() -> None:
    url = parse_url("zarrlake+postgresql://alice:s3cret@h/db?repo=climate")
    assert url.catalog == "postgresql+psycopg://alice:s3cret@h/db"  # what the catalog needs
    assert "s3cret" not in repr(url)
    with pytest.raises(InvalidInputError) as info:
        parse_url("zarrlake+postgresql://alice:s3cret@h/db?bogus=1")
    assert "s3cret" not in str(info.value)
    assert "alice:***@h" in str(info.value)


def test_with_version_checks_like_the_parser() -> None:
    lake = parse_url("zarrlake+file:///data/lake#ref=v1")
    assert lake.lake() == VersionURL("sqlite:////data/lake/catalog.db", location="/data/lake")
    assert str(lake.with_version("main~1", "ocean/")) == (
        "zarrlake+file:///data/lake#ref=main~1&group=ocean"
    )
    with pytest.raises(InvalidInputError):
        lake.with_version(group="a/../b")


def test_only_strings_parse() -> None:
    with pytest.raises(InvalidInputError, match="is a string"):
        parse_url(b"zarrlake+file:///x")  # type: ignore[arg-type]
