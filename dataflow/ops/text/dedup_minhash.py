"""Drop near-duplicate texts: MinHash signatures, LSH band buckets, connected components."""
from __future__ import annotations

import numpy as np

from dataflow.ops.declare import op
from dataflow.ops.dedup import Bucketing, Buckets, dedup_rows, register_bucketing
from dataflow.ops.device import Device, resolve_device
from dataflow.ops.text.minhash import EMPTY, band_keys, minhash_signatures, optimal_bands

__all__ = ["bands_rows", "dedup_text_minhash"]


def bands_rows(params) -> tuple[int, int]:
    """(bands, rows): as given, or datasketch's optimum for ``threshold`` and ``num_perm``."""
    if params.bands is not None and params.rows is not None:
        if params.bands * params.rows > params.num_perm:
            raise ValueError(f"text.dedup_minhash: bands*rows = {params.bands * params.rows} exceeds num_perm={params.num_perm}")
        return params.bands, params.rows
    if params.bands is not None or params.rows is not None:
        raise ValueError("text.dedup_minhash: give both bands and rows, or neither (then threshold decides)")
    return optimal_bands(params.threshold, params.num_perm)


@register_bucketing("text.dedup_minhash")
def _bucketing(params) -> Bucketing:
    bands, rows = bands_rows(params)

    def keys(cols: dict) -> Buckets:
        # Resolved where the keys are computed (a worker), not where the bucketing is built.
        device = resolve_device(params.device, "text.dedup_minhash")
        sig = minhash_signatures(cols[params.column], ngram=params.ngram, num_perm=params.num_perm, seed=params.seed, lowercase=params.lowercase, device=device)
        has_words = np.flatnonzero(sig[:, 0] != EMPTY) if len(sig) else np.empty(0, dtype=np.int64)
        keys_ = band_keys(sig[has_words], bands, rows)
        return Buckets(
            row=np.repeat(has_words.astype(np.int64), bands),
            band=np.tile(np.arange(bands, dtype=np.int64), len(has_words)),
            key=keys_.reshape(-1),
            value=np.zeros(len(has_words) * bands, dtype=np.int64),
        )

    return Bucketing(keys=keys, match="all")


@op(
    name="text.dedup_minhash",
    modality="text",
    inputs=("{column}",),
    input_types={"{column}": "string"},
    outputs=(),
    kind="global",
    batch_format="numpy",
)
def dedup_text_minhash(
    batch: dict,
    *,
    ngram: int = 5,
    num_perm: int = 128,
    threshold: float = 0.8,
    bands: int | None = None,
    rows: int | None = None,
    seed: int = 42,
    lowercase: bool = True,
    column: str = "text",
    device: Device = "auto",
) -> dict:
    """Drop near-duplicate documents (estimated Jaccard similarity of word n-grams above ``threshold``).

    Documents sharing any LSH band bucket are duplicates; duplicates are grouped transitively and
    each group keeps the row with the smallest ``__source__`` (deterministic). On Ray this runs
    distributed: signatures as a map, band buckets and components through shuffles.
    Documents without words are never deduplicated here (``text.filter_length`` drops them).

    Args:
        ngram: Words per shingle (Data-Juicer's window_size).
        num_perm: MinHash permutations.
        threshold: Jaccard similarity that counts as duplicate; picks bands and rows.
        bands: LSH bands (with rows: overrides threshold).
        rows: Signature values per band.
        seed: Seed of the permutations.
        lowercase: Lowercase before shingling.
        column: Column holding the text.
        device: ``auto`` computes signatures with torch on CUDA when visible (same integers),
            ``cpu`` (numba when installed, else numpy) or ``cuda`` force one.
    """
    params = dedup_text_minhash.params(
        ngram=ngram, num_perm=num_perm, threshold=threshold, bands=bands, rows=rows, seed=seed, lowercase=lowercase, column=column, device=device
    )
    return dedup_rows(batch, _bucketing(params))
