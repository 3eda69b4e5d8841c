"""Turn cell values into embeddable media: image thumbnails and audio clips as ``data:`` URIs.

Everything is embedded, so a report or a notebook output shows its pictures without a server.
Values that are not media come back as None and are shown as text by the caller.
"""
from __future__ import annotations

import base64
import io
from typing import Any

import numpy as np

__all__ = ["THUMB_SIDE", "audio_uri", "image_thumbnail", "is_audio_bytes", "thumbnail_from_bytes", "thumbnail_from_pixels"]

THUMB_SIDE = 128
MAX_IMAGE_BYTES = 64 * 1024 * 1024  # larger sources are not opened for a thumbnail
MAX_AUDIO_SECONDS = 30.0
MAX_AUDIO_BYTES = 8 * 1024 * 1024  # larger encoded audio is not embedded
_AUDIO_MAGIC = ((b"RIFF", 0, "audio/wav"), (b"fLaC", 0, "audio/flac"), (b"OggS", 0, "audio/ogg"), (b"ID3", 0, "audio/mpeg"))


def _uri(mime: str, data: bytes) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def thumbnail_from_pixels(pixels: np.ndarray, side: int = THUMB_SIDE) -> str | None:
    """Return a JPEG ``data:`` URI of an HxW or HxWxC uint8 array shrunk to fit ``side``, or None."""
    from PIL import Image

    arr = np.asarray(pixels)
    if arr.ndim == 3 and arr.shape[2] == 1:
        arr = arr[:, :, 0]
    if arr.ndim not in (2, 3) or min(arr.shape[:2]) < 1 or (arr.ndim == 3 and arr.shape[2] not in (3, 4)):
        return None
    if arr.dtype != np.uint8:
        if not np.issubdtype(arr.dtype, np.number):
            return None
        arr = np.clip(arr, 0, 255).astype(np.uint8)
    im = Image.fromarray(arr)
    return _encode_thumb(im, side)


def _encode_thumb(im, side: int) -> str:
    im.thumbnail((side, side))
    if im.mode not in ("RGB", "L"):
        im = im.convert("RGB")
    buf = io.BytesIO()
    im.save(buf, format="JPEG", quality=80)
    return _uri("image/jpeg", buf.getvalue())


def thumbnail_from_bytes(data: bytes, side: int = THUMB_SIDE, max_pixels: int | None = None) -> str:
    """Return a JPEG ``data:`` URI of encoded image bytes shrunk to fit ``side``.

    Untrusted input is opened with ``image.decode``'s limits: the header is checked against
    ``max_pixels`` (default: the op's ``MAX_PIXELS``) before any pixel is decoded, JPEGs are
    decoded at a reduced DCT scale, and only the first frame of an animation is read.

    Raises:
        OSError, SyntaxError, ValueError: the bytes are not a readable image (Pillow's errors), or
            are above ``MAX_IMAGE_BYTES`` or ``max_pixels``.
    """
    import warnings

    from PIL import Image

    from dataflow.errors import RowError
    from dataflow.ops.image.decode import MAX_PIXELS, check_pixels, pixel_limit

    if len(data) > MAX_IMAGE_BYTES:
        raise ValueError(f"image of {len(data)} bytes is above the {MAX_IMAGE_BYTES}-byte preview limit")
    limit = max_pixels or MAX_PIXELS
    try:
        with warnings.catch_warnings(), pixel_limit(limit):
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)  # max_pixels speaks for these sizes
            with Image.open(io.BytesIO(data)) as im:  # reads the header only
                check_pixels(im, limit)
                im.draft("RGB", (side, side))
                im.load()
                return _encode_thumb(im.copy(), side)
    except (RowError, Image.DecompressionBombError, EOFError) as exc:
        raise ValueError(str(exc)) from exc


def image_thumbnail(value: Any, side: int = THUMB_SIDE, max_pixels: int | None = None) -> str | None:
    """Return a thumbnail URI when ``value`` is a picture (pixels, encoded bytes, a Hugging Face ``Image``), else None."""
    if isinstance(value, dict) and isinstance(value.get("bytes"), bytes):
        value = value["bytes"]
    if isinstance(value, np.ndarray) and value.ndim >= 2:
        return thumbnail_from_pixels(value, side)
    if isinstance(value, (bytes, bytearray, memoryview)) and len(value) > 8 and not is_audio_bytes(bytes(value[:16])):
        try:
            return thumbnail_from_bytes(bytes(value), side, max_pixels)
        except (OSError, SyntaxError, ValueError):
            return None
    return None


def is_audio_bytes(data: bytes) -> str | None:
    """Return the MIME type of encoded audio (WAV, FLAC, Ogg, MP3 with ID3), or None."""
    for magic, offset, mime in _AUDIO_MAGIC:
        if data[offset : offset + len(magic)] == magic:
            if mime == "audio/wav" and data[8:12] != b"WAVE":
                return None
            return mime
    return None


def audio_uri(value: Any, sample_rate: int | None = None) -> str | None:
    """Return a ``data:`` URI an ``<audio>`` element plays, for encoded audio or samples.

    Args:
        value: Encoded audio bytes, or float samples shaped (frames,) or (frames, channels).
        sample_rate: The rate of ``value`` when it holds samples; without it samples are not audio.
    """
    if isinstance(value, (bytes, bytearray, memoryview)):
        mime = is_audio_bytes(bytes(value[:16]))
        return _uri(mime, bytes(value)) if mime and len(value) <= MAX_AUDIO_BYTES else None
    if not (isinstance(value, np.ndarray) and sample_rate and np.issubdtype(value.dtype, np.floating) and value.ndim in (1, 2)):
        return None
    import soundfile

    samples = value[: int(MAX_AUDIO_SECONDS * sample_rate)]
    buf = io.BytesIO()
    soundfile.write(buf, np.clip(samples, -1.0, 1.0), int(sample_rate), format="WAV", subtype="PCM_16")
    return _uri("audio/wav", buf.getvalue())
