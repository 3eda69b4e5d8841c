"""The numba kernel of MinHash: words, shingles and minima in one pass over UTF-8 bytes (imported only when numba is).

It computes exactly the integers of the numpy path in ``minhash.py`` (same word split, word hash,
shingle combination, mixer and permutations), reading the documents straight from an Arrow string
array's buffers: no Python object per document or word. Words are split where Python's
``str.split()`` splits (every code point whose ``isspace()`` is true). The 64-bit permutation
``(a * x + b) mod 2**64 >> 32`` is computed from 32-bit halves, which AVX2 vectorises:
``hi32(a * x + b) = a_hi * x + b_hi + ((a_lo * x + b_lo) >> 32)  (mod 2**32)``.
"""
from __future__ import annotations

import numba
import numpy as np

_P = np.uint64(0x100000001B3)
_Q = np.uint64(0x9E3779B97F4A7C15)
_MIX1, _MIX2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
_LOW32 = np.uint64(0xFFFFFFFF)
# Per byte: 0 inside a word, 1 ASCII whitespace, 2 the lead byte of a possible multi-byte space.
_KIND = np.zeros(256, dtype=np.uint8)
_KIND[[9, 10, 11, 12, 13, 28, 29, 30, 31, 32]] = 1
_KIND[[0xC2, 0xE1, 0xE2, 0xE3]] = 2


@numba.njit(cache=True, nogil=True, inline="always")
def _space(data, i, end):  # pragma: no cover - compiled
    """Byte width of the multi-byte whitespace code point starting at ``data[i]``, 0 when it is not one."""
    c = data[i]
    if c == 0xC2:  # U+0085, U+00A0
        return 2 if i + 1 < end and (data[i + 1] == 0x85 or data[i + 1] == 0xA0) else 0
    if i + 2 >= end:
        return 0
    c1, c2 = data[i + 1], data[i + 2]
    if c == 0xE1:  # U+1680
        return 3 if c1 == 0x9A and c2 == 0x80 else 0
    if c == 0xE3:  # U+3000
        return 3 if c1 == 0x80 and c2 == 0x80 else 0
    if c1 == 0x80 and (0x80 <= c2 <= 0x8A or c2 == 0xA8 or c2 == 0xA9 or c2 == 0xAF):  # U+2000-200A, 2028, 2029, 202F
        return 3
    return 3 if c1 == 0x81 and c2 == 0x9F else 0  # U+205F


@numba.njit(cache=True, nogil=True)
def _kernel(data, offsets, ngram, a_lo, a_hi, b_lo, b_hi, sig):  # pragma: no cover - compiled
    shift32 = np.uint64(32)
    n_perm = a_lo.shape[0]
    most = 1
    for d in range(offsets.shape[0] - 1):
        most = max(most, (offsets[d + 1] - offsets[d]) // 2 + 1)
    words = np.empty(most, dtype=np.uint64)
    low = np.empty(n_perm, dtype=np.uint32)
    for d in range(offsets.shape[0] - 1):
        end = offsets[d + 1]
        i = offsets[d]
        c = 0
        h = np.uint64(0)
        power = np.uint64(1)
        in_word = False
        while i < end:
            byte = data[i]
            kind = _KIND[byte]
            if kind == 0 or (kind == 2 and _space(data, i, end) == 0):
                h += np.uint64(byte) * power
                power *= _P
                in_word = True
                i += 1
                continue
            if in_word:
                words[c] = h
                c += 1
                h = np.uint64(0)
                power = np.uint64(1)
                in_word = False
            i += 1 if kind == 1 else _space(data, i, end)
        if in_word:
            words[c] = h
            c += 1
        if c == 0:
            continue
        low[:] = np.uint32(0xFFFFFFFF)
        windows = c - ngram + 1 if c >= ngram else 1
        for k in range(windows):
            acc = np.uint64(0)
            q = _Q
            for j in range(min(ngram, c - k)):
                acc += words[k + j] * q
                q *= _Q
            x = acc ^ (acc >> np.uint64(30))
            x *= _MIX1
            x ^= x >> np.uint64(27)
            x *= _MIX2
            x ^= x >> np.uint64(31)
            x32 = np.uint32(x >> shift32)
            x64 = np.uint64(x32)
            for p in range(n_perm):
                lo = np.uint64(a_lo[p]) * x64 + np.uint64(b_lo[p])
                v = np.uint32(a_hi[p] * x32 + b_hi[p] + np.uint32(lo >> shift32))
                low[p] = min(low[p], v)
        for p in range(n_perm):
            sig[d, p] = low[p]


def signatures(data: np.ndarray, offsets: np.ndarray, ngram: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Signatures of the documents ``data[offsets[d]:offsets[d + 1]]`` (UTF-8 bytes, already lowercased)."""
    sig = np.full((len(offsets) - 1, len(a)), np.uint32(0xFFFFFFFF), dtype=np.uint32)
    a_lo, b_lo = ((v & _LOW32).astype(np.uint32) for v in (a, b))
    a_hi, b_hi = ((v >> np.uint64(32)).astype(np.uint32) for v in (a, b))
    _kernel(data, offsets.astype(np.int64, copy=False), np.int64(ngram), a_lo, a_hi, b_lo, b_hi, sig)
    return sig
