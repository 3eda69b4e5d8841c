"""Generate an image folder for pipelines/image_curation.yaml, with planted problems to find.

Writes unique textured pictures in JPEG/PNG/WebP plus: near-duplicates (re-encoded and slightly
resized copies), tiny images, panoramas, blurred pictures and corrupt files. Returns (and prints)
how many of each, so a test can check what the pipeline keeps.

Usage: python examples/generate_images.py OUT_DIR [--unique 20] [--seed 0]
"""
from __future__ import annotations

import argparse
import io
import json
import pathlib

import numpy as np
from PIL import Image, ImageFilter

_FORMATS = (("JPEG", "jpg"), ("PNG", "png"), ("WEBP", "webp"))


def picture(width: int, height: int, seed: int) -> np.ndarray:
    """A textured RGB picture: seeded gradients, blocks and fine noise (sharp, distinct per seed)."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width].astype(np.float64)
    angle = rng.uniform(0, np.pi)
    wave = np.sin((x * np.cos(angle) + y * np.sin(angle)) / rng.uniform(8, 40))
    base = np.stack([wave * 80 + 120, (x / width) * 200, (y / height) * 200], axis=-1)
    cells = rng.integers(0, 90, size=(height // 24 + 1, width // 24 + 1, 3))
    blocks = np.kron(cells, np.ones((24, 24, 1)))[:height, :width]
    noise = rng.normal(0, 12, size=(height, width, 3))
    return (base + blocks + noise).clip(0, 255).astype(np.uint8)


def encode(pixels: np.ndarray, fmt: str, **save) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, format=fmt, **save)
    return buf.getvalue()


def generate_images(folder: pathlib.Path, unique: int = 20, seed: int = 0, size: tuple[int, int] = (320, 240)) -> dict[str, int]:
    """Write the planted dataset into ``folder``; return the count of each kind of file."""
    folder = pathlib.Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    counts = {"unique": unique, "duplicates": 0, "tiny": 0, "wide": 0, "blurry": 0, "corrupt": 0}
    originals = []
    for i in range(unique):
        fmt, ext = _FORMATS[i % 3]
        pixels = picture(size[0] + (i % 5) * 8, size[1] + (i % 3) * 8, seed * 1000 + i)
        originals.append(pixels)
        (folder / f"img_{i:04d}.{ext}").write_bytes(encode(pixels, fmt))
    for i in range(0, unique, 4):  # every 4th picture again: re-encoded at 90% size
        im = Image.fromarray(originals[i])
        smaller = np.asarray(im.resize((im.width * 9 // 10, im.height * 9 // 10), Image.Resampling.BICUBIC))
        (folder / f"dup_{i:04d}.jpg").write_bytes(encode(smaller, "JPEG", quality=70))
        counts["duplicates"] += 1
    for i in range(3):
        (folder / f"tiny_{i}.png").write_bytes(encode(picture(40, 30, seed * 1000 + 500 + i), "PNG"))
        counts["tiny"] += 1
    for i in range(2):
        (folder / f"wide_{i}.jpg").write_bytes(encode(picture(900, 200, seed * 1000 + 600 + i), "JPEG"))
        counts["wide"] += 1
    for i in range(2):
        blurred = Image.fromarray(picture(*size, seed * 1000 + 700 + i)).filter(ImageFilter.GaussianBlur(8))
        (folder / f"blurry_{i}.png").write_bytes(encode(np.asarray(blurred), "PNG"))
        counts["blurry"] += 1
    good = encode(picture(*size, seed * 1000 + 800), "JPEG")
    (folder / "bad_truncated.jpg").write_bytes(good[: len(good) // 3])
    (folder / "bad_empty.png").write_bytes(b"")
    (folder / "bad_text.webp").write_bytes(b"not an image at all\n" * 8)
    counts["corrupt"] = 3
    return counts


def generate_jpegs(folder: pathlib.Path, count: int, size: tuple[int, int] = (1024, 768), seed: int = 0) -> list[pathlib.Path]:
    """Write ``count`` distinct JPEGs of ``size`` (the benchmark input)."""
    folder = pathlib.Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(count):
        p = folder / f"photo_{i:05d}.jpg"
        p.write_bytes(encode(picture(*size, seed * 100_000 + i), "JPEG", quality=90))
        paths.append(p)
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out")
    parser.add_argument("--unique", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(json.dumps(generate_images(pathlib.Path(args.out), args.unique, args.seed)))


if __name__ == "__main__":
    main()
