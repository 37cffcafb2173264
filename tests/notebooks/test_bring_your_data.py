"""The "bring your data" tutorial: a NetCDF archive on S3 by reference, a Zarr v2 store
imported by reference, an Icechunk repository with its history."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.notebooks.test_notebooks import _execute as execute
from tests.notebooks.test_notebooks import _outputs, _text


def test_bring_your_data_references_imports_and_keeps_history(tmp_path: Path) -> None:
    pytest.importorskip("virtualizarr")
    pytest.importorskip("icechunk")
    nb, _ = execute("08-bring-your-data.ipynb", tmp_path)
    out = _text(nb)
    assert "point series: [10. 11. 12. 13. 14.]" in out
    assert "obs/temp: 5 chunks added, 5 of them virtual" in out
    recorded = "".join(_outputs(nb, "08-05"))
    assert "'s3://archive/netcdf/'" in recorded
    assert "'endpoint_url'" in recorded
    assert "testing" not in recorded  # no credential in the catalog
    assert "import the stations store | chunks: 6 | Zarr v 2" in out
    assert "~ /rain (array); chunks ~1" in out
    assert "run again: 0 new commits" in out
    assert "2 commits; branches ['icechunk/main'] ; tags ['icechunk/calibrated']" in out
    assert "{'instrument': 'gauge-7', 'icechunk_snapshot':" in out
    assert "[1.  1.  1.  1.  1.  1.  1.  1.  2.5 2.5 2.5 2.5]" in out
