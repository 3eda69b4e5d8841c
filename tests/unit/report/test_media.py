"""Media to data: URIs: thumbnails keep the aspect ratio, audio is recognised by its header."""
from __future__ import annotations

import base64
import io

import numpy as np
import pytest
import soundfile
from PIL import Image

from dataflow.report.media import audio_uri, image_thumbnail, is_audio_bytes, thumbnail_from_bytes
from tests.datagen import encode, gradient


def _image(uri: str) -> Image.Image:
    return Image.open(io.BytesIO(base64.b64decode(uri.split(",", 1)[1])))


@pytest.mark.parametrize("fmt", ["JPEG", "PNG", "WEBP"])
def test_thumbnail_of_encoded_image_fits_the_box(fmt):
    im = _image(thumbnail_from_bytes(encode(gradient(600, 200), fmt), side=120))
    assert im.format == "JPEG" and im.size == (120, 40)


def test_thumbnail_of_gray_and_rgba_pixels():
    assert _image(image_thumbnail(gradient(64, 32)[:, :, :1])).mode == "L"
    rgba = np.dstack([gradient(64, 32), np.full((32, 64), 128, np.uint8)])
    assert _image(image_thumbnail(rgba)).mode == "RGB"


def test_non_images_give_no_thumbnail():
    assert image_thumbnail(b"this is not an image at all") is None
    assert image_thumbnail(np.zeros((4, 4, 7), np.uint8)) is None
    assert image_thumbnail("text") is None
    with pytest.raises(OSError):
        thumbnail_from_bytes(b"GIF89a broken")


def test_audio_bytes_are_recognised_and_embedded():
    buf = io.BytesIO()
    soundfile.write(buf, np.zeros(800, np.float32), 8000, format="FLAC")
    assert is_audio_bytes(buf.getvalue()) == "audio/flac"
    assert audio_uri(buf.getvalue()).startswith("data:audio/flac;base64,")
    assert is_audio_bytes(b"RIFF\x00\x00\x00\x00AVI ") is None
    assert image_thumbnail(buf.getvalue()) is None


def test_audio_from_samples_is_clipped_pcm_wav():
    samples = np.array([[0.5, -2.0]] * 100, dtype=np.float32)
    data, rate = soundfile.read(io.BytesIO(base64.b64decode(audio_uri(samples, 8000).split(",", 1)[1])))
    assert rate == 8000 and data.shape == (100, 2)
    assert data[0, 0] == pytest.approx(0.5, abs=1e-4) and data[0, 1] == pytest.approx(-1.0, abs=1e-4)
    assert audio_uri(samples) is None


def test_bombs_are_refused_from_the_header_within_the_decode_limit():
    """A 144 Mpx PNG (between Pillow's warning and error limits) and a 4 Gpx GIF: refused before any pixel is decoded."""
    import time

    from tests.datagen import gif_bomb, png_bomb

    for data, words in ((png_bomb(12_000, 12_000), "12000x12000 pixels exceeds max_pixels=89478485"), (gif_bomb(), "exceeds limit")):
        start = time.monotonic()
        with pytest.raises(ValueError, match=words):
            thumbnail_from_bytes(data)
        assert time.monotonic() - start < 1.0
        assert image_thumbnail(data) is None


def test_thumbnail_uses_the_given_pixel_limit():
    data = encode(gradient(100, 60), "PNG")
    with pytest.raises(ValueError, match="100x60 pixels exceeds max_pixels=5000"):
        thumbnail_from_bytes(data, max_pixels=5000)
    assert image_thumbnail(data, max_pixels=6000) is not None


def test_hugging_face_image_struct_gives_a_thumbnail():
    assert image_thumbnail({"bytes": encode(gradient(50, 40), "PNG"), "path": "a.png"}) is not None


def test_encoded_audio_above_the_byte_cap_is_not_embedded(monkeypatch):
    from dataflow.report import media

    buf = io.BytesIO()
    soundfile.write(buf, np.zeros(8000, np.float32), 8000, format="WAV")
    monkeypatch.setattr(media, "MAX_AUDIO_BYTES", len(buf.getvalue()) - 1)
    assert audio_uri(buf.getvalue()) is None
