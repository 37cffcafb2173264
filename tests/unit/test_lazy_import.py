"""``import zarrlake`` loads zarrlake's own modules and numpy only: zarr (with the first session
store or ``LakeStore``), the catalog's SQLAlchemy and its dialects (with the first repo), pandas,
xarray and the dashboard are loaded when first used. Each case runs in a fresh interpreter,
where nothing else has imported them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HEAVY = ["zarr", "sqlalchemy", "psycopg", "pandas", "xarray", "dask", "panel", "bokeh", "s3fs"]


def _run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_import_zarrlake_leaves_the_catalog_and_the_front_ends_unloaded() -> None:
    out = _run(f"import sys, zarrlake\nprint(sorted(m for m in {HEAVY!r} if m in sys.modules))\n")
    assert out.strip() == "[]"


def test_every_public_name_resolves_and_the_first_repo_loads_the_catalog(tmp_path: Path) -> None:
    out = _run(
        "import sys, zarrlake\n"
        "print('sqlalchemy' in sys.modules)\n"
        f"repo = zarrlake.Repo.create({str(tmp_path / 'lake')!r})\n"
        "print('sqlalchemy' in sys.modules, len(repo.log('main')))\n"
        "print([n for n in zarrlake.__all__ if getattr(zarrlake, n, None) is None])\n"
    )
    assert out.splitlines() == ["False", "True 1", "[]"]


def test_the_command_line_help_loads_neither_zarr_nor_the_catalog() -> None:
    out = _run(
        "import contextlib, io, sys\n"
        "from zarrlake.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as text, contextlib.suppress(SystemExit):\n"
        "    main(['--help'])\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules), 'usage: zarrlake' in text.getvalue())\n"
    )
    assert out.strip() == "[] True"


def test_lake_store_is_loaded_on_first_use() -> None:
    out = _run(
        "import sys, zarrlake\n"
        "print('zarr' in sys.modules)\n"
        "store = zarrlake.LakeStore\n"
        "print('zarr' in sys.modules, store is sys.modules['zarrlake.store'].LakeStore)\n"
    )
    assert out.splitlines() == ["False", "True True"]


def test_reading_history_leaves_zarr_unloaded_until_a_store_is_used(tmp_path: Path) -> None:
    """Opening a repo and reading its history (what ``zarrlake log`` does) loads neither zarr
    nor the webhooks' HTTP client; a session's store loads zarr."""
    lake = str(tmp_path / "lake")
    _run(
        "import zarr, zarrlake\n"
        f"repo = zarrlake.Repo.create({lake!r})\n"
        "s = repo.writable_session()\n"
        "zarr.create_array(s.store, name='a', shape=(4,), chunks=(2,), dtype='u1')[:] = 7\n"
        "s.commit('one array')\n"
    )
    out = _run(
        "import sys, zarrlake\n"
        f"repo = zarrlake.Repo.open({lake!r})\n"
        "log = repo.log('main')\n"
        "session = repo.readonly_session('main')\n"
        "print([c.message for c in log], sorted(repo.branches()))\n"
        "print('zarr' in sys.modules, 'urllib.request' in sys.modules)\n"
        "print(int(session.store is not None), 'zarr' in sys.modules)\n"
    )
    assert out.splitlines() == [
        "['one array', 'Repository initialized'] ['main']",
        "False False",
        "1 True",
    ]


def test_an_unknown_name_is_an_attribute_error() -> None:
    out = _run(
        "import zarrlake\ntry:\n    zarrlake.Rep\nexcept AttributeError as e:\n    print(e)\n"
    )
    assert out.strip() == "module 'zarrlake' has no attribute 'Rep'"


def test_an_embedded_lake_leaves_the_postgresql_dialect_unloaded(tmp_path: Path) -> None:
    """Creating, writing and committing to an embedded lake (SQLite) never loads SQLAlchemy's
    PostgreSQL dialect; a PostgreSQL catalog loads it when it is first used."""
    out = _run(
        "import sys, zarr, zarrlake\n"
        f"repo = zarrlake.Repo.create({str(tmp_path / 'lake')!r})\n"
        "s = repo.writable_session()\n"
        "zarr.create_array(s.store, name='a', shape=(4,), chunks=(2,), dtype='u1')[:] = 7\n"
        "s.commit('one array')\n"
        "print(len(repo.log('main')), 'sqlalchemy.dialects.postgresql' in sys.modules)\n"
    )
    assert out.strip() == "2 False"
