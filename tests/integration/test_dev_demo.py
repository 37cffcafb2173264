"""``./dev demo`` on a fresh environment: it says what it installs, installs zarrlake with the
``ui`` extra only (no test, docs or Spark tools), and hands its arguments to ``zarrlake
demo``, whose options are the ones its messages suggest."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


def test_dev_demo_installs_only_the_ui_extra_and_says_so(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    # no bytecode compilation of the whole environment (./dev asks for it unless told
    # otherwise): it is most of the install's time, and what is installed is what is checked
    env = {**os.environ, "UV_PROJECT_ENVIRONMENT": str(venv), "UV_COMPILE_BYTECODE": "0"}
    done = subprocess.run(
        [str(ROOT / "dev"), "demo", "--help"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert lines[0].startswith("./dev demo: installing zarrlake and its ui extra into .venv")
    assert any(line.startswith("Installed ") and "packages" in line for line in lines)
    assert "usage: zarrlake demo" in done.stdout
    assert "--allow-writes" in done.stdout  # what the served demo suggests
    site = next(venv.glob("lib/python3*/site-packages"))
    installed = {p.name.split("-")[0].lower() for p in site.glob("*.dist-info")}
    assert {"panel", "xarray", "ipywidgets", "zarrlake"} <= installed
    assert not installed & {"pyspark", "jupyterlab", "playwright", "mkdocs", "pytest", "dask"}
