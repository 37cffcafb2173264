"""Lakes for the Spark tests (embedded default, PostgreSQL + S3) and gridded test frames."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

import zarrlake
from tests.conftest import PG_URL, _need_postgres, unique

T0 = pd.Timestamp("2026-01-01T00:00")
NLAT, NLON = 6, 8


@dataclass
class Lake:
    """The options that name a lake, and the repo opened in the test process."""

    options: dict[str, str]
    repo: zarrlake.Repo

    def opts(self, **more: Any) -> dict[str, str]:
        return {**self.options, **{k: str(v) for k, v in more.items()}}


def make_lake(kind: str, tmp_path: Path, s3_options: dict[str, object] | None) -> Lake:
    if kind == "embedded":
        path = str(tmp_path / "lake")
        return Lake({"path": path}, zarrlake.Repo.create(path))
    _need_postgres()
    assert s3_options is not None
    name = unique("spark")
    storage = f"s3://lake/{name}"
    repo = zarrlake.Repo.create(
        catalog=PG_URL, storage=storage, name=name, storage_options=dict(s3_options)
    )
    opts = {
        "catalog": PG_URL,
        "name": name,
        "storage": storage,
        "storage_options": json.dumps(s3_options),
    }
    return Lake(opts, repo)


def grid_opts(nt: int = 4, chunks: str = "[2, 3, 4]", **more: Any) -> dict[str, str]:
    coords = {
        "time": {"start": T0.isoformat(), "step": "1h", "size": nt},
        "lat": {"start": -2.5, "step": 1.0, "size": NLAT},
        "lon": {"start": 0.0, "step": 1.0, "size": NLON},
    }
    out = {"array": "temp", "dims": "time,lat,lon", "coords": json.dumps(coords), "chunks": chunks}
    out.update({k: str(v) for k, v in more.items()})
    return out


def frame(hours: range, offset: float = 0.0, lats: range = range(NLAT)) -> pd.DataFrame:
    """Every (hour, lat, lon) cell of the given hours and lat rows; temp = a cell number."""
    rows = [
        (T0 + pd.Timedelta(hours=h), -2.5 + j, float(i), h * 100 + j * 10 + i + offset)
        for h in hours
        for j in lats
        for i in range(NLON)
    ]
    return pd.DataFrame(rows, columns=["time", "lat", "lon", "temp"])


def spark_frame(spark: Any, pdf: pd.DataFrame) -> Any:
    from pyspark.sql.types import DoubleType, StructField, StructType, TimestampType

    schema = StructType(
        [
            StructField("time", TimestampType(), False),
            StructField("lat", DoubleType(), False),
            StructField("lon", DoubleType(), False),
            StructField("temp", DoubleType(), True),
        ]
    )
    return spark.createDataFrame(pdf, schema=schema)


def read_pandas(spark: Any, options: dict[str, str]) -> pd.DataFrame:
    df = spark.read.format("zarrlake").options(**options).load().toPandas()
    return sort(df)


def sort(df: pd.DataFrame) -> pd.DataFrame:
    df = df.copy()
    df["time"] = pd.to_datetime(df["time"]).dt.tz_localize(None).astype("datetime64[ns]")
    return df.sort_values(["time", "lat", "lon"]).reset_index(drop=True)[
        ["time", "lat", "lon", "temp"]
    ]
