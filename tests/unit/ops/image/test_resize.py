"""image.resize: bounds, aspect, the ``size`` mode, and the torch path's parity with Pillow."""
from __future__ import annotations

import numpy as np
import pytest

from dataflow.ops.image.resize import _resize_pillow, resize_image, target_size
from tests.unit.ops.image.conftest import batch_of, decoded


def test_resize_caps_longer_side_and_keeps_aspect(rgb):
    out = resize_image(batch_of(np.zeros((100, 300, 3), np.uint8), rgb), max_side=48)
    assert out["image"][0].shape == (16, 48, 3)
    assert out["image"][1].shape == (32, 48, 3)
    assert list(out["width"]) == [48, 48] and list(out["height"]) == [16, 32]


def test_small_images_pass_unchanged(rgb):
    out = resize_image(batch_of(rgb), max_side=512)
    assert out["image"][0] is rgb


def test_size_sets_the_shorter_side_and_upscales_only_when_asked(rgb):
    assert resize_image(batch_of(rgb), size=32)["image"][0].shape == (32, 48, 3)
    assert resize_image(batch_of(rgb), size=128)["image"][0].shape == (64, 96, 3)
    assert resize_image(batch_of(rgb), size=128, upscale=True)["image"][0].shape == (128, 192, 3)


def test_single_channel_images_keep_their_channel_axis(rgb):
    grey = rgb[:, :, :1].copy()
    assert resize_image(batch_of(grey), max_side=24)["image"][0].shape == (16, 24, 1)


def test_target_size_rounds_and_never_reaches_zero():
    assert target_size(1000, 3, 10, None, False) == (10, 1)
    assert target_size(640, 480, None, 240, False) == (320, 240)


def test_bad_params_are_rejected():
    with pytest.raises(Exception, match="device"):
        resize_image.params(device="tpu")


@pytest.mark.parametrize("shape, target", [((240, 320), (64, 48)), ((97, 333), (101, 29)), ((40, 50), (120, 96))], ids=["down", "odd", "up"])
def test_torch_path_equals_pillow_within_one(shape, target):
    pytest.importorskip("torch")
    from dataflow.ops.image.resize import _resize_torch

    px = np.random.default_rng(0).integers(0, 256, (*shape, 3), dtype=np.uint8)
    ref = _resize_pillow(px, *target)
    got = _resize_torch(px, *target, "cpu")
    assert got.shape == ref.shape
    diff = np.abs(got.astype(int) - ref)
    assert diff.max() <= 1 and (diff == 0).mean() > 0.99


@pytest.mark.parametrize("name, channels", [("jpeg", 3), ("png", 3), ("grey_jpeg", 1), ("rgba", 4)], ids=str)
def test_resize_decoded_files_keeps_aspect_and_channels(formats, name, channels):
    mode = {1: "L", 3: "RGB", 4: "RGBA"}[channels]
    px = decoded(formats[name], mode=mode)
    out = resize_image(batch_of(px), max_side=48, device="cpu")
    assert out["image"][0].shape == (32, 48, channels) and out["image"][0].dtype == np.uint8
    np.testing.assert_array_equal(out["image"][0], _resize_pillow(px, 48, 32))
    assert (int(out["width"][0]), int(out["height"][0])) == (48, 32)


def test_resize_rejects_a_non_integer_size():
    with pytest.raises(Exception, match="size"):
        resize_image.params(size="half")
