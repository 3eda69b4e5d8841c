"""Frame energies of a clip, in dB relative to full scale (the measure loudness and VAD share)."""
from __future__ import annotations

import numpy as np

__all__ = ["SILENT_DB", "frame_db", "rms_db"]

SILENT_DB = -120.0  # what digital silence reports instead of minus infinity


def _db(power: np.ndarray | float) -> np.ndarray:
    return np.maximum(10.0 * np.log10(np.maximum(power, 1e-12)), SILENT_DB)


def rms_db(samples: np.ndarray) -> float:
    """RMS level of a (frames, channels) clip in dBFS (a full-scale sine is -3 dBFS)."""
    return float(_db(np.mean(np.square(samples, dtype=np.float64))))


def frame_db(samples: np.ndarray, sample_rate: int, frame_seconds: float) -> np.ndarray:
    """RMS level of consecutive frames in dBFS; a trailing partial frame counts as a frame."""
    frame = max(1, int(round(frame_seconds * sample_rate)))
    power = np.mean(np.square(samples, dtype=np.float64), axis=1)
    count = -(-len(power) // frame)
    padded = np.zeros(count * frame)
    padded[: len(power)] = power
    sums = padded.reshape(count, frame).sum(axis=1)
    sizes = np.full(count, frame, dtype=np.float64)
    sizes[-1] = len(power) - frame * (count - 1)
    return _db(sums / sizes)
