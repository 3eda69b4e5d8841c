"""image.phash and image.dedup_phash on real re-encoded pictures."""
from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from dataflow.ops.image.decode import decode_image
from dataflow.ops.image.dedup_phash import _chunks, dedup_image_phash
from dataflow.ops.image.phash import hamming, phash_image, phash_pixels
from examples.generate_images import picture
from tests.unit.ops.image.conftest import batch_of, decoded


def _jpeg(px: np.ndarray, quality: int = 90, scale: float = 1.0) -> np.ndarray:
    im = Image.fromarray(px)
    if scale != 1.0:
        im = im.resize((int(im.width * scale), int(im.height * scale)), Image.Resampling.BICUBIC)
    buf = io.BytesIO()
    im.save(buf, "JPEG", quality=quality)
    return decode_image({"bytes": buf.getvalue()})["image"]


def test_phash_is_stable_under_reencoding_and_resizing_but_not_across_pictures():
    a, b = picture(200, 150, seed=1), picture(200, 150, seed=2)
    ha, ha2, hb = phash_pixels(a), phash_pixels(_jpeg(a, quality=60, scale=0.7)), phash_pixels(b)
    assert hamming(ha, ha2) <= 4
    assert hamming(ha, hb) > 16


def test_phash_agrees_with_imagehash_up_to_near_median_bits():
    imagehash = pytest.importorskip("imagehash")
    for seed in range(4):
        px = picture(160 + seed * 30, 120, seed=seed)
        ref = np.array([int(str(imagehash.phash(Image.fromarray(px))), 16)], dtype=np.uint64).view(np.int64)
        assert hamming(phash_pixels(px), ref)[()] <= 4


def test_phash_op_writes_an_int64_column():
    out = phash_image(batch_of(picture(64, 48, seed=5), picture(64, 48, seed=6)))
    assert out["phash"].dtype == np.int64 and out["phash"][0] != out["phash"][1]


def test_phash_torch_path_gives_the_same_bits():
    pytest.importorskip("torch")
    from dataflow.ops.image.phash import _phash_torch

    images = [picture(90 + 17 * i, 70, seed=i) for i in range(5)] + [np.full((40, 40, 3), 77, np.uint8)]
    np.testing.assert_array_equal(_phash_torch(images, "cpu"), [phash_pixels(p) for p in images])


def test_dedup_keeps_the_smallest_source_of_each_near_duplicate_group():
    a, b = picture(200, 150, seed=11), picture(200, 150, seed=12)
    images = [_jpeg(a), b, _jpeg(a, quality=50, scale=0.8), _jpeg(b, quality=70)]
    batch = phash_image(batch_of(*images))
    batch["__source__"] = np.array(["z.jpg", "b.jpg", "a.jpg", "c.jpg"], dtype=object)
    out = dedup_image_phash(batch, max_distance=6)
    assert sorted(out["__source__"]) == ["a.jpg", "b.jpg"]


def test_dedup_is_transitive_and_exact_at_the_distance_bound():
    h = np.array([0, 0b111, 0b111111, -1], dtype=np.int64)  # a chain 0 -> 7 -> 63, 3 bits per step; -1 is 58+ bits away
    batch = {"phash": h, "__source__": np.array(["a", "b", "c", "d"], dtype=object)}
    assert list(dedup_image_phash(batch, max_distance=3)["__source__"]) == ["a", "d"]
    assert list(dedup_image_phash(batch, max_distance=2)["__source__"]) == ["a", "b", "c", "d"]


def test_chunks_cover_all_64_bits():
    for d in (0, 3, 6, 10):
        chunks = _chunks(d)
        assert len(chunks) == d + 1 and sum(w for _, w in chunks) == 64


def test_max_distance_out_of_range_is_refused():
    with pytest.raises(ValueError, match="0..31"):
        dedup_image_phash({"phash": np.zeros(2, np.int64), "__source__": np.array(["a", "b"], dtype=object)}, max_distance=40)


def test_phash_of_decoded_png_jpeg_and_grey_jpeg_of_one_picture_agree(formats):
    images = [decoded(formats[name]) for name in ("png", "jpeg", "progressive", "grey_jpeg")]
    hashes = phash_image(batch_of(*images), device="cpu")["phash"]
    assert all(hamming(hashes[0], h) <= 4 for h in hashes[1:])  # grey has the same luma, hence the same hash
    other = phash_image(batch_of(decoded(formats["png"]) ^ np.uint8(0x55)), device="cpu")["phash"][0]
    assert hamming(hashes[0], other) > 16


def test_phash_rejects_an_unknown_device():
    with pytest.raises(Exception, match="device"):
        phash_image.params(device="tpu")
