"""GPU == CPU for the text ops (skipped without CUDA, see tests/conftest.py)."""
from __future__ import annotations

import random

import numpy as np
import pytest

from dataflow.ops.text.dedup_minhash import dedup_text_minhash
from dataflow.ops.text.minhash import minhash_signatures
from examples.generate_text import ENGLISH, document

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def docs():
    rng = random.Random(0)
    texts = [document(rng, ENGLISH, rng.randint(0, 400)) for _ in range(500)]
    return texts + [t.replace("the", "a", 1) for t in texts[:50]] + ["", "x", "naïve café"]


def test_minhash_signatures_gpu_equal_cpu_exactly(docs):
    np.testing.assert_array_equal(minhash_signatures(docs, device="cuda"), minhash_signatures(docs, backend="numpy"))


def test_minhash_dedup_gpu_keeps_the_same_rows(docs):
    batch = {"text": np.array(docs, dtype=object), "__source__": np.array([f"s{i:04d}" for i in range(len(docs))], dtype=object)}
    cpu = dedup_text_minhash(dict(batch), device="cpu")["__source__"]
    gpu = dedup_text_minhash(dict(batch), device="cuda")["__source__"]
    assert list(cpu) == list(gpu)


def test_text_embed_gpu_equals_cpu(docs):
    pytest.importorskip("sentence_transformers")
    from dataflow.ops.text.embed import TextEmbed

    batch = {"text": np.array(docs[:64], dtype=object)}
    cpu = np.stack(TextEmbed.impl()(device="cpu")(dict(batch))["embedding"])
    gpu = np.stack(TextEmbed.impl()(device="cuda")(dict(batch))["embedding"])
    assert (np.sum(cpu * gpu, axis=1) > 0.9999).all()
    np.testing.assert_allclose(cpu, gpu, atol=2e-3)


def test_minhash_key_map_on_a_gpu_worker_gives_the_cpu_buckets(docs):
    from dataflow.engines.ray.global_ops import _BucketRows
    from dataflow.runtime.stage import StepCall

    batch = {"text": np.array(docs, dtype=object), "__source__": np.array([f"s{i:04d}" for i in range(len(docs))], dtype=object)}
    call = StepCall(0, "text.dedup_minhash", dedup_text_minhash.params().model_dump())
    gpu, cpu = _BucketRows(call, num_gpus=0.5)(dict(batch)), _BucketRows(call, num_gpus=None)(dict(batch))
    for column in ("__source__", "band", "key"):
        np.testing.assert_array_equal(gpu[column], cpu[column])
