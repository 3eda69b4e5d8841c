"""Spherical k-means over unit vectors, fitted on a deterministic sample: SemDedup's clustering step.

Every engine clusters the same way, so a semantic dedup gives the same rows wherever it runs:
the sample is the rows whose seeded hash of ``__source__`` falls under a fraction (independent of
partitioning, order and engine), sorted by ``__source__``; the fit (k-means++ seeding, then
Lloyd iterations on cosine similarity) runs in one process over that bounded sample; each row then
joins its nearest centroid, which any task can compute from the centroids alone.
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["EXACT_UP_TO", "SAMPLE_ROWS", "cluster_count", "fit_centroids", "fit_sample", "in_sample", "nearest", "sample_fraction", "unit_rows"]

#: Up to this many rows the default is one cluster: exact all-pairs.
EXACT_UP_TO = 10_000
#: The fit's sample: about 64 rows per cluster, at most this many rows.
SAMPLE_ROWS = 100_000
_PER_CLUSTER = 64
_BLOCK = 4096


def cluster_count(clusters: int, rows: int) -> int:
    """The cluster count for ``rows`` rows: ``clusters`` if set (> 0), else 1 up to ``EXACT_UP_TO`` rows, else ceil(sqrt(rows)).

    sqrt balances the two costs: the assignment compares each row with k centroids (rows * k) and
    the pairs inside the clusters cost rows * rows / k.
    """
    if clusters < 0:
        raise ValueError(f"text.dedup_semantic: clusters must be 0 (derived from the row count) or more (got {clusters})")
    if clusters > 0:
        return min(clusters, max(1, rows))
    return 1 if rows <= EXACT_UP_TO else math.ceil(math.sqrt(rows))


def sample_fraction(k: int, rows: int) -> float:
    """The fraction of ``rows`` rows that the fit of ``k`` centroids samples."""
    return 1.0 if rows <= 0 else min(1.0, min(SAMPLE_ROWS, _PER_CLUSTER * k) / rows)


def in_sample(sources: np.ndarray, seed: int, fraction: float) -> np.ndarray:
    """Mask of the rows in the fit's sample: a seeded hash of each identity, the same in every process."""
    import pandas as pd

    if fraction >= 1.0:
        return np.ones(len(sources), dtype=bool)
    values = np.asarray([str(s) for s in sources], dtype=object)
    h = pd.util.hash_array(values, hash_key=f"semdedup{seed % 2**32:08x}", categorize=False)
    return (h >> np.uint64(11)).astype(np.float64) / float(2**53) < fraction


def unit_rows(values) -> np.ndarray:
    """The vectors of a column (a sequence of arrays), each scaled to length 1 (zero vectors stay zero)."""
    if isinstance(values, np.ndarray) and values.ndim == 2:
        vectors = values.astype(np.float32, copy=False)
    else:
        vectors = np.stack([np.asarray(v, dtype=np.float32) for v in values]) if len(values) else np.empty((0, 0), np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True) if len(vectors) else np.empty((0, 1), np.float32)
    return vectors / np.maximum(norms, 1e-12)


def nearest(unit: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """The index of each row's most similar centroid (the smallest index on a tie).

    Similarities are float64: a float32 product's last bits depend on where a row falls in the
    block BLAS computes (its kernel for the edge rows), so a row near a cluster boundary was
    assigned differently in a batch of other rows (an engine's block) than in the whole input.
    """
    out = np.zeros(len(unit), dtype=np.int64)
    if centroids.size == 0:  # no centroid fitted (an empty sample): one cluster
        return out
    wide = centroids.astype(np.float64).T
    for start in range(0, len(unit), _BLOCK):
        out[start : start + _BLOCK] = np.argmax(unit[start : start + _BLOCK].astype(np.float64) @ wide, axis=1)
    return out


def fit_centroids(unit: np.ndarray, k: int, seed: int, iterations: int = 20) -> np.ndarray:
    """Fit ``k`` unit centroids to the unit rows ``unit`` (at most ``len(unit)``): k-means++ seeding, then Lloyd."""
    rng = np.random.default_rng(seed)
    m = len(unit)
    k = max(1, min(k, m))
    centroids = np.empty((k, unit.shape[1]), dtype=np.float32)
    wide = unit.astype(np.float64)  # as in ``nearest``
    centroids[0] = unit[rng.integers(m)]
    d2 = np.maximum(2.0 - 2.0 * (wide @ centroids[0].astype(np.float64)), 0.0)
    for c in range(1, k):
        total = d2.sum()
        pick = int(rng.choice(m, p=d2 / total)) if total > 0 else int(rng.integers(m))
        centroids[c] = unit[pick]
        d2 = np.minimum(d2, np.maximum(2.0 - 2.0 * (wide @ centroids[c].astype(np.float64)), 0.0))
    ids = None
    for _ in range(iterations):
        new = nearest(unit, centroids)
        if ids is not None and np.array_equal(new, ids):
            break
        ids = new
        sums = np.stack([np.bincount(ids, weights=unit[:, j], minlength=k) for j in range(unit.shape[1])], axis=1)
        norms = np.linalg.norm(sums, axis=1)
        filled = norms > 0  # an empty cluster keeps its centroid
        centroids[filled] = (sums[filled] / norms[filled, None]).astype(np.float32)
    return centroids


def fit_sample(sources: np.ndarray, unit: np.ndarray, k: int, seed: int) -> np.ndarray:
    """Fit ``k`` centroids to the sampled rows (``sources``, ``unit``), taken in ``__source__`` order."""
    if len(sources) == 0:  # no row drawn: one cluster
        return np.zeros((1, unit.shape[1] if unit.ndim == 2 else 0), dtype=np.float32)
    order = sorted(range(len(sources)), key=lambda i: str(sources[i]))
    return fit_centroids(unit[np.asarray(order, dtype=np.int64)], k, seed)
