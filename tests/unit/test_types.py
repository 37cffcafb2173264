"""Name and key validation: the first defence against hostile input."""

from __future__ import annotations

import getpass
import re
from datetime import UTC, datetime

import pytest

from zarrlake.errors import InvalidKeyError, InvalidNameError
from zarrlake.types import (
    MAX_NAME_LENGTH,
    CommitInfo,
    default_author,
    from_epoch,
    new_commit_id,
    new_session_id,
    validate_key,
    validate_name,
)

GOOD_NAMES = [
    "main",
    "a",
    "A",
    "0",
    "_private",
    "feature/x",
    "feature/x/y",
    "v1.0",
    "release-2024.01",
    "a_b-c.d/e",
    "x" * MAX_NAME_LENGTH,
    "lock",
    "a.locked",
]

BAD_NAMES = {
    "empty": "",
    "too long": "x" * (MAX_NAME_LENGTH + 1),
    "nul": "a\x00b",
    "newline": "a\nb",
    "trailing newline": "main\n",
    "tab": "a\tb",
    "del": "a\x7fb",
    "c1 control": "a\x85b",
    "dot dot": "a..b",
    "dot dot segment": "a/../b",
    "double slash": "a//b",
    "leading dash": "-a",
    "leading dot": ".a",
    "leading slash": "/a",
    "trailing slash": "a/",
    "trailing dot": "a.",
    "lock suffix": "a.lock",
    "nested lock suffix": "x/a.lock",
    "reflog syntax": "a@{1}",
    "at brace only": "@{",
    "tilde": "a~1",
    "space": "a b",
    "leading space": " a",
    "caret": "a^",
    "colon": "a:b",
    "question": "a?",
    "star": "a*",
    "backslash": "a\\b",
    "zero width space (Cf)": "a\u200bb",
    "rtl override (Cf)": "a\u202eb",
    "bom (Cf)": "\ufeffmain",
    "non-ascii letter": "caf\u00e9",
    "fullwidth digit": "\uff11",
    "line separator": "a\u2028b",
}


@pytest.mark.parametrize("name", GOOD_NAMES)
def test_validate_name_accepts(name: str) -> None:
    assert validate_name(name) == name


@pytest.mark.parametrize("name", BAD_NAMES.values(), ids=BAD_NAMES.keys())
def test_validate_name_rejects(name: str) -> None:
    with pytest.raises(InvalidNameError):
        validate_name(name)


@pytest.mark.parametrize("value", [None, 1, b"main", ["main"], 1.5])
def test_validate_name_rejects_non_strings(value: object) -> None:
    with pytest.raises(InvalidNameError, match="must be a string"):
        validate_name(value)


def test_validate_name_error_names_what() -> None:
    with pytest.raises(InvalidNameError, match=r"^branch name"):
        validate_name("", "branch name")


def test_validate_name_error_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        validate_name("a..b")


GOOD_KEYS = [
    "zarr.json",
    "a/zarr.json",
    "a/b/c/0/1",
    "c/0",
    "0.0",
    ".zattrs",
    "a/.b",
    "a..b",
    "temp\u00e9rature/zarr.json",
    "x" * 1000,
]

BAD_KEYS = {
    "empty": "",
    "absolute": "/abs",
    "absolute zarr.json": "/zarr.json",
    "double slash": "a//b",
    "trailing slash": "a/",
    "dot dot segment": "a/../b",
    "dot dot alone": "..",
    "leading dot dot": "../a",
    "dot segment": "./a",
    "inner dot segment": "a/./b",
    "backslash": "a\\b",
    "windows absolute": "C:\\x",
    "nul": "a\x00b",
    "newline": "a\nb",
    "carriage return": "a\rb",
    "escape": "a\x1b[31m",
    "del": "a\x7f",
}


@pytest.mark.parametrize("key", GOOD_KEYS)
def test_validate_key_accepts(key: str) -> None:
    assert validate_key(key) == key


@pytest.mark.parametrize("key", BAD_KEYS.values(), ids=BAD_KEYS.keys())
def test_validate_key_rejects(key: str) -> None:
    with pytest.raises(InvalidKeyError):
        validate_key(key)


@pytest.mark.parametrize("key", ["a\x85b", "a\x9b31m"], ids=["NEL", "CSI"])
def test_validate_key_rejects_c1_control_characters(key: str) -> None:
    with pytest.raises(InvalidKeyError):
        validate_key(key)


@pytest.mark.parametrize("value", [None, 1, b"zarr.json"])
def test_validate_key_rejects_non_strings(value: object) -> None:
    with pytest.raises(InvalidKeyError):
        validate_key(value)


def test_new_commit_id_shape_and_uniqueness() -> None:
    ids = {new_commit_id() for _ in range(200)}
    assert len(ids) == 200
    assert all(re.fullmatch(r"[0-9a-f]{20}", i) for i in ids)


def test_new_session_id_shape_and_uniqueness() -> None:
    ids = {new_session_id() for _ in range(200)}
    assert len(ids) == 200
    assert all(re.fullmatch(r"s[0-9a-f]{24}", i) for i in ids)


def test_from_epoch_is_aware_utc() -> None:
    assert from_epoch(0) == datetime(1970, 1, 1, tzinfo=UTC)
    assert from_epoch(1.5).tzinfo is UTC


def test_commit_info_parent() -> None:
    when = from_epoch(0)
    assert CommitInfo("a", (), "me", "m", {}, when).parent is None
    assert CommitInfo("a", ("p", "q"), "me", "m", {}, when).parent == "p"


def test_commit_checks_summary_puts_failures_first() -> None:
    checks = {
        "no-nan": {"passed": False, "message": "NaN in 1 changed chunk"},
        "range": {"passed": True, "message": "values within [0, 1]"},
        "units": {"passed": True, "message": "ok"},
    }
    info = CommitInfo("a", (), "me", "m", {"checks": checks}, from_epoch(0))
    assert info.checks_summary() == "no-nan failed: NaN in 1 changed chunk; 2 passed"
    assert CommitInfo("a", (), "me", "m", {}, from_epoch(0)).checks_summary() == ""


def test_the_default_author_is_the_environments_user_then_the_account(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for var in ("LOGNAME", "USER", "LNAME", "USERNAME"):
        monkeypatch.delenv(var, raising=False)
    account = default_author()
    assert account == getpass.getuser()
    monkeypatch.setenv("USERNAME", "carol")
    assert default_author() == "carol"
    monkeypatch.setenv("USER", "bob")
    assert default_author() == "bob"  # USER is read before USERNAME, as getpass reads them
    monkeypatch.setenv("LOGNAME", "alice")
    assert default_author() == "alice"
    monkeypatch.delenv("LOGNAME")
    monkeypatch.delenv("USER")
    monkeypatch.delenv("USERNAME")
    assert default_author() == account
