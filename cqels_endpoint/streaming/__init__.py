"""Continuous queries as Spark Structured Streaming jobs (``cqels spark-job``): docs/SCALING.md."""
