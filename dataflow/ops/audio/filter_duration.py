"""Keep clips whose duration falls within bounds."""
from __future__ import annotations

import numpy as np

from dataflow.ops.declare import op


@op(
    name="audio.filter_duration",
    modality="audio",
    inputs=("duration",),
    outputs=(),
    kind="filter",
    batch_format="numpy",
)
def filter_audio_duration(batch: dict, *, min_seconds: float = 0.0, max_seconds: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Keep clips lasting at least ``min_seconds`` and at most ``max_seconds`` (Data-Juicer's bounds: none).

    Drops are counted per reason: ``audio.filter_duration:min_seconds`` and ``:max_seconds``.

    Args:
        min_seconds: Shortest allowed duration.
        max_seconds: Longest allowed duration; no bound when unset.
    """
    d = np.asarray(batch["duration"], dtype=np.float64)
    reasons = np.full(len(d), "", dtype=object)
    reasons[d < min_seconds] = "audio.filter_duration:min_seconds"
    if max_seconds is not None:
        reasons[d > max_seconds] = "audio.filter_duration:max_seconds"
    return reasons == "", reasons
