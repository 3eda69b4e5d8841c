"""Global ops on Ray: distributed lowerings by op name, else the whole dataset in one call.

A distributed lowering is ``fn(ds, stage, side) -> ds`` registered in ``RAY_GLOBAL_OPS``. Without
one, the rows are gathered at the driver and the op's function runs once over all of them: exact,
and fine for the data one machine holds.

The dedup ops (``dataflow.ops.dedup.BUCKETINGS``) lower distributed: bucket keys as a map, bucket
sizes through a hash aggregation, only rows in shared buckets travel to the driver, which finds
the duplicate groups (connected components) and sends back the identities (``__source__``, unique
per row) to drop. The key map gets
the step's resources, so ``resources: {num_gpus: ...}`` puts MinHash signatures on GPUs.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from dataflow.columns import SOURCE
from dataflow.engines.ray.compile import ARROW, RayGlobal
from dataflow.engines.ray.session import cluster_cpus
from dataflow.runtime.batch import concat, from_arrow, length, to_arrow
from dataflow.runtime.stage import StageExecutor, StepCall
from dataflow.runtime.stats import SideOutputs, batch_key

__all__ = ["RAY_GLOBAL_OPS", "apply_global", "key_map_kwargs"]

_CHUNK_ROWS = 1024
_BAND_MIX = np.int64(-7046029254386353131)  # 0x9E3779B97F4A7C15 as int64: spreads band ids over keys


def _gather(ds) -> dict[str, np.ndarray]:
    return concat([from_arrow(b) for b in ds.iter_batches(batch_size=None, batch_format=ARROW)])


def apply_global(ds, stage: RayGlobal, side: SideOutputs):
    """Return the dataset after the global op of ``stage``."""
    import ray

    lowering = RAY_GLOBAL_OPS.get(stage.label)
    if lowering is not None:
        return lowering(ds, stage, side)
    cols = _gather(ds)
    executor = StageExecutor([stage.call])
    if not cols:
        return ds
    out, errors, stats = executor(cols)
    side.write(stage.name, batch_key(cols.get(SOURCE, [])), errors, stats)
    n = length(out)
    # Arrow blocks, not pandas: pandas 3 turns None in string columns into NaN.
    blocks = [to_arrow({k: v[i : i + _CHUNK_ROWS] for k, v in out.items()}) for i in range(0, max(n, 1), _CHUNK_ROWS)]
    return ray.data.from_arrow(blocks)


class _BucketRows:
    """Map: each row's (band, key, value) buckets, with its identity (``__source__``)."""

    def __init__(self, call: StepCall, num_gpus: float | None):
        self.call, self.num_gpus = call, num_gpus
        self._keys = None

    def __call__(self, batch: dict) -> dict:
        if self._keys is None:
            from dataflow.engines.ray.devices import worker_calls
            from dataflow.ops.dedup import BUCKETINGS
            from dataflow.ops.registry import get_op

            # Here, in the worker: ``device: auto`` resolves against the GPUs Ray gave this task.
            (call,), _ = worker_calls([self.call], self.num_gpus)
            spec = get_op(call.op)
            self._keys = BUCKETINGS[spec.name](spec.params(**call.params)).keys
        buckets = self._keys(batch)
        return {SOURCE: np.asarray(batch[SOURCE], dtype=object)[buckets.row], "band": buckets.band, "key": buckets.key, "value": buckets.value}


def _bucket_id(band: np.ndarray, key: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return np.asarray(key, dtype=np.int64) ^ (np.asarray(band, dtype=np.int64) * _BAND_MIX)


def _shared_buckets(sizes: dict) -> dict:
    """Map over bucket sizes: the ids of buckets holding more than one row."""
    big = sizes["count()"] > 1
    return {"bucket": _bucket_id(sizes["band"][big], sizes["key"][big])}


class _InSharedBuckets:
    """Map: keep bucket rows whose bucket holds more than one row."""

    def __init__(self, shared: np.ndarray):
        self.shared = shared

    def __call__(self, batch: dict) -> dict:
        keep = np.isin(_bucket_id(batch["band"], batch["key"]), self.shared)
        return {k: v[keep] for k, v in batch.items()}


class _DropRows:
    """Map: drop rows whose identity (``__source__``) is in ``drop``; count rows in and out per batch."""

    def __init__(self, drop: set, op: str, index: int, side: SideOutputs):
        self.drop, self.op, self.index, self.side = drop, op, index, side

    def __call__(self, batch) -> dict:
        import time

        from dataflow.runtime.stage import StepStats

        batch = from_arrow(batch)
        start = time.perf_counter()
        sources = batch.get(SOURCE, np.array([], dtype=object))
        keep = np.fromiter((s not in self.drop for s in sources), dtype=bool, count=len(sources))
        st = StepStats(rows_in=len(keep), rows_out=int(keep.sum()))
        st.drops[self.op] = st.rows_in - st.rows_out
        st.seconds = time.perf_counter() - start
        self.side.write(f"global-{self.index}", batch_key(sources), [], {self.index: st})
        return {k: v[keep] for k, v in batch.items()}


def _rows(ds) -> dict[str, np.ndarray]:
    return concat(list(ds.iter_batches(batch_size=None, batch_format="numpy")))


def _identities_to_drop(candidates: dict[str, np.ndarray], match) -> set:
    """Every identity in a duplicate group except the group's smallest."""
    from dataflow.ops.dedup import Buckets, bucket_edges, components

    if not candidates or len(candidates[SOURCE]) == 0:
        return set()
    sources = candidates[SOURCE].astype(str)
    rows = np.arange(len(sources), dtype=np.int64)
    a, b = bucket_edges(Buckets(rows, candidates["band"].astype(np.int64), candidates["key"].astype(np.int64), candidates["value"].astype(np.int64)), match)
    nodes, node_of = np.unique(sources, return_inverse=True)
    labels = components(len(nodes), node_of[a], node_of[b])
    return set(nodes[labels != np.arange(len(nodes))].tolist())


def key_map_kwargs(stage: RayGlobal) -> dict[str, Any]:
    """``map_batches`` arguments of a dedup's key map: the step's CPUs, GPUs and batch size per task."""
    kwargs: dict[str, Any] = {"batch_format": "numpy", "zero_copy_batch": False}
    if stage.num_cpus is not None:
        kwargs["num_cpus"] = stage.num_cpus
    if stage.num_gpus:
        kwargs["num_gpus"] = stage.num_gpus
    if stage.batch_size:
        kwargs["batch_size"] = stage.batch_size  # Ray Data requires one with GPUs
    return kwargs


def _bucket_dedup(ds, stage: RayGlobal, side: SideOutputs):
    """Distributed lowering of a dedup op declared with a ``Bucketing``."""
    from dataflow.ops.dedup import BUCKETINGS
    from dataflow.ops.registry import get_op

    call = stage.call
    spec = get_op(call.op)
    bucketing = BUCKETINGS[spec.name](spec.params(**call.params))
    ds = ds.materialize()  # read and upstream steps run once for the two passes below
    if ds.count() == 0:
        return ds
    keys = ds.map_batches(_BucketRows(call, stage.num_gpus), **key_map_kwargs(stage)).materialize()
    drop: set = set()
    if keys.count():
        partitions = max(1, min(keys.num_blocks(), int(cluster_cpus()) * 2))
        sizes = keys.groupby(["band", "key"], num_partitions=partitions).count()
        shared_rows = _rows(sizes.map_batches(_shared_buckets, batch_format="numpy", zero_copy_batch=False))
        shared = np.unique(shared_rows["bucket"]) if shared_rows else np.empty(0, dtype=np.int64)
        if len(shared):
            candidates = _rows(keys.map_batches(_InSharedBuckets(shared), batch_format="numpy", zero_copy_batch=False))
            drop = _identities_to_drop(candidates, bucketing.match)
    return ds.map_batches(_DropRows(drop, spec.name, call.index, side), batch_format=ARROW)


RAY_GLOBAL_OPS: dict[str, Callable[[Any, Any, SideOutputs], Any]] = {
    "image.dedup_phash": _bucket_dedup,
    "text.dedup_exact": _bucket_dedup,
    "text.dedup_minhash": _bucket_dedup,
}
