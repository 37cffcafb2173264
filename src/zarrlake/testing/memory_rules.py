"""The rules and pull requests of :class:`zarrlake.testing.memory.MemoryCatalog`: checks and
branch protection in memory (so the commit protocol's gate runs without a database). Pull
requests need a real catalog: the memory one refuses them."""

from __future__ import annotations

import threading

from zarrlake.errors import AlreadyExistsError, CatalogError, NotFoundError
from zarrlake.model.rules import (
    BranchRule,
    BranchRules,
    CheckSpec,
    PullEvent,
    PullRecord,
    Webhook,
)

__all__ = ["MemoryPulls", "MemoryRules"]


class MemoryRules:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._checks: dict[str, CheckSpec] = {}
        self._rules: dict[str, BranchRule] = {}
        self._hooks: dict[str, Webhook] = {}

    def checks(self) -> list[CheckSpec]:
        with self._lock:
            return [self._checks[k] for k in sorted(self._checks)]

    def add_check(self, spec: CheckSpec, *, replace: bool) -> None:
        with self._lock:
            if spec.name in self._checks and not replace:
                raise AlreadyExistsError(f"a check named {spec.name!r} exists")
            self._checks[spec.name] = spec

    def remove_check(self, name: str) -> None:
        with self._lock:
            if self._checks.pop(name, None) is None:
                raise NotFoundError(f"no check named {name!r}")

    def protections(self) -> list[BranchRule]:
        with self._lock:
            return [self._rules[k] for k in sorted(self._rules)]

    def protect(self, rule: BranchRule) -> None:
        with self._lock:
            self._rules[rule.branch] = rule

    def unprotect(self, branch: str) -> None:
        with self._lock:
            if self._rules.pop(branch, None) is None:
                raise NotFoundError(f"branch {branch!r} is not protected")

    def webhooks(self) -> list[Webhook]:
        with self._lock:
            return [self._hooks[k] for k in sorted(self._hooks)]

    def add_webhook(self, hook: Webhook) -> None:
        with self._lock:
            self._hooks[hook.url] = hook

    def remove_webhook(self, url: str) -> None:
        with self._lock:
            if self._hooks.pop(url, None) is None:
                raise NotFoundError(f"no webhook at {url!r}")

    def for_branch(self, branch: str, *, hooks: bool = True) -> BranchRules:
        with self._lock:
            return BranchRules(
                tuple(self._checks[k] for k in sorted(self._checks)),
                self._rules.get(branch),
                tuple(self._hooks[k] for k in sorted(self._hooks)),
            )


class MemoryPulls:
    def _refuse(self) -> CatalogError:
        return CatalogError("the memory catalog keeps no pull requests; use a real catalog")

    def open(
        self, source: str, target: str, title: str, description: str, author: str, head: str
    ) -> PullRecord:
        raise self._refuse()

    def get(self, number: int) -> PullRecord:
        raise self._refuse()

    def by_state(self, state: str | None) -> list[PullRecord]:
        return []

    def events(self, number: int) -> list[PullEvent]:
        raise self._refuse()

    def add_event(
        self, number: int, kind: str, author: str, body: str = "", commit: str | None = None
    ) -> None:
        raise self._refuse()

    def close(self, number: int, author: str) -> None:
        raise self._refuse()
