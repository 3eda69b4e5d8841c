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
def filter_image_size(batch: dict, *, min_side: int = 0, max_side: int | None = None, min_pixels: int = 0) -> np.ndarray:
    """Keep images whose shorter side is at least ``min_side`` (and longer side at most ``max_side``).

    Args:
        min_side: Smallest allowed shorter side in pixels.
        max_side: Largest allowed longer side in pixels; no bound when unset.
        min_pixels: Smallest allowed width*height.
    """
    w = np.asarray(batch["width"], dtype=np.int64)
    h = np.asarray(batch["height"], dtype=np.int64)
    keep = (np.minimum(w, h) >= min_side) & (w * h >= min_pixels)
    if max_side is not None:
        keep &= np.maximum(w, h) <= max_side
    return keep
