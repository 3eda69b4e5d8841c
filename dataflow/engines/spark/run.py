"""Execute a SparkJob: read, native steps with row errors split off, write parts, counters.

Row errors are computed as columns and split from the good rows; the marked rows are persisted so
the error write and the data write share one computation. Per-step counters come from
``DataFrame.observe`` (no extra pass) and are written to the run's ``_stats`` side folder.
"""
from __future__ import annotations

import posixpath
import shutil
import threading
import uuid
from dataclasses import asdict, dataclass, field
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, Observation
from pyspark.sql import functions as F

from dataflow.engines.spark.compile import SparkJob, SparkRead, SparkStep
from dataflow.engines.spark.read import read_source
from dataflow.engines.spark.table_ops import BAD, LOWERINGS, Checked
from dataflow.engines.spark.write import WRITTEN_SCHEMA, error_writer, part_writer
from dataflow.runtime.stage import StepStats
from dataflow.runtime.stats import SideOutputs, batch_key

__all__ = ["JobFrames", "build_frames", "write_outputs"]

READ_STEP = -1
NAMED_READ_STEP = -2  # bad records of named sources: row errors, but not the run's input rows
_OBSERVATION_WAIT_S = 30.0


@dataclass
class _Observed:
    index: int
    op: str
    kind: str
    observation: Observation
    errors: bool
    chain: str


@dataclass
class JobFrames:
    """The job's output frame, its error frames, what it observed and what it persisted."""

    output: DataFrame
    errors: list[DataFrame] = field(default_factory=list)
    observed: list[_Observed] = field(default_factory=list)
    persisted: list[DataFrame] = field(default_factory=list)
    counted_read: bool = True


class _Builder:
    def __init__(self, observe: bool):
        self.observe = observe
        self.frames = JobFrames(output=None)
        self.tag = uuid.uuid4().hex[:8]

    def finish(self, result: DataFrame | Checked, index: int, op: str, kind: str, chain: str) -> DataFrame:
        checked = result if isinstance(result, Checked) else None
        df = checked.df if checked else result
        bad = F.coalesce(F.col(BAD), F.lit(False)) if checked else None
        if self.observe:
            obs = Observation(f"dataflow_{self.tag}_{chain}_{index}")
            metrics = [F.count(F.lit(1)).alias("rows")]
            if checked:
                metrics.append(F.sum(F.when(bad, 1).otherwise(0)).alias("bad"))
            df = df.observe(obs, *metrics)
            self.frames.observed.append(_Observed(index, op, kind, obs, checked is not None, chain))
        if checked is None:
            return df
        if self.observe:
            # Both the error write and the data write read these rows: compute them once.
            df = df.persist(StorageLevel.MEMORY_AND_DISK)
            self.frames.persisted.append(df)
            source = F.col("source").cast("string") if "source" in df.columns else F.lit(None).cast("string")
            etype, reason = checked.error_columns()
            self.frames.errors.append(df.where(bad).select(source.alias("source"), F.lit(op).alias("op"), etype.alias("error_type"), reason.alias("reason")))
        return df.where(~bad).drop(BAD, *checked.helpers)

    def chain(self, spark, read: SparkRead, steps: tuple[SparkStep, ...], files: list[str], side: SideOutputs, storage: dict, named: dict, chain: str) -> DataFrame:
        df = read_source(spark, read, files, side, storage)
        df = self.finish(df, READ_STEP, "read", "read", chain)
        for step in steps:
            df = LOWERINGS[step.name](df, step, named)
            df = self.finish(df, step.index, step.name, step.kind, chain)
        return df


def build_frames(spark, job: SparkJob, files: list[str], side: SideOutputs, storage: dict, observe: bool = True) -> JobFrames:
    """Build (lazily) the output frame of ``job`` over ``files``, and the frames of its row errors."""
    from connectors.registry import list_files

    builder = _Builder(observe)
    named: dict[str, DataFrame] = {}
    for side_input in job.inputs:
        src = side_input.read.source
        side_files = list_files(src.uri, src.format, src.options, storage)
        named[side_input.name] = builder.chain(spark, side_input.read, side_input.steps, side_files, side, storage, named, f"src_{side_input.name}")
    builder.frames.output = builder.chain(spark, job.read, job.steps, files, side, storage, named, "main")
    builder.frames.counted_read = job.read.counted
    return builder.frames


def _get(observation: Observation) -> dict[str, Any] | None:
    """The observation's metrics, or None when its query never ran (a branch Spark pruned)."""
    box: dict[str, Any] = {}
    waiter = threading.Thread(target=lambda: box.update(value=observation.get), daemon=True)
    waiter.start()
    waiter.join(_OBSERVATION_WAIT_S)
    return box.get("value")


def _stats(frames: JobFrames) -> dict[int, StepStats]:
    stats: dict[int, StepStats] = {}
    previous: dict[str, int] = {}
    for o in frames.observed:
        metrics = _get(o.observation)
        if metrics is None:
            continue
        rows, bad = int(metrics.get("rows") or 0), int(metrics.get("bad") or 0)
        out = rows - bad
        if o.index == READ_STEP:
            previous[o.chain] = out
            if o.chain == "main" and frames.counted_read:
                stats[READ_STEP] = StepStats(rows_in=rows, rows_out=out, rows_errored=bad)
            elif bad:
                stats.setdefault(NAMED_READ_STEP, StepStats()).add(StepStats(rows_errored=bad))
            continue
        st = StepStats(rows_in=previous.get(o.chain, rows), rows_out=out, rows_errored=bad)
        if o.kind == "filter":
            st.drops[o.op] = st.rows_in - st.rows_out
        stats[o.index] = st
        previous[o.chain] = out
    return stats


def _native_parquet(df: DataFrame, w, tmp_data: str, run_id: str) -> list[Any]:
    """Write local Parquet with Spark's own writer, then give the parts our names."""
    import os

    import pyarrow.parquet as pq

    from connectors.formats import WrittenFile

    staging = posixpath.join(posixpath.dirname(tmp_data), f"spark-parquet-{run_id[:8]}")
    compression = w.sink.options.get("compression", "zstd")
    df.write.option("compression", compression).option("maxRecordsPerFile", w.rows_per_file).mode("overwrite").parquet("file://" + staging)
    os.makedirs(tmp_data, exist_ok=True)
    written = []
    parts = sorted(n for n in os.listdir(staging) if n.startswith("part-") and n.endswith(".parquet"))
    for i, name in enumerate(parts):
        src = posixpath.join(staging, name)
        rows = pq.read_metadata(src).num_rows
        if not rows:
            continue
        dst = posixpath.join(tmp_data, f"part-{run_id[:8]}-{i:05d}.parquet")
        os.replace(src, dst)
        written.append(WrittenFile(dst, rows, os.path.getsize(dst)))
    shutil.rmtree(staging)
    return written


def write_outputs(frames: JobFrames, job: SparkJob, side: SideOutputs, storage: dict, tmp_data: str, run_id: str) -> list[Any]:
    """Run the job: write its parts and its row errors, then its counters; return the written files.

    Local Parquet is written by Spark itself; other formats and remote sinks by our format
    writers in ``mapInArrow`` tasks, through the connectors.
    """
    from connectors.formats import WrittenFile

    w = job.write
    try:
        if w.native:
            written = _native_parquet(frames.output, w, tmp_data, run_id)
        else:
            writer = part_writer(w.sink.uri, w.sink.format, w.sink.options, storage, tmp_data, run_id, w.rows_per_file)
            rows = frames.output.mapInArrow(writer, WRITTEN_SCHEMA).collect()
            written = [WrittenFile(r["path"], r["rows"], r["bytes"]) for r in rows if r["path"] is not None]
        if frames.errors:
            errors = frames.errors[0]
            for more in frames.errors[1:]:
                errors = errors.unionByName(more)
            errors.mapInArrow(error_writer(asdict(side)), "rows long").collect()
    finally:
        for df in frames.persisted:
            df.unpersist()
    side.write("spark", batch_key([run_id, tmp_data]), [], _stats(frames))
    return written
