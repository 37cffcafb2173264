"""The documentation site builds in strict mode (every warning is an error), offline.

The build goes to a temporary directory; the checks look at pages a reader depends on: the API
reference lists the real public names, the concept pages carry their diagrams, the notebooks of
``notebooks/`` become pages when there are any, and no page loads a script from another host.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def build(
    site: Path, config: Path = ROOT / "mkdocs.yml", notebooks: Path | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    env.pop("ZARRLAKE_DOCS_NOTEBOOKS", None)
    if notebooks is not None:
        env["ZARRLAKE_DOCS_NOTEBOOKS"] = str(notebooks)
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def small_site(tmp_path: Path) -> Path:
    """The site's hook and notebook plugin on a two-page site (a full build takes longer)."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n")
    (docs / "tutorials.md").write_text((ROOT / "docs" / "tutorials.md").read_text())
    config = tmp_path / "mkdocs.yml"
    config.write_text(
        "site_name: t\nstrict: true\ntheme: {name: material}\n"
        f"hooks: [{ROOT / 'docs' / '_hooks.py'}]\n"
        "plugins: [{mkdocs-jupyter: {execute: false, include: ['*.ipynb'], cache: false}}]\n"
        "nav:\n  - Home: index.md\n  - Tutorials:\n      - tutorials.md\n"
    )
    return config


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    done = build(out)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "WARNING" not in done.stderr, done.stderr
    return out


def text(site: Path, page: str) -> str:
    return (site / page / "index.html").read_text(encoding="utf-8")


def test_key_pages_exist(site: Path) -> None:
    assert (site / "index.html").is_file()
    for page in [
        "getting-started",
        "concepts",
        "storage-layout",
        "architecture",
        "guarantees",
        "setups",
        "xarray",
        "dask",
        "spark",
        "dashboard",
        "operations",
        "benchmarks",
        "comparison",
        "tutorials",
        "api",
        "api/repo",
        "api/session",
    ]:
        assert (site / page / "index.html").is_file(), page


def test_api_reference_lists_real_public_names(site: Path) -> None:
    import zarrlake

    repo = text(site, "api/repo")
    assert 'id="zarrlake.Repo"' in repo
    for method in [
        "create",
        "open",
        "writable_session",
        "readonly_session",
        "log",
        "diff",
        "merge",
    ]:
        assert getattr(zarrlake.Repo, method)
        assert f'id="zarrlake.Repo.{method}"' in repo, method
    session = text(site, "api/session")
    for name in ["WritableSession", "ReadonlySession", "Session", "LakeStore", "SessionInfo"]:
        assert hasattr(zarrlake, name)
        assert f'id="zarrlake.{name}"' in session, name
    assert 'id="zarrlake.WritableSession.commit"' in session
    errors = text(site, "api/errors")
    for name in ["ZarrlakeError", "ConflictError", "Conflict", "NotFoundError"]:
        assert f'id="zarrlake.errors.{name}"' in errors, name


def test_diagrams_are_drawn_by_the_local_mermaid(site: Path) -> None:
    for page in ["concepts", "storage-layout"]:
        assert '<pre class="mermaid"><code>' in text(site, page), page
    assert (site / "assets" / "javascripts" / "mermaid.min.js").stat().st_size > 100_000
    assert "assets/javascripts/mermaid.min.js" in text(site, "concepts")


def test_no_page_loads_a_script_from_another_host(site: Path) -> None:
    remote = re.compile(r"<script[^>]+src=\"(https?:)?//", re.IGNORECASE)
    for page in site.rglob("*.html"):
        assert not remote.search(page.read_text(encoding="utf-8")), page


def test_benchmark_page_shows_the_plots_of_a_real_run(site: Path) -> None:
    page = text(site, "benchmarks")
    for png in ["write_read.png", "history.png", "xarray.png"]:
        assert png in page
        assert (site / "assets" / "bench" / png).is_file()
    run = json.loads((ROOT / "docs" / "assets" / "bench" / "quick.json").read_text())
    assert run["results"], "the plotted run has no results"


def test_notebooks_render_when_present(tmp_path: Path) -> None:
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    cell = {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": []}
    nb = {
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": ["# Quickstart\n", "A lake."]},
            {**cell, "source": ["import zarrlake\n", "print(zarrlake.__version__)"]},
        ],
        "metadata": {
            "kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"}
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (notebooks / "01_quickstart.ipynb").write_text(json.dumps(nb))
    out = tmp_path / "site"
    done = build(out, small_site(tmp_path), notebooks)
    assert done.returncode == 0, done.stdout + done.stderr
    page = out / "notebooks" / "01_quickstart" / "index.html"
    assert page.is_file()
    assert "zarrlake.__version__" in page.read_text(encoding="utf-8")
    assert "notebooks/01_quickstart/" in (out / "tutorials" / "index.html").read_text()


def test_no_notebooks_is_not_an_error(tmp_path: Path) -> None:
    out = tmp_path / "site"
    done = build(out, small_site(tmp_path), tmp_path / "absent")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "No tutorial notebook" in (out / "tutorials" / "index.html").read_text()


def test_dashboard_page_shows_a_screenshot_of_every_page(site: Path) -> None:
    import struct

    page = text(site, "dashboard")
    shown = re.findall(r'src="[./]*assets/screens/([a-z]+)-(light|dark)\.png"', page)
    assert {name for name, _ in shown} == {
        "overview", "history", "compare", "merge", "data", "sessions"
    }  # fmt: skip
    for name, theme in shown:
        png = (site / "assets" / "screens" / f"{name}-{theme}.png").read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n", name
        assert struct.unpack(">II", png[16:24]) == (1440, 900), name
