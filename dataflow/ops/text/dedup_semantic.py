"""Drop semantic duplicates: embeddings whose cosine similarity reaches a threshold (SemDedup)."""
from __future__ import annotations

import numpy as np

from dataflow.columns import SOURCE
from dataflow.ops.declare import op
from dataflow.ops.dedup import keep_first
from dataflow.ops.kmeans import cluster_count, fit_sample, in_sample, nearest, sample_fraction, unit_rows

__all__ = ["CLUSTER", "cluster_pairs", "dedup_text_semantic", "similar_pairs"]

#: A batch holding this column is already clustered (an engine assigned it): pairs are compared
#: inside each cluster, and the column is not passed on.
CLUSTER = "__df_cluster__"
_BLOCK = 1024


def similar_pairs(vectors: np.ndarray, threshold: float) -> tuple[np.ndarray, np.ndarray]:
    """(i, j) with i < j and cosine(vectors[i], vectors[j]) >= threshold, in blocks of rows."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit = vectors / np.maximum(norms, 1e-12)
    a, b = [], []
    for start in range(0, len(unit), _BLOCK):
        sims = unit[start : start + _BLOCK] @ unit.T
        i, j = np.nonzero(sims >= threshold)
        i += start
        upper = i < j
        a.append(i[upper])
        b.append(j[upper])
    if not a:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    return np.concatenate(a).astype(np.int64), np.concatenate(b).astype(np.int64)


def cluster_pairs(unit: np.ndarray, ids: np.ndarray, threshold: float) -> tuple[np.ndarray, np.ndarray]:
    """``similar_pairs`` inside each cluster of ``ids``, as row indices of ``unit``."""
    order = np.argsort(ids, kind="stable")
    bounds = np.flatnonzero(np.r_[True, ids[order][1:] != ids[order][:-1], True])
    a, b = [np.empty(0, np.int64)], [np.empty(0, np.int64)]
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        rows = order[lo:hi]
        i, j = similar_pairs(unit[rows], threshold)
        a.append(rows[i])
        b.append(rows[j])
    return np.concatenate(a), np.concatenate(b)


@op(
    name="text.dedup_semantic",
    modality="text",
    inputs=("{column}",),
    outputs=(),
    kind="global",
    batch_format="numpy",
)
def dedup_text_semantic(batch: dict, *, threshold: float = 0.95, column: str = "embedding", clusters: int = 0, seed: int = 0) -> dict:
    """Drop rows whose embedding has cosine similarity >= ``threshold`` with another row's (SemDedup).

    Similar rows are grouped transitively; each group keeps the row with the smallest ``__source__``,
    on every engine. As SemDedup (Abbas et al. 2023, NeMo Curator): spherical k-means over the
    normalised embeddings, then all pairs inside each cluster; Ray and Spark shuffle the rows by
    cluster and compare each cluster in one task. The centroids are fitted in one task on a sample
    of at most 100,000 rows (about 64 per cluster), drawn by a seeded hash of ``__source__``, so
    the result depends on ``seed`` only, not on the engine or the partitioning.
    Trade-off: two near-duplicates whose nearest centroids differ are never compared, and both are
    kept (a dedup never drops a row that exact all-pairs keeps). Fewer clusters find more such
    pairs and cost more; ``clusters: 1`` compares all pairs exactly. NeMo Curator keeps pairs
    below 1 - eps with eps about 0.01-0.07, i.e. thresholds 0.93-0.99.

    Args:
        threshold: Cosine similarity that counts as duplicate.
        column: Column holding the vectors from ``text.embed``.
        clusters: k-means cluster count; 1 compares all pairs exactly; 0 (default) is 1 up to
            10,000 rows, else ceil(sqrt(rows)), which balances the assignment's cost
            (rows x clusters) against the pairs' (rows^2 / clusters).
        seed: Seed of the sample and of the k-means seeding.
    """
    n = len(batch[column])
    if n == 0:
        return {k: v for k, v in batch.items() if k != CLUSTER}
    unit = unit_rows(batch[column])
    sources = batch[SOURCE] if SOURCE in batch else np.arange(n).astype(str)
    if CLUSTER in batch:
        ids = np.asarray(batch[CLUSTER], dtype=np.int64)
    else:
        k = cluster_count(clusters, n)
        ids = np.zeros(n, np.int64)
        if k > 1:
            drawn = in_sample(sources, seed, sample_fraction(k, n))
            ids = nearest(unit, fit_sample(np.asarray(sources)[drawn], unit[drawn], k, seed))
    a, b = cluster_pairs(unit, ids, threshold)
    keep = keep_first(sources, a, b)
    return {k: v[keep] for k, v in batch.items() if k != CLUSTER}
