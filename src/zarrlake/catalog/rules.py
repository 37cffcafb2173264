"""A repo's rules: the checks that gate commits and merges, protected branches, and the
webhooks told of its events."""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa

from zarrlake.catalog.db import Scoped
from zarrlake.catalog.driver import Prepared
from zarrlake.catalog.schema import branch_rules, checks, webhooks
from zarrlake.errors import AlreadyExistsError, NotFoundError
from zarrlake.model.rules import BranchRule, BranchRules, CheckSpec, Webhook

__all__ = ["RuleQueries"]


def _rule(r: sa.Row[tuple[object, ...]]) -> BranchRule:
    return BranchRule(
        str(r.branch),
        tuple(json.loads(str(r.required_checks))),
        int(r.required_approvals),
        bool(r.allow_direct),
    )


class RuleQueries(Scoped):
    """Checks and branch protection of one repo."""

    def checks(self) -> list[CheckSpec]:
        """Every check, by name."""
        with self.db.read() as conn:
            rows = conn.execute(
                sa.select(checks).where(checks.c.repo_id == self.repo_id).order_by(checks.c.name)
            ).all()
        return [CheckSpec.decode(r.name, r.spec, r.events, r.branches) for r in rows]

    def add_check(self, spec: CheckSpec, *, replace: bool) -> None:
        rid = self.repo_id
        values = {
            "spec": spec.encode(),
            "events": json.dumps(list(spec.on)),
            "branches": json.dumps(list(spec.branches)),
        }
        with self.db.tx(write=True) as conn:
            now = self.db.now(conn)
            found = conn.execute(
                sa.select(checks.c.name).where(checks.c.repo_id == rid, checks.c.name == spec.name)
            ).first()
            if found is not None and not replace:
                raise AlreadyExistsError(
                    f"a check named {spec.name!r} exists; remove it first or add with replace=True"
                )
            if found is not None:
                conn.execute(
                    sa.update(checks)
                    .where(checks.c.repo_id == rid, checks.c.name == spec.name)
                    .values(**values)
                )
            else:
                conn.execute(
                    sa.insert(checks).values(repo_id=rid, name=spec.name, created_at=now, **values)
                )

    def remove_check(self, name: str) -> None:
        with self.db.tx(write=True) as conn:
            gone = conn.execute(
                sa.delete(checks).where(checks.c.repo_id == self.repo_id, checks.c.name == name)
            ).rowcount
        if gone == 0:
            raise NotFoundError(f"no check named {name!r}")

    def protections(self) -> list[BranchRule]:
        with self.db.read() as conn:
            rows = conn.execute(
                sa.select(branch_rules)
                .where(branch_rules.c.repo_id == self.repo_id)
                .order_by(branch_rules.c.branch)
            ).all()
        return [_rule(r) for r in rows]

    def protect(self, rule: BranchRule) -> None:
        """Protect a branch, or replace its protection."""
        rid = self.repo_id
        values = {
            "required_checks": json.dumps(list(rule.required_checks)),
            "required_approvals": rule.required_approvals,
            "allow_direct": rule.allow_direct_commits,
        }
        where = (branch_rules.c.repo_id == rid, branch_rules.c.branch == rule.branch)
        with self.db.tx(write=True) as conn:
            now = self.db.now(conn)
            if conn.execute(sa.update(branch_rules).where(*where).values(**values)).rowcount == 0:
                conn.execute(
                    sa.insert(branch_rules).values(
                        repo_id=rid, branch=rule.branch, created_at=now, **values
                    )
                )

    def unprotect(self, branch: str) -> None:
        with self.db.tx(write=True) as conn:
            gone = conn.execute(
                sa.delete(branch_rules).where(
                    branch_rules.c.repo_id == self.repo_id, branch_rules.c.branch == branch
                )
            ).rowcount
        if gone == 0:
            raise NotFoundError(f"branch {branch!r} is not protected")

    def webhooks(self) -> list[Webhook]:
        with self.db.read() as conn:
            rows = conn.execute(
                sa.select(webhooks)
                .where(webhooks.c.repo_id == self.repo_id)
                .order_by(webhooks.c.url)
            ).all()
        return [Webhook(r.url, r.secret, tuple(json.loads(r.events))) for r in rows]

    def add_webhook(self, hook: Webhook) -> None:
        """Add a webhook, or replace the one at its URL."""
        rid = self.repo_id
        values = {"secret": hook.secret, "events": json.dumps(list(hook.events))}
        where = (webhooks.c.repo_id == rid, webhooks.c.url == hook.url)
        with self.db.tx(write=True) as conn:
            now = self.db.now(conn)
            if conn.execute(sa.update(webhooks).where(*where).values(**values)).rowcount == 0:
                conn.execute(
                    sa.insert(webhooks).values(repo_id=rid, url=hook.url, created_at=now, **values)
                )

    def remove_webhook(self, url: str) -> None:
        with self.db.tx(write=True) as conn:
            gone = conn.execute(
                sa.delete(webhooks).where(webhooks.c.repo_id == self.repo_id, webhooks.c.url == url)
            ).rowcount
        if gone == 0:
            raise NotFoundError(f"no webhook at {url!r}")

    def for_branch(self, branch: str, *, hooks: bool = True) -> BranchRules:
        """Every check (the caller filters by event and branch pattern), the branch's
        protection and (with ``hooks``) the webhooks: one statement, as every commit asks.
        Without ``hooks``, ``zl_webhooks`` (which holds secrets) is not read."""
        with self.db.read() as conn:
            rows = conn.execute(
                _FOR_BRANCH_HOOKS if hooks else _FOR_BRANCH,
                {"p_repo": self.repo_id, "p_branch": branch},
            ).all()
        specs = sorted(
            (CheckSpec.decode(r.name, r.a, r.b, r.c) for r in rows if r.k == "c"),
            key=lambda s: s.name,
        )
        rule = next(
            (
                BranchRule(r.name, tuple(json.loads(r.a)), int(r.b), r.c == "1")
                for r in rows
                if r.k == "r"
            ),
            None,
        )
        found = tuple(
            sorted(
                (Webhook(r.name, r.a, tuple(json.loads(r.b))) for r in rows if r.k == "h"),
                key=lambda h: h.url,
            )
        )
        return BranchRules(tuple(specs), rule, found)


def _for_branch_query(hooks: bool) -> Any:
    """Checks, the branch's rule and (``hooks``) webhooks as rows ``(k, name, a, b, c)``."""
    rid: Any = sa.bindparam("p_repo")
    branch: Any = sa.bindparam("p_branch")
    direct = sa.case((branch_rules.c.allow_direct, "1"), else_="0")
    parts = [
        sa.select(
            sa.literal("c").label("k"),
            checks.c.name,
            checks.c.spec.label("a"),
            checks.c.events.label("b"),
            checks.c.branches.label("c"),
        ).where(checks.c.repo_id == rid),
        sa.select(
            sa.literal("r").label("k"),
            branch_rules.c.branch.label("name"),
            branch_rules.c.required_checks.label("a"),
            sa.cast(branch_rules.c.required_approvals, sa.Text).label("b"),
            direct.label("c"),
        ).where(branch_rules.c.repo_id == rid, branch_rules.c.branch == branch),
    ]
    if hooks:
        parts.append(
            sa.select(
                sa.literal("h").label("k"),
                sa.cast(webhooks.c.url, sa.Text).label("name"),
                webhooks.c.secret.label("a"),
                webhooks.c.events.label("b"),
                sa.literal("").label("c"),
            ).where(webhooks.c.repo_id == rid)
        )
    return sa.union_all(*parts)


# Built once (the values go as parameters): every commit asks, and building the statement
# cost more than running it.
_FOR_BRANCH = Prepared(_for_branch_query(False))
_FOR_BRANCH_HOOKS = Prepared(_for_branch_query(True))
