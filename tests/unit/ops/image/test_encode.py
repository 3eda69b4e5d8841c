"""image.encode: real bytes out that decode back; unencodable arrays are row errors."""
from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from dataflow.errors import RowError
from dataflow.ops.image.encode import encode_image
from tests.unit.ops.image.conftest import batch_of


@pytest.mark.parametrize("fmt, pil", [("jpeg", "JPEG"), ("png", "PNG"), ("webp", "WEBP")], ids=str)
def test_encoded_bytes_decode_to_the_same_size(rgb, fmt, pil):
    out = encode_image(batch_of(rgb, rgb[:, :, :1].copy()), format=fmt, quality=80)
    for data in out["bytes"]:
        with Image.open(io.BytesIO(data)) as im:
            assert im.format == pil and im.size == (96, 64)
    assert list(out["format"]) == [fmt, fmt]


def test_unencodable_array_is_a_row_error():
    with pytest.raises(RowError, match="cannot encode"):
        encode_image(batch_of(np.zeros((4, 4, 7), dtype=np.complex64)))


def test_unknown_format_is_rejected_by_params():
    with pytest.raises(Exception, match="format"):
        encode_image.params(format="gif")
