"""RayEngine: compile plans to RayJobs and run them on a local or remote Ray cluster."""
from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from dataflow.engines.base import Engine, EngineCaps, RunContext, RunOptions, ShardRun
from dataflow.engines.ray.compile import ARROW, RayJob, compile_plan
from dataflow.batch import from_arrow, length, to_rows

__all__ = ["RayEngine"]


class RayEngine(Engine):
    """Ray Data: streaming execution, actor pools for stateful and GPU stages; runs every op and reads every format."""

    caps = EngineCaps(name="ray", requires="ray")

    def compile(self, plan) -> RayJob:
        return compile_plan(plan)

    def start(self, options: RunOptions, job: RayJob | None = None) -> None:
        """Start or join Ray (the runner calls it on the main thread, while it lists the inputs), warm the workers for ``job`` and set up Ray Data."""
        import logging

        from dataflow.engines.ray.session import ensure_ray, operators_share_resources, prompt_resource_limits, warm_workers

        ensure_ray(options.address, options.object_store_memory, options.spill_dir, verbose=options.verbose)  # before ray is imported
        warm_workers(job)  # in the background: the workers start and import while this thread imports Ray Data, lists and plans
        from ray.data import DataContext

        logging.getLogger("ray.data").setLevel(logging.INFO if options.verbose else logging.ERROR)
        ctx = DataContext.get_current()
        ctx.enable_progress_bars = bool(options.progress and sys.stderr.isatty())
        ctx.print_on_execution_start = False
        prompt_resource_limits()
        ctx.op_resource_reservation_enabled = operators_share_resources()
        if options.max_cpus is not None or options.max_gpus is not None:
            from ray.data import ExecutionResources

            # A share of a borrowed cluster: Ray Data schedules within it (stages are clamped in run._stage_kwargs).
            ctx.execution_options.resource_limits = ExecutionResources.for_limits(cpu=options.max_cpus, gpu=options.max_gpus)

    def parallelism(self) -> float | None:
        """The connected cluster's CPUs, or the run's share of them (``--max-cpus``)."""
        from dataflow.engines.ray.session import cluster_cpus

        cpus = cluster_cpus()
        from ray.data import DataContext

        limit = DataContext.get_current().execution_options.resource_limits.cpu
        return min(cpus, limit) if limit and limit != float("inf") else cpus

    def warm(self):
        """The warm-up of ``session.warm_workers`` (set when it ended, or at once when it is off)."""
        from dataflow.engines.ray.session import warmed

        return warmed()

    def execute_shards(self, job: RayJob, runs: list[ShardRun], options: RunOptions, done: Callable[[ShardRun, list[Any]], bool]) -> None:
        """With ``options.stream_shards``, every shard in one streaming Dataset (``stream.stream_shards``) where it can; else one Dataset per shard."""
        from dataflow.engines.ray.stream import stream_shards, streamable

        if not options.stream_shards or not streamable(job, runs):
            return super().execute_shards(job, runs, options, done)
        self.start(options)
        stream_shards(job, runs, options, done)

    def execute(self, job: RayJob, ctx: RunContext, options: RunOptions) -> list[Any]:
        from dataflow.engines.ray.run import build_dataset, stream_written

        self.start(options)
        ds = build_dataset(job, ctx.side, ctx.storage_options, inputs=ctx.inputs, cache=ctx.cache, partitions=options.shuffle_partitions)
        return stream_written(job, ds, ctx.storage_options, ctx.tmp_data, ctx.run_id, options.progress, ctx.publish_root)

    def take(self, job: RayJob, n: int, ctx: RunContext, options: RunOptions) -> list[dict[str, Any]]:
        from dataflow.engines.ray.run import build_dataset

        self.start(options)
        ds = build_dataset(job, ctx.side, ctx.storage_options, limit=n, partitions=options.shuffle_partitions)
        rows: list[dict[str, Any]] = []
        for batch in ds.iter_batches(batch_size=None, batch_format=ARROW):
            batch = from_arrow(batch)
            rows += to_rows(batch)[: n - len(rows)] if length(batch) else []
            if len(rows) >= n:
                break
        return rows

    def hold(self, job: RayJob, ctx: RunContext, options: RunOptions) -> tuple[Any, int]:
        """Run ``job`` into Ray's object store, not its sink: the materialized Dataset and its rows (``Pipeline.to_ray``)."""
        from dataflow.engines.ray.memory_io import hold_output

        self.start(options)
        return hold_output(job, ctx, options)

    def from_held(self, value: Any, kind: str, options: RunOptions = RunOptions()):
        """A Dataset over another engine's held output (``Pipeline.to_ray``; see ``memory_io.from_held``)."""
        from dataflow.engines.ray.memory_io import from_held

        self.start(options)
        return from_held(value, kind)
