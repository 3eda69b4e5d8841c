"""Drop blurry images: variance of the Laplacian of the grey image."""
from __future__ import annotations

import numpy as np

from dataflow.ops.declare import op

__all__ = ["filter_image_blur", "laplacian_variance"]


def laplacian_variance(pixels: np.ndarray) -> float:
    """Variance of the 4-neighbour Laplacian (OpenCV's ``Laplacian(ksize=1)``) of the luma, in 8-bit units."""
    px = pixels.astype(np.float64)
    grey = px[..., 0] if px.shape[2] < 3 else px[..., 0] * 0.299 + px[..., 1] * 0.587 + px[..., 2] * 0.114
    if grey.shape[0] < 3 or grey.shape[1] < 3:
        return 0.0
    lap = grey[:-2, 1:-1] + grey[2:, 1:-1] + grey[1:-1, :-2] + grey[1:-1, 2:] - 4.0 * grey[1:-1, 1:-1]
    return float(lap.var())


@op(
    name="image.filter_blur",
    modality="image",
    inputs=("{column}",),
    outputs=(),
    kind="filter",
    batch_format="numpy",
)
def filter_image_blur(batch: dict, *, min_variance: float = 100.0, column: str = "image") -> np.ndarray:
    """Keep images whose Laplacian variance is at least ``min_variance`` (below means blurry or flat).

    The score depends on scale, so place this before ``image.resize``. 100 is the customary
    threshold for photographs at their native size.

    Args:
        min_variance: Smallest allowed variance of the Laplacian.
        column: Column holding the decoded HxWxC arrays.
    """
    return np.fromiter((laplacian_variance(p) >= min_variance for p in batch[column]), dtype=bool, count=len(batch[column]))
