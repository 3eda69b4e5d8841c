"""Generate an audio folder for pipelines/audio_curation.yaml, with planted problems to find.

Writes "speech-like" clips (harmonic bursts with a syllable-rate envelope, separated by silence)
as stereo WAV, FLAC and OGG at 44.1/48 kHz, plus near-silent clips, too-short clips and corrupt
files. Each speech clip holds a known number of bursts, so the VAD segment count is known.

Usage: python examples/generate_audio.py OUT_DIR [--clips 6] [--seed 0]
"""
from __future__ import annotations

import argparse
import io
import json
import pathlib

import numpy as np
import soundfile as sf

_FORMATS = (("WAV", "wav", 44100), ("FLAC", "flac", 48000), ("OGG", "ogg", 44100))


def burst(seconds: float, rate: int, rng: np.random.Generator) -> np.ndarray:
    """One voiced burst: a 120-220 Hz harmonic stack with a 4 Hz envelope and a little noise."""
    t = np.arange(int(seconds * rate)) / rate
    f0 = rng.uniform(120, 220)
    voice = sum(np.sin(2 * np.pi * f0 * k * t + rng.uniform(0, 6.28)) / k for k in range(1, 8))
    envelope = 0.6 + 0.4 * np.sin(2 * np.pi * 4 * t) ** 2
    edge = np.minimum(1.0, np.minimum(t, t[-1] - t) / 0.02)  # 20 ms fades: no clicks
    return (0.2 * voice * envelope * edge + rng.normal(0, 0.003, len(t))).astype(np.float32)


def speech_clip(bursts: int, rate: int, seed: int) -> np.ndarray:
    """Silence, then ``bursts`` bursts of 0.8-1.5 s each followed by 0.8 s of near-silence; stereo."""
    rng = np.random.default_rng(seed)
    parts = [rng.normal(0, 0.0005, int(0.5 * rate)).astype(np.float32)]
    for _ in range(bursts):
        parts.append(burst(rng.uniform(0.8, 1.5), rate, rng))
        parts.append(rng.normal(0, 0.0005, int(0.8 * rate)).astype(np.float32))
    mono = np.concatenate(parts)
    return np.stack([mono, mono * 0.8], axis=1)


def encode(samples: np.ndarray, rate: int, fmt: str) -> bytes:
    buf = io.BytesIO()
    sf.write(buf, samples, rate, format=fmt)
    return buf.getvalue()


def generate_audio(folder: pathlib.Path, clips: int = 6, seed: int = 0) -> dict[str, int]:
    """Write the planted dataset into ``folder``; return the counts (``segments``: expected VAD segments)."""
    folder = pathlib.Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    counts = {"speech": clips, "segments": 0, "silent": 0, "short": 0, "corrupt": 0}
    for i in range(clips):
        fmt, ext, rate = _FORMATS[i % 3]
        bursts = 1 + i % 3
        (folder / f"speech_{i:03d}.{ext}").write_bytes(encode(speech_clip(bursts, rate, seed * 1000 + i), rate, fmt))
        counts["segments"] += bursts
    rng = np.random.default_rng(seed)
    for i in range(2):
        quiet = rng.normal(0, 0.0003, (3 * 44100, 2)).astype(np.float32)
        (folder / f"silent_{i}.wav").write_bytes(encode(quiet, 44100, "WAV"))
        counts["silent"] += 1
    for i in range(2):
        short = burst(0.4, 16000, rng)[:, None]
        (folder / f"short_{i}.flac").write_bytes(encode(short, 16000, "FLAC"))
        counts["short"] += 1
    good = encode(speech_clip(1, 16000, seed + 99), 16000, "FLAC")
    (folder / "bad_truncated.flac").write_bytes(good[:60])
    (folder / "bad_empty.wav").write_bytes(b"")
    (folder / "bad_text.ogg").write_bytes(b"definitely not audio\n" * 20)
    counts["corrupt"] = 3
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out")
    parser.add_argument("--clips", type=int, default=6)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(json.dumps(generate_audio(pathlib.Path(args.out), args.clips, args.seed)))


if __name__ == "__main__":
    main()
