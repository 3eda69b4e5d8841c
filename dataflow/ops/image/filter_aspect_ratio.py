"""Keep images whose width/height ratio falls within bounds."""
from __future__ import annotations

import numpy as np

from dataflow.ops.declare import op


@op(
    name="image.filter_aspect_ratio",
    modality="image",
    inputs=("width", "height"),
    outputs=(),
    kind="filter",
    batch_format="numpy",
)
def filter_image_aspect_ratio(batch: dict, *, min_ratio: float = 0.333, max_ratio: float = 3.0) -> tuple[np.ndarray, np.ndarray]:
    """Keep images whose width / height lies in [``min_ratio``, ``max_ratio``] (Data-Juicer's defaults).

    Drops are counted per reason: ``image.filter_aspect_ratio:min_ratio`` (too tall) and ``:max_ratio`` (too wide).

    Args:
        min_ratio: Smallest allowed width / height.
        max_ratio: Largest allowed width / height.
    """
    w = np.asarray(batch["width"], dtype=np.float64)
    h = np.maximum(np.asarray(batch["height"], dtype=np.float64), 1.0)
    ratio = w / h
    reasons = np.full(len(w), "", dtype=object)
    reasons[ratio < min_ratio] = "image.filter_aspect_ratio:min_ratio"
    reasons[ratio > max_ratio] = "image.filter_aspect_ratio:max_ratio"
    return reasons == "", reasons
