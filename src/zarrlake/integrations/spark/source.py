"""The ``zarrlake`` Spark data source: reads, batch writes and the streaming sink."""

from __future__ import annotations

from typing import Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StructType

from zarrlake.integrations.spark.options import parse_read
from zarrlake.integrations.spark.reader import (
    FilteringReader,
    ReadPlan,
    ZarrlakeReader,
    plan_read,
)

__all__ = ["ZarrlakeDataSource", "register"]


class ZarrlakeDataSource(DataSource):
    """``format("zarrlake")``. Options: see ``docs/spark.md``."""

    def __init__(self, options: dict[str, str]) -> None:
        super().__init__(options)
        self._plan: ReadPlan | None = None

    @classmethod
    def name(cls) -> str:
        return "zarrlake"

    def _read_plan(self) -> ReadPlan:
        # Resolved once: schema() runs first and this object (with the plan) is pickled to
        # where reader() runs, so the schema and the data come from the same commit.
        if self._plan is None:
            self._plan = plan_read(parse_read(self.options))
        return self._plan

    def schema(self) -> StructType:
        return self._read_plan().schema()

    def reader(self, schema: StructType) -> DataSourceReader:
        plan = self._read_plan()
        return FilteringReader(plan) if plan.filter_pushdown else ZarrlakeReader(plan)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from zarrlake.integrations.spark.writer import ZarrlakeWriter

        return ZarrlakeWriter(dict(self.options), schema, overwrite)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from zarrlake.integrations.spark.stream import ZarrlakeStreamWriter

        return ZarrlakeStreamWriter(dict(self.options), schema, overwrite)


def register(spark: Any) -> None:
    """Register ``format("zarrlake")`` with a SparkSession (once per session)."""
    spark.dataSource.register(ZarrlakeDataSource)
