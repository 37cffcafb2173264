"""Ref expressions: the grammar, parsed into a value (resolution lives in ``zarrlake.history``).

::

    expr     := base [ "@{" selector "}" ] step*
    base     := a branch or tag name, a commit id, or a unique commit id prefix
    selector := N                 the Nth earlier position of the ref, from the ref log
                                  (0 is the current one)
              | ISO-8601 time     the ref's position at that time (naive times are UTC)
    step     := "~" [N]           the Nth first-parent ancestor (``~`` alone is ``~1``)
              | "^" [N]           parent N: ``^`` or ``^1`` first parent, ``^2`` the merged
                                  parent of a merge commit, ``^0`` the commit itself

Examples: ``main``, ``v1.0``, ``3f9a2c71``, ``main~3``, ``main@{5}``,
``main@{2026-11-01T12:00}``, ``dev@{1}~2``, ``main^2``.

Names cannot contain ``~``, ``^``, ``@`` or ``{`` (see :func:`zarrlake.types.validate_name`),
so the split between the base and its suffixes is never ambiguous.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

from zarrlake.errors import InvalidNameError, InvalidRefError
from zarrlake.types import validate_name

__all__ = ["MAX_REF_LENGTH", "RefExpr", "Step", "is_plain_ref", "parse_ref_expr"]

MAX_REF_LENGTH = 300
_MAX_DIGITS = 9  # ~999999999 is already far deeper than any history

_BASE = re.compile(r"[A-Za-z0-9._\-/]+")
_STEP = re.compile(r"([~^])([0-9]*)")
_SELECTOR = re.compile(r"@\{([^{}]*)\}")
_TIME_CHARS = re.compile(r"[0-9T:+\-. Z]+")


@dataclass(frozen=True, slots=True)
class Step:
    """One navigation step: ``kind`` is ``~`` (ancestor) or ``^`` (parent), with its number."""

    kind: str
    n: int


@dataclass(frozen=True, slots=True)
class RefExpr:
    """A parsed ref expression."""

    base: str
    position: int | None = None  # @{N}
    at: datetime | None = None  # @{time}, timezone-aware
    steps: tuple[Step, ...] = ()

    @property
    def uses_reflog(self) -> bool:
        return self.position is not None or self.at is not None


def is_plain_ref(text: str) -> bool:
    """Whether ``text`` is a bare name or commit id (the fast path: no suffixes)."""
    return bool(_BASE.fullmatch(text))


def _number(digits: str, text: str) -> int:
    if len(digits) > _MAX_DIGITS:
        raise InvalidRefError(f"ref expression {text!r}: number {digits[:12]}... is too large")
    return int(digits)


def _selector(body: str, text: str) -> tuple[int | None, datetime | None]:
    if not body:
        raise InvalidRefError(f"ref expression {text!r}: '@{{}}' needs a number or a time")
    if body.isascii() and body.isdigit():
        return _number(body, text), None
    if not _TIME_CHARS.fullmatch(body):
        raise InvalidRefError(
            f"ref expression {text!r}: '@{{{body}}}' is neither a position (a number) nor an "
            "ISO-8601 time such as 2026-11-01T12:00"
        )
    try:
        when = datetime.fromisoformat(body)
    except ValueError:
        raise InvalidRefError(
            f"ref expression {text!r}: '@{{{body}}}' is not an ISO-8601 time of a year from "
            "0001 to 9999 (e.g. 2026-11-01 or 2026-11-01T12:00:00+02:00)"
        ) from None
    return None, when if when.tzinfo else when.replace(tzinfo=UTC)


def parse_ref_expr(text: object) -> RefExpr:
    """Parse a ref expression; raise :class:`InvalidRefError` if it is malformed."""
    if not isinstance(text, str) or not text:
        raise InvalidRefError(f"a ref must be a non-empty string, got {text!r}")
    if len(text) > MAX_REF_LENGTH:
        raise InvalidRefError(
            f"ref expression is {len(text)} characters; the limit is {MAX_REF_LENGTH}"
        )
    m = _BASE.match(text)
    if m is None:
        raise InvalidRefError(
            f"ref expression {text!r} must start with a branch, tag or commit id "
            "(letters, digits and _ . - /)"
        )
    base = m.group(0)
    try:
        validate_name(base, "ref")
    except InvalidNameError as exc:
        raise InvalidRefError(f"ref expression {text!r}: {exc}") from None
    pos = m.end()
    position: int | None = None
    at: datetime | None = None
    sel = _SELECTOR.match(text, pos)
    if sel is not None:
        position, at = _selector(sel.group(1), text)
        pos = sel.end()
    steps = []
    while pos < len(text):
        st = _STEP.match(text, pos)
        if st is None:
            raise InvalidRefError(
                f"ref expression {text!r}: unexpected {text[pos : pos + 10]!r} at position {pos}; "
                "after a ref come '@{N}', '@{time}', '~N' or '^N'"
            )
        n = _number(st.group(2), text) if st.group(2) else 1
        steps.append(Step(st.group(1), n))
        pos = st.end()
    return RefExpr(base, position, at, tuple(steps))
