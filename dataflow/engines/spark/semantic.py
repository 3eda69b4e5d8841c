"""``text.dedup_semantic`` on Spark: SemDedup's k-means, then all pairs inside each cluster.

The same sample, centroids and pairs as on Ray (``dataflow.ops.kmeans``, the op's own code), so
both engines keep the same rows: ``mapInArrow`` draws the sample (a seeded hash of
``__source__``), one task fits the centroids on it (``repartition(1).mapInArrow``), the driver
collects them (one row: k x d floats) into the assignment's ``mapInArrow``, and
``groupBy(cluster).applyInArrow`` compares the pairs of each cluster in one task.
"""
from __future__ import annotations

from typing import Iterator

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StructField, StructType

from dataflow.columns import SOURCE
from dataflow.engines.spark.compile import SparkStep

__all__ = ["semantic_dedup"]

_ROW = "__df_row__"


def _matrix(values: pa.Array | pa.ChunkedArray, column: str) -> np.ndarray:
    """A list column as an (n, d) float32 matrix."""
    arr = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    if len(arr) == 0:
        return np.zeros((0, 0), np.float32)
    flat = arr.flatten().to_numpy(zero_copy_only=False).astype(np.float32)
    if arr.null_count or len(flat) % len(arr):
        raise ValueError(f"text.dedup_semantic: column '{column}' holds null vectors or vectors of different lengths")
    return flat.reshape(len(arr), -1)


def _sample(column: str, seed: int, fraction: float):
    def fn(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from dataflow.ops.kmeans import in_sample

        for b in batches:
            drawn = in_sample(np.asarray(b.column(SOURCE).to_pylist(), dtype=object), seed, fraction)
            yield b.select([SOURCE, column]).filter(pa.array(drawn, pa.bool_()))

    return fn


def _fit(column: str, k: int, seed: int):
    def fn(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from dataflow.ops.kmeans import fit_sample, unit_rows

        table = pa.Table.from_batches(list(batches))
        sources = np.asarray(table.column(SOURCE).to_pylist(), dtype=object) if table.num_rows else np.array([], object)
        centroids = fit_sample(sources, unit_rows(_matrix(table.column(column), column)), k, seed)
        yield pa.RecordBatch.from_pydict({"k": [centroids.shape[0]], "d": [centroids.shape[1]], "data": pa.array([centroids.tobytes()], pa.binary())})

    return fn


def _assign(column: str, centroids: np.ndarray, cluster: str):
    def fn(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from dataflow.ops.kmeans import nearest, unit_rows

        for b in batches:
            ids = nearest(unit_rows(_matrix(b.column(column), column)), centroids) if b.num_rows else np.zeros(0, np.int64)
            yield pa.RecordBatch.from_arrays([*b.columns, pa.array(ids, pa.int64())], names=[*b.schema.names, cluster])

    return fn


def _pairs(step: SparkStep, cluster: str):
    def fn(table: pa.Table) -> pa.Table:
        from dataflow.ops.registry import get_op

        p = step.params
        batch = {SOURCE: np.asarray(table.column(SOURCE).to_pylist(), dtype=object), p.column: _matrix(table.column(p.column), p.column),
                 cluster: table.column(cluster).to_numpy(), _ROW: np.arange(table.num_rows)}
        kept = get_op(step.name).bind(p)(batch)[_ROW]
        return table.take(pa.array(kept, pa.int64())).drop_columns([cluster])

    return fn


def semantic_dedup(df: DataFrame, step: SparkStep, named) -> DataFrame:
    """Lower ``text.dedup_semantic`` (see the module docstring); ``clusters`` resolving to 1 puts every row in one group."""
    from dataflow.ops.kmeans import cluster_count, sample_fraction
    from dataflow.ops.text.dedup_semantic import CLUSTER

    p = step.params
    rows = df.count()
    k = cluster_count(p.clusters, rows)
    with_cluster = StructType([*df.schema.fields, StructField(CLUSTER, LongType())])
    if k == 1:
        clustered = df.withColumn(CLUSTER, F.lit(0).cast("long"))
    else:
        sample = df.select(SOURCE, p.column)
        sample = sample.mapInArrow(_sample(p.column, p.seed, sample_fraction(k, rows)), sample.schema)
        row = sample.repartition(1).mapInArrow(_fit(p.column, k, p.seed), "k long, d long, data binary").collect()[0]  # one row: the centroids
        centroids = np.frombuffer(row["data"], dtype=np.float32).reshape(row["k"], row["d"])
        clustered = df.mapInArrow(_assign(p.column, centroids, CLUSTER), with_cluster)
    return clustered.groupBy(CLUSTER).applyInArrow(_pairs(step, CLUSTER), df.schema)
