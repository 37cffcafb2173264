"""``import zarrlake`` loads a few of zarrlake's own modules only: zarr (with the first session
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


def _lake_of_one_array(tmp_path: Path, then: str = "") -> str:
    """A lake whose ``main`` holds array ``a`` (four 7s), made in a process of its own; ``then``
    runs after the commit (with ``repo`` at hand)."""
    lake = str(tmp_path / "lake")
    _run(
        "import pickle, zarr, zarrlake\n"
        f"repo = zarrlake.Repo.create({lake!r})\n"
        "s = repo.writable_session()\n"
        "zarr.create_array(s.store, name='a', shape=(4,), chunks=(2,), dtype='u1')[:] = 7\n"
        "s.commit('one array')\n" + then
    )
    return lake


def test_import_zarrlake_leaves_the_catalog_and_the_front_ends_unloaded() -> None:
    heavy = ["numpy", *HEAVY]
    out = _run(f"import sys, zarrlake\nprint(sorted(m for m in {heavy!r} if m in sys.modules))\n")
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
    lake = _lake_of_one_array(tmp_path)
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


# What reading a dataset never needs: writing, merging, review, maintenance, importing and
# the reprs (each loads when first used).
UNNEEDED_TO_READ = [
    "zarrlake.catalog.gc",
    "zarrlake.catalog.migrations",
    "zarrlake.catalog.pulls",
    "zarrlake.catalog.rules",
    "zarrlake.catalog.sessions",
    "zarrlake.catalog.writer",
    "zarrlake.core.checks",
    "zarrlake.core.commit",
    "zarrlake.core.gate",
    "zarrlake.display.chunkmap",
    "zarrlake.display.commits",
    "zarrlake.history.merging",
    "zarrlake.maintenance",
    "zarrlake.model.conflicts",
    "zarrlake.model.diff",
    "zarrlake.model.merge",
    "zarrlake.model.rules",
    "zarrlake.review.feed",
    "zarrlake.review.pulls",
    "zarrlake.session.writable",
    "zarrlake.virtual.zarr_import",
]


def test_reading_an_array_loads_none_of_the_writing_review_or_maintenance_layers(
    tmp_path: Path,
) -> None:
    lake = _lake_of_one_array(tmp_path)
    out = _run(
        "import sys, zarr, zarrlake\n"
        f"repo = zarrlake.Repo.open({lake!r})\n"
        "values = zarr.open_array(repo.readonly_session('main').store, path='a', mode='r')[:]\n"
        "print(values.tolist(), repo.log('main')[0].message)\n"
        f"print([m for m in {UNNEEDED_TO_READ!r} if m in sys.modules])\n"
    )
    assert out.splitlines() == ["[7, 7, 7, 7] one array", "[]"]


def test_each_name_a_package_re_exports_loads_on_first_use() -> None:
    """The packages whose names load on first use give each name of their ``__all__`` (and
    list it in ``dir``) from the module that defines it."""
    packages = ["core", "display", "history", "model", "review", "session", "virtual"]
    out = _run(
        "import importlib\n"
        f"for name in {packages!r}:\n"
        "    pkg = importlib.import_module('zarrlake.' + name)\n"
        "    missing = [n for n in pkg.__all__ if n not in dir(pkg) or getattr(pkg, n) is None]\n"
        "    modules = {type(getattr(pkg, n)).__name__ for n in pkg.__all__}\n"
        "    print(name, len(pkg.__all__), missing, 'module' in modules)\n"
    )
    rows = [line.split(" ", 2) for line in out.splitlines()]
    assert [r[0] for r in rows] == packages
    assert all(int(r[1]) > 0 and r[2] == "[] False" for r in rows), out


def test_a_store_unpickled_in_a_fresh_process_opens_its_session(tmp_path: Path) -> None:
    """A shipped store (as a dask worker receives it) finds its session in a process that
    imported nothing of zarrlake before: unpickling it loads the session registry too."""
    shipped = tmp_path / "store.pickle"
    _lake_of_one_array(
        tmp_path,
        then=(
            "s = repo.writable_session()\n"
            f"open({str(shipped)!r}, 'wb').write(pickle.dumps(s.store))\n"
        ),
    )
    out = _run(
        "import pickle, zarr\n"
        f"store = pickle.loads(open({str(shipped)!r}, 'rb').read())\n"
        "print(zarr.open_array(store, path='a', mode='r')[:].tolist(), store.session.read_only)\n"
    )
    assert out.strip() == "[7, 7, 7, 7] False"
