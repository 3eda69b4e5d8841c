"""SparkEngine: compile plans to SparkJobs and run them on a local or remote Spark."""
from __future__ import annotations

import contextlib
from dataclasses import replace
from typing import Any

from dataflow.engines.base import Engine, EngineCaps, RunContext, RunOptions
from dataflow.engines.spark.compile import READ_METHODS, SparkJob, compile_plan
from dataflow.engines.spark.lowerings import LOWERINGS

__all__ = ["NATIVE_FAILURES", "SparkEngine"]

NATIVE_FAILURES = 8  # files a shard's job may stop at (each costs one more run of the job) before the Python data source reads all of its files


class SparkEngine(Engine):
    """Spark: native DataFrame lowerings of table ops for semi-structured data (logs, JSON, tables).

    The runner hands it one shard of the input files per job, one job at a time on the one
    session (Spark parallelises within a job), and stages each shard as it commits. Each shard
    is a whole Spark job, and with more than one shard a global step (aggregate, window, dedup,
    join) runs after a checkpoint of every shard's rows: one more write and read of the whole
    map output. So shards default to at least 512 files (at 64, the 74 files of
    ``benchmarks/spark_table.py``'s default input made two shards and that extra pass);
    ``source.options.files_per_shard`` sets the size, for a finer resume.

    Spark reads Parquet pages and plain line files natively, and its job stops at a file it cannot
    read (a corrupt data page, a file removed while the job runs). The shard's job then runs again
    with that file read by the Python data source, which records what does not read as row errors
    (a row group, a file gone) and keeps the rest, as the Ray engine does. Past ``NATIVE_FAILURES``
    such files the shard's job runs once more with every file of the shard read by the Python data
    source, which does not stop at a file: a shard of many damaged files costs at most that many
    runs more, and loses no file.
    """

    caps = EngineCaps(
        name="spark", requires="pyspark", ops=LOWERINGS.keys(), source_formats=frozenset(READ_METHODS), shard_workers=1, min_files_per_shard=512, whole_listing=True,
        python_table_ops=True,
    )

    def compile(self, plan) -> SparkJob:
        return compile_plan(plan)

    def prepare(self, job: SparkJob, inputs: list[str], storage: dict) -> SparkJob:
        """Pin what each shard would otherwise derive from its own files: an undeclared JSON schema.

        Inferred once from the first files of the whole sorted input, so every shard (and a
        resumed run) writes the same columns and types.
        """
        from connectors.formats.lines import max_line_bytes
        from dataflow.engines.spark.json_schema import infer_json_fields, sample_lines

        source = job.read.source
        if source.format != "jsonl" or source.options.get("schema") or not inputs:
            return job
        fields = infer_json_fields(sample_lines(inputs, storage, max_line_bytes(source.options)))
        pinned = source.model_copy(update={"options": {**source.options, "schema": fields}})
        return replace(job, read=replace(job.read, source=pinned))

    def start(self, options: RunOptions, job: SparkJob | None = None) -> None:
        """Start or join the Spark session (the runner calls it while it lists the inputs)."""
        from dataflow.engines.spark.session import ensure_spark

        ensure_spark(options.spark_master)

    def _files(self, job: SparkJob, ctx: RunContext) -> list[str]:
        from connectors.registry import list_files

        src = job.read.source
        if ctx.inputs is not None or src.in_memory:
            return list(ctx.inputs or [src.uri])
        return list_files(src.uri, src.format, src.options, ctx.storage_options)

    def execute(self, job: SparkJob, ctx: RunContext, options: RunOptions) -> list[Any]:
        from dataflow.engines.spark.json_fast import one_task_per_file
        from dataflow.engines.spark.progress import spark_progress
        from dataflow.engines.spark.read import file_key
        from dataflow.engines.spark.run import build_frames, discard_attempt, write_outputs
        from dataflow.engines.spark.session import WRITE_CONFS, ensure_spark, session_confs

        spark = ensure_spark(options.spark_master)
        files, streamed = self._files(job, ctx), frozenset()
        with spark_progress(spark, enabled=options.progress):
            while True:
                frames = build_frames(spark, job, files, ctx.side, ctx.storage_options, cache=ctx.cache, fast_json=True, streamed=streamed)
                try:
                    with session_confs(spark, WRITE_CONFS), one_task_per_file(spark) if frames.one_task_per_file else contextlib.nullcontext():
                        return write_outputs(frames, job, ctx.side, ctx.storage_options, ctx.tmp_data, ctx.run_id, ctx.publish_root)
                except Exception as exc:
                    failed = _stopped_at(exc)
                    if failed is None or failed in streamed:
                        raise
                    streamed |= {failed}
                    if len(streamed) > NATIVE_FAILURES:
                        streamed = frozenset(file_key(f) for f in files)
                    discard_attempt(ctx.side, ctx.tmp_data, ctx.run_id, ctx.publish_root)

    def take(self, job: SparkJob, n: int, ctx: RunContext, options: RunOptions) -> list[dict[str, Any]]:
        from dataflow.engines.spark.json_fast import one_task_per_file
        from dataflow.engines.spark.run import build_frames
        from dataflow.engines.spark.session import ensure_spark

        spark = ensure_spark(options.spark_master)
        frames = build_frames(spark, job, self._files(job, ctx), ctx.side, ctx.storage_options, observe=False, fast_json=True)
        with one_task_per_file(spark) if frames.one_task_per_file else contextlib.nullcontext():
            rows = frames.output.limit(n).collect()
        return [{k: bytes(v) if isinstance(v, bytearray) else v for k, v in row.asDict().items()} for row in rows]

    def hold(self, job: SparkJob, ctx: RunContext, options: RunOptions) -> tuple[Any, int]:
        """Run ``job`` into a persisted DataFrame, not its sink: the DataFrame and its rows (``Pipeline.to_spark``)."""
        from dataflow.engines.spark.memory_io import hold_output
        from dataflow.engines.spark.progress import spark_progress
        from dataflow.engines.spark.session import ensure_spark

        spark = ensure_spark(options.spark_master)
        with spark_progress(spark, enabled=options.progress):
            return hold_output(spark, job, replace(ctx, inputs=tuple(self._files(job, ctx))))

    def from_held(self, value: Any, kind: str, options: RunOptions = RunOptions()):
        """A DataFrame over another engine's held output, on this process's Spark session (``Pipeline.to_spark``)."""
        from dataflow.engines.spark.memory_io import from_held
        from dataflow.engines.spark.session import ensure_spark

        return from_held(ensure_spark(options.spark_master), value, kind)


def _stopped_at(exc: Exception) -> str | None:
    """The input file (``read.file_key``) a Spark job stopped at because it could not read it, named in its failure."""
    from urllib.parse import unquote

    from dataflow.engines.spark.read import file_key
    from dataflow.runtime.failure import failure_text, unreadable_input, vanished_input

    for text in (failure_text(exc), str(exc)):
        path = vanished_input(text) or unreadable_input(text)
        if path is not None:
            return file_key(unquote(path))
    return None

