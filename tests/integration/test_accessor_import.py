"""``ds.lake`` exists whenever xarray is importable, in either import order, and ``import
zarrlake`` alone does not import xarray. Each case runs in a fresh interpreter."""

from __future__ import annotations

import subprocess
import sys

import pytest

ACCESSOR = "print(type(xarray.Dataset({'a': ('x', [1, 2])}).lake).__name__)"


def _run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.parametrize(
    "imports", ["import zarrlake\nimport xarray", "import xarray\nimport zarrlake"]
)
def test_accessor_is_there_in_either_import_order(imports: str) -> None:
    assert _run(f"{imports}\n{ACCESSOR}") == "LakeAccessor"


def test_accessor_is_there_when_xarray_comes_in_through_another_package() -> None:
    # xarray imported as a dependency of something else, after zarrlake
    assert _run(f"import zarrlake\nimport xarray.core.dataset\nimport xarray\n{ACCESSOR}") == (
        "LakeAccessor"
    )


def test_import_zarrlake_alone_does_not_import_xarray() -> None:
    out = _run("import sys, zarrlake\nprint('xarray' in sys.modules, 'pandas' in sys.modules)")
    assert out == "False False"


HEAVY = "print(sorted(m for m in ('sqlalchemy', 'zarrlake.repo', 'zarrlake.catalog') if m in sys.modules))"


@pytest.mark.parametrize(
    "imports", ["import zarrlake\nimport xarray", "import xarray\nimport zarrlake"]
)
def test_registering_the_accessor_loads_no_catalog(imports: str) -> None:
    """``ds.lake`` is registered (and its repr shown) without the catalog, which its first
    method that reads or writes a lake loads."""
    out = _run(
        f"import sys\n{imports}\n{ACCESSOR}\n"
        "print(repr(xarray.Dataset().lake).split(';')[0])\n"
        f"{HEAVY}\n"
    )
    assert out.splitlines() == ["LakeAccessor", "<ds.lake: not from a lake", "[]"]


def test_listing_xarrays_engines_loads_no_catalog() -> None:
    """xarray loads every installed engine's entry point whenever it opens a file: listing
    them (as ``xr.open_dataset`` of any file does) must not load zarrlake's catalog."""
    out = _run(
        f"import sys, xarray\nprint('zarrlake' in xarray.backends.list_engines())\n{HEAVY}\n"
    )
    assert out.splitlines() == ["True", "[]"]
