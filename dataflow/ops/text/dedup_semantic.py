"""Drop semantic duplicates: embeddings whose cosine similarity reaches a threshold."""
from __future__ import annotations

import numpy as np

from dataflow.columns import SOURCE
from dataflow.ops.declare import op
from dataflow.ops.dedup import keep_first

__all__ = ["dedup_text_semantic", "similar_pairs"]

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


@op(
    name="text.dedup_semantic",
    modality="text",
    inputs=("{column}",),
    input_types={"{column}": "string"},
    outputs=(),
    kind="global",
    batch_format="numpy",
)
def dedup_text_semantic(batch: dict, *, threshold: float = 0.95, column: str = "embedding") -> dict:
    """Drop rows whose embedding has cosine similarity >= ``threshold`` with another row's.

    Similar rows are grouped transitively; each group keeps the row with the smallest ``__source__``.
    Compares all pairs exactly (blocked matrix products): sized for up to ~10^5 rows per run.
    NeMo Curator's semantic dedup keeps pairs below 1 - eps with eps about 0.01-0.07, i.e.
    thresholds 0.93-0.99.

    Args:
        threshold: Cosine similarity that counts as duplicate.
        column: Column holding the vectors from ``text.embed``.
    """
    n = len(batch[column])
    if n == 0:
        return batch
    vectors = np.stack([np.asarray(v, dtype=np.float32) for v in batch[column]])
    a, b = similar_pairs(vectors, threshold)
    sources = batch[SOURCE] if SOURCE in batch else np.arange(n).astype(str)
    keep = keep_first(sources, a, b)
    return {k: v[keep] for k, v in batch.items()}
