"""Real encoded audio (WAV, FLAC, OGG, AIFF, MP3) and batch helpers."""
from __future__ import annotations

import numpy as np
import pytest

from examples.generate_audio import encode, speech_clip


def audio_batch(*clips: tuple[np.ndarray, int]) -> dict:
    """A numpy batch: an object column of (frames, channels) arrays, their rates and sources."""
    col = np.empty(len(clips), dtype=object)
    for i, (samples, _) in enumerate(clips):
        col[i] = samples
    return {
        "audio": col,
        "sample_rate": np.array([r for _, r in clips], dtype=np.int64),
        "duration": np.array([s.shape[0] / r for s, r in clips]),
        "__source__": np.array([f"mem://clip{i}" for i in range(len(clips))], dtype=object),
    }


def tone(seconds: float, rate: int, amplitude: float = 0.5, freq: float = 440.0, channels: int = 1) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    mono = (amplitude * np.sin(2 * np.pi * freq * t)).astype(np.float32)
    return np.repeat(mono[:, None], channels, axis=1)


@pytest.fixture(scope="session")
def stereo_speech() -> np.ndarray:
    """Two bursts of voice-like sound at 44.1 kHz, stereo."""
    return speech_clip(2, 44100, seed=7)


@pytest.fixture(scope="session")
def encoded_clips(stereo_speech) -> dict[str, bytes]:
    return {fmt: encode(stereo_speech, 44100, fmt.upper()) for fmt in ("wav", "flac", "ogg", "aiff", "mp3")}
