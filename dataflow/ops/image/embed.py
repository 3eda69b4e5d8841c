"""Image embeddings from a model named as an importable ``module:factory``, loaded once per actor."""
from __future__ import annotations

import importlib

import numpy as np
from PIL import Image

from dataflow.ops.declare import op
from dataflow.ops.device import Device, resolve_device

__all__ = ["ImageEmbed", "load_factory", "thumbnail_embedder"]


def thumbnail_embedder(device: str):
    """A model-free embedder: the 16x16 RGB thumbnail, centred and L2-normalised (768 dims).

    Good enough to find near-identical pictures and to test pipelines without model weights.
    """

    def embed(images: list[np.ndarray]) -> np.ndarray:
        rows = []
        for p in images:
            rgb = Image.fromarray(p[:, :, 0] if p.shape[2] == 1 else p[:, :, :3]).convert("RGB")
            v = np.asarray(rgb.resize((16, 16), Image.Resampling.BOX), dtype=np.float32).reshape(-1)
            v -= v.mean()
            rows.append(v / max(float(np.linalg.norm(v)), 1e-6))
        return np.stack(rows) if rows else np.empty((0, 768), dtype=np.float32)

    return embed


def load_factory(reference: str):
    """Import ``module:factory``.

    Raises:
        ValueError: the reference is malformed or does not import (names it and the fix).
    """
    module, sep, attr = reference.partition(":")
    if not sep or not module or not attr:
        raise ValueError(f"model '{reference}' must be 'module:factory', e.g. 'dataflow.ops.image.embed:thumbnail_embedder'")
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"model '{reference}' does not import ({exc}); is its package installed on the workers?") from exc


@op(
    name="image.embed",
    modality="image",
    inputs=("{column}",),
    outputs=("{output}",),
    batch_format="numpy",
)
class ImageEmbed:
    """Add an embedding vector per image, computed in batches by a model loaded once per worker.

    ``model`` names a factory ``f(device) -> embed`` where ``embed(list of HxWxC uint8 arrays)``
    returns an (N, D) float32 array; the factory loads weights once and moves them to ``device``
    ("cpu" or "cuda"). On Ray this op runs as an actor pool; give the step
    ``resources: {num_gpus: ...}`` to place it on GPUs.

    Args:
        model: The factory, as ``module:factory``.
        batch_size: Images per model call.
        column: Column holding the decoded HxWxC arrays.
        output: Column to write the float32 vectors to.
        device: ``auto`` uses CUDA when this worker sees a device, ``cpu`` or ``cuda`` force one.
    """

    def __init__(
        self,
        *,
        model: str = "dataflow.ops.image.embed:thumbnail_embedder",
        batch_size: int = 32,
        column: str = "image",
        output: str = "embedding",
        device: Device = "auto",
    ):
        self.batch_size, self.column, self.output = batch_size, column, output
        self.device = resolve_device(device, "image.embed")
        self.embed = load_factory(model)(self.device)

    def __call__(self, batch: dict) -> dict:
        images = list(batch[self.column])
        out = np.empty(len(images), dtype=object)
        for i in range(0, len(images), self.batch_size):
            vectors = np.asarray(self.embed(images[i : i + self.batch_size]), dtype=np.float32)
            for j, v in enumerate(vectors):
                out[i + j] = v
        batch[self.output] = out
        return batch
