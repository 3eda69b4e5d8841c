"""Drop exact duplicate texts (after light normalisation), across the dataset."""
from __future__ import annotations

import hashlib
import re
import unicodedata

import numpy as np

from dataflow.ops.declare import op
from dataflow.ops.dedup import Bucketing, Buckets, dedup_rows

__all__ = ["dedup_text_exact", "text_digest"]

_NON_WORD = re.compile(r"[^\w\s]+")


_NULL = hashlib.blake2b(b"", digest_size=16, person=b"dataflow-null").digest()  # no text's digest: a NULL is no duplicate of ""


def text_digest(text: str | None, lowercase: bool, ignore_punctuation: bool) -> bytes:
    """16-byte BLAKE2b of the NFC text with whitespace collapsed (and lowercased / unpunctuated); NULLs share one digest of their own."""
    if text is None:
        return _NULL
    text = " ".join(unicodedata.normalize("NFC", text).split())
    if lowercase:
        text = text.lower()
    if ignore_punctuation:
        text = " ".join(_NON_WORD.sub(" ", text).split())
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _bucketing(params) -> Bucketing:
    def keys(cols: dict) -> Buckets:
        digests = b"".join(text_digest(t, params.lowercase, params.ignore_punctuation) for t in cols[params.column])
        halves = np.frombuffer(digests, dtype=np.int64).reshape(-1, 2)
        n = len(halves)
        return Buckets(row=np.arange(n, dtype=np.int64), band=np.zeros(n, dtype=np.int64), key=halves[:, 0].copy(), value=halves[:, 1].copy())

    return Bucketing(keys=keys, match="equal")


@op(
    name="text.dedup_exact",
    bucketing=_bucketing,
    modality="text",
    inputs=("{column}",),
    input_types={"{column}": "string"},
    outputs=(),
    kind="global",
    batch_format="numpy",
)
def dedup_text_exact(batch: dict, *, lowercase: bool = False, ignore_punctuation: bool = False, column: str = "text") -> dict:
    """Keep one row per distinct text; duplicates keep the row with the smallest ``__source__``.

    Texts are compared by a 128-bit hash of their NFC form with whitespace collapsed (Data-Juicer's
    document_deduplicator, whose defaults also leave case and punctuation alone). NULL texts are
    duplicates of each other (as Spark's ``dropDuplicates`` keys), not of an empty text.

    Args:
        lowercase: Compare case-insensitively.
        ignore_punctuation: Compare with punctuation removed.
        column: Column holding the text.
    """
    return dedup_rows(batch, _bucketing(dedup_text_exact.params(lowercase=lowercase, ignore_punctuation=ignore_punctuation, column=column)))
