"""In-memory inputs and results of the Ray engine: no staging files.

An in-memory source (``dataflow.memory``) is read from what this process holds: an Arrow table
through ``ray.data.from_arrow`` (one copy into the object store, blocks of
``HELD_ROWS_PER_BLOCK`` rows, read by the tasks without copying), a ``ray.data.Dataset`` as is.
A Spark DataFrame is handed over through Parquet (Spark writes it to the staging folder; Ray
reads it). A map over the Arrow blocks counts the read rows (the run's ``read`` counters) and
gives rows without ``__source__`` one, leaving the other columns' buffers as they are.

``hold_output`` runs a job without a sink into Ray's object store (``materialize``) and returns
that Dataset: ``Pipeline.to_ray`` hands it out, ``to_arrow`` concatenates its blocks
(``arrow_table``, the only place rows reach the driver, because the user asked for them there).
"""
from __future__ import annotations

import uuid
from typing import Any

import pyarrow as pa

from dataflow.columns import SOURCE
from dataflow.dsl.spec import MEMORY_OPTION, SourceSpec
from dataflow.runtime.stage import StepStats
from dataflow.runtime.stats import SideOutputs, batch_key

__all__ = ["HELD_ROWS_PER_BLOCK", "arrow_table", "from_held", "held_dataset", "hold_output"]

READ_STEP = -1
HELD_ROWS_PER_BLOCK = 10_000


class CountRead:
    """The read of an in-memory source, per Arrow block: ``__source__`` where missing, and the read counters.

    A block is named by its Ray task and its place in that task, which a retried task repeats:
    its counters are written again under the same name, not counted twice.
    """

    def __init__(self, name: str, side: SideOutputs):
        self.name, self.side, self.calls = name, side, 0

    def __call__(self, batch: pa.Table) -> pa.Table:
        import ray

        part = f"{(ray.get_runtime_context().get_task_id() or uuid.uuid4().hex)[:16]}-{self.calls}"
        self.calls += 1
        if SOURCE not in batch.column_names:
            batch = batch.append_column(SOURCE, pa.array([f"memory:{self.name}#part={part},row={i}" for i in range(batch.num_rows)], pa.string()))
        self.side.write("read", batch_key([self.name, part]), [], {READ_STEP: StepStats(rows_in=batch.num_rows, rows_out=batch.num_rows)})
        return batch


def held_dataset(source: SourceSpec, side: SideOutputs):
    """The rows of an in-memory source as a Ray Dataset, counted as the run's read (nothing is written, except a Spark handoff)."""
    import ray.data

    from dataflow.runtime.held import held, staging_folder

    obj = held(source.uri)
    if isinstance(obj, pa.Table):
        step = HELD_ROWS_PER_BLOCK
        ds = ray.data.from_arrow([obj.slice(i, step) for i in range(0, obj.num_rows, step)] or [obj])
    elif isinstance(obj, ray.data.Dataset):
        ds = obj
    else:  # a Spark DataFrame: the handoff between engines goes through Parquet
        folder = staging_folder(f"{source.options[MEMORY_OPTION]}-spark")
        obj.write.parquet(folder)
        ds = ray.data.read_parquet(folder)
    return ds.map_batches(CountRead(source.options[MEMORY_OPTION], side), batch_format="pyarrow", zero_copy_batch=True, batch_size=None)


def hold_output(job, ctx, options) -> tuple[Any, int]:
    """Run ``job`` (its sink unused) into Ray's object store; return the materialized Dataset and its row count."""
    from dataflow.engines.ray.run import build_dataset

    ds = build_dataset(job, ctx.side, ctx.storage_options, inputs=ctx.inputs, cache=ctx.cache, partitions=options.shuffle_partitions)
    drop = [*job.write.leaves_out, *(() if job.write.sink.lineage else (SOURCE,))]
    if drop:
        ds = ds.map_batches(_Drop(drop), batch_format="pyarrow", zero_copy_batch=True, batch_size=None)
    held = ds.materialize()
    return held, held.count()  # the count is the blocks' metadata


class _Drop:
    def __init__(self, columns: list[str]):
        self.columns = columns

    def __call__(self, batch: pa.Table) -> pa.Table:
        return batch.drop_columns([c for c in self.columns if c in batch.column_names])


def arrow_table(ds) -> pa.Table:
    """One ``pyarrow.Table`` over a materialized Dataset's blocks: fetched from the object store (zero-copy reads on this node), not concatenated."""
    import ray

    fetched = ray.get(ds.to_arrow_refs())
    blocks = [b for b in fetched if b.num_rows] or fetched[:1]
    if not blocks:
        return pa.table({})
    schema = pa.unify_schemas([b.schema for b in blocks], promote_options="permissive")
    return pa.concat_tables([b.cast(schema) if b.schema != schema else b for b in blocks])


def from_held(value: Any, kind: str):
    """A Ray Dataset over another engine's held output: ``arrow`` (a table: one copy into the object store), ``spark`` (a DataFrame: through Parquet) or ``parquet`` (a staged folder)."""
    import pyarrow.dataset as pads
    import ray.data

    from dataflow.runtime.held import staging_folder

    if kind == "arrow":
        return ray.data.from_arrow(value)
    if kind == "spark":  # the handoff between engines goes through Parquet
        folder = staging_folder("spark-output")
        value.write.parquet(folder)
        value = folder
    return ray.data.read_parquet(sorted(pads.dataset(value, format="parquet").files))  # leaves out _dataflow/ and _errors/
