"""Pull requests of a repo and what happened on them. A pull request's merge is recorded by
the commit writer, in the transaction that publishes the merge commit
(:func:`mark_merged`)."""

from __future__ import annotations

import sqlalchemy as sa

from zarrlake.catalog.db import Scoped
from zarrlake.catalog.driver import DriverTx
from zarrlake.catalog.schema import pull_events, pulls
from zarrlake.errors import NotFoundError, PullRequestError
from zarrlake.model.rules import PullEvent, PullRecord
from zarrlake.types import from_epoch

__all__ = ["PullQueries", "mark_merged"]


def _record(r: sa.Row[tuple[object, ...]]) -> PullRecord:
    return PullRecord(
        int(r.number),
        str(r.source),
        str(r.target),
        str(r.title),
        str(r.description),
        str(r.author),
        str(r.state),
        str(r.source_commit),
        None if r.merge_commit is None else str(r.merge_commit),
        from_epoch(float(r.created_at)),
        from_epoch(float(r.updated_at)),
    )


def _event(
    conn: DriverTx,
    repo_id: int,
    number: int,
    kind: str,
    author: str,
    body: str,
    commit: str | None,
    now: float,
) -> None:
    conn.execute(
        sa.insert(pull_events).values(
            repo_id=repo_id,
            number=number,
            kind=kind,
            author=author,
            body=body,
            commit_id=commit,
            at=now,
        )
    )


def mark_merged(
    conn: DriverTx, repo_id: int, number: int, commit: str, author: str, now: float
) -> None:
    """Record a pull request merged by ``commit`` (inside the commit's transaction); refuse
    one that is no longer open (merged or closed by someone else meanwhile)."""
    moved = conn.execute(
        sa.update(pulls)
        .where(pulls.c.repo_id == repo_id, pulls.c.number == number, pulls.c.state == "open")
        .values(state="merged", merge_commit=commit, updated_at=now)
    ).rowcount
    if moved != 1:
        raise PullRequestError(
            f"pull request #{number} was merged or closed by someone else meanwhile; "
            "nothing was changed"
        )
    _event(conn, repo_id, number, "merge", author, "", commit, now)


class PullQueries(Scoped):
    """A repo's pull requests."""

    def open(
        self, source: str, target: str, title: str, description: str, author: str, head: str
    ) -> PullRecord:
        rid = self.repo_id
        with self.db.tx(write=True) as conn:
            now = self.db.now(conn)
            last = conn.execute(
                sa.select(sa.func.max(pulls.c.number)).where(pulls.c.repo_id == rid)
            ).scalar()
            number = int(last or 0) + 1
            conn.execute(
                sa.insert(pulls).values(
                    repo_id=rid,
                    number=number,
                    source=source,
                    target=target,
                    title=title,
                    description=description,
                    author=author,
                    state="open",
                    source_commit=head,
                    created_at=now,
                    updated_at=now,
                )
            )
        return self.get(number)

    def get(self, number: int) -> PullRecord:
        with self.db.read() as conn:
            row = conn.execute(
                sa.select(pulls).where(pulls.c.repo_id == self.repo_id, pulls.c.number == number)
            ).first()
        if row is None:
            raise NotFoundError(f"no pull request #{number} in this repo")
        return _record(row)

    def by_state(self, state: str | None) -> list[PullRecord]:
        q = sa.select(pulls).where(pulls.c.repo_id == self.repo_id)
        if state is not None:
            q = q.where(pulls.c.state == state)
        with self.db.read() as conn:
            return [_record(r) for r in conn.execute(q.order_by(pulls.c.number.desc()))]

    def events(self, number: int) -> list[PullEvent]:
        with self.db.read() as conn:
            rows = conn.execute(
                sa.select(pull_events)
                .where(pull_events.c.repo_id == self.repo_id, pull_events.c.number == number)
                .order_by(pull_events.c.id)
            ).all()
        return [
            PullEvent(r.kind, r.author, r.body, r.commit_id, from_epoch(float(r.at))) for r in rows
        ]

    def add_event(
        self, number: int, kind: str, author: str, body: str = "", commit: str | None = None
    ) -> None:
        """A comment or approval on an open pull request (refused on a merged or closed one:
        the check and the insert are one transaction)."""
        rid = self.repo_id
        with self.db.tx(write=True) as conn:
            state = conn.execute(
                sa.select(pulls.c.state)
                .where(pulls.c.repo_id == rid, pulls.c.number == number)
                .with_for_update()
            ).scalar()
            if state is None:
                raise NotFoundError(f"no pull request #{number} in this repo")
            if state != "open" and kind == "approve":
                raise PullRequestError(f"pull request #{number} is {state}; it takes no approvals")
            now = self.db.now(conn)
            _event(conn, rid, number, kind, author, body, commit, now)
            conn.execute(
                sa.update(pulls)
                .where(pulls.c.repo_id == rid, pulls.c.number == number)
                .values(updated_at=now)
            )

    def close(self, number: int, author: str) -> None:
        rid = self.repo_id
        with self.db.tx(write=True) as conn:
            now = self.db.now(conn)
            moved = conn.execute(
                sa.update(pulls)
                .where(pulls.c.repo_id == rid, pulls.c.number == number, pulls.c.state == "open")
                .values(state="closed", updated_at=now)
            ).rowcount
            if moved != 1:
                state = conn.execute(
                    sa.select(pulls.c.state).where(pulls.c.repo_id == rid, pulls.c.number == number)
                ).scalar()
                if state is None:
                    raise NotFoundError(f"no pull request #{number} in this repo")
                raise PullRequestError(f"pull request #{number} is already {state}")
            _event(conn, rid, number, "close", author, "", None, now)
