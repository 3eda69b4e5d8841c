"""Decode encoded image bytes into pixel arrays."""
from __future__ import annotations

import io
import warnings

import numpy as np
from PIL import Image, ImageOps

from dataflow.errors import RowError
from dataflow.ops.declare import op

_SIXTEEN_BIT = {"I;16", "I;16B", "I;16L", "I;16N"}


def _to_mode(im: Image.Image, mode: str) -> Image.Image:
    if im.mode in _SIXTEEN_BIT or im.mode == "I":
        # Pillow clips (not scales) 16-bit samples when converting to 8-bit modes.
        arr = np.asarray(im, dtype=np.uint32)
        im = Image.fromarray((arr // 257).clip(0, 255).astype(np.uint8), mode="L")
    elif im.mode == "F":
        arr = np.asarray(im, dtype=np.float32)
        im = Image.fromarray(arr.clip(0, 255).astype(np.uint8), mode="L")
    elif im.mode in ("P", "PA") and mode == "RGB" and "transparency" in im.info:
        im = im.convert("RGBA")
    return im if im.mode == mode else im.convert(mode)


@op(
    name="image.decode",
    modality="image",
    inputs=("{column}",),
    outputs=("{output}", "width", "height"),
    batch_format="row",
)
def decode_image(row: dict, *, column: str = "bytes", output: str = "image", mode: str = "RGB", max_pixels: int = 89_478_485) -> dict:
    """Decode JPEG, PNG, WebP, GIF, TIFF or BMP bytes into an HxWxC uint8 array.

    EXIF orientation is applied; animated images give their first frame; 16-bit images are
    scaled to 8 bits. Corrupt or truncated data and images above ``max_pixels`` are row errors.

    Args:
        column: Column holding the encoded bytes.
        output: Column to write the decoded array to.
        mode: Pillow mode to convert to (RGB, RGBA, L, ...).
        max_pixels: Largest width*height accepted (guards against decompression bombs).
    """
    data = row[column]
    if data is None or len(data) == 0:
        raise RowError("empty image data")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as im:
                if im.width * im.height > max_pixels:
                    raise RowError(f"image of {im.width}x{im.height} pixels exceeds max_pixels={max_pixels}")
                im.seek(0)
                im.load()
                im = ImageOps.exif_transpose(im)
                pixels = np.asarray(_to_mode(im, mode))
    except (OSError, SyntaxError, ValueError, Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise RowError(f"undecodable image: {exc}") from exc
    if pixels.ndim == 2:
        pixels = pixels[:, :, None]
    row[output] = pixels
    row["height"], row["width"] = int(pixels.shape[0]), int(pixels.shape[1])
    return row
