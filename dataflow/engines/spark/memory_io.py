"""In-memory inputs and results of the Spark engine: no staging files within Spark.

An in-memory source (``dataflow.memory``) is read from what this process holds: a Spark DataFrame
as is (the run's plan starts from it), an Arrow table through ``spark.createDataFrame`` (Arrow
record batches sent to the JVM: one copy, no files). A Ray Dataset is handed over through Parquet
(Ray writes it to the staging folder; Spark reads it).

``hold_output`` runs a job without a sink into a persisted DataFrame (Spark's block manager)
and returns it: ``Pipeline.to_spark`` hands it out.
"""
from __future__ import annotations

from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from dataflow.columns import SOURCE
from dataflow.dsl.spec import MEMORY_OPTION, SourceSpec

__all__ = ["from_held", "held_frame", "hold_output"]


def held_frame(spark, source: SourceSpec) -> DataFrame:
    """The rows of an in-memory source as a DataFrame with ``__source__`` first."""
    import pyarrow as pa

    from dataflow.runtime.held import held

    obj = held(source.uri)
    df = obj if isinstance(obj, DataFrame) else from_held(spark, obj, "arrow" if isinstance(obj, pa.Table) else "ray")
    if SOURCE not in df.columns:
        df = df.withColumn(SOURCE, F.concat(F.lit(f"memory:{source.options[MEMORY_OPTION]}#id="), F.monotonically_increasing_id().cast("string")))
    return df.select(SOURCE, *[c for c in df.columns if c != SOURCE])


def from_held(spark, value: Any, kind: str) -> DataFrame:
    """A DataFrame over another engine's held output: ``arrow`` (a table, sent as Arrow), ``ray`` (a Dataset: through Parquet) or ``parquet`` (a staged folder)."""
    import pyarrow.dataset as pads

    from dataflow.runtime.held import staging_folder

    if kind == "arrow":
        return spark.createDataFrame(value)
    if kind == "ray":  # the handoff between engines goes through Parquet
        folder = staging_folder("ray-output")
        value.write_parquet(folder)
        value = folder
    return spark.read.parquet(*sorted(pads.dataset(value, format="parquet").files))  # leaves out _dataflow/ and _errors/


def hold_output(spark, job, ctx) -> tuple[DataFrame, int]:
    """Run ``job`` (its sink unused) into a persisted DataFrame; return it and its row count. Row errors and counters go to ``ctx.side``."""
    from dataflow.engines.spark.counters import keep_observed
    from dataflow.engines.spark.run import build_frames, finish_side_outputs, release

    frames = build_frames(spark, job, list(ctx.inputs), ctx.side, ctx.storage_options, cache=ctx.cache)
    w = job.write
    left_out = [*w.leaves_out, *(() if w.sink.lineage else (SOURCE,))]
    output = (frames.output.drop(*left_out) if left_out else frames.output).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        with keep_observed(spark):
            rows = output.count()
    except BaseException:
        release(frames)
        raise
    finish_side_outputs(frames, ctx.side, ctx.run_id, ctx.tmp_data)
    return output, rows
