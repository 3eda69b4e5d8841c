"""text.dedup_semantic: k-means (SemDedup) against exact all-pairs, on embeddings in well-separated topics."""
from __future__ import annotations

import numpy as np
import pytest

from dataflow.ops.kmeans import EXACT_UP_TO, cluster_count, fit_centroids, in_sample, nearest
from dataflow.ops.text.dedup_semantic import CLUSTER, dedup_text_semantic
from tests.contracts.engine import semantic_reference, semantic_vectors


def _batch(vectors: np.ndarray) -> dict:
    return {"__source__": np.array([f"mem://v.parquet#row={i}" for i in range(len(vectors))], dtype=object),
            "doc": np.arange(len(vectors)), "embedding": np.array(list(vectors) + [None], dtype=object)[:-1]}


def _kept(batch: dict, **params) -> list[int]:
    return sorted(int(i) for i in dedup_text_semantic(batch, threshold=0.95, **params)["doc"])


@pytest.mark.parametrize("seed", [0, 1, 2, 3], ids=lambda s: f"seed{s}")
def test_kmeans_keeps_the_rows_exact_keeps_on_well_separated_topics(seed):
    vectors = semantic_vectors(seed)
    batch = _batch(vectors)
    reference = semantic_reference(vectors, list(batch["__source__"]), 0.95)
    assert len(reference) == 120  # every planted copy is a duplicate, no two originals are
    assert _kept(batch, clusters=1) == reference
    assert _kept(batch, clusters=6, seed=seed) == reference
    assert _kept(batch, clusters=12, seed=seed) == reference


def test_a_pair_split_by_a_cluster_boundary_is_kept_and_nothing_exact_keeps_is_dropped():
    vectors = semantic_vectors(straddling=True)
    batch = _batch(vectors)
    exact = semantic_reference(vectors, list(batch["__source__"]), 0.95)
    assert 165 in exact and 166 not in exact and float(vectors[165] @ vectors[166]) > 0.95
    assert _kept(batch, clusters=6) == sorted([*exact, 166])


def test_the_result_depends_on_the_seed_only_not_on_row_order():
    vectors = semantic_vectors(straddling=True)
    batch = _batch(vectors)
    order = np.random.default_rng(7).permutation(len(vectors))
    shuffled = {k: v[order] for k, v in batch.items()}
    for seed in (0, 5):
        assert _kept(shuffled, clusters=6, seed=seed) == _kept(batch, clusters=6, seed=seed)


def test_a_clustered_batch_compares_pairs_inside_each_cluster_only():
    vectors = np.array([[1, 0], [1, 0.01], [1, 0.02], [0, 1]], dtype=np.float32)
    batch = {**_batch(vectors), CLUSTER: np.array([0, 1, 1, 0])}
    out = dedup_text_semantic(batch, threshold=0.95)
    assert list(out["doc"]) == [0, 1, 3] and CLUSTER not in out


def test_default_cluster_count_is_exact_for_small_inputs_then_sqrt_rows():
    assert cluster_count(0, EXACT_UP_TO) == 1
    assert cluster_count(0, 1_000_000) == 1000
    assert cluster_count(8, 5) == 5 and cluster_count(8, 0) == 1


def test_the_sample_is_a_seeded_hash_of_the_identity():
    sources = np.array([f"s3://b/f.parquet#row={i}" for i in range(20_000)], dtype=object)
    drawn = in_sample(sources, 0, 0.1)
    assert abs(drawn.mean() - 0.1) < 0.01
    assert np.array_equal(in_sample(sources[::-1], 0, 0.1), drawn[::-1])
    assert not np.array_equal(in_sample(sources, 1, 0.1), drawn)


def test_kmeans_finds_separated_topics_and_handles_duplicate_points():
    vectors = semantic_vectors(0)
    centroids = fit_centroids(vectors, 6, seed=0)
    ids = nearest(vectors[:120], centroids)
    assert sorted(len(set(ids[t * 20 : (t + 1) * 20])) for t in range(6)) == [1] * 6 and len(set(ids)) == 6
    same = np.ones((5, 3), np.float32) / np.sqrt(3)
    assert set(nearest(same, fit_centroids(same, 3, seed=0))) == {0}


def test_bad_params_are_refused():
    with pytest.raises(Exception, match="clusters"):
        dedup_text_semantic.params(clusters="many")
    with pytest.raises(ValueError, match="clusters must be 0"):
        dedup_text_semantic(_batch(semantic_vectors(0)[:3]), clusters=-2)
