"""A repo's rules as values: the checks that gate commits and merges on branches, branch
protection, and the records of pull requests.

Pure: validation and JSON encoding only. Running a check is :mod:`zarrlake.core.checks`'s job;
storing them, :mod:`zarrlake.catalog.rules` and :mod:`zarrlake.catalog.pulls`.
"""

from __future__ import annotations

import fnmatch
import json
import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from zarrlake.errors import InvalidInputError
from zarrlake.model.events import EVENTS, HOOK_EVENTS
from zarrlake.types import validate_name, validate_text

__all__ = [
    "BUILTIN_KINDS",
    "EVENTS",
    "HOOK_EVENTS",
    "BranchRule",
    "BranchRules",
    "CheckResult",
    "CheckSpec",
    "PullEvent",
    "PullRecord",
    "Webhook",
    "custom",
    "frozen_schema",
    "max_chunks",
    "no_nan",
    "required_attributes",
    "value_range",
]

# kind -> the parameters it takes (custom checks take any JSON parameters)
BUILTIN_KINDS: dict[str, frozenset[str]] = {
    "no_nan": frozenset({"arrays"}),
    "value_range": frozenset({"arrays", "min", "max"}),
    "required_attributes": frozenset({"arrays", "attributes"}),
    "frozen_schema": frozenset({"arrays"}),
    "max_chunks": frozenset({"arrays", "limit"}),
}
DEFAULT_TIMEOUT = 60.0


@dataclass(frozen=True, slots=True)
class CheckSpec:
    """A check as the catalog stores it: what it tests (``kind`` and ``params``; a custom
    check's ``kind`` is ``"custom"`` and ``params["entry_point"]`` names it), on which events
    (``"commit"``, ``"merge"``) and branches (names or glob patterns) it runs, and how long it
    may take (``timeout`` seconds: a check that takes longer failed)."""

    kind: str
    params: dict[str, Any] = field(default_factory=dict)
    name: str = ""
    on: tuple[str, ...] = EVENTS
    branches: tuple[str, ...] = ("main",)
    timeout: float = DEFAULT_TIMEOUT

    def applies(self, branch: str, event: str) -> bool:
        return event in self.on and any(fnmatch.fnmatchcase(branch, b) for b in self.branches)

    @property
    def arrays(self) -> tuple[str, ...]:
        """The array paths or patterns it looks at (empty: every array)."""
        return tuple(self.params.get("arrays", ()))

    def covers(self, path: str) -> bool:
        return not self.arrays or any(fnmatch.fnmatchcase(path, a) for a in self.arrays)

    def describe(self) -> str:
        """One line: what the check tests."""
        p = self.params
        where = ", ".join(self.arrays) or "every array"
        if self.kind == "no_nan":
            return f"no NaN in changed chunks of {where}"
        if self.kind == "value_range":
            return f"values of {where} within [{p.get('min')}, {p.get('max')}]"
        if self.kind == "required_attributes":
            return f"attributes {', '.join(p['attributes'])} on {where}"
        if self.kind == "frozen_schema":
            return f"dims, dtype and chunk grid of {where} unchanged"
        if self.kind == "max_chunks":
            return f"at most {p['limit']} changed chunks per array of {where}"
        return f"custom check {p.get('entry_point')!r}"

    def encode(self) -> str:
        return json.dumps(
            {"kind": self.kind, "params": self.params, "timeout": self.timeout},
            sort_keys=True,
            allow_nan=False,
        )

    @classmethod
    def decode(cls, name: str, spec: str, on: str, branches: str) -> CheckSpec:
        doc = json.loads(spec)
        return cls(
            doc["kind"],
            doc["params"],
            name,
            tuple(json.loads(on)),
            tuple(json.loads(branches)),
            float(doc.get("timeout", DEFAULT_TIMEOUT)),
        )

    def bound(self, name: str, on: object, branches: object, timeout: object = None) -> CheckSpec:
        """This check under ``name``, on those events and branches (validated)."""
        validate_name(name, "check name")
        events = _strings(on, "on")
        unknown = [e for e in events if e not in EVENTS]
        if unknown or not events:
            raise InvalidInputError(
                f"on= must name one or more of {', '.join(EVENTS)}; got {list(events)!r}"
            )
        pats = _strings(branches, "branches")
        if not pats:
            raise InvalidInputError("branches= must name at least one branch (or a pattern)")
        t = self.timeout if timeout is None else timeout
        if isinstance(t, bool) or not isinstance(t, int | float) or not 0 < t <= 3600:
            raise InvalidInputError(f"timeout must be seconds in (0, 3600], got {t!r}")
        return CheckSpec(self.kind, self.params, name, events, pats, float(t))


def _strings(value: object, what: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = (value,)
    if not isinstance(value, list | tuple):
        raise InvalidInputError(f"{what} must be a string or a list of strings, got {value!r}")
    for v in value:
        if not isinstance(v, str) or not v:
            raise InvalidInputError(f"{what} must hold non-empty strings, got {v!r}")
        validate_text(v, what)
    return tuple(dict.fromkeys(value))


def _arrays(arrays: tuple[str, ...]) -> list[str]:
    return [a.strip("/") for a in _strings(arrays, "arrays")]


def no_nan(*arrays: str) -> CheckSpec:
    """No NaN in the chunks a commit or merge changes, in ``arrays`` (paths or glob patterns;
    none: every floating-point array)."""
    return CheckSpec("no_nan", {"arrays": _arrays(arrays)})


def value_range(*arrays: str, min: float | None = None, max: float | None = None) -> CheckSpec:
    """Every value of the changed chunks of ``arrays`` within ``[min, max]`` (NaN ignored:
    combine with :func:`no_nan` to refuse it)."""
    for v, what in ((min, "min"), (max, "max")):
        if v is not None and (isinstance(v, bool) or not isinstance(v, int | float)):
            raise InvalidInputError(f"{what} must be a number, got {v!r}")
        if v is not None and not math.isfinite(v):
            raise InvalidInputError(f"{what} must be finite, got {v!r}")
    if min is None and max is None:
        raise InvalidInputError("value_range needs min=, max= or both")
    if min is not None and max is not None and min > max:
        raise InvalidInputError(f"min ({min}) is greater than max ({max})")
    return CheckSpec("value_range", {"arrays": _arrays(arrays), "min": min, "max": max})


def required_attributes(*attributes: str, arrays: tuple[str, ...] = ()) -> CheckSpec:
    """Every array a commit creates or changes (among ``arrays``) has these attributes
    (for example CF's ``units`` and ``standard_name``)."""
    names = list(_strings(attributes, "attributes"))
    if not names:
        raise InvalidInputError("required_attributes needs at least one attribute name")
    return CheckSpec("required_attributes", {"arrays": _arrays(arrays), "attributes": names})


def frozen_schema(*arrays: str) -> CheckSpec:
    """The dimension names, data type and chunk grid of ``arrays`` never change, and they are
    never deleted (appending along a dimension is allowed)."""
    return CheckSpec("frozen_schema", {"arrays": _arrays(arrays)})


def max_chunks(limit: int, *, arrays: tuple[str, ...] = ()) -> CheckSpec:
    """At most ``limit`` changed chunks per array (of ``arrays``) in one commit or merge."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise InvalidInputError(f"limit must be an int >= 0, got {limit!r}")
    return CheckSpec("max_chunks", {"arrays": _arrays(arrays), "limit": limit})


def custom(entry_point: str, **params: Any) -> CheckSpec:
    """A check registered by a package under the ``zarrlake.checks`` entry point group, by
    name, with JSON ``params`` it receives."""
    validate_text(entry_point, "entry point name")
    if not entry_point:
        raise InvalidInputError("the entry point name must not be empty")
    try:
        json.dumps(params, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"custom check parameters must be JSON values: {exc}") from None
    return CheckSpec("custom", {"entry_point": entry_point, **params})


@dataclass(frozen=True, slots=True)
class CheckResult:
    """What one check said about one commit or merge."""

    name: str
    passed: bool
    message: str = ""
    arrays: tuple[str, ...] = ()
    chunks: dict[str, tuple[tuple[int, ...], ...]] = field(default_factory=dict)
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"passed": self.passed, "message": self.message}
        if self.arrays:
            out["arrays"] = list(self.arrays)
        if self.chunks:
            out["chunks"] = {p: [list(c) for c in cs] for p, cs in self.chunks.items()}
        return out

    @classmethod
    def from_json(cls, name: str, doc: dict[str, Any]) -> CheckResult:
        chunks = {p: tuple(tuple(c) for c in cs) for p, cs in doc.get("chunks", {}).items()}
        return cls(
            name, bool(doc.get("passed")), str(doc.get("message", "")),
            tuple(doc.get("arrays", ())), chunks,
        )  # fmt: skip


@dataclass(frozen=True, slots=True)
class BranchRule:
    """How a branch is protected: checks that must pass before a pull request merges into
    it, approvals it needs, and whether direct commits (and resets, deletes) are allowed."""

    branch: str
    required_checks: tuple[str, ...] = ()
    required_approvals: int = 0
    allow_direct_commits: bool = False


@dataclass(frozen=True, slots=True)
class Webhook:
    """A URL that receives a JSON POST, signed with ``secret`` (HMAC-SHA256), for each of
    the repo's ``events`` (``"commit"``, ``"merge"``, ``"pull_request"``)."""

    url: str
    secret: str = field(repr=False)
    events: tuple[str, ...] = HOOK_EVENTS


@dataclass(frozen=True, slots=True)
class BranchRules:
    """What one commit on a branch reads of the repo's rules (in one statement): every
    check, the branch's protection, and the webhooks to tell."""

    checks: tuple[CheckSpec, ...] = ()
    rule: BranchRule | None = None
    hooks: tuple[Webhook, ...] = ()


@dataclass(frozen=True, slots=True)
class PullEvent:
    """A comment, approval, merge or close on a pull request."""

    kind: str  # "comment" | "approve" | "merge" | "close"
    author: str
    body: str
    commit: str | None
    at: datetime


@dataclass(frozen=True, slots=True)
class PullRecord:
    """A pull request as the catalog stores it."""

    number: int
    source: str
    target: str
    title: str
    description: str
    author: str
    state: str  # "open" | "merged" | "closed"
    source_commit: str  # the source's head when the request was opened
    merge_commit: str | None
    created_at: datetime
    updated_at: datetime
