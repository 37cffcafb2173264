"""The example pipeline (examples/spark_pipeline) runs end to end on the shared SparkSession."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

import zarrlake

pytestmark = pytest.mark.spark

PIPELINE = Path(__file__).parents[3] / "examples" / "spark_pipeline" / "pipeline.py"


def test_the_example_pipeline_makes_two_commits_and_a_diff(spark: Any, tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("spark_pipeline_example", PIPELINE)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    result = module.run(tmp_path, spark=spark)
    # day 0, day 1, and the rerun of day 1 made no third commit
    assert result["log"][:2] == [
        "gridded station observations, day 1",
        "gridded station observations, day 0",
    ]
    assert len(result["log"]) == 3
    temp = next(n for n in result["diff"] if n.path.strip("/") == "surface/temperature")
    shapes = {c.field: (c.before, c.after) for c in temp.metadata}
    assert shapes["shape"] == ([24, 10, 20], [48, 10, 20])
    assert temp.chunks_added
    assert not temp.chunks_changed
    ds = zarrlake.open_dataset(zarrlake.Repo.open(tmp_path / "lake"), group="surface")
    assert ds.sizes == {"time": 48, "lat": 10, "lon": 20}
    assert int(ds.n_obs.sum()) > 0
