"""zarrlake as a Spark data source: exactly-once writes into versioned Zarr arrays, and reads
of any version.

>>> from zarrlake.integrations.spark import layout, register    # doctest: +SKIP
>>> register(spark)                                              # doctest: +SKIP
>>> opts = {"path": "lake", "array": "temp", "dims": "time,lat,lon",
...         "chunks": "[24, 45, 90]", "coords": "..."}           # doctest: +SKIP
>>> layout(df, **opts).write.format("zarrlake").options(**opts).mode("append").save()
>>> spark.read.format("zarrlake").option("path", "lake").option("array", "temp").load()

See ``docs/spark.md``. Importing this module imports pyspark and pyarrow.
"""

from zarrlake.integrations.spark.layout import layout
from zarrlake.integrations.spark.source import ZarrlakeDataSource, register

__all__ = ["ZarrlakeDataSource", "layout", "register"]
