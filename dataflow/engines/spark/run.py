"""Execute a SparkJob: read, native steps with row errors split off, write parts, counters.

Row errors are computed as columns and split from the good rows; the marked rows are persisted so
the error write and the data write share one computation (a good row keeps only the columns later
steps read). Per-step counters come from ``DataFrame.observe`` (no extra pass) and are written to
the run's ``_stats`` side folder; the error write, after the data write, reads only the steps whose
counters show bad rows.
"""
from __future__ import annotations

import functools
import posixpath
import shutil
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable

from pyspark import StorageLevel
from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame, Observation
from pyspark.sql import functions as F

from dataflow.columns import SOURCE
from dataflow.engines.spark.columns import col
from dataflow.engines.spark.compile import SparkJob, SparkRead, SparkStep
from dataflow.engines.spark.counters import READ_STEP, Observed, bad_rows, job_stats, keep_observed, read_part, step_part
from dataflow.engines.spark.json_fast import aligned, line_key, may_be_eligible, spark_reads
from dataflow.engines.spark.python_steps import DROPS, SAMPLE_ROWS, python_step
from dataflow.engines.spark.read import file_key, read_source
from dataflow.engines.spark.lowerings import LOWERINGS
from dataflow.engines.spark.table_ops import BAD, Checked
from dataflow.engines.spark.write import WRITTEN_SCHEMA, error_writer, part_writer
from dataflow.runtime.stats import SideOutputs, batch_key

if TYPE_CHECKING:
    from dataflow.runtime.settings import CacheSettings

__all__ = ["JobFrames", "build_frames", "discard_attempt", "finish_side_outputs", "release", "shard_tag", "write_outputs"]

_ERRORS_PER_FILE = 100_000  # error records per file the error write aims at
ROWS_IN = "__df_rows_in__"  # an aggregate's hidden count of its input rows, summed by its own observation


@dataclass
class _Errors:
    """A checked step's error records, built once its observation shows it had bad rows."""

    observation: Observation
    build: Callable[[], DataFrame]


@dataclass
class JobFrames:
    """The job's output frame, its error frames, what it observed and what it persisted."""

    output: DataFrame
    errors: list[_Errors] = field(default_factory=list)
    observed: list[Observed] = field(default_factory=list)
    persisted: list[DataFrame] = field(default_factory=list)
    counted_read: bool = True
    one_task_per_file: bool = False  # a read numbers lines by row position: run the actions in json_fast.one_task_per_file

    def mark(self) -> tuple[int, int, int]:
        """Where the lists stand now, for ``undo``."""
        return len(self.errors), len(self.observed), len(self.persisted)

    def undo(self, mark: tuple[int, int, int]) -> None:
        """Forget what was added since ``mark`` (frames that will not run), unpersisting what was persisted."""
        for df in self.persisted[mark[2]:]:
            df.unpersist()
        del self.errors[mark[0]:], self.observed[mark[1]:], self.persisted[mark[2]:]


class _Builder:
    def __init__(self, observe: bool, fast_json: bool = False, streamed: frozenset[str] = frozenset()):
        self.observe = observe
        self.fast_json = fast_json
        self.streamed = streamed
        self.frames = JobFrames(output=None)
        self.tag = uuid.uuid4().hex[:8]

    def finish(
        self, result: DataFrame | Checked, index: int, op: str, drops_rows: bool, chain: str, next_is_map: bool,
        needed: frozenset[str] | None = None, read_flag: str | None = None, next_counts_input: bool = False, counted_by: Observation | None = None,
    ) -> DataFrame:
        """Observe a step's counters and split its bad rows off to the error frames.

        ``needed``: the columns later steps read (None: all). ``read_flag``: ``result`` is the
        read's check folded into this step's; the column flags the rows the read failed, which
        are counted and recorded as the read's. ``next_counts_input``: the next step counts its
        input rows itself (an aggregate's ``ROWS_IN``), so a step without row errors needs no
        observation of its own. A ``ROWS_IN`` column in ``result`` is summed and dropped.
        ``counted_by``: the observation that already counted ``result``'s rows and bad rows
        (``Checked.counted``).
        """
        checked = result if isinstance(result, Checked) else None
        df = checked.df if checked else result
        bad = F.coalesce(F.col(BAD), F.lit(False)) if checked else None
        obs = None
        if counted_by is not None:
            obs = counted_by
            self.frames.observed.append(Observed(index, op, drops_rows, obs, chain))
        elif self.observe and (checked or ROWS_IN in df.columns or not (next_is_map or next_counts_input)):
            obs = Observation(f"dataflow_{self.tag}_{chain}_{index}")
            # A Python step's marker rows (BAD null) only carry its drop count: neither rows nor bad rows.
            metrics = [F.count(F.col(BAD) if DROPS in df.columns else F.lit(1)).alias("rows")]
            if DROPS in df.columns:
                metrics.append(F.sum(DROPS).alias("drops"))
            if ROWS_IN in df.columns:
                metrics.append(F.sum(ROWS_IN).alias("rows_in"))
            if checked:
                metrics.append(F.sum(F.when(bad, 1).otherwise(0)).alias("bad"))
            if read_flag:
                metrics.append(F.sum(F.when(F.col(read_flag), 1).otherwise(0)).alias("read_bad"))
                self.frames.observed.append(Observed(READ_STEP, "read", False, obs, chain, view=read_part))
            df = df.observe(obs, *metrics)
            self.frames.observed.append(Observed(index, op, drops_rows, obs, chain, view=step_part if read_flag else None))
        elif self.observe:
            # A map step keeps the row count, and an aggregate counts its input: the next step's
            # observation counts these rows too, so no observation here (each one splits Spark's
            # generated code and costs a pass over every row).
            self.frames.observed.append(Observed(index, op, drops_rows, None, chain))
        if ROWS_IN in df.columns:
            df = df.drop(ROWS_IN)
        if checked is None:
            return df
        if obs is not None:
            if checked.errors_from is None:
                # Both the error write and the data write read these rows: compute them once. A good
                # row keeps only what later steps read; the rest is for error reasons (bad rows).
                unread = [c for c in df.columns if c != BAD and (c in checked.helpers or (needed is not None and c not in needed))]
                df = df.withColumns({c: F.when(bad, col(c)) for c in unread})
                df = df.persist(StorageLevel.MEMORY_AND_DISK)
                self.frames.persisted.append(df)
                build = functools.partial(_error_records, df, checked, bad, op, read_flag)
            else:
                build = functools.partial(_error_records_from, checked, bad, op, read_flag)
            self.frames.errors.append(_Errors(obs, build))
        return df.where(~F.col(BAD) if DROPS in df.columns else ~bad).drop(BAD, *checked.helpers)

    def chain(
        self, spark, read: SparkRead, steps: tuple[SparkStep, ...], files: list[str], side: SideOutputs, storage: dict, named: dict, chain: str, cache: CacheSettings | None = None
    ) -> DataFrame:
        args = (spark, read, steps, files, side, storage, named, chain, cache)
        if not (self.fast_json and may_be_eligible(read, files)):
            return self._chain(*args, fast=frozenset())
        # The alignment check reads every file Spark's reader can take (numpy, mostly without the
        # GIL) while Spark analyses the frames of them all on the fast path; they are dropped when a
        # file fails it, and the files that passed take the fast path beside the others.
        readable = frozenset(f for f in files if spark_reads(f) and file_key(f) not in self.streamed)
        mark = self.frames.mark()
        with ThreadPoolExecutor(max_workers=1) as pool:
            checked = pool.submit(aligned, read, files, spark)
            try:
                df = self._chain(*args, fast=readable)
            except AnalysisException:  # a file gone since it was listed: the check leaves it to the exact path, which records it
                df = None
            fast = checked.result() & readable
        if df is None or fast != readable:
            self.frames.undo(mark)
            df = self._chain(*args, fast=fast)
        self.frames.one_task_per_file |= bool(fast)
        return df

    def _chain(
        self, spark, read: SparkRead, steps: tuple[SparkStep, ...], files: list[str], side: SideOutputs, storage: dict, named: dict, chain: str,
        cache: CacheSettings | None, fast: frozenset[str],
    ) -> DataFrame:
        # A key that sorts as the lineage strings do, until the aggregate that takes its minimum.
        key = line_key(files) if len(fast) == len(files) and read.lineage and read.lineage_key_until is not None else None
        read_obs = Observation(f"dataflow_{self.tag}_{chain}_{READ_STEP}") if self.observe else None
        count = functools.partial(_counted, read_obs) if read_obs is not None else None
        df = read_source(spark, read, files, side, storage, cache, fast_json=fast, key=key, count=count, streamed=self.streamed)
        tasks = spark.sparkContext.defaultParallelism
        if fast and isinstance(df, Checked) and len(files) > tasks and _native_until_global(steps):
            # Numbered, the lines of many files need not stay one task each: a step that shuffles
            # them comes next, and each map task costs it (an aggregate's partial states, such
            # as percentile_approx's, are built, sent and merged once per task).
            df = replace(df, df=df.df.coalesce(tasks))
        kinds = [s.kind for s in steps]
        first = 0
        if isinstance(df, Checked) and df.flag and steps and steps[0].call is None:
            # Lazy frames: lowering the first step over the unsplit rows costs nothing if it is dropped.
            nxt = LOWERINGS[steps[0].name].load()(df.rows(), steps[0], named)
            if isinstance(nxt, Checked):
                # The read's check and the first step's as one: one split, one pass over the lines.
                s = steps[0]
                df = self.finish(df.then(nxt), s.index, s.name, s.drops_rows, chain, kinds[1:2] == ["map"], s.needed_after, read_flag=df.flag)
                first = 1
        if not first:
            counted_by = read_obs if isinstance(df, Checked) and df.counted else None
            df = self.finish(df, READ_STEP, "read", False, chain, next_is_map=kinds[:1] == ["map"], counted_by=counted_by)
        counts_input = [self.observe and i > first and _counts_input(s) for i, s in enumerate(steps)]
        for i, step in enumerate(steps[first:], start=first):
            if step.call is not None:
                sample = _sample(spark, read, steps[:i], files, storage, named, cache)
                df = python_step(df, step, sample)
            else:
                if counts_input[i]:
                    step = replace(step, params=step.params.model_copy(update={"aggregations": {**step.params.aggregations, ROWS_IN: "count(*)"}}))
                df = LOWERINGS[step.name].load()(df, step, named)
                if key is not None and i == read.lineage_key_until:
                    df = key.decoded(df)
            df = self.finish(df, step.index, step.name, step.drops_rows, chain, kinds[i + 1 : i + 2] == ["map"], step.needed_after, next_counts_input=counts_input[i + 1 : i + 2] == [True])
        return df


def _counted(observation: Observation, rows: DataFrame, bad: Column) -> DataFrame:
    """``rows`` observed: their count and their bad rows' (``bad``), as a checked step's observation counts them."""
    return rows.observe(observation, F.count(F.lit(1)).alias("rows"), F.sum(F.when(bad, 1).otherwise(0)).alias("bad"))


def _native_until_global(steps: tuple[SparkStep, ...]) -> bool:
    """Whether a global step (it shuffles its input) comes before any Python step."""
    for step in steps:
        if step.call is not None:
            return False
        if step.kind == "global":
            return True
    return False


def _counts_input(step: SparkStep) -> bool:
    """Whether ``step`` is a native aggregate, which can count its input rows in a hidden ``ROWS_IN`` aggregation."""
    return step.call is None and step.name == "table.aggregate"


def _sample(spark, read: SparkRead, steps: tuple[SparkStep, ...], files: list[str], storage: dict, named: dict, cache: CacheSettings | None):
    """The first rows a Python step receives, from a separate query without the run's counters (its output schema comes from them)."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="dataflow-sample-") as tmp:
        side = SideOutputs(uri=tmp, storage_options={}, stats_dir=f"{tmp}/_stats", errors_dir=f"{tmp}/_errors")
        rows = _Builder(observe=False).chain(spark, read, tuple(steps), files[:1], side, storage, named, "sample", cache)
        return rows.limit(SAMPLE_ROWS).toArrow()


def _error_records_from(checked: Checked, bad: Column, op: str, read_flag: str | None) -> DataFrame:
    """The error records of ``checked.errors_from()``: a frame of ``checked``'s columns, or a Checked with its own cases."""
    failed = checked.errors_from()
    if isinstance(failed, Checked):
        return _error_records(failed.df, failed, bad, op, read_flag)
    return _error_records(failed, checked, bad, op, read_flag)


def _error_records(failed: DataFrame, checked: Checked, bad: Column, op: str, read_flag: str | None) -> DataFrame:
    """(source, op, error_type, reason) of the bad rows among ``failed``: an error record's ``source`` is the row's ``__source__``."""
    source = F.col(SOURCE).cast("string") if SOURCE in failed.columns else F.lit(None).cast("string")
    op_name = F.when(F.col(read_flag), F.lit("read")).otherwise(F.lit(op)) if read_flag else F.lit(op)
    etype, reason = checked.error_columns()
    return failed.where(bad).select(source.alias("source"), op_name.alias("op"), etype.alias("error_type"), reason.alias("reason"))


def build_frames(
    spark, job: SparkJob, files: list[str], side: SideOutputs, storage: dict, observe: bool = True, cache: CacheSettings | None = None, fast_json: bool = False,
    streamed: frozenset[str] = frozenset(),
) -> JobFrames:
    """Build (lazily) the output frame of ``job`` over ``files``, and the frames of its row errors.

    ``cache`` (a ``CacheSettings``): remote files are read through the node-local cache tier.
    ``fast_json``: the frames are computed only by the caller's own actions (never handed out), so
    aligned local JSON lines may be read by ``json_fast``; the caller then runs those actions in
    ``json_fast.one_task_per_file`` when ``JobFrames.one_task_per_file`` says so. ``streamed``:
    files (``read.file_key``) the Python data source reads, not Spark natively.
    """
    from connectors.registry import list_files

    builder = _Builder(observe, fast_json, streamed)
    named: dict[str, DataFrame] = {}
    for side_input in job.inputs:
        src = side_input.read.source
        side_files = list_files(src.uri, src.format, src.options, storage)
        named[side_input.name] = builder.chain(spark, side_input.read, side_input.steps, side_files, side, storage, named, f"src_{side_input.name}", cache)
    builder.frames.output = builder.chain(spark, job.read, job.steps, files, side, storage, named, "main", cache)
    builder.frames.counted_read = job.read.counted
    return builder.frames


def _native_parquet(df: DataFrame, w, tmp_data: str, tag: str) -> list[Any]:
    """Write local Parquet with Spark's own writer, then give the parts our names."""
    import os

    import pyarrow.parquet as pq

    from connectors.formats import WrittenFile

    staging = posixpath.join(posixpath.dirname(tmp_data), f"spark-parquet-{tag}")
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
        dst = posixpath.join(tmp_data, f"part-{tag}-{i:05d}.parquet")
        os.replace(src, dst)
        written.append(WrittenFile(dst, rows, os.path.getsize(dst)))
    shutil.rmtree(staging)
    return written


def _native_errors(errors: DataFrame, side: SideOutputs, tag: str) -> None:
    """Write error records with Spark's JSON writer (one record per line) into the errors side folder."""
    import os

    staging = posixpath.join(posixpath.dirname(side.errors_dir), f"spark-errors-{tag}")
    errors.write.option("ignoreNullFields", "false").mode("overwrite").json("file://" + staging)
    os.makedirs(side.errors_dir, exist_ok=True)
    for i, name in enumerate(sorted(n for n in os.listdir(staging) if n.startswith("part-"))):
        src = posixpath.join(staging, name)
        if os.path.getsize(src):
            os.replace(src, posixpath.join(side.errors_dir, f"spark-{tag}-{i:05d}.jsonl"))
    shutil.rmtree(staging)


def write_outputs(frames: JobFrames, job: SparkJob, side: SideOutputs, storage: dict, tmp_data: str, run_id: str, publish_root: str | None = None) -> list[Any]:
    """Run the job: write its parts and its row errors, then its counters; return the written files.

    Local Parquet and local error records are written by Spark itself; other formats and remote
    sinks by our writers in ``mapInArrow`` tasks, through the connectors.
    """
    from connectors.formats import WrittenFile

    w = job.write
    tag = shard_tag(run_id, tmp_data)
    left_out = [*w.leaves_out, *(() if w.sink.lineage else (SOURCE,))]
    output = frames.output.drop(*left_out) if left_out else frames.output
    try:
        with keep_observed(output.sparkSession):
            if w.native:
                written = _native_parquet(output, w, tmp_data, tag)
            else:
                writer = part_writer(w.sink.uri, w.sink.format, w.sink.options, storage, tmp_data, tag, w.rows_per_file, publish_root, w.max_file_bytes)
                rows = output.mapInArrow(writer, WRITTEN_SCHEMA).collect()
                written = [WrittenFile(r["path"], r["rows"], r["bytes"]) for r in rows if r["path"] is not None]
    except BaseException:
        release(frames)
        raise
    finish_side_outputs(frames, side, run_id, tmp_data)
    return written


def shard_tag(run_id: str, tmp_data: str) -> str:
    """The name the shard's written files carry: files are named after the run and the shard (its tmp folder), so shards of one run commit side by side."""
    return batch_key([run_id, tmp_data])[:8]


def discard_attempt(side: SideOutputs, tmp_data: str, run_id: str, publish_root: str | None = None) -> None:
    """Remove what a stopped ``write_outputs`` of the shard left: its temporary folder (parts, side outputs) and the parts it uploaded to final names."""
    from connectors.registry import filesystem

    fs = filesystem(side.uri, side.storage_options)
    tmp = posixpath.dirname(tmp_data)
    if fs.exists(tmp):
        fs.rm(tmp, recursive=True)
    if publish_root is not None:
        tag = shard_tag(run_id, tmp_data)
        for path in [*fs.glob(f"{publish_root}/part-{tag}-*"), *fs.glob(f"{publish_root}/files-{tag}-*")]:
            fs.rm(path)


def release(frames: JobFrames) -> None:
    """Unpersist the frames the error split persisted."""
    for df in frames.persisted:
        df.unpersist()


def finish_side_outputs(frames: JobFrames, side: SideOutputs, run_id: str, tmp_data: str) -> None:
    """After the data's action: write the row errors of the steps that met bad rows, release the persisted frames, write the counters."""
    from connectors.registry import scheme_of

    key = batch_key([run_id, tmp_data])
    tag = key[:8]
    try:
        # Only steps that met bad rows (their counters say so, now that the data is written) are read again.
        counts = [bad_rows(e.observation) for e in frames.errors]
        wanted = [e.build() for e, n in zip(frames.errors, counts) if n != 0]
        if wanted:
            errors = wanted[0]
            for more in wanted[1:]:
                errors = errors.unionByName(more)
            parallelism = errors.sparkSession.sparkContext.defaultParallelism
            files = parallelism if None in counts else max(1, min(parallelism, -(-sum(counts) // _ERRORS_PER_FILE)))
            if scheme_of(side.uri) == "file":
                _native_errors(errors.coalesce(files), side, tag)
            else:
                errors.coalesce(files).mapInArrow(error_writer(asdict(side)), "rows long").collect()
    finally:
        release(frames)
    side.write("spark", key, [], job_stats(frames.observed, frames.counted_read))
