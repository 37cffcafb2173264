"""Commits: lookups and history walks (the one writer of commits is :mod:`.writer`)."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa

from zarrlake.catalog.db import Scoped
from zarrlake.catalog.driver import Prepared
from zarrlake.catalog.keys import recorded_key
from zarrlake.catalog.rows import COMMIT_COLS, batches, commit_record
from zarrlake.catalog.schema import blobs, commits, refs
from zarrlake.errors import NotFoundError
from zarrlake.model.records import CommitRecord

__all__ = ["CommitQueries"]


_GET = Prepared(
    sa.select(*COMMIT_COLS).where(
        commits.c.repo_id == sa.bindparam("p_repo"), commits.c.id == sa.bindparam("p_id")
    )
)


class CommitQueries(Scoped):
    """A repo's commits."""

    def get(self, commit_id: str) -> CommitRecord:
        with self.db.read() as conn:
            row = conn.execute(_GET, {"p_repo": self.repo_id, "p_id": commit_id}).first()
        if row is None:
            raise NotFoundError(f"no commit {commit_id!r} in this repo")
        return commit_record(row)

    def get_with_root(self, commit_id: str) -> tuple[CommitRecord, bytes | None]:
        """A commit and its snapshot root's bytes, in one round trip."""
        found = self.with_roots([commit_id]).get(commit_id)
        if found is None:
            raise NotFoundError(f"no commit {commit_id!r} in this repo")
        return found

    def with_roots(self, ids: Sequence[str]) -> dict[str, tuple[CommitRecord, bytes | None]]:
        """The commits of ``ids`` that exist, each with its snapshot root's bytes, by id, in
        one round trip (per few hundred)."""
        return {c: (rec, root) for c, (rec, root, _) in self._with_blobs(ids, False).items()}

    def with_roots_and_changes(
        self, ids: Sequence[str]
    ) -> dict[str, tuple[CommitRecord, bytes | None, bytes | None]]:
        """:meth:`with_roots`, plus the change set's bytes of each commit whose first parent
        is among ``ids`` (what a diff of a commit against its parent reads), in the same
        round trip."""
        return self._with_blobs(ids, True)

    def _with_blobs(
        self, ids: Sequence[str], changes: bool
    ) -> dict[str, tuple[CommitRecord, bytes | None, bytes | None]]:
        wanted = list(dict.fromkeys(ids))
        q = _WITH_ROOTS_AND_CHANGES if changes else _WITH_ROOTS
        out: dict[str, tuple[CommitRecord, bytes | None, bytes | None]] = {}
        for batch in batches(wanted):
            params = {"p_repo": self.repo_id, "p_ids": list(batch), "p_parents": wanted}
            with self.db.read() as conn:
                for row in conn.execute(q, params):
                    root = None if row.root_data is None else bytes(row.root_data)
                    data = row.changes_data if changes else None
                    out[row.id] = (commit_record(row), root, None if data is None else bytes(data))
        return out

    def by_id(self, ids: Sequence[str]) -> dict[str, CommitRecord]:
        """The commits of ``ids`` that exist, by id."""
        out: dict[str, CommitRecord] = {}
        for batch in batches(list(ids)):
            with self.db.read() as conn:
                for r in conn.execute(
                    sa.select(*COMMIT_COLS).where(
                        commits.c.repo_id == self.repo_id, commits.c.id.in_(list(batch))
                    )
                ):
                    out[r.id] = commit_record(r)
        return out

    def all(self) -> list[CommitRecord]:
        """Every commit of the repo (for gc, expire and fsck)."""
        with self.db.read() as conn:
            return [
                commit_record(r)
                for r in conn.execute(
                    sa.select(*COMMIT_COLS).where(commits.c.repo_id == self.repo_id)
                )
            ]

    def lookup(self, name: str, *, prefix: bool) -> list[tuple[str, str]]:
        """What ``name`` may mean, in one round trip: ``("ref", commit)`` if a branch or tag
        has that name, and up to two ``("commit", id)`` whose id starts with it (if
        ``prefix``)."""
        return self.lookup_many({name: prefix})[name]

    def lookup_many(self, names: Mapping[str, bool]) -> dict[str, list[tuple[str, str]]]:
        """:meth:`lookup` of several names (name -> ``prefix``: a lowercase hex name that may
        be a commit id's beginning), in one round trip."""
        params, n_prefixes = self._lookup_params(names)
        out: dict[str, list[tuple[str, str]]] = {name: [] for name in names}
        with self.db.read() as conn:
            for r in conn.execute(_lookup_query(n_prefixes), params):
                what, key, found = str(r.what), str(r.name), str(r.id)
                if what == "ref" or found.startswith(key):
                    out[key].append((what, found))
        return out

    def lookup_with_commits(
        self, names: Mapping[str, bool]
    ) -> tuple[
        dict[str, list[tuple[str, str]]],
        dict[str, tuple[CommitRecord, bytes | None, bytes | None]],
    ]:
        """:meth:`lookup_many`, and every commit found with its root's bytes and, for those
        whose first parent was found too, its change set's bytes (as
        :meth:`with_roots_and_changes`): what a diff of two names reads, in one round trip."""
        params, n_prefixes = self._lookup_params(names)
        out: dict[str, list[tuple[str, str]]] = {name: [] for name in names}
        rows: dict[str, tuple[CommitRecord, bytes | None, bytes | None]] = {}
        q = _lookup_with_commits_query(n_prefixes)
        with self.db.read() as conn:
            for r in conn.execute(q, params):
                what, key, found = str(r.what), str(r.name), str(r.found)
                if what == "ref" or found.startswith(key):
                    out[key].append((what, found))
                if r.id is not None:
                    root = None if r.root_data is None else bytes(r.root_data)
                    data = None if r.changes_data is None else bytes(r.changes_data)
                    rows[found] = (commit_record(r), root, data)
        return out, rows

    def _lookup_params(self, names: Mapping[str, bool]) -> tuple[dict[str, Any], int]:
        prefixes = [name for name, prefix in names.items() if prefix]
        params: dict[str, Any] = {"p_repo": self.repo_id, "p_names": list(names)}
        for i, name in enumerate(prefixes):
            # Commit ids are lowercase hex: those starting with ``name`` are the range
            # [name, name + "g"), which the primary key finds without a scan (a LIKE alone
            # read every commit of the repo: the cost grew with the history).
            params[f"p_low{i}"], params[f"p_high{i}"] = name, name + "g"
        return params, len(prefixes)

    def ancestry(self, head: str, limit: int | None = None) -> list[CommitRecord]:
        """``head`` and its first-parent ancestors, newest first (one recursive query)."""
        rid = self.repo_id
        base = sa.select(*COMMIT_COLS).where(commits.c.repo_id == rid, commits.c.id == head)
        chain = base.cte("chain", recursive=True)
        step = sa.select(*COMMIT_COLS).join(
            chain, sa.and_(commits.c.repo_id == rid, commits.c.id == chain.c.parent_id)
        )
        chain = chain.union_all(step)
        q = sa.select(chain).order_by(chain.c.generation.desc())
        if limit is not None:
            q = q.limit(limit)
        with self.db.read() as conn:
            return [commit_record(r) for r in conn.execute(q)]

    def between(self, base: str, head: str) -> list[CommitRecord] | None:
        """First-parent commits after ``base`` up to ``head`` (oldest first).

        ``None`` if ``base`` is not a first-parent ancestor of ``head`` (the branch was reset).
        """
        if base == head:
            return []
        with self.db.read() as conn:
            gen = conn.execute(
                sa.select(commits.c.generation).where(
                    commits.c.repo_id == self.repo_id, commits.c.id == base
                )
            ).scalar()
        if gen is None:
            return None
        out: list[CommitRecord] = []
        cursor: str | None = head
        # Walk in pages: the distance is usually a handful of commits.
        while cursor is not None:
            page = self.ancestry(cursor, limit=256)
            for row in page:
                if row.id == base:
                    out.reverse()
                    return out
                if row.generation <= gen:
                    return None
                out.append(row)
            cursor = page[-1].parent_id if page else None
        return None

    def nth_ancestor(self, commit_id: str, n: int) -> str | None:
        """The ``n``-th first-parent ancestor of a commit (walks ``n`` steps, no further)."""
        rid = self.repo_id
        base = sa.select(
            commits.c.id, commits.c.parent_id, sa.literal_column("0").label("depth")
        ).where(commits.c.repo_id == rid, commits.c.id == commit_id)
        chain = base.cte("nth", recursive=True)
        step = (
            sa.select(commits.c.id, commits.c.parent_id, (chain.c.depth + 1).label("depth"))
            .join(chain, sa.and_(commits.c.repo_id == rid, commits.c.id == chain.c.parent_id))
            .where(chain.c.depth < n)
        )
        chain = chain.union_all(step)
        with self.db.read() as conn:
            return conn.execute(sa.select(chain.c.id).where(chain.c.depth == n)).scalar()

    def _reachable(self, heads: Sequence[str], cols: list[Any], low: int) -> sa.CTE:
        rid = self.repo_id
        base = sa.select(*cols).where(commits.c.repo_id == rid, commits.c.id.in_(list(heads)))
        graph = base.cte("graph", recursive=True)
        step = sa.select(*cols).join(
            graph,
            sa.and_(
                commits.c.repo_id == rid,
                sa.or_(
                    commits.c.id == graph.c.parent_id,
                    commits.c.id == graph.c.merge_parent_id,
                ),
            ),
        )
        if low > 0:
            step = step.where(commits.c.generation >= low)
        return graph.union(step)

    def window(
        self, heads: Sequence[str], min_generation: int
    ) -> dict[str, tuple[str | None, str | None, int]]:
        """Commits reachable from ``heads`` through both parents, down to ``min_generation``:
        id -> (parent, merge parent, generation). One recursive query."""
        cols = [commits.c.id, commits.c.parent_id, commits.c.merge_parent_id, commits.c.generation]
        graph = self._reachable(heads, cols, min_generation)
        with self.db.read() as conn:
            return {
                r.id: (r.parent_id, r.merge_parent_id, int(r.generation))
                for r in conn.execute(sa.select(graph))
            }

    def graph(self, heads: Sequence[str]) -> dict[str, tuple[tuple[str, ...], float]]:
        """Every commit reachable from ``heads`` through both parents: id -> (parents,
        creation time). One recursive query; parents that were expired are listed but have
        no entry of their own."""
        cols = [commits.c.id, commits.c.parent_id, commits.c.merge_parent_id, commits.c.created_at]
        graph = self._reachable(heads, cols, 0)
        with self.db.read() as conn:
            return {
                r.id: (tuple(p for p in (r.parent_id, r.merge_parent_id) if p), float(r.created_at))
                for r in conn.execute(sa.select(graph))
            }

    def recorded_key(self, branch: str, key: str) -> str | None:
        """The commit recorded on ``branch`` with idempotency ``key``, if it is still on the
        branch (reachable from its head); see :mod:`.keys`."""
        with self.db.tx() as conn:
            return recorded_key(conn, self.repo_id, branch, key, None)


# Statements built once, the values passed as parameters: building a SQLAlchemy statement
# costs several times what running a small one does (a diff's lookups are a few of them).
def _with_blobs_query(changes: bool) -> Any:
    cols: list[Any] = [*COMMIT_COLS, blobs.c.data.label("root_data")]
    q = (
        sa.select()
        .select_from(commits)
        .outerjoin(
            blobs,
            sa.and_(blobs.c.repo_id == sa.bindparam("p_repo"), blobs.c.hash == commits.c.root_hash),
        )
    )
    if changes:  # the change set of a commit whose parent is among those asked for
        cs = blobs.alias("cs")
        cols.append(cs.c.data.label("changes_data"))
        q = q.outerjoin(
            cs,
            sa.and_(
                cs.c.repo_id == sa.bindparam("p_repo"),
                cs.c.hash == commits.c.changes_hash,
                commits.c.parent_id.in_(sa.bindparam("p_parents", expanding=True)),
            ),
        )
    return q.add_columns(*cols).where(
        commits.c.repo_id == sa.bindparam("p_repo"),
        commits.c.id.in_(sa.bindparam("p_ids", expanding=True)),
    )


_WITH_ROOTS = _with_blobs_query(False)
_WITH_ROOTS_AND_CHANGES = _with_blobs_query(True)


@functools.lru_cache(maxsize=16)
def _lookup_query(n_prefixes: int) -> Any:
    """Refs named ``p_names``, and up to two commit ids in each ``[p_low<i>, p_high<i>)``."""
    by_ref: Any = sa.select(
        sa.literal("ref").label("what"),
        refs.c.name.label("name"),
        refs.c.commit_id.label("id"),
    ).where(
        refs.c.repo_id == sa.bindparam("p_repo"),
        refs.c.name.in_(sa.bindparam("p_names", expanding=True)),
    )
    by_id = [
        sa.select(
            sa.literal("commit").label("what"),
            sa.bindparam(f"p_low{i}", type_=sa.String).label("name"),
            commits.c.id.label("id"),
        )
        .where(
            commits.c.repo_id == sa.bindparam("p_repo"),
            commits.c.id >= sa.bindparam(f"p_low{i}", type_=sa.String),
            commits.c.id < sa.bindparam(f"p_high{i}", type_=sa.String),
        )
        .limit(2)
        .subquery()
        .select()
        for i in range(n_prefixes)
    ]
    return sa.union_all(by_ref, *by_id) if by_id else by_ref


@functools.lru_cache(maxsize=16)
def _lookup_with_commits_query(n_prefixes: int) -> Any:
    """:func:`_lookup_query`'s rows, each with the commit found (its root's and, where its
    parent was found too, its change set's bytes)."""
    found = _lookup_query(n_prefixes).cte("found")
    root = blobs.alias("root")
    cs = blobs.alias("cs")
    repo: Any = sa.bindparam("p_repo")
    return (
        sa.select(
            found.c.what,
            found.c.name,
            found.c.id.label("found"),
            *COMMIT_COLS,
            root.c.data.label("root_data"),
            cs.c.data.label("changes_data"),
        )
        .select_from(found)
        .outerjoin(commits, sa.and_(commits.c.repo_id == repo, commits.c.id == found.c.id))
        .outerjoin(root, sa.and_(root.c.repo_id == repo, root.c.hash == commits.c.root_hash))
        .outerjoin(
            cs,
            sa.and_(
                cs.c.repo_id == repo,
                cs.c.hash == commits.c.changes_hash,
                commits.c.parent_id.in_(sa.select(found.c.id)),
            ),
        )
    )
