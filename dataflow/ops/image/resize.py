"""Resize images so their longer side fits a bound."""
from __future__ import annotations

import numpy as np
from PIL import Image

from dataflow.ops.declare import op


def fit_within(width: int, height: int, max_side: int) -> tuple[int, int]:
    """Return (width, height) scaled so the longer side is at most ``max_side``, keeping aspect."""
    longest = max(width, height)
    if longest <= max_side:
        return width, height
    scale = max_side / longest
    return max(1, round(width * scale)), max(1, round(height * scale))


@op(
    name="image.resize",
    modality="image",
    inputs=("{column}",),
    outputs=("{column}", "width", "height"),
    batch_format="numpy",
)
def resize_image(batch: dict, *, max_side: int = 512, column: str = "image") -> dict:
    """Shrink each image so its longer side is at most ``max_side`` pixels, keeping aspect.

    Smaller images pass unchanged. Uses Pillow's antialiasing (Lanczos) filter.

    Args:
        max_side: Longest allowed side in pixels.
        column: Column holding the decoded HxWxC arrays.
    """
    images = batch[column]
    out = np.empty(len(images), dtype=object)
    widths = np.empty(len(images), dtype=np.int64)
    heights = np.empty(len(images), dtype=np.int64)
    for i, pixels in enumerate(images):
        h, w = pixels.shape[:2]
        tw, th = fit_within(w, h, max_side)
        if (tw, th) != (w, h):
            squeeze = pixels.ndim == 3 and pixels.shape[2] == 1
            im = Image.fromarray(pixels[:, :, 0] if squeeze else pixels)
            pixels = np.asarray(im.resize((tw, th), Image.Resampling.LANCZOS))
            if squeeze:
                pixels = pixels[:, :, None]
        out[i] = pixels
        widths[i], heights[i] = tw, th
    batch[column] = out
    batch["width"], batch["height"] = widths, heights
    return batch
