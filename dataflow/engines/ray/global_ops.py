"""Global ops on Ray: every one runs distributed through hash shuffles; no row reaches the driver.

A table op that groups by keys (``table.aggregate``, ``table.window_aggregate``, ``table.dedup``,
``table.join``) is hash-partitioned on its keys (``shuffle.hash_shuffle``: one Ray Data
``groupby(partition).map_groups``), and the op's own Arrow implementation runs once per partition:
all rows of a key meet in one partition, so the result is the op's, exactly. A join shuffles both
sides on the keys (one shuffle for both). An aggregation without keys, and any other global op
(``text.dedup_semantic``, a user's global op), runs in one partition: one Ray task holds its
rows, never the driver.

The dedup ops declared with a ``Bucketing`` (``dataflow.ops.dedup.BUCKETINGS``) lower to
``components.bucket_dedup``: duplicate edges and connected components stay distributed.
"""
from __future__ import annotations

from typing import Any, Callable

import pyarrow as pa

from dataflow.columns import SOURCE
from dataflow.engines.ray.components import BucketRows as _BucketRows  # noqa: F401  (tests/gpu)
from dataflow.engines.ray.components import bucket_dedup, key_map_kwargs
from dataflow.engines.ray.shuffle import hash_shuffle, shuffle_partitions
from dataflow.runtime.batch import from_arrow, to_arrow
from dataflow.runtime.stage import StageExecutor
from dataflow.runtime.stats import SideOutputs, batch_key

__all__ = ["PARTITIONED_OPS", "RAY_GLOBAL_OPS", "apply_global", "key_map_kwargs", "shuffle_keys"]


#: Table ops run per hash partition of their ``keys`` param.
PARTITIONED_OPS = ("table.aggregate", "table.window_aggregate", "table.dedup", "table.join")


def shuffle_keys(op: str, params: dict[str, Any]) -> str:
    """What ``explain`` says a global op shuffles on."""
    if op in RAY_GLOBAL_OPS:
        return "bucket (band, key), then node/edge ids per component round, then __source__"
    if op == "table.dedup" and not params.get("keys"):
        return "all user columns"
    keys = params.get("keys") if op in PARTITIONED_OPS else None
    return ", ".join(keys) if keys else "nothing (one partition)"


class _PartitionOp:
    """Per partition: run the op over the partition's rows; counters and row errors as a stage task writes them."""

    def __init__(self, stage, side: SideOutputs, right: str | None):
        self.stage, self.side, self.right = stage, side, right

    def __call__(self, part: int, left: pa.Table | None, right: pa.Table | None = None) -> pa.Table:
        from dataflow.ops.table.named import bind_tables

        if left is None:  # this input has no blocks at all: nothing to run
            return pa.table({})
        cols = from_arrow(left)
        if self.right is not None and right is None:
            keys = self.stage.call.params["keys"]
            right = pa.table({k: pa.array([], left.schema.field(k).type) for k in keys})
        with bind_tables(**({self.right: right} if self.right is not None else {})):
            out, errors, stats = StageExecutor([self.stage.call])(cols)
        self.side.write(f"{self.stage.name}-p{part}", batch_key(cols.get(SOURCE, [])), errors, stats)
        return to_arrow(out)


def apply_global(ds, stage, side: SideOutputs, named: dict[str, Any] | None = None, partitions: int | None = None):
    """Return the dataset after the global op of ``stage``, run distributed (see the module docstring).

    ``named``: the materialized datasets of the pipeline's named sources (a join's right side).
    ``partitions``: the shuffle partition count (default: 2 per cluster CPU).
    """
    lowering = RAY_GLOBAL_OPS.get(stage.label)
    if lowering is not None:
        return lowering(ds, stage, side, partitions)
    call = stage.call
    if stage.label not in PARTITIONED_OPS:
        return hash_shuffle([(ds, [])], 1, _PartitionOp(stage, side, None))
    keys: Any = list(call.params.get("keys") or [])
    if stage.label == "table.dedup" and not keys:
        from dataflow.ops.table.dedup import dedup_keys

        keys = dedup_keys  # every user column: resolved from each block's columns
    parts = shuffle_partitions(partitions) if keys else 1
    if stage.label != "table.join":
        return hash_shuffle([(ds, keys)], parts, _PartitionOp(stage, side, None))
    name = call.params["right"]
    if not named or name not in named:
        raise KeyError(f"{stage.name}: table.join reads the named source '{name}', which the job does not read; declare it under sources:")
    return hash_shuffle([(ds, keys), (named[name], keys)], parts, _PartitionOp(stage, side, name))


RAY_GLOBAL_OPS: dict[str, Callable[..., Any]] = {
    "image.dedup_phash": bucket_dedup,
    "text.dedup_exact": bucket_dedup,
    "text.dedup_minhash": bucket_dedup,
}
