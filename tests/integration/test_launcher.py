"""The JupyterLab launcher entry (extensions/zarrlake-jupyter), in a real headless JupyterLab.

JupyterLab runs as on Binder: jupyter-server-proxy finds the ``zarrlake`` entry point, lists
it for the launcher with its icon, and on the first request to ``<base_url>/zarrlake/``
starts the dashboard (building the demo lake, as Binder's first click would) and proxies to
it. Chromium then loads the proxied page, which only renders if the dashboard's resources and
its websocket work under the proxy's path.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration._browser import chromium

pytestmark = pytest.mark.slow

TOKEN = "zarrlake-launcher-test"
BASE = "/jlab/"  # a non-root base URL, as JupyterHub and Binder give


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str, timeout: float = 120) -> tuple[int, bytes, str]:
    req = urllib.request.Request(url, headers={"Authorization": f"token {TOKEN}"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return r.status, r.read(), r.headers.get("Content-Type", "")


def screenshots_dir(tmp: Path) -> Path:
    """Where screenshots go: ``$ZARRLAKE_SCREENSHOTS`` (to look at them), else the test's tmp."""
    d = Path(os.environ.get("ZARRLAKE_SCREENSHOTS") or tmp)
    d.mkdir(parents=True, exist_ok=True)
    return d


@pytest.fixture(scope="module")
def jupyterlab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """A headless JupyterLab on loopback with a token; yields its URL and the lake path."""
    root = tmp_path_factory.mktemp("jlab")
    lake = root / "demo-lake"
    port = _free_port()
    env = {**os.environ, "ZARRLAKE_LAKE": str(lake), "JUPYTER_CONFIG_DIR": str(root / ".jupyter")}
    log = (root / "jupyter.log").open("wb")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            "--allow-root",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={port}",
            f"--ServerApp.base_url={BASE}",
            f"--ServerApp.root_dir={root}",
            f"--IdentityProvider.token={TOKEN}",
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=root,
    )
    url = f"http://127.0.0.1:{port}{BASE}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                _get(url + "api/status", timeout=5)
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        "JupyterLab did not start:\n" + (root / "jupyter.log").read_text()
                    ) from None
                time.sleep(0.5)
        yield url, lake
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def test_the_launcher_lists_the_dashboard_with_its_icon(jupyterlab: tuple[str, Path]) -> None:
    url, _ = jupyterlab
    _, body, _ = _get(url + "server-proxy/servers-info")
    servers = {s["name"]: s for s in json.loads(body)["server_processes"]}
    entry = servers["zarrlake"]["launcher_entry"]
    assert entry["enabled"] is True
    assert entry["title"] == "zarrlake dashboard"
    assert entry["path_info"] == "zarrlake/"
    assert entry["category"] == "Notebook"  # the launcher shows icon URLs only there
    status, icon, ctype = _get(url.rstrip("/") + entry["icon_url"].removeprefix(BASE.rstrip("/")))
    assert status == 200
    assert ctype.startswith("image/svg")
    assert b"<svg" in icon


def test_the_proxied_dashboard_builds_the_demo_lake_and_renders(
    jupyterlab: tuple[str, Path], tmp_path: Path
) -> None:
    url, lake = jupyterlab
    status, html, _ = _get(url + "zarrlake/")  # starts the dashboard, which builds the lake
    assert status == 200
    assert (lake / "catalog.db").exists()
    assert b"<title>zarrlake</title>" in html
    # the page's resources resolve under the proxied prefix
    assert b'src="static/js/bokeh.min.js' in html
    assert _get(url + "zarrlake/static/js/bokeh.min.js")[0] == 200

    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(f"{url}zarrlake/?token={TOKEN}")
        # the refs table is filled over the websocket: it proves the proxied socket works
        page.wait_for_selector(".zl-refs .tabulator-row", timeout=90_000)
        rows = page.locator(".zl-refs .tabulator-row").all_inner_texts()
        page.wait_for_timeout(700)
        page.screenshot(path=str(screenshots_dir(tmp_path) / "launcher-dashboard.png"))
    names = " ".join(rows)
    assert "main" in names
    assert "experiment" in names
    assert "v1.0" in names
