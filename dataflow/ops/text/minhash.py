"""MinHash signatures of word n-gram shingles, vectorised (numpy), compiled (numba) or on GPU (torch).

All three compute the same integers:

- a word's hash is the polynomial ``sum b_j * P**j mod 2**64`` over its UTF-8 bytes (numpy gets it
  from prefix sums, so a batch is hashed without a Python loop per word);
- a shingle (``ngram`` consecutive words; a shorter document is one shingle) is
  ``mix64(sum h_i * Q**(i+1))``, and its top 32 bits are the shingle value ``x``;
- permutation ``p`` maps ``x`` to ``((a_p * x + b_p) mod 2**64) >> 32`` (multiply-add-shift, a
  2-universal family), and a signature holds the minimum per permutation.

Band keys for LSH hash ``rows`` consecutive signature values per band. ``optimal_bands`` picks
(bands, rows) for a Jaccard threshold the way datasketch does (least weighted FP + FN area).
"""
from __future__ import annotations

import functools
import importlib.util
import itertools

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["EMPTY", "band_keys", "minhash_signatures", "optimal_bands", "permutations", "shingle_values"]

EMPTY = np.uint32(0xFFFFFFFF)  # every slot of a document with no words
_P = np.uint64(0x100000001B3)
_P_INV = np.uint64(pow(0x100000001B3, -1, 1 << 64))
_Q = 0x9E3779B97F4A7C15
_MIX1, _MIX2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
_CHUNK = 8192


def mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser (a bijection that spreads every input bit)."""
    x = x ^ (x >> np.uint64(30))
    x = x * _MIX1
    x = x ^ (x >> np.uint64(27))
    x = x * _MIX2
    return x ^ (x >> np.uint64(31))


def _powers(base: np.uint64, n: int) -> np.ndarray:
    out = np.full(n, base, dtype=np.uint64)
    out[0] = 1
    return np.cumprod(out, dtype=np.uint64)


@functools.lru_cache(maxsize=16)
def _q_powers(n: int) -> np.ndarray:
    return _powers(np.uint64(_Q), n + 1)[1:]


def _utf8(texts, lowercase: bool) -> tuple[np.ndarray, np.ndarray]:
    """(UTF-8 bytes of all documents, int64 offsets: document d is ``data[offsets[d]:offsets[d + 1]]``); null is empty.

    Lowercasing is Arrow's ``utf8_lower`` (Unicode's simple case mapping), so every backend reads
    the same bytes and a batch never becomes Python strings.
    """
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks()
    if not isinstance(texts, pa.Array):
        try:
            texts = pa.array(texts, type=pa.large_string(), from_pandas=True)
        except (pa.ArrowException, UnicodeEncodeError):  # lone surrogates: Python lowercases, bytes as Python holds them
            texts = pa.array([((t or "").lower() if lowercase else (t or "")).encode("utf-8", "surrogatepass") for t in texts], pa.large_binary())
            lowercase = False
    if lowercase:
        texts = pc.utf8_lower(texts)
    texts = pc.fill_null(texts.cast(pa.large_binary()), b"")
    _, offsets, data = texts.buffers()
    offsets = np.frombuffer(offsets, dtype=np.int64)[texts.offset : texts.offset + len(texts) + 1]
    return (np.frombuffer(data, dtype=np.uint8) if data is not None else np.empty(0, dtype=np.uint8)), offsets


def _words(texts, lowercase: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(utf-8 bytes of all words joined by spaces, word start offsets, words per document)."""
    data, offsets = _utf8(texts, lowercase)
    docs = [data[offsets[d] : offsets[d + 1]].tobytes().decode("utf-8", "surrogatepass").split() for d in range(len(offsets) - 1)]
    counts = np.fromiter((len(d) for d in docs), dtype=np.int64, count=len(docs))
    blob = np.frombuffer(" ".join(itertools.chain.from_iterable(docs)).encode("utf-8", "surrogatepass"), dtype=np.uint8)
    return blob, counts, np.flatnonzero(blob == 32)


def word_hashes(blob: np.ndarray, spaces: np.ndarray, n_words: int) -> np.ndarray:
    """Polynomial hash of each space-separated word in ``blob``."""
    if n_words == 0:
        return np.empty(0, dtype=np.uint64)
    starts = np.r_[0, spaces + 1].astype(np.int64)
    ends = np.r_[spaces, len(blob)].astype(np.int64)
    prefix = np.zeros(len(blob) + 1, dtype=np.uint64)
    np.cumsum(blob.astype(np.uint64) * _powers(_P, len(blob)), dtype=np.uint64, out=prefix[1:])
    inverse = _powers(_P_INV, len(blob) + 1)
    return (prefix[ends] - prefix[starts]) * inverse[starts]


def shingle_values(texts, ngram: int, lowercase: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """(32-bit shingle values as uint64, index of the document each belongs to), in document order."""
    blob, counts, spaces = _words(texts, lowercase)
    total = int(counts.sum())
    words = word_hashes(blob, spaces, total)
    doc = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    position = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
    remaining = counts[doc] - position
    padded = np.r_[words, np.zeros(ngram, dtype=np.uint64)]
    q = _q_powers(ngram)
    acc = np.zeros(total, dtype=np.uint64)
    for i in range(ngram):
        acc += padded[i : i + total] * q[i] * (remaining > i).astype(np.uint64)
    start = (remaining >= ngram) | ((position == 0) & (counts[doc] < ngram))
    return mix64(acc[start]) >> np.uint64(32), doc[start]


@functools.lru_cache(maxsize=16)
def permutations(num_perm: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The (a, b) uint64 coefficients of ``num_perm`` permutations; ``a`` is odd."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, np.iinfo(np.uint64).max, size=num_perm, dtype=np.uint64, endpoint=True) | np.uint64(1)
    b = rng.integers(0, np.iinfo(np.uint64).max, size=num_perm, dtype=np.uint64, endpoint=True)
    a.setflags(write=False)
    b.setflags(write=False)
    return a, b


def _min_numpy(x: np.ndarray, doc: np.ndarray, n_docs: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    sig = np.full((n_docs, len(a)), EMPTY, dtype=np.uint32)
    for s in range(0, len(x), _CHUNK):
        xs, ds = x[s : s + _CHUNK], doc[s : s + _CHUNK]
        values = ((xs[:, None] * a[None, :] + b[None, :]) >> np.uint64(32)).astype(np.uint32)
        first = np.flatnonzero(np.r_[True, ds[1:] != ds[:-1]])
        docs = ds[first]
        sig[docs] = np.minimum(sig[docs], np.minimum.reduceat(values, first, axis=0))
    return sig


def _min_torch(x: np.ndarray, doc: np.ndarray, n_docs: int, a: np.ndarray, b: np.ndarray, device: str) -> np.ndarray:
    import torch

    ta = torch.from_numpy(a.view(np.int64).copy()).to(device)
    tb = torch.from_numpy(b.view(np.int64).copy()).to(device)
    sig = torch.full((n_docs, len(a)), int(EMPTY), dtype=torch.int64, device=device)
    for s in range(0, len(x), _CHUNK * 8):
        xs = torch.from_numpy(x[s : s + _CHUNK * 8].view(np.int64).copy()).to(device)
        ds = torch.from_numpy(doc[s : s + _CHUNK * 8].copy()).to(device)
        # int64 products wrap like uint64; shift then mask gives the same top 32 bits.
        values = ((xs[:, None] * ta[None, :] + tb[None, :]) >> 32) & 0xFFFFFFFF
        sig.scatter_reduce_(0, ds[:, None].expand_as(values), values, reduce="amin", include_self=True)
    return sig.cpu().numpy().astype(np.uint32)


def _backend(device: str) -> str:
    if device == "cuda":
        return "torch"
    return "numba" if importlib.util.find_spec("numba") is not None else "numpy"


def minhash_signatures(
    texts, *, ngram: int = 5, num_perm: int = 128, seed: int = 42, lowercase: bool = True, device: str = "cpu", backend: str | None = None
) -> np.ndarray:
    """Return the (len(texts), num_perm) uint32 MinHash signatures of word ``ngram`` shingles.

    Args:
        texts: The documents.
        ngram: Words per shingle.
        num_perm: Permutations (signature length).
        seed: Seed of the permutations; signatures compare only under the same seed.
        lowercase: Lowercase (Unicode simple case mapping) before splitting into words.
        device: "cpu" or "cuda" (torch).
        backend: "numpy", "numba" or "torch"; default: torch on cuda, else numba when installed.
    """
    a, b = permutations(num_perm, seed)
    backend = backend or _backend(device)
    if backend == "numba":
        from dataflow.ops.text.minhash_numba import signatures

        data, offsets = _utf8(texts, lowercase)
        return signatures(data, offsets, ngram, a, b)
    x, doc = shingle_values(texts, ngram, lowercase)
    if backend == "torch":
        return _min_torch(x, doc, len(texts), a, b, device)
    return _min_numpy(x, doc, len(texts), a, b)


def band_keys(signatures: np.ndarray, bands: int, rows: int) -> np.ndarray:
    """(n, bands) int64 keys: a hash of each band's ``rows`` signature values."""
    n = len(signatures)
    used = signatures[:, : bands * rows].astype(np.uint64).reshape(n, bands, rows)
    q = _q_powers(rows)
    return mix64((used * q[None, None, :]).sum(axis=2, dtype=np.uint64)).view(np.int64)


def _area(fn, lo: float, hi: float) -> float:
    s = np.linspace(lo, hi, 201)
    return float(np.trapezoid(fn(s), s))


@functools.lru_cache(maxsize=64)
def optimal_bands(threshold: float, num_perm: int, false_positive_weight: float = 0.5) -> tuple[int, int]:
    """(bands, rows) with bands*rows <= num_perm minimising the weighted FP and FN probability areas."""
    best, best_err = (1, num_perm), float("inf")
    for bands in range(1, num_perm + 1):
        for rows in range(1, num_perm // bands + 1):
            fp = _area(lambda s: 1 - (1 - s**rows) ** bands, 0.0, threshold)
            fn = _area(lambda s: (1 - s**rows) ** bands, threshold, 1.0)
            err = fp * false_positive_weight + fn * (1 - false_positive_weight)
            if err < best_err:
                best, best_err = (bands, rows), err
    return best
