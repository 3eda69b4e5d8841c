"""64-bit DCT perceptual hash (pHash) of each image, identical on CPU and GPU.

The classic pHash: luma, Lanczos down to 32x32, 2-D DCT, the top-left 8x8 coefficients compared
with their median. Every step is done in exact integer arithmetic (Pillow's fixed-point luma and
resize weights, a DCT basis scaled to integers), so the numpy and torch paths give the same bits.
The result differs from ``imagehash.phash`` in at most a few near-median bits.
"""
from __future__ import annotations

import functools

import numpy as np

from dataflow.ops.declare import Resources, op
from dataflow.ops.device import Device, resolve_device
from dataflow.ops.image.pillow_resample import PRECISION_BITS, lanczos_weights

__all__ = ["hamming", "phash_image", "phash_pixels"]

_SIDE = 32
_LOW = 8
_DCT_BITS = 12
_BIT_WEIGHTS = (np.uint64(1) << np.arange(63, -1, -1, dtype=np.uint64))


@functools.lru_cache(maxsize=1)
def _dct_basis() -> np.ndarray:
    """The first 8 rows of the 32-point DCT-II basis, scaled by 2**12 and rounded to integers."""
    u = np.arange(_LOW)[:, None]
    x = np.arange(_SIDE)[None, :]
    basis = np.round(np.cos(np.pi * (2 * x + 1) * u / (2 * _SIDE)) * (1 << _DCT_BITS))
    basis.setflags(write=False)
    return basis


def _round_pass(values: np.ndarray) -> np.ndarray:
    return np.clip(np.floor((values + (1 << (PRECISION_BITS - 1))) / (1 << PRECISION_BITS)), 0, 255)


def _luma(pixels: np.ndarray) -> np.ndarray:
    px = pixels.astype(np.float64)
    if px.shape[2] < 3:
        return px[..., 0]
    return np.floor((px[..., 0] * 19595 + px[..., 1] * 38470 + px[..., 2] * 7471 + 0x8000) / 65536)


def _bits_to_int(low: np.ndarray) -> int:
    flat = low.reshape(-1)
    ordered = np.sort(flat)
    twice_median = ordered[31] + ordered[32]
    bits = (2 * flat > twice_median).astype(np.uint64)
    return int(np.sum(bits * _BIT_WEIGHTS, dtype=np.uint64).astype(np.int64))


def phash_pixels(pixels: np.ndarray) -> int:
    """Return the 64-bit pHash of one HxWxC uint8 image as a signed int64 (the same bits)."""
    grey = _luma(pixels)
    h, w = grey.shape
    # NOTE: einsum's C loops, not BLAS: threaded BLAS on these small products is 20x slower on
    # busy 2-core workers. Integer-valued float64 sums are exact either way.
    if w != _SIDE:
        grey = _round_pass(np.einsum("hw,xw->hx", grey, lanczos_weights(w, _SIDE).astype(np.float64)))
    if h != _SIDE:
        grey = _round_pass(np.einsum("yh,hx->yx", lanczos_weights(h, _SIDE).astype(np.float64), grey))
    basis = _dct_basis()
    return _bits_to_int(basis @ grey @ basis.T)


def _phash_torch(images, device: str) -> np.ndarray:
    import torch

    from dataflow.ops.image.pillow_resample import resize_torch, to_luma_torch

    basis = torch.tensor(_dct_basis(), dtype=torch.float64, device=device)
    lows = []
    for pixels in images:
        t = torch.from_numpy(np.ascontiguousarray(pixels)).to(device=device, dtype=torch.float64).permute(2, 0, 1)
        grey = resize_torch(to_luma_torch(t), _SIDE, _SIDE)[0]
        lows.append(basis @ grey @ basis.T)
    low = torch.stack(lows).cpu().numpy() if lows else np.empty((0, _LOW, _LOW))
    return np.fromiter((_bits_to_int(x) for x in low), dtype=np.int64, count=len(low))


def hamming(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Bitwise Hamming distance between int64 hashes (elementwise, broadcasting)."""
    x = np.bitwise_xor(np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)).view(np.uint64)
    return np.bitwise_count(x).astype(np.int64)


@op(
    name="image.phash",
    modality="image",
    inputs=("{column}",),
    outputs=("{output}",),
    batch_format="numpy",
)
def phash_image(batch: dict, *, column: str = "image", output: str = "phash", device: Device = "auto") -> dict:
    """Add the 64-bit DCT perceptual hash of each image as an int64 column.

    Near-identical pictures (re-encoded, resized, slightly recoloured) get hashes a few bits apart;
    ``image.dedup_phash`` uses that.

    Args:
        column: Column holding the decoded HxWxC arrays.
        output: Column to write the hash to.
        device: ``auto`` uses CUDA when this worker sees a device, ``cpu`` or ``cuda`` force one;
            both give the same bits.
    """
    images = batch[column]
    if resolve_device(device, "image.phash") == "cuda":
        batch[output] = _phash_torch(images, "cuda")
    else:
        batch[output] = np.fromiter((phash_pixels(p) for p in images), dtype=np.int64, count=len(images))
    return batch


@phash_image.gpu(resources=Resources(num_gpus=0.25))
def _phash_image_cuda(batch: dict, *, column: str = "image", output: str = "phash", device: Device = "auto") -> dict:
    """The CUDA path: the same integer pipeline in torch float64 (exactly the CPU bits)."""
    return phash_image.target(batch, column=column, output=output, device="cuda")
