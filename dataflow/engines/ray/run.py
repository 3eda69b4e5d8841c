"""Execute a RayJob: a streaming ray.data pipeline, shard writers, then the driver's commit."""
from __future__ import annotations

import posixpath
import sys
import time
from typing import TYPE_CHECKING, Any, Iterator

import numpy as np
import pyarrow as pa

from dataflow.columns import SOURCE, is_working, working_column_reason
from dataflow.engines.ray.compile import ARROW, LINE_FORMATS, RayGlobal, RayJob, RayStage
from dataflow.engines.ray.devices import worker_calls
from dataflow.engines.ray.fused_read import ReadFusedStage, scans_files
from dataflow.engines.ray.fused_stage import FusedStageFn, fused_stage
from dataflow.engines.ray.global_ops import apply_global
from dataflow.engines.ray.routed import Routed, ShardPlace
from dataflow.engines.ray.read import FILES_PER_TASK, FetchFiles, ReadStream, listing_items, record_cache
from dataflow.engines.ray.session import cluster_cpus, executing
from dataflow.batch import Columns, from_arrow, length, plain_arrow, take
from dataflow.lineage import ROW, ROW_GROUP
from dataflow.runtime.error_sink import ErrorRecord
from dataflow.runtime.io_stats import record_io, shard_tmp_of
from dataflow.runtime.routes import ShardRoutes
from dataflow.runtime.stage import StageExecutor, StepCall, StepStats
from dataflow.runtime.stats import SideOutputs, batch_key

if TYPE_CHECKING:
    from dataflow.runtime.settings import CacheSettings

__all__ = ["build_dataset", "quiet_few_inputs", "stream_concurrency", "stream_fused", "stream_written", "written_dataset"]

READ_STEP = -1
NAMED_READ_STEP = -2  # bad records of named sources (a join's right side)
ACTOR_MAX_RESTARTS = 3


class ReadAdapter:
    """Turn fetched whole files into rows with a ``__source__`` URI, or read Parquet row groups."""

    def __init__(self, scheme_prefix: str, parse: str | None, options: dict[str, Any], side: SideOutputs, storage_options: dict, cache: CacheSettings | None = None):
        self.prefix, self.parse, self.options, self.side = scheme_prefix, parse, options, side
        self.storage_options, self.cache = storage_options, cache

    def __call__(self, batch: Columns) -> Columns | pa.Table:
        if self.parse == "parquet":
            return self._parquet(batch)
        paths = [self.prefix + str(p) for p in batch.pop("path")]
        batch[SOURCE] = np.array(paths, dtype=object)
        self.side.write("read", batch_key(paths), [], {READ_STEP: StepStats(rows_in=len(paths), rows_out=length(batch))})
        return batch

    def _parquet(self, batch: Columns) -> pa.Table:
        """The batch's row groups as one Arrow table: types kept as stored (no Python values in between)."""
        from connectors.registry import cache_counters, filesystem, io_counters, read_parquet_part, unreadable_parquet

        parts, errors = [], []
        names = [f"{u}{ROW_GROUP}{g}" for u, g in zip(batch["uri"], batch["row_group"])]
        fs = filesystem(str(batch["uri"][0]), self.storage_options, self.cache) if len(names) else None
        before, io_before = cache_counters(fs), io_counters()
        for name, uri, group, first in zip(names, batch["uri"], batch["row_group"], batch["first_row"]):
            try:
                table = read_parquet_part(str(uri), int(group), self.storage_options, self.options.get("columns"), cache=self.cache)
            except (pa.ArrowException, OSError, IndexError) as exc:  # a footer (row group -1) or a row group that does not read
                bad = unreadable_parquet(str(uri) if group < 0 else name, exc)
                errors.append(ErrorRecord.of_read(bad))
                continue
            # A ``__source__`` column in the data (an earlier pipeline's lineage) is replaced by this
            # read's, unless the source says to keep it (the Parquet handoff between engines).
            if self.options.get("keep_lineage") and SOURCE in table.column_names:
                lineage = table.column(SOURCE).cast(pa.string())
            else:
                lineage = pa.array([f"{uri}{ROW}{int(first) + i}" for i in range(table.num_rows)], pa.string())
            if SOURCE in table.column_names:
                table = table.drop_columns([SOURCE])
            parts.append(_without_working(table.add_column(0, SOURCE, lineage), errors))
        out = pa.concat_tables(parts, promote_options="permissive") if parts else pa.table({SOURCE: pa.array([], pa.string())})
        st = StepStats(rows_in=out.num_rows + len(errors), rows_out=out.num_rows, rows_errored=len(errors))
        self.side.write("read", batch_key(names), errors, {READ_STEP: st})
        record_cache(self.side, "read", batch_key(names), before, cache_counters(fs))
        record_io(self.side.uri, self.side.storage_options, shard_tmp_of(self.side), "read", batch_key(names), io_before, io_counters())
        return out


def _without_working(table: pa.Table, errors: list[ErrorRecord]) -> pa.Table:
    """``table`` without its columns spelled like dataflow's working columns; a row holding a value in one is added to ``errors``."""
    working = [c for c in table.column_names if is_working(c)]
    if not working:
        return table
    reasons, held = np.full(table.num_rows, None, dtype=object), np.zeros(table.num_rows, dtype=bool)
    for name in reversed(working):  # a row's reason names the first such column it holds a value in
        valid = table.column(name).is_valid().to_numpy(zero_copy_only=False)
        reasons[valid], held = working_column_reason(name), held | valid
    sources = table.column(SOURCE).to_pylist()
    errors += [ErrorRecord(sources[i], "read", "ValueError", reasons[i]) for i in np.flatnonzero(held)]
    return table.filter(pa.array(~held)).drop_columns(working)


class StageFn:
    """A fused stage as Ray runs it: built once per worker (per actor for pools)."""

    def __init__(self, stage: RayStage, side: SideOutputs):
        self.stage, self.side = stage, side
        self._executor: StageExecutor | None = None

    def __call__(self, batch: pa.Table) -> Iterator[Columns | pa.Table]:
        """The stage's output of ``batch``, in pieces of its ``batch_size`` rows for a media stage or a given one (a block as it came from the read)."""
        if self._executor is None:
            # Here, in the worker: the GPU implementations run only where Ray gave this worker a GPU.
            self._executor = StageExecutor(*worker_calls(list(self.stage.calls), self.stage.num_gpus), keeps=list(self.stage.keeps) or None)
        rows = max(batch.num_rows, 1)  # an empty batch runs once, as one piece
        size = min(self.stage.batch_size, rows) if self.stage.media or self.stage.batch_given else rows
        for start in range(0, rows, size):
            piece = batch.slice(start, size)
            key = batch_key(piece.column(SOURCE) if SOURCE in piece.column_names else [])
            # Plain Arrow goes in as is (Arrow steps then run without numpy in between); Ray's tensor columns as ndarrays.
            out, errors, stats = self._executor.run(piece if plain_arrow(piece) else from_arrow(piece))
            self.side.write(self.stage.name, key, errors, stats)
            yield out


class ShardWriter:
    """Write one batch as output file(s): local sinks under the run's temporary data folder.

    Files are named after the batch's ``__source__``, which is left out of them when the sink
    says ``lineage: false``; consumed input columns the plan leaves out are not written either.

    On remote storage each file is written on local scratch and uploaded whole, once
    (``connectors.storage.scratch``): to its final name under ``publish_root`` when the runner
    gives one (the manifest, written at commit, publishes it), else under ``tmp_data``. A failed
    task never leaves a partial remote object.
    """

    def __init__(self, job: RayJob, storage_options: dict, tmp_data: str, run_id: str, publish_root: str | None = None):
        self.job, self.storage_options, self.tmp_data, self.run_id = job, storage_options, tmp_data, run_id
        self.publish_root = publish_root

    def __call__(self, batch: pa.Table) -> Columns:
        from connectors.registry import filesystem, format_connector, io_counters, storage_traits, write_through_scratch

        sink = self.job.write.sink
        fs = filesystem(sink.uri, self.storage_options)
        writer = format_connector(sink.format)
        n = batch.num_rows
        if n == 0:
            return {"path": np.array([], dtype=object), "rows": np.array([], dtype=np.int64), "bytes": np.array([], dtype=np.int64)}
        key = batch_key(batch[SOURCE])
        left_out = {*self.job.write.leaves_out, *(() if sink.lineage else (SOURCE,))}
        if sink.format == "parquet" and plain_arrow(batch):
            # Arrow to Arrow: every column keeps its stored type (a struct's int32, a list's int16, a float32).
            parts = _split_table(batch.drop_columns([c for c in batch.column_names if c in left_out]), self.job.write.rows_per_file, self.job.write.max_file_bytes)
        else:
            cols = {k: v for k, v in from_arrow(batch).items() if k not in left_out}
            per_file = self.job.write.rows_per_file  # a batch may hold more rows (a streamed run's writers take whole blocks)
            parts = [p for i in range(0, n, per_file) for p in _split_by_bytes(take(cols, np.arange(i, min(i + per_file, n))) if n > per_file else cols, self.job.write.max_file_bytes)]
        local = storage_traits(sink.uri).is_local
        folder = self.tmp_data if local else (self.publish_root or self.tmp_data)
        before = io_counters()
        written = []
        for i, part in enumerate(parts):
            suffix = f"-{i}" if len(parts) > 1 else ""
            stem = f"part-{self.run_id[:8]}-{key}{suffix}"
            name = f"{stem}.{writer.extension}" if writer.extension else f"files-{self.run_id[:8]}-{key}{suffix}"
            if local:
                written += writer.write(fs, posixpath.join(folder, name), part, sink.options)
            else:
                written += write_through_scratch(fs, posixpath.join(folder, name), lambda lfs, path, part=part: writer.write(lfs, path, part, sink.options))
        record_io(sink.uri, self.storage_options, posixpath.dirname(self.tmp_data), "write", key, before, io_counters())
        return {
            "path": np.array([w.path for w in written], dtype=object),
            "rows": np.array([w.rows for w in written], dtype=np.int64),
            "bytes": np.array([w.bytes for w in written], dtype=np.int64),
        }


def _split_table(table: pa.Table, rows_per_file: int, max_bytes: int) -> list[pa.Table]:
    """``table`` in files of at most ``rows_per_file`` rows and, where rows allow, ``max_bytes`` bytes."""
    n = table.num_rows
    per_file = max(1, min(rows_per_file, int(n * max_bytes / table.nbytes) if table.nbytes > max_bytes else n))
    return [table.slice(i, per_file) for i in range(0, n, per_file)]


def _row_bytes(batch: Columns) -> int:
    total = 0
    for v in batch.values():
        if v.dtype == object:
            total += sum(len(x) if isinstance(x, (bytes, str)) else (x.nbytes if isinstance(x, np.ndarray) else 16) for x in v)
        else:
            total += v.nbytes
    return total


def _split_by_bytes(batch: Columns, max_bytes: int) -> list[Columns]:
    n = length(batch)
    size = _row_bytes(batch)
    if size <= max_bytes or n <= 1:
        return [batch]
    per_file = max(1, int(n * max_bytes / size))
    return [take(batch, np.arange(i, min(i + per_file, n))) for i in range(0, n, per_file)]


def _stage_kwargs(stage: RayStage) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"batch_size": stage.batch_size, "batch_format": ARROW}
    if stage.num_cpus is not None:
        kwargs["num_cpus"] = stage.num_cpus
    if stage.num_gpus:
        kwargs["num_gpus"] = stage.num_gpus
    if stage.memory:
        kwargs["memory"] = stage.memory
    if stage.compute == "actors":
        # A killed actor is restarted and its in-flight batches retried.
        kwargs["max_restarts"] = ACTOR_MAX_RESTARTS
        kwargs["max_task_retries"] = ACTOR_MAX_RESTARTS
        if stage.concurrency:
            kwargs["concurrency"] = stage.concurrency
        else:
            per_actor = stage.num_cpus or 1.0
            kwargs["concurrency"] = (1, max(1, int(cluster_cpus() / per_actor / 2)))
    elif stage.concurrency:
        kwargs["concurrency"] = stage.concurrency
    return _within_limits(kwargs)


def _within_limits(kwargs: dict[str, Any]) -> dict[str, Any]:
    """Clamp a stage's workers to the run's resource limits (--max-cpus / --max-gpus), so a pool never waits on CPUs it may not use."""
    from ray.data import DataContext

    if "concurrency" not in kwargs:  # tasks: Ray Data keeps them within the resource limits itself
        return kwargs
    limits = DataContext.get_current().execution_options.resource_limits
    per_worker = ((kwargs.get("num_cpus", 1.0), limits.cpu), (kwargs.get("num_gpus", 0.0), limits.gpu))
    fits = [limit / need for need, limit in per_worker if need and limit != float("inf")]
    if not fits:
        return kwargs
    most = max(1, int(min(fits) + 1e-9))
    wanted = kwargs["concurrency"]
    kwargs["concurrency"] = tuple(min(n, most) for n in wanted) if isinstance(wanted, tuple) else min(wanted, most)
    return kwargs


def build_dataset(
    job: RayJob,
    side: SideOutputs,
    storage_options: dict,
    limit: int | None = None,
    inputs: tuple[str, ...] | None = None,
    cache: CacheSettings | None = None,
    partitions: int | None = None,
    routes: ShardRoutes[ShardPlace] | None = None,
):
    """Return the streaming dataset of the job's rows after every stage (not yet written).

    ``inputs`` restricts the read to those files (one shard); otherwise the source is listed.
    ``routes``: the inputs are several shards' (one streamed run); each task writes its side
    outputs per shard (``routed.Routed``) and ``side`` is not used.
    ``cache`` (a ``CacheSettings``) reads remote files through the node-local cache tier.
    ``partitions``: the global steps' shuffle partition count (default ``shuffle.shuffle_partitions``).
    """
    import ray

    from connectors.registry import list_files, parquet_footers, scheme_of

    executing()  # the warm-up leaves the driver's side (executor, actors) to this execution
    source = job.read.source
    if source.in_memory:  # zerocopy hook: rows this process holds (dataflow.memory), no files
        from dataflow.engines.ray.memory_io import held_dataset

        return _run_stages(job, held_dataset(source, side), side, storage_options, cache, partitions)
    files = list(inputs) if inputs is not None else list_files(source.uri, source.format, source.options, storage_options)
    if limit is not None and job.read.parse is None:
        files = files[: max(limit * 4, limit + 16)]
    prefix = "" if scheme_of(source.uri) == "file" else f"{source.uri.split('://', 1)[0]}://"
    if job.read.reader == "row_groups":
        # A file whose footer does not read is one item of row group -1: its read task makes it a row error.
        footers = parquet_footers(files, storage_options, cache)
        parts = [{"uri": f, "row_group": g, "first_row": o} for f, got in zip(files, footers) for g, o, _ in (got if isinstance(got, list) else [(-1, 0, 0)])]
        ds = ray.data.from_items(parts, override_num_blocks=_blocks(len(parts), routes))
        per_task = 1  # a row group a read task
    else:
        # Our own read tasks (not read_binary_files): files come through the URI layer and its cache.
        items = listing_items(files, storage_options, cache)
        per_task = _files_per_task(len(items), routes)
        # A block per read task (a put each at the driver); a WebDataset shard is a task of its own.
        blocks = _blocks(len(items), routes) if source.format == "webdataset" else max(1, -(-len(items) // per_task))
        ds = ray.data.from_items(items, override_num_blocks=blocks)
        if source.format == "webdataset" or source.format in LINE_FORMATS:
            stream = ReadStream(source.uri, source.format, job.read.options, storage_options, cache, side)
            scanned = _scanned_stage(job, stream, side) if routes is None else None
            if scanned is not None:  # the read and the first stage's partial states: one query per file
                ds = ds.map_batches(scanned, batch_format="numpy", zero_copy_batch=False, batch_size=per_task, **_resources(job.stages[0]))
                return ds if len(job.stages) == 1 else _run_stages(job, ds, side, storage_options, cache, partitions, start=1)
            reader = _routed(stream, routes, "uri")
            ds = ds.map_batches(reader, batch_format="numpy", zero_copy_batch=False, batch_size=1 if source.format == "webdataset" else per_task, **stream_concurrency(routes))
        else:
            fetch = _routed(FetchFiles(source.uri, storage_options, cache, side), routes, "uri")
            ds = ds.map_batches(fetch, batch_format="numpy", zero_copy_batch=False, batch_size=per_task, **stream_concurrency(routes))
    if source.format != "webdataset" and source.format not in LINE_FORMATS:
        adapter = _routed(ReadAdapter(prefix, job.read.parse, source.options, side, storage_options, cache), routes, "uri" if job.read.parse == "parquet" else "path")
        ds = ds.map_batches(adapter, batch_format="numpy", zero_copy_batch=False, batch_size=1 if job.read.parse == "parquet" else None, **stream_concurrency(routes))
    # Ray Data bundles a fused chain's input by its largest batch: a table stage's 16,384 rows would
    # be as many files (or row groups) a read task. The stages fused with the read take its blocks.
    fused = per_task if routes is None or stream_fused(job) else None
    return _run_stages(job, ds, side, storage_options, cache, partitions, routes, fused)


def _scanned_stage(job: RayJob, stream: ReadStream, side: SideOutputs) -> ReadFusedStage | None:
    """The read and the first stage as one map (``fused_read``) when that stage runs with the aggregation's partial states as one query and DuckDB can scan the files."""
    first = job.stages[0] if job.stages else None
    feeds = _feeds(job, 0) if isinstance(first, RayStage) else None
    split = fused_stage(first, feeds[0]) if feeds is not None else None
    if split is None or not scans_files(stream):
        return None
    return ReadFusedStage(stream, FusedStageFn(first, feeds[0], split, feeds[1], side))


def _resources(stage: RayStage) -> dict[str, Any]:
    """A stage's CPUs and memory per task, for a map that runs it with the read."""
    return {k: v for k, v in _stage_kwargs(stage).items() if k in ("num_cpus", "memory")}


def _blocks(items: int, routes: ShardRoutes | None) -> int:
    """Read blocks: up to 200 per shard (one shard, or each of a streamed run's)."""
    most = 200 * (len(routes) if routes is not None else 1)
    return max(1, min(items, most))


def _files_per_task(files: int, routes: ShardRoutes | None) -> int:
    """A read task: about four per CPU over the shard (a streamed run: over the run, at most its smallest shard, so a
    task spans at most two shards), at least ``FILES_PER_TASK`` files (a Ray task costs tens of ms: 2,000 files of 20
    lines in shards of 667 on 3 CPUs took 5.0 s in tasks of 16 files, 3.7 s in tasks of 56)."""
    per_task = max(FILES_PER_TASK, -(-files // int(4 * max(1.0, cluster_cpus()))))
    return per_task if routes is None else max(1, min(routes.smallest, per_task))


def stream_concurrency(routes: ShardRoutes | None) -> dict[str, Any]:
    """The ``concurrency`` of a streamed run's read and writers: two tasks per CPU (nothing for one shard).

    Ray Data fuses task operators only of the same ``concurrency``, and bundles a fused chain's input
    by its largest batch (writers of ``rows_per_file`` rows would take that many *files* per task):
    stages and writers share it only where they take the read's blocks as they come (:func:`stream_fused`).
    """
    return {} if routes is None else {"concurrency": max(2, int(2 * cluster_cpus()))}


def stream_fused(job: RayJob) -> bool:
    """Whether a streamed run is one task chain: a read of whole files, task stages (no pool, no concurrency of their own), the writers.

    Ray then runs it as a task per read bundle (``_files_per_task`` files): no object-store hop, no
    bundle waiting on several read tasks. Table stages take the read's blocks, others at most a read
    task's files a batch; the writers cut files of ``rows_per_file`` rows.
    """
    return job.read.reader == "files" and all(isinstance(s, RayStage) and s.compute == "tasks" and s.concurrency is None for s in job.stages)


def _routed(fn: Any, routes: ShardRoutes[ShardPlace] | None, key: str, tag: bool = False) -> Any:
    return fn if routes is None else Routed(routes, key, fn=fn, tag=tag)


def _run_stages(job: RayJob, ds, side: SideOutputs | None, storage_options: dict, cache: CacheSettings | None, partitions: int | None,
                routes: ShardRoutes[ShardPlace] | None = None, fused: int | None = None, start: int = 0):
    """The job's stages (and named sources) over the read rows ``ds``; ``fused``: the files (row groups) per read task, for the stages fused with the read.

    ``start``: the stages before it ran with the read (``_scanned_stage``), and ``ds`` holds the partial states of the global stage at ``start``.
    """
    named = {name: _named_table(sub, side, storage_options, cache) for name, sub in job.inputs}
    states = start > 0  # the map before the next global stage computed its partial states
    for i, stage in enumerate(job.stages[start:], start=start):
        if isinstance(stage, RayGlobal):
            ds = apply_global(ds, stage, side, named=named, partitions=partitions, states=states)
            states, fused = False, None  # the stages after it take its rows, not the read's blocks
            continue
        feeds = _feeds(job, i) if routes is None else None
        split = fused_stage(stage, feeds[0]) if feeds is not None else None
        if split is not None:  # its rows go nowhere but into the partial states: one query per batch
            fn = FusedStageFn(stage, feeds[0], split, feeds[1], side)
            big = job.read.parse == "jsonl" and job.read.source.options.get("schema")  # the read's blocks are whole 8 MiB parses already
            ds = ds.map_batches(fn, **{**_stage_kwargs(stage), "batch_size": None if big or fused else stage.batch_size})
            if i == len(job.stages) - 1:  # the checkpoint's partial states
                return ds
            states = True
            continue
        kwargs = _stage_kwargs(stage)
        if stage.compute == "actors" and routes is not None:
            ds = ds.map_batches(Routed, fn_constructor_kwargs={"routes": routes, "key": SOURCE, "cls": StageFn, "kwargs": {"stage": stage, "side": side}}, **kwargs)
        elif stage.compute == "actors":
            ds = ds.map_batches(StageFn, fn_constructor_kwargs={"stage": stage, "side": side}, **kwargs)
            fused = None
        else:
            if routes is None and (stage.num_cpus is not None or stage.num_gpus or stage.memory or stage.concurrency):
                fused = None  # resources of its own: Ray Data runs it apart from the read, in batches of its rows
            if fused:
                kwargs = {**kwargs, **stream_concurrency(routes), "batch_size": _batch_with_read(stage, fused, routes is not None, job.read.reader == "row_groups")}
            ds = ds.map_batches(_routed(StageFn(stage, side), routes, SOURCE), **kwargs)
    if job.write is not None and job.write.reads is not None:  # a checkpoint: only what the global phase reads
        from dataflow.engines.ray.global_ops import checkpoint_rows

        ds = checkpoint_rows(ds, job.write, f"stage-{len(job.stages) + 1}", side, routes)
    return ds


def _batch_with_read(stage: RayStage, per_task: int, streamed: bool, row_groups: bool) -> int | None:
    """A task stage's batch where Ray Data fuses it with the read (and bundles the read's input by it, as many files or
    row groups a task): media stages after a file read at most a read task's files in a streamed run, else their own
    batch, as many files a task (the 300-image quickstart on 2 cores: 9.3-10.9 s; in tasks of 16 files 11.5-11.8 s);
    every other stage the read's blocks, which ``StageFn`` runs a given ``batch_size`` at a time (a table stage's 1,024
    rows were 1,024 files a task; a media stage's 64 after a Parquet read, 16 row groups of 50 images, one task)."""
    if stage.media and not row_groups:
        return min(stage.batch_size, per_task) if streamed else stage.batch_size
    return None


def _feeds(job: RayJob, i: int) -> tuple[StepCall, str] | None:
    """The aggregation reading stage ``i``'s rows and the name its partial counters go under: the next global stage's, or the checkpoint's after the last stage."""
    if i + 1 < len(job.stages):
        after = job.stages[i + 1]
        return (after.call, after.name) if isinstance(after, RayGlobal) else None
    if job.write is not None and job.write.reads is not None and job.write.feeds is not None:
        return job.write.feeds, f"stage-{len(job.stages) + 1}"
    return None


def _named_table(job: RayJob, side: SideOutputs, storage_options: dict, cache: CacheSettings | None):
    """Read a named source and run its steps into Ray's object store (not the driver); its read counters are not the run's input rows."""
    from dataclasses import replace

    from connectors.registry import filesystem
    from dataflow.runtime.stats import read_stats

    own = replace(side, stats_dir=posixpath.join(posixpath.dirname(side.stats_dir), f"_stats_source_{batch_key([job.read.source.uri])}"))
    ds = build_dataset(job, own, storage_options, cache=cache).materialize()
    fs = filesystem(side.uri, side.storage_options)
    stats = read_stats(fs, [own.stats_dir])
    read = stats.pop(READ_STEP, None)
    if read is not None and read.rows_errored:
        stats[NAMED_READ_STEP] = StepStats(rows_errored=read.rows_errored)  # row errors, not input rows
    side.write("source", batch_key([job.read.source.uri]), [], stats)
    if fs.exists(own.stats_dir):
        fs.rm(own.stats_dir, recursive=True)
    return ds


def quiet_few_inputs() -> None:
    """Leave out Ray Data's warning that fewer bundles than its concurrency reached one of dataflow's own maps.

    NOTE: Ray Data warns when an operator with a ``concurrency`` gets fewer inputs, as a small
    shard's writer or a streamed run of a few files does; it is expected there and nothing the user
    can change. Called where those maps are made (a filter set at import would not outlive a
    ``warnings.catch_warnings`` block around it, as in notebooks' and pytest's).
    """
    import warnings

    warnings.filterwarnings("ignore", message=r"The maximum number of concurrent tasks for 'MapBatches\((ShardWriter|Routed)\)", category=UserWarning)


def written_dataset(job: RayJob, ds, storage_options: dict, tmp_data: str, run_id: str, publish_root: str | None = None):
    """``ds`` through the shard's writers, ``rows_per_file`` rows a batch, as an operator of its own.

    Ray Data fuses task maps of the same ``concurrency`` and bundles a fused chain's input by its
    largest batch: fused with the read and the stages, a writer of ``rows_per_file`` rows would take
    that many files into one task, and a shard of fewer rows would run on one core. Its own
    ``concurrency`` (one task per CPU) keeps it apart: the read and stages run a task per bundle.
    It asks for no CPU: Ray Data reserves each operator a share of the cluster's CPUs, and a writer
    holding one of two left the stages one task at a time (400 images: one worker busy, 2.45 s;
    with ``num_cpus=0`` two, 1.84 s). Its encoding then shares the cores with the stages.
    """
    quiet_few_inputs()
    w = job.write
    writer = ShardWriter(job, storage_options, tmp_data, run_id, publish_root)
    return ds.map_batches(writer, batch_size=w.rows_per_file, batch_format=ARROW, concurrency=max(1, int(cluster_cpus())), num_cpus=0)


def stream_written(job: RayJob, ds, storage_options: dict, tmp_data: str, run_id: str, progress: bool, publish_root: str | None = None) -> list[Any]:
    """Run the pipeline to its writers; return the written files, printing a status line off a TTY.

    ``publish_root``: remote sinks upload each file to its final name there (see ``ShardWriter``).
    """
    from connectors.formats import WrittenFile

    out = written_dataset(job, ds, storage_options, tmp_data, run_id, publish_root)
    written, rows, last, start = [], 0, None, time.monotonic()
    for batch in out.iter_batches(batch_size=None, batch_format="numpy"):
        for p, r, b in zip(batch["path"], batch["rows"], batch["bytes"]):
            written.append(WrittenFile(str(p), int(r), int(b)))
            rows += int(r)
        # The first written part says the run is under way, then a line every 5 s at most.
        if progress and not sys.stderr.isatty() and (last is None or time.monotonic() - last > 5):
            last = time.monotonic()
            print(f"dataflow: {rows} rows written in {len(written)} files, {last - start:.0f}s", file=sys.stderr, flush=True)
    return written
