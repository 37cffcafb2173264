"""Operands and options of every command parse without colliding (in-process: argparse only)."""

from __future__ import annotations

import pytest

from zarrlake.cli import _parser
from zarrlake.cli._common import bind_operands

CASES = [
    ("log", ["main"]),
    ("show", ["main"]),
    ("diff", ["a", "b"]),
    ("branch", ["dev", "main"]),
    ("tag", ["v1", "main"]),
    ("reset", ["dev", "main"]),
    ("merge", ["dev"]),
    ("revert", ["abc"]),
    ("gc", []),
    ("expire", ["--older-than", "1d"]),
    ("export", ["main", "/tmp/x"]),
    ("fsck", []),
    ("init", []),
    ("sessions", []),
]


@pytest.mark.parametrize(("command", "words"), CASES)
def test_with_a_catalog_every_word_is_an_operand_and_name_is_kept(
    command: str, words: list[str]
) -> None:
    args, extra = _parser().parse_known_args(
        [command, "--catalog", "sqlite://", "--name", "nm", *words]
    )
    bind_operands(args, extra)
    assert args.name == "nm"
    assert args.catalog == "sqlite://"


@pytest.mark.parametrize(("command", "words"), CASES)
def test_without_a_catalog_the_first_word_is_the_lake(command: str, words: list[str]) -> None:
    args, extra = _parser().parse_known_args([command, "some/lake", *words])
    bind_operands(args, extra)
    assert args.path == "some/lake"


def test_operands_land_in_their_attributes() -> None:
    args, extra = _parser().parse_known_args(["branch", "lake", "dev", "main~1", "--json"])
    bind_operands(args, extra)
    assert (args.path, args.ref_name, args.start, args.json) == ("lake", "dev", "main~1", True)


@pytest.mark.parametrize(("command", "words"), CASES)
def test_with_the_lake_option_every_word_is_an_operand(command: str, words: list[str]) -> None:
    args, extra = _parser().parse_known_args([command, "-C", "some/lake", *words])
    bind_operands(args, extra)
    assert args.path == "some/lake"


def test_words_that_fit_the_operands_are_operands() -> None:
    args, extra = _parser().parse_known_args(["diff", "v1.0", "main"])
    bind_operands(args, extra)
    assert (args.path, args.a, args.b) == ("my-lake", "v1.0", "main")
