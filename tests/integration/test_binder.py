"""``binder/``: what repo2docker (and so Binder) builds from this repository.

Two checks, both without Docker: repo2docker reads ``binder/`` and writes the build it would
run (``--no-build --no-run --debug`` prints the Dockerfile), and the environment that build
makes is installed here for real, then ``postBuild`` runs in it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
BINDER = ROOT / "binder"


def _repo2docker_plan() -> str:
    exe = Path(sys.executable).parent / "jupyter-repo2docker"
    out = subprocess.run(
        [str(exe), "--no-build", "--no-run", "--debug", str(ROOT)],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return out.stdout + out.stderr


def _uv() -> list[str]:
    """uv, as ``./dev`` and CI install it: on PATH, or as a module of the system Python."""
    if found := shutil.which("uv"):
        return [found]
    for python in ("python3", "python"):
        exe = shutil.which(python)
        if (
            exe
            and subprocess.run([exe, "-m", "uv", "--version"], capture_output=True).returncode == 0
        ):
            return [exe, "-m", "uv"]
    if os.environ.get("CI"):
        pytest.fail("uv is required in CI and was not found")
    pytest.skip("uv is not installed")


def test_repo2docker_reads_the_binder_folder() -> None:
    plan = _repo2docker_plan()
    assert "python=3.12" in plan
    apt = next(line for line in plan.splitlines() if "apt-get install --yes" in line)
    assert "openjdk-17-jre-headless" in apt
    assert "postgresql" in apt
    # the requirements name the repository itself, so they install after it is copied in
    copied = plan.index("COPY --chown=0:0 src/ ${REPO_DIR}/")
    installed = plan.index('pip install --no-cache-dir -r "binder/requirements.txt"')
    assert copied < installed < plan.index("./binder/postBuild")


def test_binder_environment_installs_and_post_build_makes_the_demo_lake(tmp_path: Path) -> None:
    """Install ``binder/requirements.txt`` the way Binder would, then run ``postBuild``.

    repo2docker makes a Python 3.12 environment that already holds JupyterLab, runs
    ``pip install -r binder/requirements.txt`` in it with the repository's root as working
    directory (so ``.`` and ``./extensions/...`` are the checkout), then runs
    ``./binder/postBuild`` from the root as the notebook user, with that environment first
    on ``PATH``. Here: a fresh Python 3.12 venv, ``uv pip install`` (pip's resolver rules and
    the same requirements file; uv's cache keeps it fast and offline-capable) of JupyterLab
    and the requirements from the root, then ``postBuild`` with ``HOME`` in a temporary
    directory (Binder's ``$HOME`` is the checkout; the lake goes to ``$HOME/demo-lake``).
    """
    uv = _uv()
    venv = tmp_path / "binder-env"
    # no bytecode compilation of the whole environment (./dev asks uv for it): Binder's pip
    # does not do it either, and it is most of the install's time here
    skip = ("VIRTUAL_ENV", "PYTHONPATH", "UV_COMPILE_BYTECODE")
    env = {k: v for k, v in os.environ.items() if k not in skip}
    subprocess.run([*uv, "venv", "--python", "3.12", str(venv)], check=True, env=env, timeout=120)
    py = venv / "bin" / "python"
    subprocess.run(
        [*uv, "pip", "install", "--python", str(py), "jupyterlab", "-r", "binder/requirements.txt"],
        check=True,
        cwd=ROOT,
        env=env,
        timeout=600,
        capture_output=True,
    )
    probe = (
        "import zarrlake, zarrlake_jupyter, pyspark, panel, s3fs, psycopg, moto, xarray, "
        "distributed, jupyter_server_proxy\n"
        "from importlib.metadata import entry_points\n"
        "print(sorted(e.name for e in entry_points(group='jupyter_serverproxy_servers')))"
    )
    out = subprocess.run([str(py), "-c", probe], check=True, capture_output=True, text=True)
    assert "zarrlake" in out.stdout

    home = tmp_path / "home"
    home.mkdir()
    run_env = {**env, "HOME": str(home), "PATH": f"{venv / 'bin'}:{env.get('PATH', '')}"}
    subprocess.run([str(BINDER / "postBuild")], check=True, cwd=ROOT, env=run_env, timeout=300)
    lake = home / "demo-lake"
    assert (lake / "catalog.db").exists()
    log = subprocess.run(
        [str(venv / "bin" / "zarrlake"), "log", str(lake), "main"],
        check=True,
        capture_output=True,
        text=True,
        env=run_env,
    )
    assert "Calibrate Q1 temperature" in log.stdout
