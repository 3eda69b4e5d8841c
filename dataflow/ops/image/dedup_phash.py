"""Drop near-duplicate images: perceptual hashes within a Hamming distance, across the dataset."""
from __future__ import annotations

import numpy as np

from dataflow.ops.declare import op
from dataflow.ops.dedup import Bucketing, Buckets, dedup_rows
from dataflow.ops.image.phash import hamming

__all__ = ["dedup_image_phash"]

_BLOCK = 2048


def _chunks(max_distance: int) -> list[tuple[int, int]]:
    """Split 64 bits into ``max_distance + 1`` (shift, width) chunks: by pigeonhole, two hashes
    within ``max_distance`` bits agree on at least one chunk."""
    if not 0 <= max_distance <= 31:
        raise ValueError(f"image.dedup_phash: max_distance must be within 0..31 bits, got {max_distance}")
    count = max_distance + 1
    widths = [64 // count + (1 if i < 64 % count else 0) for i in range(count)]
    shifts = np.cumsum([0, *widths[:-1]])
    return [(int(s), w) for s, w in zip(shifts, widths)]


def _within(max_distance: int):
    def match(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        unique, first, inverse = np.unique(values, return_index=True, return_inverse=True)
        same = np.flatnonzero(first[inverse] != np.arange(len(values)))
        a, b = [first[inverse[same]]], [same]
        for start in range(0, len(unique), _BLOCK):
            block = unique[start : start + _BLOCK]
            i, j = np.nonzero(hamming(block[:, None], unique[None, :]) <= max_distance)
            i += start
            upper = i < j
            a.append(first[i[upper]])
            b.append(first[j[upper]])
        return np.concatenate(a), np.concatenate(b)

    return match


def _bucketing(params) -> Bucketing:
    chunks = _chunks(params.max_distance)

    def keys(cols: dict) -> Buckets:
        hashes = np.asarray(cols[params.column], dtype=np.int64)
        bits = hashes.view(np.uint64)
        n = len(hashes)
        band = np.repeat(np.arange(len(chunks), dtype=np.int64), n)
        key = np.concatenate([((bits >> np.uint64(s)) & np.uint64((1 << w) - 1)).astype(np.int64) for s, w in chunks])
        return Buckets(row=np.tile(np.arange(n, dtype=np.int64), len(chunks)), band=band, key=key, value=np.tile(hashes, len(chunks)))

    return Bucketing(keys=keys, match=_within(params.max_distance))


@op(
    name="image.dedup_phash",
    bucketing=_bucketing,
    modality="image",
    inputs=("{column}",),
    outputs=(),
    kind="global",
    batch_format="numpy",
)
def dedup_image_phash(batch: dict, *, max_distance: int = 4, column: str = "phash") -> dict:
    """Drop images whose perceptual hash is within ``max_distance`` bits of another's, over the whole dataset.

    Near-duplicates are grouped transitively (connected components); each group keeps the row
    with the smallest ``__source__``, so the result is the same however the data is partitioned.
    Candidates come from hash chunks (multi-index hashing), so the work stays near-linear.

    Args:
        max_distance: Largest Hamming distance (of 64 bits) that counts as a duplicate.
        column: Column holding the int64 hashes from ``image.phash``.
    """
    return dedup_rows(batch, _bucketing(dedup_image_phash.params(max_distance=max_distance, column=column)))
