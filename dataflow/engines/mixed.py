"""MixedEngine: a plan whose steps run on more than one engine, segment by segment."""
from __future__ import annotations

import posixpath
import uuid
from dataclasses import replace
from typing import Any

from dataflow.engines.base import Engine, EngineCaps, RunContext, RunOptions
from dataflow.errors import RunError
from dataflow.plan.handoff import MixedJob, split_at_handoffs
from dataflow.runtime.stage import StepStats
from dataflow.runtime.stats import read_stats

__all__ = ["MixedEngine"]


class MixedEngine(Engine):
    """Runs a plan's engine segments in order; each hands its rows to the next as Parquet.

    Segment k writes under ``<shard tmp>/handoff-k/``, which segment k+1 reads; the folders lie in
    the run's ``_tmp/<run_id>/`` and are removed with it after the commit. Counters of a handoff
    read are not input rows, so they are left out of the run's read counters.
    """

    def __init__(self, engines: list[Engine]):
        self.engines = engines
        self.caps = EngineCaps(name="+".join(e.name for e in engines), partitions_inputs=True)

    def compile(self, plan: Any) -> MixedJob:
        """Lower each segment of ``plan`` (split at its handoffs) on its engine."""
        segments = split_at_handoffs(plan)
        return MixedJob(plan=plan, segments=tuple(segments), jobs=tuple(e.compile(seg) for e, seg in zip(self.engines, segments)))

    def start(self, options: RunOptions, job: MixedJob | None = None) -> None:
        for k, engine in enumerate(self.engines):
            engine.start(options, None if job is None else job.jobs[k])

    def _segment(self, job: MixedJob, k: int, ctx: RunContext, inputs):
        from connectors.registry import list_files

        folder = posixpath.dirname(ctx.tmp_data)
        scheme = ctx.side.uri.split("://", 1)[0] if "://" in ctx.side.uri and not ctx.side.uri.startswith("file://") else None
        uris = [f"{scheme}://{posixpath.join(folder, f'handoff-{i + 1}').lstrip('/')}" if scheme else posixpath.join(folder, f"handoff-{i + 1}") for i in range(len(job.segments) - 1)]
        plan = job.bind(k, uris)
        last = k == len(job.segments) - 1
        stats_dir = ctx.side.stats_dir if k == 0 else posixpath.join(folder, f"_stats_handoff-{k}")
        sub = replace(ctx, tmp_data=ctx.tmp_data if last else posixpath.join(folder, f"handoff-{k + 1}"), side=replace(ctx.side, stats_dir=stats_dir), inputs=inputs)
        sub = replace(sub, publish_root=ctx.publish_root if last else None)  # handoffs stay in tmp
        if k > 0:
            src = plan.nodes[0].source
            sub = replace(sub, inputs=tuple(list_files(src.uri, src.format, src.options, ctx.storage_options)))
        return self.engines[k], self.engines[k].compile(plan), sub

    def execute(self, job: MixedJob, ctx: RunContext, options: RunOptions) -> list[Any]:
        return self._run(job, ctx, options, hold=False)

    def hold(self, job: MixedJob, ctx: RunContext, options: RunOptions) -> tuple[Any, int]:
        """Run the segments in order (each handoff through Parquet), the last one into its engine's memory (``Engine.hold``)."""
        return self._run(job, ctx, options, hold=True)

    def _run(self, job: MixedJob, ctx: RunContext, options: RunOptions, hold: bool):
        from connectors.registry import filesystem

        written: list[Any] = []
        held = None
        for k in range(len(job.segments)):
            engine, sub_job, sub = self._segment(job, k, ctx, ctx.inputs)
            handed = sum(f.rows for f in written)
            if hold and k == len(job.segments) - 1:
                held = engine.hold(sub_job, sub, options)
            else:
                written = engine.execute(sub_job, sub, options)
            if k > 0:
                fs = filesystem(ctx.side.uri, ctx.storage_options)
                stats = read_stats(fs, [sub.side.stats_dir])
                read = stats.pop(-1, StepStats())
                if read.rows_in != handed:
                    raise RunError(
                        f"handoff {k} ({self.engines[k - 1].name} -> {engine.name}): {engine.name} read {read.rows_in} rows, "
                        f"but {self.engines[k - 1].name} wrote {handed} (a bug in the engine, not bad data; nothing was published)"
                    )
                ctx.side.write(f"handoff-{k}", uuid.uuid4().hex[:12], [], stats)
                fs.rm(sub.side.stats_dir, recursive=True)
        return held if hold else written

    def take(self, job: MixedJob, n: int, ctx: RunContext, options: RunOptions) -> list[dict[str, Any]]:
        for k in range(len(job.segments) - 1):
            engine, sub_job, sub = self._segment(job, k, ctx, ctx.inputs)
            engine.execute(sub_job, sub, options)
        engine, sub_job, sub = self._segment(job, len(job.segments) - 1, ctx, None)
        return engine.take(sub_job, n, sub, options)
