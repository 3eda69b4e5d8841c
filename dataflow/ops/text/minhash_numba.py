"""The numba kernel of MinHash: word hashes, shingles and minima in one pass (imported only when numba is).

It computes exactly the integers of the numpy path in ``minhash.py`` (same word hash, shingle
combination, mixer and permutations), without the temporaries.
"""
from __future__ import annotations

import numba
import numpy as np

_P = np.uint64(0x100000001B3)
_Q = np.uint64(0x9E3779B97F4A7C15)
_MIX1, _MIX2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)


@numba.njit(cache=True, nogil=True)
def _kernel(blob, starts, ends, counts, ngram, a, b, sig):  # pragma: no cover - compiled
    shift32 = np.uint64(32)
    words = np.empty(starts.shape[0], dtype=np.uint64)
    for w in range(starts.shape[0]):
        h = np.uint64(0)
        for j in range(ends[w] - 1, starts[w] - 1, -1):
            h = h * _P + np.uint64(blob[j])
        words[w] = h
    first = 0
    low = np.empty(a.shape[0], dtype=np.uint64)
    for d in range(counts.shape[0]):
        c = counts[d]
        low[:] = np.uint64(0xFFFFFFFF)
        windows = c - ngram + 1 if c >= ngram else (1 if c > 0 else 0)
        for k in range(windows):
            acc = np.uint64(0)
            q = _Q
            for i in range(min(ngram, c - k)):
                acc += words[first + k + i] * q
                q *= _Q
            x = acc ^ (acc >> np.uint64(30))
            x *= _MIX1
            x ^= x >> np.uint64(27)
            x *= _MIX2
            x ^= x >> np.uint64(31)
            x >>= shift32
            for p in range(a.shape[0]):
                low[p] = min(low[p], (a[p] * x + b[p]) >> shift32)
        for p in range(a.shape[0]):
            sig[d, p] = np.uint32(low[p])
        first += c


def signatures(blob: np.ndarray, spaces: np.ndarray, counts: np.ndarray, ngram: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Signatures of the documents whose words (``counts`` per document) are joined by spaces in ``blob``."""
    sig = np.full((len(counts), len(a)), np.uint32(0xFFFFFFFF), dtype=np.uint32)
    if int(counts.sum()) == 0:
        return sig
    starts = np.r_[0, spaces + 1].astype(np.int64)
    ends = np.r_[spaces, len(blob)].astype(np.int64)
    _kernel(blob, starts, ends, counts, np.int64(ngram), np.ascontiguousarray(a), np.ascontiguousarray(b), sig)
    return sig
