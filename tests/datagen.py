"""Generators of real encoded test data: images, corrupt files, JSONL with bad lines."""
from __future__ import annotations

import io
import json
import pathlib

import numpy as np
from PIL import Image


def gradient(width: int, height: int, seed: int = 0) -> np.ndarray:
    """An RGB test picture with structure (gradients plus a seeded block pattern)."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width]
    base = np.stack([x * 255 // max(1, width - 1), y * 255 // max(1, height - 1), (x + y) * 127 // max(1, width + height)], axis=-1)
    blocks = rng.integers(0, 60, size=(height // 16 + 1, width // 16 + 1, 3))
    return (base + np.kron(blocks, np.ones((16, 16, 1)))[:height, :width]).clip(0, 255).astype(np.uint8)


def encode(pixels: np.ndarray, fmt: str, **save) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, format=fmt, **save)
    return buf.getvalue()


def write_images(folder: pathlib.Path, count: int, size=(320, 240), formats=("JPEG", "PNG", "WEBP")) -> list[pathlib.Path]:
    """Write ``count`` valid images cycling through ``formats``; returns their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    ext = {"JPEG": "jpg", "PNG": "png", "WEBP": "webp"}
    paths = []
    for i in range(count):
        fmt = formats[i % len(formats)]
        p = folder / f"img_{i:04d}.{ext[fmt]}"
        p.write_bytes(encode(gradient(size[0] + i % 7, size[1], seed=i), fmt))
        paths.append(p)
    return paths


def write_corrupt_images(folder: pathlib.Path) -> dict[str, pathlib.Path]:
    """Write a truncated JPEG, an empty PNG and a text file named .jpg."""
    folder.mkdir(parents=True, exist_ok=True)
    good = encode(gradient(200, 150), "JPEG")
    files = {
        "truncated": folder / "bad_truncated.jpg",
        "empty": folder / "bad_empty.png",
        "not_an_image": folder / "bad_text.jpg",
    }
    files["truncated"].write_bytes(good[: len(good) // 3])
    files["empty"].write_bytes(b"")
    files["not_an_image"].write_bytes(b"this is not an image\n" * 10)
    return files


def write_jsonl(path: pathlib.Path, rows: list[dict], bad_lines: list[bytes] = ()) -> None:
    """Write rows as JSONL, then append ``bad_lines`` verbatim (malformed JSON, invalid UTF-8)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = b"".join(json.dumps(r).encode() + b"\n" for r in rows) + b"".join(line + b"\n" for line in bad_lines)
    path.write_bytes(data)
