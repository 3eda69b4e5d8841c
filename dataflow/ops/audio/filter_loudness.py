"""Drop clips that are too quiet, too loud or mostly silence."""
from __future__ import annotations

import numpy as np

from dataflow.ops.audio.energy import frame_db, rms_db
from dataflow.ops.declare import op


@op(
    name="audio.filter_loudness",
    modality="audio",
    inputs=("{column}", "sample_rate"),
    outputs=(),
    kind="filter",
    batch_format="numpy",
)
def filter_audio_loudness(
    batch: dict,
    *,
    min_dbfs: float = -40.0,
    max_dbfs: float = -1.0,
    silence_dbfs: float = -50.0,
    max_silence_ratio: float = 0.8,
    frame_seconds: float = 0.025,
    column: str = "audio",
) -> tuple[np.ndarray, np.ndarray]:
    """Keep clips whose RMS level lies in [``min_dbfs``, ``max_dbfs``] and that are not mostly silence.

    Drops are counted per reason: ``audio.filter_loudness:min_dbfs`` (too quiet), ``:max_dbfs``
    (too loud, clipping) and ``:max_silence_ratio``.

    Args:
        min_dbfs: Quietest allowed RMS level in dBFS.
        max_dbfs: Loudest allowed RMS level in dBFS.
        silence_dbfs: A frame below this level counts as silence.
        max_silence_ratio: Largest allowed share of silent frames.
        frame_seconds: Frame length for the silence measure.
        column: Column holding the (frames, channels) float32 arrays.
    """
    n = len(batch[column])
    reasons = np.full(n, "", dtype=object)
    for i, (samples, rate) in enumerate(zip(batch[column], batch["sample_rate"])):
        level = rms_db(samples)
        silent = float(np.mean(frame_db(samples, int(rate), frame_seconds) < silence_dbfs))
        if level < min_dbfs:
            reasons[i] = "audio.filter_loudness:min_dbfs"
        elif level > max_dbfs:
            reasons[i] = "audio.filter_loudness:max_dbfs"
        elif silent > max_silence_ratio:
            reasons[i] = "audio.filter_loudness:max_silence_ratio"
    return reasons == "", reasons
