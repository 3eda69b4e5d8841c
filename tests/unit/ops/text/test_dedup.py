"""text.dedup_exact, text.dedup_minhash and text.dedup_semantic: planted duplicates removed deterministically."""
from __future__ import annotations

import random

import numpy as np
import pytest

from dataflow.ops.dedup import components, keep_first
from dataflow.ops.text.dedup_exact import dedup_text_exact
from dataflow.ops.text.dedup_minhash import dedup_text_minhash
from dataflow.ops.text.dedup_semantic import dedup_text_semantic
from dataflow.ops.text.minhash import minhash_signatures, optimal_bands
from examples.generate_text import ENGLISH, document
from tests.unit.ops.text.conftest import jsonl_batch


def _batch(texts, sources=None):
    return {"text": np.array(texts, dtype=object), "__source__": np.array(sources or [f"s{i:03d}" for i in range(len(texts))], dtype=object)}


def _docs(n, seed=0, words=200):
    rng = random.Random(seed)
    return [document(rng, ENGLISH, words) for _ in range(n)]


def test_exact_dedup_normalises_whitespace_and_keeps_the_smallest_source():
    docs = _docs(3)
    batch = _batch([docs[0], "  " + docs[0].replace(" ", "   ") + "\n", docs[1], docs[0].upper(), docs[2]], ["e", "a", "b", "c", "d"])
    assert list(dedup_text_exact(batch)["__source__"]) == ["a", "b", "c", "d"]
    assert list(dedup_text_exact(batch, lowercase=True)["__source__"]) == ["a", "b", "d"]


def test_exact_dedup_keeps_a_null_text_apart_from_an_empty_one():
    """A NULL text and "" (or only whitespace) were one text: the later of them was dropped as a duplicate."""
    batch = _batch([None, "", " ", None, "x"], ["a", "b", "c", "d", "e"])
    assert list(dedup_text_exact(batch)["__source__"]) == ["a", "b", "e"]
    assert list(dedup_text_exact(batch, lowercase=True, ignore_punctuation=True)["__source__"]) == ["a", "b", "e"]


def test_minhash_removes_one_word_edits_not_distinct_documents():
    docs = _docs(30)
    near = []
    for i in range(0, 30, 3):
        words = docs[i].split(" ")
        words[len(words) // 2] = "lighthouse"
        near.append(" ".join(words))
    batch = _batch(docs + near)
    out = dedup_text_minhash(batch)
    assert len(out["text"]) == 30
    assert list(out["__source__"]) == [f"s{i:03d}" for i in range(30)]  # originals have the smaller sources


def test_minhash_result_does_not_depend_on_row_order():
    docs = _docs(12, seed=1)
    texts = docs + [d + " extra" for d in docs[:4]]
    batch = _batch(texts)
    order = np.random.default_rng(0).permutation(len(texts))
    shuffled = {k: v[order] for k, v in batch.items()}
    assert sorted(dedup_text_minhash(batch)["__source__"]) == sorted(dedup_text_minhash(shuffled)["__source__"])


def test_minhash_backends_give_identical_signatures():
    texts = _docs(40, seed=2) + ["", "one two", "naïve café déjà vu encore une fois"]
    ref = minhash_signatures(texts, backend="numpy")
    if _has("numba"):
        np.testing.assert_array_equal(minhash_signatures(texts, backend="numba"), ref)
    if _has("torch"):
        np.testing.assert_array_equal(minhash_signatures(texts, backend="torch", device="cpu"), ref)
    assert (ref[40] == 0xFFFFFFFF).all() and not (ref[41] == 0xFFFFFFFF).all()


def test_signature_similarity_estimates_jaccard():
    a = " ".join(f"w{i}" for i in range(400))
    b = " ".join(f"w{i}" for i in range(100, 500))  # 5-gram Jaccard = 296 / 496
    sig = minhash_signatures([a, b], num_perm=512)
    assert abs((sig[0] == sig[1]).mean() - 296 / 496) < 0.06


def test_optimal_bands_match_datasketch():
    assert optimal_bands(0.8, 128) == (9, 13)
    datasketch = pytest.importorskip("datasketch")
    assert datasketch.MinHashLSH(threshold=0.5, num_perm=64).b == optimal_bands(0.5, 64)[0]


def test_bands_and_rows_must_fit():
    with pytest.raises(ValueError, match="exceeds num_perm"):
        dedup_text_minhash(_batch(_docs(2)), bands=20, rows=10)
    with pytest.raises(ValueError, match="both bands and rows"):
        dedup_text_minhash(_batch(_docs(2)), bands=20)


def test_components_and_keep_first():
    labels = components(6, np.array([0, 2, 4]), np.array([1, 3, 3]))
    assert list(labels) == [0, 0, 2, 2, 2, 5]
    keep = keep_first(np.array(["d", "c", "b", "a"], dtype=object), np.array([0, 1]), np.array([3, 2]))
    assert list(keep) == [False, False, True, True]


def test_semantic_dedup_on_real_embeddings(embedder):
    texts = ["The cat sat on the mat.", "A cat was sitting on the mat.", "Stock markets fell sharply on Monday.", "the cat sat on the mat."]
    batch = embedder(_batch(texts))
    vectors = np.stack(batch["embedding"])
    assert vectors.shape == (4, 384) and np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-4)
    assert list(dedup_text_semantic(batch, threshold=0.98)["__source__"]) == ["s000", "s001", "s002"]  # the lower-case copy
    assert list(dedup_text_semantic(batch, threshold=0.9)["__source__"]) == ["s000", "s002"]  # the paraphrase too


def test_exact_dedup_on_jsonl_compares_the_nfc_form():
    composed, decomposed = "Un café très naïf.", "Un cafe\u0301 tre\u0300s nai\u0308f."
    batch = jsonl_batch([decomposed, "Un café très naïf!", composed, "UN CAFÉ TRÈS NAÏF."])
    assert list(dedup_text_exact(batch)["__source__"]) == ["mem://docs.jsonl#line=1", "mem://docs.jsonl#line=2", "mem://docs.jsonl#line=4"]
    assert list(dedup_text_exact(batch, lowercase=True, ignore_punctuation=True)["__source__"]) == ["mem://docs.jsonl#line=1"]
    with pytest.raises(Exception, match="lowercase"):
        dedup_text_exact.params(lowercase="sometimes")


def test_semantic_dedup_on_jsonl_texts_and_a_bad_threshold(embedder):
    batch = embedder(jsonl_batch(["Ein Hund läuft im Park.", "A dog runs in the park.", "A dog is running in the park.", "Quarterly revenue grew by 8%."]))
    kept = dedup_text_semantic(batch, threshold=0.9)["__source__"]
    assert list(kept) == ["mem://docs.jsonl#line=1", "mem://docs.jsonl#line=2", "mem://docs.jsonl#line=4"]
    with pytest.raises(Exception, match="threshold"):
        dedup_text_semantic.params(threshold="close")


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def test_minhash_device_is_resolved_where_keys_are_computed_not_where_the_bucketing_is_built():
    from dataflow.ops.device import cuda_visible

    if cuda_visible():
        pytest.skip("needs a machine without CUDA")
    bucketing = dedup_text_minhash.bucketing(dedup_text_minhash.params(device="cuda"))  # a driver without GPUs
    with pytest.raises(RuntimeError, match="num_gpus"):
        bucketing.keys(_batch(_docs(2)))
