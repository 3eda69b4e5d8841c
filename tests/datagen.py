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


def png_bomb(width: int, height: int) -> bytes:
    """A valid 1-bit PNG of ``width`` x ``height`` zeros: a few KiB that decode to ``width*height`` pixels."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    packer, row = zlib.compressobj(9), b"\x00" * (1 + (width + 7) // 8)  # filter byte + packed bits
    idat = b"".join(packer.compress(row) for _ in range(height)) + packer.flush()
    ihdr = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


def gif_bomb(width: int = 65535, height: int = 65535) -> bytes:
    """A GIF whose logical screen and only frame claim ``width`` x ``height`` pixels, with almost no data."""
    import struct

    screen = b"GIF89a" + struct.pack("<HHBBB", width, height, 0, 0, 0)
    frame = b"," + struct.pack("<HHHHB", 0, 0, width, height, 0x80) + b"\x00\x00\x00\xff\xff\xff"  # 2-colour local table
    return screen + frame + b"\x02\x02\x4c\x01\x00" + b";"  # LZW: min code size 2, clear + end codes


def write_hostile_images(folder: pathlib.Path, sparse_bytes: int = 80 * 2**20) -> dict[str, pathlib.Path]:
    """Write decompression bombs (PNG between Pillow's warning and error limits, GIF far above), an
    empty file, a truncated PNG and a sparse file of zeros (``sparse_bytes`` long, no disk used)."""
    folder.mkdir(parents=True, exist_ok=True)
    files = {name: folder / f"bad_{name}" for name in ("png_bomb.png", "gif_bomb.gif", "empty.png", "truncated.png", "zeros.png")}
    files["png_bomb.png"].write_bytes(png_bomb(12_000, 12_000))  # 144 Mpx
    files["gif_bomb.gif"].write_bytes(gif_bomb())
    files["empty.png"].write_bytes(b"")
    good = encode(gradient(200, 150), "PNG")
    files["truncated.png"].write_bytes(good[: len(good) // 2])
    with open(files["zeros.png"], "wb") as f:
        f.truncate(sparse_bytes)
    return files
