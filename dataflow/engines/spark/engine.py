"""SparkEngine: compile plans to SparkJobs and run them on a local or remote Spark."""
from __future__ import annotations

from typing import Any

from dataflow.engines.base import RunContext, RunOptions
from dataflow.engines.spark.compile import SparkJob, compile_plan, supports

__all__ = ["SparkEngine"]


class SparkEngine:
    """Spark: native DataFrame lowerings of table ops for semi-structured data (logs, JSON, tables).

    Spark partitions its input itself, so the runner hands it every input file as one shard.
    """

    name = "spark"
    partitions_inputs = True
    supports = staticmethod(supports)

    def compile(self, plan) -> SparkJob:
        return compile_plan(plan)

    def _files(self, job: SparkJob, ctx: RunContext) -> list[str]:
        from connectors.registry import list_files

        if ctx.inputs is not None:
            return list(ctx.inputs)
        src = job.read.source
        return list_files(src.uri, src.format, src.options, ctx.storage_options)

    def execute(self, job: SparkJob, ctx: RunContext, options: RunOptions) -> list[Any]:
        from dataflow.engines.spark.run import build_frames, write_outputs
        from dataflow.engines.spark.session import ensure_spark

        spark = ensure_spark(options.spark_master)
        frames = build_frames(spark, job, self._files(job, ctx), ctx.side, ctx.storage_options)
        return write_outputs(frames, job, ctx.side, ctx.storage_options, ctx.tmp_data, ctx.run_id)

    def take(self, job: SparkJob, n: int, ctx: RunContext, options: RunOptions) -> list[dict[str, Any]]:
        from dataflow.engines.spark.run import build_frames
        from dataflow.engines.spark.session import ensure_spark

        spark = ensure_spark(options.spark_master)
        frames = build_frames(spark, job, self._files(job, ctx), ctx.side, ctx.storage_options, observe=False)
        return [{k: bytes(v) if isinstance(v, bytearray) else v for k, v in row.asDict().items()} for row in frames.output.limit(n).collect()]
