"""Bucket dedups on Ray (exact, MinHash, pHash): duplicate edges and connected components, all distributed.

1. A map gives each row's buckets (``Bucketing.keys``; MinHash signatures on GPUs when the step
   asks for them).
2. Shuffle on the bucket (band, key): each partition finds its duplicate edges
   (``dataflow.ops.dedup.bucket_edges``) and emits membership rows ``(node, edge, label)``, a node
   being a row identity (``__source__``) and its first label itself.
3. Min-label propagation until a fixed point; a round is two shuffles: on ``edge`` (each edge takes
   its members' smallest label) then on ``node`` (each node takes its edges' smallest label). The
   driver reads one number per round, how many memberships changed. A round moves labels one
   edge further: it takes (diameter of the largest duplicate group + 1) rounds, i.e. 2 shuffles per
   round; bucket edges are stars, so exact duplicates settle in 2-3 rounds.
4. Shuffle the rows and the identities whose label is not their own on ``__source__``: those rows
   are dropped. Each group keeps its smallest ``__source__``, as ``dataflow.ops.dedup.dedup_rows``
   (the in-process reference) and Spark do.
"""
from __future__ import annotations

import time
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dataflow.columns import SOURCE
from dataflow.engines.ray.compile import ARROW
from dataflow.engines.ray.shuffle import hash_shuffle, shuffle_partitions
from dataflow.runtime.stage import StepCall
from dataflow.runtime.stats import SideOutputs, batch_key

__all__ = ["MEMBERS", "BucketRows", "bucket_dedup", "key_map_kwargs", "label_components"]

MEMBERS = pa.schema([("node", pa.string()), ("edge", pa.string()), ("label", pa.string()), ("changed", pa.int64())])


class BucketRows:
    """Map: each row's (band, key, value) buckets, with its identity (``__source__``)."""

    def __init__(self, call: StepCall, num_gpus: float | None):
        self.call, self.num_gpus = call, num_gpus
        self._keys = None

    def __call__(self, batch: dict) -> dict:
        if self._keys is None:
            from dataflow.engines.ray.devices import worker_calls
            # Here, in the worker: ``device: auto`` resolves against the GPUs Ray gave this task.
            (call,), _ = worker_calls([self.call], self.num_gpus)
            self._keys = call.op.bucketing(call.params).keys
        buckets = self._keys(batch)
        return {SOURCE: np.asarray(batch[SOURCE], dtype=object)[buckets.row].astype(str), "band": buckets.band, "key": buckets.key, "value": buckets.value}


def key_map_kwargs(stage) -> dict[str, Any]:
    """``map_batches`` arguments of a dedup's key map: the step's CPUs, GPUs and batch size per task."""
    kwargs: dict[str, Any] = {"batch_format": "numpy", "zero_copy_batch": False}
    if stage.num_cpus is not None:
        kwargs["num_cpus"] = stage.num_cpus
    if stage.num_gpus:
        kwargs["num_gpus"] = stage.num_gpus
    if stage.batch_size:
        kwargs["batch_size"] = stage.batch_size  # Ray Data requires one with GPUs
    return kwargs


class _BucketEdges:
    """Per bucket partition: the duplicate edges, as two membership rows each."""

    def __init__(self, call: StepCall):
        self.call = call

    def __call__(self, part: int, rows: pa.Table | None) -> pa.Table:
        from dataflow.ops.dedup import Buckets, bucket_edges

        if rows is None or rows.num_rows == 0:
            return MEMBERS.empty_table()
        match = self.call.op.bucketing(self.call.params).match
        col = lambda c: rows.column(c).to_numpy().astype(np.int64)  # noqa: E731
        a, b = bucket_edges(Buckets(np.arange(rows.num_rows, dtype=np.int64), col("band"), col("key"), col("value")), match)
        src = rows.column(SOURCE).combine_chunks()
        left, right = pc.take(src, pa.array(a, pa.int64())), pc.take(src, pa.array(b, pa.int64()))
        edge = pc.binary_join_element_wise(left, right, "\x1f")
        nodes = pa.concat_arrays([left, right]) if len(a) else pa.array([], pa.string())
        edges = pa.concat_arrays([edge, edge]) if len(a) else pa.array([], pa.string())
        out = pa.table({"node": nodes.cast(pa.string()), "edge": edges.cast(pa.string())}).group_by(["node", "edge"], use_threads=False).aggregate([])
        return pa.table({"node": out.column("node"), "edge": out.column("edge"), "label": out.column("node"), "changed": pa.array(np.zeros(out.num_rows, np.int64))})


def _min_label(rows: pa.Table | None, by: str) -> pa.Table:
    """Each membership row takes the smallest label among the rows with its ``by`` value.

    ``changed`` counts the row's label changes in this round (the edge step starts the count).
    """
    if rows is None or rows.num_rows == 0:
        return MEMBERS.empty_table()
    best = rows.group_by([by], use_threads=False).aggregate([("label", "min")]).rename_columns([by, "best"])
    joined = rows.join(best, keys=[by], use_threads=False)
    changed = pc.cast(pc.not_equal(joined.column("best"), joined.column("label")), pa.int64())
    if by == "node":
        changed = pc.add(changed, joined.column("changed"))
    return pa.table({"node": joined.column("node"), "edge": joined.column("edge"), "label": joined.column("best"), "changed": changed})


def _by_edge(part: int, rows: pa.Table | None) -> pa.Table:
    return _min_label(rows, "edge")


def _by_node(part: int, rows: pa.Table | None) -> pa.Table:
    return _min_label(rows, "node")


def _dropped(batch: pa.Table) -> pa.Table:
    """Map: the identities whose component label is smaller than themselves."""
    lose = batch.filter(pc.not_equal(batch.column("label"), batch.column("node")))
    return pa.table({SOURCE: lose.column("node")})


class _DropRows:
    """Per ``__source__`` partition: drop the rows named by the second input; count rows in, out and dropped."""

    def __init__(self, op: str, index: int, side: SideOutputs):
        self.op, self.index, self.side = op, index, side

    def __call__(self, part: int, rows: pa.Table | None, drop: pa.Table | None = None) -> pa.Table:
        from dataflow.runtime.stage import StepStats

        if rows is None:
            return pa.table({})
        start = time.perf_counter()
        keep = rows if drop is None or drop.num_rows == 0 else rows.filter(pc.invert(pc.is_in(rows.column(SOURCE), drop.column(SOURCE).cast(rows.schema.field(SOURCE).type))))
        st = StepStats(rows_in=rows.num_rows, rows_out=keep.num_rows)
        st.drops[self.op] = st.rows_in - st.rows_out
        st.seconds = time.perf_counter() - start
        self.side.write(f"global-{self.index}-p{part}", batch_key(rows.column(SOURCE).to_pylist() if SOURCE in rows.column_names else []), [], {self.index: st})
        return keep


def label_components(members, parts: int) -> tuple[Any, int]:
    """Min-label propagation over membership rows ``(node, edge, label, changed)`` until no label changes.

    Returns the materialized rows, each labelled with the smallest node of its component, and the
    number of rounds (two shuffles each) it took.
    """
    members = members.materialize()
    rounds = 0
    while True:
        members = hash_shuffle([(members, ["edge"])], parts, _by_edge)
        members = hash_shuffle([(members, ["node"])], parts, _by_node).materialize()
        rounds += 1
        if not members.sum("changed"):  # plan-sized: one number per round
            return members, rounds


def bucket_dedup(ds, stage, side: SideOutputs, partitions: int | None = None):
    """Distributed lowering of a dedup op declared with a ``Bucketing`` (see the module docstring)."""
    call = stage.call
    parts = shuffle_partitions(partitions)
    ds = ds.materialize()  # read and upstream steps run once for the key map and the final drop
    keys = ds.map_batches(BucketRows(call, stage.num_gpus), **key_map_kwargs(stage))
    members, _ = label_components(hash_shuffle([(keys, ["band", "key"])], parts, _BucketEdges(call)), parts)
    drop = members.map_batches(_dropped, batch_format=ARROW, batch_size=None)
    return hash_shuffle([(ds, [SOURCE]), (drop, [SOURCE])], parts, _DropRows(call.op.name, call.index, side))
