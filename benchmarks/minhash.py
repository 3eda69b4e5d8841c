"""MinHash benchmark: our signatures against datasketch's on the same documents and duplicate sets.

Generates documents with planted near-duplicates (one word changed: 5-gram Jaccard >= 0.95, well
above the 0.8 threshold, so both methods should find each), computes 128-slot
signatures of word 5-grams with datasketch (``MinHash.update_batch``, its fast path) and with
ours (numba kernel, numpy vectorised, torch on ``--device`` when CUDA is there), all on one core,
then finds duplicate sets with the same LSH bands (9 x 13 for threshold 0.8) and compares which
documents each keeps. Prints signatures/s, the speed-up over datasketch (target >= 10x) and the
agreement of the kept sets (target >= 0.999).

Against Daft (the fastest peer; ``pip install daft 'pyarrow>=26'`` in this environment): its
``minhash`` expression on the same documents, permutations, n-gram size and seed, one thread, and
ours with numba, alternated over 3 rounds; docs per CPU-second (process time, so other load on the
machine does not count), median and min/max. Target: ours >= 1.0x Daft per core.

Usage: python benchmarks/minhash.py [--docs 3000] [--words 250] [--device cuda] [--json OUT.json]
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import random
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

NUM_PERM, NGRAM, BANDS, ROWS = 128, 5, 9, 13


def corpus(n: int, words: int, seed: int = 0) -> tuple[list[str], int]:
    """``n`` documents of ``words``-``1.5 * words`` words; every 10th copies an earlier one with one word replaced."""
    from examples.generate_text import ENGLISH, document

    rng = random.Random(seed)
    docs: list[str] = []
    planted = 0
    for i in range(n):
        if i % 10 == 9:
            copy = docs[rng.randrange(len(docs))].split(" ")
            copy[rng.randrange(len(copy))] = "lighthouse"
            docs.append(" ".join(copy))
            planted += 1
        else:
            docs.append(document(rng, ENGLISH, rng.randint(words, words * 3 // 2)))
    return docs, planted


def shingles(text: str) -> list[bytes]:
    words = text.lower().split()
    if len(words) < NGRAM:
        return [" ".join(words).encode()] if words else []
    return [" ".join(words[i : i + NGRAM]).encode() for i in range(len(words) - NGRAM + 1)]


def datasketch_signatures(docs: list[str]):
    from datasketch import MinHash

    out = []
    for d in docs:
        m = MinHash(num_perm=NUM_PERM)
        m.update_batch(shingles(d))
        out.append(m)
    return out


def kept_ours(docs: list[str], signatures: np.ndarray) -> np.ndarray:
    from dataflow.ops.dedup import Buckets, bucket_edges, keep_first
    from dataflow.ops.text.minhash import band_keys

    keys = band_keys(signatures, BANDS, ROWS)
    n = len(docs)
    buckets = Buckets(np.repeat(np.arange(n), BANDS), np.tile(np.arange(BANDS), n), keys.reshape(-1), np.zeros(n * BANDS, dtype=np.int64))
    a, b = bucket_edges(buckets, "all")
    return keep_first(np.array([f"{i:08d}" for i in range(n)], dtype=object), a, b)


def kept_datasketch(minhashes) -> np.ndarray:
    from datasketch import MinHashLSH

    from dataflow.ops.dedup import keep_first

    lsh = MinHashLSH(num_perm=NUM_PERM, params=(BANDS, ROWS))
    for i, m in enumerate(minhashes):
        lsh.insert(i, m)
    a, b = [], []
    for i, m in enumerate(minhashes):
        for j in lsh.query(m):
            if j != i:
                a.append(i)
                b.append(j)
    return keep_first(np.array([f"{i:08d}" for i in range(len(minhashes))], dtype=object), np.array(a, dtype=np.int64), np.array(b, dtype=np.int64))


def per_core(fn, docs) -> float:
    """Documents per CPU-second of this process (all its threads) for one call of ``fn(docs)``."""
    start = time.process_time()
    fn(docs)
    return len(docs) / (time.process_time() - start)


def against_daft(docs: list[str], rounds: int = 3) -> dict:
    """Ours (numba) and Daft's ``minhash``, alternated, one thread each: docs per CPU-second."""
    try:
        import daft
    except ImportError:
        return {"daft": "not installed (pip install daft 'pyarrow>=26')"}
    from dataflow.ops.text.minhash import minhash_signatures

    daft.set_runner_native(num_threads=1)

    def run_daft(texts):
        frame = daft.from_pydict({"text": texts})
        frame.with_column("mh", daft.col("text").minhash(num_hashes=NUM_PERM, ngram_size=NGRAM, seed=42)).collect()

    def run_ours(texts):
        minhash_signatures(texts, num_perm=NUM_PERM, ngram=NGRAM, seed=42, backend="numba")

    run_daft(docs[:100])
    run_ours(docs[:100])
    ours, theirs = [], []
    for _ in range(rounds):
        ours.append(per_core(run_ours, docs))
        theirs.append(per_core(run_daft, docs))
    ratios = sorted(o / t for o, t in zip(ours, theirs))
    return {
        "daft_version": daft.__version__,
        "ours_numba_docs_per_cpu_s": {"median": round(float(np.median(ours))), "min": round(min(ours)), "max": round(max(ours))},
        "daft_docs_per_cpu_s": {"median": round(float(np.median(theirs))), "min": round(min(theirs)), "max": round(max(theirs))},
        "ours_over_daft_per_core": {"median": round(ratios[len(ratios) // 2], 2), "min": round(ratios[0], 2), "max": round(ratios[-1], 2)},
    }


def timed(fn, *args, **kwargs):
    start = time.perf_counter()
    value = fn(*args, **kwargs)
    return value, time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=3000)
    parser.add_argument("--words", type=int, default=200)
    parser.add_argument("--device", default=None, help="also time the torch backend on this device (e.g. cuda)")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    os.environ.setdefault("NUMBA_NUM_THREADS", "1")
    from dataflow.ops.text.minhash import minhash_signatures

    docs, planted = corpus(args.docs, args.words)
    result: dict = {"docs": len(docs), "planted_near_duplicates": planted, "num_perm": NUM_PERM, "bands_rows": [BANDS, ROWS]}
    ds_sigs, ds_s = timed(datasketch_signatures, docs)
    result["datasketch_docs_per_s"] = round(len(docs) / ds_s)
    backends = ["numpy"]
    try:
        import numba  # noqa: F401

        _, compile_s = timed(minhash_signatures, docs[:4], backend="numba")
        result["numba_first_call_s"] = round(compile_s, 2)
        backends.insert(0, "numba")
    except ImportError:
        result["numba"] = "not installed (pip install 'dataflow[minhash]')"
    ours = None
    for backend in backends:
        sigs, s = timed(minhash_signatures, docs, num_perm=NUM_PERM, ngram=NGRAM, backend=backend)
        ours = sigs if ours is None else ours
        result[f"ours_{backend}_docs_per_s"] = round(len(docs) / s)
        result[f"ours_{backend}_over_datasketch"] = round(ds_s / s, 1)
    if args.device:
        minhash_signatures(docs[:8], backend="torch", device=args.device)
        sigs, s = timed(minhash_signatures, docs, num_perm=NUM_PERM, ngram=NGRAM, backend="torch", device=args.device)
        result[f"ours_torch_{args.device}_docs_per_s"] = round(len(docs) / s)
        result[f"ours_torch_{args.device}_equals_cpu"] = bool(np.array_equal(sigs, ours))
    if "ours_numba_docs_per_s" in result:
        result["against_daft"] = against_daft(docs)
    keep_ours = kept_ours(docs, ours)
    keep_ds = kept_datasketch(ds_sigs)
    result["dropped_ours"] = int((~keep_ours).sum())
    result["dropped_datasketch"] = int((~keep_ds).sum())
    result["kept_set_agreement"] = round(float((keep_ours == keep_ds).mean()), 5)
    print(json.dumps(result, indent=2))
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
