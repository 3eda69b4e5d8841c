"""The Spark engine: native DataFrame lowerings of table ops (the only package that imports pyspark)."""
from dataflow.engines.spark.engine import SparkEngine

__all__ = ["SparkEngine"]
