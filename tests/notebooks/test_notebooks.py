"""The tutorials in ``notebooks/``: each runs top to bottom, and none is committed with outputs.

Each notebook is executed by a fresh kernel (nbclient, this environment's ``python3``) in a
fresh temporary directory holding a copy of ``notebooks/`` (the notebook, and
``_services.py`` that the operations tutorial imports), as a reader who downloaded the folder
would run it. The notebooks assert what they show (a conflict was raised, the diff named the
chunk, fsck was clean), so a wrong behaviour fails the execution; the tests then check the
outputs a reader sees.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

import nbformat
import pytest

from tests.conftest import PG_URL, _need_postgres

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


def _all() -> list[Path]:
    return sorted(NOTEBOOKS.glob("*.ipynb"))


def _text(nb: Any) -> str:
    """Everything a reader sees in the outputs: streams, plain text and HTML reprs."""
    parts: list[str] = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if out.output_type == "stream":
                parts.append(out.text)
            elif "data" in out:
                for mime in ("text/plain", "text/html"):
                    if mime in out.data:
                        parts.append(str(out.data[mime]))
    return "\n".join(parts)


def _outputs(nb: Any, cell_id: str) -> list[str]:
    """The plain-text outputs of one cell."""
    cell = next(c for c in nb.cells if c.get("id") == cell_id)
    return [
        o.text if o.output_type == "stream" else str(o.get("data", {}).get("text/plain", ""))
        for o in cell.get("outputs", [])
    ]


def _html(nb: Any, cell_id: str) -> str:
    """The HTML outputs of one cell."""
    cell = next(c for c in nb.cells if c.get("id") == cell_id)
    return "".join(str(o.get("data", {}).get("text/html", "")) for o in cell.get("outputs", []))


def _execute(name: str, tmp_path: Path, env: dict[str, str] | None = None) -> tuple[Any, float]:
    from nbclient import NotebookClient

    work = tmp_path / "notebooks"
    shutil.copytree(NOTEBOOKS, work, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    nb = nbformat.read(work / name, as_version=4)
    old = {k: os.environ.get(k) for k in (env or {})}
    os.environ.update(env or {})  # the kernel inherits this process's environment
    start = time.monotonic()
    try:
        NotebookClient(
            nb,
            timeout=240,
            kernel_name="python3",
            resources={"metadata": {"path": str(work)}},
        ).execute()
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return nb, time.monotonic() - start


def test_the_tutorials_are_there() -> None:
    assert [p.name for p in _all()] == [
        "01-quickstart.ipynb",
        "02-sessions-and-conflicts.ipynb",
        "03-branches-and-time-travel.ipynb",
        "04-parallel-writes-with-dask.ipynb",
        "05-spark-exactly-once.ipynb",
        "06-operations.ipynb",
        "07-dashboard.ipynb",
        "08-bring-your-data.ipynb",
    ]


@pytest.mark.parametrize("path", _all(), ids=lambda p: p.stem)
def test_committed_notebooks_carry_no_outputs(path: Path) -> None:
    """Outputs are stripped in the repository: no outputs, execution counts or widget state."""
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    dirty = [
        i
        for i, c in enumerate(nb.cells)
        if c.cell_type == "code" and (c.get("outputs") or c.get("execution_count") is not None)
    ]
    assert not dirty, f"{path.name}: cells {dirty} have outputs; clear them before committing"
    assert "widgets" not in nb.metadata, f"{path.name}: widget state is saved in the notebook"
    assert not any(c.metadata.get("execution") for c in nb.cells), f"{path.name}: timings saved"


def test_the_stripped_output_check_catches_an_executed_notebook(tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 + 1")])
    nb.cells[0].outputs = [nbformat.v4.new_output("execute_result", {"text/plain": "2"})]
    nb.cells[0].execution_count = 1
    path = tmp_path / "dirty.ipynb"
    nbformat.write(nb, path)
    with pytest.raises(AssertionError, match="have outputs"):
        test_committed_notebooks_carry_no_outputs(path)


def test_quickstart_shows_its_data_its_diff_and_the_selected_dataset(tmp_path: Path) -> None:
    nb, _ = _execute("01-quickstart.ipynb", tmp_path)
    out = _text(nb)
    provenance = "".join(_outputs(nb, "01-07"))
    assert "ref:    main" in provenance
    assert "group:  /surface" in provenance
    diff = "".join(_outputs(nb, "01-11"))
    assert "1 modified; chunks +0 ~2 -0" in diff
    assert "~ /surface/temperature (array); chunks ~2" in diff
    # the chunk map: 7 days by 2 longitude chunks, the two chunks of 3 March changed
    html = _html(nb, "01-11")
    assert html.count('class="zl-changed" x=') == 2
    assert "rows: time; columns: lon; lat folded in" in html
    assert "[(2, 0, 0), (2, 0, 1)]" in out
    assert "calibrate the southern sensor on 3 March" in out
    assert "south: 1.5" in out
    # the widget's Dataset is the group holding the data, not the empty root group
    selected = "".join(_outputs(nb, "01-22"))
    assert "Dimensions:      (time: 7, lat: 18, lon: 36)" in selected
    assert "temperature  (time, lat, lon) float32" in selected


def test_sessions_notebook_shows_the_conflict_and_the_expiry(tmp_path: Path) -> None:
    nb, _ = _execute("02-sessions-and-conflicts.ipynb", tmp_path)
    out = _text(nb)
    conflict = "".join(_outputs(nb, "02-11"))
    assert "chunk conflict at grid chunk (0, 1)" in conflict, conflict
    assert "stale: bar was computed from foo = 10" in out
    assert "refused: session" in out
    assert "its writes can no longer be staged or committed" in out
    # the session widget was displayed (a widget view in the outputs)
    views = [
        o
        for c in nb.cells
        for o in c.get("outputs", [])
        if "application/vnd.jupyter.widget-view+json" in o.get("data", {})
    ]
    assert views


def test_branches_notebook_merges_reverts_and_travels_in_time(tmp_path: Path) -> None:
    nb, _ = _execute("03-branches-and-time-travel.ipynb", tmp_path)
    out = _text(nb)
    assert "experiment changed months [2, 3]" in out
    assert "main changed months       [3]" in out
    assert "main@{" in out
    assert "chunk conflict at rain/precip chunk (3, 0, 0)" in "".join(_outputs(nb, "03-09"))
    final = "".join(_outputs(nb, "03-24"))
    assert "1 modified; chunks +0 ~2 -0" in final
    assert "~ /rain/precip (array); chunks ~2" in final
    # its chunk map is drawn along the months that changed (6 cells, 2 changed)
    html = _html(nb, "03-24")
    assert html.count('class="zl-changed" x=') == 2
    assert "columns: month; lat, lon folded in" in html


def test_dask_notebook_writes_from_two_worker_processes(tmp_path: Path) -> None:
    nb, _ = _execute("04-parallel-writes-with-dask.ipynb", tmp_path)
    out = _text(nb)
    assert "2 worker processes" in out
    assert "cannot write variable 'wave'" in out


@pytest.mark.spark
# A JVM, a local Spark and three jobs: 138 to 300 s in full runs on two cores, beside the
# browsers and installs of the rest of the suite.
@pytest.mark.timeout(900)
def test_spark_notebook_commits_exactly_once(tmp_path: Path) -> None:
    if shutil.which("java") is None:
        if os.environ.get("CI"):
            pytest.fail("Java is required for the Spark notebook in CI and was not found")
        pytest.skip("Java is not installed")
    nb, _ = _execute("05-spark-exactly-once.ipynb", tmp_path)
    out = _text(nb)
    assert "gridded observations, day 0" in out
    assert "still 2 commits" in out


@pytest.mark.postgres
@pytest.mark.s3
def test_operations_notebook_runs_the_team_setup(tmp_path: Path) -> None:
    _need_postgres()
    nb, _ = _execute("06-operations.ipynb", tmp_path, env={"ZARRLAKE_PG_URL": PG_URL})
    out = _text(nb)
    assert "first version, on PostgreSQL and S3" in out
    assert "object(s) in s3://lake/climate-" in out
    assert "refused:" in out  # the corrupted chunk was refused on read


def test_dashboard_notebook_serves_the_demo_lake(tmp_path: Path) -> None:
    nb, _ = _execute("07-dashboard.ipynb", tmp_path)
    out = _text(nb)
    assert "dashboard at http://127.0.0.1:" in out
    assert "launcher tile: zarrlake dashboard -> zarrlake/" in out
    # the inline dashboard was displayed as a Panel (bokeh) view
    mimes = {m for c in nb.cells for o in c.get("outputs", []) for m in o.get("data", {})}
    assert "application/vnd.holoviews_exec.v0+json" in mimes, sorted(mimes)
