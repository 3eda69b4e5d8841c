"""Pillow's 8-bit Lanczos resize and RGB-to-L conversion, reproduced as matrix products for torch.

Pillow resizes in two separable passes (horizontal, then vertical), each with fixed-point weights
(22 fractional bits) and an 8-bit rounding in between. Building the same integer weights as dense
matrices and multiplying in float64 gives Pillow's exact integers: every partial sum is an integer
below 2**53. That makes the GPU path of ``image.resize`` and ``image.phash`` equal to the CPU path.
"""
from __future__ import annotations

import functools
import math

import numpy as np

__all__ = ["PRECISION_BITS", "lanczos_weights", "resize_torch", "to_luma_torch"]

PRECISION_BITS = 22  # Pillow: 32 - 8 bits per channel - 2 guard bits
_SUPPORT = 3.0


def _sinc(x: float) -> float:
    if x == 0.0:
        return 1.0
    x *= math.pi
    return math.sin(x) / x


def _lanczos(x: float) -> float:
    return _sinc(x) * _sinc(x / 3.0) if -3.0 <= x < 3.0 else 0.0


@functools.lru_cache(maxsize=256)
def lanczos_weights(in_size: int, out_size: int) -> np.ndarray:
    """Return Pillow's fixed-point Lanczos weights as a dense (out_size, in_size) int64 matrix."""
    scale = in_size / out_size
    filterscale = max(scale, 1.0)
    support = _SUPPORT * filterscale
    weights = np.zeros((out_size, in_size), dtype=np.int64)
    for xx in range(out_size):
        center = (xx + 0.5) * scale
        xmin = max(int(center - support + 0.5), 0)
        xmax = min(int(center + support + 0.5), in_size)
        k = [_lanczos((x + xmin - center + 0.5) / filterscale) for x in range(xmax - xmin)]
        total = sum(k)
        for x, w in enumerate(k):
            w = w / total if total != 0.0 else w
            weights[xx, xmin + x] = int(w * (1 << PRECISION_BITS) + (0.5 if w >= 0 else -0.5))
    weights.setflags(write=False)
    return weights


def _pass(torch, pixels, weights, dim: int):
    """One separable pass over ``dim`` of a (C, H, W) float64 tensor, rounded to 8 bits."""
    w = torch.tensor(weights, dtype=torch.float64, device=pixels.device)
    out = torch.matmul(pixels, w.T) if dim == 2 else torch.matmul(w, pixels)
    return torch.floor((out + (1 << (PRECISION_BITS - 1))) / (1 << PRECISION_BITS)).clamp_(0, 255)


def resize_torch(pixels, width: int, height: int):
    """Resize a (C, H, W) float64 tensor of 8-bit values exactly as Pillow's LANCZOS does."""
    import torch

    _, h, w = pixels.shape
    if w != width:
        pixels = _pass(torch, pixels, lanczos_weights(w, width), dim=2)
    if h != height:
        pixels = _pass(torch, pixels, lanczos_weights(h, height), dim=1)
    return pixels


def to_luma_torch(pixels):
    """Pillow's RGB -> L on a (C, H, W) float64 tensor: ``(19595 R + 38470 G + 7471 B + 32768) >> 16``."""
    import torch

    if pixels.shape[0] == 1:
        return pixels
    r, g, b = pixels[0], pixels[1], pixels[2]
    return torch.floor((r * 19595 + g * 38470 + b * 7471 + 0x8000) / 65536)[None]
