"""The zarrlake Spark data source against a real local Spark, on the embedded default and on
PostgreSQL + S3."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import zarrlake
from tests.integration.spark._lakes import (
    Lake,
    frame,
    grid_opts,
    make_lake,
    read_pandas,
    sort,
    spark_frame,
)

pytestmark = pytest.mark.spark


@pytest.fixture(
    params=["embedded", pytest.param("pg_s3", marks=[pytest.mark.postgres, pytest.mark.s3])]
)
def lake(request: pytest.FixtureRequest, tmp_path: Path) -> Lake:
    s3 = request.getfixturevalue("s3_options") if request.param == "pg_s3" else None
    return make_lake(request.param, tmp_path, s3)


def write(spark: Any, lake: Lake, pdf: pd.DataFrame, mode: str = "append", **more: Any) -> None:
    from zarrlake.integrations.spark import layout

    opts = lake.opts(**grid_opts(**more))
    df = layout(spark_frame(spark, pdf), partitions=3, overwrite=mode == "overwrite", **opts)
    df.write.format("zarrlake").options(**opts).mode(mode).save()


def commits(lake: Lake) -> list[zarrlake.CommitInfo]:
    return lake.repo.log("main")[:-1]  # without the initial commit


def xr_frame(lake: Lake, ref: str = "main") -> pd.DataFrame:
    ds = zarrlake.open_dataset(lake.repo, ref)
    return sort(ds["temp"].to_dataframe().reset_index().dropna(subset=["temp"]))


def test_write_then_read_back_with_spark_and_xarray(spark: Any, lake: Lake) -> None:
    pdf = frame(range(4))
    write(spark, lake, pdf, message="day one")
    (c,) = commits(lake)
    assert c.message == "day one"
    assert c.metadata["spark"]["rows"] == len(pdf)
    expected = sort(pdf)
    pd.testing.assert_frame_equal(read_pandas(spark, lake.opts(array="temp")), expected)
    pd.testing.assert_frame_equal(xr_frame(lake), expected)


def test_append_along_time_and_overwrite_a_region(spark: Any, lake: Lake) -> None:
    write(spark, lake, frame(range(4)))
    write(spark, lake, frame(range(4, 7)), nt=7)  # the next hours: the time axis grows
    write(spark, lake, frame(range(2, 3), offset=0.5))  # one hour, partly covered chunks
    ds = zarrlake.open_dataset(lake.repo, "main")
    assert ds.sizes == {"time": 7, "lat": 6, "lon": 8}
    expected = sort(frame(range(7)))
    expected.loc[expected["time"] == pd.Timestamp("2026-01-01T02:00"), "temp"] += 0.5
    pd.testing.assert_frame_equal(read_pandas(spark, lake.opts(array="temp")), expected)
    assert len(commits(lake)) == 3


def test_overwrite_mode_replaces_the_array(spark: Any, lake: Lake) -> None:
    write(spark, lake, frame(range(4)))
    write(spark, lake, frame(range(1), offset=7.0), mode="overwrite", nt=2)
    ds = zarrlake.open_dataset(lake.repo, "main")
    assert ds.sizes["time"] == 2
    pd.testing.assert_frame_equal(xr_frame(lake), sort(frame(range(1), offset=7.0)))


def test_a_task_that_fails_once_is_retried_and_commits_once(spark: Any, lake: Lake) -> None:
    pdf = frame(range(4))
    write(spark, lake, pdf, test_fail="once")
    assert len(commits(lake)) == 1
    pd.testing.assert_frame_equal(read_pandas(spark, lake.opts(array="temp")), sort(pdf))


def test_a_job_that_fails_for_good_changes_nothing(spark: Any, lake: Lake) -> None:
    write(spark, lake, frame(range(4)))
    head = lake.repo.resolve("main")
    with pytest.raises(Exception, match="injected failure"):
        write(spark, lake, frame(range(4), offset=1.0), test_fail="always")
    assert lake.repo.resolve("main") == head
    assert lake.repo.sessions() == []  # the job's session was abandoned
    pd.testing.assert_frame_equal(xr_frame(lake), sort(frame(range(4))))


def test_the_same_idempotency_key_commits_once(spark: Any, lake: Lake) -> None:
    write(spark, lake, frame(range(4)), idempotency_key="load-2026-01-01")
    head = lake.repo.resolve("main")
    write(spark, lake, frame(range(4)), idempotency_key="load-2026-01-01")
    assert lake.repo.resolve("main") == head
    assert len(commits(lake)) == 1


def test_the_same_key_from_two_concurrent_jobs_commits_once(spark: Any, lake: Lake) -> None:
    write(spark, lake, frame(range(4)))  # the array exists: both jobs only write chunks
    errors: list[BaseException] = []

    def job() -> None:
        try:
            write(spark, lake, frame(range(4), offset=1.0), idempotency_key="backfill-7")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=job) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(commits(lake)) == 2
    pd.testing.assert_frame_equal(xr_frame(lake), sort(frame(range(4), offset=1.0)))


def test_two_jobs_writing_disjoint_regions_both_land(spark: Any, lake: Lake) -> None:
    write(spark, lake, frame(range(1)))  # creates the array; hours 1-3 are empty
    errors: list[BaseException] = []

    def job(hours: range) -> None:
        try:
            write(spark, lake, frame(hours, offset=2.0))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=job, args=(h,)) for h in (range(2, 4), range(0, 2))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(commits(lake)) == 3
    pd.testing.assert_frame_equal(xr_frame(lake), sort(frame(range(4), offset=2.0)))


def test_a_tag_reads_that_version_while_the_branch_moves_on(spark: Any, lake: Lake) -> None:
    write(spark, lake, frame(range(4)))
    lake.repo.create_tag("v1")
    pinned = spark.read.format("zarrlake").options(**lake.opts(array="temp", ref="main")).load()
    write(spark, lake, frame(range(4), offset=9.0))
    v1 = sort(frame(range(4)))
    pd.testing.assert_frame_equal(read_pandas(spark, lake.opts(array="temp", ref="v1")), v1)
    # planned before the second commit: the version was fixed then
    pd.testing.assert_frame_equal(sort(pinned.toPandas()), v1)
    latest = read_pandas(spark, lake.opts(array="temp", ref="main"))
    pd.testing.assert_frame_equal(latest, sort(frame(range(4), offset=9.0)))


def test_pushed_filters_prune_partitions_and_return_the_right_rows(spark: Any, lake: Lake) -> None:
    from pyspark.sql import functions as F

    write(spark, lake, frame(range(4)))
    df = (
        spark.read.format("zarrlake")
        .options(**lake.opts(array="temp", chunks_per_partition=1, filter_pushdown="true"))
        .load()
    )
    assert df.rdd.getNumPartitions() == 8  # 2 x 2 x 2 chunks
    cond = (F.col("lat") > 0) & (F.col("time") < pd.Timestamp("2026-01-01T02:00"))
    cond &= F.col("lon").isin(1.0, 5.0)
    filtered = df.where(cond)
    assert filtered.rdd.getNumPartitions() == 2  # one time chunk, one lat chunk, both lon
    pdf = sort(frame(range(4)))
    want = pdf[
        (pdf.lat > 0) & (pdf.time < pd.Timestamp("2026-01-01T02:00")) & pdf.lon.isin([1.0, 5.0])
    ]
    pd.testing.assert_frame_equal(sort(filtered.toPandas()), want.reset_index(drop=True))


def test_misaligned_input_is_refused_and_nothing_committed(spark: Any, lake: Lake) -> None:
    write(spark, lake, frame(range(1)))
    head = lake.repo.resolve("main")
    opts = lake.opts(**grid_opts())
    # round-robin: every chunk's rows are spread over both partitions
    df = spark_frame(spark, frame(range(4), offset=3.0)).repartition(2)
    with pytest.raises(Exception, match="written by two tasks"):
        df.write.format("zarrlake").options(**opts).mode("append").save()
    assert lake.repo.resolve("main") == head
    assert lake.repo.sessions() == []


def test_streaming_sink_commits_each_micro_batch_once(
    spark: Any, lake: Lake, tmp_path: Path
) -> None:
    src, ckpt = tmp_path / "incoming", tmp_path / "checkpoint"
    src.mkdir()
    for h in range(3):
        frame(range(h, h + 1)).to_parquet(src / f"hour-{h}.parquet")
    opts = lake.opts(**grid_opts(nt=1), append_dim="time", message="stream")

    def run() -> None:
        stream = spark.readStream.schema(spark_frame(spark, frame(range(1))).schema)
        stream = stream.option("maxFilesPerTrigger", 1).parquet(str(src))
        q = (
            stream.writeStream.format("zarrlake")
            .options(**opts)
            .option("checkpointLocation", str(ckpt))
            .trigger(availableNow=True)
            .start()
        )
        q.awaitTermination(120)
        assert q.exception() is None

    run()
    assert [c.message for c in commits(lake)] == [f"stream (batch {b})" for b in (2, 1, 0)]
    # a restart that finds batch 2 written but not recorded as committed replays it
    (ckpt / "commits" / "2").unlink()
    (ckpt / "commits" / ".2.crc").unlink(missing_ok=True)
    run()
    assert len(commits(lake)) == 3
    pd.testing.assert_frame_equal(xr_frame(lake), sort(frame(range(3))))


def test_bad_options_are_refused_before_any_work() -> None:
    from zarrlake.integrations.spark.options import parse_read, parse_write

    base = {"path": "/nowhere", **grid_opts()}
    for more, msg in [
        ({"colour": "blue"}, "unknown option"),
        ({"chunks": "[2, 3]"}, "2 sizes for 3 dims"),
        ({"coords": "{not json"}, "must be JSON"),
        ({"dims": ""}, "'dims' is required"),
        ({"catalog": "sqlite://"}, "not both"),
        ({"test_fail": "sometimes"}, "test_fail"),
    ]:
        with pytest.raises(zarrlake.InvalidInputError, match=msg):
            parse_write({**base, **more})
    with pytest.raises(zarrlake.InvalidInputError, match="chunks_per_partition"):
        parse_read({"path": "/nowhere", "chunks_per_partition": "0"})


def test_unknown_options_and_off_grid_rows_fail_the_job(spark: Any, tmp_path: Path) -> None:
    # input validation does not depend on the catalog: the embedded default only
    lake = make_lake("embedded", tmp_path, None)
    df = spark_frame(spark, frame(range(1)))
    opts = {**lake.opts(**grid_opts()), "colour": "blue"}
    with pytest.raises(Exception, match="unknown option"):
        df.write.format("zarrlake").options(**opts).mode("append").save()
    with pytest.raises(Exception, match="not on the grid"):
        write(spark, lake, frame(range(1)).assign(lat=lambda d: d.lat + 0.25))
    assert commits(lake) == []
    assert lake.repo.sessions() == []
