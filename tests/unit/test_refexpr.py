"""The ref expression grammar (model/refexpr.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from zarrlake.errors import InvalidRefError
from zarrlake.model.refexpr import RefExpr, Step, is_plain_ref, parse_ref_expr


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("main", RefExpr("main")),
        ("feature/x-1.2", RefExpr("feature/x-1.2")),
        ("3f9a2c71", RefExpr("3f9a2c71")),
        ("main~3", RefExpr("main", steps=(Step("~", 3),))),
        ("main~", RefExpr("main", steps=(Step("~", 1),))),
        ("main~0", RefExpr("main", steps=(Step("~", 0),))),
        ("main^", RefExpr("main", steps=(Step("^", 1),))),
        ("main^2~1", RefExpr("main", steps=(Step("^", 2), Step("~", 1)))),
        ("main@{5}", RefExpr("main", position=5)),
        ("dev@{1}~2", RefExpr("dev", position=1, steps=(Step("~", 2),))),
        ("main@{2026-11-01T12:00}", RefExpr("main", at=datetime(2026, 11, 1, 12, 0, tzinfo=UTC))),
        ("main@{2026-11-01}", RefExpr("main", at=datetime(2026, 11, 1, tzinfo=UTC))),
        (
            "main@{2026-11-01T12:00:00+02:00}",
            RefExpr("main", at=datetime(2026, 11, 1, 12, tzinfo=timezone(timedelta(hours=2)))),
        ),
        ("main@{2026-11-01 12:00Z}", RefExpr("main", at=datetime(2026, 11, 1, 12, tzinfo=UTC))),
    ],
)
def test_valid_expressions(text: str, expected: RefExpr) -> None:
    assert parse_ref_expr(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "main~x",
        "main~1x",
        "main@{nonsense}",
        "main@{}",
        "main@{-1}",
        "main@{2026-13-45}",
        "main@{1}@{2}",
        "main@{1",
        "main@{{1}}",
        "main~3@{1}",
        "~1",
        "@{1}",
        "^",
        "main^x",
        "main ~1",
        "main; DROP TABLE zl_refs",
        "../../etc/passwd",
        ".hidden",
        "a..b",
        "x.lock",
        "main\x00",
        "main\n",
        "mäin",
        "main~" + "9" * 20,
        "b" * 400,
    ],
)
def test_malformed_expressions_are_invalid_ref_errors(text: str) -> None:
    with pytest.raises(InvalidRefError):
        parse_ref_expr(text)


@pytest.mark.parametrize(
    "text", ["main@{0000-01-01}", "main@{10000-01-01T00:00}", "main@{-0001-01-01}"]
)
def test_times_outside_the_calendar_say_which_years_are(text: str) -> None:
    with pytest.raises(InvalidRefError, match="year from 0001 to 9999"):
        parse_ref_expr(text)


@pytest.mark.parametrize("value", [None, 3, b"main", ["main"]])
def test_non_strings_are_invalid_ref_errors(value: object) -> None:
    with pytest.raises(InvalidRefError, match="non-empty string"):
        parse_ref_expr(value)


def test_invalid_ref_error_is_a_value_error_that_says_what_to_write() -> None:
    with pytest.raises(ValueError, match=r"'@\{N\}', '@\{time\}', '~N' or '\^N'"):
        parse_ref_expr("main!")


def test_plain_refs_take_the_fast_path() -> None:
    assert is_plain_ref("main")
    assert is_plain_ref("abc123")
    assert not is_plain_ref("main~1")
    assert not is_plain_ref("main@{1}")
