"""Real-world-shaped inputs, generated (nothing downloaded): the shapes public corpora ship in.

- ``dolma_docs`` / ``redpajama_docs``: JSONL documents shaped like Dolma and RedPajama, with the
  user columns those corpora carry (``id``, ``source``, ``metadata`` / ``meta`` structs, ``text``),
  Unicode of every script, and exact duplicates whose positions are returned.
- ``write_lines``: the same rows as plain, gzip, zstd, bz2 or xz JSONL.
- ``hf_image_parquet``: a Parquet file as ``datasets`` writes an ``Image`` feature
  (``struct<bytes: binary, path: string>``) beside a label and a caption.
- ``odd_images`` / ``broken_images``: valid images in every odd-but-valid variant, and every kind
  of broken file (empty, truncated, wrong content, decompression bombs, a sparse file of zeros).
- ``odd_audio`` / ``broken_audio``: the same for audio clips.
- ``csv_with_quirks``: a CSV with a BOM, quoted newlines, quotes and a Unicode header.
"""
from __future__ import annotations

import bz2
import gzip
import io
import json
import lzma
import pathlib
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image

from tests.datagen import encode, gif_bomb, gradient, png_bomb

_WORDS = [
    "the", "model", "data", "corpus", "training", "token", "Überprüfung", "naïve", "café", "数据", "训练",
    "データ", "학습", "تعلم", "обучение", "δεδομένα", "🙂", "🚀", "e\u0301", "tab\tsep", "zero\u200bwidth",
]
_SOURCES = ["common-crawl", "common-crawl", "common-crawl", "common-crawl", "c4", "wikipedia", "stack-edu"]


def _text(rng: np.random.Generator, words: int) -> str:
    picked = rng.choice(len(_WORDS), size=words)
    sentence = " ".join(_WORDS[i] for i in picked)
    return sentence[0].upper() + sentence[1:] + ".\n\n" + " ".join(_WORDS[i] for i in picked[::-1]) + "."


def dolma_docs(n: int, duplicates: int, seed: int = 0) -> tuple[list[dict[str, Any]], list[int]]:
    """``n`` Dolma-shaped docs; ``duplicates`` of them repeat an earlier doc's ``text`` exactly.

    Most rows share the ``source`` value ``common-crawl``, as in Dolma. Returns the rows and the
    positions of the repeated rows (a dedup keeping the first of each group drops exactly those).
    """
    rng = np.random.default_rng(seed)
    rows, repeats = [], sorted(rng.choice(np.arange(n // 3, n), size=duplicates, replace=False).tolist())
    for i in range(n):
        source = _SOURCES[int(rng.integers(len(_SOURCES)))]
        text = rows[int(rng.integers(i // 3))]["text"] if i in repeats else _text(rng, int(rng.integers(8, 40))) + f" #{i}"
        rows.append({
            "id": f"{source}/{i:07d}",
            "source": source,
            "added": f"2024-0{1 + i % 9}-1{i % 10}T00:00:00.000Z",
            "metadata": {"url": f"https://example.org/{i}?q=a&b=ü", "lang": {"en": round(float(rng.random()), 3)}, "length": len(text)},
            "text": text,
        })
    return rows, repeats


def redpajama_docs(n: int, seed: int = 1) -> list[dict[str, Any]]:
    """``n`` RedPajama-shaped docs: ``text``, a ``meta`` struct and a ``red_pajama_subset``."""
    rng = np.random.default_rng(seed)
    return [
        {"text": _text(rng, int(rng.integers(5, 30))), "meta": {"url": f"https://example.com/{i}", "timestamp": 1_700_000_000 + i, "language": "en", "source": "cc"},
         "red_pajama_subset": "common_crawl"}
        for i in range(n)
    ]


_COMPRESS = {None: lambda b: b, "gz": gzip.compress, "bz2": bz2.compress, "xz": lzma.compress, "zst": None}


def compress(data: bytes, kind: str | None) -> bytes:
    """``data`` compressed as ``kind`` (``gz``, ``bz2``, ``xz``, ``zst``; None: as is)."""
    if kind == "zst":
        import zstandard

        return zstandard.ZstdCompressor().compress(data)
    return _COMPRESS[kind](data)


def write_lines(path: pathlib.Path, rows: list[dict[str, Any]], kind: str | None = None) -> pathlib.Path:
    """Write ``rows`` as JSONL at ``path`` (``.<kind>`` appended when compressed); returns the path."""
    path = path.with_name(path.name + f".{kind}") if kind else path
    path.parent.mkdir(parents=True, exist_ok=True)
    data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode()
    path.write_bytes(compress(data, kind))
    return path


def hf_image_parquet(path: pathlib.Path, n: int, seed: int = 0) -> list[dict[str, Any]]:
    """Write ``n`` rows as HF ``datasets`` stores an ``Image`` feature; returns the rows."""
    rows = [{"image": {"bytes": encode(gradient(40 + i, 30, seed=seed + i), "PNG"), "path": f"img_{i}.png"}, "label": i % 3,
             "text": f"a caption {i} ✓"} for i in range(n)]
    schema = pa.schema([("image", pa.struct([("bytes", pa.binary()), ("path", pa.string())])), ("label", pa.int64()), ("text", pa.string())])
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)
    return rows


def odd_images() -> dict[str, bytes]:
    """Valid images in odd-but-valid variants, by file name."""
    rgb = gradient(64, 48, seed=7)
    out: dict[str, bytes] = {}

    def save(name: str, image: Image.Image, fmt: str, **kw) -> None:
        buf = io.BytesIO()
        image.save(buf, format=fmt, **kw)
        out[name] = buf.getvalue()

    save("gray.png", Image.fromarray(rgb).convert("L"), "PNG")
    save("gray_alpha.png", Image.fromarray(rgb).convert("LA"), "PNG")
    save("palette_transparent.png", Image.fromarray(rgb).convert("P"), "PNG", transparency=0)
    save("rgba.png", Image.fromarray(rgb).convert("RGBA"), "PNG")
    save("sixteen_bit.png", Image.fromarray((rgb[..., 0].astype(np.uint16) * 257)), "PNG")
    save("cmyk.jpg", Image.fromarray(rgb).convert("CMYK"), "JPEG")
    save("progressive.jpg", Image.fromarray(rgb), "JPEG", progressive=True)
    exif = Image.Exif()
    exif[0x0112] = 6  # orientation: rotate 90° clockwise
    save("exif_rotated.jpg", Image.fromarray(rgb), "JPEG", exif=exif.tobytes())
    frames = [Image.fromarray(gradient(32, 32, seed=s)).convert("P") for s in range(3)]
    buf = io.BytesIO()
    frames[0].save(buf, format="GIF", save_all=True, append_images=frames[1:], duration=50, loop=0)
    out["animated.gif"] = buf.getvalue()
    save("one_pixel.png", Image.new("RGB", (1, 1), (255, 0, 0)), "PNG")
    save("thin_strip.png", Image.new("RGB", (3000, 1), (0, 128, 0)), "PNG")
    save("lossless.webp", Image.fromarray(rgb), "WEBP", lossless=True)
    save("UPPER.JPG", Image.fromarray(rgb), "JPEG")
    save("bitmap.bmp", Image.fromarray(rgb), "BMP")
    return out


def broken_images(folder: pathlib.Path, sparse_bytes: int = 64 << 20) -> dict[str, pathlib.Path]:
    """Write every kind of broken image file into ``folder``; returns them by kind.

    The sparse file of zeros takes no disk: it is made by ``truncate``.
    """
    folder.mkdir(parents=True, exist_ok=True)
    good_jpeg, good_png = encode(gradient(120, 90), "JPEG"), encode(gradient(120, 90), "PNG")
    files = {
        "empty": ("empty.png", b""),
        "truncated_jpeg": ("truncated.jpg", good_jpeg[: len(good_jpeg) // 2]),
        "truncated_png": ("truncated.png", good_png[: len(good_png) // 2]),
        "not_an_image": ("notes.jpg", "not an image, just text ✗\n".encode() * 20),
        "png_bomb": ("bomb.png", png_bomb(20_000, 20_000)),
        "png_bomb_warn": ("bomb_warn.png", png_bomb(12_000, 12_000)),  # between Pillow's warning and error limits
        "gif_bomb": ("bomb.gif", gif_bomb()),
    }
    paths = {}
    for kind, (name, data) in files.items():
        paths[kind] = folder / name
        paths[kind].write_bytes(data)
    paths["sparse_zeros"] = folder / "zeros.jpg"
    with open(paths["sparse_zeros"], "wb") as fh:
        fh.truncate(sparse_bytes)
    return paths


def _wav(samples: np.ndarray, rate: int, subtype: str) -> bytes:
    import soundfile as sf

    buf = io.BytesIO()
    sf.write(buf, samples, rate, format="WAV", subtype=subtype)
    return buf.getvalue()


def odd_audio() -> dict[str, bytes]:
    """Valid clips in odd-but-valid variants, by file name (each about 0.5 s)."""
    import soundfile as sf

    t = np.linspace(0, 0.5, 4000, endpoint=False)
    tone = 0.3 * np.sin(2 * np.pi * 440 * t)
    out = {
        "mono_8k_pcm16.wav": _wav(tone, 8000, "PCM_16"),
        "stereo_44k.wav": _wav(np.stack([tone, tone[::-1]], axis=1).repeat(5, axis=0)[:22050], 44100, "PCM_16"),
        "float32.wav": _wav(tone.astype(np.float32), 8000, "FLOAT"),
        "unsigned_8bit.wav": _wav(tone, 8000, "PCM_U8"),
        "one_sample.wav": _wav(tone[:1], 8000, "PCM_16"),
    }
    buf = io.BytesIO()
    sf.write(buf, tone, 8000, format="FLAC")
    out["clip.flac"] = buf.getvalue()
    return out


def broken_audio() -> dict[str, bytes]:
    """Broken clips by file name: empty, a header only, truncated data, text named .wav."""
    good = _wav(0.3 * np.sin(np.linspace(0, 100, 8000)), 8000, "PCM_16")
    return {"empty.wav": b"", "header_only.wav": good[:44], "truncated.wav": good[:30], "text.wav": b"RIFF? no, plain text\n" * 8}


def csv_with_quirks() -> tuple[bytes, list[dict[str, str]]]:
    """A CSV with a UTF-8 BOM, quoted newlines and quotes, a Unicode header; returns it and its rows."""
    rows = [
        {"id": "1", "source": "forum", "text": "line one\nline two", "größe": "1"},
        {"id": "2", "source": "forum", "text": 'she said "hi", then left', "größe": "2"},
        {"id": "3", "source": "wiki", "text": "", "größe": "3"},
        {"id": "4", "source": "wiki", "text": "comma, inside\r\nand CRLF", "größe": "4"},
    ]
    buf = io.StringIO(newline="")
    import csv

    writer = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\r\n")
    writer.writeheader()
    writer.writerows(rows)
    return b"\xef\xbb\xbf" + buf.getvalue().encode(), rows
