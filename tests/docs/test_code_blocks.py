"""Every code block of the documentation runs, so the docs cannot drift from the code.

One test per page: the page's Python and shell blocks (and hidden setup blocks) run in order in
one fresh interpreter, in a temporary directory. The page sees:

- ``CATALOG`` / ``$CATALOG``: a PostgreSQL database of its own on the test server;
- ``STORAGE`` / ``$STORAGE``: a fresh prefix in a bucket of moto's S3 server on loopback, and
  ``STORAGE_OPTIONS`` (Python) / ``$S3_ENDPOINT``, ``$AWS_ACCESS_KEY_ID``,
  ``$AWS_SECRET_ACCESS_KEY`` (shell) to reach it.

Blocks that cannot run are marked ``<!-- docs-test: skip REASON -->``;
``test_skipped_blocks_are_few_and_say_why`` lists them for review.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import PG_URL, _pg_reachable
from tests.docs._blocks import Block, blocks, pages

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
RUNNER = Path(__file__).with_name("_run_page.py")

PAGES = [p for p in pages(DOCS) if any(b.skip is None for b in blocks(p, DOCS))]

PRELUDE = """\
import json as _json, os as _os
CATALOG = _os.environ["CATALOG"]
STORAGE = _os.environ["STORAGE"]
STORAGE_OPTIONS = _json.loads(_os.environ["STORAGE_OPTIONS"])
"""


@pytest.fixture
def pg_database() -> Iterator[str]:
    """A database of this test's own on the PostgreSQL server, dropped afterwards."""
    if not _pg_reachable():
        if os.environ.get("CI"):
            pytest.fail("PostgreSQL on 127.0.0.1:5432 is required in CI and is not reachable")
        pytest.skip("PostgreSQL on 127.0.0.1:5432 is not reachable")
    import psycopg
    import sqlalchemy as sa

    base = sa.make_url(PG_URL)
    name = f"zl_docs_{uuid.uuid4().hex[:12]}"
    admin = base.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield base.set(database=name).render_as_string(hide_password=False)
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def page_env(tmp_path: Path, catalog: str, s3_endpoint: str) -> dict[str, str]:
    options = {
        "endpoint_url": s3_endpoint,
        "key": "testing",
        "secret": "testing",
        "client_kwargs": {"region_name": "us-east-1"},
    }
    env = dict(os.environ)
    env.update(
        CATALOG=catalog,
        STORAGE=f"s3://lake/docs-{uuid.uuid4().hex[:12]}",
        STORAGE_OPTIONS=json.dumps(options),
        S3_ENDPOINT=s3_endpoint,
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",
        AWS_DEFAULT_REGION="us-east-1",
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        MPLBACKEND="Agg",
        HOME=str(tmp_path),  # no user config leaks in, nothing leaks out
        PYTHONPATH=str(ROOT),
    )
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


@pytest.mark.postgres
@pytest.mark.s3
@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(DOCS).as_posix() for p in PAGES])
def test_page_code_runs(page: Path, tmp_path: Path, pg_database: str, s3_endpoint: str) -> None:
    runnable = [b for b in blocks(page, DOCS) if b.skip is None]
    if any("SparkSession" in b.code for b in runnable) and shutil.which("java") is None:
        if os.environ.get("CI"):
            pytest.fail("Java is required for the Spark page's examples in CI and was not found")
        pytest.skip("Java is not installed: the Spark page's examples need a JVM")
    prelude = Block(page.relative_to(DOCS).as_posix(), 0, "setup", PRELUDE)
    spec = tmp_path / "blocks.json"
    spec.write_text(json.dumps([b.__dict__ for b in [prelude, *runnable]]))
    work = tmp_path / "work"
    work.mkdir()
    done = subprocess.run(
        [sys.executable, str(RUNNER), str(spec)],
        cwd=work,
        env=page_env(tmp_path, pg_database, s3_endpoint),
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, f"{done.stdout[-6000:]}\n{done.stderr[-6000:]}"


def test_skipped_blocks_are_few_and_say_why() -> None:
    skipped = [b for p in pages(DOCS) for b in blocks(p, DOCS) if b.skip is not None]
    runnable = [b for p in pages(DOCS) for b in blocks(p, DOCS) if b.skip is None]
    for b in skipped:
        assert len(b.skip or "") >= 10, f"{b.page}:{b.line}: say why the block cannot run"
    assert len(skipped) <= len(runnable) // 3, [f"{b.page}:{b.line}: {b.skip}" for b in skipped]


def test_markers_are_recognised() -> None:
    text = (
        "<!-- docs-test: setup\nx = 1\n-->\n\n```python\ny = x + 1\n```\n\n"
        "<!-- docs-test: skip needs a real cluster -->\n```sh\nzarrlake ui\n```\n\n```json\n{}\n```\n"
    )
    page = DOCS.parent / "tests" / "docs" / "_example.md"
    try:
        page.write_text(text)
        found = blocks(page, DOCS.parent)
    finally:
        page.unlink()
    assert [(b.kind, b.line, b.skip) for b in found] == [
        ("setup", 1, None),
        ("python", 5, None),
        ("shell", 10, "needs a real cluster"),
    ]
    assert found[0].code == "x = 1\n"
