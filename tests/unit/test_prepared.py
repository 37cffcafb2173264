"""Every statement the catalog prepares compiles to the driver's form on both dialects, so
none falls back to SQLAlchemy unnoticed (an ``IN (...)`` of a list, a default computed in
Python, would: zarrlake.catalog.driver)."""

from __future__ import annotations

import importlib
import inspect
import itertools
import pkgutil
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import sqlite
from sqlalchemy.dialects.postgresql import psycopg

import zarrlake.catalog
from zarrlake.catalog.driver import Prepared

DIALECTS = {"sqlite": sqlite.dialect(), "postgresql": psycopg.dialect()}


def _catalog_modules() -> list[Any]:
    return [
        importlib.import_module(f"zarrlake.catalog.{info.name}")
        for info in pkgutil.iter_modules(zarrlake.catalog.__path__)
    ]


def _module_statements() -> dict[str, Prepared]:
    """The statements built at import: module attributes (or dicts of them)."""
    found: dict[str, Prepared] = {}
    for module in _catalog_modules():
        for name, value in vars(module).items():
            values = value.values() if isinstance(value, dict) else [value]
            for i, v in enumerate(values):
                if isinstance(v, Prepared):
                    found[f"{module.__name__}.{name}[{i}]"] = v
    return found


def _arguments(parameter: inspect.Parameter, dialect: str) -> list[Any]:
    """The values a statement factory's parameter takes, by its name and annotation."""
    kind = str(parameter.annotation)
    if kind == "bool":
        return [False, True]
    if kind == "int":
        return [1, 5]
    if parameter.name in ("dialect", "clock"):
        return [dialect] if kind == "str" else [None, dialect]
    raise AssertionError(f"a statement factory's parameter {parameter} has no values here")


def _built_statements(dialect: str) -> dict[str, Prepared]:
    """The statements built on first use, once per shape: every function of the catalog
    that returns a :class:`Prepared`, called with every shape (PostgreSQL's forms only on
    PostgreSQL)."""
    built: dict[str, Prepared] = {}
    for module in _catalog_modules():
        for name, fn in vars(module).items():
            target = getattr(fn, "__wrapped__", fn)
            if not inspect.isfunction(target) or target.__module__ != module.__name__:
                continue
            sig = inspect.signature(target)
            if str(sig.return_annotation) != "Prepared":
                continue
            if "pg" in name and dialect != "postgresql":
                continue
            domains = [_arguments(p, dialect) for p in sig.parameters.values()]
            for args in itertools.product(*domains):
                built[f"{module.__name__}.{name}{args}"] = fn(*args)
    return built


def test_the_catalog_prepares_its_hot_statements() -> None:
    """The finders above find the commit's statements (else the test below checks nothing)."""
    names = {n.removeprefix("zarrlake.catalog.") for n in _module_statements()}
    for expected in (
        "publish.MOVE_BRANCH[0]",
        "sessions._INSERT_SESSION[0]",
        "rules._FOR_BRANCH[0]",
    ):
        assert expected in names
    built = {n.removeprefix("zarrlake.catalog.") for n in _built_statements("postgresql")}
    for expected in (
        "publish.pg_publish(True, True, True)",
        "publish.preflight('postgresql', True, False)",
        "sessions._open_session_pg()",
        "rows.prepared_head('postgresql',)",
    ):
        assert expected in built


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
def test_every_prepared_statement_compiles_for_the_driver(dialect: str) -> None:
    d = DIALECTS[dialect]
    statements = {**_module_statements(), **_built_statements(dialect)}
    refused = []
    for name, p in statements.items():
        if dialect == "postgresql" and name == "zarrlake.catalog.publish.INSERT_KEY[0]":
            continue  # SQLite's form of the statement (PostgreSQL records keys in pg_publish)
        if p.form(d) is None:
            refused.append(name)
    assert refused == []


def test_a_list_parameter_is_refused() -> None:
    t = sa.table("t", sa.column("k"))
    assert Prepared(sa.select(t.c.k).where(t.c.k.in_(["a", "b"]))).form(DIALECTS["sqlite"]) is None
    assert Prepared(sa.select(t.c.k).where(t.c.k == "a")).form(DIALECTS["sqlite"]) is not None


def test_a_python_side_default_is_refused() -> None:
    m = sa.MetaData()
    t = sa.Table(
        "t", m, sa.Column("k", sa.String, primary_key=True), sa.Column("n", sa.Integer, default=5)
    )
    form: Any = Prepared(sa.insert(t)).form(DIALECTS["sqlite"], {"k": "a"})
    assert form is None
    assert Prepared(sa.insert(t)).form(DIALECTS["sqlite"], {"k": "a", "n": 1}) is not None
