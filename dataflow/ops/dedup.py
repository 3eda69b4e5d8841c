"""What every dedup op shares: bucket keys -> duplicate edges -> connected components -> keep one.

A dedup op describes itself as a ``Bucketing``: which (band, key) buckets each row falls in, and
which rows inside one bucket are duplicates. From that, ``dedup_rows`` runs the whole dataset in
one process, and an engine can run the same description distributed (keys as a map, buckets via
a shuffle, components by label propagation over shuffles: ``dataflow.engines.ray.components``). Either way each group of duplicates keeps the
row with the smallest identity (``__source__``, unique per row), so the result does not depend on
partitioning, shard count, engine or order.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Literal, Union

import numpy as np

from dataflow.columns import SOURCE

__all__ = ["Bucketing", "Buckets", "bucket_edges", "components", "dedup_rows", "keep_first"]

Columns = dict[str, np.ndarray]
Match = Union[Literal["all", "equal"], Callable[[np.ndarray], "tuple[np.ndarray, np.ndarray]"]]


@dataclass(frozen=True)
class Buckets:
    """Bucket memberships: row ``row[k]`` falls in bucket (``band[k]``, ``key[k]``) carrying ``value[k]``."""

    row: np.ndarray
    band: np.ndarray
    key: np.ndarray
    value: np.ndarray

    @staticmethod
    def empty() -> Buckets:
        z = np.empty(0, dtype=np.int64)
        return Buckets(z, z, z, z)


@dataclass(frozen=True)
class Bucketing:
    """How a dedup op finds duplicates.

    Attributes:
        keys: Columns of a batch -> the buckets of its rows (row = position in the batch).
        match: Which rows sharing a bucket are duplicates: ``"all"`` of them, those with an
            ``"equal"`` value, or a function from a bucket's values to (i, j) index pairs.
    """

    keys: Callable[[Columns], Buckets]
    match: Match = "all"


def _star(groups: np.ndarray, members: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Edges from the first member of each run of equal ``groups`` to the other members."""
    if len(groups) < 2:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    starts = np.flatnonzero(np.r_[True, groups[1:] != groups[:-1]])
    first = np.repeat(starts, np.diff(np.r_[starts, len(groups)]))
    other = np.flatnonzero(first != np.arange(len(groups)))
    return members[first[other]], members[other]


def bucket_edges(buckets: Buckets, match: Match) -> tuple[np.ndarray, np.ndarray]:
    """Return duplicate edges (row_a, row_b) among rows sharing a bucket."""
    if len(buckets.row) == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    if match == "equal":
        order = np.lexsort((buckets.value, buckets.key, buckets.band))
    else:
        order = np.lexsort((buckets.key, buckets.band))
    band, key, value, row = buckets.band[order], buckets.key[order], buckets.value[order], buckets.row[order]
    new = np.r_[True, (band[1:] != band[:-1]) | (key[1:] != key[:-1])]
    if match == "equal":
        new |= np.r_[True, value[1:] != value[:-1]]
    group = np.cumsum(new)
    if match in ("all", "equal"):
        return _star(group, row)
    starts = np.flatnonzero(new)
    ends = np.r_[starts[1:], len(row)]
    a, b = [], []
    for s, e in zip(starts, ends):
        if e - s > 1:
            i, j = match(value[s:e])
            a.append(row[s:e][i])
            b.append(row[s:e][j])
    if not a:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    return np.concatenate(a), np.concatenate(b)


def components(n: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Label each of ``n`` nodes with the smallest node id of its connected component."""
    labels = np.arange(n, dtype=np.int64)
    if len(a) == 0:
        return labels
    while True:
        low = np.minimum(labels[a], labels[b])
        new = labels.copy()
        np.minimum.at(new, a, low)
        np.minimum.at(new, b, low)
        new = new[new]
        if np.array_equal(new, labels):
            return labels
        labels = new


def keep_first(sources: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Keep mask: in each group of duplicates, the row with the smallest (identity, position)."""
    n = len(sources)
    order = np.array(sorted(range(n), key=lambda i: (str(sources[i]), i)), dtype=np.int64)
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    labels = components(n, rank[a], rank[b]) if len(a) else np.arange(n)
    return labels[rank] == rank


def dedup_rows(cols: Columns, bucketing: Bucketing) -> Columns:
    """Run a dedup over one batch holding the whole dataset; return the kept rows in input order."""
    n = len(next(iter(cols.values()))) if cols else 0
    if n == 0:
        return cols
    a, b = bucket_edges(bucketing.keys(cols), bucketing.match)
    sources = cols[SOURCE] if SOURCE in cols else np.arange(n).astype(str)
    keep = keep_first(sources, a, b)
    return {k: v[keep] for k, v in cols.items()}
