"""The Spark cache engine: static caches rebuilt as Spark DataFrame jobs.

``session`` holds the one long-lived SparkSession, ``export`` writes the snapshot of the graphs a
static sub-pattern reads as dictionary-encoded Parquet, ``job`` translates the sub-pattern into
DataFrame operations (``SparkCacheEngine``). pyspark is imported only by these modules, so the rest
of the endpoint runs without a JVM.
"""

from cqels_endpoint.spark.job import cache_engine

__all__ = ["cache_engine"]
