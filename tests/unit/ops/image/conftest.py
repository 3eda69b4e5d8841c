"""Real encoded images in every format and mode ``image.decode`` promises to read."""
from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from examples.generate_images import picture


def encoded(im: Image.Image, fmt: str, **save) -> bytes:
    buf = io.BytesIO()
    im.save(buf, format=fmt, **save)
    return buf.getvalue()


def batch_of(*images: np.ndarray, column: str = "image") -> dict:
    """A numpy batch with an object column of HxWxC arrays and a source per row."""
    col = np.empty(len(images), dtype=object)
    for i, p in enumerate(images):
        col[i] = p
    return {column: col, "__source__": np.array([f"mem://img{i}" for i in range(len(images))], dtype=object)}


@pytest.fixture(scope="session")
def rgb() -> np.ndarray:
    return picture(96, 64, seed=3)


@pytest.fixture(scope="session")
def formats(rgb) -> dict[str, bytes]:
    """name -> bytes: JPEG (baseline, progressive, 8-bit grey), PNG, WebP, GIF (animated), TIFF, BMP, CMYK JPEG, palette, 16-bit, RGBA, EXIF-rotated."""
    im = Image.fromarray(rgb)
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90 degrees clockwise to display
    second = Image.fromarray(255 - rgb)
    gray16 = Image.fromarray((np.linspace(0, 65535, 96 * 64).reshape(64, 96)).astype(np.uint16))
    rgba = Image.fromarray(np.dstack([rgb, np.full(rgb.shape[:2], 128, np.uint8)]), mode="RGBA")
    palette = im.convert("P", palette=Image.Palette.ADAPTIVE, colors=16)
    palette.info["transparency"] = 0
    return {
        "jpeg": encoded(im, "JPEG", quality=95),
        "progressive": encoded(im, "JPEG", quality=95, progressive=True),
        "grey_jpeg": encoded(im.convert("L"), "JPEG", quality=95),
        "png": encoded(im, "PNG"),
        "webp": encoded(im, "WEBP", lossless=True),
        "gif": encoded(palette, "GIF", save_all=True, append_images=[second.convert("P")], duration=100),
        "tiff": encoded(im, "TIFF"),
        "tiff16": encoded(gray16, "TIFF"),
        "bmp": encoded(im, "BMP"),
        "cmyk": encoded(im.convert("CMYK"), "JPEG", quality=95),
        "palette": encoded(palette, "PNG"),
        "png16": encoded(gray16, "PNG"),
        "rgba": encoded(rgba, "PNG"),
        "exif": encoded(im, "JPEG", quality=95, exif=exif),
    }


def decoded(data: bytes, **params) -> np.ndarray:
    """The pixels ``image.decode`` gives for real encoded bytes."""
    from dataflow.ops.image.decode import decode_image

    return decode_image({"bytes": data}, device="cpu", **params)["image"]


def jpeg_of(pixels: np.ndarray, quality: int = 90) -> bytes:
    """Encode an HxWx3 array as JPEG bytes."""
    return encoded(Image.fromarray(pixels), "JPEG", quality=quality)
