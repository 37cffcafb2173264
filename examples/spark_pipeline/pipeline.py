"""Station observations -> Spark cleaning and gridding -> zarrlake -> xarray, two days running.

Run it with ``spark-submit`` (see README.md) or import it in a notebook::

    from pipeline import run
    run("/tmp/lake-demo", spark=spark)

Each day's run is one zarrlake commit, made exactly once (the idempotency key is the day), so
running a day again changes nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import zarrlake

LAT0, NLAT = 40.5, 10  # 1-degree cell centres, 40.5 .. 49.5 N
LON0, NLON = 0.5, 20  # 0.5 .. 19.5 E
DAY0 = pd.Timestamp("2026-01-01")
STATIONS = 300


def generate_raw(raw_dir: Path, day: int, seed: int = 7) -> Path:
    """Hourly observations of STATIONS stations for one day, with the faults of real feeds:
    sentinel values (-999), missing readings and stations reporting twice."""
    rng = np.random.default_rng(seed + day)
    ids = np.arange(STATIONS)
    lat = 40 + 10 * np.random.default_rng(seed).random(STATIONS)
    lon = 20 * np.random.default_rng(seed + 1).random(STATIONS)
    frames = []
    for hour in range(24):
        t = DAY0 + pd.Timedelta(days=day, hours=hour)
        temp = 5 + 0.4 * (lat - 40) - 3 * np.cos(2 * np.pi * hour / 24) + rng.normal(0, 1, STATIONS)
        temp[rng.random(STATIONS) < 0.02] = -999.0
        temp[rng.random(STATIONS) < 0.02] = np.nan
        minute = rng.integers(0, 60, STATIONS)
        frames.append(
            pd.DataFrame(
                {
                    "station": ids,
                    "observed_at": t + pd.to_timedelta(minute, unit="min"),
                    "lat": lat,
                    "lon": lon,
                    "temperature": temp,
                }
            )
        )
    raw = pd.concat([*frames, frames[0].iloc[:20]], ignore_index=True)  # duplicate reports
    path = raw_dir / f"day={day}"
    path.mkdir(parents=True, exist_ok=True)
    raw.to_parquet(path / "observations.parquet")
    return path


def grid_options(lake: str, day: int) -> dict[str, str]:
    """Options of the write: the grid covers every day up to ``day``."""
    coords = {
        "time": {"start": DAY0.isoformat(), "step": "1h", "size": 24 * (day + 1)},
        "lat": {"start": LAT0, "step": 1.0, "size": NLAT},
        "lon": {"start": LON0, "step": 1.0, "size": NLON},
    }
    return {
        "path": lake,
        "group": "surface",
        "dims": "time,lat,lon",
        "coords": json.dumps(coords),
        "chunks": json.dumps({"time": 24, "lat": 5, "lon": 10}),
        "idempotency_key": f"surface-obs-day-{day}",
        "message": f"gridded station observations, day {day}",
    }


def clean_and_grid(spark: Any, raw_path: Path) -> Any:
    """Drop faulty readings and duplicate reports; average per hour and 1-degree cell."""
    from pyspark.sql import functions as F

    raw = spark.read.parquet(str(raw_path))
    clean = (
        raw.where(F.col("temperature").isNotNull() & ~F.isnan("temperature"))
        .where(F.col("temperature").between(-60, 60))
        .dropDuplicates(["station", "observed_at"])
    )
    return clean.groupBy(
        F.date_trunc("hour", "observed_at").alias("time"),
        (F.floor("lat") + 0.5).alias("lat"),
        (F.floor("lon") + 0.5).alias("lon"),
    ).agg(
        F.avg("temperature").alias("temperature"),
        F.count("*").cast("int").alias("n_obs"),
    )


def load_day(spark: Any, lake: str, raw_path: Path, day: int) -> None:
    from zarrlake.integrations.spark import layout

    opts = grid_options(lake, day)
    gridded = clean_and_grid(spark, raw_path)
    layout(gridded, **opts).write.format("zarrlake").options(**opts).mode("append").save()


def run(workdir: str | os.PathLike[str], spark: Any = None) -> dict[str, Any]:
    """The whole pipeline; returns what it found (commits, daily means, the diff)."""
    from zarrlake.integrations.spark import register

    workdir = Path(workdir)
    lake = str(workdir / "lake")
    spark = spark or _spark()
    register(spark)
    zarrlake.Repo.open_or_create(lake)

    raw1 = generate_raw(workdir / "raw", 0)
    load_day(spark, lake, raw1, 0)
    repo = zarrlake.Repo.open(lake)
    first = repo.resolve("main")

    ds = zarrlake.open_dataset(repo, first, group="surface")
    day_mean = float(ds.temperature.mean())
    coverage = float(ds.temperature.notnull().mean())
    print(
        f"day 0: commit {first[:10]}, {ds.sizes['time']} hours, mean {day_mean:.2f} C, "
        f"{coverage:.0%} of cells observed"
    )

    raw2 = generate_raw(workdir / "raw", 1)
    load_day(spark, lake, raw2, 1)
    load_day(spark, lake, raw2, 1)  # a rerun of the same day: no second commit
    second = repo.resolve("main")
    ds2 = zarrlake.open_dataset(repo, second, group="surface")
    daily = ds2.temperature.resample(time="1D").mean(...).values.round(2).tolist()
    print(f"day 1: commit {second[:10]}, {ds2.sizes['time']} hours, daily means {daily}")

    diff = repo.diff(first, second)
    print("diff of the two commits:")
    print(diff)
    log = [c.message for c in repo.log("main")]
    return {"first": first, "second": second, "daily_means": daily, "diff": diff, "log": log}


def _spark() -> Any:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.appName("zarrlake-pipeline")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("WARN")
    return spark


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workdir", help="a directory for the raw files and the lake")
    args = parser.parse_args(argv)
    result = run(args.workdir)
    print("history:", result["log"])


if __name__ == "__main__":
    main()
