"""Quickstart: generate a few hundred images (a few of them corrupt), run pipelines/thumbnails.yaml.

Usage: python examples/quickstart.py [--images 300] [--workdir ./quickstart]
"""
from __future__ import annotations

import argparse
import io
import os
import pathlib
import random
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np
from PIL import Image

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _kind(i: int) -> str:
    return "corrupt" if i % 100 == 7 else ("tiny" if i % 33 == 5 else "good")


def _write_image(folder: pathlib.Path, i: int, seed: int) -> None:
    """Write image ``i``: its size and colours come from ``(seed, i)`` alone, so any process writes the same file."""
    rng = random.Random(seed * 1_000_003 + i)
    kind = _kind(i)
    w, h = (rng.randint(16, 48), rng.randint(16, 48)) if kind == "tiny" else (rng.randint(300, 1024), rng.randint(300, 768))
    ext = ("jpg", "png", "webp")[i % 3]
    y, x = np.mgrid[0:h, 0:w]
    pixels = np.stack([(x * 255 // w), (y * 255 // h), np.full_like(x, (i * 37) % 256)], axis=-1).astype(np.uint8)
    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, format={"jpg": "JPEG", "png": "PNG", "webp": "WEBP"}[ext])
    data = buf.getvalue()
    if kind == "corrupt":
        data = data[: len(data) // 3]
    (folder / f"img_{i:05d}.{ext}").write_bytes(data)


def generate_images(folder: pathlib.Path, count: int, seed: int = 0) -> dict[str, int]:
    """Write ``count`` images in JPEG, PNG and WebP of varied sizes, on every core; 1% are corrupt, 3% tiny."""
    folder.mkdir(parents=True, exist_ok=True)
    with ProcessPoolExecutor(max_workers=min(os.cpu_count() or 1, 8)) as pool:
        list(pool.map(_write_image, [folder] * count, range(count), [seed] * count, chunksize=16))
    kinds = [_kind(i) for i in range(count)]
    return {k: kinds.count(k) for k in ("good", "tiny", "corrupt")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--images", type=int, default=300)
    parser.add_argument("--workdir", default="./quickstart")
    args = parser.parse_args()
    work = pathlib.Path(args.workdir).resolve()
    counts = generate_images(work / "images", args.images)
    print(f"generated {args.images} images in {work / 'images'}: {counts}")
    env = {**os.environ, "DATAFLOW_DATA": str(work / "images"), "DATAFLOW_OUT": str(work / "thumbs")}
    start = time.monotonic()
    cmd = [sys.executable, "-m", "dataflow", "run", str(ROOT / "pipelines" / "thumbnails.yaml"), "--report", str(work / "report.json")]
    code = subprocess.call(cmd, env=env)
    print(f"quickstart finished in {time.monotonic() - start:.1f} s (exit {code}); thumbnails in {work / 'thumbs'}")
    return code


if __name__ == "__main__":
    sys.exit(main())
