"""Resample audio to one rate with soxr (high-quality band-limited resampling)."""
from __future__ import annotations

from typing import Literal

import numpy as np

from dataflow.ops.declare import op


@op(
    name="audio.resample",
    modality="audio",
    inputs=("{column}", "sample_rate"),
    outputs=("{column}", "sample_rate", "duration"),
    batch_format="numpy",
    extra="audio",
    requires=("soxr",),
)
def resample_audio(batch: dict, *, sample_rate: int = 16000, quality: Literal["QQ", "LQ", "MQ", "HQ", "VHQ"] = "HQ", column: str = "audio") -> dict:
    """Resample each clip to ``sample_rate`` Hz with soxr; clips already at that rate pass unchanged.

    Args:
        sample_rate: Target rate in Hz (16000 is what speech models expect).
        quality: soxr quality preset, from QQ (quick) to VHQ (very high).
        column: Column holding the (frames, channels) float32 arrays.
    """
    import soxr

    if sample_rate <= 0:
        raise ValueError(f"audio.resample: sample_rate must be positive, got {sample_rate}")
    n = len(batch[column])
    out = np.empty(n, dtype=object)
    for i, (samples, rate) in enumerate(zip(batch[column], batch["sample_rate"])):
        if int(rate) != sample_rate:
            samples = soxr.resample(samples, int(rate), sample_rate, quality=quality).astype(np.float32, copy=False)
        out[i] = samples
    batch[column] = out
    batch["sample_rate"] = np.full(n, sample_rate, dtype=np.int64)
    batch["duration"] = np.array([s.shape[0] / sample_rate for s in out], dtype=np.float64)
    return batch
