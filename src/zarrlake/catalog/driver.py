"""Catalog transactions on the database driver's own connection, and statements compiled once.

A transaction through SQLAlchemy's ``Connection`` costs about 70 microseconds of Python before
and after its statements (checkout, begin and commit events, the transaction objects), and
each statement about 35 (cache key, execution context, result metadata), against 3 for the
driver itself: a one-chunk commit sends 14 statements in 5 transactions on SQLite, so
SQLAlchemy cost more than the database did. Here a transaction takes a pooled connection and
begins and ends it on the driver, and a :class:`Prepared` statement (built once at import,
compiled once per dialect) goes straight to the driver's cursor. Any other statement is sent
through a SQLAlchemy connection made on demand over the same driver connection, in the same
transaction, so the two kinds mix freely.

A statement is prepared only if running it needs nothing from SQLAlchemy beyond its SQL text:
no parameter expanded at execution (``IN`` lists), no default computed in Python, no name
escaped. Parameter and result conversions of its types are applied here; anything else is sent
through SQLAlchemy as before (:meth:`Prepared.form` tells which), and so are many rows at once
on PostgreSQL, which SQLAlchemy sends in few statements.
"""

from __future__ import annotations

import collections
import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Protocol, overload

import sqlalchemy as sa
from sqlalchemy.engine import CursorResult
from sqlalchemy.sql.expression import Executable

__all__ = ["DriverTx", "Prepared", "Rows", "Watcher", "transaction"]

Watcher = Callable[[str, Any], None]
"""Told each statement sent (its SQL text and parameters): statement counts in tests and in
``bench/``."""


class _Form:
    """A statement's compiled form for one dialect."""

    __slots__ = ("_results", "binds", "defaults", "keys", "names", "sql", "types")

    def __init__(
        self,
        sql: str,
        names: tuple[str, ...] | None,
        defaults: dict[str, Any],
        binds: dict[str, Callable[[Any], Any]],
        types: tuple[Any, ...],
    ) -> None:
        self.sql = sql
        self.names = names  # positional drivers: the parameters' order
        self.defaults = defaults  # values bound in the statement itself (literals)
        self.binds = binds  # parameter conversions of the types
        self.types = types  # the result's column types
        self.keys: tuple[str, ...] = ()  # the result's column names, from the first result
        self._results: tuple[tuple[int, Callable[[Any], Any]], ...] | None = None

    def results(self, dialect: sa.Dialect, description: Any) -> tuple[tuple[int, Any], ...]:
        """The result conversions of the types, by position (made from the first result:
        some depend on the type the database reports)."""
        if self._results is None:
            found = []
            for i, (type_, col) in enumerate(zip(self.types, description, strict=False)):
                proc = type_.dialect_impl(dialect).result_processor(dialect, col[1])
                if proc is not None:
                    found.append((i, proc))
            self._results = tuple(found)
        return self._results


def _compile(statement: Any, dialect: sa.Dialect, keys: tuple[str, ...] | None) -> _Form | None:
    compiled: Any = statement.compile(dialect=dialect, column_keys=keys)
    if (
        compiled.literal_execute_params
        or compiled.post_compile_params
        or compiled.escaped_bind_names
        or getattr(compiled, "insert_prefetch", None)
        or getattr(compiled, "update_prefetch", None)
    ):
        return None
    defaults: dict[str, Any] = {}
    binds: dict[str, Callable[[Any], Any]] = {}
    for name, bind in compiled.binds.items():
        if bind.expanding or bind.callable is not None:
            return None
        if not bind.required:
            defaults[name] = bind.value
        proc = bind.type.dialect_impl(dialect).bind_processor(dialect)
        if proc is not None:
            binds[name] = proc
    columns = list(getattr(statement, "exported_columns", ()))
    names = tuple(compiled.positiontup) if compiled.positiontup is not None else None
    form = _Form(str(compiled), names, defaults, binds, tuple(c.type for c in columns))
    form.keys = tuple(str(c.key) for c in columns)
    return form


class Prepared:
    """A statement built once (its values bound at execution), compiled once per dialect."""

    __slots__ = ("_dml", "_forms", "statement")

    def __init__(self, statement: Any) -> None:
        self.statement = statement
        # An INSERT or UPDATE sets the columns its parameters name (as in SQLAlchemy): its
        # form depends on which they are.
        self._dml = isinstance(statement, (sa.Insert, sa.Update))
        self._forms: dict[tuple[Any, ...], _Form | None] = {}

    def form(self, dialect: sa.Dialect, params: Any = None) -> _Form | None:
        """The compiled form for ``dialect`` (and, for an INSERT or UPDATE, the names of
        ``params``: a mapping or a list of them); ``None`` if it must go through SQLAlchemy."""
        keys = None
        if self._dml and params:
            keys = tuple(sorted(params[0] if isinstance(params, list) else params))
        key = (dialect.name, dialect.driver, keys)
        try:
            return self._forms[key]
        except KeyError:
            found = self._forms[key] = _compile(self.statement, dialect, keys)
            return found


class Rows(Protocol):
    """What a statement returns, from either path (the subset of SQLAlchemy's result used)."""

    @property
    def rowcount(self) -> int: ...
    def __iter__(self) -> Iterator[Any]: ...
    def one(self) -> Any: ...
    def first(self) -> Any: ...
    def all(self) -> Sequence[Any]: ...
    def scalar(self) -> Any: ...
    def scalar_one(self) -> Any: ...


_ROW_TYPES: dict[tuple[str, ...], Any] = {}


def _row_type(keys: tuple[str, ...]) -> Any:
    try:
        return _ROW_TYPES[keys]
    except KeyError:
        made = _ROW_TYPES[keys] = collections.namedtuple("Row", keys, rename=True)
        return made


class _Result:
    """A driver cursor's rows, converted and named as SQLAlchemy's would be."""

    __slots__ = ("_convert", "_cursor", "rowcount")

    def __init__(self, cursor: Any, form: _Form, dialect: sa.Dialect) -> None:
        self._cursor = cursor
        self.rowcount = int(cursor.rowcount)
        make: Callable[[Sequence[Any]], Any] = tuple
        if form.keys:
            row = _row_type(form.keys)

            def make(raw: Sequence[Any]) -> Any:
                return row(*raw)

        description = cursor.description
        results = form.results(dialect, description) if description else ()
        if results:

            def convert(raw: Sequence[Any]) -> Any:
                row = list(raw)
                for i, proc in results:
                    row[i] = proc(row[i])
                return make(row)

            self._convert: Callable[[Sequence[Any]], Any] = convert
        else:
            self._convert = make

    def __iter__(self) -> Iterator[Any]:
        """The rows one at a time, as the driver steps through them (a caller that keeps
        less than every row holds less: a commit streams its staged rows)."""
        convert = self._convert
        for raw in self._cursor:
            yield convert(raw)

    def all(self) -> list[Any]:
        convert = self._convert
        return [convert(raw) for raw in self._cursor.fetchall()]

    def first(self) -> Any:
        """The first row (the rest are discarded, as SQLAlchemy's ``first``)."""
        raw = self._cursor.fetchone()
        self._cursor.close()
        return None if raw is None else self._convert(raw)

    def one(self) -> Any:
        rows = self.all()
        if not rows:
            raise sa.exc.NoResultFound("No row was found when one was required")
        if len(rows) > 1:
            raise sa.exc.MultipleResultsFound(
                "Multiple rows were found when exactly one was required"
            )
        return rows[0]

    def scalar(self) -> Any:
        row = self.first()
        return None if row is None else row[0]

    def scalar_one(self) -> Any:
        return self.one()[0]

    def scalars(self) -> Iterator[Any]:
        return (row[0] for row in self)


class DriverTx:
    """One transaction (or one statement: ``single``) on a pooled driver connection."""

    def __init__(self, engine: sa.Engine, watchers: Sequence[Watcher]) -> None:
        self.engine = engine
        self.dialect = engine.dialect
        self._pooled: Any = engine.raw_connection()
        self.driver: Any = self._pooled.driver_connection
        self._watchers = watchers
        self._sa: sa.Connection | None = None
        self._cursors: list[Any] = []  # closed with the transaction (a read not stepped to
        # its end would otherwise hold SQLite's snapshot on the pooled connection)

    @property
    def sa(self) -> sa.Connection:
        """A SQLAlchemy connection in this same transaction (made on first use)."""
        if self._sa is None:
            conn = sa.Connection(self.engine, connection=self._pooled)
            if self.dialect.name == "sqlite":
                conn = conn.execution_options(zl_single=True)  # the driver began it already
            self._sa = conn
        return self._sa

    @overload
    def execute(self, statement: Prepared, params: Any = None) -> Rows: ...
    @overload
    def execute(self, statement: Executable, params: Any = None) -> CursorResult[Any]: ...

    def execute(self, statement: Any, params: Any = None) -> Any:
        """Run a statement with ``params`` (a mapping, or a list of them for many rows)."""
        if isinstance(params, list) and len(params) <= 1:
            # as SQLAlchemy: no rows is one execution without parameters, one row is one
            params = params[0] if params else None
        if isinstance(statement, Prepared):
            form = statement.form(self.dialect, params)
            # many rows go through SQLAlchemy on PostgreSQL, which sends them in few statements
            many = isinstance(params, list)
            if form is not None and not (many and self.dialect.name != "sqlite"):
                return self._run(form, params)
            statement = statement.statement
        return self.sa.execute(statement, params)

    def send(self, sql: str) -> None:
        """Send SQL text of the driver's own (``BEGIN IMMEDIATE``)."""
        for watch in self._watchers:
            watch(sql, ())
        self._cursor_call(lambda cur: cur.execute(sql))

    def _run(self, form: _Form, params: Any) -> _Result:
        """Send ``form`` with ``params``: a mapping, or a list of several (``executemany``)."""
        if isinstance(params, list):
            rows = [self._bound(form, p) for p in params]
            for watch in self._watchers:
                watch(form.sql, rows)
            cursor = self._cursor_call(lambda cur: cur.executemany(form.sql, rows))
        else:
            bound = self._bound(form, params)
            for watch in self._watchers:
                watch(form.sql, bound)
            cursor = self._cursor_call(lambda cur: cur.execute(form.sql, bound))
        return _Result(cursor, form, self.dialect)

    @staticmethod
    def _bound(form: _Form, params: Mapping[str, Any] | None) -> Any:
        values = {**form.defaults, **params} if params else dict(form.defaults)
        for name, proc in form.binds.items():
            if name in values:
                values[name] = proc(values[name])
        if form.names is None:
            return values
        return tuple(values[n] for n in form.names)

    def _cursor_call(self, call: Callable[[Any], Any]) -> Any:
        cursor = self.driver.cursor()
        self._cursors.append(cursor)
        try:
            call(cursor)
        except self.dialect.loaded_dbapi.Error as exc:
            if self.dialect.is_disconnect(exc, self.driver, cursor):
                self._pooled.invalidate(exc)
            raise
        return cursor

    def live(self) -> bool:
        """Whether the driver connection is still the pool's (not invalidated by an error)."""
        return self._pooled.driver_connection is self.driver

    def close(self) -> None:
        for cursor in self._cursors:
            with contextlib.suppress(self.dialect.loaded_dbapi.Error):
                cursor.close()
        if self._sa is not None:
            self._sa.close()  # returns the pooled connection too
        else:
            self._pooled.close()


@contextmanager
def transaction(
    engine: sa.Engine, *, write: bool, single: bool, watchers: Sequence[Watcher]
) -> Iterator[DriverTx]:
    """A transaction on the driver's connection: committed if the block ends, rolled back if
    it raises. ``single``: one statement outside any explicit transaction (SQLite without
    ``BEGIN``, PostgreSQL in autocommit), atomic by itself; ``write``: SQLite takes the write
    lock at ``BEGIN IMMEDIATE`` (a writer that reads first could deadlock otherwise)."""
    tx = DriverTx(engine, watchers)
    sqlite = engine.dialect.name == "sqlite"
    try:
        if single:
            if not sqlite:
                tx.driver.autocommit = True
        elif sqlite:
            tx.send("BEGIN IMMEDIATE" if write else "BEGIN")
        yield tx
        if not single:
            tx.driver.commit()
    except BaseException:
        if not single:
            _rollback(tx)
        raise
    finally:
        try:
            if single and not sqlite and tx.live():
                tx.driver.autocommit = False
        finally:
            tx.close()


def _rollback(tx: DriverTx) -> None:
    if not tx.live():  # invalidated: the pool drops it, the database ends the transaction
        return
    with contextlib.suppress(tx.dialect.loaded_dbapi.Error):  # gone: the database ends it
        tx.driver.rollback()
