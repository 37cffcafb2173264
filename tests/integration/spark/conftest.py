"""One local SparkSession for the Spark tests (startup costs 7-15 s, so it is shared)."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from typing import Any

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "spark: needs a local Spark (Java 17 and pyspark)")


def _need_java() -> None:
    if shutil.which("java") is None and not os.path.exists("/usr/bin/java"):
        if os.environ.get("CI"):
            pytest.fail("Java is required for the Spark tests in CI and was not found")
        pytest.skip("Java is not installed: the Spark tests need a JVM")


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    _need_java()
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    from pyspark.sql import SparkSession

    from zarrlake.integrations.spark import register

    jvm = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1"
    session = (
        SparkSession.builder.master("local[2,3]")
        .appName("zarrlake-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.extraJavaOptions", jvm)
        .config("spark.executor.extraJavaOptions", jvm)
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.python.filterPushdown.enabled", "true")
        .config("spark.python.worker.reuse", "true")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    register(session)
    try:
        yield session
    finally:
        session.stop()
