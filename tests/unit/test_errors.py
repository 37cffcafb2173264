"""The exception tree is public API: its shape, ``kind`` codes and pickling are pinned here."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

import zarrlake
from zarrlake import errors
from zarrlake.errors import (
    AlreadyExistsError,
    CatalogError,
    CheckFailedError,
    CheckFailure,
    ChunkCorruptionError,
    CommitTimeoutError,
    Conflict,
    ConflictError,
    EmptyCommitError,
    InvalidInputError,
    InvalidKeyError,
    InvalidMetadataError,
    InvalidNameError,
    InvalidRefError,
    NotFoundError,
    ObjectMissingError,
    PermissionDeniedError,
    ProtectedBranchError,
    PullRequestError,
    ReadOnlyError,
    RefMovedError,
    SchemaVersionError,
    SessionClosedError,
    SessionError,
    SessionExpiredError,
    SourceChangedError,
    SourceUnavailableError,
    StorageError,
    UnalignedWriteError,
    VirtualSourceError,
    ZarrlakeError,
)

# class -> (kind, direct bases). Changing the tree must be a deliberate edit of this table.
TREE: dict[type[BaseException], tuple[str, tuple[type, ...]]] = {
    ZarrlakeError: ("zarrlake", (Exception,)),
    InvalidInputError: ("invalid_input", (ZarrlakeError, ValueError)),
    InvalidNameError: ("invalid_name", (InvalidInputError,)),
    InvalidKeyError: ("invalid_key", (InvalidInputError,)),
    InvalidMetadataError: ("invalid_metadata", (InvalidInputError,)),
    InvalidRefError: ("invalid_ref", (InvalidInputError,)),
    EmptyCommitError: ("empty_commit", (InvalidInputError,)),
    UnalignedWriteError: ("unaligned_write", (InvalidInputError,)),
    VirtualSourceError: ("virtual_source", (InvalidInputError,)),
    NotFoundError: ("not_found", (ZarrlakeError, LookupError)),
    AlreadyExistsError: ("already_exists", (ZarrlakeError,)),
    SessionError: ("session", (ZarrlakeError,)),
    SessionExpiredError: ("session_expired", (SessionError,)),
    SessionClosedError: ("session_closed", (SessionError,)),
    ReadOnlyError: ("read_only", (SessionError, ValueError)),
    ConflictError: ("conflict", (ZarrlakeError,)),
    RefMovedError: ("ref_moved", (ConflictError,)),
    CommitTimeoutError: ("commit_timeout", (ConflictError,)),
    StorageError: ("storage", (ZarrlakeError,)),
    ChunkCorruptionError: ("chunk_corruption", (StorageError,)),
    ObjectMissingError: ("object_missing", (StorageError, FileNotFoundError)),
    SourceUnavailableError: ("source_unavailable", (StorageError,)),
    SourceChangedError: ("source_changed", (StorageError,)),
    CatalogError: ("catalog", (ZarrlakeError,)),
    SchemaVersionError: ("schema_version", (CatalogError,)),
    PermissionDeniedError: ("permission_denied", (CatalogError,)),
    CheckFailedError: ("check_failed", (ZarrlakeError,)),
    ProtectedBranchError: ("protected_branch", (ZarrlakeError,)),
    PullRequestError: ("pull_request", (ZarrlakeError,)),
}

EXCEPTION_NAMES = sorted(cls.__name__ for cls in TREE)


def _conflicts() -> list[Conflict]:
    return [
        Conflict("chunk", "a/b", (1, 2), "c0ffee", "chunk written on both sides"),
        Conflict("metadata", "", None, None),
        Conflict("raw", "extra/key", None, "beef", "key written on both sides"),
    ]


def test_all_lists_exactly_the_tree_and_conflict() -> None:
    assert sorted(errors.__all__) == sorted(
        [*EXCEPTION_NAMES, "CheckFailure", "Conflict", "ConflictKind"]
    )


@pytest.mark.parametrize("name", EXCEPTION_NAMES)
def test_every_exception_derives_from_zarrlake_error(name: str) -> None:
    cls = getattr(errors, name)
    assert issubclass(cls, ZarrlakeError)


@pytest.mark.parametrize("name", EXCEPTION_NAMES)
def test_exception_is_reexported_from_package(name: str) -> None:
    assert getattr(zarrlake, name) is getattr(errors, name)


def test_conflict_is_a_value_not_an_exception() -> None:
    assert dataclasses.is_dataclass(Conflict)
    assert not issubclass(Conflict, BaseException)
    c = Conflict("chunk", "a", (0,), "x")
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.path = "b"  # type: ignore[misc]


def test_kind_mapping_is_pinned() -> None:
    actual = {cls: cls.kind for cls in TREE}
    assert actual == {cls: kind for cls, (kind, _) in TREE.items()}


def test_kinds_are_unique() -> None:
    kinds = [cls.kind for cls in TREE]
    assert len(set(kinds)) == len(kinds)


def test_each_class_defines_its_own_kind() -> None:
    # a subclass that forgot ``kind`` would silently inherit its parent's code
    for cls in TREE:
        assert "kind" in vars(cls), cls.__name__


def test_direct_bases_are_pinned() -> None:
    actual = {cls: cls.__bases__ for cls in TREE}
    assert actual == {cls: bases for cls, (_, bases) in TREE.items()}


@pytest.mark.parametrize(
    ("cls", "builtin"),
    [
        (InvalidNameError, ValueError),
        (InvalidKeyError, ValueError),
        (InvalidMetadataError, ValueError),
        (EmptyCommitError, ValueError),
        (ReadOnlyError, ValueError),
        (NotFoundError, LookupError),
        (ObjectMissingError, FileNotFoundError),
        (ObjectMissingError, OSError),
    ],
)
def test_generic_builtin_handlers_catch(cls: type[ZarrlakeError], builtin: type[Exception]) -> None:
    with pytest.raises(builtin):
        raise cls("boom")


def test_conflict_error_carries_conflicts() -> None:
    cs = _conflicts()
    err = ConflictError("cannot commit", cs)
    assert err.conflicts == cs
    assert err.conflicts is not cs  # a copy: the caller's list can change freely


def test_conflict_error_without_conflicts_has_empty_list_and_plain_message() -> None:
    err = ConflictError("cannot commit")
    assert err.conflicts == []
    assert str(err) == "cannot commit"


def test_conflict_error_message_lists_every_conflict() -> None:
    cs = _conflicts()
    msg = str(ConflictError("cannot commit", cs))
    lines = msg.splitlines()
    assert lines[0] == "cannot commit"
    assert lines[1:] == [f"  - {c}" for c in cs]
    assert "chunk conflict at a/b chunk (1, 2) (commit c0ffee): chunk written on both sides" in msg
    assert "metadata conflict at /" in msg
    assert "raw conflict at extra/key (commit beef)" in msg


def test_conflict_error_message_truncates_after_twenty() -> None:
    cs = [Conflict("chunk", "a", (i,), "c") for i in range(25)]
    err = ConflictError("x", cs)
    msg = str(err)
    assert "chunk (19,)" in msg
    assert "chunk (20,)" not in msg
    assert msg.endswith("... and 5 more")
    assert len(err.conflicts) == 25


def test_conflict_error_pickle_round_trip() -> None:
    cs = _conflicts()
    err = ConflictError("cannot commit", cs)
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is ConflictError
    assert back.conflicts == cs
    assert str(back) == str(err)


def test_ref_moved_error_carries_its_facts_through_pickle() -> None:
    err = RefMovedError("moved", ref="main", expected="a" * 20, actual="b" * 20)
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is RefMovedError
    assert (back.ref, back.expected, back.actual) == ("main", "a" * 20, "b" * 20)
    assert str(back) == "moved"
    assert back.conflicts == []


def test_commit_timeout_error_carries_its_facts_through_pickle() -> None:
    err = CommitTimeoutError("lost", branch="dev", attempts=7, timeout=1.5)
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is CommitTimeoutError
    assert (back.branch, back.attempts, back.timeout) == ("dev", 7, 1.5)


def test_conflict_kinds_are_an_enum_that_is_still_a_string() -> None:
    c = Conflict("chunk", "a", (0,), None)  # type: ignore[arg-type]
    assert c.kind is errors.ConflictKind.CHUNK
    assert c.kind == "chunk"
    assert f"{c.kind}" == "chunk"
    with pytest.raises(ValueError, match="'chunks'"):
        Conflict("chunks", "a", None, None)  # type: ignore[arg-type]


def test_conflict_error_pickle_does_not_repeat_the_list() -> None:
    err = ConflictError("cannot commit", _conflicts())
    twice = pickle.loads(pickle.dumps(pickle.loads(pickle.dumps(err))))
    assert str(twice) == str(err)


@pytest.mark.parametrize(
    "cls", [c for c in TREE if not issubclass(c, ConflictError)], ids=lambda c: c.__name__
)
def test_plain_errors_pickle_round_trip(cls: type[ZarrlakeError]) -> None:
    back = pickle.loads(pickle.dumps(cls("message")))
    assert type(back) is cls
    assert str(back) == "message"


def test_conflict_str_formats() -> None:
    assert str(Conflict("create", "g/a", None, None)) == "create conflict at g/a"
    assert (
        str(Conflict("read", "", (0, 0), "abc", "changed"))
        == "read conflict at / chunk (0, 0) (commit abc): changed"
    )


def test_check_failed_error_lists_each_failure_and_survives_pickle() -> None:
    fails = [
        CheckFailure("no-nan", "NaN in 2 chunks", ("temp",), {"temp": ((0, 1), (3, 0))}),
        CheckFailure("units", "missing attribute 'units'", ("temp",)),
    ]
    err = CheckFailedError("commit refused by 2 checks", fails)
    assert str(err).splitlines() == [
        "commit refused by 2 checks",
        "  - no-nan: NaN in 2 chunks (temp chunks (0, 1), (3, 0))",
        "  - units: missing attribute 'units' (temp)",
    ]
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is CheckFailedError
    assert back.failures == fails


def test_protected_branch_error_names_the_branch_through_pickle() -> None:
    back = pickle.loads(pickle.dumps(ProtectedBranchError("open a pull request", branch="main")))
    assert (type(back), back.branch, str(back)) == (
        ProtectedBranchError,
        "main",
        "open a pull request",
    )
