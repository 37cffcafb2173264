"""Running checks on a proposed commit or merge: the built-in ones, and custom ones found by
name in the ``zarrlake.checks`` entry point group. Each check runs in a thread of its own
with its timeout: one that raises or does not answer in time failed."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from zarrlake.core.proposal import Proposal
from zarrlake.errors import CheckFailure, InvalidInputError
from zarrlake.model.rules import CheckResult, CheckSpec

__all__ = ["ENTRY_POINT_GROUP", "find_custom", "run_checks"]

ENTRY_POINT_GROUP = "zarrlake.checks"
_SHOWN = 20  # chunks listed per array in a result


def find_custom(name: str) -> Callable[[Proposal], Any]:
    """The custom check registered under ``name``; :class:`InvalidInputError` naming the
    registered ones if there is none."""
    from importlib.metadata import entry_points  # only custom checks need the metadata

    found = [ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name == name]
    if not found:
        known = sorted(ep.name for ep in entry_points(group=ENTRY_POINT_GROUP))
        raise InvalidInputError(
            f"no check {name!r} is registered in the {ENTRY_POINT_GROUP!r} entry point group "
            f"(registered: {', '.join(known) or 'none'}); install the package that provides it"
        )
    fn = found[0].load()
    if not callable(fn):
        raise InvalidInputError(f"entry point {name!r} of {ENTRY_POINT_GROUP!r} is not callable")
    return fn  # type: ignore[no-any-return]


def _bad_chunks(
    p: Proposal, spec: CheckSpec, bad: Callable[[np.ndarray], bool]
) -> dict[str, tuple[tuple[int, ...], ...]]:
    found: dict[str, list[tuple[int, ...]]] = {}
    for path in p.arrays():
        if not spec.covers(path):
            continue
        for coords, values in p.changed_chunks(path):
            if bad(values):
                found.setdefault(path, []).append(coords)
    return {k: tuple(v[:_SHOWN]) for k, v in found.items()}


def _no_nan(p: Proposal, spec: CheckSpec) -> CheckResult:
    def has_nan(v: np.ndarray) -> bool:
        return v.dtype.kind in "fc" and bool(np.isnan(v).any())

    bad = _bad_chunks(p, spec, has_nan)
    if not bad:
        return CheckResult(spec.name, True, "no NaN in the changed chunks")
    n = sum(len(c) for c in bad.values())
    return CheckResult(
        spec.name, False, f"NaN in {n} changed chunk{'' if n == 1 else 's'}", tuple(bad), bad
    )


def _value_range(p: Proposal, spec: CheckSpec) -> CheckResult:
    low, high = spec.params.get("min"), spec.params.get("max")

    def outside(v: np.ndarray) -> bool:
        if v.dtype.kind not in "iuf" or v.size == 0:
            return False
        if v.dtype.kind == "f":
            v = v[~np.isnan(v)]
            if v.size == 0:
                return False
        return bool((low is not None and v.min() < low) or (high is not None and v.max() > high))

    bad = _bad_chunks(p, spec, outside)
    if not bad:
        return CheckResult(spec.name, True, f"values within [{low}, {high}]")
    n = sum(len(c) for c in bad.values())
    return CheckResult(
        spec.name,
        False,
        f"values outside [{low}, {high}] in {n} changed chunk{'' if n == 1 else 's'}",
        tuple(bad),
        bad,
    )


def _required_attributes(p: Proposal, spec: CheckSpec) -> CheckResult:
    need = list(spec.params["attributes"])
    missing: dict[str, list[str]] = {}
    for path in p.arrays():
        if not spec.covers(path) or p.changes[path].deleted:
            continue
        have = p.attributes(path)
        lack = [a for a in need if a not in have]
        if lack:
            missing[path] = lack
    if not missing:
        return CheckResult(spec.name, True, f"attributes {', '.join(need)} present")
    what = "; ".join(f"{path} lacks {', '.join(a)}" for path, a in sorted(missing.items()))
    return CheckResult(spec.name, False, f"missing attributes: {what}", tuple(sorted(missing)))


_FROZEN = ("dimension_names", "data_type", "chunk_grid")


def _frozen_schema(p: Proposal, spec: CheckSpec) -> CheckResult:
    problems: dict[str, str] = {}
    for path in p.arrays():
        change = p.changes[path]
        if not spec.covers(path) or (change.created and not change.deleted):
            continue
        old = p.metadata(path, before=True)
        if old is None or old.get("node_type") != "array":
            continue
        new = p.metadata(path)
        if new is None:
            problems[path] = "deleted"
            continue
        fields = [f for f in _FROZEN if old.get(f) != new.get(f)]
        if fields:
            problems[path] = f"changed {', '.join(fields)}"
    if not problems:
        return CheckResult(spec.name, True, "dims, dtype and chunk grid unchanged")
    what = "; ".join(f"{path} {why}" for path, why in sorted(problems.items()))
    return CheckResult(spec.name, False, f"frozen schema: {what}", tuple(sorted(problems)))


def _max_chunks(p: Proposal, spec: CheckSpec) -> CheckResult:
    limit = int(spec.params["limit"])
    over = {
        path: len(p.changes[path].chunks)
        for path in p.arrays()
        if spec.covers(path) and len(p.changes[path].chunks) > limit
    }
    if not over:
        return CheckResult(spec.name, True, f"at most {limit} changed chunks per array")
    what = ", ".join(f"{path}: {n}" for path, n in sorted(over.items()))
    return CheckResult(
        spec.name, False, f"more than {limit} changed chunks ({what})", tuple(sorted(over))
    )


def _custom(p: Proposal, spec: CheckSpec) -> CheckResult:
    params = {k: v for k, v in spec.params.items() if k != "entry_point"}
    out = find_custom(str(spec.params["entry_point"]))(p.with_params(params))
    if out is None or out is True:
        return CheckResult(spec.name, True, "passed")
    if out is False:
        return CheckResult(spec.name, False, "failed")
    if isinstance(out, CheckFailure):
        chunks = dict(out.chunks or {})
        return CheckResult(spec.name, False, out.message, out.arrays or tuple(chunks), chunks)
    return CheckResult(spec.name, False, str(out))


_BUILTIN: dict[str, Callable[[Proposal, CheckSpec], CheckResult]] = {
    "no_nan": _no_nan,
    "value_range": _value_range,
    "required_attributes": _required_attributes,
    "frozen_schema": _frozen_schema,
    "max_chunks": _max_chunks,
    "custom": _custom,
}


def _run_one(p: Proposal, spec: CheckSpec, out: dict[str, CheckResult]) -> None:
    start = time.perf_counter()
    try:
        fn = _BUILTIN.get(spec.kind)
        if fn is None:
            raise InvalidInputError(f"unknown check kind {spec.kind!r}")
        res = fn(p, spec)
    except Exception as exc:  # a check that raises failed; the message says how
        res = CheckResult(spec.name, False, f"the check raised {type(exc).__name__}: {exc}")
    out[spec.name] = CheckResult(
        res.name, res.passed, res.message, res.arrays, res.chunks, time.perf_counter() - start
    )


def run_checks(p: Proposal, specs: Sequence[CheckSpec]) -> list[CheckResult]:
    """Run ``specs`` on ``p``, each with its timeout; results in the order of ``specs``."""
    out: dict[str, CheckResult] = {}
    threads = []
    for spec in specs:
        t = threading.Thread(
            target=_run_one, args=(p, spec, out), name=f"check-{spec.name}", daemon=True
        )
        t.start()
        threads.append((spec, t, time.monotonic() + spec.timeout))
    results = []
    for spec, t, deadline in threads:
        t.join(max(0.0, deadline - time.monotonic()))
        if t.is_alive() or spec.name not in out:
            results.append(
                CheckResult(spec.name, False, f"the check did not finish within {spec.timeout:g} s")
            )
        else:
            results.append(out[spec.name])
    return results
