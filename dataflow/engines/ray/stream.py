"""Every shard of a run in one streaming Ray Dataset: no fixed cost per shard.

One read over all the shards' files (sorted, so shard by shard) feeds the job's stages and the
writers; every task splits its batch by shard (``routed.Routed`` over ``ShardRoutes``) and writes
each part's files, counters and row errors under that shard's tmp folder, as the per-shard path
does. The Dataset runs with ``preserve_order``: the writers' results reach the driver in input
order, so once a result of shard ``k`` arrives every shard before ``k`` is complete, and the
runner stages (commits) it while the stream goes on. A killed run resumes from those shards.

A run of whole-file reads and task stages only is one task chain (``run.stream_fused``): the
read, the stages and the writers fused, a task per read bundle, the writers cutting whole blocks
into files of ``rows_per_file`` rows. Otherwise (actor pools, Parquet row groups, WebDataset
shards) the stages and the writers stay apart from the read (``run.stream_concurrency``).

Runs the stream cannot do go through ``Engine.execute_shards`` (one Dataset per shard): a single
shard, global steps, named sources, in-memory sources and sources whose lineage is kept.
"""
from __future__ import annotations

import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

from dataflow.columns import SOURCE
from dataflow.engines.base import RunOptions, ShardRun
from dataflow.engines.ray.compile import ARROW, RayGlobal, RayJob
from dataflow.engines.ray.routed import SHARD, Routed, ShardPlace
from dataflow.engines.ray.run import ShardWriter, build_dataset, quiet_few_inputs, stream_concurrency, stream_fused
from dataflow.runtime.routes import ShardRoutes

__all__ = ["stream_shards", "streamable"]

# The read and the writers are capped at two tasks per CPU (run.stream_concurrency), which Ray Data reports as a
# UserWarning when a small run feeds them fewer blocks: expected, not the user's concern.
warnings.filterwarnings("ignore", message="The maximum number of concurrent tasks for", category=UserWarning)


def streamable(job: RayJob, runs: list[ShardRun]) -> bool:
    """Whether ``runs`` can go through one streaming Dataset (else one Dataset per shard)."""
    source = job.read.source
    return (
        sum(1 for r in runs if r.shard.inputs) > 1
        and job.write is not None
        and not job.inputs
        and not any(isinstance(s, RayGlobal) for s in job.stages)
        and not source.in_memory
        and not source.options.get("keep_lineage")
    )


def stream_shards(job: RayJob, runs: list[ShardRun], options: RunOptions, done: Callable[[ShardRun, list[Any]], bool]) -> None:
    """Run ``runs`` as one Dataset; call ``done(run, written)`` as each shard completes, in shard order; stop when it returns False."""
    from ray.data import DataContext

    from connectors.formats import WrittenFile

    for run in runs:
        if not run.shard.inputs and not done(run, []):
            return
    live = [r for r in runs if r.shard.inputs]
    routes = ShardRoutes([r.shard.inputs[0] for r in live], [ShardPlace(r.ctx.side, r.ctx.tmp_data) for r in live], min(len(r.shard.inputs) for r in live))
    first = live[0].ctx
    files = tuple(f for r in live for f in r.shard.inputs)
    context = DataContext.get_current()
    kept = context.execution_options.preserve_order
    context.execution_options.preserve_order = True  # results in input order: how the driver knows a shard is complete
    try:
        ds = build_dataset(job, None, first.storage_options, inputs=files, cache=first.cache, partitions=options.shuffle_partitions, routes=routes)
        writer = ShardWriter(job, first.storage_options, first.tmp_data, first.run_id, first.publish_root)
        quiet_few_inputs()
        # Fused with the read (whole blocks, cut into files of rows_per_file rows) or apart from the stages (see run.stream_concurrency).
        per_file = None if stream_fused(job) else job.write.rows_per_file
        out = ds.map_batches(Routed(routes, SOURCE, fn=writer, tag=True), batch_size=per_file, batch_format=ARROW, **stream_concurrency(routes))
        written: list[list[Any]] = [[] for _ in live]
        complete, rows, files, last, start = 0, 0, 0, None, time.monotonic()
        for batch in out.iter_batches(batch_size=None, batch_format="numpy"):
            for p, r, b, pos in zip(batch["path"], batch["rows"], batch["bytes"], batch[SHARD]):
                written[int(pos)].append(WrittenFile(str(p), int(r), int(b)))
                rows, files = rows + int(r), files + 1
            newest = int(batch[SHARD].max()) if len(batch[SHARD]) else complete
            for pos in range(complete, newest):  # every shard before the newest one seen is complete
                if not done(live[pos], written[pos]):
                    return
            complete = max(complete, newest)
            if options.progress and not sys.stderr.isatty() and (last is None or time.monotonic() - last > 5):
                last = time.monotonic()
                print(f"dataflow: {rows} rows written in {files} files, {last - start:.0f}s", file=sys.stderr, flush=True)
        for pos in range(complete, len(live)):
            if not done(live[pos], written[pos]):
                return
    finally:
        context.execution_options.preserve_order = kept
