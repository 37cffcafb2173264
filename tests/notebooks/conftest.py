"""Markers the notebook tests share with the integration tests."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "spark: needs a local Spark (Java 17 and pyspark)")
