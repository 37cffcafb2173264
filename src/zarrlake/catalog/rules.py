"""A repo's rules: the checks that gate commits and merges, and protected branches."""

from __future__ import annotations

import json

import sqlalchemy as sa

from zarrlake.catalog.db import Scoped
from zarrlake.catalog.schema import branch_rules, checks
from zarrlake.errors import AlreadyExistsError, NotFoundError
from zarrlake.model.rules import BranchRule, CheckSpec

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

    def for_branch(self, branch: str) -> tuple[list[CheckSpec], BranchRule | None]:
        """Every check (the caller filters by event and branch pattern) and the branch's
        protection: one statement, as every commit asks."""
        rid = self.repo_id
        direct = sa.case((branch_rules.c.allow_direct, "1"), else_="0")
        q = sa.union_all(
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
        )
        with self.db.read() as conn:
            rows = conn.execute(q).all()
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
        return specs, rule
