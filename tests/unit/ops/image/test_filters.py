"""image.filter_size, image.filter_aspect_ratio and image.filter_blur on decoded real images."""
from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image, ImageFilter

from dataflow.ops.image.decode import decode_image
from dataflow.ops.image.filter_aspect_ratio import filter_image_aspect_ratio
from dataflow.ops.image.filter_blur import filter_image_blur, laplacian_variance
from dataflow.ops.image.filter_size import filter_image_size
from examples.generate_images import picture
from tests.unit.ops.image.conftest import batch_of, encoded


def _dims(*sizes):
    return {"width": np.array([w for w, _ in sizes]), "height": np.array([h for _, h in sizes])}


def test_filter_size_reports_each_reason():
    keep, reasons = filter_image_size(_dims((100, 100), (30, 200), (5000, 100), (65, 70), (80, 80)), min_side=64, max_side=4000, min_pixels=5000)
    assert list(keep) == [True, False, False, False, True]
    assert list(reasons[~keep]) == ["image.filter_size:min_side", "image.filter_size:max_side", "image.filter_size:min_pixels"]


def test_filter_aspect_ratio_defaults_drop_panoramas_and_towers():
    keep, reasons = filter_image_aspect_ratio(_dims((300, 100), (301, 100), (100, 301), (100, 300)))
    assert list(keep) == [True, False, False, True]
    assert set(reasons[~keep]) == {"image.filter_aspect_ratio:max_ratio", "image.filter_aspect_ratio:min_ratio"}


def test_filter_blur_drops_a_blurred_jpeg_and_keeps_the_sharp_one():
    sharp = Image.fromarray(picture(160, 120, seed=1))
    buf_sharp, buf_blur = io.BytesIO(), io.BytesIO()
    sharp.save(buf_sharp, "JPEG", quality=90)
    sharp.filter(ImageFilter.GaussianBlur(6)).save(buf_blur, "JPEG", quality=90)
    images = [decode_image({"bytes": b.getvalue()})["image"] for b in (buf_sharp, buf_blur)]
    assert laplacian_variance(images[0]) > 100 > laplacian_variance(images[1])
    assert list(filter_image_blur(batch_of(*images))) == [True, False]


def test_filter_blur_flat_or_tiny_images_score_zero():
    assert laplacian_variance(np.full((50, 50, 3), 200, np.uint8)) == 0.0
    assert laplacian_variance(np.zeros((2, 2, 1), np.uint8)) == 0.0


def test_filter_params_are_validated():
    with pytest.raises(Exception, match="min_ratio"):
        filter_image_aspect_ratio.params(min_ratio="wide")


def _decoded_dims(*sizes, fmt: str = "PNG") -> dict:
    """Encode pictures of ``sizes`` as real files, decode them, and return the width/height batch."""
    rows = [decode_image({"bytes": encoded(Image.fromarray(picture(w, h, seed=i)), fmt)}) for i, (w, h) in enumerate(sizes)]
    return {"width": np.array([r["width"] for r in rows]), "height": np.array([r["height"] for r in rows])}


def test_filter_size_on_decoded_jpegs():
    batch = _decoded_dims((120, 90), (40, 90), (300, 80), (70, 70), fmt="JPEG")
    keep, reasons = filter_image_size(batch, min_side=64, max_side=200, min_pixels=6000)
    assert list(keep) == [True, False, False, False]
    assert list(reasons) == ["", "image.filter_size:min_side", "image.filter_size:max_side", "image.filter_size:min_pixels"]


def test_filter_size_rejects_a_bad_param():
    with pytest.raises(Exception, match="min_side"):
        filter_image_size.params(min_side="large")


def test_filter_aspect_ratio_on_decoded_pngs():
    keep, reasons = filter_image_aspect_ratio(_decoded_dims((90, 30), (100, 30), (30, 100), (64, 48)), min_ratio=0.5, max_ratio=3.0)
    assert list(keep) == [True, False, False, True]
    assert list(reasons[~keep]) == ["image.filter_aspect_ratio:max_ratio", "image.filter_aspect_ratio:min_ratio"]


def test_filter_blur_on_a_decoded_png_and_a_bad_param():
    sharp = Image.fromarray(picture(120, 90, seed=4))
    images = [decode_image({"bytes": encoded(im, "PNG")})["image"] for im in (sharp, sharp.filter(ImageFilter.BoxBlur(5)))]
    assert list(filter_image_blur(batch_of(*images), min_variance=100.0)) == [True, False]
    with pytest.raises(Exception, match="min_variance"):
        filter_image_blur.params(min_variance="blurry")
