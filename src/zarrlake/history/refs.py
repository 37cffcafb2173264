"""Ref expressions resolved against a repo: branches, tags, commit ids and prefixes, ref log
positions and times, ancestors (the grammar is :mod:`zarrlake.model.refexpr`)."""

from __future__ import annotations

from zarrlake.core import RepoCore
from zarrlake.errors import InvalidRefError, NotFoundError
from zarrlake.model.records import CommitRecord
from zarrlake.model.refexpr import RefExpr, parse_ref_expr
from zarrlake.types import did_you_mean, in_words

__all__ = ["resolve_ref", "resolve_refs", "resolve_with_commits"]

_COMMIT_PREFIX_MIN = 4


def _hexlike(name: str) -> bool:
    return _COMMIT_PREFIX_MIN <= len(name) <= 40 and all(c in "0123456789abcdef" for c in name)


def _lookup_base(core: RepoCore, name: str) -> str:
    """A branch, tag, commit id or unique commit id prefix."""
    hexlike = _hexlike(name)
    return _choose(core, name, hexlike, core.catalog.commits.lookup(name, prefix=hexlike))


def _choose(core: RepoCore, name: str, hexlike: bool, found: list[tuple[str, str]]) -> str:
    """What ``name`` names, given what the catalog's lookup found for it."""
    ref = [c for what, c in found if what == "ref"]
    if ref:
        return ref[0]  # refs first, as git does
    if hexlike:
        matches = [c for what, c in found if what == "commit"]
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            raise InvalidRefError(f"commit prefix {name!r} is ambiguous; give more characters")
    branches, tags = core.catalog.refs.all("branch"), core.catalog.refs.all("tag")
    raise NotFoundError(
        f"no branch, tag or commit {name!r} in repo {core.name!r}"
        f"{did_you_mean(name, [*branches, *tags])} (branches: {in_words(branches)}; "
        f"tags: {in_words(tags)})"
    )


def _from_reflog(core: RepoCore, expr: RefExpr, text: str) -> str:
    cat = core.catalog
    if expr.position is not None:
        row = cat.refs.log_position(expr.base, expr.position)
        if row is None:
            total = len(cat.refs.log(expr.base))
            if total == 0:
                raise NotFoundError(f"{text!r}: {expr.base!r} has no ref log (is it a ref?)")
            raise NotFoundError(
                f"{text!r}: the ref log of {expr.base!r} holds only {total} position(s) "
                f"(@{{0}} to @{{{total - 1}}})"
            )
        if row.new_commit is None:
            raise NotFoundError(f"{text!r}: {expr.base!r} was deleted at that position")
        return row.new_commit
    assert expr.at is not None
    found = cat.refs.at(expr.base, expr.at.timestamp())  # slack: see ref_at
    if found is None:
        raise NotFoundError(
            f"{text!r}: {expr.base!r} did not exist (or was deleted) at {expr.at.isoformat()}"
        )
    return found


def _parent(core: RepoCore, commit: str, n: int, text: str) -> str:
    if n == 0:
        return commit
    row = core.catalog.commits.get(commit)
    parents = [p for p in (row.parent_id, row.merge_parent_id) if p]
    if n > len(parents):
        raise NotFoundError(f"{text!r}: commit {commit[:10]} has {len(parents)} parent(s)")
    return parents[n - 1]


def resolve_ref(core: RepoCore, text: object) -> str:
    """The commit id a ref expression names (see :mod:`zarrlake.model.refexpr`).

    Raises :class:`InvalidRefError` when the expression is malformed or a prefix ambiguous,
    :class:`NotFoundError` when it names nothing.
    """
    expr = parse_ref_expr(text)
    assert isinstance(text, str)
    if not expr.steps and not expr.uses_reflog:
        return _lookup_base(core, expr.base)  # the common case: one query
    commit = _from_reflog(core, expr, text) if expr.uses_reflog else _lookup_base(core, expr.base)
    for step in expr.steps:
        if step.kind == "^":
            commit = _parent(core, commit, step.n, text)
            continue
        found = core.catalog.commits.nth_ancestor(commit, step.n)
        if found is None:
            raise NotFoundError(
                f"{text!r}: the first-parent history of {commit[:10]} is less than {step.n} "
                "commits deep (or was expired)"
            )
        commit = found
    return commit


def resolve_refs(core: RepoCore, *texts: object) -> list[str]:
    """The commit ids several ref expressions name; the plain names (branches, tags, commit
    ids and prefixes) among them are looked up together, in one query."""
    exprs = [parse_ref_expr(t) for t in texts]
    plain = {e.base: _hexlike(e.base) for e in exprs if not e.steps and not e.uses_reflog}
    found = core.catalog.commits.lookup_many(plain) if plain else {}
    return [
        _choose(core, e.base, plain[e.base], found[e.base])
        if not e.steps and not e.uses_reflog
        else resolve_ref(core, t)
        for e, t in zip(exprs, texts, strict=True)
    ]


CommitRows = dict[str, tuple[CommitRecord, bytes | None, bytes | None]]


def resolve_with_commits(core: RepoCore, *texts: object) -> tuple[list[str], CommitRows]:
    """:func:`resolve_refs`, and the commits named, with their roots' bytes and (for those
    whose first parent is named too) their change sets' bytes, as
    ``catalog.commits.with_roots_and_changes`` gives them; when every text is a plain name,
    all of it comes in one query."""
    exprs = [parse_ref_expr(t) for t in texts]
    if any(e.steps or e.uses_reflog for e in exprs):
        ids = resolve_refs(core, *texts)
        return ids, core.catalog.commits.with_roots_and_changes(ids)
    plain = {e.base: _hexlike(e.base) for e in exprs}
    found, rows = core.catalog.commits.lookup_with_commits(plain)
    ids = [_choose(core, e.base, plain[e.base], found[e.base]) for e in exprs]
    return ids, rows
