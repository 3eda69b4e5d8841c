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
from tests.unit.ops.image.conftest import batch_of


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
