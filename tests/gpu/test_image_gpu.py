"""GPU == CPU for the image ops (skipped without CUDA, see tests/conftest.py)."""
from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from dataflow.ops.image.decode import decode_image
from dataflow.ops.image.phash import phash_image
from dataflow.ops.image.resize import resize_image
from examples.generate_images import picture

pytestmark = pytest.mark.gpu


def _batch(images):
    col = np.empty(len(images), dtype=object)
    for i, p in enumerate(images):
        col[i] = p
    return {"image": col}


@pytest.fixture(scope="module")
def images():
    rng = np.random.default_rng(0)
    return [picture(1024, 768, seed=1), picture(333, 517, seed=2), rng.integers(0, 256, (300, 400, 3), dtype=np.uint8), picture(64, 48, seed=3)[:, :, :1].copy()]


@pytest.mark.parametrize("params", [{"max_side": 256}, {"max_side": 97}, {"size": 200, "upscale": True}], ids=["256", "97", "size-up"])
def test_resize_gpu_equals_cpu_within_one(images, params):
    cpu = resize_image(_batch(images), device="cpu", **params)
    gpu = resize_image.impl("gpu")(_batch(images), **params)
    for a, b in zip(cpu["image"], gpu["image"]):
        assert a.shape == b.shape
        assert np.abs(a.astype(int) - b).max() <= 1
    assert list(cpu["width"]) == list(gpu["width"])


def test_phash_gpu_equals_cpu_exactly(images):
    cpu = phash_image(_batch(images), device="cpu")["phash"]
    gpu = phash_image.impl("gpu")(_batch(images))["phash"]
    np.testing.assert_array_equal(cpu, gpu)


def test_nvjpeg_decode_matches_pillow(images):
    pytest.importorskip("torchvision")
    for px in images[:3]:
        buf = io.BytesIO()
        Image.fromarray(px).save(buf, "JPEG", quality=92)
        data = buf.getvalue()
        cpu = decode_image({"bytes": data}, device="cpu")["image"].astype(int)
        gpu = decode_image.impl("gpu")({"bytes": data})["image"].astype(int)
        assert cpu.shape == gpu.shape
        diff = np.abs(cpu - gpu)
        assert diff.mean() < 1.0 and np.percentile(diff, 99.9) <= 8  # IDCT / chroma upsampling rounding


def test_image_embed_factory_on_cuda_equals_cpu(images):
    torch = pytest.importorskip("torch")
    from dataflow.ops.image.embed import ImageEmbed

    cpu = ImageEmbed.impl()(model="tests.gpu.test_image_gpu:conv_factory", device="cpu")(_batch(images[:3]))
    gpu = ImageEmbed.impl()(model="tests.gpu.test_image_gpu:conv_factory", device="cuda")(_batch(images[:3]))
    assert torch.cuda.is_available()
    np.testing.assert_allclose(np.stack(cpu["embedding"]), np.stack(gpu["embedding"]), rtol=1e-4, atol=1e-5)


def conv_factory(device: str):
    """A fixed-weight conv net on 64x64 RGB thumbnails (the kind of factory users write)."""
    import torch

    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(4), torch.nn.Flatten()).to(device).eval()

    def embed(batch):
        x = np.stack([np.asarray(Image.fromarray(p[:, :, :3] if p.shape[2] >= 3 else p[:, :, 0]).convert("RGB").resize((64, 64))) for p in batch])
        t = torch.from_numpy(x).permute(0, 3, 1, 2).float().div(255).to(device)
        with torch.no_grad():
            return net(t).cpu().numpy()

    return embed


def test_ray_workers_with_a_gpu_run_the_gpu_variants(images):
    from dataflow.engines.ray.devices import worker_calls
    from dataflow.runtime.stage import StageExecutor, StepCall

    calls = [StepCall(0, "image.resize", {"max_side": 64}), StepCall(1, "image.phash", {})]
    batch = dict(_batch(images[:3]), source=np.array(["a", "b", "c"], dtype=object))
    chosen, impls = worker_calls(calls, num_gpus=0.25)
    assert impls == ["gpu", "gpu"]
    gpu, _, _ = StageExecutor(chosen, impls)(dict(batch))
    cpu, _, _ = StageExecutor(*worker_calls(calls, num_gpus=None))(dict(batch))
    np.testing.assert_array_equal(gpu["phash"], cpu["phash"])
