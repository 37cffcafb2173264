"""Shared fixtures: real catalogs (SQLite files, the PostgreSQL server) and a real S3 endpoint."""

from __future__ import annotations

import contextlib
import os
import socket
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import zarrlake

# Each test run gets a database of its own on the PostgreSQL server (created when first
# needed, dropped when the run ends): a catalog's schema version is the database's, and a run
# must never find (or leave) another run's, or another release's, tables. The controller
# names it, and pytest-xdist's workers inherit the name through the environment.
ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/test"
_RUN_DB = os.environ.setdefault("ZARRLAKE_TEST_PG_DB", f"zl_test_{uuid.uuid4().hex[:12]}")
PG_URL = os.environ.get(
    "ZARRLAKE_TEST_PG", f"postgresql+psycopg://postgres@127.0.0.1:5432/{_RUN_DB}"
)
_OWN_DB = "ZARRLAKE_TEST_PG" not in os.environ
_created: list[bool] = []


def _pg_reachable() -> bool:
    try:
        with socket.create_connection(("127.0.0.1", 5432), timeout=2):
            return True
    except OSError:
        return False


def _ensure_run_database() -> None:
    """Create this run's database on the server once (any process of the run may race)."""
    if not _OWN_DB or _created:
        return
    import psycopg

    with (
        psycopg.connect(ADMIN_URL, autocommit=True) as admin,
        contextlib.suppress(psycopg.errors.DuplicateDatabase),  # another process of the run
    ):
        admin.execute(f'CREATE DATABASE "{_RUN_DB}"')
    _created.append(True)


def _need_postgres() -> None:
    if not _pg_reachable():
        if os.environ.get("CI"):
            pytest.fail("PostgreSQL on 127.0.0.1:5432 is required in CI and is not reachable")
        pytest.skip("PostgreSQL on 127.0.0.1:5432 is not reachable")
    _ensure_run_database()


def pytest_configure(config: pytest.Config) -> None:
    """The controller makes the run's database before any worker or child needs it."""
    if not hasattr(config, "workerinput") and _pg_reachable():
        _ensure_run_database()


def pytest_sessionfinish(session: pytest.Session) -> None:
    """The controller (not an xdist worker) drops the run's database."""
    if not _OWN_DB or hasattr(session.config, "workerinput") or not _pg_reachable():
        return
    import psycopg

    with psycopg.connect(ADMIN_URL, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{_RUN_DB}" WITH (FORCE)')


# Modules whose tests each take seconds to a minute (a JVM, a browser, an environment
# installed, a documentation page run in a fresh interpreter): run first, so that the workers
# finish together rather than one running a long test alone at the end. Whole modules move,
# so a module's fixtures are still made once.
_LONG_MARKERS = ("slow", "browser")
_LONG_PATHS = ("tests/docs/", "tests/notebooks/", "tests/integration/spark/")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    def where(item: pytest.Item) -> str:
        return item.nodeid.partition("::")[0]  # the module's path from the root directory

    long = {
        where(item)
        for item in items
        if where(item).startswith(_LONG_PATHS)
        or any(item.get_closest_marker(m) is not None for m in _LONG_MARKERS)
    }
    items.sort(key=lambda item: where(item) not in long)  # stable: modules stay in order


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--stress",
        action="store_true",
        help="run the stress tests at full size (minutes; by hand, not in CI)",
    )


@pytest.fixture
def stress(request: pytest.FixtureRequest) -> bool:
    """Whether the stress tests run at full size (``--stress``)."""
    return bool(request.config.getoption("--stress"))


def unique(prefix: str = "t") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def object_files(repo: zarrlake.Repo) -> list[Path]:
    """The files of a local repo's object store, sorted."""
    return sorted(p for p in Path(repo.storage).rglob("*") if p.is_file())


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def catalog_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A catalog URL: a fresh SQLite file, or the test run's PostgreSQL database."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'catalog.db'}"
    _need_postgres()
    return PG_URL


@pytest.fixture
def make_repo(catalog_url: str, tmp_path: Path) -> Callable[..., zarrlake.Repo]:
    """Create repos with unique names in the test's catalog, chunks in a local directory."""

    def make(**kwargs: object) -> zarrlake.Repo:
        name = str(kwargs.pop("name", unique("repo")))
        storage = str(kwargs.pop("storage", tmp_path / f"objects-{name}"))
        return zarrlake.Repo.create(catalog=catalog_url, storage=storage, name=name, **kwargs)  # type: ignore[arg-type]

    return make


@pytest.fixture
def repo(make_repo: Callable[..., zarrlake.Repo]) -> zarrlake.Repo:
    return make_repo()


@pytest.fixture
def sqlite_repo(tmp_path: Path) -> zarrlake.Repo:
    """The embedded default: SQLite file + local directory."""
    return zarrlake.Repo.create(tmp_path / "lake")


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """A real S3 endpoint on loopback (moto's server mode), with a bucket named ``lake``."""
    from moto.server import ThreadedMotoServer

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    import boto3

    boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(Bucket="lake")
    try:
        yield endpoint
    finally:
        server.stop()


@pytest.fixture
def s3_options(s3_endpoint: str) -> dict[str, object]:
    return {
        "endpoint_url": s3_endpoint,
        "key": "testing",
        "secret": "testing",
        "client_kwargs": {"region_name": "us-east-1"},
        "skip_instance_cache": True,
    }


@pytest.fixture
def packs_by_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """Packs written only when full or at a flush: on a loaded machine, rows held for their
    pack could otherwise wait long enough to have it written early (one pack more), which
    tests that count packs must not see."""
    from zarrlake.session.stager import Stager

    monkeypatch.setattr(Stager, "PACK_LINGER", 600.0)
