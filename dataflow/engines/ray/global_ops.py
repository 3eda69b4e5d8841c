"""Global ops on Ray: every one runs distributed through hash shuffles; no row reaches the driver.

A table op declared with ``partition_by`` (``table.aggregate``, ``table.window_aggregate``,
``table.dedup``, ``table.join``: ``@op(partition_by="keys")``) is hash-partitioned on its keys (``shuffle.hash_shuffle``: one Ray Data
``groupby(partition).map_groups``), and the op's own Arrow implementation runs once per partition:
all rows of a key meet in one partition, so the result is the op's, exactly. A join shuffles both
sides on the keys (one shuffle for both), unless it is an inner, left, semi or anti join whose
right side is small (``broadcast_bytes``): then each left block joins the whole right side, in a
map, without a shuffle. An aggregation without keys, and any other global op
(a user's global op), runs in one partition: one Ray task holds its rows, never the driver.

``text.dedup_semantic`` lowers to ``semantic_dedup`` (SemDedup): one task fits the k-means
centroids on a seeded sample of the rows (``dataflow.ops.kmeans``), a map gives each row its
nearest centroid, and a shuffle on that cluster id compares all pairs inside each cluster.

The dedup ops declared with a ``bucketing`` (``@op(bucketing=...)``) lower to
``components.bucket_dedup``: duplicate edges and connected components stay distributed.
"""
from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np
import pyarrow as pa

from dataflow.columns import SOURCE
from dataflow.engines.ray.components import BucketRows as _BucketRows  # noqa: F401  (tests/gpu)
from dataflow.engines.ray.compile import ARROW
from dataflow.engines.ray.components import bucket_dedup, key_map_kwargs
from dataflow.engines.ray.shuffle import hash_shuffle, shuffle_partitions
from dataflow.batch import from_arrow, plain_arrow, to_arrow
from dataflow.runtime.stage import StageExecutor
from dataflow.runtime.stats import SideOutputs, batch_key

__all__ = ["apply_global", "describe_shuffle", "key_map_kwargs", "merge_task_bytes"]


def describe_shuffle(spec, params) -> str:
    """The ``shuffle:`` line of ``dataflow explain`` for the global op ``spec``: each shuffle it runs, in order."""
    parts = "P partitions (--shuffle-partitions; default 2 per CPU)"
    op = spec.name
    if op == "text.dedup_semantic":
        return (f"sample (seeded hash of __source__) -> groupby(partition).map_groups into 1 partition: fit k-means centroids -> "
                f"nearest centroid per row -> groupby(partition).map_groups on the cluster id, {parts}: all pairs per cluster (clusters: 1: "
                "all rows in one partition)")
    if spec.bucketing is not None:
        return (f"key map -> groupby(partition).map_groups on bucket (band, key), {parts} -> per component round (until no label changes; "
                "rounds = longest duplicate chain + 1): on edge, then on node -> on __source__ with the rows, dropping all but each group's smallest")
    keys = list(getattr(params, spec.partition_by, None) or []) if spec.partition_by else []
    if op == "table.dedup" and not keys:
        return f"groupby(partition).map_groups on every user column, {parts}"
    if op == "table.join" and keys and getattr(params, "how", "inner") in BROADCAST_JOINS:
        return (f"a named source up to DATAFLOW_RAY_BROADCAST_BYTES (default 64 MiB) is broadcast: each left block joins it, no shuffle; "
                f"else groupby(partition).map_groups of both sides on hash({', '.join(keys)}), {parts}")
    combine = op == "table.aggregate" and _two_phase(params) is not None
    if combine:  # the map-side combine: partial states per block and group cross the shuffle, not the rows
        into = f"hash({', '.join(keys)}), {parts}" if keys else "1 partition"
        return (f"partial aggregation per block (map-side combine) -> states up to DATAFLOW_RAY_MERGE_TASK_BYTES (default 64 MiB) merge in one task, "
                f"no shuffle; else groupby(partition).map_groups of the states on {into}: merged per group")
    if keys:
        both = " of both sides (the named source too)" if op == "table.join" else ""
        return f"groupby(partition).map_groups{both} on hash({', '.join(keys)}), {parts}"
    return "groupby(partition).map_groups into 1 partition: one Ray task holds all rows (not the driver)"


class _PartitionOp:
    """Per partition: run the op over the partition's rows; counters and row errors as a stage task writes them."""

    def __init__(self, stage, side: SideOutputs, right: str | None, schemas: tuple = (None, None)):
        self.stage, self.side, self.right, self.schemas = stage, side, right, schemas

    def __call__(self, part: int, left: pa.Table | None, right: pa.Table | None = None) -> pa.Table:
        from dataflow.ops.table.named import bind_tables

        call = self.stage.call
        if self.stage.label == "table.aggregate" and not getattr(call.params, "keys", None) and (left is None or left.num_rows == 0):
            return self._no_rows()
        # A join side without rows in this partition: an empty table of its schema (known at the driver).
        left = left if left is not None or self.schemas[0] is None else self.schemas[0].empty_table()
        if self.right is not None and right is None and self.schemas[1] is not None:
            right = self.schemas[1].empty_table()
        if self.right is not None and right is None and left is not None:  # a named source without rows or schema
            right = pa.table({k: pa.array([], left.schema.field(k).type) for k in call.params.keys if k in left.column_names})
        if left is None:  # no block at all
            return pa.table({})
        if self.right is not None and left.num_rows == 0 and right is not None and right.num_rows and getattr(call.params, "how", None) in ("right", "full"):
            return self._right_only(part, left, right)
        with bind_tables(**({self.right: right} if self.right is not None else {})):
            out, errors, stats = StageExecutor([call]).run(left if plain_arrow(left) else from_arrow(left))
        sources = left.column(SOURCE) if SOURCE in left.column_names else []
        self.side.write(f"{self.stage.name}-p{part}", batch_key(sources), errors, stats)
        return out if isinstance(out, pa.Table) else to_arrow(out)

    def _right_only(self, part: int, left: pa.Table, right: pa.Table) -> pa.Table:
        """A right or full join where this partition has right rows only (the executor skips an empty batch)."""
        from dataflow.ops.table.join import join_arrow
        from dataflow.runtime.stage import StepStats

        p = self.stage.call.params
        keys = list(p.keys)
        # A left side with no rows at all may carry null-typed columns, which Arrow's join refuses.
        typed = [right.schema.field(c).type if c in keys else (pa.string() if pa.types.is_null(t) else t) for c, t in zip(left.column_names, left.schema.types)]
        left = pa.table({c: pa.array([], t) for c, t in zip(left.column_names, typed)})
        out = join_arrow(left, right, keys, p.how, getattr(p, "suffix", "_right"))
        self.side.write(f"{self.stage.name}-p{part}", batch_key(right.column(SOURCE) if SOURCE in right.column_names else []), [],
                        {self.stage.call.index: StepStats(rows_in=0, rows_out=out.num_rows)})
        return out

    def _no_rows(self) -> pa.Table:
        """An aggregation over no rows: one row, counts 0 and the rest null (as in SQL and on Spark)."""
        from dataflow.ops.table.sql import is_count, parse_aggregation
        from dataflow.runtime.stage import StepStats

        aggs = {n: parse_aggregation(t) for n, t in self.stage.call.params.aggregations.items()}
        row = {n: pa.array([0], pa.int64()) if is_count(a) else pa.nulls(1) for n, a in aggs.items()}
        self.side.write(f"{self.stage.name}-p0", batch_key([]), [], {self.stage.call.index: StepStats(rows_in=0, rows_out=1)})
        return pa.table({**row, SOURCE: pa.nulls(1, pa.string())})


def apply_global(ds, stage, side: SideOutputs, named: dict[str, Any] | None = None, partitions: int | None = None, states: bool = False):
    """Return the dataset after the global op of ``stage``, run distributed (see the module docstring).

    ``named``: the materialized datasets of the pipeline's named sources (a join's right side).
    ``partitions``: the shuffle partition count (default: 2 per cluster CPU).
    ``states``: ``ds`` holds an aggregation's partial states already (``fused_stage``), not rows.
    """
    if stage.label in LOWERINGS:
        return LOWERINGS[stage.label](ds, stage, side, partitions)
    if stage.bucketed:
        return bucket_dedup(ds, stage, side, partitions)
    call = stage.call
    if stage.partition_by is None:
        return hash_shuffle([(ds, [])], 1, _PartitionOp(stage, side, None))
    if stage.label == "table.aggregate":
        keys = list(call.params.keys or [])
        parts = shuffle_partitions(partitions) if keys else 1
        # Over all rows: seeded, so the one partition runs even over an input without blocks (one row, count 0).
        split = _two_phase(call.params)
        if split is not None:
            # Map-side combine: each block's partial states per group cross the shuffle, not its rows.
            if not states:
                ds = ds.map_batches(_PartialAggregate(stage.name, stage.call, side, split), batch_format=ARROW, batch_size=None)
            ds = ds.materialize()
            if (ds.size_bytes() or 0) <= merge_task_bytes():  # states of a few MB: merged in one task, no shuffle
                return _merged_in_one_task(ds, _MergeAggregate(stage, side, split))
            return hash_shuffle([(ds, keys)], parts, _MergeAggregate(stage, side, split), seed=not keys)
        if keys:  # only the columns it reads cross the shuffle
            ds = ds.map_batches(_Keep(_aggregate_reads(call.params)), batch_format=ARROW, batch_size=None)
        return hash_shuffle([(ds, keys)], parts, _PartitionOp(stage, side, None), seed=not keys)
    keys: Any = list(getattr(call.params, stage.partition_by, None) or [])
    if stage.label == "table.dedup" and not keys:
        from dataflow.ops.table.dedup import dedup_keys

        keys = dedup_keys  # every user column: resolved from each block's columns
    parts = shuffle_partitions(partitions) if keys else 1
    if stage.label != "table.join":
        return hash_shuffle([(ds, keys)], parts, _PartitionOp(stage, side, None))
    name = call.params.right
    if not named or name not in named:
        raise KeyError(f"{stage.name}: table.join reads the named source '{name}', which the job does not read; declare it under sources:")
    ds = ds.materialize()  # in the object store: its schema (plan-sized) stands for partitions without left rows
    schemas = tuple(getattr(d.schema(), "base_schema", None) for d in (ds, named[name]))
    if call.params.how in BROADCAST_JOINS and (named[name].size_bytes() or 0) <= broadcast_bytes():
        return ds.map_batches(_BroadcastJoin(_PartitionOp(stage, side, name, schemas), named[name].to_arrow_refs()), batch_format=ARROW, batch_size=None)
    return hash_shuffle([(ds, keys), (named[name], keys)], parts, _PartitionOp(stage, side, name, schemas))


def _two_phase(params):
    """``table.aggregate``'s aggregations split into partial states and their merge, or None (see ``partial_aggregate``)."""
    from dataflow.ops.table.partial_aggregate import two_phase
    from dataflow.ops.table.sql import parse_aggregation

    return two_phase({n: parse_aggregation(t) for n, t in params.aggregations.items()}, params.vars)


def checkpoint_rows(ds, write, name: str, side: SideOutputs | None, routes=None):
    """What a run's map phase writes to the checkpoint its global phase reads (``write.feeds``): an
    aggregation's partial states per block and group where they split, else the columns it reads.

    ``name``: the prefix of the partial step's stats files.
    """
    from dataflow.engines.ray.routed import Routed

    call = write.feeds
    split = _two_phase(call.params) if call is not None and call.op.name == "table.aggregate" else None
    fn = _Keep(write.reads) if split is None else _PartialAggregate(name, call, side, split)
    return ds.map_batches(fn if routes is None or split is None else Routed(routes, SOURCE, fn=fn), batch_format=ARROW, batch_size=None)


class _PartialAggregate:
    """Map: a block's partial aggregation states, one row per group; its rows count as the step's input rows.

    A block of states already (read back from a run's checkpoint) passes unchanged.
    """

    def __init__(self, name: str, call, side: SideOutputs, split):
        self.name, self.call, self.side, self.split = name, call, side, split

    def __call__(self, block: pa.Table) -> pa.Table:
        from dataflow.runtime.stage import StepStats

        if self.split.holds_states(block):
            return block
        start = time.perf_counter()
        keys = list(self.call.params.keys or [])
        out = self.split.partial_rows(block, keys) if block.num_rows else pa.table({})
        sources = block.column(SOURCE) if SOURCE in block.column_names else []
        st = StepStats(rows_in=block.num_rows, seconds=time.perf_counter() - start)
        self.side.write(f"{self.name}-partial", batch_key(sources), [], {self.call.index: st})
        return out


DEFAULT_MERGE_TASK_BYTES = 64 * 1024 * 1024


def merge_task_bytes() -> int:
    """Partial aggregation states up to this size (``DATAFLOW_RAY_MERGE_TASK_BYTES``, default 64 MiB; below 0: never) merge in one task, without a shuffle."""
    import os

    return int(os.environ.get("DATAFLOW_RAY_MERGE_TASK_BYTES") or DEFAULT_MERGE_TASK_BYTES)


def _merge_blocks(merge, *blocks: pa.Table) -> pa.Table:
    tables = [b for b in blocks if b.num_columns]  # a block without rows left the partial step as pa.table({})
    return merge(0, pa.concat_tables(tables, promote_options="permissive") if tables else None)


def _merged_in_one_task(ds, merge):
    """The materialized states of ``ds`` merged by ``merge`` in one Ray task (one partition), its output one block."""
    import ray

    task = ray.remote(num_cpus=1)(_merge_blocks)
    return ray.data.from_arrow_refs([task.remote(merge, *ds.to_arrow_refs())])


class _MergeAggregate(_PartitionOp):
    """Per partition: merge the partial states of each group into its aggregations (rows out counted here)."""

    def __init__(self, stage, side: SideOutputs, split):
        super().__init__(stage, side, None)
        self.split = split

    def __call__(self, part: int, states: pa.Table | None) -> pa.Table:
        from dataflow.runtime.stage import StepStats

        keys = list(self.stage.call.params.keys or [])
        if states is None or states.num_rows == 0:
            return pa.table({}) if keys else self._no_rows()
        start = time.perf_counter()
        out = self.split.merged_rows(states, keys)
        sources = states.column(SOURCE) if SOURCE in states.column_names else []
        st = StepStats(rows_out=out.num_rows, seconds=time.perf_counter() - start)
        self.side.write(f"{self.stage.name}-p{part}", batch_key(sources), [], {self.stage.call.index: st})
        return out


def _aggregate_reads(params) -> frozenset[str]:
    from dataflow.plan.validate import param_reads

    return frozenset({SOURCE, *(params.keys or ()), *param_reads(params)[0]})


class _Keep:
    """Map: a block with only the columns named (those it has)."""

    def __init__(self, names: frozenset[str]):
        self.names = names

    def __call__(self, block: pa.Table) -> pa.Table:
        return block.select([n for n in block.column_names if n in self.names])


#: Joins whose rows depend on each left row and all of its matches only: a small right side is broadcast.
BROADCAST_JOINS = ("inner", "left", "semi", "anti")
DEFAULT_BROADCAST_BYTES = 64 * 1024 * 1024


def broadcast_bytes() -> int:
    """A join's right side up to this size (``DATAFLOW_RAY_BROADCAST_BYTES``, default 64 MiB; below 0: never) joins each left block without a shuffle."""
    import os

    return int(os.environ.get("DATAFLOW_RAY_BROADCAST_BYTES") or DEFAULT_BROADCAST_BYTES)


class _BroadcastJoin:
    """Map: join one left block with the whole (small) right side, fetched in the task from its blocks' refs."""

    def __init__(self, op: _PartitionOp, refs: list):
        self.op, self.refs = op, refs

    def __call__(self, block: pa.Table) -> pa.Table:
        return self.op(0, block, self._right())

    def _right(self) -> pa.Table | None:
        import ray

        tables = [t for t in ray.get(self.refs) if t.num_columns]
        return pa.concat_tables(tables, promote_options="permissive") if tables else None


class _Sample:
    """Map: the fit's sample of a block, its identity and vector columns only."""

    def __init__(self, column: str, seed: int, fraction: float):
        self.column, self.seed, self.fraction = column, seed, fraction

    def __call__(self, block: pa.Table) -> pa.Table:
        from dataflow.ops.kmeans import in_sample

        drawn = in_sample(np.asarray(block.column(SOURCE).to_pylist(), dtype=object), self.seed, self.fraction)
        return block.select([SOURCE, self.column]).filter(pa.array(drawn, pa.bool_()))


class _Fit:
    """The one partition of the sample: the centroids, as one row (k, d, float32 bytes)."""

    def __init__(self, column: str, k: int, seed: int):
        self.column, self.k, self.seed = column, k, seed

    def __call__(self, part: int, sample: pa.Table | None) -> pa.Table:
        from dataflow.ops.kmeans import fit_sample, unit_rows

        cols = from_arrow(sample) if sample is not None and sample.num_rows else {SOURCE: np.array([], object), self.column: []}
        unit = unit_rows(cols[self.column])
        centroids = fit_sample(cols[SOURCE], unit, self.k, self.seed)
        return pa.table({"k": [centroids.shape[0]], "d": [centroids.shape[1]], "data": pa.array([centroids.tobytes()], pa.binary())})


class _Assign:
    """Map: each row's nearest centroid, as column ``CLUSTER``; the centroids come from the fit's block (a ref)."""

    def __init__(self, column: str, refs: list):
        self.column, self.refs = column, refs
        self._centroids = None

    def __call__(self, block: pa.Table) -> pa.Table:
        from dataflow.ops.kmeans import nearest, unit_rows
        from dataflow.ops.text.dedup_semantic import CLUSTER

        if self._centroids is None:
            self._centroids = self._load()
        ids = nearest(unit_rows(from_arrow(block.select([self.column]))[self.column]), self._centroids) if block.num_rows else np.zeros(0, np.int64)
        return block.append_column(CLUSTER, pa.array(ids, pa.int64()))

    def _load(self) -> np.ndarray:
        import ray

        row = pa.concat_tables(ray.get(self.refs)).to_pylist()[0]
        return np.frombuffer(row["data"], dtype=np.float32).reshape(row["k"], row["d"])


def semantic_dedup(ds, stage, side: SideOutputs, partitions: int | None = None):
    """``text.dedup_semantic`` (see the module docstring); ``clusters`` resolving to 1 compares all rows in one partition."""
    from dataflow.ops.kmeans import cluster_count, sample_fraction
    from dataflow.ops.text.dedup_semantic import CLUSTER

    p = stage.call.params
    ds = ds.materialize()  # read and upstream steps run once for the sample, the assignment and the pairs
    rows = ds.count()  # plan-sized: one number
    k = cluster_count(p.clusters, rows)
    if k == 1:
        return hash_shuffle([(ds, [])], 1, _PartitionOp(stage, side, None))
    sample = ds.map_batches(_Sample(p.column, p.seed, sample_fraction(k, rows)), batch_format=ARROW, batch_size=None)
    fitted = hash_shuffle([(sample, [])], 1, _Fit(p.column, k, p.seed), seed=True).materialize()
    clustered = ds.map_batches(_Assign(p.column, fitted.to_arrow_refs()), batch_format=ARROW, batch_size=None)
    return hash_shuffle([(clustered, [CLUSTER])], shuffle_partitions(partitions), _PartitionOp(stage, side, None))


#: The Ray engine's own lowerings of global ops whose shuffle is neither ``partition_by`` nor ``bucketing``.
LOWERINGS: dict[str, Callable[..., Any]] = {"text.dedup_semantic": semantic_dedup}
