"""text.embed: the packaged all-MiniLM-L6-v2 on texts parsed from a real UTF-8 JSONL file."""
from __future__ import annotations

import numpy as np
import pytest

from dataflow.ops.text.embed import TextEmbed, model_path
from tests.unit.ops.text.conftest import jsonl_batch


def test_embeds_each_text_as_a_unit_vector_that_tracks_meaning(embedder):
    batch = jsonl_batch(["The weather is lovely today.", "It is a beautiful, sunny day.", "Die Katze schläft auf dem Sofa.", None])
    out = embedder(batch)
    v = np.stack(out["embedding"])
    assert v.shape == (4, 384) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-4)
    assert v[0] @ v[1] > v[0] @ v[2] + 0.2  # the paraphrase is nearer than the German cat
    assert list(out["__source__"]) == list(batch["__source__"])


def test_batches_give_the_same_vectors(embedder):
    texts = [f"Document number {i} about résumés and naïve cafés." for i in range(7)]
    whole = np.stack(embedder(jsonl_batch(texts))["embedding"])
    embedder.batch_size = 3
    try:
        parts = np.stack(embedder(jsonl_batch(texts))["embedding"])
    finally:
        embedder.batch_size = 64
    np.testing.assert_allclose(whole, parts, atol=1e-5)


def test_a_bad_model_path_names_the_choices(tmp_path):
    with pytest.raises(ValueError, match="neither 'all-MiniLM-L6-v2' nor a local model directory"):
        model_path(str(tmp_path / "no-such-model"))
    pytest.importorskip("sentence_transformers")
    with pytest.raises(ValueError, match="no-such-model"):
        TextEmbed.impl()(model=str(tmp_path / "no-such-model"), device="cpu")


def test_bad_params_are_rejected():
    with pytest.raises(Exception, match="device"):
        TextEmbed.params(device="tpu")
