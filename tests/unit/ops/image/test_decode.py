"""image.decode on real files of every format and mode, plus the bad-data cases."""
from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from dataflow.errors import RowError
from dataflow.ops.image.decode import decode_image


@pytest.mark.parametrize("name", ["jpeg", "progressive", "grey_jpeg", "png", "webp", "gif", "tiff", "bmp", "cmyk", "palette", "rgba"], ids=str)
def test_every_format_decodes_to_rgb_uint8(formats, rgb, name):
    row = decode_image({"bytes": formats[name]})
    px = row["image"]
    assert px.dtype == np.uint8 and px.shape == (64, 96, 3)
    assert (row["width"], row["height"]) == (96, 64)
    if name in ("png", "webp", "tiff", "bmp"):
        np.testing.assert_array_equal(px, rgb)  # lossless formats round-trip exactly
    elif name in ("jpeg", "progressive", "cmyk"):
        assert np.abs(px.astype(int) - rgb).mean() < 8
    elif name == "grey_jpeg":
        assert (px[:, :, 0] == px[:, :, 1]).all() and (px[:, :, 1] == px[:, :, 2]).all()  # grey spread to RGB
        luma = np.asarray(Image.fromarray(rgb).convert("L"), dtype=int)
        assert np.abs(px[:, :, 0].astype(int) - luma).mean() < 4


def test_progressive_jpeg_equals_baseline_within_rounding(formats):
    base = decode_image({"bytes": formats["jpeg"]})["image"].astype(int)
    progressive = decode_image({"bytes": formats["progressive"]})["image"].astype(int)
    assert np.abs(base - progressive).mean() < 1.0


def test_grey_jpeg_decodes_to_one_channel_in_mode_l(formats):
    row = decode_image({"bytes": formats["grey_jpeg"]}, mode="L")
    assert row["image"].shape == (64, 96, 1) and row["image"].dtype == np.uint8


def test_animated_gif_gives_its_first_frame(formats, rgb):
    px = decode_image({"bytes": formats["gif"]})["image"].astype(int)
    # frame 2 is the negative: the first frame must be much closer to the original
    assert np.abs(px - rgb).mean() < np.abs(px - (255 - rgb)).mean() / 3


@pytest.mark.parametrize("name", ["png16", "tiff16"], ids=str)
def test_sixteen_bit_grey_is_scaled_not_clipped(formats, name):
    px = decode_image({"bytes": formats[name]}, mode="L")["image"]
    assert px.shape == (64, 96, 1)
    assert px.min() == 0 and px.max() == 255  # 0..65535 scaled to 0..255


def test_exif_orientation_is_applied(formats):
    row = decode_image({"bytes": formats["exif"]})
    assert (row["width"], row["height"]) == (64, 96)


def test_rgba_mode_keeps_alpha(formats):
    px = decode_image({"bytes": formats["rgba"]}, mode="RGBA")["image"]
    assert px.shape[2] == 4 and int(px[0, 0, 3]) == 128


def test_draft_decodes_jpeg_at_reduced_scale(formats):
    full = decode_image({"bytes": formats["jpeg"]})
    small = decode_image({"bytes": formats["jpeg"]}, draft_max_side=24)
    assert (full["width"], full["height"]) == (96, 64)
    assert (small["width"], small["height"]) == (24, 16)  # 1/4 scale still covers 24 px
    ignored = decode_image({"bytes": formats["png"]}, draft_max_side=24)
    assert ignored["width"] == 96  # not a JPEG: full decode


def test_draft_respects_exif_rotation(formats):
    row = decode_image({"bytes": formats["exif"]}, draft_max_side=48)
    assert (row["width"], row["height"]) == (32, 48)


@pytest.mark.parametrize(
    "data, reason",
    [(b"", "empty"), (b"not an image" * 10, "undecodable"), (None, "empty")],
    ids=["empty", "text", "null"],
)
def test_bad_bytes_are_row_errors(data, reason):
    with pytest.raises(RowError, match=reason):
        decode_image({"bytes": data})


def test_truncated_jpeg_is_a_row_error(formats):
    with pytest.raises(RowError, match="undecodable"):
        decode_image({"bytes": formats["jpeg"][: len(formats["jpeg"]) // 3]})


def test_pixel_limit_guards_against_bombs(formats):
    with pytest.raises(RowError, match="max_pixels"):
        decode_image({"bytes": formats["png"]}, max_pixels=1000)


@pytest.mark.parametrize("name", ["jpeg", "png", "gif"], ids=str)
def test_max_pixels_above_pillows_own_limit_is_honoured(formats, monkeypatch, name):
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 1000)  # Pillow alone would refuse a 96x64 image (> 2x its limit)
    with pytest.raises(RowError, match="decompression bomb"):
        decode_image({"bytes": formats[name]}, max_pixels=1000)
    row = decode_image({"bytes": formats[name]}, max_pixels=96 * 64)
    assert (row["width"], row["height"]) == (96, 64)
    assert Image.MAX_IMAGE_PIXELS == 1000  # restored after the decode
    with pytest.raises(RowError, match="max_pixels"):
        decode_image({"bytes": formats[name]}, max_pixels=96 * 64 - 1)
