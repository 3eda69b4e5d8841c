"""Keep images whose dimensions fall within bounds."""
from __future__ import annotations

import numpy as np

from dataflow.ops.declare import op


@op(
    name="image.filter_size",
    modality="image",
    inputs=("width", "height"),
    outputs=(),
    kind="filter",
    batch_format="numpy",
)
def filter_image_size(batch: dict, *, min_side: int = 0, max_side: int | None = None, min_pixels: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Keep images whose shorter side is at least ``min_side`` (and longer side at most ``max_side``).

    Drops are counted per reason: ``image.filter_size:min_side``, ``:max_side``, ``:min_pixels``.

    Args:
        min_side: Smallest allowed shorter side in pixels.
        max_side: Largest allowed longer side in pixels; no bound when unset.
        min_pixels: Smallest allowed width*height.
    """
    w = np.asarray(batch["width"], dtype=np.int64)
    h = np.asarray(batch["height"], dtype=np.int64)
    reasons = np.full(len(w), "", dtype=object)
    reasons[w * h < min_pixels] = "image.filter_size:min_pixels"
    if max_side is not None:
        reasons[np.maximum(w, h) > max_side] = "image.filter_size:max_side"
    reasons[np.minimum(w, h) < min_side] = "image.filter_size:min_side"
    return reasons == "", reasons
