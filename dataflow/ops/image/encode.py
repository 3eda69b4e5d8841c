"""Encode pixel arrays into compressed image bytes."""
from __future__ import annotations

import io
from typing import Literal

import numpy as np
from PIL import Image

from dataflow.errors import RowError
from dataflow.ops.declare import op

_PIL_FORMAT = {"jpeg": "JPEG", "png": "PNG", "webp": "WEBP"}


@op(
    name="image.encode",
    modality="image",
    inputs=("{column}",),
    outputs=("{output}", "format"),
    batch_format="numpy",
)
def encode_image(
    batch: dict, *, format: Literal["jpeg", "png", "webp"] = "webp", quality: int = 90, column: str = "image", output: str = "bytes"
) -> dict:
    """Encode each image as JPEG, PNG or WebP bytes.

    An array Pillow cannot represent (wrong dtype or shape) is a row error.

    Args:
        format: Output format.
        quality: Quality 1-100 for JPEG and WebP (ignored for PNG).
        column: Column holding the decoded HxWxC arrays.
        output: Column to write the encoded bytes to.
    """
    out = np.empty(len(batch[column]), dtype=object)
    if not 1 <= quality <= 100:
        raise ValueError(f"image.encode: quality must be within 1..100, got {quality}")
    for i, pixels in enumerate(batch[column]):
        try:
            im = Image.fromarray(pixels[:, :, 0] if pixels.ndim == 3 and pixels.shape[2] == 1 else pixels)
        except (TypeError, ValueError, AttributeError) as exc:
            raise RowError(f"cannot encode array of shape {getattr(pixels, 'shape', None)} and dtype {getattr(pixels, 'dtype', None)}: {exc}") from exc
        if format == "jpeg" and im.mode not in ("RGB", "L"):
            im = im.convert("RGB")
        buf = io.BytesIO()
        im.save(buf, format=_PIL_FORMAT[format], **({} if format == "png" else {"quality": quality}))
        out[i] = buf.getvalue()
    batch[output] = out
    batch["format"] = np.array([format] * len(out), dtype=object)
    return batch
